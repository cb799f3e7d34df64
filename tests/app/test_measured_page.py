"""AppTest: the measured-vs-predicted page on a store holding an imported dataset."""

from __future__ import annotations

import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.evidence.importers import import_file, list_datasets
from core.model.ceilings import evaluate
from core.present.text import escape_markdown
from core.store import get_store
from tests.app.conftest import chart_frames
from tests.helpers import FIXTURES, SEED


@pytest.fixture
def dataset(private_store):
    """The generic CSV fixture imported into the AppTest store (once per session)."""
    store = get_store(private_store)
    existing = list_datasets(store).filter(pl.col("file_name") == "generic.csv")
    if existing.height:
        return int(existing["id"][0])
    return import_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="H100 and A100 decode").dataset_id


@pytest.fixture
def empty_store(own_store):
    """A store of its own with no dataset (the session's store may hold some by now)."""
    return own_store


def test_empty_store_shows_the_import_form_and_an_empty_state(open_page, empty_store):
    """Before any import: the uploader, its help, and a clear 'no datasets' message."""
    assert not list_datasets(get_store(empty_store)).height
    at = open_page("measured", ms_view="Your datasets")
    assert at.title[0].value == "Measured vs predicted"
    assert any("No datasets of yours yet" in i.value for i in at.info)


def test_measured_page_shows_ratio_mbu_and_flags_the_impossible_row(open_page, dataset, private_store):
    """The table holds each measurement's ceiling (checked against core.model.ceilings.evaluate) and flags row 11."""
    at = open_page("measured", ms_view="Your datasets", ms_dataset=f"H100 and A100 decode (#{dataset})")
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value  # the comparison table (the fit table is the second)
    table = pl.from_pandas(table) if not isinstance(table, pl.DataFrame) else table
    cat = load_catalogue(get_store(private_store))
    # row 1: H100 SXM, Llama 3.1 8B bf16, batch 1, context 1024 + 128 / 2: the ceiling is 1 / step time
    step = evaluate(cat, pl.DataFrame({"gpu": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1], "context": [1088], "prompt": [1024]}))
    ceiling = 1.0 / step["step_time_s"][0]
    r1 = table.filter(pl.col("row") == 1).row(0, named=True)
    assert r1["ceiling (tokens/s)"] == pytest.approx(ceiling, rel=1e-9)
    assert r1["measured / ceiling (%)"] == pytest.approx(169.0 / ceiling * 100, rel=1e-9)
    # decode is memory-bound at batch 1: MBU = bytes per step x steps/s / peak bandwidth
    assert r1["MBU (%)"] == pytest.approx(step["bytes"][0] * 169.0 / 3.35e12 * 100, rel=1e-9)
    bad = table.filter(pl.col("row") == 11).row(0, named=True)
    assert bad["status"] == "above ceiling"
    assert "above its ceiling" in bad["flags"] and "wrong precision" in bad["flags"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Above their ceiling"] == "1"
    assert any("above their ceiling" in w.value for w in at.warning)


def test_the_refit_predicts_the_rows_better_and_says_how_much(open_page, dataset):
    """generic.csv was generated at 82% bandwidth, 70% compute and 0.4 ms per step: refitted per accelerator, each
    refit rests on its 5 rows under the ceiling (the impossible row left out) and predicts them within 5%."""
    at = open_page("measured", ms_view="Your datasets", ms_dataset=f"H100 and A100 decode (#{dataset})")
    fit = at.dataframe[1].value
    fit = pl.from_pandas(fit) if not isinstance(fit, pl.DataFrame) else fit
    for gpu in ("h100-sxm", "a100-80gb-sxm"):
        row = fit.filter(pl.col("accelerator") == gpu).row(0, named=True)
        assert row["points used"] == 5 and row["note"] == "accepted"
        assert row["error after (%)"] < 5.0 < row["error before (%)"]
    table = at.dataframe[0].value
    table = pl.from_pandas(table) if not isinstance(table, pl.DataFrame) else table
    assert {"expected (tokens/s)", "measured / expected (%)", "expected after your refit (tokens/s)"} <= set(table.columns)


def test_charts_draw_the_flagged_point_apart_and_the_empirical_roof(open_page, dataset):
    """Chart data: the above-ceiling point carries status 'above ceiling'; the refit's empirical roof sits under the datasheet's."""
    at = open_page("measured", ms_view="Your datasets", ms_dataset=f"H100 and A100 decode (#{dataset})")
    frames = chart_frames(at)
    roofs = next(f for f in frames if "roof" in f.columns)
    assert {"datasheet", "empirical"} <= set(roofs["roof"].to_list())
    h100 = roofs.filter(pl.col("id") == "h100-sxm")
    assert set(h100.filter(pl.col("roof") == "empirical")["series"]) and h100.filter(pl.col("roof") == "empirical").height
    points = [f for f in frames if "status" in f.columns]
    assert any((f["status"] == "above ceiling").sum() == 1 for f in points)


def test_turning_the_refit_off_shows_its_empty_state(open_page, dataset):
    """With the toggle off there is no refit table, and the page says how to get one."""
    at = open_page("measured", ms_view="Your datasets", ms_dataset=f"H100 and A100 decode (#{dataset})")
    at.toggle(key="ms_refit").set_value(False).run()
    assert not at.exception
    assert any("The refit is off" in i.value for i in at.info)


@pytest.fixture
def read_only_store(tmp_path, monkeypatch):
    """ROOFLINE_READ_ONLY=1 on a store file holding one dataset; the app's cached store is reopened before and after."""
    from core.evidence.importers import ImportContext
    from core.store import Store
    from pages.shared import data

    db = tmp_path / "demo.duckdb"
    rw = Store(db)
    import_file(
        rw, (FIXTURES / "vllm_serve.json").read_bytes(), "vllm_serve.json", context=ImportContext(gpu="h100-sxm", model="llama-3.1-8b")
    )
    rw.close()
    monkeypatch.setenv("ROOFLINE_DB", str(db))
    monkeypatch.setenv("ROOFLINE_READ_ONLY", "1")
    data.store.clear()  # st.cache_resource outlives an AppTest: open the read-only store now ...
    yield db
    get_store(db).close()
    data.store.clear()  # ... and the session's private store again afterwards


def test_read_only_upload_is_kept_in_this_session_and_no_other(open_page, read_only_store):
    """ROOFLINE_READ_ONLY=1: generic.csv is imported into the session, shown with its ceilings; a second session and the file never see it."""
    before = read_only_store.read_bytes()
    at = open_page("measured", ms_view="Your datasets")
    assert any("kept in this browser session only" in i.value for i in at.info)
    assert at.selectbox(key="ms_dataset").options == ["vllm_serve.json (#1)"]  # the stored dataset, read from the file

    at.file_uploader(key="ms_upload").set_value(("generic.csv", (FIXTURES / "generic.csv").read_bytes(), "text/csv"))
    at.text_input(key="ms_name").set_value("my session run")
    at.run()
    at.button(key="ms_import").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any(
        s.value.startswith("Imported 11 measurements (generic-csv) as my session run (kept in this session only)") for s in at.success
    )
    box = at.selectbox(key="ms_dataset")
    assert box.value == "my session run (this session only)" and box.options == [
        "my session run (this session only)",
        "vllm_serve.json (#1)",
    ]
    assert any("kept in this browser session only, not saved" in c.value for c in at.caption)
    # the dataset is shown as a stored one is: the comparison table, the metrics, the refit, both charts
    table = at.dataframe[0].value
    table = pl.from_pandas(table) if not isinstance(table, pl.DataFrame) else table
    assert table.height == 11
    assert table["measured (tokens/s)"].to_list() == pl.read_csv(FIXTURES / "generic.csv")["tokens_per_s"].to_list()
    assert table.filter(pl.col("row") == 11)["status"].to_list() == ["above ceiling"]
    assert {m.label: m.value for m in at.metric}["Above their ceiling"] == "1"
    fit = at.dataframe[1].value
    fit = pl.from_pandas(fit) if not isinstance(fit, pl.DataFrame) else fit
    assert fit.filter(pl.col("accelerator") == "h100-sxm")["error after (%)"][0] < 5.0
    assert len(at.get("vega_lite_chart")) == 2
    mine = -1  # a session's datasets count down from -1
    assert not at.button(key=f"ms_rename_btn_{mine}").disabled and not at.button(key=f"ms_delete_btn_{mine}").disabled  # this session's

    other = open_page("measured", ms_view="Your datasets")
    assert other.selectbox(key="ms_dataset").options == ["vllm_serve.json (#1)"]
    assert other.button(key="ms_rename_btn_1").disabled and other.button(key="ms_delete_btn_1").disabled  # the file's dataset
    assert read_only_store.read_bytes() == before
    assert not read_only_store.with_name("demo.duckdb.wal").exists()


def test_read_only_catalogue_refuses_custom_entries_with_a_message(open_page, read_only_store):
    """Custom accelerators stay refused in read-only mode: the page says so first, and a submitted form shows the refusal."""
    before = read_only_store.read_bytes()
    at = open_page("catalogue")
    assert any("custom accelerators and models cannot be added or deleted here" in i.value for i in at.info)
    next(t for t in at.text_input if t.label == "Name").set_value("Demo chip")
    next(t for t in at.text_input if t.label == "Source URL").set_value("https://example.com/sheet")
    at.number_input(key="custom_peak_bf16").set_value(500.0)
    next(b for b in at.button if b.label == "Add accelerator").click().run()
    refusal = "Not added: " + escape_markdown("the store is read-only (ROOFLINE_READ_ONLY=1)")
    assert any(refusal in e.value for e in at.error), [e.value for e in at.error]
    assert read_only_store.read_bytes() == before


# -- the published measurements ------------------------------------------------------------

SHIPPED = pl.read_csv(SEED / "reference_measurements.csv", infer_schema_length=0)


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _table(at, column: str):
    """The dataframe on the page that has `column` (the published table has Row, the scorecard Metric + MAPE)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_page_opens_on_the_published_measurements_each_linked(open_page):
    at = open_page("measured")
    assert at.radio(key="ms_view").value == "published"
    assert _metric(at, "Published measurements") == f"{SHIPPED.height:,}"
    table = _table(at, "Batch kind")
    assert len(table) == SHIPPED.height and table["Source"].str.startswith("https://").all()
    # the scorecard is on the same page: a row per headline group and per metric, the headline in words
    scores = _table(at, "Predicted: MAPE, campaign held out (%)")
    assert set(SHIPPED["metric"]) <= set(scores["Figures"]) and "decode throughput and TPOT" in set(scores["Figures"])
    assert any("Fitted on the other publishers' campaigns, the predicted model" in m.value for m in at.markdown)


def test_the_filters_keep_the_rows_they_name(open_page, private_store):
    cat = load_catalogue(get_store(private_store))
    at = open_page("measured", ms_ref_gpus=cat.gpu("m2-ultra").name, ms_ref_frameworks="llama.cpp")
    expected = SHIPPED.filter((pl.col("gpu") == "m2-ultra") & (pl.col("framework") == "llama.cpp")).height
    assert expected and _metric(at, "Published measurements") == f"{expected:,}"
    assert len(_table(at, "Batch kind")) == expected


@pytest.mark.parametrize("page", ["home", "calculator", "roofline", "compare"])
def test_every_scenario_page_shows_the_published_measurements_beside_its_ceiling(open_page, page):
    """The default scenario is Llama 3.1 8B on an H100 SXM: the sentence counts the shipped rows of it."""
    n = SHIPPED.filter((pl.col("gpu") == "h100-sxm") & (pl.col("model") == "llama-3.1-8b")).height
    at = open_page(page, cmp_gpus=["NVIDIA H100 SXM5 80GB"]) if page == "compare" else open_page(page)
    lines = [c.value.replace("\\", "") for c in at.caption if "published" in c.value]  # captions hold escaped markdown
    assert any(f"published: {n} measurements of Llama 3.1 8B on NVIDIA H100 SXM5 80GB" in line for line in lines), lines


@pytest.fixture
def two_datasets(empty_store):
    """A store of its own holding two datasets: #1 and #2."""
    store = get_store(empty_store)
    first = import_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="first").dataset_id
    rows = (FIXTURES / "generic.csv").read_text().splitlines()
    second = import_file(store, "\n".join(rows[:3]).encode(), "two-rows.csv", name="second").dataset_id
    return store, first, second


def test_a_stale_delete_never_deletes_another_dataset(open_page, two_datasets):
    """Two sessions show dataset #2. Session 1 deletes it; session 2, still showing #2, presses its Delete: nothing is
    deleted (dataset #1 stays), and the page says #2 is gone. Each button is keyed by its dataset's id."""
    store, first, second = two_datasets
    one = open_page("measured", ms_view="Your datasets")
    two = open_page("measured", ms_view="Your datasets")
    for at in (one, two):
        at.selectbox(key="ms_dataset").set_value(f"second (#{second})").run()
        assert at.button(key=f"ms_delete_btn_{second}").help.startswith(f"Delete dataset #{second} (second)")
    one.button(key=f"ms_delete_btn_{second}").click().run()
    assert any(f"Deleted dataset #{second} (second)" in s.value for s in one.success)
    assert list_datasets(store)["id"].to_list() == [first]
    two.button(key=f"ms_delete_btn_{second}").click().run()
    assert not two.exception, [e.value for e in two.exception]
    assert list_datasets(store)["id"].to_list() == [first]  # the stale click deleted nothing
    assert any(escape_markdown(f"Dataset second (#{second}) is no longer stored") in w.value for w in two.warning)
    assert two.selectbox(key="ms_dataset").value == f"first (#{first})"


def test_a_stale_rename_never_renames_another_dataset_and_a_blank_name_is_a_field_message(open_page, two_datasets):
    store, first, second = two_datasets
    one = open_page("measured", ms_view="Your datasets")
    two = open_page("measured", ms_view="Your datasets")
    for at in (one, two):
        at.selectbox(key="ms_dataset").set_value(f"second (#{second})").run()
    one.button(key=f"ms_delete_btn_{second}").click().run()
    two.text_input(key=f"ms_rename_{second}").set_value("renamed")  # typed and pressed on the page that still shows #2
    two.button(key=f"ms_rename_btn_{second}").click().run()
    assert dict(zip(*list_datasets(store).select("id", "name").to_dict(as_series=False).values(), strict=True)) == {first: "first"}
    # a blank name: a message under the field, no exception, the name kept
    two.text_input(key=f"ms_rename_{first}").set_value("   ")
    two.button(key=f"ms_rename_btn_{first}").click().run()
    assert not two.exception, [e.value for e in two.exception]
    assert any(escape_markdown("a dataset needs a non-empty name") in e.value and e.value.startswith("New name:") for e in two.error)
    assert list_datasets(store)["name"].to_list() == ["first"]
