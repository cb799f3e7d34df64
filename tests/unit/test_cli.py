"""The command line: JSON records, and one-line errors with a non-zero exit. Each command runs in this process
(core.cli.main, tests/helpers.py); test_the_installed_command_and_python_m_core_cli_run_as_processes runs it as the
`roofline` command and as `python -m core.cli`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ROOT, SEED, Ran, roofline


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli") / "cli.duckdb"


@pytest.fixture
def run(db: Path, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """`run(*args)`: `roofline ARGS --db DB` in this process."""
    return lambda *args: roofline(capsys, *args, "--db", str(db))


@pytest.fixture
def ok(run):  # type: ignore[no-untyped-def]
    """`ok(*args)`: `roofline ARGS --json --db DB`'s JSON, the command having succeeded."""
    return lambda *args: run(*args, "--json").json()


def _process(*command: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
    done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    return Ran(done.returncode, done.stdout, done.stderr)


@pytest.mark.slow
def test_the_installed_command_and_python_m_core_cli_run_as_processes(tmp_path):
    """The one test that starts processes (each ~2 s of imports): the `roofline` command scripts/test installs into the
    environment, from another folder, and `python -m core.cli` from the checkout print the same ridge as the
    command run in-process (989.4 / 3.35 FLOP/byte); a bad id exits with status 2 and one line on stderr through the
    process boundary; and `python -m core.probe` refuses an --out that is a folder before it measures."""
    command = Path(sys.executable).with_name("roofline")
    assert command.is_file(), f"{command} is missing: bash scripts/test installs it (pip install -e .)"
    env = {**os.environ, "ROOFLINE_DB": str(tmp_path / "p.duckdb")}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for ran in (
        _process(str(command), "ridge", "--gpu", "h100-sxm", "--json", cwd=elsewhere, env=env),
        _process(sys.executable, "-m", "core.cli", "ridge", "--gpu", "h100-sxm", "--json", cwd=ROOT, env=env),
    ):
        assert ran.json()["ridge"] == pytest.approx(989.4 / 3.35, rel=1e-9)
        assert ran.stderr == ""
    bad = _process(str(command), "ridge", "--gpu", "h100", cwd=elsewhere, env=env)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "unknown accelerator 'h100'; did you mean h100-sxm" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    probe = _process(sys.executable, "-m", "core.probe", "--device", "cpu", "--out", str(tmp_path), cwd=ROOT, env=env)
    assert probe.returncode == 2 and f"{tmp_path} is a folder; give a file name" in probe.stderr


def test_gpus_lists_dense_peaks_by_precision_with_sources(ok):
    """`gpus --json`: records with id, bytes, byte/s, peak_flops keyed by precision and sources."""
    gpus = {g["id"]: g for g in ok("gpus")}
    h100 = gpus["h100-sxm"]
    assert h100["memory_bytes"] == 80e9
    assert h100["bandwidth_bytes_per_s"] == pytest.approx(3.35e12)
    assert h100["peak_flops"]["bf16"] == pytest.approx(989.4e12)
    assert h100["peak_flops"]["fp4"] is None
    assert h100["power_w"] == 700
    assert any(s.startswith("http") for s in h100["sources"])


def test_models_lists_shapes_params_and_kv_bytes(ok):
    """`models --json`: Llama 3.1 8B has 32 layers, 8.03 B params, 128 KiB of bf16 KV per token."""
    models = {m["id"]: m for m in ok("models")}
    m = models["llama-3.1-8b"]
    assert (m["layers"], m["hidden_size"]) == (32, 4096)
    assert m["total_params"] == 8_030_261_248
    # 32 layers x 2 (K and V) x 8 KV heads x 128 dims x 2 bytes
    assert m["kv_bytes_per_token"] == 32 * 2 * 8 * 128 * 2


def test_model_from_config_parses_a_config_file(ok, tmp_path):
    """`model-from-config PATH`: the record of a Hugging Face config.json."""
    path = tmp_path / "config.json"
    path.write_text((SEED / "models" / "mistral-7b.json").read_text())
    rec = ok("model-from-config", str(path), "--id", "mistral-copy")
    assert rec["id"] == "mistral-copy"
    assert rec["total_params"] == 7_248_023_552
    assert rec["num_kv_heads"] == 8


def test_ridge_of_h100_sxm(ok):
    """`ridge`: 989.4e12 / 3.35e12 = 295.3 FLOP/byte in bf16, 590.7 in fp8."""
    r = ok("ridge", "--gpu", "h100-sxm")
    assert r["ridge"] == pytest.approx(989.4 / 3.35, rel=1e-9)
    assert ok("ridge", "--gpu", "h100-sxm", "--precision", "fp8")["ridge"] == pytest.approx(1978.9 / 3.35, rel=1e-9)


def test_ceiling_of_70b_on_two_h100_matches_the_seed(ok):
    """`ceiling`: Llama 3.1 70B bf16 on 2 x H100 SXM at batch 1 has a ~48 tok/s weights-only ceiling."""
    r = ok("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--num-gpus", "2", "--ops")
    assert r["bandwidth_ceiling_tokens_per_s"] == pytest.approx(48, rel=0.02)
    for key in (
        "step_time_s",
        "tokens_per_s_per_user",
        "tokens_per_s_total",
        "ttft_s",
        "flops",
        "bytes",
        "weight_bytes",
        "kv_bytes",
        "intensity",
        "bound",
        "memory_required_bytes",
        "fits",
        "max_batch",
        "flags",
    ):
        assert key in r
    assert r["bound"] == "memory"
    assert r["fits"] is True
    assert {op["op"] for op in r["ops"]} >= {"q_proj", "attention", "mlp gate+up", "lm_head"}


def test_sweep_writes_parquet_and_csv(ok, tmp_path):
    """`sweep --out`: one row per scenario of the grid, to Parquet or CSV."""
    out = tmp_path / "s.parquet"
    ok(
        "sweep",
        "--gpu",
        "h100-sxm",
        "--gpu",
        "l40s",
        "--model",
        "llama-3.1-8b",
        "--batch",
        "1",
        "--batch",
        "8",
        "--context",
        "4096",
        "--out",
        str(out),
    )
    frame = pl.read_parquet(out)
    assert frame.height == 2 * 1 * 3 * 2 * 1  # gpus x models x default weights x batches x contexts
    csv = tmp_path / "s.csv"
    ok("sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "1", "--context", "1024", "--out", str(csv))
    assert pl.read_csv(csv).height == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ridge", "--gpu", "h100"), "unknown accelerator 'h100'; did you mean h100-sxm"),
        (("ceiling", "--gpu", "h100-sxm", "--model", "llama-3-8b"), "unknown model 'llama-3-8b'; did you mean"),
        (("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "0"), "--batch"),
        (("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "-5"), "--context"),
        (("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--spec-acceptance", "1"), "--spec-acceptance"),
        (("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--weights", "fp9"), "unknown precision 'fp9'"),
        (("ridge", "--gpu", "a100-80gb-sxm", "--precision", "fp8"), "has no fp8 peak"),
        (("sweep", "--gpu", "h100-sxm", "--batch", "0", "--out", "x.csv"), "--batch"),
        (("compare", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--price", "h100-sxm=free"), "--price: expected ID=USD"),
        (("compare", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--buy", "--pue", "0.5"), "--pue"),
        (("compare", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests-per-s", "3"), "go together"),
        (("compare", "--gpu", "h100", "--model", "llama-3.1-8b"), "unknown accelerator 'h100'"),
        (("prices", "--gpu", "h100"), "unknown accelerator 'h100'"),
        (("frontier", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--num-gpus", "0"), "--num-gpus"),
    ],
)
def test_bad_arguments_exit_non_zero_with_a_message_naming_them(run, args, message):
    """Unknown ids and impossible values: exit status 2, one line on stderr naming the argument."""
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


def test_missing_config_field_is_named(run, tmp_path):
    """`model-from-config` on a config without num_attention_heads names that field."""
    cfg = json.loads((SEED / "models" / "llama-3.1-8b.json").read_text())
    del cfg["num_attention_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    proc = run("model-from-config", str(path))
    assert proc.returncode == 2
    assert "num_attention_heads: missing" in proc.stderr


def test_every_scenario_field_is_an_option_of_ceiling_report_and_sweep():
    """The options come from the Scenario: each field once, under its flag; the sweep's axes repeat."""
    from core.cli import SWEEP_AXES, build_parser
    from core.model.scenario import FIELDS, flag

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command in ("ceiling", "report", "sweep"):
        options = {a.dest: a for a in sub.choices[command]._actions}
        for name in FIELDS:
            assert flag(name) in options[name].option_strings, (command, name)
        if command == "sweep":
            assert {n for n, a in options.items() if a.__class__.__name__ == "_AppendAction"} == set(SWEEP_AXES)
    args = build_parser().parse_args(
        ["ceiling", "--gpu", "b200", "--model", "llama-3.1-8b", "--unfused-attention", "--overhead-s", "0.002"]
    )
    assert args.flash_attention is False and args.overhead_s == 0.002


def test_sweep_takes_the_fixed_scenario_fields(ok, run, tmp_path):
    """`sweep --eff-bandwidth 0.5`: at batch 1 on one GPU every operation stays memory-bound, so every
    decode rate halves exactly; --kv and --prompt reach the grid."""
    base = ("sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--weights", "bf16", "--batch", "1", "--context", "1024")
    full, half, other = tmp_path / "full.parquet", tmp_path / "half.parquet", tmp_path / "other.parquet"
    ok(*base, "--out", str(full))
    ok(*base, "--eff-bandwidth", "0.5", "--out", str(half))
    ok(*base, "--kv", "fp8", "--prompt", "512", "--out", str(other))
    f, h, o = (pl.read_parquet(p).row(0, named=True) for p in (full, half, other))
    assert h["tokens_per_s_total"] == pytest.approx(0.5 * f["tokens_per_s_total"], rel=1e-12)
    assert h["bound"] == f["bound"] == "memory"
    assert (f["kv"], f["prompt"], o["kv"], o["prompt"]) == ("bf16", 2048, "fp8", 512)
    assert o["kv_memory_bytes"] == pytest.approx(0.5 * f["kv_memory_bytes"], rel=1e-12)
    proc = run(*base, "--eff-bandwidth", "0", "--out", str(tmp_path / "x.csv"))
    assert proc.returncode == 2 and "--eff-bandwidth" in proc.stderr


def test_import_context_options_are_the_import_context_fields():
    from core.cli import build_parser
    from core.evidence.importers import ImportContext

    args = build_parser().parse_args(["import", "f.json", "--num-gpus", "4", "--input-tokens", "512", "--kv", "fp8", "--phase", "mixed"])
    assert {n: getattr(args, n) for n in ImportContext.model_fields} == {
        "gpu": None,
        "num_gpus": 4,
        "model": None,
        "weights": None,
        "kv": "fp8",
        "compute": None,
        "batch": None,
        "input_tokens": 512,
        "output_tokens": None,
        "phase": "mixed",
    }


def test_prices_lists_every_published_price_with_its_source_date_and_the_median_used(ok):
    """`prices --gpu h100-sxm --kind rent`: the CSV's rows for it, each with source and date, and the median the app uses."""
    import csv
    import statistics

    from core.store import SEED

    rows = [r for r in csv.DictReader((SEED / "prices.csv").open(encoding="utf-8")) if r["gpu"] == "h100-sxm" and r["kind"] == "rent"]
    out = ok("prices", "--gpu", "h100-sxm", "--kind", "rent")
    assert isinstance(out, list) and len(out) == len(rows)
    assert {r["source_url"] for r in out} == {r["source_url"] for r in rows}
    assert {r["median_used"] for r in out} == {statistics.median(float(r["usd"]) for r in rows)}
    assert all(set(r) >= {"usd", "provider", "offer", "as_of", "source_url", "note", "old"} for r in out)


def test_compare_with_an_mlperf_preset_rented_and_bought(ok):
    """`compare --target mlperf-llama2-70b-interactive`: every configuration kept meets 450 ms / 40 ms; --buy costs ownership
    at the given price: ($30,000 / (5 x 8,760) + 0.7 kW x 1.5 x $0.10) per GPU-hour."""
    args = ("compare", "--gpu", "h100-sxm", "--gpu", "mi300x", "--model", "llama-2-70b", "--weights", "fp8", "--kv", "fp8")
    out = ok(*args, "--target", "mlperf-llama2-70b-interactive")
    assert out["target"]["tpot_s"] == 0.04 and out["target"]["ttft_s"] == 0.45 and "inference_rules" in out["target"]["source"]
    for row in out["accelerators"]:
        if row["status"] == "ok":
            assert row["time_per_output_token_s"] <= 0.04 and row["ttft_s"] <= 0.45
            assert row["price_kind"] == "rent" and row["usd_per_million_tokens"] > 0 and row["price_basis"]
    bought = ok(*args, "--buy", "--years", "5", "--usd-per-kwh", "0.1", "--pue", "1.5", "--price", "h100-sxm=30000")
    h100 = next(r for r in bought["accelerators"] if r["gpu"] == "h100-sxm")
    assert h100["usd_per_gpu_hour"] == pytest.approx(30_000 / 43_800 + 0.105)
    assert h100["price_basis"].endswith("your price")


def test_compare_sizes_a_load_and_frontier_lists_the_curve(ok):
    """A load of 20 requests/s of 1,024 in / 128 out: replicas x GPUs; `frontier` gives one point per batch that fits."""
    out = ok(
        "compare",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--tpot-ms",
        "30",
        "--ttft-s",
        "1",
        "--requests-per-s",
        "20",
        "--input-tokens",
        "1024",
        "--output-tokens",
        "128",
    )
    row = out["accelerators"][0]
    assert out["workload"]["prompt"] == 1024 and out["workload"]["context"] == 1152
    assert row["gpus_needed"] == row["replicas"] * row["num_gpus"] >= 1
    front = ok("frontier", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--num-gpus", "2")
    points = front["points"]
    assert points and {p["num_gpus"] for p in points} == {2}
    assert all(p["tokens_per_s_per_gpu"] == pytest.approx(p["tokens_per_s_total"] / 2) for p in points)
    assert [p["batch"] for p in points] == sorted(p["batch"] for p in points)


def test_report_of_a_tensor_parallel_scenario_lists_its_all_reduces(ok, tmp_path):
    """`report` on 2 x H100: the per-operation table ends with the all-reduce row, its time the ceiling's communication
    (160 x (6 µs + 131,072 B / 450 GB/s) at batch 8 = 1,007 µs), and em dashes where it moves no HBM bytes of its own."""
    out = tmp_path / "r.html"
    ok(
        "report",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-70b",
        "--num-gpus",
        "2",
        "--batch",
        "8",
        "--context",
        "1024",
        "--out",
        str(out),
    )
    html = out.read_text(encoding="utf-8")
    comm = 160 * (6e-6 + 8 * 8192 * 2 / 450e9)
    row = f"<td>tensor parallel</td><td>all-reduce (2 per layer)</td><td>80</td><td>—</td><td>—</td><td>—</td><td>n/a</td><td>communication</td><td>{comm * 1e6:,.4g}</td>"
    assert row in html
