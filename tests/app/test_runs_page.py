"""AppTest: the measured page's 'Compare runs' view on a store of its own holding two runs of one vLLM file."""

from __future__ import annotations

import urllib.parse

import polars as pl
import pytest

from core.evidence.importers import ImportContext, import_file
from core.store import get_store
from tests.helpers import FIXTURES

#: vllm_serve_append.jsonl: two serving runs of Llama 3.1 8B on 2 GPUs, concurrency 16 and 64, output 849.8 and 2625.6 tokens/s
FILE = (FIXTURES / "vllm_serve_append.jsonl").read_bytes()


@pytest.fixture
def two_runs(own_store):
    store = get_store(own_store)
    a = import_file(store, FILE, "h100.jsonl", name="before").dataset_id
    # the same file once more (a byte apart: not a duplicate), its rows a run on H200
    b = import_file(store, FILE + b"\n", "h200.jsonl", name="after", context=ImportContext(gpu="h200-sxm")).dataset_id
    return f"before (#{a})", f"after (#{b})"


def table_of(at) -> pl.DataFrame:
    value = at.dataframe[0].value
    return pl.from_pandas(value) if not isinstance(value, pl.DataFrame) else value


def test_two_runs_side_by_side_from_a_link(open_page, two_runs):
    at = open_page("measured", ms_view="Compare runs", ms_runs=list(two_runs))
    assert not at.error, [e.value for e in at.error]
    assert list(at.multiselect(key="ms_runs").value) == list(two_runs)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Runs": "2", "Scenarios every run holds": "2", "Unmatched rows": "0"}
    said = " ".join(m.value for m in at.markdown).replace("\\", "")  # as read, markdown escapes dropped
    assert "after (#2): 1.00× the tokens/s of before (#1)" in said and "The runs differ in accelerator" in said
    t = table_of(at)
    assert t["run"].to_list() == ["before (#1)", "after (#2)"] * 2
    assert t["tokens/s"].to_list() == [849.8, 849.8, 2625.6, 2625.6]
    assert t["accelerator"].to_list() == ["NVIDIA H100 SXM5 80GB", "NVIDIA H200 SXM 141GB"] * 2
    assert t["partner"].to_list() == ["baseline", "matched"] * 2
    assert len(at.get("vega_lite_chart")) == 1
    (link,) = [c.value for c in at.code if "?" in c.value]
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["ms_runs"] == list(two_runs)  # the link names the runs


def test_one_run_picked_asks_for_another_and_a_deleted_run_is_named(open_page, two_runs, own_store):
    at = open_page("measured", ms_view="Compare runs", ms_runs=[two_runs[0]])
    assert any("Pick two datasets or more" in i.value for i in at.info)
    at = open_page("measured", ms_view="Compare runs", ms_runs=[*two_runs, "gone (#9)"])
    assert not at.exception
    assert list(at.multiselect(key="ms_runs").value) == list(two_runs)


def test_fewer_than_two_datasets_say_how_to_compare(open_page, own_store):
    at = open_page("measured", ms_view="Compare runs")
    assert any("Comparing runs needs two datasets or more; 0 datasets stored" in i.value for i in at.info)
