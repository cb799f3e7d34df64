"""The published deployments (core.catalogue.deployments) set against their layouts' ceilings and predictions.

Each row is put under the layout its source prints, on one instance of the pool its figure is of:

- the pool: a prefill figure (input tokens/s) is of the prefill pool, every other of the decode pool (an aggregated
  row's one instance);
- the layout: an expert-parallel degree N with a tensor-parallel degree T (1 where none is printed) is attention data
  parallel N / T with the routed experts over the N GPUs (the wide-EP configuration the sources describe); an
  instance of N GPUs printed as data and expert parallel is the same with T = 1; tensor parallel alone is itself;
- the batch of a decode instance: the printed batch per GPU x its GPUs, else the printed concurrency over the decode
  instances (evenly); where neither is printed the row is set against the bound, the largest batch the layout holds;
- the context: the prompt plus half the output (a request's mean cache while it decodes), the prompt alone where no
  output is printed; a prefill row runs 65,536 prompt tokens a step (its ceiling is compute-bound there: more tokens
  do not raise it);
- the formats: the printed weights (fp4 for NVFP4), else the checkpoint's own; the printed KV cache, else bf16.

A rate per GPU is the instance's tokens/s over its GPUs; per node, times the node's GPUs; a pool's total, times the
pool's GPUs. A time per output token is the decode step. `share_of_ceiling` is the measured rate over the ceiling's
(or the ceiling's time over the measured one), so above 1 means above the ceiling; such a row carries its cause
(speculative decoding, MTP, makes more than one token a step; the ceiling is one token a step).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario
from core.plan.layouts import Layout, check, layout_memory, layout_step, moe_layers

#: Prompt tokens a prefill row's step runs.
PREFILL_TOKENS = 65536
_RATES = {
    "output_tokens_per_s_per_gpu",
    "output_tokens_per_s_per_node",
    "output_tokens_per_s_total",
    "input_tokens_per_s_per_gpu",
    "input_tokens_per_s_per_node",
    "input_tokens_per_s_total",
}
_TIMES = {"tpot": 1.0, "itl": 1.0}
_FRAMEWORKS = (("SGLang", "SGLang"), ("TensorRT", "TensorRT-LLM"), ("vLLM", "vLLM"))
MTP_CAUSE = "speculative decoding (MTP) makes more than one token a step; the ceiling is one token a step"


def _framework(text: str) -> str | None:
    return next((name for key, name in _FRAMEWORKS if key in text), None)


def _weights(cat: Catalogue, row: dict[str, Any]) -> str:
    w = (row["weights"] or "").lower()
    if w in ("fp4", "nvfp4", "mxfp4"):
        return "fp4"
    if w:
        return w
    return str(cat.records[row["model"]].native_weights)


def _layout(row: dict[str, Any], prefill: bool, moe: bool) -> Layout | None:
    side = "prefill" if prefill else "decode"
    ep, tp, gpi, dp = row[f"{side}_ep"], row[f"{side}_tp"], row[f"{side}_gpus_per_instance"], row[f"{side}_dp_attention"]
    if ep and moe:
        t = tp or 1
        return Layout(tp=t, dp_attention=max(1, ep // t), expert_parallel=True)
    if gpi and dp and moe:
        t = tp or 1
        return Layout(tp=t, dp_attention=max(1, gpi // t), expert_parallel=True)
    if tp and (gpi in (None, tp)):
        return Layout(tp=tp)
    return None


def _pool_gpus(row: dict[str, Any], layout: Layout, prefill: bool) -> int | None:
    side = "prefill" if prefill else "decode"
    if row[f"{side}_pool_gpus"]:
        return int(row[f"{side}_pool_gpus"])
    if row[f"{side}_instances"]:
        return int(row[f"{side}_instances"]) * layout.gpus_per_replica
    return None


def score_deployments(cat: Catalogue) -> pl.DataFrame:
    """One row per published deployment figure: the layout it is put under, its batch and why, the measured value,
    the ceiling's and the prediction's (where its framework has a fit and its batch is printed), the share of the
    ceiling, the prediction's error, and why a row is not scored (`unscored`)."""
    out = []
    for row in cat.deployments.iter_rows(named=True):
        out.append(_score(cat, row))
    return pl.DataFrame(out, infer_schema_length=None)


def _score(cat: Catalogue, row: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": row["id"],
        "campaign": row["campaign"],
        "source_url": row["source_url"],
        "gpu": row["gpu"],
        "model": row["model"] or row["model_name"],
        "metric": row["metric"],
        "measured": row["value"],
        "unit": row["unit"],
        "layout": None,
        "batch": None,
        "batch_basis": None,
        "ceiling": None,
        "predicted": None,
        "share_of_ceiling": None,
        "predicted_error": None,
        "cause": row["cause"],
        "unscored": None,
    }

    def unscored(why: str) -> dict[str, Any]:
        return {**base, "unscored": why}

    if not row["gpu"]:
        return unscored("its accelerator is not in the catalogue")
    if not row["model"]:
        return unscored(f"its model ({row['model_name']}) is not in the catalogue")
    metric = row["metric"]
    if metric == "total_tokens_per_s_per_gpu":
        return unscored("total (input + output) tokens over both pools' GPUs: no one pool's figure")
    if metric == "ttft":
        return unscored("a served time to first token: its queueing depends on the pools' sizing, not printed")
    prefill = metric.startswith("input_")
    m = cat.model_index[row["model"]]
    moe = moe_layers(cat, m) > 0
    layout = _layout(row, prefill, moe)
    if layout is None:
        return unscored(f"the {'prefill' if prefill else 'decode'} instance's layout is not printed")
    kv = row["kv"] or "bf16"
    framework = _framework(row["framework"])
    sc = Scenario(gpu=row["gpu"], model=row["model"], weights=_weights(cat, row), kv=kv, framework=framework or "vLLM")
    problems = check(cat, sc, layout)
    if problems:
        return unscored("; ".join(problems))
    prompt = row["input_tokens"] or 0
    if not prompt:
        return unscored("its prompt length is not printed")
    base["layout"] = layout.label
    if prefill:
        batch = max(1, math.ceil(PREFILL_TOKENS / prompt))
        sc = sc.at(prompt=prompt, context=0, batch=batch)
        basis = f"{PREFILL_TOKENS:,} prompt tokens a step"
    else:
        sc = sc.at(context=prompt + (row["output_tokens"] or 0) // 2, prompt=prompt)
        held = layout_memory(cat, sc, layout).max_batch
        instances = None
        if row["decode_instances"]:
            instances = int(row["decode_instances"])
        elif row["decode_pool_gpus"]:
            instances = max(1, int(row["decode_pool_gpus"]) // layout.gpus_per_replica)
        if row["batch_per_gpu"]:
            batch, basis = int(row["batch_per_gpu"]) * layout.gpus_per_replica, "printed per GPU"
        elif row["concurrency"] and instances:
            batch, basis = max(1, round(row["concurrency"] / instances)), f"concurrency / {instances} instance(s)"
        elif math.isnan(held) or held < 1:
            return unscored("the layout holds no sequence at this context")
        else:
            batch, basis = int(held), "not printed: the bound, the largest batch the layout holds"
        sc = sc.at(batch=batch)
    base["batch"], base["batch_basis"] = sc.batch, basis
    gpus = layout.gpus_per_replica
    ceiling_step = layout_step(cat, sc, layout, prefill=prefill)
    predicted_step = (
        layout_step(cat, sc, layout, prefill=prefill, predictor=cat.predictor)
        if (framework and cat.predictor is not None and basis != "not printed: the bound, the largest batch the layout holds")
        else None
    )

    def figure(step: Any) -> float | None:
        per_gpu = step.tokens_per_s / gpus
        if metric.endswith("_per_gpu"):
            return float(per_gpu)
        if metric.endswith("_per_node"):
            return float(per_gpu * row["gpus_per_node"]) if row["gpus_per_node"] else None
        if metric.endswith("_total"):
            pool = _pool_gpus(row, layout, prefill)
            return float(per_gpu * pool) if pool else None
        if metric == "output_tokens_per_s_per_user":
            return float(1.0 / step.time_s)
        scale = 1e3 if row["unit"] == "ms" else 1.0
        return float(step.time_s * scale)

    ceiling = figure(ceiling_step)
    if ceiling is None:
        return unscored("the node or pool size its figure is of is not printed")
    base["ceiling"] = ceiling
    measured = float(row["value"])
    share = ceiling / measured if metric in _TIMES else measured / ceiling
    base["share_of_ceiling"] = share
    if predicted_step is not None:
        predicted = figure(predicted_step)
        base["predicted"] = predicted
        if predicted:
            base["predicted_error"] = abs(predicted / measured - 1.0)
    mtp = (row["mtp"] or "").lower()
    if share > 1.0 and not base["cause"] and (mtp.startswith("on") or mtp.startswith("mtp")):
        base["cause"] = MTP_CAUSE
    return base
