"""Browser tests (issue 31): each page's report, downloaded from the page with options other than the defaults, leads
with that page's own subject, headline figures and options, as the page shows them, and cites the sources of what it
shows. (The compare and roofline reports: test_purchase_e2e.py; the calculator's: test_links_pages_e2e.py; the
overview's: test_review.py.)"""

from __future__ import annotations

import html
import re
import urllib.parse
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from core.catalogue.catalogue import Catalogue, load_catalogue
from core.store import Store
from tests.helpers import FIXTURES, download_report, metrics, opened, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
TALL = {"width": 1400, "height": 2600}
#: Where a report with a subject of its own ends its page's part and gives the sidebar's scenario (core.present.report).
REFERENCE = "<h2>The sidebar's scenario, for reference"


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_catalogue(Store(tmp_path_factory.mktemp("reports") / "c.duckdb"))


def report(page: Any, tmp_path: Path) -> tuple[str, str, str]:
    """(file name, title, the page's own part) of the report the sidebar's button downloads."""
    name, text = download_report(page, tmp_path)
    title = html.unescape(re.search(r"<h1>Roofline report: (.*?)</h1>", text).group(1))  # type: ignore[union-attr]
    own = text[: text.index(REFERENCE)] if REFERENCE in text else text
    return name, title, html.unescape(own)


def figure(own: str, label: str) -> str:
    """The value the report's figure table gives beside `label`."""
    return re.search(rf"<td>{re.escape(label)}</td><td>(.*?)</td>", own).group(1)  # type: ignore[union-attr]


def sources_cited(cat: Catalogue, gpu_ids: list[str], text: str) -> None:
    for g in gpu_ids:
        assert all(u in text for u in cat.gpu(g).sources), g


def test_the_ridge_report_is_the_precision_and_vendors_chosen(server, page, tmp_path, cat):
    """fp8 ridges of AMD's accelerators at batch 512: the report is titled by that selection, gives the page's headline
    ("compute-bound on k of n") as the page does, lists exactly the AMD accelerators with an fp8 peak (each with its
    ridge, peak ÷ bandwidth from the datasheet rows) and cites each one's sources."""
    page.set_viewport_size(TALL)
    opened(page, server.url("ridges?rd_precision=fp8&rd_vendor=AMD&batch=512"))
    on_screen = metrics(page)
    name, title, own = report(page, tmp_path)
    assert title == "Ridge points at fp8 · AMD"
    assert name == "ridges-ridge-points-at-fp8-amd.html"
    (label, value), *_ = on_screen.items()
    assert label == "Compute-bound at batch 512 (bf16 weights, fp8 peak)"
    assert figure(own, label) == value
    amd = cat.gpus.filter((pl.col("vendor") == "AMD") & pl.col("peak_fp8").is_not_null())
    ridges = {r["name"]: r["peak_fp8"] / r["bandwidth_bytes_per_s"] for r in amd.iter_rows(named=True)}
    assert len(ridges) >= 3
    for gpu, ridge in ridges.items():
        written = format(float(f"{ridge:.4g}"), ",g")  # 4 significant figures, as the report's tables write them
        assert re.search(rf"<td>{re.escape(gpu)}</td><td>AMD</td>(<td>[^<]*</td>){{4}}<td>{written}</td>", own), (gpu, written)
    # 2 x 512 / 2 bytes per bf16 weight = 512 FLOP/byte: compute-bound where the ridge is at most that
    bound = sum(r <= 512 for r in ridges.values())
    assert value == f"{bound} of {len(ridges)} accelerators"
    assert "NVIDIA" not in own.split("<h2>", 2)[-1].split("<svg")[0]  # the table: AMD's rows only
    sources_cited(cat, amd["id"].to_list(), Path(tmp_path / name).read_text(encoding="utf-8"))


def test_the_sweep_report_is_the_sweep_with_its_filters(server, page, tmp_path, cat):
    """A sweep of two models and int4 weights under a 30 ms TPOT limit at batch 16: the report is titled by the sweep,
    gives the count of scenarios that meet the limits as the page says it, states the filters chosen and cites every
    accelerator swept."""
    page.set_viewport_size(TALL)
    query = urllib.parse.urlencode(
        {"sw_models": ["Llama 3.1 70B", "Llama 3.1 8B"], "sw_weights": ["fp8", "int4"], "sw_at_batch": "16", "sw_tpot": "30"},
        doseq=True,
    )
    opened(page, server.url(f"sweep?{query}"))
    said = page.locator("[data-testid='stAlert']").filter(has_text="these limits").first.inner_text()
    met, swept = re.search(r"([\d,]+) of ([\d,]+) scenarios", said).groups()  # type: ignore[union-attr]
    name, title, own = report(page, tmp_path)
    assert title.startswith("Sweep: ") and "Llama 3.1 8B" in title and "Llama 3.1 70B" in title and "int4" in title
    assert name.startswith("sweep-sweep-") and "h100" not in name.split("sweep-sweep-")[1][:4]
    assert figure(own, "Scenarios that meet the limits") == f"{met} of {swept}"
    assert "at batch 16; time per output token ≤ 30 ms" in own
    tags = page.locator("[data-testid='stMultiSelect']").filter(has_text="Accelerators").first.locator("[data-tag] span[title]")
    picked = [t.strip() for t in tags.all_inner_texts()]
    ids = [g for g in cat.gpus["id"] if cat.gpu(g).name in picked]
    assert len(ids) == len(picked) >= 4
    sources_cited(cat, ids, Path(tmp_path / name).read_text(encoding="utf-8"))


def test_the_published_measurements_report_is_the_rows_chosen(server, page, tmp_path, cat):
    """Published measurements of Llama 3.1 8B on the H100: the report is titled by that choice and its count of rows,
    its scorecard and its sources are of those rows, as the page shows them."""
    page.set_viewport_size(TALL)
    query = urllib.parse.urlencode({"ms_ref_gpus": "NVIDIA H100 SXM5 80GB", "ms_ref_models": "Llama 3.1 8B"})
    opened(page, server.url(f"measured?{query}"))
    on_screen = metrics(page)
    name, title, own = report(page, tmp_path)
    assert title.startswith("Published measurements: ") and "Llama 3.1 8B" in title and "H100" in title
    assert name.startswith("measured-published-measurements-")
    assert figure(own, "Published measurements").startswith(on_screen["Published measurements"] + " of ")
    assert int(on_screen["Published measurements"]) >= 6
    rows = re.findall(r"<td>((?:NVIDIA|AMD|Google|Intel) [^<]*)</td>", own.split("<h2>Accuracy scorecard")[0])
    assert rows and set(rows) == {"NVIDIA H100 SXM5 80GB"}


def _import(page: Any, fixture: str, name: str) -> None:
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(FIXTURES / fixture))
    with rerun(page):
        page.get_by_role("textbox", name="Dataset name").fill(name)
        page.get_by_role("textbox", name="Dataset name").press("Enter")
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    page.get_by_text(f"as {name}").first.wait_for()


def test_the_dataset_report_is_the_dataset_chosen_not_the_newest(fresh_server, page, tmp_path):
    """Two datasets imported through the page, the first chosen again in the link: the report is of that dataset (its
    name, its count, its medians, as the page's metrics show them), not of the newest one."""
    page.set_viewport_size(TALL)
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    _import(page, "generic.csv", "decode runs")
    _import(page, "llama_bench.csv", "llama bench runs")
    opened(page, fresh_server.url("measured?" + urllib.parse.urlencode({"ms_view": "Your datasets", "ms_dataset": "decode runs (#1)"})))
    on_screen = metrics(page)
    assert on_screen["Measurements"] == "11"
    name, title, own = report(page, tmp_path)
    assert title == "Measured vs predicted: dataset decode runs"
    assert name == "measured-measured-vs-predicted-dataset-decode-runs.html"
    assert figure(own, "Measurements") == "11"
    assert figure(own, "Above their ceiling") == on_screen["Above their ceiling"]
    median = next(v for k, v in on_screen.items() if k.startswith("Median"))
    assert figure(own, "Median measured / ceiling") == median
    assert "llama bench runs" not in own


def test_the_tour_report_holds_the_step_shown_for_the_scenario_linked(server, page, tmp_path, cat):
    """DeepSeek-V3 on 8 x H200 at fp8, tour step 6: the report is of that scenario and holds the step's title and every
    number of the step's text as the page shows it."""
    from core.model.scenario import Scenario
    from core.present.text import plain
    from core.present.tour import steps

    sc = Scenario(gpu="h200-sxm", num_gpus=8, model="deepseek-v3", weights="fp8", kv="fp8")
    step = steps(cat, sc)[5]
    page.set_viewport_size(TALL)
    query = urllib.parse.urlencode(
        {"gpu": "h200-sxm", "num_gpus": 8, "model": "deepseek-v3", "weights": "fp8", "kv": "fp8", "tour_step": step.title}
    )
    opened(page, server.url(f"tour?{query}"))
    heading = page.get_by_role("heading", name=step.title)
    heading.wait_for()
    opening = " ".join(plain(step.text).split()[:6])
    shown = page.locator("[data-testid='stMarkdown']").filter(has_text=opening).first.inner_text()
    name, title, own = report(page, tmp_path)
    assert title == f"{cat.model('deepseek-v3').name} on 8 × {cat.gpu('h200-sxm').name}"
    assert name == "tour-deepseek-v3-on-8xh200-sxm.html"
    part = own[own.index(f"<h2>Tour step {step.title}</h2>") :]
    numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", shown)
    assert len(numbers) >= 4
    for n in numbers:
        assert n in part, n


def test_the_catalogue_report_is_the_tab_and_search_shown(server, page, tmp_path, cat):
    """The Models tab searched for 'qwen': the report lists exactly the models the search matches (by id or name, from
    the catalogue's own rows), with the count the page's caption gives; the Accelerators tab filtered to Intel: its rows
    and its sources."""
    page.set_viewport_size(TALL)
    opened(page, server.url("catalogue?cat_tab=Models&cat_model_search=qwen"))
    caption = page.get_by_text(re.compile(r"^\d+ of \d+ models")).inner_text()
    listed = cat.models.filter(pl.col("id").str.contains("qwen") | pl.col("name").str.to_lowercase().str.contains("qwen"))
    assert caption.startswith(f"{listed.height} of {cat.models.height} models") and listed.height >= 2
    name, title, own = report(page, tmp_path)
    assert title == "Catalogue: Models · search 'qwen'"
    assert figure(own, "Models listed") == f"{listed.height} of {cat.models.height}"
    for model in listed["name"]:
        assert f"<td>{model}</td>" in own, model
    assert "Llama" not in own.split("<h2>", 2)[-1]

    opened(page, server.url("catalogue?cat_tab=Accelerators&cat_gpu_vendor=Intel"))
    page.get_by_text(re.compile(r"^\d+ of \d+ accelerators")).wait_for()
    name, title, own = report(page, tmp_path)
    intel = cat.gpus.filter(pl.col("vendor") == "Intel")
    assert title == "Catalogue: Accelerators · Intel"
    assert figure(own, "Accelerators listed") == f"{intel.height} of {cat.gpus.height}"
    sources_cited(cat, intel["id"].to_list(), Path(tmp_path / name).read_text(encoding="utf-8"))
