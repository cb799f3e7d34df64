"""The tour's numbers hold for every model (issue 31): each figure a step's text states is the one its table and chart
show, and each claim ("reaches the ridge at", "memory caps the batch", "match the weight reads at") holds in the data.

Every catalogue model x a memory-poor accelerator (RTX 4090, 24 GB), an NVIDIA one (H100 SXM) and an AMD one (MI300X)
x two weight formats (bf16, fp8), on enough GPUs of the part for the weights to fit where a scale-up domain allows.
"""

from __future__ import annotations

import re

import pytest

from core.catalogue.precisions import storage_format
from core.model.ceilings import ceiling, evaluate
from core.model.roofline import SWEEP_BATCHES, operating_points
from core.model.scenario import Scenario
from core.present.tour import steps

GPUS = ("rtx-4090", "h100-sxm", "mi300x")
FORMATS = ("bf16", "fp8")
NUM = r"([\d,]+(?:\.\d+)?)"


def _n(text: str) -> float:
    return float(text.replace(",", ""))


def _scenarios(cat) -> list[Scenario]:  # type: ignore[no-untyped-def]
    out = []
    for model in cat.models["id"].to_list():
        for gpu in GPUS:
            for weights in FORMATS:
                sc = Scenario(gpu=gpu, model=model, weights=weights, kv=weights, batch=1, context=4096, prompt=2048)
                fewest = ceiling(cat, sc).min_gpus or 1
                out.append(sc.model_copy(update={"num_gpus": min(max(fewest, 1), 8)}))
    return out


@pytest.fixture(scope="module")
def cases(cat):  # type: ignore[no-untyped-def]
    return [(sc, steps(cat, sc)) for sc in _scenarios(cat)]


def test_every_model_and_accelerator_is_covered(cat, cases):
    assert len(cases) == cat.models.height * len(GPUS) * len(FORMATS) >= 200
    assert any(cat.model(sc.model).is_mla for sc, _ in cases) and any(cat.model(sc.model).num_experts > 1 for sc, _ in cases)


def test_no_step_says_one_bytes_or_one_sequences_or_two_stops(cases):
    for sc, walk in cases:
        for st in walk:
            text = st.text + " ".join(q + a for q, a in st.questions)
            assert not re.search(r"\b1 (bytes|sequences|GPUs|tokens)\b", text), (sc, st.title, text)
            assert ".." not in text, (sc, st.title)


def test_step_1_intensity_is_its_flops_over_its_bytes(cat, cases):
    for sc, walk in cases:
        m = re.search(rf"do {NUM} GFLOP over {NUM} GB: {NUM} FLOP/byte", walk[0].text)
        assert m, walk[0].text
        flops, gb, intensity = (_n(x) for x in m.groups())
        point = operating_points(cat, sc).filter(operating_points(cat, sc)["point"] == "decode matmul").row(0, named=True)
        assert intensity == pytest.approx(point["intensity"], abs=0.006)
        assert flops == pytest.approx(point["flops"] / 1e9, abs=0.06) and gb == pytest.approx(point["bytes"] / 1e9, abs=0.06)


def test_step_5_says_where_the_matmuls_reach_the_ridge_as_the_operating_points_show(cat, cases):
    for sc, walk in cases:
        text = walk[4].text
        r = ceiling(cat, sc)
        model = cat.model(sc.model)
        pts = operating_points(cat, sc, SWEEP_BATCHES)
        mm = {row["batch"]: row["intensity"] for row in pts.filter(pts["point"] == "decode matmul").iter_rows(named=True)}
        if r.ridge is None:
            continue
        rule = re.search(rf"reach the ridge at a batch of about {NUM}", text)
        assert rule, text
        assert _n(rule.group(1)) == pytest.approx(r.ridge * storage_format(sc.weights).bytes / 2, abs=1.0)  # the seed's rule
        if model.num_experts <= 1:
            continue
        shown = re.search(rf"decode matmuls are at {NUM}, {NUM}, {NUM} FLOP/byte at batch 256, 512, 1,024", text)
        assert shown, text
        for b, x in zip((256, 512, 1024), shown.groups(), strict=True):
            assert _n(x) == pytest.approx(mm[b], abs=0.06)
        reached = re.search(rf"reaching it at batch {NUM}", text)
        if reached:
            b = int(_n(reached.group(1)))
            assert mm[b] >= r.ridge and (b == 1 or mm[b // 2] < r.ridge)
        else:
            assert "no batch up to 1,024 reaches it" in text and mm[1024] < r.ridge
        capped = re.search(rf"Memory caps the batch at {NUM} first", text)
        if capped:
            assert int(_n(capped.group(1))) == r.max_batch


def test_step_5_kv_and_weight_reads_match_where_it_says(cat, cases):
    for sc, walk in cases:
        m = re.search(rf"match the weight reads at a batch of about {NUM}", walk[4].text)
        if not m:
            assert sc.context == 0 or "no KV cache" in walk[4].text or "match" not in walk[4].text, walk[4].text
            continue
        b = int(_n(m.group(1)))
        at = evaluate(
            cat, [sc.model_copy(update={"batch": b}), sc.model_copy(update={"batch": max(b - 1, 1)})], columns=["weight_bytes", "kv_bytes"]
        )
        assert at["kv_bytes"][0] >= at["weight_bytes"][0]
        assert b == 1 or at["kv_bytes"][1] < at["weight_bytes"][1]
        beyond = re.search(rf"more sequences than memory holds at this context \(at most {NUM}\)", walk[4].text)
        r = ceiling(cat, sc)
        assert bool(beyond) == (r.max_batch is not None and b > r.max_batch), walk[4].text


def test_step_6_attention_rule_is_the_models_and_about_its_intensity(cat, cases):
    for sc, walk in cases:
        text = walk[5].text
        model = cat.model(sc.model)
        kv = storage_format(sc.kv).bytes
        m = re.search(rf"{NUM} FLOP/byte at batch 1, {NUM} at batch 512\. .* = {NUM} FLOP/byte\.$", text, re.S)
        assert m, text
        at_1, at_512, rule = (_n(x) for x in m.groups())
        if model.is_mla:
            expected = (
                2
                * model.num_heads
                * (2 * model.kv_lora_rank + model.qk_rope_head_dim)
                / ((model.kv_lora_rank + model.qk_rope_head_dim) * kv)
            )
            assert "latent" in text
        else:
            expected = 2 * (model.num_heads // model.num_kv_heads) / kv
        assert rule == pytest.approx(expected, abs=0.06)
        assert rule == pytest.approx(at_1, rel=0.1) and at_512 == pytest.approx(at_1, rel=0.05)  # "about", "at any batch"


def test_the_roofline_and_frontier_readings_say_where_the_matmuls_reach_the_ridge_for_every_model(cat):
    """The roofline's reading (overview, roofline page, report) and the calculator's frontier said a mixture of experts'
    decode matmuls reach the ridge at the dense rule's batch (DeepSeek-V3 on 8 x H200 at fp8: "about 207", where they
    are at 109 FLOP/byte at batch 1,024 against a ridge of 412). Now, for every model on each accelerator and format: the
    batch each sentence names is one whose decode matmuls reach the (derated) ridge, and about 4% fewer do not; for a
    dense model it is the seed's rule, ceil(ridge x bytes per weight / 2)."""
    from core.plan.planning import frontier
    from core.present.readings import frontier_reading, plain_reading

    def matmul(sc: Scenario, batch: int) -> float:
        pts = operating_points(cat, sc, [batch])
        return float(pts.filter(pts["point"] == "decode matmul")["intensity"][0])

    moe = 0
    for sc in _scenarios(cat):
        sc = sc.model_copy(update={"batch": 16})
        r = ceiling(cat, sc)
        if r.ridge is None:
            continue
        reading = plain_reading(cat, operating_points(cat, sc), r)
        said = re.search(r"need a batch of about \*\*([\d,]+)\*\* to reach the ridge", reading)
        model = cat.model(sc.model)
        if model.num_experts <= 1:
            rule = -(-r.ridge * storage_format(sc.weights).bytes // 2)
            assert said is not None and _n(said.group(1)) == rule, (sc, reading)
            continue
        moe += 1
        assert f"Each token goes to {model.experts_per_token} of {model.num_experts} experts" in reading, (sc, reading)
        if said is None:
            assert "no batch up to 65,536 reaches the ridge" in reading and matmul(sc, 65536) < r.ridge, (sc, reading)
            continue
        b = int(_n(said.group(1)))
        assert matmul(sc, b) >= r.ridge > matmul(sc, int(b / 1.05)), (sc, b)
        assert b > -(-r.ridge * storage_format(sc.weights).bytes // 2)  # past the dense rule: k of E experts per token
        front = frontier(cat, sc, result=r)
        text = frontier_reading(cat, sc, front, r)
        if text.startswith("Nothing fits"):
            continue
        assert f"reach the ridge at batch {b:,}" in text or f"would reach the ridge at batch {b:,}" in text, (sc, text)
    assert moe >= 30


def test_the_ridge_page_says_a_mixture_of_experts_matmuls_are_not_on_the_dense_line(cat):
    """The ridge page draws the dense rule's line (2 x batch ÷ bytes per weight: 64 FLOP/byte at batch 64, fp8); for
    DeepSeek-V3 its note gives the matmuls' own figure (8.0 FLOP/byte there, the operating points') and how many
    accelerators' fp8 ridges lie at or below it, counted from the datasheet rows (peak ÷ bandwidth); none for a dense model."""
    from core.model.roofline import ridge_table
    from core.present.readings import moe_ridge_note

    sc = Scenario(gpu="h200-sxm", num_gpus=8, model="deepseek-v3", weights="fp8", kv="fp8", batch=64)
    ridges = ridge_table(cat.gpus, "fp8", sc.batch, sc.weights)
    note = moe_ridge_note(cat, sc, ridges)
    pts = operating_points(cat, sc)
    x = float(pts.filter(pts["point"] == "decode matmul")["intensity"][0])
    assert 4 < x < 16  # far below the dense rule's 2 x 64 ÷ 1 = 128
    fp8 = cat.gpus.filter(cat.gpus["peak_fp8"].is_not_null())
    below = sum(p / b <= x for p, b in zip(fp8["peak_fp8"], fp8["bandwidth_bytes_per_s"], strict=True))
    assert note == (
        f"DeepSeek-V3 routes each token to 8 of 256 experts: its decode matmuls are at {x:,.1f} FLOP/byte at batch 64, not the "
        f"dense rule's line; by that figure they are compute-bound on {below} of {fp8.height} accelerators."
    )
    assert moe_ridge_note(cat, sc.model_copy(update={"model": "llama-3.1-70b"}), ridges) is None
