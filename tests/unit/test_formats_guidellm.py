"""guidellm benchmarks.json / .yaml / .csv: every fixture read by field name; broken variants refused in one line."""

from __future__ import annotations

import csv
import io
import json

import pytest

from core.evidence.formats.guidellm import is_guidellm_csv, is_guidellm_yaml
from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

GPU = ImportContext(gpu="h100-sxm")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("guidellm") / "g.duckdb")


def read(store, name, data=None, ctx=GPU, as_name=None):
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_file(store, raw, as_name or name, context=ctx)


def refused(store, data: bytes, name: str, ctx=GPU) -> str:
    with pytest.raises(ImportFileError) as exc:
        parse_file(store, data, name, context=ctx)
    text = str(exc.value)
    assert "\n" not in text
    return text


def near(a, b):
    return a == pytest.approx(b, rel=1e-6)


def test_v03_json(store):
    p = read(store, "guidellm_v0.3_benchmarks.json")
    assert p.format == "guidellm-json"
    first, second = p.rows.to_dicts()
    # benchmark 1: args.strategy.type_ "synchronous" -> batch 1; worker.backend_model matched to the catalogue
    assert first["batch"] == 1 and first["model"] == "llama-3.1-8b" and first["phase"] == "mixed"
    # benchmark 2: constant@8.00, no fixed concurrency: request_concurrency.successful.mean 6.63286 -> round = 7
    assert second["batch"] == 7
    # prompt_token_count mean 255.95 -> 256; output_token_count mean 128.375 -> 128
    assert (second["input_tokens"], second["output_tokens"]) == (256, 128)
    assert near(second["tokens_per_s"], 865.93)  # output_tokens_per_second.successful.mean
    assert near(second["ttft_s"], 34.9574e-3)  # time_to_first_token_ms mean 34.9574 ms
    assert near(second["ttft_p50_s"], 35.3334e-3) and near(second["ttft_p90_s"], 36.8981e-3) and near(second["ttft_p99_s"], 37.2381e-3)
    assert near(second["tpot_s"], 7.43799e-3)  # inter_token_latency_ms mean 7.43799 ms
    assert near(second["tpot_p99_s"], 7.75634e-3)
    assert second["requests"] == 40  # request_totals.successful
    assert any("measured mean request concurrency" in n and "benchmark 2 of 2" in n for n in p.notes)


def test_v02_yaml(store):
    p = read(store, "guidellm_v0.2_benchmarks.yaml")
    assert p.format == "guidellm-yaml"
    conc, poisson = p.rows.to_dicts()
    # concurrent strategy, streams 4 -> batch 4; prompt mean 256.167 -> 256; output mean 128.0 -> 128
    assert (conc["batch"], conc["input_tokens"], conc["output_tokens"]) == (4, 256, 128)
    assert near(conc["tokens_per_s"], 548.685)
    # v0.2 percentiles have no p50: the median is p50 (31.8985 ms); p90 32.8569 ms, p99 33.3796 ms
    assert near(conc["ttft_s"], 31.5367e-3) and near(conc["ttft_p50_s"], 31.8985e-3) and near(conc["ttft_p99_s"], 33.3796e-3)
    assert near(conc["tpot_s"], 7.04804e-3) and near(conc["tpot_p90_s"], 7.20638e-3)
    # poisson@6: request_concurrency.successful.mean 4.90705 -> 5
    assert poisson["batch"] == 5


def test_current_json(store):
    p = read(store, "guidellm_benchmarks.json")
    assert p.format == "guidellm-json"
    a, b = p.rows.to_dicts()
    # config.strategy.streams 16 and 64; config.backend.model
    assert (a["batch"], b["batch"]) == (16, 64) and a["model"] == "llama-3.1-8b"
    # prompt mean 255.992 -> 256, output mean 127.949 -> 128
    assert (b["input_tokens"], b["output_tokens"]) == (256, 128)
    assert near(b["tokens_per_s"], 4403.57) and near(b["ttft_s"], 85.5398e-3) and near(b["tpot_s"], 13.6416e-3)
    assert near(b["ttft_p90_s"], 86.9894e-3) and b["requests"] == 256
    assert not any("measured mean" in n for n in p.notes)  # concurrent: nothing measured stands in


def test_current_csv_matches_json(store):
    p = read(store, "guidellm_benchmarks.csv")
    assert p.format == "guidellm-csv"
    rows = p.rows.to_dicts()
    # data rows are lines 4 and 5 (three header rows); streams from the Profile column's streams[Run Index]
    assert [r["row"] for r in rows] == [4, 5] and [r["batch"] for r in rows] == [16, 64]
    a = rows[0]
    # Token Metrics / Successful Input Tokens / Mean 256.146 -> 256; Output 128.385 -> 128
    assert (a["input_tokens"], a["output_tokens"]) == (256, 128)
    assert near(a["tokens_per_s"], 1835.67) and near(a["ttft_s"], 42.2422e-3) and near(a["tpot_s"], 8.3665e-3)
    # Percentiles cell [min, p0.1, p1, p5, p10, p25, p75, p90, p95, p99, max]: p90 item 8 = 43.8771, p99 item 10 = 44.3459
    assert near(a["ttft_p90_s"], 43.8771e-3) and near(a["ttft_p99_s"], 44.3459e-3) and near(a["ttft_p50_s"], 42.0976e-3)
    assert a["requests"] == 96
    same = read(store, "guidellm_benchmarks.json").rows.drop("row")
    assert p.rows.drop("row").equals(same)


def test_context_model_overrides_and_gpu_is_asked(store):
    p = read(store, "guidellm_benchmarks.json", ctx=ImportContext(gpu="h100-sxm", model="llama-3.1-70b"))
    assert set(p.rows["model"]) == {"llama-3.1-70b"}
    for name in ("guidellm_benchmarks.json", "guidellm_v0.2_benchmarks.yaml", "guidellm_benchmarks.csv"):
        msg = refused(store, (FIXTURES / name).read_bytes(), name, ctx=ImportContext())
        assert "no accelerator" in msg and "give it as context: accelerator" in msg


def test_rate_note_absent_when_batch_given(store):
    p = read(store, "guidellm_v0.3_benchmarks.json", ctx=ImportContext(gpu="h100-sxm", batch=8))
    assert set(p.rows["batch"]) == {8} and not any("measured mean" in n for n in p.notes)


def test_detection():
    head = (FIXTURES / "guidellm_v0.2_benchmarks.yaml").read_text()[:8192]
    assert is_guidellm_yaml(head)
    assert not is_guidellm_yaml("benchmarks:\n- name: foo\n  stats: {}\n")  # not guidellm's keys
    assert is_guidellm_csv((FIXTURES / "guidellm_benchmarks.csv").read_text()[:8192])
    assert not is_guidellm_csv("Run Info,x\n1,2\n")


def _report(path: str = "guidellm_benchmarks.json") -> dict:
    return json.loads((FIXTURES / path).read_text())


def _dump(obj) -> bytes:
    return json.dumps(obj).encode()


def test_json_refusals(store):
    r = _report()
    del r["benchmarks"][1]["metrics"]
    assert "benchmark 2: field metrics is missing" in refused(store, _dump(r), "b.json")
    r = _report()
    del r["benchmarks"][0]["config"]["strategy"]["type_"]
    assert "field config.strategy.type_ is missing" in refused(store, _dump(r), "b.json")
    r = _report()
    r["benchmarks"][0]["metrics"]["output_tokens_per_second"]["successful"]["mean"] = "fast"
    msg = refused(store, _dump(r), "b.json")
    assert "benchmark 1" in msg and "output_tokens_per_second" in msg and "not a number" in msg
    r = _report()
    r["benchmarks"][1]["metrics"]["time_to_first_token_ms"]["successful"]["mean"] = float("nan")
    msg = refused(store, json.dumps(r).encode(), "b.json")
    assert "benchmark 2" in msg and "not a finite number" in msg
    r = _report()
    r["benchmarks"][0]["metrics"]["prompt_token_count"] = None
    assert "prompt_token_count" in refused(store, _dump(r), "b.json")
    r = _report()
    r["benchmarks"][0]["metrics"] = [1, 2]
    assert "metrics is a list" in refused(store, _dump(r), "b.json")
    r = _report()
    r["benchmarks"][0]["config"]["strategy"] = {"type_": "concurrent", "streams": 1e30}
    assert "benchmark 1" in refused(store, _dump(r), "b.json")
    r = _report("guidellm_v0.3_benchmarks.json")
    r["benchmarks"][1]["metrics"]["request_concurrency"]["successful"]["mean"] = float("inf")
    assert "not a finite number" in refused(store, json.dumps(r).encode(), "b.json")


def test_yaml_refusals(store):
    good = (FIXTURES / "guidellm_v0.2_benchmarks.yaml").read_text()
    broken = good.replace("  extras: {}\n", "  extras: {\n", 1)
    msg = refused(store, broken.encode(), "benchmarks.yaml")
    assert "YAML is malformed" in msg and "line " in msg
    huge = b"benchmarks:\n- strategy_index: 0\n" + b"#" * 20_000_001
    assert "the limit is 20 MB" in refused(store, huge, "benchmarks.yaml")
    assert "no benchmarks of type generative_benchmark" in refused(store, b"benchmarks:\n- strategy_index: 0\n", "benchmarks.yaml")
    no_metrics = good.replace("  metrics:\n", "  metrix:\n")
    assert "field metrics is missing" in refused(store, no_metrics.encode(), "benchmarks.yaml")
    assert "the file is empty" in refused(store, b"", "benchmarks.yaml")


def test_yaml_python_tags_read_as_data(store):
    good = (FIXTURES / "guidellm_v0.2_benchmarks.yaml").read_text()
    # yaml.dump writes a Path and a tuple with python tags: read as plain data, nothing constructed or called
    tagged = good.replace(
        "  extras: {}\n", "  extras:\n    out: !!python/object/apply:os.system\n    - echo hi\n    t: !!python/tuple [1, 2]\n", 1
    )
    p = read(store, "x", data=tagged.encode(), as_name="benchmarks.yaml")
    assert p.format == "guidellm-yaml" and p.rows.height == 2


def test_csv_refusals(store):
    text = (FIXTURES / "guidellm_benchmarks.csv").read_text()
    table = list(csv.reader(io.StringIO(text)))

    def written(rows) -> bytes:
        buf = io.StringIO()
        csv.writer(buf).writerows(rows)
        return buf.getvalue().encode()

    assert "no benchmark rows" in refused(store, written(table[:3]), "benchmarks.csv")
    at = next(
        i for i, key in enumerate(zip(*table[:3], strict=True)) if key == ("Token Throughput", "Successful Output Tokens/Sec", "Mean")
    )
    assert float(table[3][at]) > 0
    bad = [row[:] for row in table]
    bad[3][at] = "inf"
    msg = refused(store, written(bad), "benchmarks.csv")
    assert "line 4" in msg and "Output Tokens/Sec" in msg and "not a finite number" in msg
    bad[3][at] = ""
    assert "line 4" in refused(store, written(bad), "benchmarks.csv")
    renamed = [row[:] for row in table]
    renamed[1] = [c.replace("Successful Output Tokens/Sec", "Output Rate") for c in renamed[1]]
    assert "column Token Throughput / Successful Output Tokens/Sec / Mean is missing" in refused(store, written(renamed), "b.csv")


# -- v0.2-v0.3 benchmarks.csv (save_csv: one header row) ---------------------------------------------

V03_CSV = "guidellm_v0.3_benchmarks.csv"


def _v03_table() -> list[list[str]]:
    return list(csv.reader(io.StringIO((FIXTURES / V03_CSV).read_text())))


def _written(rows) -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue().encode()


def test_v03_csv(store):
    p = read(store, V03_CSV)
    assert p.format == "guidellm-csv-v0.3"
    first, second = p.rows.to_dicts()
    # data rows 1 and 2; Name "synchronous" -> batch 1; Worker JSON backend_model matched to the catalogue
    assert (first["row"], second["row"]) == (1, 2)
    assert first["batch"] == 1 and first["model"] == "llama-3.1-8b" and first["phase"] == "mixed"
    # row 1: Successful Prompt token count mean 255.5 -> 256 (round half to even), Output token count mean 127.0 -> 127
    assert (first["input_tokens"], first["output_tokens"]) == (256, 127)
    assert near(first["tokens_per_s"], 144.232) and first["requests"] == 8
    # row 2: Name "constant@8.00" (rate-based): Successful Request concurrency mean 6.63286 -> round = 7
    assert second["batch"] == 7
    # prompt mean 255.95 -> 256; output mean 128.375 -> 128; Successful Output tokens per second mean 865.93
    assert (second["input_tokens"], second["output_tokens"]) == (256, 128) and near(second["tokens_per_s"], 865.93)
    # Time to first token ms mean 34.9574, median 35.3334; [min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max] item 8 = 36.8981, item 10 = 37.2381
    assert near(second["ttft_s"], 34.9574e-3) and near(second["ttft_p50_s"], 35.3334e-3)
    assert near(second["ttft_p90_s"], 36.8981e-3) and near(second["ttft_p99_s"], 37.2381e-3)
    # Inter token latency ms mean 7.43799, list item 8 = 7.72401, item 10 = 7.75634
    assert near(second["tpot_s"], 7.43799e-3) and near(second["tpot_p90_s"], 7.72401e-3) and near(second["tpot_p99_s"], 7.75634e-3)
    assert second["requests"] == 40  # Successful Requests
    assert any("measured mean request concurrency" in n and "benchmark 2 of 2" in n for n in p.notes)


def test_v03_csv_matches_json(store):
    """The CSV and the JSON of one run (save_csv and save_json of the same report) import to the same measurements."""
    csv_rows = read(store, V03_CSV).rows.drop("row")
    json_rows = read(store, "guidellm_v0.3_benchmarks.json").rows.drop("row")
    assert csv_rows.equals(json_rows)


def test_v03_csv_concurrent_streams(store):
    table = _v03_table()
    head = table[0]
    name, args = head.index("Name"), head.index("Args")
    row = table[1]
    row[name] = "concurrent@4"
    parsed = json.loads(row[args])
    parsed["strategy"] = {"type_": "concurrent", "start_time": 1757080800.0, "streams": 4}
    row[args] = json.dumps(parsed)
    p = read(store, "x", data=_written(table), as_name="benchmarks.csv")
    # Args strategy.streams 4 -> batch 4 (no measured concurrency stands in for a concurrent benchmark)
    assert p.format == "guidellm-csv-v0.3" and p.rows["batch"].to_list() == [4, 7]
    del parsed["strategy"]["streams"]
    row[args] = json.dumps(parsed)
    # no streams in Args: the Name's "@4" is the concurrency
    assert read(store, "x", data=_written(table), as_name="benchmarks.csv").rows["batch"].to_list() == [4, 7]


def test_v03_csv_refusals(store):
    table = _v03_table()
    at = table[0].index("Successful Output tokens per second mean")
    assert "header but no data rows" in refused(store, _written(table[:1]), "benchmarks.csv")
    for bad_value, problem in (("inf", "not a finite number"), ("nan", "not a finite number"), ("fast", "not a number")):
        bad = [r[:] for r in table]
        bad[2][at] = bad_value
        msg = refused(store, _written(bad), "benchmarks.csv")
        assert "row 2" in msg and "Successful Output tokens per second mean" in msg and problem in msg
    renamed = [r[:] for r in table]
    renamed[0][at] = "Successful Output rate mean"
    msg = refused(store, _written(renamed), "benchmarks.csv")
    assert "column Successful Output tokens per second mean is missing" in msg
    assert "no accelerator" in refused(store, (FIXTURES / V03_CSV).read_bytes(), "benchmarks.csv", ctx=ImportContext())


def test_v03_csv_detection():
    from core.evidence.formats.guidellm import is_guidellm_v03_csv
    from core.evidence.formats.registry import detect_csv

    header = _v03_table()[0]
    assert is_guidellm_v03_csv(header) and detect_csv(header).name == "guidellm-csv-v0.3"
    assert not is_guidellm_v03_csv(["Type", "Run Id", "Name", "Successful Requests"])  # not save_csv's column order
    # the v0.4+ CSV is still its own format (a text detector, tried first)
    assert not is_guidellm_v03_csv(next(csv.reader(io.StringIO((FIXTURES / "guidellm_benchmarks.csv").read_text()))))
