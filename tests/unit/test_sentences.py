"""Sentences that agree with their numbers: what would fit, the prefill matmul counted two ways, the free lunch's end,
the three moves, and seed 004's worked example on the command line.

Hand figures from the model shapes (config.json) and the datasheets: Llama 3.1 70B holds 70.55e9 parameters (2 bytes
each in bf16), 80 layers of 8 KV heads x 128 dims: 2 x 8 x 128 x 2 B x 80 = 327,680 B of KV per token; Llama 3.1 8B:
32 layers, hidden 4,096, 8 KV heads (1,024 KV dims), MLP 14,336 (gated), vocabulary 128,256, 131,072 B of KV per token;
H100 SXM: 80 GB, 3.35 TB/s, 989.4 TFLOP/s bf16; Intel Gaudi 3: 3.7 TB/s, 1,678 TFLOP/s bf16.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest

from core.model.ceilings import ceiling, evaluate
from core.model.roofline import operating_points
from core.model.scenario import Scenario
from core.plan.planning import MOVES, more_bandwidth_accelerator, more_compute_accelerator, what_ifs, would_fit
from core.present.figures import calculator_view
from core.present.tables import what_if_display
from core.present.tour import (
    BARELY,
    SEED_004_COMMAND,
    SEED_004_EXAMPLE,
    batching_facts,
    batching_sentence,
    batching_table,
    kv_matches_weights_batch,
    moves_sentence,
    moves_table,
    prefill_matmuls,
    prefill_sentence,
)
from tests.helpers import ROOT, roofline

KV_70B = 2 * 8 * 128 * 2 * 80
KV_8B = 2 * 8 * 128 * 2 * 32
SEED_AT_DEFAULT = SEED_004_EXAMPLE.at(context=4096)  # the seed's scenario at the default context: does not fit


def _fits(cat, sc: Scenario) -> bool:
    return bool(ceiling(cat, sc).fits)


# -- what would fit ---------------------------------------------------------------


def test_would_fit_for_the_seed_example_at_the_default_context_by_hand(cat):
    """70B on 2 x H100 at batch 32 and 4,096 tokens: usable memory 0.9 x 160 GB = 144 GB, weights 141.1 GB.

    Largest batch: (144e9 - W) / (327,680 B x 4,096) = 2.15 -> 2; fewest GPUs: 0.9 x 80e9 x n >= W + 32 x 4,096 x
    327,680 B (184 GB) -> n = 3; longest context: (144e9 - W) / (32 x 327,680 B) = 275.9 -> 275 tokens.
    """
    params = cat.models.filter(pl.col("id") == "llama-3.1-70b")["total_params"][0]
    w = 2 * params
    fit = would_fit(cat, SEED_AT_DEFAULT)
    assert fit is not None
    assert fit.max_batch == math.floor((144e9 - w) / (KV_70B * 4096)) == 2
    assert fit.min_gpus == math.ceil((w + 32 * 4096 * KV_70B) / (0.9 * 80e9)) == 3
    assert fit.max_context == math.floor((144e9 - w) / (32 * KV_70B)) == 275
    text = fit.sentence()
    assert "a batch of at most 2" in text and "3 GPUs or more" in text and "a context of at most 275 tokens" in text
    assert "batch 32, 4,096 tokens of context, 2 GPUs, 10% memory reserve" in text


@pytest.mark.parametrize(
    "sc",
    [
        SEED_AT_DEFAULT,
        Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=512, context=4096),
        Scenario(gpu="mi300x", model="llama-3.1-70b", batch=64, context=32768, kv="fp8"),
        Scenario(gpu="l40s", model="llama-3.1-8b", batch=64),
    ],
)
def test_each_suggestion_fits_and_one_step_beyond_does_not(cat, sc):
    """The largest batch, the fewest GPUs and the longest context are each the edge: they fit, one more (or fewer) does not."""
    assert not _fits(cat, sc)
    fit = would_fit(cat, sc)
    assert fit is not None
    if fit.max_batch is not None:
        assert _fits(cat, sc.at(batch=fit.max_batch))
        assert not _fits(cat, sc.at(batch=fit.max_batch + 1))
    if fit.min_gpus is not None:
        assert _fits(cat, sc.at(num_gpus=fit.min_gpus))
        if fit.min_gpus > 1:
            assert not _fits(cat, sc.at(num_gpus=fit.min_gpus - 1))
    assert fit.max_context is not None
    assert _fits(cat, sc.at(context=fit.max_context))
    assert not _fits(cat, sc.at(context=fit.max_context + 1))


def test_would_fit_when_the_weights_alone_overflow(cat):
    """405B in bf16 (811 GB of weights) on one 24 GB L4: no batch, no context; the fewest GPUs is the edge."""
    sc = Scenario(gpu="l4", model="llama-3.1-405b")
    fit = would_fit(cat, sc)
    assert fit is not None and fit.max_batch is None and fit.max_context is None
    assert fit.min_gpus is not None
    assert _fits(cat, sc.at(num_gpus=fit.min_gpus)) and not _fits(cat, sc.at(num_gpus=fit.min_gpus - 1))
    assert "no context: the weights alone exceed the usable memory" in fit.sentence()


def test_nothing_to_suggest_when_it_fits(cat):
    assert would_fit(cat, SEED_004_EXAMPLE) is None
    assert calculator_view(cat, SEED_004_EXAMPLE).would_fit is None
    assert calculator_view(cat, SEED_AT_DEFAULT).would_fit == would_fit(cat, SEED_AT_DEFAULT).sentence()  # type: ignore[union-attr]


# -- the prefill matmul, counted two ways -------------------------------------------


def test_prefill_matmuls_of_8b_by_hand(cat):
    """2,048 prompt tokens through Llama 3.1 8B's 32 layers: P = 32 x (2 x 4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336)
    layer weights; FLOPs 2 x 2,048 x P over 2P bytes = 2,048 (the seed's count). Activations in and out of each matmul,
    2 bytes per element per token; the lm_head (128,256 x 4,096) runs for the last token only."""
    d, kv, i, v, t, layers = 4096, 1024, 14336, 128256, 2048, 32
    p = layers * (2 * d * d + 2 * d * kv + 3 * d * i)
    acts = layers * t * 2 * ((d + d) + 2 * (d + kv) + (d + d) + (d + 2 * i) + (i + d))
    pm = prefill_matmuls(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", prompt=t))
    assert pm.layer_weight_bytes == pytest.approx(2 * p, rel=1e-9)
    assert pm.layer_flops == pytest.approx(2 * t * p, rel=1e-9)
    assert pm.weights_only == pytest.approx(2048, rel=1e-9)
    assert pm.seed_rule == 2048
    lm_flops, lm_bytes = 2 * v * d, 2 * v * d
    assert pm.lm_head_weight_bytes == pytest.approx(lm_bytes, rel=1e-9)
    assert pm.act_bytes == pytest.approx(acts + 2 * (d + v), rel=1e-9)
    hand = (2 * t * p + lm_flops) / (2 * p + lm_bytes + acts + 2 * (d + v))
    assert pm.intensity == pytest.approx(hand, rel=1e-9)
    assert round(hand) == 1134
    # the roofline's prefill matmul point is the same figure
    point = operating_points(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b")).filter(pl.col("point") == "prefill matmul")
    assert point["intensity"][0] == pytest.approx(pm.intensity, rel=1e-9)
    text = prefill_sentence(pm)
    assert "1,134 FLOP/byte counting weights and activations" in text
    assert "2,048 counting weights only, as the seed does" in text
    assert "2 FLOPs per token × 2,048 tokens ÷ 2 bytes per weight" in text


def test_prefill_weights_only_follows_the_bytes_per_weight(cat):
    """fp8 weights (1 byte): the seed's count doubles to 2 x 1,024 / 1 = 2,048 for a 1,024-token prompt."""
    pm = prefill_matmuls(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", weights="fp8", prompt=1024))
    assert pm.weights_only == pytest.approx(2048, rel=1e-6)
    assert pm.intensity < pm.weights_only


# -- the free lunch ------------------------------------------------------------------


def test_kv_reads_match_weight_reads_at_a_batch_of_28_for_8b_at_4096(cat):
    """Weights read per decode step: (8.03e9 - 128,256 x 4,096 embedding rows + one row) x 2 B = 15.0 GB; KV read per
    sequence: 131,072 B x 4,097 tokens = 0.537 GB; 15.0 / 0.537 = 27.95 -> batch 28."""
    params = cat.models.filter(pl.col("id") == "llama-3.1-8b")["total_params"][0]
    weights = (params - 128256 * 4096 + 4096) * 2
    ratio = weights / (KV_8B * 4097)
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", context=4096)
    assert kv_matches_weights_batch(cat, sc) == math.ceil(ratio) == 28
    assert kv_matches_weights_batch(cat, sc.at(context=0)) is None
    # a 70B at 1,024 tokens: 139 GB of weights / (327,680 B x 1,025) = 414.x
    assert kv_matches_weights_batch(cat, Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, context=1024)) in (414, 415)


def _quoted(text: str) -> dict[str, float | str]:
    m = re.search(
        r"From batch 1 to ([\d,]+) the step time (barely moves:|grows) ([\d.]+)× \(([\d.,]+) ms → ([\d.,]+) ms\); "
        r"with the weights alone \(no KV cache\) it would grow ([\d.]+)×",
        text,
    )
    assert m, text
    return {
        "batch": float(m[1].replace(",", "")),
        "verb": m[2],
        "growth": float(m[3]),
        "ms_1": float(m[4].replace(",", "")),
        "ms_b": float(m[5].replace(",", "")),
        "weights_growth": float(m[6]),
    }


@pytest.mark.parametrize(
    ("sc", "verb"),
    [
        (Scenario(gpu="h100-sxm", model="llama-3.1-8b"), "grows"),  # 4.64 -> 14.9 ms: KV reads at 4,096 tokens dominate
        (Scenario(gpu="h100-sxm", model="llama-3.1-8b", context=256), "barely moves:"),
        (Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=4, context=32768), "grows"),
    ],
)
def test_batching_sentence_quotes_its_table(cat, sc, verb):
    """The ratios and times the sentence quotes are the table's batch-1 and batch-64 rows, and the verb follows the ratio."""
    table = batching_table(cat, sc)
    r = ceiling(cat, sc)
    ridge = operating_points(cat, sc.at(batch=1)).filter(pl.col("point") == "decode matmul")["ridge_batch"][0]
    text = batching_sentence(batching_facts(cat, sc, table, ridge), sc.context, r.max_batch)
    q = _quoted(text)
    one, b64 = table.filter(pl.col("batch") == 1).row(0, named=True), table.filter(pl.col("batch") == 64).row(0, named=True)
    growth = b64["step time (ms)"] / one["step time (ms)"]
    assert q["batch"] == 64
    assert q["verb"] == verb == ("barely moves:" if growth < BARELY else "grows")
    assert q["growth"] == round(growth, 1)
    assert q["ms_1"] == pytest.approx(one["step time (ms)"], rel=0.005)
    assert q["ms_b"] == pytest.approx(b64["step time (ms)"], rel=0.005)
    alone = b64["step time, weights alone (ms)"] / one["step time, weights alone (ms)"]
    assert q["weights_growth"] == round(alone, 1)
    # the weights-only column is the same batch at context 0
    assert one["step time, weights alone (ms)"] == pytest.approx(ceiling(cat, sc.at(batch=1, context=0)).step_time_s * 1e3, rel=1e-9)


# -- the three moves -----------------------------------------------------------------


def test_more_flops_at_about_the_same_bandwidth(cat):
    """From an H100 SXM, Gaudi 3 has 1,678 / 989.4 = 1.70x the bf16 peak at 3.7 / 3.35 = 1.10x the bandwidth."""
    assert more_compute_accelerator(cat, "h100-sxm", "bf16") == "gaudi3"
    assert more_bandwidth_accelerator(cat, "h100-sxm") == "h200-sxm"
    for gpu in cat.gpus["id"].to_list():
        pick = more_compute_accelerator(cat, gpu, "bf16")
        if pick is None:
            continue
        me, it = cat.gpu(gpu), cat.gpu(pick)
        assert it.peak_bf16 >= 1.5 * me.peak_bf16
        assert abs(it.bandwidth_bytes_per_s / me.bandwidth_bytes_per_s - 1) <= 0.15


def test_the_three_moves_are_the_seeds_with_names_not_ids(cat):
    """Every lever belongs to one of seed 004's three moves; all three appear; accelerators are named, never by id."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    table = what_ifs(cat, sc)
    assert set(MOVES) == {"lift the diagonal", "slide right", "raise the ceiling"}
    assert set(table["move"].to_list()) == {"as is", *MOVES}
    rows = {r["lever"]: r for r in table.iter_rows(named=True)}
    assert rows["more bandwidth"]["move"] == "lift the diagonal"
    assert "NVIDIA H200 SXM 141GB" in rows["more bandwidth"]["change"]
    assert rows["more FLOP/s"]["move"] == "raise the ceiling"
    assert "Intel Gaudi 3" in rows["more FLOP/s"]["change"] and "1.70× the bf16 peak" in rows["more FLOP/s"]["change"]
    # memory-bound decode: the FLOPs help only as much as Gaudi 3's 1.10x bandwidth, less its activations
    assert rows["more FLOP/s"]["change_tokens_per_s_per_user"] == pytest.approx(3.7 / 3.35, rel=0.01)
    for move in ("int4 weights", "larger batch", "speculative decoding", "fp8 KV cache"):
        assert rows[move]["move"] == "slide right"
    ids = set(cat.gpus["id"].to_list())
    for change in table["change"].to_list():
        assert not any(re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", change) for i in ids), change


@pytest.mark.parametrize(
    "sc",
    [Scenario(gpu="h100-sxm", model="llama-3.1-8b"), SEED_AT_DEFAULT, Scenario(gpu="mi300x", model="qwen3-32b", batch=8)],
)
def test_tour_and_calculator_show_one_moves_table(cat, sc):
    """The tour's moves table is the calculator's what-if table for the same scenario; its sentence quotes that table."""
    tour = moves_table(cat, sc)
    assert tour.equals(calculator_view(cat, sc).what_ifs)
    assert tour.equals(what_if_display(what_ifs(cat, sc)))
    text = moves_sentence(tour)
    rows = {r["lever"]: r for r in tour.iter_rows(named=True)}
    for lever, column in (("int4 weights", "× per user"), ("more bandwidth", "× per user"), ("more FLOP/s", "× per user")):
        if rows[lever][column] is not None:
            assert f"{rows[lever][column]:.2f}× the tokens/s per user" in text


# -- seed 004's worked example on the command line -------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], db: Path, line: str) -> dict:
    """A command line as printed (`roofline ...`), run in this process on the store `db`: its JSON."""
    args = line.split()[1:]  # drop "roofline"
    return roofline(capsys, *args, "--db", str(db)).json()  # type: ignore[no-any-return]


def test_the_readme_ceiling_command_lands_on_the_seeds_numbers(tmp_path, capsys):
    """Seed 004: 70B on 2 x H100 SXM at batch 32 -> "roughly 1,530" tokens/s (32 x 48, weights only). The README's
    command fits, its weights-only ceiling is within 1% of 1,530 and the full step (KV reads, all-reduces) within 10%."""
    readme = (ROOT / "README.md").read_text()
    lines = [ln.strip() for ln in readme.splitlines() if ln.strip().startswith("roofline ceiling ")]
    assert len(lines) == 1
    assert lines[0].startswith(SEED_004_COMMAND.removesuffix(" --json"))
    out = _cli(capsys, tmp_path / "r.duckdb", lines[0])
    assert out["fits"] is True and out["would_fit"] is None
    assert out["bandwidth_ceiling_tokens_per_s_total"] == pytest.approx(1530, rel=0.01)
    assert out["tokens_per_s_total"] == pytest.approx(1530, rel=0.10)
    assert out["tokens_per_s_total"] < out["bandwidth_ceiling_tokens_per_s_total"]
    assert "ops" in out
    seed = _cli(capsys, tmp_path / "r.duckdb", SEED_004_COMMAND)
    assert seed["tokens_per_s_total"] == pytest.approx(out["tokens_per_s_total"], rel=1e-12)


def test_the_cli_says_what_would_fit_and_keeps_every_field(cat, tmp_path, capsys):
    """At the default 4,096 tokens the seed's scenario does not fit: `would_fit` names batch 2, 3 GPUs, 275 tokens."""
    out = _cli(capsys, tmp_path / "w.duckdb", SEED_004_COMMAND.replace("--context 256", "--context 4096"))
    assert out["fits"] is False and out["tokens_per_s_total"] is None
    assert set(ceiling(cat, SEED_AT_DEFAULT).record()) <= set(out)
    fit = out["would_fit"]
    assert (fit["max_batch"], fit["min_gpus"], fit["max_context"]) == (2, 3, 275)
    assert fit["sentence"] == would_fit(cat, SEED_AT_DEFAULT).sentence()  # type: ignore[union-attr]


def test_one_evaluation_agrees_with_the_bisection(cat):
    """The longest context at batch 32 is where KV memory meets what the weights leave: a frame over contexts agrees."""
    contexts = list(range(250, 300))
    fits = evaluate(cat, [SEED_AT_DEFAULT.at(context=c) for c in contexts], columns=["fits"])["fits"].to_list()
    assert max(c for c, f in zip(contexts, fits, strict=True) if f) == would_fit(cat, SEED_AT_DEFAULT).max_context  # type: ignore[union-attr]
