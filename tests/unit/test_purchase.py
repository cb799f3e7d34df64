"""Comparing accelerators for one workload (core.plan.purchase): cheapest configuration, costs, load, frontier, scale-up limits.

Seed 004's L40S against A100 80GB; the issue's cheapest-not-fewest case (70B on H100 at TPOT <= 50 ms); every $ figure
recomputed by hand from the row's own throughput and the formulas of core.plan.costs.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from core.model.ceilings import ceiling, evaluate, operation_table
from core.model.scenario import Scenario, grid
from core.model.sweep import filter_results, scenario_grid, sweep
from core.plan.costs import Ownership
from core.plan.planning import what_ifs
from core.plan.purchase import TARGET_BATCHES, Load, compare_accelerators, evaluate_configurations, frontier_curves, price_table, tp_counts
from core.plan.targets import BY_KEY, targets_for
from core.present.readings import comparison_reading
from core.present.tables import comparison_display

BATCH_1_8B = Scenario(gpu="l40s", model="llama-3.1-8b", batch=1)
SEVENTY_B = Scenario(gpu="h100-sxm", model="llama-3.1-70b")


def _row(table: pl.DataFrame, gpu: str) -> dict:
    return table.filter(pl.col("gpu") == gpu).row(0, named=True)


def test_l40s_vs_a100_at_batch_1_decode(cat):
    """Seed 004: the L40S has the higher bf16 peak, the A100 80GB 2.36x the bandwidth; batch-1 decode is ~2.4x faster on the A100."""
    table = compare_accelerators(cat, ["l40s", "a100-80gb-sxm"], BATCH_1_8B, sort_by="tokens_per_s_per_user")
    assert table["gpu"].to_list() == ["a100-80gb-sxm", "l40s"]  # best first
    a100, l40s = _row(table, "a100-80gb-sxm"), _row(table, "l40s")
    assert l40s["peak_flops"] > a100["peak_flops"]
    assert a100["num_gpus"] == l40s["num_gpus"] == 1 and a100["batch"] == l40s["batch"] == 1
    ratio = a100["tokens_per_s_per_user"] / l40s["tokens_per_s_per_user"]
    assert ratio == pytest.approx(2.039 / 0.864, rel=0.01)  # memory-bound: the bandwidth ratio
    text = comparison_reading(table)
    assert "2.4× faster per user than NVIDIA L40S" in text
    assert "despite a lower bf16 peak" in text
    assert "on 1 GPU each it has 2.36× the bandwidth" in text


def test_rented_cost_per_million_output_and_input_tokens(cat):
    """$2 per GPU-hour at T output tokens/s on n GPUs costs 2 n / (3,600 T) x 1e6 per million output tokens; input tokens at
    the prefill's prompt / TTFT tokens/s; the L40S, given no price, uses its published median and names it."""
    table = compare_accelerators(cat, ["a100-80gb-sxm", "l40s"], BATCH_1_8B, prices={"a100-80gb-sxm": 2.0})
    a100, l40s = _row(table, "a100-80gb-sxm"), _row(table, "l40s")
    t, n = a100["tokens_per_s_total"], a100["num_gpus"]
    assert a100["usd_per_million_tokens"] == pytest.approx(2.0 * n / (3600 * t) * 1e6, rel=1e-12)
    prefill = BATCH_1_8B.prompt / a100["ttft_s"]
    assert a100["usd_per_million_input_tokens"] == pytest.approx(2.0 * n / (3600 * prefill) * 1e6, rel=1e-9)
    assert a100["tokens_per_s_per_watt"] == pytest.approx(t / 400.0, rel=1e-12)
    assert a100["price_basis"].startswith("$2.00 per GPU-hour: your price") and a100["price_sources"] is None
    assert set(l40s["price_sources"].split(" ; ")) == set(
        cat.prices.filter((pl.col("gpu") == "l40s") & (pl.col("kind") == "rent"))["source_url"]
    )
    median = cat.price("l40s", "rent").usd
    assert l40s["usd_per_gpu_hour"] == pytest.approx(median)
    assert l40s["usd_per_million_tokens"] == pytest.approx(median / (3600 * l40s["tokens_per_s_total"]) * 1e6, rel=1e-12)
    assert "sellers' on-demand instance rates" in l40s["price_basis"]


def test_bought_cost_per_million_tokens_and_when_buying_pays_off(cat):
    """Buying an H100 at $30,000 over 5 years, $0.10/kWh, PUE 1.5, 50% utilisation: $0.789931 per owned hour, $1.579863 per
    served hour; rent against buy at the published median rent: 30,000 / (730 x (0.5 x rent - 0.105)) months."""
    own = Ownership(mode="buy", years=5, usd_per_kwh=0.10, pue=1.5, utilization=0.5)
    row = _row(compare_accelerators(cat, ["h100-sxm"], BATCH_1_8B, own=own, buy_prices={"h100-sxm": 30_000.0}), "h100-sxm")
    assert row["price_kind"] == "buy" and row["price_usd"] == 30_000.0
    assert row["usd_per_gpu_hour"] == pytest.approx(30_000 / 43_800 + 0.7 * 1.5 * 0.10)
    served = row["usd_per_gpu_hour"] / 0.5
    assert served == pytest.approx(1.579863, rel=1e-6)
    assert row["usd_per_million_tokens"] == pytest.approx(served * row["num_gpus"] / (3600 * row["tokens_per_s_total"]) * 1e6, rel=1e-9)
    rent = cat.price("h100-sxm", "rent").usd
    assert row["break_even_months"] == pytest.approx(30_000 / (730 * (0.5 * rent - 0.105)), rel=1e-12)


def test_an_accelerator_without_a_buy_price_has_no_owned_cost(cat):
    """MI355X has no published buy price: in buy mode its $ figures stay empty (never the rent fallback) and it says so."""
    own = Ownership(mode="buy")
    row = _row(compare_accelerators(cat, ["mi355x"], BATCH_1_8B, own=own), "mi355x")
    assert row["usd_per_million_tokens"] is None and row["usd_per_gpu_hour"] is None
    assert "no published buy price" in row["price_basis"]


def test_the_cheapest_configuration_wins_not_the_fewest_gpus(cat):
    """70B bf16 on H100 at TPOT <= 50 ms, TTFT <= 2 s: 2 GPUs meet it, but 8 GPUs at a larger batch give the most tokens/s per
    GPU, hence the lowest $ per million tokens at any price per GPU; checked against every configuration evaluated on its own."""
    row = _row(compare_accelerators(cat, ["h100-sxm"], SEVENTY_B, max_tpot_s=0.050, max_ttft_s=2.0), "h100-sxm")
    every = evaluate(cat, grid(SEVENTY_B, num_gpus=[1, 2, 4, 8], batch=list(TARGET_BATCHES)))
    meets = every.filter(pl.col("fits") & (pl.col("time_per_output_token_s") <= 0.050) & (pl.col("ttft_s") <= 2.0))
    per_gpu = meets.with_columns((pl.col("tokens_per_s_total") / pl.col("num_gpus")).alias("per_gpu"))
    assert row["tokens_per_s_per_gpu"] == pytest.approx(per_gpu["per_gpu"].max())
    fewest = int(meets["num_gpus"].min())
    assert fewest == 2 and row["num_gpus"] > fewest
    cheapest_at_fewest = per_gpu.filter(pl.col("num_gpus") == fewest)["usd_per_million_tokens"].min()
    assert row["usd_per_million_tokens"] < cheapest_at_fewest
    # what binds: the next batch at this GPU count does not fit
    nxt = TARGET_BATCHES[TARGET_BATCHES.index(row["batch"]) + 1]
    after = ceiling(cat, SEVENTY_B.at(num_gpus=row["num_gpus"], batch=nxt))
    assert not after.fits and row["binds"] == "memory"
    assert f"batch {nxt} does not fit in memory" in row["why"]


def test_ttft_binds_when_fewer_gpus_miss_the_first_token_limit(cat):
    """Llama 3.1 8B with a 16k-token prompt on L4s, TPOT <= 100 ms, TTFT <= 1 s: on 4 L4s the prefill alone takes over 1 s,
    so TTFT sets the GPU count (8) and the sentence says so."""
    sc = Scenario(gpu="l4", model="llama-3.1-8b", prompt=16_384, context=16_640)
    four = ceiling(cat, sc.at(num_gpus=4))
    assert four.fits and four.ttft_s > 1.0
    row = _row(compare_accelerators(cat, ["l4"], sc, max_tpot_s=0.1, max_ttft_s=1.0), "l4")
    assert row["num_gpus"] == 8 and row["ttft_s"] <= 1.0
    assert row["binds"] == "TTFT"
    assert f"on 4 GPUs the first token takes {four.ttft_s:.3g} s > 1 s" in row["why"]


def test_tensor_parallel_stays_within_the_scale_up_domain(cat):
    """An L40S server holds 8 cards, an NVL72 rack 72 GB200s (64 is the widest power of two), Apple parts are one device."""
    assert tp_counts(cat, "l40s") == [1, 2, 4, 8]
    assert tp_counts(cat, "gb200") == [1, 2, 4, 8, 16, 32, 64]
    assert tp_counts(cat, "m4-max") == [1]
    counts = {g: tp_counts(cat, g) for g in ("l40s", "m4-max")}
    configs = evaluate_configurations(cat, counts, SEVENTY_B, batches=[1], served={})
    assert configs.group_by("gpu").agg(pl.col("num_gpus").max()).sort("gpu").rows() == [("l40s", 8), ("m4-max", 1)]
    apple = _row(compare_accelerators(cat, ["m4-max"], SEVENTY_B), "m4-max")  # 141 GB of bf16 weights on one 128 GB part
    assert apple["status"] == "does not fit on its one device (not ganged in tensor parallel)"
    huge = _row(compare_accelerators(cat, ["l4"], Scenario(gpu="l4", model="kimi-k2")), "l4")
    assert huge["status"] == "does not fit on 8 GPUs (one scale-up domain)"


def test_a_scenario_wider_than_the_domain_or_ganging_single_devices_is_flagged(cat):
    """16 H100s in tensor parallel exceed the 8 of an HGX board; two M4 Max are not ganged: both scenarios say so."""
    wide = ceiling(cat, SEVENTY_B.at(num_gpus=16))
    assert any("wider than the scale-up domain (8 devices)" in f for f in wide.flags)
    assert not any("scale-up domain" in f for f in ceiling(cat, SEVENTY_B.at(num_gpus=8)).flags)
    apple = ceiling(cat, Scenario(gpu="m4-max", model="llama-3.1-8b", num_gpus=2))
    assert any("is one device" in f for f in apple.flags)
    assert not apple.within_scaleup_domain and ceiling(cat, SEVENTY_B.at(num_gpus=8)).within_scaleup_domain
    # the calculator's lever does not offer 16 H100s in tensor parallel; the sweep can drop such rows
    lever = what_ifs(cat, SEVENTY_B.at(num_gpus=8)).filter(pl.col("lever") == "twice the GPUs").row(0, named=True)
    assert "exceed one scale-up domain (8)" in lever["change"] and lever["tokens_per_s_per_user"] is None
    rows = sweep(cat, scenario_grid(["h100-sxm"], ["llama-3.1-70b"], weights=["bf16"], batches=[1], contexts=[1024], num_gpus=[8, 16]))
    assert filter_results(rows, within_domain=True)["num_gpus"].to_list() == [8]
    assert filter_results(rows)["num_gpus"].to_list() == [8, 16]


def test_each_all_reduce_costs_its_published_latency_plus_the_ring_term(cat):
    """70B on 2 H100s at batch 1: 160 all-reduces of 8,192 x 2 bytes, each 6 µs (NVIDIA/nccl issue 1259) plus
    2 (n-1)/n x 16,384 B / 450 GB/s = 0.0364 µs: 0.966 ms of communication, not the 0.006 ms of the ring term alone."""
    r = ceiling(cat, SEVENTY_B.at(num_gpus=2))
    ring = 2 * (2 - 1) / 2 * 8192 * 2 / 450e9
    assert r.comm_time_s == pytest.approx(160 * (6e-6 + ring), rel=1e-9)
    assert r.comm_time_s == pytest.approx(0.966e-3, rel=1e-3)
    l40s = ceiling(cat, SEVENTY_B.at(gpu="l40s", num_gpus=2))  # no published latency: the ring term only, flagged
    assert l40s.comm_time_s == pytest.approx(160 * 2 * 0.5 * 16384 / 32e9, rel=1e-9)
    assert any("no published all-reduce latency" in f for f in l40s.flags)


def test_communication_is_a_row_of_the_per_operation_table(cat):
    """With communication=True the table has one 'tensor parallel' row holding the step's all-reduce time; shares add to 1."""
    sc = SEVENTY_B.at(num_gpus=2)
    table = operation_table(cat, sc, communication=True)
    comm = table.filter(pl.col("group") == "tensor parallel")
    assert comm.height == 1 and comm["bound"][0] == "communication"
    assert comm["time_s"][0] == pytest.approx(ceiling(cat, sc).comm_time_s, rel=1e-12)
    assert table["share"].sum() == pytest.approx(1.0)
    assert operation_table(cat, sc).filter(pl.col("group") == "tensor parallel").is_empty()
    assert operation_table(cat, sc.at(num_gpus=1), communication=True).filter(pl.col("group") == "tensor parallel").is_empty()


def test_a_load_needs_replicas_of_the_configuration(cat):
    """50 requests/s of 2,048 in / 256 out: a replica serves one request per (256 / T + 2,048 / prefill tokens/s) seconds;
    replicas = ceil(50 x that), GPUs = replicas x n, a month = GPUs x $/GPU-hour x 730 h."""
    load = Load(requests_per_s=50, input_tokens=2048, output_tokens=256)
    row = _row(compare_accelerators(cat, ["h100-sxm"], SEVENTY_B, max_tpot_s=0.05, max_ttft_s=2.0, load=load), "h100-sxm")
    prefill = SEVENTY_B.prompt / row["ttft_s"]
    replicas = math.ceil(50 * (256 / row["tokens_per_s_total"] + 2048 / prefill))
    assert row["replicas"] == replicas and replicas > 1
    assert row["gpus_needed"] == replicas * row["num_gpus"]
    assert row["usd_per_month"] == pytest.approx(row["gpus_needed"] * row["usd_per_gpu_hour"] * 730)


def test_the_frontier_is_each_accelerators_batch_sweep_with_the_chosen_point(cat):
    """Per accelerator, at the GPU count kept: tokens/s per user falls and tokens/s per GPU rises with the batch; the row kept is
    marked; $ per million is the served price over the tokens of an hour."""
    table = compare_accelerators(cat, ["h100-sxm", "mi300x"], SEVENTY_B, max_tpot_s=0.05, max_ttft_s=2.0)
    curves = frontier_curves(cat, table, SEVENTY_B, max_tpot_s=0.05, max_ttft_s=2.0)
    for gpu in ("h100-sxm", "mi300x"):
        kept = _row(table, gpu)
        mine = curves.filter(pl.col("gpu") == gpu).sort("batch")
        assert set(mine["num_gpus"]) == {kept["num_gpus"]}
        assert mine["tokens_per_s_per_user"].diff().drop_nulls().max() < 0
        assert mine["tokens_per_s_per_gpu"].diff().drop_nulls().min() > 0
        chosen = mine.filter(pl.col("chosen"))
        assert chosen["batch"].to_list() == [kept["batch"]] and chosen["meets"][0]
        price = cat.price(gpu, "rent").usd
        first = mine.row(0, named=True)
        assert first["usd_per_million_tokens"] == pytest.approx(price * first["num_gpus"] / (first["tokens_per_s_total"] * 3600) * 1e6)


def test_mlperf_presets_carry_the_published_limits():
    """MLPerf Inference rules: Llama-2-70B Interactive TTFT <= 450 ms, TPOT <= 40 ms; Server 2 s / 200 ms; each with its source."""
    inter, server = BY_KEY["mlperf-llama2-70b-interactive"], BY_KEY["mlperf-llama2-70b-server"]
    assert (inter.ttft_s, inter.tpot_s) == (0.45, 0.04)
    assert (server.ttft_s, server.tpot_s) == (2.0, 0.2)
    assert "inference_rules.adoc" in inter.source and inter.model == "llama-2-70b"
    keys = [t.key for t in targets_for("llama-2-70b")]
    assert keys[:4] == ["chat", "batch", "mlperf-llama2-70b-server", "mlperf-llama2-70b-interactive"]


def test_the_reading_compares_aggregate_bandwidth_when_gpu_counts_differ(cat):
    """Kept at different GPU counts, the sentence credits the whole group's bandwidth, n x per-GPU, not one GPU's."""
    sc = SEVENTY_B.at(weights="fp8", kv="fp8")
    table = compare_accelerators(cat, ["h100-sxm", "mi300x"], sc, max_tpot_s=0.05, max_ttft_s=2.0, sort_by="tokens_per_s_per_user")
    fast, slow = table.row(0, named=True), table.row(1, named=True)
    assert fast["num_gpus"] != slow["num_gpus"]
    ratio = fast["num_gpus"] * fast["bandwidth_bytes_per_s"] / (slow["num_gpus"] * slow["bandwidth_bytes_per_s"])
    assert f"{ratio:.2f}× the aggregate bandwidth" in comparison_reading(table)


def test_impossible_targets_are_named(cat):
    """A 10 µs target misses everywhere; the figures stay empty."""
    missed = compare_accelerators(cat, ["h100-sxm", "b200"], Scenario(model="llama-3.1-8b"), max_tpot_s=1e-5)
    assert set(missed["status"]) == {"misses the target"}
    assert missed["tokens_per_s_total"].null_count() == 2


def test_no_accelerator_gives_an_empty_table(cat):
    """No accelerator chosen: an empty table with the documented columns, and no reading."""
    table = compare_accelerators(cat, [], BATCH_1_8B)
    assert table.is_empty()
    assert comparison_display(table).is_empty()
    assert comparison_reading(table) == ""


def test_price_table_shows_the_published_median_or_your_price(cat):
    """The page's price table: the published median where none is typed, your price where one is, and what each rests on."""
    prices = price_table(cat, ["l40s", "h100-sxm", "mi355x"], given={"h100-sxm": 2.5})
    assert prices["usd"].to_list() == [cat.price("l40s").usd, 2.5, None]
    assert prices["source"][1].endswith("your price")
    assert "median of" in prices["source"][0] and "enter yours" in prices["source"][2]


def test_the_frontier_chart_keeps_the_target_line_inside_the_plot(cat):
    """8B on H100 at a 1 s TPOT limit: every point is right of 1 tokens/s per user, yet the x axis still reaches it,
    so the dashed line is drawn on the plot, not over the axis title; both axes are log."""
    from core.present.plan_charts import purchase_frontier_chart

    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    table = compare_accelerators(cat, ["h100-sxm"], sc, max_tpot_s=1.0, max_ttft_s=60.0)
    curves = frontier_curves(cat, table, sc, max_tpot_s=1.0, max_ttft_s=60.0)
    assert curves["tokens_per_s_per_user"].min() > 1.0
    spec = purchase_frontier_chart(curves, max_tpot_s=1.0).to_dict(validate=False)
    x = spec["layer"][0]["encoding"]["x"]["scale"]
    assert x["type"] == "log" and x["domain"][0] <= 1.0 <= x["domain"][1]
    assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"


def test_the_frontier_s_curves_each_have_their_own_colour_none_blue_or_orange(cat):
    """Two accelerators on the compare page's frontier: two colours from a fixed range, distinct, and neither the
    blue nor the orange that mean memory- and compute-bound (Streamlit's theme gave them two similar blues)."""
    from core.present.charts import COMPUTE_COLOUR, MEMORY_COLOUR
    from core.present.plan_charts import purchase_frontier_chart

    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    table = compare_accelerators(cat, ["a100-80gb-sxm", "l40s"], sc)
    spec = purchase_frontier_chart(frontier_curves(cat, table, sc)).to_dict(validate=False)
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    first_two = scale["range"][:2]
    assert len(set(first_two)) == 2 and not {MEMORY_COLOUR, COMPUTE_COLOUR} & set(scale["range"])
    assert all(c.startswith("#") and len(c) == 7 for c in scale["range"])


def test_a_frontier_at_a_given_gpu_count_is_drawn_at_that_count(cat):
    """`frontier --num-gpus 16` on H100: the curve is at 16 GPUs as asked (wider than one HGX board, so each scenario is
    flagged), not silently narrowed to what the domain holds."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-70b")
    table = compare_accelerators(cat, ["h100-sxm"], sc)
    curves = frontier_curves(cat, table, sc, num_gpus=16)
    assert set(curves["num_gpus"]) == {16} and not curves["chosen"].any()
    assert not ceiling(cat, sc.at(num_gpus=16)).within_scaleup_domain
