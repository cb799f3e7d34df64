"""AppTest: every page renders without an exception and shows the values it should."""

from __future__ import annotations

import polars as pl
import pytest

from core.present.text import escape_markdown
from tests.app.conftest import chart_frames

PAGES = ["home", "roofline", "ridges", "catalogue"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_an_exception(open_page, page):
    """Each page runs to the end on the default scenario with a title and no error box."""
    at = open_page(page)
    assert at.title, f"{page} has no title"
    assert not at.error, [e.value for e in at.error]


def test_overview_headline_for_70b_on_two_h100(open_page):
    """The overview states the ceiling of the linked scenario: 70B bf16 on 2 x H100 SXM, batch 1."""
    at = open_page("home", gpu="h100-sxm", model="llama-3.1-70b", num_gpus="2", batch="1", context="1024")
    metrics = {m.label: m.value for m in at.metric}
    # 2 x 3.35 TB/s over ~141 GB of weights and ~0.34 GB of KV: a little under the seed's 48 tok/s
    per_user = float(metrics["Tokens/s per user"])
    assert 44 < per_user < 48.5
    assert metrics["Decode is bound by"] == "memory"
    text = " ".join(m.value for m in at.markdown)
    assert "295 FLOP/byte" in text


def test_roofline_chart_holds_the_h100_ridge_and_the_batch_independent_attention_point(open_page):
    """Chart data: the H100 SXM bf16 ridge at ~295 and decode attention at the same intensity for batch 1 and 512."""
    at = open_page("roofline", gpu="h100-sxm", model="llama-3.1-8b", batch="1")
    frames = chart_frames(at)
    roofs = next(f for f in frames if "point" in f.columns and "ridge" in f.columns and "series" in f.columns)
    ridge = roofs.filter(pl.col("point") == "ridge")["ridge"].unique().to_list()
    assert len(ridge) == 1 and ridge[0] == pytest.approx(989.4 / 3.35, rel=1e-6)
    paths = next(f for f in frames if "batch" in f.columns and f["batch"].n_unique() > 1)
    attn = paths.filter(pl.col("point") == "decode attention").sort("batch")
    at1 = attn.filter(pl.col("batch") == 1)["intensity"].item()
    at512 = attn.filter(pl.col("batch") == 512)["intensity"].item()
    assert at1 == pytest.approx(at512, rel=1e-9)
    assert at1 == pytest.approx(4.0, rel=0.01)  # 2 g / bytes = 2 x 4 / 2 for Llama 3.1 8B in bf16
    mm = paths.filter(pl.col("point") == "decode matmul")
    assert mm.filter(pl.col("batch") == 512)["intensity"].item() > 15 * mm.filter(pl.col("batch") == 1)["intensity"].item()


def test_roofline_batch_moves_the_decode_matmul_point(open_page):
    """Setting the (shared) batch to 256 moves the chart's operating points to batch 256 (one batch control, the sidebar's)."""
    at = open_page("roofline")
    at.number_input(key="batch").set_value(256).run()
    assert not at.exception
    assert "Batch 256" in " ".join(m.value for m in at.markdown)
    points = next(f for f in chart_frames(at) if "share_of_peak" in f.columns and f["batch"].n_unique() == 1)
    assert points["batch"].unique().to_list() == [256]
    assert not [s for s in at.select_slider if s.key == "rf_batch"]  # no second batch control


def test_roofline_draws_a_derated_roof_when_efficiency_is_below_one(open_page):
    """A bandwidth efficiency of 0.8 adds a derated roof whose ridge is 1 / 0.8 of the datasheet's."""
    at = open_page("roofline")
    at.slider[0].set_value(0.8).run()
    roofs = next(f for f in chart_frames(at) if "roof" in f.columns)
    ridges = dict(roofs.filter(pl.col("point") == "ridge").select("roof", "ridge").unique().iter_rows())
    assert ridges["derated"] == pytest.approx(ridges["datasheet"] / 0.8, rel=1e-9)


def test_ridge_page_marks_compute_bound_accelerators_at_a_large_batch(open_page):
    """At batch 512 in bf16 (intensity 512), every bf16 ridge below 512 is compute-bound, the rest memory-bound."""
    at = open_page("ridges", batch="512")
    bars = next(f for f in chart_frames(at) if "bound" in f.columns)
    assert bars.height >= 30
    wrong = bars.filter((pl.col("ridge") <= 512) != (pl.col("bound") == "compute"))
    assert wrong.height == 0
    assert bars.filter(pl.col("bound") == "compute").height > 0
    h100 = bars.filter(pl.col("id") == "h100-sxm").row(0, named=True)
    assert h100["ridge_batch"] == 296  # ceil(295.3 x 2 bytes / 2)


def test_ridge_page_fp4_shows_only_accelerators_with_fp4(open_page):
    """Switching to fp4 keeps only accelerators with a native fp4 peak; B200's ridge is ~1,125."""
    at = open_page("ridges")
    at.radio(key="rd_precision").set_value("fp4").run()
    bars = next(f for f in chart_frames(at) if "bound" in f.columns)
    assert "h100-sxm" not in bars["id"].to_list()
    assert bars.filter(pl.col("id") == "b200")["ridge"].item() == pytest.approx(9000 / 8, rel=1e-9)


def test_catalogue_counts_and_search(open_page):
    """The catalogue lists every accelerator; a search narrows the table."""
    at = open_page("catalogue")
    captions = " ".join(c.value for c in at.caption)
    assert "46 of 46 accelerators" in captions  # 42, and the A40, RTX A6000, RTX 3090 and M1 Max published rows need
    at.text_input(key="cat_gpu_search").set_value("mi3").run()
    assert "3 of 46 accelerators" in " ".join(c.value for c in at.caption)


def test_an_unknown_gpu_in_a_link_falls_back_with_a_message(open_page):
    """A link naming an unknown accelerator keeps the app running and says what was ignored."""
    at = open_page("home", gpu="h1000")
    assert any(escape_markdown("gpu='h1000'") in w.value for w in at.warning)
    assert at.selectbox(key="gpu").value == "h100-sxm"


def test_a_refit_in_the_link_applies_to_its_accelerator_on_every_page(open_page):
    """refit=gpu|framework|shifts in a link switches the refit on: the overview's expected figure uses it; an older
    link's cal= is named and ignored."""
    import numpy as np

    from core.catalogue.catalogue import load_catalogue
    from core.evidence.predictor import with_predictor
    from core.evidence.refit import with_shift_text
    from core.model import predicted as pm
    from core.model.ceilings import ceiling
    from core.model.scenario import Scenario
    from core.present.text import si
    from core.store import get_store

    shift = np.zeros(pm.NP)
    shift[pm.P["eta_mem_gemm"]] = -1.0  # GEMMs reach a smaller share of the bandwidth on this accelerator
    text = "h100-sxm|vLLM|" + ",".join(f"{x:g}" for x in shift)
    at = open_page("home", gpu="h100-sxm", model="llama-3.1-8b", batch="1", refit=text, cal="0.8,1,0.0004")
    assert at.toggle(key="use_refit").value is True
    assert any("is a calibration of an earlier version" in w.value for w in at.warning)
    cat = with_predictor(load_catalogue(get_store()))
    refitted, problems = with_shift_text(cat.predictor, text)
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1)
    expected, shipped = ceiling(cat, sc, predictor=refitted), ceiling(cat, sc)
    assert not problems and expected.predicted_tokens_per_s_total < shipped.predicted_tokens_per_s_total
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Expected tokens/s total"] == si(expected.predicted_tokens_per_s_total)
    assert metrics["Tokens/s total"] == si(shipped.tokens_per_s_total)  # the ceiling does not move
    at.toggle(key="use_refit").set_value(False).run()
    assert {m.label: m.value for m in at.metric}["Expected tokens/s total"] == si(shipped.predicted_tokens_per_s_total)


def test_the_roofline_terms_and_the_published_rows_are_drawn_only_once_opened(open_page):
    """Closed, a folded expander's content is not run or sent (each rerun draws less); opened, it is all there:
    the prefill term with the scenario's figures, the published rows behind the evidence sentence and the decode
    step's operations, as many as the expander's label says."""
    from pages.roofline.terms import TERMS, term_key

    at = open_page("roofline", gpu="h100-sxm", model="llama-3.1-8b", batch="1")
    labels = [e.label for e in at.expander]
    assert [t for t in TERMS if t in labels] == list(TERMS)  # every term's expander is on the page
    evidence = next(e for e in at.expander if e.label.startswith("The published measurements ("))
    shown = " ".join(m.value for m in at.markdown)
    assert TERMS["Memory roof"] not in shown and "prefill's matmuls sit at" not in shown
    assert len(at.dataframe) == 0  # the decode operations and the published rows wait in their closed expanders
    ops = next(e for e in at.expander if e.label.startswith("Decode step, operation by operation ("))
    n_ops = int(ops.label.split("(")[1].split(" ")[0])
    n = int(evidence.label.split("(")[1].split(")")[0].replace(",", ""))
    assert n > 0

    at.session_state[term_key("Memory roof")] = True
    at.session_state[term_key("Prefill matmul")] = True
    at.session_state["rf_evidence_open"] = True
    at.session_state["rf_ops_open"] = True
    at.run()
    assert sorted(len(d.value) for d in at.dataframe) == sorted([n_ops, min(n, 40)])  # the operations, the published rows
    shown = " ".join(m.value for m in at.markdown)
    assert TERMS["Memory roof"] in shown and TERMS["Ridge point"] not in shown
    # Llama 3.1 8B's prefill of 2,048 tokens counted with weights only: 2 x 2,048 / 2 bytes per bf16 weight
    assert "prefill's matmuls sit at" in shown and "2,048 counting weights only" in shown
    assert len(at.dataframe) == 2
    (rows,) = [d.value for d in at.dataframe if "Source" in d.value.columns]
    assert len(rows) == min(n, 40)
