"""Per-operation FLOPs and HBM bytes, derived by hand from config shapes.

The shapes are written out here as numbers copied from data/seed/models/*.json
and the expectations follow the formulas core/model/engine.py documents:

- matmul (and lm_head): FLOPs 2 T params; weight bytes params x bytes/weight;
  activations T (in + out) x act_bytes (lm_head runs on the last token only in
  prefill, T = batch);
- attention: (query, key) pairs per sequence causal, with a window cap;
  FLOPs = batch x pairs x FLOPs per pair (4 heads d for MHA/GQA: QK^T and PV);
  KV read = batch x visible tokens x kv_elems x kv_bytes, write = T x kv_elems
  x kv_bytes; activations T (q in + out) x act_bytes, plus 4 x batch x heads x
  pairs x act_bytes for the score matrix when attention is not fused;
- norms: each of the layer's norms (2; 4 in Gemma 2/3) costs FLOPs 4 T h and
  activations 2 T h (read and write); weights params x bytes;
- embedding: gathers min(T, vocab) rows;
- MoE experts: FLOPs 2 T k params_expert; weight bytes E (1 - (1 - k/E)^T)
  params_expert (distinct experts under uniform routing); activations
  T k (2h + 3 size) x act_bytes.

Everything is per step, over all layers of a row's group, on one GPU.
"""

from __future__ import annotations

import pytest

from core.catalogue.catalogue import Catalogue
from core.catalogue.operations import summary
from core.model.ceilings import ceiling, operation_table
from core.model.scenario import Scenario

H100_BW = 3.35e12  # byte/s, data/seed/accelerators.csv
H100_BF16 = 989.4e12  # FLOP/s dense
H100_FP8 = 1978.9e12
REL = 1e-9


def _rows(table) -> dict[tuple[str, str], dict]:
    return {(r["group"], r["op"]): r for r in table.iter_rows(named=True)}


def _check(actual: dict, expected: dict, label: str) -> None:
    for key in ("flops", "weight_bytes", "act_bytes", "kv_bytes"):
        if key in expected:
            assert actual[key] == pytest.approx(expected[key], rel=REL, abs=1e-6), f"{label}: {key}"
    assert actual["bytes"] == pytest.approx(actual["weight_bytes"] + actual["act_bytes"] + actual["kv_bytes"], rel=REL)


def _dense_gqa_expected(
    *,
    h: int,
    layers: int,
    heads: int,
    kv_heads: int,
    d: int,
    inter: int,
    vocab: int,
    batch: int,
    q: int,
    cached: int,
    prefill: bool,
    w: float,
    kvb: float,
    act: float,
    flash: bool = True,
) -> dict[str, dict]:
    """Hand formulas for a Llama-style block (gated MLP, no biases, 2 RMSNorms per layer)."""
    T = batch * q
    lm_T = batch if prefill else T
    # causal pairs per sequence: token i of q sees cached + i keys
    pairs = sum(cached + i for i in range(1, q + 1))
    kv_elems = 2 * kv_heads * d
    p_q, p_kv, p_o = h * heads * d, h * kv_heads * d, heads * d * h
    p_gu, p_down = 2 * h * inter, inter * h

    def mm(params: int, din: int, dout: int, tokens: int = T, n: int = layers) -> dict:
        return {
            "flops": n * 2 * tokens * params,
            "weight_bytes": n * params * w,
            "act_bytes": n * tokens * (din + dout) * act,
            "kv_bytes": 0.0,
        }

    score_traffic = 0.0 if flash else 4 * batch * heads * pairs * act
    return {
        "embedding (gather)": {"flops": 0.0, "weight_bytes": min(T, vocab) * h * w, "act_bytes": T * h * act, "kv_bytes": 0.0},
        "q_proj": mm(p_q, h, heads * d),
        "k_proj": mm(p_kv, h, kv_heads * d),
        "v_proj": mm(p_kv, h, kv_heads * d),
        "attention": {
            "flops": layers * batch * pairs * 4 * heads * d,
            "weight_bytes": 0.0,
            "act_bytes": layers * (T * (heads * d + heads * d) * act + score_traffic),
            "kv_bytes": layers * (batch * (cached + q) * kv_elems * kvb + T * kv_elems * kvb),
        },
        "o_proj": mm(p_o, heads * d, h),
        # two RMSNorms per layer (input and post-attention), each 4 T h FLOPs and 2 T h activations
        "norms": {
            "flops": layers * 2 * 4 * T * h,
            "weight_bytes": layers * 2 * h * w,
            "act_bytes": layers * 2 * 2 * T * h * act,
            "kv_bytes": 0.0,
        },
        "mlp gate+up": mm(p_gu, h, 2 * inter),
        "mlp down": mm(p_down, inter, h),
        "final norm": {"flops": 4 * T * h, "weight_bytes": h * w, "act_bytes": 2 * T * h * act, "kv_bytes": 0.0},
        "lm_head": mm(vocab * h, h, vocab, tokens=lm_T, n=1),
    }


# -- (a) a small dense model: Llama 3.2 1B ------------------------------------------

# data/seed/models/llama-3.2-1b.json
L1B = dict(h=2048, layers=16, heads=32, kv_heads=8, d=64, inter=8192, vocab=128256)


def test_llama_3_2_1b_parameter_count_by_hand(cat: Catalogue) -> None:
    """Llama 3.2 1B (tied embeddings): embed + 16 x (q,k,v,o, gated MLP, 2 norms) + final norm = 1,235,814,400 exactly."""
    h, n, d, i, v = 2048, 16, 64, 8192, 128256
    per_layer = h * 32 * d + 2 * h * 8 * d + 32 * d * h + 3 * h * i + 2 * h
    total = v * h + n * per_layer + h  # tied: lm_head adds no parameters
    assert total == 1_235_814_400
    s = summary(cat.model("llama-3.2-1b"))
    assert s["total_params"] == total
    assert s["active_params"] == total
    assert s["kv_elems_per_token"] == n * 2 * 8 * d


@pytest.mark.parametrize("flash", [True, False])
def test_llama_3_2_1b_decode_ops(cat: Catalogue, flash: bool) -> None:
    """Decode step, batch 4, context 1000, bf16 on one H100: every row's FLOPs and bytes match the hand formulas.

    Decode: T = 4 new tokens, each sees 1000 cached + itself = 1001 keys; the
    tied lm_head still reads the full 128256 x 2048 matrix. Without fused
    attention the score matrix adds 4 x b x heads x pairs x 2 bytes per layer.
    """
    s = Scenario(gpu="h100-sxm", model="llama-3.2-1b", batch=4, context=1000, flash_attention=flash)
    rows = _rows(operation_table(cat, s, phase="decode"))
    exp = _dense_gqa_expected(**L1B, batch=4, q=1, cached=1000, prefill=False, w=2, kvb=2, act=2, flash=flash)
    assert {op for _, op in rows} == set(exp)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")
    # spelled out once: attention FLOPs = 16 layers x 4 seqs x 1001 pairs x 4 x 32 heads x 64
    attn = rows[("dense layers", "attention")]
    assert attn["flops"] == 16 * 4 * 1001 * 8192
    assert attn["kv_bytes"] == 16 * (4 * 1001 * 1024 * 2 + 4 * 1024 * 2)
    assert rows[("model", "lm_head")]["weight_bytes"] == 128256 * 2048 * 2


def test_llama_3_2_1b_decode_time_bounds(cat: Catalogue) -> None:
    """Each row's time is max(bytes / B, FLOPs / P) on one H100 (bf16), its bound the larger side; shares sum to 1."""
    s = Scenario(gpu="h100-sxm", model="llama-3.2-1b", batch=4, context=1000)
    table = operation_table(cat, s)
    for r in table.iter_rows(named=True):
        mem, comp = r["bytes"] / H100_BW, r["flops"] / H100_BF16
        assert r["time_s"] == pytest.approx(max(mem, comp), rel=REL)
        assert r["bound"] == ("memory" if mem >= comp else "compute")
    assert table["share"].sum() == pytest.approx(1.0, rel=1e-12)


def test_llama_3_2_1b_prefill_ops(cat: Catalogue) -> None:
    """Prefill of a 512-token prompt (batch 1, empty cache): causal pairs 512 x 513 / 2, lm_head on the last token only."""
    s = Scenario(gpu="h100-sxm", model="llama-3.2-1b", prompt=512)
    rows = _rows(operation_table(cat, s, phase="prefill"))
    exp = _dense_gqa_expected(**L1B, batch=1, q=512, cached=0, prefill=True, w=2, kvb=2, act=2)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")
    assert rows[("dense layers", "attention")]["flops"] == 16 * (512 * 513 // 2) * 4 * 32 * 64
    assert rows[("model", "lm_head")]["flops"] == 2 * 1 * 128256 * 2048
    assert rows[("dense layers", "q_proj")]["flops"] == 16 * 2 * 512 * 2048 * 2048


# -- (b) a GQA model: Llama 3.1 8B --------------------------------------------------

# data/seed/models/llama-3.1-8b.json
L8B = dict(h=4096, layers=32, heads=32, kv_heads=8, d=128, inter=14336, vocab=128256)


def test_llama_3_1_8b_decode_ops(cat: Catalogue) -> None:
    """GQA 32q/8kv: decode batch 4, context 1000, bf16. KV per token per layer = 2 x 8 x 128 = 2048 elements."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=4, context=1000)
    rows = _rows(operation_table(cat, s))
    exp = _dense_gqa_expected(**L8B, batch=4, q=1, cached=1000, prefill=False, w=2, kvb=2, act=2)
    assert {op for _, op in rows} == set(exp)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")
    assert rows[("dense layers", "k_proj")]["weight_bytes"] == 32 * 4096 * 1024 * 2
    assert rows[("dense layers", "attention")]["kv_bytes"] == 32 * (4 * 1001 + 4) * 2048 * 2


def test_llama_3_1_8b_decode_ops_fp8_weights_and_kv(cat: Catalogue) -> None:
    """Precisions are separate: fp8 weights (1 byte, W8A8: activations 1 byte) with an fp8 KV cache."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", weights="fp8", kv="fp8", batch=16, context=300)
    rows = _rows(operation_table(cat, s))
    exp = _dense_gqa_expected(**L8B, batch=16, q=1, cached=300, prefill=False, w=1, kvb=1, act=1)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")
    q = rows[("dense layers", "q_proj")]
    assert q["compute_time_s"] == pytest.approx(q["flops"] / H100_FP8, rel=REL)


def test_llama_3_1_8b_int4_weights_store_scales(cat: Catalogue) -> None:
    """int4 (group 128, fp16 scale) is 4.125 bits per weight; W4A16 computes in bf16 (2-byte activations)."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", weights="int4", batch=2, context=10)
    rows = _rows(operation_table(cat, s))
    exp = _dense_gqa_expected(**L8B, batch=2, q=1, cached=10, prefill=False, w=4.125 / 8, kvb=2, act=2)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")
    assert rows[("dense layers", "mlp down")]["compute_time_s"] == pytest.approx(
        rows[("dense layers", "mlp down")]["flops"] / H100_BF16, rel=REL
    )


def test_llama_3_1_8b_prefill_ops(cat: Catalogue) -> None:
    """Prefill of 2048 tokens: matmuls 2 x 2048 x params, attention 2048 x 2049 / 2 pairs, lm_head one token."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", prompt=2048)
    rows = _rows(operation_table(cat, s, phase="prefill"))
    exp = _dense_gqa_expected(**L8B, batch=1, q=2048, cached=0, prefill=True, w=2, kvb=2, act=2)
    for (group, op), actual in rows.items():
        _check(actual, exp[op], f"{group}/{op}")


def test_llama_3_1_8b_tensor_parallel_time(cat: Catalogue) -> None:
    """Over 2 GPUs weights, activations and FLOPs split in two; the GQA cache shards by min(n, kv_heads) = 2."""
    s = Scenario(gpu="h100-sxm", model="llama-3.1-8b", num_gpus=2, batch=8, context=2000)
    for r in operation_table(cat, s).iter_rows(named=True):
        mem = ((r["weight_bytes"] + r["act_bytes"]) / 2 + r["kv_bytes"] / 2) / H100_BW
        comp = r["flops"] / 2 / H100_BF16
        assert r["time_s"] == pytest.approx(max(mem, comp), rel=REL), r["op"]


# -- a sliding-window model: Gemma 2 9B (window 4096 on even layers) -----------------------


def test_gemma_2_9b_window_layers_cap_keys(cat: Catalogue) -> None:
    """Gemma 2 9B: 42 layers, 21 with a 4096-token window. At context 10000 a decode token sees 4096 keys there, 10001 elsewhere.

    Shapes: hidden 3584, 16 q heads, 8 KV heads, head_dim 256: KV 2 x 8 x 256 = 4096 elements per token per layer.
    """
    s = Scenario(gpu="h100-sxm", model="gemma-2-9b", batch=2, context=10000)
    table = operation_table(cat, s)
    attn = {r["group"]: r for r in table.iter_rows(named=True) if r["kind"] == "attn"}
    assert set(attn) == {"dense layers", "dense / window 4096 layers"}
    full, win = attn["dense layers"], attn["dense / window 4096 layers"]
    assert full["layers"] == 21 and win["layers"] == 21
    kv_el, pair_flops = 2 * 8 * 256, 4 * 16 * 256
    assert full["flops"] == pytest.approx(21 * 2 * 10001 * pair_flops, rel=REL)
    assert win["flops"] == pytest.approx(21 * 2 * 4096 * pair_flops, rel=REL)
    assert full["kv_bytes"] == pytest.approx(21 * (2 * 10001 + 2) * kv_el * 2, rel=REL)
    assert win["kv_bytes"] == pytest.approx(21 * (2 * 4096 + 2) * kv_el * 2, rel=REL)


def test_gemma_2_9b_window_prefill_pairs(cat: Catalogue) -> None:
    """Prefill of 6000 tokens under a 4096 window: tokens 1..4096 see i keys, tokens 4097..6000 see 4096."""
    s = Scenario(gpu="h100-sxm", model="gemma-2-9b", prompt=6000)
    attn = {r["group"]: r for r in operation_table(cat, s, phase="prefill").iter_rows(named=True) if r["kind"] == "attn"}
    pairs_win = 4096 * 4097 // 2 + (6000 - 4096) * 4096
    pairs_full = 6000 * 6001 // 2
    pair_flops = 4 * 16 * 256
    assert attn["dense / window 4096 layers"]["flops"] == pytest.approx(21 * pairs_win * pair_flops, rel=REL)
    assert attn["dense layers"]["flops"] == pytest.approx(21 * pairs_full * pair_flops, rel=REL)
    # the window layer reads at most 4096 cached tokens, writes all 6000
    assert attn["dense / window 4096 layers"]["kv_bytes"] == pytest.approx(21 * (4096 + 6000) * 4096 * 2, rel=REL)


# -- (c) an MoE model: Mixtral 8x7B ------------------------------------------------

# data/seed/models/mixtral-8x7b.json: hidden 4096, 32 layers, 32/8 heads, head_dim 128,
# 8 experts of 14336 (gated: 3 x 4096 x 14336 each), top-2, vocab 32000
MX_H, MX_L, MX_E, MX_K, MX_I = 4096, 32, 8, 2, 14336
MX_EXPERT = 3 * MX_H * MX_I


def _distinct(E: int, k: int, T: int) -> float:
    return E * (1 - (1 - k / E) ** T)


def test_mixtral_expected_distinct_experts_formula() -> None:
    """E (1 - (1 - k/E)^b): exactly k = 2 at batch 1, nearly all 8 at batch 64."""
    assert _distinct(8, 2, 1) == pytest.approx(2.0, rel=1e-15)
    assert 7.99 < _distinct(8, 2, 64) < 8.0


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_mixtral_decode_moe_rows(cat: Catalogue, batch: int) -> None:
    """Mixtral decode, context 1000, bf16: experts row reads E(1-(1-k/E)^b) experts' weights, does 2 T k params FLOPs."""
    s = Scenario(gpu="h100-sxm", model="mixtral-8x7b", batch=batch, context=1000)
    rows = _rows(operation_table(cat, s))
    g = "MoE layers"
    experts = rows[(g, "experts (routed)")]
    T = batch
    _check(
        experts,
        {
            "flops": MX_L * 2 * T * MX_K * MX_EXPERT,
            "weight_bytes": MX_L * _distinct(MX_E, MX_K, T) * MX_EXPERT * 2,
            "act_bytes": MX_L * T * MX_K * (2 * MX_H + 3 * MX_I) * 2,
            "kv_bytes": 0.0,
        },
        f"experts b={batch}",
    )
    if batch == 1:
        assert experts["weight_bytes"] == pytest.approx(MX_L * 2 * MX_EXPERT * 2, rel=REL)
    if batch == 64:
        assert experts["weight_bytes"] == pytest.approx(MX_L * 8 * MX_EXPERT * 2, rel=1e-6)
    router = rows[(g, "router")]
    _check(
        router, {"flops": MX_L * 2 * T * MX_H * 8, "weight_bytes": MX_L * MX_H * 8 * 2, "act_bytes": MX_L * T * (MX_H + 8) * 2}, "router"
    )
    attn = rows[(g, "attention")]
    _check(attn, {"flops": MX_L * T * 1001 * 4 * 32 * 128, "kv_bytes": MX_L * (T * 1001 + T) * 2 * 8 * 128 * 2}, "attention")
    assert not any(op.startswith("mlp") for _, op in rows)


def test_mixtral_prefill_reads_every_expert(cat: Catalogue) -> None:
    """A 1024-token prefill routes 2048 token-expert pairs: all 8 experts' weights are read."""
    s = Scenario(gpu="h100-sxm", model="mixtral-8x7b", prompt=1024)
    experts = _rows(operation_table(cat, s, phase="prefill"))[("MoE layers", "experts (routed)")]
    assert experts["weight_bytes"] == pytest.approx(MX_L * 8 * MX_EXPERT * 2, rel=1e-12)
    assert experts["flops"] == pytest.approx(MX_L * 2 * 1024 * 2 * MX_EXPERT, rel=REL)


def test_mixtral_parameter_counts_by_hand(cat: Catalogue) -> None:
    """Mixtral total = embed + lm_head + 32 x (attention + router + 8 experts + norms) + final norm; active counts 2 of 8 experts."""
    h, v = MX_H, 32000
    attn = h * 4096 + 2 * h * 1024 + 4096 * h
    per_layer_shared = attn + h * 8 + 2 * h
    total = 2 * v * h + MX_L * (per_layer_shared + 8 * MX_EXPERT) + h
    active = 2 * v * h + MX_L * (per_layer_shared + 2 * MX_EXPERT) + h
    s = summary(cat.model("mixtral-8x7b"))
    assert s["total_params"] == total
    assert s["active_params"] == active
    assert total == pytest.approx(46.7e9, rel=0.01)
    assert active == pytest.approx(12.9e9, rel=0.01)


# -- (d) MLA: DeepSeek-V3 -------------------------------------------------------------

# data/seed/models/deepseek-v3.json
DS = dict(
    h=7168,
    layers=61,
    dense_layers=3,
    heads=128,
    q_lora=1536,
    rank=512,
    rope=64,
    nope=128,
    v=128,
    inter=18432,
    moe_inter=2048,
    experts=256,
    top_k=8,
    shared=1,
    vocab=129280,
)


def _ds_attention_params() -> int:
    h, n, ql, r, rope, nope, v = DS["h"], DS["heads"], DS["q_lora"], DS["rank"], DS["rope"], DS["nope"], DS["v"]
    q_a = h * ql
    q_b = ql * n * (nope + rope)
    kv_a = h * (r + rope)
    kv_b = r * n * (nope + v)
    o = n * v * h
    norms = 2 * h + ql + r
    return q_a + q_b + kv_a + kv_b + o + norms


def test_deepseek_v3_total_params(cat: Catalogue) -> None:
    """DeepSeek-V3 (main model, no MTP): 671B total within 1%, and the exact hand count from the config shapes."""
    h, v, L, dense = DS["h"], DS["vocab"], DS["layers"], DS["dense_layers"]
    expert = 3 * h * DS["moe_inter"]
    router = h * DS["experts"] + DS["experts"]  # noaux_tc: e_score_correction_bias
    moe_layer = router + DS["experts"] * expert + DS["shared"] * expert
    total = 2 * v * h + L * _ds_attention_params() + dense * 3 * h * DS["inter"] + (L - dense) * moe_layer + h
    active = total - (L - dense) * (DS["experts"] - DS["top_k"]) * expert
    s = summary(cat.model("deepseek-v3"))
    assert s["total_params"] == total
    assert s["active_params"] == active
    assert total == pytest.approx(671e9, rel=0.01)
    # published 36.6B active excludes the input embedding
    assert active - v * h == pytest.approx(36.6e9, rel=0.01)


def test_deepseek_v3_kv_cache_is_576_latent_elements(cat: Catalogue) -> None:
    """MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 elements per token per layer; 4096 tokens in bf16 = 61 x 576 x 2 x 4096 bytes."""
    assert DS["rank"] + DS["rope"] == 576
    assert summary(cat.model("deepseek-v3"))["kv_elems_per_token"] == 61 * 576
    c = ceiling(cat, Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", kv="bf16", num_gpus=8, batch=1, context=4096))
    # the latent cache cannot be sharded by tensor parallelism: 8 GPUs hold 8 copies
    assert c["kv_bytes_per_seq_all_gpus"] == pytest.approx(8 * 61 * 576 * 2 * 4096, rel=REL)
    c1 = ceiling(cat, Scenario(gpu="b200", model="deepseek-v3", weights="fp4", kv="bf16", num_gpus=1, batch=1, context=4096))
    assert c1["kv_memory_bytes"] == pytest.approx(61 * 576 * 2 * 4096, rel=REL)
    assert 61 * 576 * 2 * 4096 == 287_834_112


def test_deepseek_v3_decode_ops(cat: Catalogue) -> None:
    """DeepSeek-V3 decode, batch 4, context 1000, bf16 (one GPU, arithmetic only).

    Absorbed MLA: per (token, key) pair 2 x heads x (2 x 512 + 64) FLOPs
    (scores over latent + rope, values over latent); KV read 576 elements per
    visible token. Projections: q_a 7168 x 1536, q_b 1536 x 128 x 192, kv_a
    7168 x 576, kv_b 512 x 128 x 256, o 128 x 128 x 7168. MoE layers (58) read
    E(1-(1-8/256)^4) distinct experts.
    """
    s = Scenario(gpu="b200", model="deepseek-v3", batch=4, context=1000)
    rows = _rows(operation_table(cat, s))
    h, n, ql, r, rope, nope, v = DS["h"], DS["heads"], DS["q_lora"], DS["rank"], DS["rope"], DS["nope"], DS["v"]
    T, b, w, act = 4, 4, 2, 2
    for group, L in (("dense layers", 3), ("MoE layers", 58)):

        def mm(params: int, din: int, dout: int, L: int = L) -> dict:
            return {"flops": L * 2 * T * params, "weight_bytes": L * params * w, "act_bytes": L * T * (din + dout) * act, "kv_bytes": 0.0}

        _check(rows[(group, "q_a (down)")], mm(h * ql, h, ql), f"{group} q_a")
        _check(rows[(group, "q_b (up)")], mm(ql * n * (nope + rope), ql, n * (nope + rope)), f"{group} q_b")
        _check(rows[(group, "kv_a (down)")], mm(h * (r + rope), h, r + rope), f"{group} kv_a")
        _check(rows[(group, "kv_b (up)")], mm(r * n * (nope + v), r, n * (nope + v)), f"{group} kv_b")
        _check(rows[(group, "o_proj")], mm(n * v * h, n * v, h), f"{group} o_proj")
        _check(
            rows[(group, "attention (MLA)")],
            {
                "flops": L * b * 1001 * 2 * n * (2 * r + rope),
                "weight_bytes": 0.0,
                "act_bytes": L * T * (n * (nope + rope) + n * v) * act,
                "kv_bytes": L * (b * 1001 * 576 * 2 + T * 576 * 2),
            },
            f"{group} attention",
        )
        _check(
            rows[(group, "norms")],
            # the two hidden-width norms per layer (the small q_a / kv_a latent norms add weights only)
            {"flops": L * 2 * 4 * T * h, "weight_bytes": L * (2 * h + ql + r) * w, "act_bytes": L * 2 * 2 * T * h * act},
            f"{group} norms",
        )
    expert = 3 * h * DS["moe_inter"]
    _check(
        rows[("dense layers", "mlp gate+up")],
        {"flops": 3 * 2 * T * 2 * h * DS["inter"], "weight_bytes": 3 * 2 * h * DS["inter"] * w},
        "dense mlp",
    )
    _check(
        rows[("MoE layers", "experts (routed)")],
        {
            "flops": 58 * 2 * T * 8 * expert,
            "weight_bytes": 58 * _distinct(256, 8, T) * expert * w,
            "act_bytes": 58 * T * 8 * (2 * h + 3 * DS["moe_inter"]) * act,
        },
        "experts",
    )
    _check(
        rows[("MoE layers", "shared expert gate+up")], {"flops": 58 * 2 * T * 2 * h * 2048, "weight_bytes": 58 * 2 * h * 2048 * w}, "shared"
    )
    _check(rows[("MoE layers", "router")], {"flops": 58 * 2 * T * (h * 256 + 256), "weight_bytes": 58 * (h * 256 + 256) * w}, "router")


def test_deepseek_v3_prefill_attention_decompressed(cat: Catalogue) -> None:
    """Prefill of 1024 tokens runs decompressed MLA: 2 x heads x (nope + rope + v) = 2 x 128 x 320 FLOPs per causal pair."""
    s = Scenario(gpu="b200", model="deepseek-v3", prompt=1024)
    rows = _rows(operation_table(cat, s, phase="prefill"))
    pairs = 1024 * 1025 // 2
    for group, L in (("dense layers", 3), ("MoE layers", 58)):
        attn = rows[(group, "attention (MLA)")]
        assert attn["flops"] == pytest.approx(L * pairs * 2 * 128 * (128 + 64 + 128), rel=REL)
        assert attn["kv_bytes"] == pytest.approx(L * (1024 + 1024) * 576 * 2, rel=REL)
    experts = rows[("MoE layers", "experts (routed)")]
    assert experts["weight_bytes"] == pytest.approx(58 * 256 * 3 * 7168 * 2048 * 2, rel=1e-9)
