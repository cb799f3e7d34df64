"""The probe: the NumPy backend's document (runs, methods, spread, what was skipped) on small buffers, the method's
logic by hand, the PyTorch backend's precision and shape rules without a GPU, and a probe file into the store and onto
the roofline. How close its figures come to NumPy timed alone is measured by benchmarks/probe.py, not asserted here."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from core.catalogue.catalogue import load_catalogue
from core.cli import main as cli_main
from core.evidence.probes import ProbeFileError, import_probe, measured_line, parse_probe
from core.model.ceilings import ceiling
from core.model.roofline import operating_points
from core.model.scenario import Scenario
from core.present.charts import roofline_chart, roofline_spec
from core.present.figures import roofline_at, roofline_view
from core.probe import cli as probe_cli
from core.probe.document import ProbeDocument
from core.probe.methods import plan, product_cost, run_probe, shapes, time_it
from core.probe.numpy_backend import last_level_cache_bytes, memory_bytes
from core.probe.torch_backend import pick_device, runnable, shape_refusal
from core.store import get_store
from tests.helpers import ROOT
from tests.probe_docs import SMALL_CACHE_BYTES, SmallNumpyBackend, probe_document


@pytest.fixture(scope="module")
def quick_doc() -> ProbeDocument:
    return run_probe(SmallNumpyBackend(), quick=True)


@pytest.fixture
def small_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """`roofline probe --device cpu` and `python -m core.probe` measure through SmallNumpyBackend."""
    monkeypatch.setattr(probe_cli, "NumpyBackend", SmallNumpyBackend)


def test_the_bandwidth_runs_stream_the_planned_buffers_and_count_their_bytes(quick_doc):
    """A copy and an add over each buffer the plan gives the device the document names: a copy moves 2 x the buffer,
    the add 3 x, and each rate is those bytes over the best time."""
    device = quick_doc.device
    assert device.last_level_cache_bytes == SMALL_CACHE_BYTES
    planned = plan("cpu", cache_bytes=device.last_level_cache_bytes, memory_bytes=device.memory_bytes, quick=True)
    assert [(r.method, r.buffer_bytes) for r in quick_doc.bandwidth] == [(m, b) for b in planned.buffer_bytes for m in ("copy", "add")]
    assert planned.buffer_bytes == (8 * SMALL_CACHE_BYTES,)
    copy = next(r for r in quick_doc.bandwidth if r.method == "copy")
    assert copy.bytes_moved == pytest.approx(2 * copy.buffer_bytes)
    add = next(r for r in quick_doc.bandwidth if r.method == "add")
    assert add.bytes_moved == pytest.approx(3 * add.buffer_bytes)
    for r in quick_doc.bandwidth:
        assert r.bytes_per_s == pytest.approx(r.bytes_moved / r.best_s, rel=1e-12)
    assert quick_doc.summary.bandwidth_bytes_per_s == max(r.bytes_per_s for r in quick_doc.bandwidth)


def test_on_this_machine_a_buffer_is_8_times_its_cache_or_a_twelfth_of_its_memory():
    """The buffer is at least 8 x the last-level cache (when the machine says how large that is), or a twelfth of the
    memory where that is less (the triad's three arrays within a quarter of it): a 480 MiB L3 beside 24 GB of memory
    (a Xeon 6 virtual machine) makes a 2.1 GB buffer, not 4 GB."""
    cache, memory = last_level_cache_bytes(), memory_bytes()
    buffers = plan("cpu", cache_bytes=cache, memory_bytes=memory, quick=True).buffer_bytes
    if cache:
        assert buffers[0] >= min(8 * cache, (memory or math.inf) / 12) * 0.999


def test_the_fp32_peak_is_the_best_square_product(quick_doc):
    """Each product's rate is its 2 m n k FLOPs over its best time; the summary's fp32 peak is the best square one's."""
    for r in quick_doc.matmul:
        assert r.flops == 2 * r.m * r.n * r.k and r.flops_per_s == pytest.approx(r.flops / r.best_s, rel=1e-12)
    run = max((r for r in quick_doc.matmul if r.shape == "square"), key=lambda r: r.flops_per_s)
    assert quick_doc.summary.peak_flops == {"fp32": run.flops_per_s}


def test_the_document_records_method_spread_and_what_was_skipped(quick_doc):
    doc = ProbeDocument.model_validate_json(quick_doc.to_json())
    assert doc.device.kind == "cpu" and doc.device.backend == "numpy"
    assert {r.shape for r in doc.matmul} == {"square", "decode", "prefill"}
    for r in [*doc.bandwidth, *doc.matmul]:
        assert len(r.times_s) == r.repeats and r.best_s == min(r.times_s) and r.spread >= 0
    assert {"bf16 matmul", "fp16 matmul", "int8 matmul"} <= {s.what for s in doc.skipped}
    assert json.loads(doc.to_json())["schema"] == "roofline-explorer/probe"


# -- the method, by hand -----------------------------------------------------------------


def test_buffers_are_multiples_of_the_cache_capped_by_memory():
    p = plan("cuda", cache_bytes=50e6, memory_bytes=141e9)
    assert p.buffer_bytes == (400e6, 800e6, 1600e6)
    small = plan("cpu", cache_bytes=32 * 2**20, memory_bytes=1.2e9, quick=True)
    assert small.buffer_bytes == (1.2e9 / 12,)  # 8 x 33.5 MB would not fit three times in a quarter of 1.2 GB
    assert small.repeats == 3 and plan("cpu", cache_bytes=None, memory_bytes=None).buffer_bytes[0] == 8 * 64e6


def test_shapes_cover_the_roof_decode_and_prefill():
    p = plan("cuda", cache_bytes=50e6, memory_bytes=141e9)
    got = shapes(p)
    assert ("square", 8192, 8192, 8192) in got
    # the weight is at least 4 x the 50 MB cache in bf16: n >= sqrt(2e8 / 2) = 10,000, rounded up to 10,240
    assert [(m, n, k) for s, m, n, k in got if s == "decode"] == [(m, 10240, 10240) for m in (1, 8, 16, 32, 64)]
    assert ("prefill", 2048, 10240, 10240) in got
    cpu = plan("cpu", cache_bytes=32 * 2**20, memory_bytes=24e9)  # this machine: 32 MiB L3, fp32 weights
    assert cpu.hidden == 6144 and 6144**2 * 4 >= 4 * 32 * 2**20 > 5120**2 * 4


def test_product_cost_by_hand():
    flops, nbytes = product_cost("fp8", 16, 8192, 8192)
    assert flops == 2 * 16 * 8192 * 8192
    assert nbytes == (16 * 8192 + 8192 * 8192) * 1 + 16 * 8192 * 2  # fp8 in, bf16 out
    assert product_cost("int8", 32, 64, 64)[1] == (32 * 64 + 64 * 64) + 32 * 64 * 4


def test_timing_calls_enough_per_sample_and_keeps_the_best():
    now = [0.0]
    durations = iter([0.004] * 2 + [0.004, 0.005, 0.004] * 1 + [0.006] * 3 + [0.004] * 3)

    def fn() -> None:
        now[0] += next(durations)

    t = time_it(fn, lambda: None, repeats=3, min_sample_s=0.01, clock=lambda: now[0])
    # warm-up, one timed call (4 ms), then 3 calls per sample (ceil(10 / 4))
    assert t.times_s == pytest.approx([0.013 / 3, 0.006, 0.004])
    assert t.best_s == pytest.approx(0.004) and t.median_s == pytest.approx(0.013 / 3)


# -- the PyTorch backend's rules (no GPU needed) -------------------------------------------


def test_precisions_per_device():
    hopper, _ = runnable("cuda", (9, 0), scaled_mm=True, int_mm=True)
    assert hopper == ["fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
    ampere, skipped = runnable("cuda", (8, 0), scaled_mm=True, int_mm=True)
    assert "fp8" not in ampere and "tf32" in ampere and any(s.what == "fp8 matmul" for s in skipped)
    assert runnable("cuda", (7, 5), scaled_mm=True, int_mm=True)[0] == ["fp32", "bf16", "fp16", "int8"]
    mps, skipped = runnable("mps", None, scaled_mm=True, int_mm=True)
    assert mps == ["fp32", "bf16", "fp16"] and {"tf32 matmul", "fp8 matmul", "int8 matmul"} <= {s.what for s in skipped}
    assert runnable("rocm", None, scaled_mm=True, int_mm=True)[0] == ["fp32", "bf16", "fp16", "fp8"]
    assert runnable("cpu", None, scaled_mm=False, int_mm=False)[0] == ["fp32"]


def test_shapes_the_fp8_and_int8_kernels_refuse():
    assert shape_refusal("fp8", 1, 8192, 8192) and shape_refusal("fp8", 8, 8192, 8192)
    assert shape_refusal("fp8", 16, 8192, 8192) is None
    assert shape_refusal("int8", 16, 8192, 8192) and shape_refusal("int8", 32, 8192, 8192) is None
    assert shape_refusal("bf16", 1, 8192, 8192) is None


def test_device_choice():
    def fake(gpu: bool, hip: str | None, mps: bool) -> SimpleNamespace:
        return SimpleNamespace(
            cuda=SimpleNamespace(is_available=lambda: gpu),
            version=SimpleNamespace(hip=hip),
            backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)),
        )

    assert pick_device("auto", fake(True, None, False)) == "cuda"
    assert pick_device("auto", fake(True, "6.2", False)) == "rocm"
    assert pick_device("auto", fake(False, None, True)) == "mps"
    assert pick_device("auto", fake(False, None, False)) == "cpu"
    with pytest.raises(RuntimeError, match="no cuda device"):
        pick_device("cuda", fake(False, None, True))


# -- into the store and onto the roofline ---------------------------------------------------


def _doc(bandwidth: float, peaks: dict[str, float], name: str = "NVIDIA H100 80GB HBM3") -> ProbeDocument:
    return probe_document(name, bandwidth, peaks)


def test_a_probe_of_an_h100_halves_its_ceilings_when_it_measured_half(tmp_path):
    store = get_store(tmp_path / "s.duckdb")
    cat = load_catalogue(store)
    acc = cat.gpu("h100-sxm")
    doc = _doc(acc.bandwidth_bytes_per_s / 2, {"bf16": acc.peak_bf16 / 2})
    done = import_probe(store, doc.to_json().encode(), "h100.json")
    assert (done.accelerator_id, done.created) == ("h100-sxm", False)  # matched by the name nvidia-smi prints
    cat = load_catalogue(store)
    assert cat.gpu("h100-sxm").bandwidth_bytes_per_s == acc.bandwidth_bytes_per_s  # the datasheet is kept
    assert measured_line(cat, "h100-sxm") == "measured (2026-12-01): 50% of datasheet bandwidth, 50% of bf16 peak"
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=64)
    sheet, measured = ceiling(cat, sc), ceiling(cat.measured(), sc)
    # every term of a step is bytes / B or FLOPs / P: halving both doubles the step
    assert measured.tokens_per_s_total == pytest.approx(sheet.tokens_per_s_total / 2, rel=1e-9)
    view = roofline_view(cat, sc, (), ())
    roofs = view.roofs
    # the probe's timed product sits on the chart where it reached: 2 n^3 FLOPs over 3 n^2 bf16 operands
    assert view.products is not None and view.products["shape"].to_list() == ["square"]
    assert view.products["intensity"][0] == pytest.approx(2 * 8192**3 / (3 * 8192**2 * 2))
    assert view.products["attainable_flops"][0] == pytest.approx(acc.peak_bf16 / 2)
    assert "products" in roofline_at(cat, view, sc).chart["datasets"]
    # with products too, the chart from the view's backdrop is the plain Altair chart's
    points = operating_points(cat, sc)
    plain = roofline_chart(view.roofs, points, view.paths, title="t", batch=64, products=view.products).to_dict(validate=False)
    assert view.backdrop is not None and view.backdrop.products is not None and view.backdrop.products.height == 1
    assert json.loads(json.dumps(roofline_spec(view.backdrop, points, None, title="t", batch=64))) == json.loads(json.dumps(plain))
    assert set(roofs["roof"]) == {"datasheet", "measured"}
    ridge = roofs.filter((roofs["roof"] == "measured") & (roofs["point"] == "ridge"))
    assert ridge["bandwidth_bytes_per_s"][0] == pytest.approx(acc.bandwidth_bytes_per_s / 2)
    with pytest.raises(ProbeFileError, match="already imported"):
        import_probe(store, doc.to_json().encode(), "again.json")
    store.close()


def test_this_machine_becomes_a_custom_accelerator_through_the_cli(tmp_path, capsys, small_probe):
    db, out = tmp_path / "s.duckdb", tmp_path / "probe.json"
    assert cli_main(["probe", "--device", "cpu", "--quick", "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["import-probe", str(out), "--db", str(db), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["created_accelerator"] and got["accelerator"].endswith("-probed")
    store = get_store(db)
    acc = load_catalogue(store).gpu(got["accelerator"])
    doc = parse_probe(out.read_bytes())
    assert acc.bandwidth_bytes_per_s == pytest.approx(doc.summary.bandwidth_bytes_per_s)
    assert acc.peak_fp32 == pytest.approx(doc.summary.peak_flops["fp32"]) and acc.peak_bf16 is None
    # and the roofline of a scenario on it computes (bf16 weights fall back to the fp32 roof)
    assert ceiling(load_catalogue(store), Scenario(gpu=acc.id, model="llama-3.1-8b")).tokens_per_s_total > 0
    store.close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"schema": "something-else"}', "not a probe document"),
        (b'{"schema": "roofline-explorer/probe", "version": 2}', "version 2"),
        (b'{"schema": "roofline-explorer/probe", "version": 1, "created_at": "x"}', "field device"),
    ],
)
def test_a_bad_probe_file_is_named_and_nothing_is_written(tmp_path, text, message):
    store = get_store(tmp_path / "s.duckdb")
    with pytest.raises(ProbeFileError, match=message):
        import_probe(store, text, "bad.json")
    assert store.query("probe_profiles").is_empty() and not load_catalogue(store).gpus["custom"].any()
    store.close()


def test_a_summary_that_disagrees_with_its_runs_is_refused():
    doc = json.loads(_doc(3e12, {"bf16": 8e14}).to_json())
    doc["summary"]["bandwidth_bytes_per_s"] = 4e12
    with pytest.raises(ProbeFileError, match="summary"):
        parse_probe(json.dumps(doc).encode())


def test_probe_says_what_it_cannot_measure_without_pytorch(capsys, monkeypatch):
    monkeypatch.setattr(probe_cli, "available", lambda: False)  # as on a machine without PyTorch (CI)
    assert cli_main(["probe", "--device", "cuda"]) == 2
    assert "PyTorch is not installed" in capsys.readouterr().err


def test_readme_shows_the_two_command_demo():
    readme = (ROOT / "README.md").read_text()
    assert "python -m core.probe --device cpu --out out/probe.json" in readme
    assert "python -m core.cli import-probe out/probe.json" in readme


def test_a_kernel_the_device_refuses_is_recorded_not_fatal():
    class Refusing(SmallNumpyBackend):
        def product(self, precision, m, n, k):  # type: ignore[no-untyped-def]
            if m == 1:
                return lambda: (_ for _ in ()).throw(RuntimeError("no kernel for m=1"))
            if m == 16:
                raise RuntimeError("no operands for m=16")
            return super().product(precision, m, n, k)

    doc = run_probe(Refusing(), quick=True)
    assert any(s.why.startswith("the kernel failed: no kernel for m=1") for s in doc.skipped)
    assert any(s.why.startswith("the kernel failed: no operands for m=16") for s in doc.skipped)
    assert [r.m for r in doc.matmul if r.shape == "decode"] == [64]


def test_python_m_core_probe_out_into_a_missing_folder_creates_it(tmp_path, capsys, small_probe):
    out = tmp_path / "new" / "deeper" / "probe.json"
    assert probe_cli.main(["--device", "cpu", "--quick", "--out", str(out)]) == 0
    assert parse_probe(out.read_bytes()).summary.bandwidth_bytes_per_s > 0
    assert f"probe: wrote {out}" in capsys.readouterr().err


def test_python_m_core_probe_out_it_cannot_write_says_so_before_measuring(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(probe_cli, "run_probe", lambda *a, **k: ran.append(1))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert probe_cli.main(["--device", "cpu", "--out", str(blocker / "probe.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out: cannot create the folder {blocker}") and "Traceback" not in err
    assert probe_cli.main(["--device", "cpu", "--out", str(tmp_path)]) == 2
    assert f"{tmp_path} is a folder; give a file name" in capsys.readouterr().err
    assert not ran  # refused before minutes of measuring, not after
