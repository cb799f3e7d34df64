"""MLPerf Inference summary_results.json (generate_final_report.py): both v5.x fixtures through parse_file, and refusals.

Expected values are read off the fixtures by hand (the comments say from which record); records are numbered from 1
in file order, as the import's messages number them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.evidence.formats import mlperf_json
from core.evidence.formats.registry import BY_NAME, detect_json
from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

V50 = "mlperf_summary_results_v5.0.json"
V51 = "mlperf_summary_results_v5.1.json"
#: what the file lacks (concurrency, prompt length; v5.1's Llama 3.1 8B accuracy prints GEN_LEN, not TOKENS_PER_SAMPLE)
LACKING = ImportContext(batch=64, input_tokens=1024)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("mlperf_json") / "m.duckdb")


def records(name: str) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return value


def parse(store: Store, data: list[dict[str, Any]] | bytes, ctx: ImportContext = LACKING, name: str = "summary_results.json"):
    raw = data if isinstance(data, bytes) else json.dumps(data, indent=2).encode()
    return parse_file(store, raw, name, context=ctx)


def refused(store: Store, data: list[dict[str, Any]] | bytes, ctx: ImportContext = LACKING) -> str:
    with pytest.raises(ImportFileError) as err:
        parse(store, data, ctx)
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_v50_llm_records_are_read_and_the_rest_skipped(store):
    p = parse(store, (FIXTURES / V50).read_bytes(), name=V50)
    assert p.format == "mlperf-summary-results"
    out = p.rows.to_dicts()
    # records 1 (gptj-99, not a catalogue model) and 6 (retinanet) are skipped
    assert [r["row"] for r in out] == [2, 3, 4, 5, 7, 8]
    assert [r["tokens_per_s"] for r in out] == pytest.approx([24525.6, 23374.2, 24525.6, 11843.9, 1116.4, 889.2])
    assert {(r["gpu"], r["num_gpus"]) for r in out[:4]} == {("h100-sxm", 8)}  # Nodes 1 x a# 8
    assert {(r["gpu"], r["num_gpus"]) for r in out[4:]} == {("h200-sxm", 16)}  # Nodes 2 x a# 8
    # llama2-70b-99, -99.9 and v5.0's llama2-70b-interactive-99 (scenario Server) are all Llama 2 70B
    assert [r["model"] for r in out] == ["llama-2-70b"] * 4 + ["llama-3.1-405b"] * 2
    assert {r["phase"] for r in out} == {"mixed"} and {r["weights"] for r in out} == {"fp8"}
    # TOKENS_PER_SAMPLE 294.3, 293.8, 294.3, 292.6, 684.7, 683.9 rounded
    assert [r["output_tokens"] for r in out] == [294, 294, 294, 293, 685, 684]
    assert {(r["batch"], r["input_tokens"]) for r in out} == {(64, 1024)}
    notes = " | ".join(p.notes)
    assert "skipped 2 records: 1 benchmark gptj-99, 1 benchmark retinanet" in notes
    assert "llama2-70b-interactive Server TTFT 0.45 s, TPOT 40 ms" in notes and "llama3.1-405b Server TTFT 6 s, TPOT 175 ms" in notes
    assert "1 results also hold a power figure" in notes  # record 2 carries Power_Result 5391.47102874 Watts
    assert "1 results repeat another" in notes  # record 4 (llama2-70b-99.9 Offline) repeats record 2's 24525.6


def test_v51_interactive_multinode_cpu_and_open_division(store):
    p = parse(store, (FIXTURES / V51).read_bytes(), ImportContext(batch=64, input_tokens=1024, output_tokens=128), V51)
    assert p.format == "mlperf-summary-results"
    out = {r["row"]: r for r in p.rows.to_dicts()}
    # skipped: 1 (CPU-only system: Accelerator "" and a# ""), 11 (whisper), 12 (open division ran llama3_1-70b-fp8_dyn)
    assert sorted(out) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 13]
    # records 2-3: deepseek-r1 on 18 nodes x 4 GB200 = 72 accelerators, read as DeepSeek-V3 (same architecture)
    assert (out[2]["gpu"], out[2]["num_gpus"], out[2]["model"], out[2]["weights"]) == ("gb200", 72, "deepseek-v3", "fp4")
    assert out[3]["tokens_per_s"] == pytest.approx(201136.0)
    assert out[4]["tokens_per_s"] == pytest.approx(9120.41)  # llama2-70b-99 Interactive
    # record 8: llama3.1-8b Interactive labelled "Queries/s" by the v5.1 checker; the value is its token rate
    assert (out[8]["model"], out[8]["tokens_per_s"]) == ("llama-3.1-8b", pytest.approx(48210.6))
    # record 13: open division, UsedModel llama3_1-8b against benchmark llama3.1-8b, on 1 x 8 H200
    assert (out[13]["gpu"], out[13]["num_gpus"], out[13]["model"]) == ("h200-sxm", 8, "llama-3.1-8b")
    assert {r["output_tokens"] for r in out.values()} == {128}  # the context replaces every record's value
    notes = " | ".join(p.notes)
    assert "skipped 3 records: 1 systems without accelerators, 1 benchmark whisper, 1 open-division runs of another model" in notes
    assert "1 token rates labelled 'Samples/s' or 'Queries/s'" in notes
    assert "llama2-70b Interactive TTFT 0.45 s, TPOT 40 ms" in notes and "llama3.1-8b Interactive TTFT 0.5 s, TPOT 30 ms" in notes


def test_v51_output_tokens_come_from_tokens_per_sample_and_are_asked_where_missing(store):
    extract = mlperf_json.mlperf_summary_results(records(V51), {})
    # TOKENS_PER_SAMPLE 3741.25..., 3718.60..., 297.1, 296.2, 297.4, 296.2; Llama 3.1 8B prints GEN_LEN (a total) only
    assert extract.frame["output_tokens"].to_list() == ["3741", "3719", "297", "296", "297", "296", None, None, None, None]
    message = refused(store, records(V51))
    assert "record 8" in message and "output tokens per request" in message


def test_detection_claims_only_these_files():
    assert detect_json(records(V50)[0]).name == detect_json(records(V51)[0]).name == "mlperf-summary-results"
    assert "mlperf-summary-results" in BY_NAME
    for path in sorted(FIXTURES.glob("*.json*")):
        if path.name.startswith("mlperf_summary_results"):
            continue
        text = path.read_text(encoding="utf-8").strip()
        try:
            first = json.loads(text)
        except json.JSONDecodeError:  # JSON lines
            first = json.loads(text.splitlines()[0])
        first = first[0] if isinstance(first, list) else first
        if isinstance(first, dict):
            assert not mlperf_json.is_mlperf_summary_results(first), path.name


def _v51() -> list[dict[str, Any]]:
    return records(V51)


def test_versions_and_key_variants(store):
    # v4.1 (mlcommons/inference_results_v4.1): pandas wrote a# as 8.0, and the checker labelled token rates Samples/s
    v41 = [{**r, "a#": 8.0, "version": "v4.1", "Performance_Units": "Samples/s"} for r in _v51()[4:5]]
    row = parse(store, v41).rows.row(0, named=True)
    assert (row["num_gpus"], row["tokens_per_s"]) == (8, pytest.approx(25011.3))
    # the report since 2026 (generate_final_report.py at b66003e1) writes "Total Accelerators": preferred to Nodes x a#
    total = [{**_v51()[4], "Total Accelerators": 4}]
    assert parse(store, total).rows["num_gpus"].to_list() == [4]
    # a record whose Result was 0 keeps Result/Units (the writer's `if result.get("Result")`): read, then refused as 0
    zero = {k: v for k, v in _v51()[4].items() if not k.startswith("Performance_")} | {"Result": 0, "Units": "Tokens/s"}
    assert "0 is not > 0" in refused(store, [_v51()[5], zero])
    # a lone power record (no performance record to merge with) is skipped like the CSV's power rows
    lone = [_v51()[4], {**_v51()[5], "Performance_Result": 5210.3, "Performance_Units": "Watts"}]
    p = parse(store, lone)
    assert p.rows.height == 1 and any("1 power rows" in n for n in p.notes)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda r: r.pop("Model"), "record 2, column Model: field Model is missing"),
        (lambda r: r.pop("Performance_Result"), "record 2, column Performance_Result: field Performance_Result is missing"),
        (lambda r: r.update(Scenario=5), "record 2, column Scenario: field Scenario is '5', not a name"),
        (lambda r: r.update(Performance_Result=float("nan")), "column Performance_Result: not a finite number: 'nan'"),
        (lambda r: r.update(Performance_Result="inf"), "not a finite number: 'inf'"),
        (lambda r: r.update(Performance_Result=1e12), "1000000000000.0 is above 1e+08 tokens/s"),
        (lambda r: r.update(Performance_Result=[1, 2]), "not a number: '[1, 2]'"),
        (lambda r: r.update(Nodes="two"), "column Total Accelerators (Nodes x a#): not a number: 'two'"),
        (lambda r: r.pop("a#"), "record 2, column a#: the record has no a# (accelerators per node): give it as context: accelerator count"),
        (lambda r: r.pop("Accelerator"), "no accelerator in the file: give it as context: accelerator"),
    ],
)
def test_broken_records_are_refused_in_one_line(store, change, expected):
    data = _v51()[4:6]  # records 5 and 6 of the fixture: llama2-70b-99 Offline and Server on 8x H100
    change(data[1])
    assert expected in refused(store, data, ImportContext(batch=64, input_tokens=1024, output_tokens=128))


def test_files_without_llm_results_or_records_are_refused(store):
    only_other = [r for r in _v51() if r["Model"] == "whisper" or r["UsedModel"] == "llama3_1-70b-fp8_dyn"]
    message = refused(store, only_other)
    assert "no LLM result in tokens/s" in message and "1 benchmark whisper" in message and "1 open-division runs" in message
    assert "the file is empty" in refused(store, b"")
    assert "empty list" in refused(store, b"[]")
    assert "item 2 is a int" in refused(store, json.dumps([_v51()[4], 3]).encode())


def test_the_fixtures_are_the_writer_s_layout():
    """Key order of generate_final_report.py: ID first, the report's names, Performance_* last (Power_* before them)."""
    for name in (V50, V51):
        text = Path(FIXTURES / name).read_text(encoding="utf-8")
        assert text.startswith('[\n  {\n    "ID": ') and not text.endswith("\n")
        for r in records(name):
            keys = list(r)
            assert keys[:3] == ["ID", "Submitter", "Availability"] and keys[-2:] == ["Performance_Result", "Performance_Units"]
            assert "Result" not in r and "Units" not in r


def test_a_system_the_catalogue_lacks_is_left_out_not_the_whole_file(store):
    """A real v5.1 file holds every submitter's systems; one on an accelerator the catalogue lacks (v5.1's '[MAXSUN]
    MS-Intel Arc Pro B60 Dual 48G Turbo') is left out and named; the others are read."""
    ctx = ImportContext(batch=64, input_tokens=1024, output_tokens=256)
    whole = parse(store, records(V51), ctx)
    data = records(V51)
    h200 = [i for i, r in enumerate(data) if r["Accelerator"] == "NVIDIA H200-SXM-141GB"]
    for i in h200:
        data[i]["Accelerator"] = "[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo"
    p = parse(store, data, ctx)
    assert p.rows.height == whole.rows.height - (whole.rows["gpu"] == "h200-sxm").sum() > 0
    assert "h200-sxm" not in p.rows["gpu"].to_list()
    assert any("left out" in n and "MAXSUN" in n for n in p.notes), p.notes
    for r in data:
        if r["Accelerator"]:
            r["Accelerator"] = "[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo"
    assert "every row is on accelerators the catalogue lacks" in refused(store, data, ctx)
