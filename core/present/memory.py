"""The engine's start-up allocation of one scenario, as the calculator, the report and the CLI show it."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.allocation import ENGINES, GIB, Allocation, AllocationError, allocate
from core.model.scenario import Scenario


@dataclass(frozen=True)
class EngineMemory:
    """What the scenario's engine would size at start-up (`allocation`), or why it cannot be shown (`reason`)."""

    allocation: Allocation | None
    reason: str | None
    #: one sentence: the KV tokens, the pool in GiB per GPU and the concurrency at the scenario's context
    headline: str
    #: one row per term: GiB per GPU, whether the engine subtracts it, why, the source
    terms: pl.DataFrame


def engine_memory(cat: Catalogue, sc: Scenario) -> EngineMemory:
    """The start-up allocation of `sc.framework` (vLLM or SGLang at its newest read release and its own defaults) for the
    scenario's accelerator, GPU count, model and formats; the concurrency is counted at the scenario's context."""
    empty = pl.DataFrame(schema={"Term": pl.Utf8, "GiB per GPU": pl.Float64, "Subtracted": pl.Utf8, "Why": pl.Utf8, "Source": pl.Utf8})
    if sc.framework not in ENGINES:
        reason = (
            f"The engine's own start-up sizing is modelled for {' and '.join(ENGINES)}; {sc.framework} sizes its cache its own way "
            "(pick vLLM or SGLang as the framework in the sidebar to see it)."
        )
        return EngineMemory(None, reason, reason, empty)
    rec = cat.model(sc.model)
    max_len = rec.max_context or sc.context  # a config with no context length: the engine must be told one
    if sc.context > max_len:
        reason = (
            f"{sc.framework} refuses a context of {sc.context:,} tokens for {rec.name}: its config allows {max_len:,} "
            "(max_model_len cannot exceed it)."
        )
        return EngineMemory(None, reason, reason, empty)
    try:
        a = allocate(cat, sc.gpu, sc.num_gpus, sc.model, weights=sc.weights, kv=sc.kv, engine=sc.framework,
                     max_model_len=max_len, concurrency_tokens=sc.context)  # fmt: skip
    except AllocationError as err:
        reason = f"{sc.framework}'s start-up sizing cannot be computed here: {err}."
        return EngineMemory(None, reason, reason, empty)
    s = a.settings
    fraction = "gpu_memory_utilization" if s.engine == "vLLM" else "mem_fraction_static"
    if a.kv_cache_bytes <= 0:
        headline = (
            f"{s.engine} {s.version} at its defaults ({fraction} {s.memory_fraction:g}) would not start: the weights, activation "
            f"peak and the rest take {sum(t.bytes for t in a.terms if t.subtracted) / GIB:,.2f} GiB of a {a.budget_bytes / GIB:,.2f} GiB "
            "budget per GPU, leaving nothing for the KV cache."
        )
    else:
        headline = (
            f"{s.engine} {s.version} at its defaults ({fraction} {s.memory_fraction:g}, max_model_len {s.max_model_len:,}"
            f"{'' if rec.max_context else ': the config names no context length, so the scenario context'}) "
            f"would hold **{a.kv_cache_tokens:,} KV-cache tokens** ({a.kv_cache_bytes / GIB:,.2f} GiB per GPU): at most "
            f"**{a.max_concurrency:,.1f} sequences of {a.concurrency_tokens:,} tokens** at once."
        )
    terms = pl.DataFrame(
        {
            "Term": [t.name for t in a.terms],
            "GiB per GPU": [round(t.bytes / GIB, 3) for t in a.terms],
            "Subtracted": ["yes" if t.subtracted else "no" for t in a.terms],
            "Why": [t.explanation for t in a.terms],
            "Source": [t.source for t in a.terms],
        },
        schema=empty.schema,
    )
    return EngineMemory(a, None, headline, terms)
