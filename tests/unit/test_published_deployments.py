"""The published deployments (data/seed/deployments.csv) against their layouts (core.plan.published)."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from core.catalogue.deployments import DeploymentError, deployment_seed_frame
from core.evidence.predictor import with_predictor
from core.model.scenario import Scenario
from core.plan.layouts import Layout, layout_step
from core.plan.published import score_deployments
from core.store.paths import SEED


@pytest.fixture(scope="module")
def scored(cat):
    return score_deployments(with_predictor(cat))


def test_at_least_fifteen_rows_are_set_against_a_layout_and_none_above_its_ceiling_without_a_cause(scored):
    rows = scored.filter(pl.col("unscored").is_null())
    assert rows.height >= 15
    above = rows.filter(pl.col("share_of_ceiling") > 1.0)
    assert above["cause"].null_count() == 0, above.select("id", "share_of_ceiling").to_dicts()
    # every unscored row says why
    assert scored.filter(pl.col("unscored").is_not_null() & (pl.col("unscored") == "")).height == 0


def test_a_row_is_the_layouts_own_figure(cat, scored):
    """Moreh's MI300X run (dep-083/084/085): 3 decode instances of 8 GPUs, EP=8 + DP=8, concurrency 10,800, 512 + 512
    tokens. Each instance runs 3,600 sequences at a context of 512 + 256; its per-node (8 GPU) output rate is 3,600 /
    step, the 24-GPU pool's three times that, the mean ITL the step itself."""
    sc = Scenario(gpu="mi300x", model="deepseek-v3", weights="fp8", kv="fp8", batch=3600, context=768, prompt=512)
    step = layout_step(cat, sc, Layout(tp=1, dp_attention=8, expert_parallel=True))
    row = {r["id"]: r for r in scored.iter_rows(named=True)}
    assert row["dep-084"]["batch"] == 3600 and row["dep-084"]["layout"] == "DP-attention 8 x EP8"
    assert row["dep-084"]["ceiling"] == pytest.approx(3600 / step.time_s, rel=1e-9)
    assert row["dep-083"]["ceiling"] == pytest.approx(3 * 3600 / step.time_s, rel=1e-9)
    assert row["dep-085"]["ceiling"] == pytest.approx(step.time_s * 1e3, rel=1e-9)
    assert row["dep-085"]["share_of_ceiling"] == pytest.approx(step.time_s * 1e3 / 160.33, rel=1e-9)


def test_rows_that_cannot_be_placed_say_why(scored):
    why = dict(zip(scored["id"], scored["unscored"], strict=True))
    assert why["dep-106"] == "its accelerator is not in the catalogue"  # H800
    assert why["dep-065"].startswith("its model (deepseek-ai/DeepSeek-V4-Pro")
    assert why["dep-025"].startswith("total (input + output) tokens over both pools")
    assert why["dep-001"] == "the prefill instance's layout is not printed"


def test_a_bad_seed_row_is_named(tmp_path, cat):
    seed = tmp_path / "seed"
    seed.mkdir()
    shutil.copy(SEED / "deployments.csv", seed / "deployments.csv")
    gpus, models = set(cat.gpu_index), set(cat.model_index)
    assert deployment_seed_frame(seed, gpus, models).height == pl.read_csv(SEED / "deployments.csv").height
    text = (seed / "deployments.csv").read_text(encoding="utf-8").replace(",h100-sxm,deepseek-v3,", ",h100-sxmm,deepseek-v3,", 1)
    (seed / "deployments.csv").write_text(text, encoding="utf-8")
    with pytest.raises(DeploymentError, match=r"deployments.csv row 2 \(dep-001\): unknown accelerator 'h100-sxmm'"):
        deployment_seed_frame(seed, gpus, models)
    pl.read_csv(SEED / "deployments.csv", infer_schema_length=0).drop("cause").write_csv(seed / "deployments.csv")
    with pytest.raises(DeploymentError, match="missing column"):
        deployment_seed_frame(seed, gpus, models)


def test_a_bad_serving_power_row_is_named(tmp_path, cat):
    from core.catalogue.serving_power import power_seed_frame

    seed = tmp_path / "seed"
    seed.mkdir()
    frame = pl.read_csv(SEED / "serving_power.csv", infer_schema_length=0)
    assert power_seed_frame(SEED, set(cat.gpu_index), set(cat.model_index)).height == frame.height == 25
    frame.with_columns(pl.when(pl.col("id") == "pwr-002").then(pl.lit("-5")).otherwise(pl.col("value")).alias("value")).write_csv(
        seed / "serving_power.csv"
    )
    with pytest.raises(DeploymentError, match=r"serving_power.csv row 3 \(pwr-002\): value: Input should be greater than 0"):
        power_seed_frame(seed, set(cat.gpu_index), set(cat.model_index))
