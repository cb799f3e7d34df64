"""Every worked number in the seed articles, reproduced within the seed's rounding.

Seeds: /work/shared/seeds/000_* (roofline chapter, Llama 3.1 8B operating
points), 001_* (H100 NVL ridge, FC intensity at batch 8 in fp8) and 004_*
(Llama-3-70B on H100 SXM: bandwidth ceilings, prefill intensity, L40S vs A100).

The expected values are the seeds' printed figures; where a seed rounds, the
tolerance is the rounding of its last printed digit (stated per test).
"""

from __future__ import annotations

import polars as pl
import pytest

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import ceiling, operation_table
from core.model.roofline import operating_points, ridge_points
from core.model.scenario import Scenario


def _ridge(cat: Catalogue, gpu: str, precision: str) -> float:
    hit = ridge_points(cat.gpus).filter((pl.col("id") == gpu) & (pl.col("precision") == precision))
    assert hit.height == 1, f"no {precision} ridge for {gpu}"
    return float(hit["ridge"][0])


def _point(points: pl.DataFrame, name: str, batch: int) -> dict:
    hit = points.filter((pl.col("point") == name) & (pl.col("batch") == batch))
    assert hit.height == 1, f"no {name!r} point at batch {batch}"
    return hit.row(0, named=True)


# -- ridge points ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "precision", "seed_value", "tol", "hand"),
    [
        # seed 000/004: "989 / 3.35 ~ 295"; 989.4 TFLOP/s / 3.35 TB/s = 295.34
        ("h100-sxm", "bf16", 295, 0.5, 989.4 / 3.35),
        # seed 000: "H100 in FP8 about 590"; 1978.9 / 3.35 = 590.7
        ("h100-sxm", "fp8", 590, 1.0, 1978.9 / 3.35),
        # seed 001: "ridge sits near 214 in BF16"; 835.5 / 3.9 = 214.2
        ("h100-nvl", "bf16", 214, 0.5, 835.5 / 3.9),
        # seed 001: "428 FLOP/byte in FP8"; 1670.5 / 3.9 = 428.3
        ("h100-nvl", "fp8", 428, 0.5, 1670.5 / 3.9),
        # seed 000: "B200 in FP4 about 1,100"; 9000 / 8.0 = 1125 ("about" two significant digits: +-50)
        ("b200", "fp4", 1100, 50.0, 9000 / 8.0),
    ],
)
def test_ridge_points_match_seeds(cat: Catalogue, gpu: str, precision: str, seed_value: float, tol: float, hand: float) -> None:
    """The ridge P/B of each chip the seeds name equals the datasheet division and the seed's rounded figure."""
    ridge = _ridge(cat, gpu, precision)
    assert ridge == pytest.approx(hand, rel=1e-9)
    assert abs(ridge - seed_value) <= tol, f"{gpu} {precision}: ridge {ridge:.1f} vs seed ~{seed_value}"


def test_a100_ridge_is_around_150(cat: Catalogue) -> None:
    """Seed 000: "A100 in BF16 has a ridge around 150"; the datasheet gives 312 / 2.039 = 153 (within 5% of 150)."""
    ridge = _ridge(cat, "a100-80gb-sxm", "bf16")
    assert ridge == pytest.approx(312 / 2.039, rel=1e-9)
    assert ridge == pytest.approx(150, rel=0.05)


def test_h100_nvl_datasheet_figures_of_seed_001(cat: Catalogue) -> None:
    """Seed 001: H100 NVL moves ~3.9 TB/s and does ~836 TFLOPS bf16 and ~1,670 TFLOPS fp8 dense."""
    row = cat.gpu("h100-nvl")
    assert row.bandwidth_bytes_per_s == pytest.approx(3.9e12, rel=1e-9)
    assert row.peak_bf16 is not None and abs(row.peak_bf16 / 1e12 - 836) <= 0.5
    assert row.peak_fp8 is not None and abs(row.peak_fp8 / 1e12 - 1670) <= 1.0


def test_ridge_grows_across_generations_at_best_format(cat: Catalogue) -> None:
    """Seed 000: "the ridge keeps moving right": A100 bf16 < H100 fp8 < B200 fp4."""
    assert _ridge(cat, "a100-80gb-sxm", "bf16") < _ridge(cat, "h100-sxm", "fp8") < _ridge(cat, "b200", "fp4")


# -- decode matmul intensity ~ b (bf16), ~ 2b (fp8) -----------------------------------

BATCHES = [1, 2, 4, 8, 16, 32, 64]


@pytest.mark.parametrize(("weights", "factor"), [("bf16", 1.0), ("fp8", 2.0)])
def test_decode_matmul_intensity_tracks_batch(cat: Catalogue, weights: str, factor: float) -> None:
    """Seed 000: decode matmul I ~ 2 b d^2 / (bytes_per_weight d^2) = b in bf16, 2b in fp8.

    Activation traffic makes the app's value slightly lower; for b <= 64 it is
    within 5% and never above the weights-only figure.
    """
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", weights=weights, kv=weights, context=1000)
    points = operating_points(cat, s, BATCHES)
    for b in BATCHES:
        i = _point(points, "decode matmul", b)["intensity"]
        expected = factor * b
        assert i <= expected * (1 + 1e-12), f"b={b}: {i} above the weights-only {expected}"
        assert i == pytest.approx(expected, rel=0.05), f"b={b}: {i} vs ~{expected}"


def test_decode_matmul_is_compute_bound_only_past_about_300(cat: Catalogue) -> None:
    """Seed 000: on an H100 in bf16 "you need roughly 300 sequences" before decode matmuls are compute-bound."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", context=1000)
    points = operating_points(cat, s, [256, 512])
    assert _point(points, "decode matmul", 256)["bound"] == "memory"
    assert _point(points, "decode matmul", 512)["bound"] == "compute"
    # ridge batch = ceil(ridge x bytes per weight / 2) = ceil(295.3) = 296
    assert _point(points, "decode matmul", 256)["ridge_batch"] == 296
    assert _point(points, "decode matmul", 256)["ridge_batch"] == pytest.approx(300, rel=0.05)


def test_h100_tensor_cores_at_most_11_percent_busy_at_batch_32(cat: Catalogue) -> None:
    """Seed 000: batch 32 in bf16 on an H100 -> I ~ 32, memory-bound, "tensor cores at most about 11% busy" (32/295)."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", context=1000)
    p = _point(operating_points(cat, s, [32]), "decode matmul", 32)
    assert p["bound"] == "memory"
    assert abs(32 / 295.34 - 0.1083) < 1e-4
    # "about 11%": rounds to 11 %, and never above the weights-only 32/295
    assert round(100 * p["share_of_peak"]) == 11
    assert p["share_of_peak"] <= 32 / (989.4 / 3.35) + 1e-12


def test_batch_1_decode_uses_a_third_of_a_percent_of_compute(cat: Catalogue) -> None:
    """Seed 004: batch-1 decode on an H100: 3.35 TB/s x ~1 FLOP/byte = 3.35 TFLOP/s of 989: about 1/3 of 1%."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, context=1000)
    p = _point(operating_points(cat, s, [1]), "decode matmul", 1)
    assert 1.0 * 0.95 <= p["intensity"] <= 1.0
    assert p["share_of_peak"] == pytest.approx(3.35 / 989.4, rel=0.05)


# -- decode attention intensity ~ 2g / bytes, independent of batch --------------------


def test_decode_attention_intensity_is_about_4_and_batch_independent(cat: Catalogue) -> None:
    """Seed 000: Llama 3.1 8B (32 q heads / 8 KV heads, g = 4) in bf16: I_attn ~ 2g/2 = 4 at batch 1 and batch 512 alike."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", context=4096)
    points = operating_points(cat, s, [1, 512])
    i1 = _point(points, "decode attention", 1)["intensity"]
    i512 = _point(points, "decode attention", 512)["intensity"]
    g = 32 / 8
    assert i1 == pytest.approx(2 * g / 2, rel=0.05)
    assert i512 == pytest.approx(i1, rel=1e-9)
    assert _point(points, "decode attention", 512)["bound"] == "memory"


# -- prefill -------------------------------------------------------------------


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.1-70b"])
def test_prefill_matmul_flops_per_weight_byte_equals_prompt_tokens(cat: Catalogue, model: str) -> None:
    """Seed 004: prefill I ~ (2 FLOPs x params x 2048 tokens) / (2 bytes x params) = 2048 for a 2048-token prompt.

    Measured on the weight matmuls of the prefill step (all kind == matmul rows:
    every weight is applied to all 2048 tokens). The op table's own intensity
    also counts activation traffic, so it is lower (~1100) but still far past
    the H100 bf16 ridge (295): prefill is compute-bound even for one request.
    """
    s = Scenario(gpu="h100-sxm", model=model, num_gpus=2 if model.endswith("70b") else 1, prompt=2048)
    ops = operation_table(cat, s, phase="prefill").filter(pl.col("kind") == "matmul")
    ratio = ops["flops"].sum() / ops["weight_bytes"].sum()
    assert ratio == pytest.approx(2048, rel=1e-12)
    intensity = ops["flops"].sum() / ops["bytes"].sum()
    assert 295.34 < intensity < 2048
    assert set(ops["bound"].to_list()) == {"compute"}
    point = _point(operating_points(cat, s, [1]), "prefill matmul", 1)
    assert point["bound"] == "compute"
    assert point["intensity"] > 295.34


def test_prefill_flops_of_70b_are_about_287_tflops(cat: Catalogue) -> None:
    """Seed 004: a 2048-token prefill of a ~70B model is 2 x 70e9 x 2048 ~ 287 TFLOPs of matmul work.

    The seed rounds the parameter count to 70e9 (the matmul weights of Llama 3.1
    70B are 68.4e9: 70.55e9 minus the two 1.05e9 embedding matrices), so the
    tolerance is 5%.
    """
    s = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, prompt=2048)
    ops = operation_table(cat, s, phase="prefill").filter(pl.col("kind") == "matmul")
    assert abs(2 * 70e9 * 2048 / 287e12 - 1) < 0.002
    assert ops["flops"].sum() == pytest.approx(287e12, rel=0.05)


# -- bandwidth ceilings: Llama-3-70B bf16 on 2 x H100 SXM --------------------------


def test_70b_on_two_h100_batch_1_ceiling_is_about_48(cat: Catalogue) -> None:
    """Seed 004: 140 GB over 2 x 3.35 TB/s -> ~21 ms per step, ~48 tok/s at batch 1 (weights only, within 2%).

    With KV reads included the ceiling is lower, and the app reports both.
    """
    c = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=1, context=4096))
    assert c["bandwidth_ceiling_tokens_per_s"] == pytest.approx(48, rel=0.02)
    assert c["bandwidth_ceiling_tokens_per_s_total"] == pytest.approx(48, rel=0.02)
    assert c["bandwidth_ceiling_with_kv_tokens_per_s"] < c["bandwidth_ceiling_tokens_per_s"]
    # "a decode step costs about 21 ms": 1 / ceiling within the seed's 0.5 ms rounding
    assert abs(1e3 / c["bandwidth_ceiling_tokens_per_s"] - 21) <= 0.5
    # the full roofline (KV, activations, communication) is below the bandwidth-only bound
    assert c["tokens_per_s_per_user"] < c["bandwidth_ceiling_tokens_per_s"]


def test_70b_on_two_h100_batch_32_ceiling_is_about_1530(cat: Catalogue) -> None:
    """Seed 004: batch 32 reads the same weights once for 32 tokens: ~1,530 tok/s (weights only, within 2%); KV lowers it."""
    c = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=4096))
    assert c["bandwidth_ceiling_tokens_per_s_total"] == pytest.approx(1530, rel=0.02)
    assert c["bandwidth_ceiling_with_kv_tokens_per_s_total"] < c["bandwidth_ceiling_tokens_per_s_total"]
    # per user the weights-only ceiling does not move with batch ("each user still sees a token every ~21 ms")
    c1 = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=1, context=4096))
    assert c["bandwidth_ceiling_tokens_per_s"] == pytest.approx(c1["bandwidth_ceiling_tokens_per_s"], rel=1e-3)


def test_70b_bf16_weights_are_about_140_gb(cat: Catalogue) -> None:
    """Seed 004: "roughly 70 billion parameters, held in bf16. That is about 140 GB" (70.55e9 x 2 = 141 GB, within 1%)."""
    c = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=1))
    assert c["weight_memory_bytes"] == pytest.approx(140e9, rel=0.01)
    # "140 GB does not fit on one 80 GB H100": it needs at least 2
    assert c["min_gpus"] >= 2


# -- L40S vs A100 ----------------------------------------------------------------


def test_l40s_vs_a100_batch_1_decode(cat: Catalogue) -> None:
    """Seed 004: L40S has more bf16 FLOP/s than an A100 80GB but 42% of its bandwidth; batch-1 decode is ~2.4x faster on the A100."""
    l40s, a100 = cat.gpu("l40s"), cat.gpu("a100-80gb-sxm")
    assert l40s.peak_bf16 is not None and a100.peak_bf16 is not None
    assert l40s.peak_bf16 > a100.peak_bf16
    assert round(100 * l40s.bandwidth_bytes_per_s / a100.bandwidth_bytes_per_s) == 42
    fast = ceiling(cat, Scenario(gpu="a100-80gb-sxm", model="llama-3.1-8b", batch=1))
    slow = ceiling(cat, Scenario(gpu="l40s", model="llama-3.1-8b", batch=1))
    assert fast["fits"] and slow["fits"]
    ratio = fast["tokens_per_s_per_user"] / slow["tokens_per_s_per_user"]
    assert 2.3 <= ratio <= 2.45, ratio


# -- seed 001: FC intensity at batch 8 in fp8 --------------------------------------------


def test_fc_intensity_batch_8_fp8_is_16_and_4_percent_of_ridge(cat: Catalogue) -> None:
    """Seed 001: batch 8 with fp8 weights: 2 x 8 / 1 = 16 FLOP/byte, ~4% of the H100 NVL fp8 ridge (~428); ridge at ~batch 214."""
    s = Scenario(gpu="h100-nvl", model="llama-3.1-8b", weights="fp8", kv="fp8", context=1000)
    p = _point(operating_points(cat, s, [8]), "decode matmul", 8)
    assert p["compute_used"] == "fp8"
    assert p["intensity"] == pytest.approx(2 * 8 / 1, rel=0.02)
    assert p["ridge"] == pytest.approx(428, abs=0.5)
    assert round(100 * p["intensity"] / p["ridge"]) == 4
    assert p["bound"] == "memory"
    # "reaching the ridge would need ~batch 214": ridge x 1 byte / 2 = 214.2 -> 215 sequences
    assert abs(p["ridge_batch"] - 214) <= 1
