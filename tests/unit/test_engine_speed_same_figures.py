"""One scenario through `ceiling()` (the path tuned for one call) gives the figures of the same scenario evaluated in a
frame (`evaluate()`), exactly, and its step times are the per-operation table's times summed (the oracle) (issue 30)."""

from __future__ import annotations

import itertools
import math

import pytest

from core.evidence import predictor as pr
from core.model.ceilings import ceiling, evaluate, operation_table
from core.model.result import FIGURES, ceiling_of_row
from core.model.scenario import Scenario

#: Accelerators of four vendors (NVIDIA, AMD, Apple; an L4 without the fp8 of Hopper's successors is still fp8-capable,
#: a V100 has neither fp8 nor int4: the fallbacks), models dense, MoE, MLA and windowed.
GPUS = ("h100-sxm", "mi300x", "m4-max", "b200", "v100-sxm")
MODELS = ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v2-lite", "gemma-2-9b", "qwen3-30b-a3b")
WEIGHTS = ("bf16", "fp8", "int4", "q4_k_m")
GPU_COUNTS = (1, 2, 8)
BATCHES = (1, 7, 32, 1024)


def _grid() -> list[Scenario]:
    """A strided sample of the product (every axis value appears with several others), plus the edge cases."""
    product = list(itertools.product(GPUS, MODELS, WEIGHTS, GPU_COUNTS, BATCHES))
    out = [
        Scenario(gpu=g, model=m, weights=w, kv="fp8" if b > 100 else "bf16", num_gpus=n, batch=b, context=1024 + 997 * i % 9000)
        for i, (g, m, w, n, b) in enumerate(product[::7])
    ]
    return [
        *out,
        # does not fit: 405B in bf16 on one accelerator, and a huge batch at a long context
        Scenario(gpu="h100-sxm", model="llama-3.1-405b", batch=4),
        Scenario(gpu="mi300x", model="llama-3.1-70b", num_gpus=2, batch=1024, context=131072),
        # speculative decoding (a draft model), and a draft length without one (ignored, flagged)
        Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=4, batch=8, spec_draft_len=4, spec_draft_model="llama-3.2-1b"),
        Scenario(
            gpu="m4-max", model="llama-3.1-8b", weights="int4", spec_draft_len=3, spec_acceptance=0.5, spec_draft_model="llama-3.2-1b"
        ),
        Scenario(gpu="b200", model="llama-3.1-8b", spec_draft_len=2),
        # unfused attention, a prefix cached before the prompt, the file's bits per weight, an explicit compute format,
        # a price, an overhead, efficiencies, wider than the scale-up domain, no KV to hold
        Scenario(gpu="mi300x", model="gemma-2-9b", flash_attention=False, prompt=4096, depth=8192, overhead_s=2e-3),
        Scenario(gpu="m4-max", model="qwen3-8b", weights="q4_k_m", weight_bits=4.85, usd_per_gpu_hour=1.5),
        Scenario(gpu="h100-sxm", model="deepseek-v3", weights="fp8", compute="bf16", num_gpus=16, eff_bandwidth=0.8, eff_compute=0.6),
        Scenario(gpu="l4", model="llama-3.2-1b", context=0, batch=3),
    ]


GRID = _grid()


def _same(a: object, b: object) -> bool:
    """Equal, NaN included (a figure may be NaN where a frame holds null: both read as None, but be safe)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.mark.parametrize("with_predictor", [False, True])
def test_ceiling_gives_the_figures_of_a_frame_evaluation(cat, with_predictor):
    """ceiling() of each scenario is its row of evaluate() over the whole grid (the frame path, > 64 rows) and of a few
    rows (the row-by-row path), figure by figure, exactly."""
    predictor = pr.shipped(cat).predictor if with_predictor else None
    frames = [evaluate(cat, GRID, predictor=predictor), evaluate(cat, GRID[-20:], predictor=predictor)]
    assert frames[0].height > 64 and any(not c.fits for c in (ceiling(cat, s) for s in GRID))
    rows = [ceiling_of_row(r) for r in frames[0].iter_rows(named=True)]
    few = [ceiling_of_row(r) for r in frames[1].iter_rows(named=True)]
    for i, sc in enumerate(GRID):
        alone = ceiling(cat, sc, predictor=predictor)
        framed = [rows[i], *([few[i - len(GRID) + 20]] if i >= len(GRID) - 20 else [])]
        for other in framed:
            assert alone.scenario == other.scenario, sc
            differ = [n for n in FIGURES if not _same(getattr(alone, n), getattr(other, n))]
            assert not differ, (sc, {n: (getattr(alone, n), getattr(other, n)) for n in differ})
        if with_predictor:
            assert alone.predicted_step_time_s is not None or alone.peak_flops is None, sc


@pytest.mark.parametrize("index", range(0, len(GRID), 3))
def test_step_times_are_the_per_operation_table_summed(cat, index):
    """A step's time is its operations' own max(bytes / B, FLOPs / P) summed, plus communication and the overhead; its
    FLOPs and bytes are the table's summed (another path: one row per operation, no sorting by intensity)."""
    sc = GRID[index]
    c = ceiling(cat, sc)
    for phase, step, flops, nbytes in (
        ("decode", c.step_time_s, c.flops, c.bytes),
        ("prefill", c.prefill_step_time_s, c.prefill_flops, c.prefill_bytes),
    ):
        table = operation_table(cat, sc, phase=phase, communication=True)
        ops = table.filter(table["kind"] != "comm")
        if c.peak_flops is None:
            continue  # no compute format: times are by bytes alone (the table's compute times are null)
        assert step == pytest.approx(table["time_s"].sum() + sc.overhead_s, rel=1e-12), (sc, phase)
        assert flops == pytest.approx(ops["flops"].sum(), rel=1e-12), (sc, phase)
        assert nbytes == pytest.approx(ops["bytes"].sum(), rel=1e-12), (sc, phase)
        if phase == "decode":
            assert c.memory_bound_time_s + c.compute_bound_time_s == pytest.approx(ops["time_s"].sum(), rel=1e-12)
