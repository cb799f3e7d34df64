"""LMDeploy's benchmark CSVs (profile_throughput, profile_restful_api, profile_generation): every column set read by name.

Expected values are computed by hand from the fixtures' numbers (the arithmetic is in the comments); where each
fixture's columns come from: tests/fixtures/README.md.
"""

from __future__ import annotations

import pytest

from core.evidence.formats.generic import header_of
from core.evidence.formats.registry import detect_csv, detect_text
from core.evidence.importers import ImportContext, ImportFileError, columns_to_map, parse_file
from core.store import Store
from tests.helpers import FIXTURES

H100 = {"gpu": "h100-sxm", "model": "llama-3.1-8b"}
A100 = {"gpu": "a100-80gb-sxm", "model": "llama-2-7b"}  # the 2023 fixtures (v0.0.9-v0.1.0a2 predate Llama 3)
ALL = sorted(p.name for p in FIXTURES.glob("lmdeploy_*.csv"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("lmdeploy") / "lmdeploy.duckdb")


def read(store, name: str, data: bytes | None = None, fmt: str | None = None, **ctx):
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_file(store, raw, name, fmt=fmt, context=ImportContext(**ctx))


def refused(store, name: str, data: bytes, fmt: str | None = None, **ctx) -> str:
    with pytest.raises(ImportFileError) as exc:
        read(store, name, data, fmt, **ctx)
    message = str(exc.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def rows(parsed, *cols):
    return [tuple(r[c] for c in cols) for r in parsed.rows.iter_rows(named=True)]


COLS = ("phase", "batch", "input_tokens", "output_tokens", "tokens_per_s", "ttft_s", "tpot_s", "requests")

# (fixture, format, context, expected rows as COLS)
CASES = [
    # profile_throughput v0.9.0+: lengths = totals / completed; batch = min(bs, num_prompts); ms -> s
    # row 1: 2048000/2000 = 1024, 1024000/2000 = 512, min(256, 2000) = 256; 1412.337 ms, 20.585 ms
    # row 2: 116402/500 = 232.804 -> 233, 102711/500 = 205.422 -> 205, min(512, 500) = 500
    (
        "lmdeploy_throughput.csv",
        "lmdeploy-throughput",
        H100,
        [
            ("mixed", 256, 1024, 512, 10621.021, 1.412337, 0.020585, 2000),
            ("mixed", 500, 233, 205, 7190.064, 2.103141, 0.037962, 500),
        ],
    ),
    # v0.7-v0.8: no counts; out = 6449.469 x 60 / 1888.558 = 204.90 -> 205;
    # in = (13789.795 - 6449.469) x 60 / 1888.558 = 233.20 -> 233; FTL(ave)(s) 2.183 s; requests = num_prompts 5000
    ("lmdeploy_throughput_v0.7.csv", "lmdeploy-throughput", H100, [("mixed", 256, 233, 205, 6449.469, 2.183, None, 5000)]),
    # v0.1.0-v0.6: out = 5938.128 x 60 / 1737.751 = 205.03 -> 205; in = (12689.437 - 5938.128) x 60 / 1737.751 = 233.10 -> 233
    ("lmdeploy_throughput_v0.1.csv", "lmdeploy-throughput", H100, [("mixed", 128, 233, 205, 5938.128, 0.521, None, 3000)]),
    # v0.1.0a2: in = 466204.0 / 2000 = 233.102 -> 233, out = 410982.0 / 2000 = 205.491 -> 205
    ("lmdeploy_throughput_v0.1.0a2.csv", "lmdeploy-throughput", A100, [("mixed", 64, 233, 205, 2396.508, 0.302, None, 2000)]),
    # v0.1.0a1: the same totals; 'output token thr(tokens/s' (the header lacks its closing parenthesis)
    ("lmdeploy_throughput_v0.1.0a1.csv", "lmdeploy-throughput", A100, [("mixed", 64, 233, 205, 2282.508, 0.324, None, 2000)]),
    # profile_restful_api v0.9.0+: 1024000/1000 = 1024, 512000/1000 = 512; no concurrency in the file: batch 256 as context
    (
        "lmdeploy_restful_api.csv",
        "lmdeploy-restful-api",
        {**H100, "batch": 256},
        [
            ("mixed", 256, 1024, 512, 9690.048120558611, 12.672502193123102, 0.022775611439882354, 1000),
            ("mixed", 256, 1024, 512, 7864.239948336737, 0.21471835392713547, 0.017552078829193114, 1000),
        ],
    ),
    # v0.1.0-v0.6.1: out = 5475.681 x 60 / 1602.420 = 205.03 -> 205; in = (11701.215 - 5475.681) x 60 / 1602.420 = 233.10 -> 233;
    # FTL '-' (stream_output off by default): no TTFT
    ("lmdeploy_restful_api_v0.1.csv", "lmdeploy-restful-api", H100, [("mixed", 128, 233, 205, 5475.681, None, None, 3000)]),
    # v0.1.0a2 and a1: 466204.0 / 2000 -> 233, 410982.0 / 2000 -> 205
    ("lmdeploy_restful_api_v0.1.0a2.csv", "lmdeploy-restful-api", A100, [("mixed", 64, 233, 205, 2160.513, None, None, 2000)]),
    ("lmdeploy_restful_api_v0.1.0a1.csv", "lmdeploy-restful-api", A100, [("mixed", 64, 233, 205, 2160.513, None, None, 2000)]),
    # profile_generation v0.5.2-v0.10.1: one row per batch x lengths, as written; FTL(ave)(s) is the 7th column
    (
        "lmdeploy_generation.csv",
        "lmdeploy-generation",
        H100,
        [
            ("mixed", 1, 1, 128, 163.87, 0.008, None, None),
            ("mixed", 1, 2048, 2048, 151.23, 0.129, None, None),
            ("mixed", 64, 1, 128, 7052.18, 0.074, None, None),
            ("mixed", 64, 2048, 2048, 3617.5, 4.081, None, None),
        ],
    ),
    (
        "lmdeploy_generation_v0.1.csv",
        "lmdeploy-generation",
        H100,
        [("mixed", 1, 1, 128, 161.02, 0.008, None, None), ("mixed", 64, 2048, 2048, 3488.91, 4.312, None, None)],
    ),
    (
        "lmdeploy_generation_v0.1.0a1.csv",
        "lmdeploy-generation",
        A100,
        [("mixed", 1, 1, 128, 118.62, 0.01, None, None), ("mixed", 16, 128, 128, 1342.77, 0.052, None, None)],
    ),
    # v0.0.9: throughput_per_proc timed the decode only (tokens after the first / time after the first x concurrency)
    (
        "lmdeploy_generation_v0.0.9.csv",
        "lmdeploy-generation",
        A100,
        [
            ("decode", 1, 1, 512, 96.41, None, None, None),
            ("decode", 16, 256, 512, 1398.05, None, None, None),
            ("decode", 64, 256, 512, 3875.6, None, None, None),
        ],
    ),
]


def test_every_fixture_is_a_case():
    assert sorted(c[0] for c in CASES) == ALL


@pytest.mark.parametrize(("name", "fmt", "ctx", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_column_set_is_detected_and_read_by_name(store, name, fmt, ctx, expected):
    p = read(store, name, **ctx)
    assert p.format == fmt
    got = rows(p, *COLS)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g == tuple(pytest.approx(v) if isinstance(v, float) else v for v in e)
    assert set(p.rows["gpu"]) == {ctx["gpu"]}
    assert set(p.rows["model"]) == {ctx["model"]}


def test_tensor_parallel_size_from_the_memory_columns(store):
    """profile_generation v0.1.0a1: mem_per_gpu = memory / tp, so tp = 141.38 / 70.69 = 2.0 and 141.51 / 70.75 = 2.0;
    v0.0.9: 70.12 / 70.12 = 1. The later shapes write one mem(GB): 1 GPU unless given."""
    assert set(read(store, "lmdeploy_generation_v0.1.0a1.csv", **A100).rows["num_gpus"]) == {2}
    assert set(read(store, "lmdeploy_generation_v0.0.9.csv", **A100).rows["num_gpus"]) == {1}
    assert set(read(store, "lmdeploy_generation.csv", **H100, num_gpus=2).rows["num_gpus"]) == {2}


def test_pooled_token_latency_percentiles_are_not_read_as_tpot(store):
    p = read(store, "lmdeploy_throughput_v0.1.csv", **H100)
    assert p.rows["tpot_p50_s"].to_list() == [None]
    assert p.rows["tpot_p99_s"].to_list() == [None]
    assert any("pooled" in n for n in p.notes)


@pytest.mark.parametrize("name", ALL)
def test_the_mapping_step_asks_nothing(name):
    """Routed to an LMDeploy format, not the generic CSV: no mapping step (it used to offer the TPOT column as tokens/s)."""
    data = (FIXTURES / name).read_bytes()
    assert detect_csv(header_of(data)).name.startswith("lmdeploy-")
    assert detect_text(data.decode()) is None
    assert columns_to_map(data) is None


def test_other_csv_files_are_not_claimed():
    for name in ("generic.csv", "llama_bench.csv", "genai_perf.csv", "aiperf.csv", "mlperf_summary.csv", "optimum_leaderboard.csv"):
        assert not detect_csv(header_of((FIXTURES / name).read_bytes())).name.startswith("lmdeploy-"), name
    # one column more or less than a shape is not that shape
    data = (FIXTURES / "lmdeploy_throughput_v0.7.csv").read_bytes()
    assert detect_csv(header_of(data.replace(b",RPM,", b",RPM,extra,", 1))).name == "generic-csv"
    assert detect_csv(header_of(data.replace(b",RPM,", b",", 1))).name == "generic-csv"


# -- what the file lacks is asked for, in one line -------------------------------------------------------------------


def test_the_accelerator_and_the_model_are_asked_for(store):
    msg = refused(store, "lmdeploy_throughput.csv", (FIXTURES / "lmdeploy_throughput.csv").read_bytes())
    assert "profile_throughput CSV names no accelerator and no model: give them as context: accelerator and model" in msg
    msg = refused(store, "lmdeploy_throughput.csv", (FIXTURES / "lmdeploy_throughput.csv").read_bytes(), gpu="h100-sxm")
    assert msg.endswith("names no model: give it as context: model")


def test_an_inf_request_rate_without_concurrency_asks_for_the_batch(store):
    """request_rate inf (the default: every prompt at once) is not an error; the missing concurrency is asked for."""
    data = (FIXTURES / "lmdeploy_restful_api.csv").read_bytes()
    msg = refused(store, "lmdeploy_restful_api.csv", data, **H100)
    assert "row 1, column request_rate" in msg
    assert "request_rate inf: every prompt sent at once" in msg
    assert msg.endswith("give it as context: batch (sequences)")
    # a finite rate: still no concurrency in the file
    finite = data.replace(b",inf,", b",16.0,", 1)
    assert "requests at request_rate 16.0/s" in refused(store, "rate.csv", finite, **H100)
    # the two asks together
    both = refused(store, "lmdeploy_restful_api.csv", data)
    assert both.endswith("give them as context: accelerator, model and batch (sequences)")


# -- broken variants: one line naming the row and the column ----------------------------------------------------------

NEW = (FIXTURES / "lmdeploy_throughput.csv").read_bytes()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (b",10621.021,", b",fast,", "row 1, column output_throughput: not a number: 'fast'"),
        (b",10621.021,", b",nan,", "row 1, column output_throughput: not a finite number: 'nan'"),
        (b",10621.021,", b",inf,", "row 1, column output_throughput: not a finite number: 'inf'"),
        # what Profiler.compute_metrics writes when no request succeeded: tpot = mean([inf]) -> 'inf'
        (b",20.585,", b",inf,", "row 1, column mean_tpot_ms: not a finite number: 'inf'"),
        (b",1024000,", b",1e400,", "row 1, column total_output_tokens / completed: not a finite number: '1e400'"),
        (b",1024000,", b",many,", "row 1, column total_output_tokens / completed: not a number: 'many'"),
        (b",2000,2000,", b",2000,0,", "row 1, column total_input_tokens / completed"),
        (b"turbomind,256,", b"turbomind,-3,", "row 1, column bs (capped at num_prompts): -3 is not >= 1"),
    ],
)
def test_bad_cells_are_refused_in_one_line(store, old, new, expected):
    assert old in NEW
    assert expected in refused(store, "lmdeploy_throughput.csv", NEW.replace(old, new, 1), **H100)


def test_a_short_row_names_the_missing_value(store):
    lines = NEW.split(b"\r\n")
    short = b"\r\n".join([lines[0], lines[1].rsplit(b",", 6)[0], b""])
    assert "row 1, column output_throughput: missing value" in refused(store, "short.csv", short, **H100)


def test_rate_shapes_refuse_a_zero_or_inf_rpm(store):
    data = (FIXTURES / "lmdeploy_throughput_v0.7.csv").read_bytes()
    # (total - out) x 60 / 0: 7340.326 x 60 = 440419.56
    zero = refused(store, "z.csv", data.replace(b",1888.558,", b",0.000,"), **H100)
    assert "row 1, column (throughput(total tok/s) - throughput(out tok/s)) x 60 / RPM: not a number: '440419.56 / 0.0'" in zero
    assert "x 60 / RPM: not a finite number: 'inf'" in refused(store, "i.csv", data.replace(b",1888.558,", b",inf,"), **H100)
    # given as context, the lengths replace what the file would derive: the zero RPM no longer matters
    p = read(store, "z.csv", data.replace(b",1888.558,", b",0.000,"), **H100, input_tokens=233, output_tokens=205)
    assert rows(p, "input_tokens", "output_tokens") == [(233, 205)]


def test_empty_and_header_only_files(store):
    assert refused(store, "e.csv", b"", **H100).endswith("the file is empty")
    header = NEW.split(b"\r\n")[0] + b"\r\n"
    assert refused(store, "h.csv", header, **H100).endswith("the CSV has a header but no data rows")


def test_a_named_format_refuses_another_header(store):
    msg = refused(store, "g.csv", (FIXTURES / "generic.csv").read_bytes(), fmt="lmdeploy-throughput", **H100)
    assert "row 1: the header is not one of profile_throughput's column sets: not a lmdeploy-throughput file?" in msg


def test_an_inf_prompt_count_is_simply_read(store):
    """num_prompts only caps the concurrency: an inf there leaves bs as the batch (256), no error."""
    p = read(store, "inf.csv", NEW.replace(b",1.0,2000,", b",1.0,inf,", 1), **H100)
    assert rows(p, "batch")[0] == (256,)


def test_no_stream_output_dashes_leave_the_latencies_empty(store):
    """--no-stream-output: save_csv writes '-' for mean_ttft_ms and mean_itl_ms; the row still imports."""
    data = NEW.replace(b",1412.337,20.585,20.571", b",-,20.585,-", 1)
    p = read(store, "nostream.csv", data, **H100)
    assert rows(p, "ttft_s", "tpot_s")[0] == (None, pytest.approx(0.020585))
