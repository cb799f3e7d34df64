"""Every control a link carries: a link with a non-default value for it opens with the control set, and the
page's share link writes it back (for every page that owns the key, per pages/shared/params.LINKS)."""

from __future__ import annotations

import urllib.parse
from typing import Any

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from core.evidence.importers import import_file, list_datasets
from core.store import get_store
from pages.shared.params import BY_KEY, EVERY, LINKS, labels
from tests.app.conftest import APP
from tests.helpers import FIXTURES

# key -> (the values a link gives, as Streamlit writes them: a label for an option, an id for an accelerator or
#         a model, which the link then names by its name; the value the control then holds)
SAMPLES: dict[str, tuple[list[str], Any]] = {
    "gpu": (["b200"], "b200"),
    "num_gpus": (["4"], 4),
    "model": (["llama-3.1-70b"], "llama-3.1-70b"),
    "weights": (["fp8"], "fp8"),
    "kv": (["fp8"], "fp8"),
    "compute": (["bf16"], "bf16"),
    "batch": (["48"], 48),
    "context": (["16384"], 16384),
    "prompt": (["512"], 512),
    "framework": (["SGLang"], "SGLang"),
    "present": (["true"], True),
    "measured": (["true"], True),
    "rf_compare": (["mi300x", "a100-80gb-sxm"], ["mi300x", "a100-80gb-sxm"]),
    "rf_precisions": (["fp8", "fp4"], ["fp8", "fp4"]),
    "eff_bandwidth": (["0.7"], 0.7),
    "eff_compute": (["0.6"], 0.6),
    "rd_precision": (["fp8"], "fp8"),
    "rd_vendor": (["AMD", "Intel"], ["AMD", "Intel"]),
    "rd_form": (["OAM"], ["OAM"]),
    "rd_year": (["2020", "2024"], (2020, 2024)),
    "tour_step": (["3. The ridge"], "3. The ridge"),
    "spec_draft_len": (["4"], 4),
    "spec_acceptance": (["0.6"], 0.6),
    "spec_draft_model": (["llama-3.2-3b"], "llama-3.2-3b"),  # not the 1B the page picks by default
    "overhead_ms": (["0.5"], 0.5),
    "reserve_pct": (["20"], 20.0),
    "usd_per_gpu_hour": (["2.5"], 2.5),
    "cmp_gpus": (["h100-sxm", "mi300x"], ["h100-sxm", "mi300x"]),
    "cmp_mode": (["service target"], "service target"),
    "cmp_tpot": (["30.0"], 30.0),
    "cmp_ttft": (["1.5"], 1.5),
    "cmp_sort": (["tokens/s per W"], "tokens_per_s_per_watt"),
    "cmp_target": (["MLPerf Llama-2-70B Interactive (TPOT ≤ 40 ms, TTFT ≤ 0.45 s)"], "mlperf-llama2-70b-interactive"),
    "cmp_basis": (["ceiling"], "ceiling"),
    "cmp_pay": (["buy"], "buy"),
    "cmp_rates": (["every rent price"], "any"),
    "cmp_years": (["4.0"], 4.0),
    "cmp_kwh": (["0.12"], 0.12),
    "cmp_pue": (["1.3"], 1.3),
    "cmp_util": (["70.0"], 70.0),
    "cmp_rps": (["5.0"], 5.0),
    "cmp_out": (["512"], 512),
    "cmp_view": (["Deployments at a request rate"], "deploy"),
    "dp_rate": (["25.0"], 25.0),
    "dp_prompt": (["1024"], 1024),
    "dp_output": (["256"], 256),
    "dp_ttft": (["1.5"], 1.5),
    "dp_tpot": (["40.0"], 40.0),
    "dp_prefix": (["20.0"], 20.0),
    "dp_modes": (["Disaggregated"], ["disaggregated"]),
    "dp_prefill_gpu": (["b200"], "b200"),
    "dp_max_gpus": (["32"], 32),
    "dp_max_pool": (["8"], 8),
    "dp_kwh": (["0.12"], 0.12),
    "dp_pue": (["1.3"], 1.3),
    "sw_gpus": (["h200-sxm", "mi300x"], ["h200-sxm", "mi300x"]),
    "sw_models": (["llama-3.1-8b"], ["llama-3.1-8b"]),
    "sw_weights": (["bf16", "int4"], ["bf16", "int4"]),
    "sw_batches": (["8", "64"], [8, 64]),
    "sw_contexts": (["8192"], [8192]),
    "sw_counts": (["2", "8"], [2, 8]),
    "sw_at_batch": (["8"], 8),
    "sw_tpot": (["35.0"], 35.0),
    "sw_ttft": (["0.5"], 0.5),
    "sw_total": (["1000.0"], 1000.0),
    "sw_bound": (["compute"], "compute"),
    "sw_fits": (["false"], False),
    "sw_domain": (["false"], False),
    "ms_refit": (["false"], False),
    "ms_view": (["Your datasets"], "yours"),
    "ms_dataset": (["H100 and A100 decode (#1)"], "H100 and A100 decode (#1)"),
    "ms_runs": (["two rows (#2)", "H100 and A100 decode (#1)"], ["two rows (#2)", "H100 and A100 decode (#1)"]),
    "cat_tab": (["Models"], "Models"),
    "cat_gpu_search": (["mi3"], "mi3"),
    "cat_gpu_vendor": (["AMD", "Intel"], ["AMD", "Intel"]),
    "cat_gpu_form": (["OAM"], ["OAM"]),
    "cat_model_search": (["qwen"], "qwen"),
    "cat_model_attn": (["MLA"], ["MLA"]),
    "ms_ref_gpus": (["h200-sxm", "gaudi2"], ["h200-sxm", "gaudi2"]),
    "ms_ref_models": (["llama-3.1-8b"], ["llama-3.1-8b"]),
    "ms_ref_frameworks": (["TensorRT-LLM", "llama.cpp"], ["TensorRT-LLM", "llama.cpp"]),
    "ms_ref_publishers": (["NVIDIA"], ["NVIDIA"]),
    "ms_sc_metric": (["tpot: time per output token (decode step time seen by a request)"], "tpot"),
}
#: Where a sidebar key is tried (it is drawn on every page).
SIDEBAR_PAGE = "calculator"


def _cases() -> list[tuple[str, str]]:
    return [(SIDEBAR_PAGE if link.pages == (EVERY,) else page, link.key) for link in LINKS for page in link.pages]


def test_every_link_key_has_a_sample():
    assert {link.key for link in LINKS} == set(SAMPLES)


@pytest.mark.parametrize(("page", "key"), _cases(), ids=lambda x: x)
def test_a_link_sets_the_control_and_the_share_link_keeps_it(open_page, private_store, cat, page, key):
    if page == "measured":  # its controls are drawn once a dataset exists
        store = get_store(private_store)
        if not list_datasets(store).filter(pl.col("file_name") == "generic.csv").height:
            import_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="H100 and A100 decode")
        if key in ("ms_dataset", "ms_runs") and list_datasets(store).height < 2:  # a newer dataset, so the one linked is not the default
            rows = (FIXTURES / "generic.csv").read_text().splitlines()
            import_file(store, "\n".join(rows[:3]).encode(), "two-rows.csv", name="two rows")
    values, expected = SAMPLES[key]
    if BY_KEY[key].picks:
        values = [labels(cat, BY_KEY[key].picks)[v] for v in values]
    # the sweep's 'at batch' picks among the batches swept, and the draft model needs a draft length
    extra = {"sw_batches": ["8", "64"]} if key == "sw_at_batch" else {"spec_draft_len": ["4"]} if key == "spec_draft_model" else {}
    if key in ("ms_refit", "ms_dataset"):  # drawn in the view of your datasets
        extra = {"ms_view": ["Your datasets"]}
    if key == "ms_runs":  # drawn in the view that compares runs
        extra = {"ms_view": ["Compare runs"]}
    if key.startswith("dp_"):  # drawn in the compare page's deployments view
        extra = {"cmp_view": ["Deployments at a request rate"]}
    at = open_page(page, **{key: values if len(values) > 1 else values[0]}, **{k: v for k, v in extra.items()})
    held = at.session_state[key]
    if isinstance(expected, float):
        assert held == pytest.approx(expected)
    else:
        assert (list(held) if isinstance(held, list | tuple) and isinstance(expected, list) else held) == expected
    assert not [w.value for w in at.warning if "link parameter" in w.value]
    (link,) = [c.value for c in at.code if "?" in c.value]
    carried = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert key in carried, link


def test_a_page_switch_keeps_the_sidebar_even_when_it_arrives_without_it(cat):
    """A page switch clicked while the last page still ran has reached Streamlit with the model back at its default
    and with batch gone from the link (CI, and 3 of 32 clicks in a browser loop); the sidebar held on the last page
    is put back, and the share link carries it again."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["model"] = "llama-3.1-70b"
    at.query_params["batch"] = "128"
    at.run()
    at.switch_page("pages/roofline/page.py")
    at.run()
    assert at.session_state["model"] == "llama-3.1-70b" and at.session_state["batch"] == 128
    # what the race delivered: the model at its default, batch missing from the query string
    at.session_state["model"] = "llama-3.1-8b"
    del at.query_params["batch"]
    at.switch_page("pages/ridges/page.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["model"] == "llama-3.1-70b"
    assert any("Batch **128**" in m.value for m in at.markdown)
    (link,) = [c.value for c in at.code if "?" in c.value]
    carried = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert carried.get("batch") == ["128"] and carried.get("model") == ["llama-3.1-70b"], link
