"""Plans for a request rate: aggregated replicas, or disaggregated prefill and decode pools, priced, with energy.

A workload is a request rate (Poisson) of prompts and outputs of given lengths, with p90 targets for the time to first
token and the time per output token. A plan serves it:

- **aggregated**: replicas of one layout (core.plan.layouts), each batching continuously (its prompts' chunks share
  steps with the running decode);
- **disaggregated** (xPyD): a pool of prefill instances and a pool of decode instances, each of its own accelerator,
  count and layout; each request's KV cache moves from its prefill instance to a decode instance over the scale-out
  fabric (`kv_transfer_s`).

The search (`plan_deployments`) sizes each candidate in closed form (a decode instance's largest batch whose step
meets the TPOT target; instances for the rate at a stated utilisation, `UTILISATION`), keeps the cheapest per
accelerator and mode, and then runs the load simulation (core.plan.load) on each kept plan for its p50/p90/p99,
adding instances until the simulated p90s meet the targets. Step times are the predicted model's for the framework
(core.model.predicted) where the catalogue carries a fit, else the ceiling's; every plan says which (`basis`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue.catalogue import Catalogue
from core.model import predicted as pm
from core.model.ceilings import ScenarioArrays, kv_elements_per_sequence, scenario_parameters
from core.model.scenario import Scenario
from core.plan import costs
from core.plan import load as ld
from core.plan.layouts import Layout, check, energy_per_token_j, layout_memory, layout_step, link_seconds, moe_layers, serving_power_w

#: Replica sizes the search tries (GPUs per instance), and the most GPUs one pool may hold by default.
SIZES = (1, 2, 4, 8, 16, 32, 64)
#: Batches a decode table is computed at (the steps between are interpolated).
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
#: The share of an instance's capacity the closed-form sizing fills before the simulation checks the percentiles.
UTILISATION = 0.8
#: Requests the simulation of each kept plan runs.
SIMULATED = 4000


@dataclass(frozen=True)
class Check:
    """How a kept plan is checked: by simulation or not, the Poisson stream's seed, or a trace's requests instead."""

    simulate: bool = True
    seed: int = 0
    trace: ld.Requests | None = None


class Workload(BaseModel):
    """Requests arriving at a rate, with their lengths and the service targets (p90)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_per_s: float = Field(10.0, gt=0, le=100_000, description="requests per second (Poisson)")
    prompt: int = Field(2000, ge=1, le=1_000_000, description="prompt tokens per request")
    output: int = Field(500, ge=1, le=1_000_000, description="output tokens per request")
    max_ttft_p90_s: float = Field(2.0, gt=0, le=3600, description="p90 time to first token, s")
    max_tpot_p90_s: float = Field(0.05, gt=0, le=60, description="p90 time per output token, s")
    prefix_hit: float = Field(0.0, ge=0, lt=1, description="share of each prompt found in the prefix cache")


@dataclass(frozen=True)
class Pool:
    """Instances of one layout on one accelerator, and the batch each runs at."""

    gpu: str
    layout: Layout
    instances: int
    batch: int  # the decode batch each instance runs at most (prefill pools: 1 prompt at a time)
    usd_per_gpu_hour: float | None

    @property
    def gpus(self) -> int:
        """Every GPU of the pool."""
        return self.instances * self.layout.gpus_per_replica

    @property
    def label(self) -> str:
        """E.g. "3 x 8 H200 SXM (TP8)"."""
        return f"{self.instances} x {self.layout.gpus_per_replica} {self.gpu} ({self.layout.label})"


@dataclass(frozen=True)
class Plan:
    """One way to serve the workload: aggregated (`decode` only) or disaggregated (`prefill` and `decode` pools)."""

    mode: str  # "aggregated" or "disaggregated"
    model: str
    decode: Pool
    prefill: Pool | None
    basis: str  # which step times: "predicted (vLLM)" or "ceiling"
    kv_transfer_s: float  # per request, disaggregated only
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    output_tokens_per_s: float  # the workload's: rate x output
    usd_per_hour: float | None
    joules_per_token: float
    energy_share: float | None  # energy at board power x PUE x $/kWh over the price paid per GPU-hour
    meets: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    power_basis: str = ""  # each accelerator's W per GPU and where it comes from (core.plan.layouts.serving_power_w)
    #: what the simulation ran on: the decode (or aggregated) instances' step times, the prefill pool's, the KV
    #: transfer (s), the request's online overhead (s) and the prefix-cache share
    steps: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    @property
    def gpus(self) -> int:
        """Every GPU the plan uses."""
        return self.decode.gpus + (self.prefill.gpus if self.prefill else 0)

    @property
    def split(self) -> str:
        """E.g. "3 prefill x 8 h200-sxm + 5 decode x 8 h200-sxm", or "4 x 8 h200-sxm (TP8)"."""
        if self.prefill is None:
            return self.decode.label
        return f"{self.prefill.instances} prefill x {self.prefill.layout.gpus_per_replica} {self.prefill.gpu} ({self.prefill.layout.label}) + {self.decode.instances} decode x {self.decode.layout.gpus_per_replica} {self.decode.gpu} ({self.decode.layout.label})"

    @property
    def usd_per_million_tokens(self) -> float | None:
        """$ per million output tokens at the workload's rate."""
        if self.usd_per_hour is None:
            return None
        return self.usd_per_hour / (self.output_tokens_per_s * 3600.0) * 1e6

    def record(self) -> dict[str, Any]:
        """The plan as plain data (the CLI's JSON, the page's table)."""
        return {
            "mode": self.mode,
            "split": self.split,
            "model": self.model,
            "decode_gpu": self.decode.gpu,
            "decode_layout": self.decode.layout.label,
            "decode_instances": self.decode.instances,
            "decode_batch": self.decode.batch,
            "prefill_gpu": self.prefill.gpu if self.prefill else None,
            "prefill_layout": self.prefill.layout.label if self.prefill else None,
            "prefill_instances": self.prefill.instances if self.prefill else None,
            "gpus": self.gpus,
            "basis": self.basis,
            "kv_transfer_s": self.kv_transfer_s,
            "ttft_p50_s": self.ttft_p50_s,
            "ttft_p90_s": self.ttft_p90_s,
            "ttft_p99_s": self.ttft_p99_s,
            "tpot_p50_s": self.tpot_p50_s,
            "tpot_p90_s": self.tpot_p90_s,
            "tpot_p99_s": self.tpot_p99_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "usd_per_hour": self.usd_per_hour,
            "usd_per_million_tokens": self.usd_per_million_tokens,
            "joules_per_token": self.joules_per_token,
            "tokens_per_kwh": 3.6e6 / self.joules_per_token if self.joules_per_token > 0 else None,
            "energy_share": self.energy_share,
            "power_basis": self.power_basis,
            "meets": self.meets,
            "notes": list(self.notes),
        }


def candidate_layouts(cat: Catalogue, base: Scenario, *, max_gpus: int = 64) -> list[Layout]:
    """The layouts one instance may take on `base`'s accelerator, each that runs and holds the model with room for a
    batch: tensor parallel within the scale-up domain; past it, tensor parallel x pipeline stages; and, for a MoE
    model, attention data parallel with the experts spread over the GPUs (expert parallel)."""
    g = cat.gpu_index[base.gpu]
    domain = float(cat.hardware.scaleup_domain[g])
    domain_n = int(domain) if not math.isnan(domain) else 1
    moe = moe_layers(cat, cat.model_index[base.model]) > 0
    out: list[Layout] = []
    for n in (s for s in SIZES if s <= max_gpus):
        tries = []
        if n <= domain_n:
            tries.append(Layout(tp=n))
        elif n % domain_n == 0:
            tries.append(Layout(tp=domain_n, pp=n // domain_n))
        if moe and n > 1:
            tries.append(Layout(tp=1, dp_attention=n, expert_parallel=True))
        for layout in tries:
            if not check(cat, base, layout) and layout_memory(cat, base, layout).fits:
                out.append(layout)
    return out


@dataclass(frozen=True)
class _Tables:
    """A layout's decode step time by batch and its prefill time of one prompt, seconds."""

    batches: np.ndarray
    decode_s: np.ndarray
    prefill_s: float  # one prompt (its chunks), alone
    chunk_s: float  # one chunk of `chunk` tokens, alone
    chunk: int
    max_batch: int


def _tables(cat: Catalogue, base: Scenario, layout: Layout, workload: Workload, predictor: pm.Predictor | None) -> _Tables:
    context = workload.prompt + workload.output // 2
    sc = base.at(context=context, prompt=max(1, round(workload.prompt * (1.0 - workload.prefix_hit))), depth=0)
    mem = layout_memory(cat, sc, layout)
    top = int(mem.max_batch) if not math.isnan(mem.max_batch) else BATCHES[-1]
    batches = [b for b in BATCHES if b <= top] or [1]
    if batches[-1] < top and top <= BATCHES[-1]:
        batches.append(top)
    decode = np.array([layout_step(cat, sc.at(batch=b), layout, predictor=predictor).time_s for b in batches])
    g = cat.gpu_index[base.gpu]
    chunk = pm.prefill_chunk(base.framework, float(cat.hardware.memory_bytes[g]), cat.hardware.names[g]) if predictor else math.inf
    chunk_n = int(min(chunk, sc.prompt)) if not math.isinf(chunk) else sc.prompt
    reps = math.ceil(sc.prompt / chunk_n)
    one = layout_step(cat, sc.at(batch=1, prompt=chunk_n), layout, prefill=True, predictor=predictor).time_s
    return _Tables(np.array(batches, dtype=float), decode, one * reps, one, chunk_n, max(batches))


def kv_transfer_s(cat: Catalogue, base: Scenario, workload: Workload, prefill: Pool, decode: Pool) -> tuple[float, bool]:
    """(seconds, costed) to move one request's KV cache (its prompt's) from a prefill instance to a decode instance: its
    bytes over the scale-out fabric of the prefill instance's GPUs, each sending its share at once, plus the latency."""
    s = ScenarioArrays.of(cat, [base.at(context=workload.prompt)])
    kv = float(kv_elements_per_sequence(cat, s.model, s.number("context"))[0]) * float(s.kv_bytes[0])
    g = cat.gpu_index[prefill.gpu]
    senders = prefill.layout.gpus_per_replica
    out = float(cat.hardware.scaleout_bytes_per_s[g])
    if math.isnan(out):
        seconds, ok = link_seconds(cat, g, 2, kv / senders)
        return seconds, False
    lat = float(cat.hardware.allreduce_latency_s[g])
    return kv / senders / out + (0.0 if math.isnan(lat) else lat), True


def _price(cat: Catalogue, gpu: str, prices: dict[str, float] | None) -> float | None:
    if prices and gpu in prices:
        return prices[gpu]
    return cat.price(gpu).usd


def _step_times(t: _Tables, basis: str) -> ld.StepTimes:
    b = np.arange(0, t.max_batch + 1, dtype=float)
    decode = np.interp(b, t.batches, t.decode_s)
    decode[0] = 0.0
    return ld.StepTimes(
        decode_s=decode,
        chunk_tokens=t.chunk,
        prefill_tokens=np.array([0.0, float(t.chunk)]),
        prefill_s=np.array([0.0, t.chunk_s]),
        basis=basis,
    )


def step_times(cat: Catalogue, sc: Scenario, layout: Layout, workload: Workload) -> ld.StepTimes:
    """The simulator's step times of one instance of `sc`'s model under `layout` at the workload's lengths: the
    framework's predicted ones where the catalogue carries a fit, else the ceiling's (`basis` says which)."""
    predictor = cat.predictor
    basis = f"predicted ({sc.framework})" if predictor is not None else "ceiling"
    return _step_times(_tables(cat, sc, layout, workload, predictor), basis)


def request_overhead_s(cat: Catalogue, sc: Scenario) -> float:
    """What a request served online pays once before its first token (HTTP, tokenisation): the predicted model's
    `overhead_request_s` for the scenario's framework and accelerator, 0 at the ceiling (s)."""
    if cat.predictor is None:
        return 0.0
    par = scenario_parameters(cat, ScenarioArrays.of(cat, [sc]), cat.predictor)[0]
    return float(par[pm.P["overhead_request_s"]])


def _largest_batch(t: _Tables, target_s: float) -> int:
    ok = t.batches[t.decode_s <= target_s]
    return int(ok.max()) if len(ok) else 0


Candidates = list[tuple[Layout, _Tables]]


def candidates(cat: Catalogue, sc: Scenario, workload: Workload, max_gpus: int, predictor: pm.Predictor | None) -> Candidates:
    """Every layout an instance of `sc`'s model may take on its accelerator (up to `max_gpus` GPUs), with its step
    tables at the workload's lengths (they do not depend on the targets, so one set serves every target)."""
    return [(layout, _tables(cat, sc, layout, workload, predictor)) for layout in candidate_layouts(cat, sc, max_gpus=max_gpus)]


def _size_aggregated(found: Candidates, workload: Workload, price: float | None) -> tuple[Layout, _Tables, int, int] | None:
    """The cheapest replicas for the rate: per layout the largest batch whose decode step meets the TPOT target at the
    utilisation, each request holding a slot for its prefill and its share of the decode steps."""
    best: tuple[float, Layout, _Tables, int, int] | None = None
    for layout, t in found:
        batch = _largest_batch(t, workload.max_tpot_p90_s * UTILISATION)
        if batch < 1 or t.prefill_s > workload.max_ttft_p90_s:
            continue
        step = float(np.interp(batch, t.batches, t.decode_s))
        per_request = t.prefill_s + workload.output * step / batch
        instances = max(1, math.ceil(workload.rate_per_s * per_request / UTILISATION))
        score = instances * layout.gpus_per_replica * (price if price is not None else 1.0)
        if best is None or score < best[0]:
            best = (score, layout, t, batch, instances)
    return best[1:] if best is not None else None


def _size_prefill(found: Candidates, workload: Workload, price: float | None, max_gpus: int) -> tuple[Layout, _Tables, int] | None:
    """The cheapest prefill pool: instances enough to prefill the rate's prompts at the utilisation, each prompt alone
    within the TTFT target."""
    best: tuple[float, Layout, _Tables, int] | None = None
    for layout, t in found:
        if layout.gpus_per_replica > max_gpus or t.prefill_s > workload.max_ttft_p90_s * UTILISATION:
            continue
        instances = max(1, math.ceil(workload.rate_per_s * t.prefill_s / UTILISATION))
        score = instances * layout.gpus_per_replica * (price if price is not None else 1.0)
        if best is None or score < best[0]:
            best = (score, layout, t, instances)
    return best[1:] if best is not None else None


def _size_decode(found: Candidates, workload: Workload, price: float | None, max_gpus: int) -> tuple[Layout, _Tables, int, int] | None:
    """The cheapest decode pool: per layout the largest batch whose step meets the TPOT target at the utilisation, and
    instances enough for the rate's decode steps."""
    best: tuple[float, Layout, _Tables, int, int] | None = None
    for layout, t in found:
        batch = _largest_batch(t, workload.max_tpot_p90_s * UTILISATION)
        if layout.gpus_per_replica > max_gpus or batch < 1:
            continue
        step = float(np.interp(batch, t.batches, t.decode_s))
        instances = max(1, math.ceil(workload.rate_per_s * workload.output * step / (batch * UTILISATION)))
        score = instances * layout.gpus_per_replica * (price if price is not None else 1.0)
        if best is None or score < best[0]:
            best = (score, layout, t, batch, instances)
    return best[1:] if best is not None else None


def plan_deployments(
    cat: Catalogue,
    base: Scenario,
    workload: Workload,
    gpus: Sequence[str],
    *,
    modes: Sequence[str] = ("aggregated", "disaggregated"),
    max_gpus: int = 64,
    max_pool_gpus: int = 16,
    prices: dict[str, float] | None = None,
    own: costs.Ownership | None = None,
    simulate: bool = True,
    seed: int = 0,
    found: dict[str, Candidates] | None = None,
    trace: ld.Requests | None = None,
) -> list[Plan]:
    """The cheapest plan per accelerator and mode that serves `workload` with `base`'s model, formats and framework,
    each checked by simulation, the cheapest that meets the targets first. `gpus`: the accelerators to try;
    disaggregated plans put both pools on the same accelerator (`plan_split` pairs two). `max_gpus`: the most GPUs
    one aggregated instance may take (expert parallel up to it); `max_pool_gpus`: the most one disaggregated instance
    may take. Prices ($ per GPU-hour): yours, else the published median rent (None where there is none: such plans
    rank last). `found`: candidates already computed per accelerator (`candidates`), kept between calls. `trace`: the
    requests to simulate instead of a Poisson stream (the workload then gives their mean rate and lengths)."""
    check = Check(simulate, seed, trace)
    predictor = cat.predictor
    basis = f"predicted ({base.framework})" if predictor is not None else "ceiling"
    own = own or costs.Ownership()
    found = {} if found is None else found
    plans: list[Plan] = []
    for gpu in gpus:
        sc = base.at(gpu=gpu)
        if gpu not in found:
            found[gpu] = candidates(cat, sc, workload, max(max_gpus, max_pool_gpus), predictor)
        price = _price(cat, gpu, prices)
        if "aggregated" in modes:
            agg = _size_aggregated([c for c in found[gpu] if c[0].gpus_per_replica <= max_gpus], workload, price)
            if agg is not None:
                layout, t, batch, instances = agg
                pools: list[Pool | None] = [None, Pool(gpu, layout, instances, batch, price)]
                plans.append(_checked(cat, sc, workload, pools, t, None, basis, own, check))
        if "disaggregated" in modes:
            plan = _split(cat, sc, workload, (gpu, found[gpu], price), (gpu, found[gpu], price), max_pool_gpus, basis, own, check)
            if plan is not None:
                plans.append(plan)
    return sorted(plans, key=_rank)


def _rank(plan: Plan) -> tuple[int, float]:
    cost = plan.usd_per_million_tokens
    return (0 if plan.meets else 1, cost if cost is not None else math.inf)


def _cost(cat: Catalogue, pools: Sequence[Pool], tokens_per_s: float, own: costs.Ownership) -> tuple[float | None, float, float | None]:
    """($ per hour, J per output token, energy's share of the price paid) of the pools at the rate: energy at board
    power x PUE x $/kWh (core.plan.costs.energy_usd_per_hour) over the $ per GPU-hour paid."""
    usd = 0.0
    priced = True
    joules = 0.0
    energy_usd = 0.0
    for pool in pools:
        if pool.usd_per_gpu_hour is None:
            priced = False
        else:
            usd += pool.usd_per_gpu_hour * pool.gpus
        joules += energy_per_token_j(cat, pool.gpu, pool.gpus, tokens_per_s)
        power, _ = serving_power_w(cat, pool.gpu)
        energy_usd += costs.energy_usd_per_hour(power, own) * pool.gpus
    share = energy_usd / usd if priced and usd > 0 and energy_usd > 0 else None
    return (usd if priced else None), joules, share


def plan_split(
    cat: Catalogue,
    base: Scenario,
    workload: Workload,
    prefill_gpu: str,
    decode_gpu: str,
    *,
    max_pool_gpus: int = 16,
    prices: dict[str, float] | None = None,
    own: costs.Ownership | None = None,
    simulate: bool = True,
    seed: int = 0,
    trace: ld.Requests | None = None,
) -> Plan | None:
    """The cheapest disaggregated plan with prefill on `prefill_gpu` and decode on `decode_gpu` (None: no layout fits)."""
    predictor = cat.predictor
    basis = f"predicted ({base.framework})" if predictor is not None else "ceiling"
    own = own or costs.Ownership()
    p_sc, d_sc = base.at(gpu=prefill_gpu), base.at(gpu=decode_gpu)
    p = (prefill_gpu, candidates(cat, p_sc, workload, max_pool_gpus, predictor), _price(cat, prefill_gpu, prices))
    d = (decode_gpu, candidates(cat, d_sc, workload, max_pool_gpus, predictor), _price(cat, decode_gpu, prices))
    return _split(cat, d_sc, workload, p, d, max_pool_gpus, basis, own, Check(simulate, seed, trace))


def _split(
    cat: Catalogue,
    sc: Scenario,
    workload: Workload,
    p: tuple[str, Candidates, float | None],
    d: tuple[str, Candidates, float | None],
    max_pool_gpus: int,
    basis: str,
    own: costs.Ownership,
    check: Check,
) -> Plan | None:
    pre = _size_prefill(p[1], workload, p[2], max_pool_gpus)
    dec = _size_decode(d[1], workload, d[2], max_pool_gpus)
    if pre is None or dec is None:
        return None
    prefill = Pool(p[0], pre[0], pre[2], 1, p[2])
    decode = Pool(d[0], dec[0], dec[3], dec[2], d[2])
    return _checked(cat, sc, workload, [prefill, decode], dec[1], pre[1], basis, own, check)


#: TPOT targets (s) the frontier sizes every accelerator and mode at.
FRONTIER_TPOT_S = (0.015, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1, 0.15, 0.2)


def frontier(
    cat: Catalogue,
    base: Scenario,
    workload: Workload,
    gpus: Sequence[str],
    *,
    modes: Sequence[str] = ("aggregated", "disaggregated"),
    max_gpus: int = 64,
    max_pool_gpus: int = 16,
    prices: dict[str, float] | None = None,
    found: dict[str, Candidates] | None = None,
) -> list[dict[str, Any]]:
    """The cost of serving the rate against the interactivity a user sees: each accelerator and mode sized in closed
    form (no simulation) at each TPOT target of FRONTIER_TPOT_S, one point per plan that exists: tokens/s per user
    (1 / the step time it runs at) and $ per million output tokens."""
    points: list[dict[str, Any]] = []
    found = {} if found is None else found
    for target in FRONTIER_TPOT_S:
        at = workload.model_copy(update={"max_tpot_p90_s": target})
        for plan in plan_deployments(
            cat, base, at, gpus, modes=modes, max_gpus=max_gpus, max_pool_gpus=max_pool_gpus, prices=prices, simulate=False, found=found
        ):
            if plan.usd_per_million_tokens is None:
                continue
            points.append(
                {
                    "gpu": plan.decode.gpu,
                    "mode": plan.mode,
                    "series": f"{plan.decode.gpu}, {plan.mode}",
                    "target_tpot_s": target,
                    "tpot_s": plan.tpot_p50_s,
                    "tokens_per_s_per_user": 1.0 / plan.tpot_p50_s,
                    "usd_per_million_tokens": plan.usd_per_million_tokens,
                    "gpus": plan.gpus,
                    "split": plan.split,
                }
            )
    return points


def _checked(
    cat: Catalogue,
    sc: Scenario,
    workload: Workload,
    pools: list[Pool | None],
    decode_t: _Tables,
    prefill_t: _Tables | None,
    basis: str,
    own: costs.Ownership,
    check: Check,
) -> Plan:
    """The plan with its percentiles from the simulation, adding instances (decode, then prefill) until its p90s meet
    the targets (at most 12 tries); without `simulate`, the closed-form sizing's step times as its percentiles."""
    prefill, decode = pools
    assert decode is not None
    notes: list[str] = []
    transfer, costed = (0.0, True)
    if prefill is not None:
        transfer, costed = kv_transfer_s(cat, sc, workload, prefill, decode)
        if not costed:
            notes.append(f"no scale-out figure for {prefill.gpu}: the KV transfer is costed over its scale-up link")
        p_vendor = cat.hardware.vendors[cat.gpu_index[prefill.gpu]]
        d_vendor = cat.hardware.vendors[cat.gpu_index[decode.gpu]]
        if p_vendor != d_vendor:
            notes.append(f"the KV cache crosses vendors ({p_vendor} to {d_vendor}): no engine the app knows moves it between them")
    simulate = check.simulate
    requests = (
        check.trace
        if check.trace is not None
        else ld.poisson_requests(workload.rate_per_s, workload.prompt, workload.output, SIMULATED, check.seed)
    )
    online = request_overhead_s(cat, sc)  # each request's HTTP and tokenisation before its first token
    result: ld.LoadResult | None = None
    d_steps = _step_times(decode_t, basis)
    p_steps = _step_times(prefill_t, basis) if prefill_t is not None else None
    for _ in range(12):
        if not simulate:
            break
        if prefill is None:
            result = ld.simulate(requests, d_steps, replicas=decode.instances, prefix_hit=workload.prefix_hit)
        else:
            assert p_steps is not None
            result = ld.simulate_disaggregated(
                requests,
                p_steps,
                d_steps,
                prefill_instances=prefill.instances,
                decode_instances=decode.instances,
                kv_transfer_s=transfer,
                prefix_hit=workload.prefix_hit,
            )
        ttft_ok = result.percentile("ttft", 90) + online <= workload.max_ttft_p90_s
        tpot_ok = result.percentile("tpot", 90) <= workload.max_tpot_p90_s
        if ttft_ok and tpot_ok:
            break
        if prefill is not None and not ttft_ok:
            prefill = Pool(
                prefill.gpu, prefill.layout, prefill.instances + max(1, prefill.instances // 4), prefill.batch, prefill.usd_per_gpu_hour
            )
        if not tpot_ok or (prefill is None and not ttft_ok):
            decode = Pool(
                decode.gpu, decode.layout, decode.instances + max(1, decode.instances // 4), decode.batch, decode.usd_per_gpu_hour
            )
    tokens = workload.rate_per_s * workload.output
    used = [p for p in (prefill, decode) if p is not None]
    usd, joules, share = _cost(cat, used, tokens, own)
    if result is not None:
        figures = [result.percentile("ttft", q) + online for q in (50, 90, 99)] + [result.percentile("tpot", q) for q in (50, 90, 99)]
    else:
        step = float(np.interp(decode.batch, decode_t.batches, decode_t.decode_s))
        first = (prefill_t.prefill_s if prefill_t is not None else decode_t.prefill_s) + transfer + online
        figures = [first] * 3 + [step] * 3
        notes.append("not simulated: the closed-form sizing's step times")
    meets = figures[1] <= workload.max_ttft_p90_s and figures[4] <= workload.max_tpot_p90_s
    return Plan(
        mode="disaggregated" if prefill is not None else "aggregated",
        model=sc.model,
        decode=decode,
        prefill=prefill,
        basis=basis,
        kv_transfer_s=transfer,
        ttft_p50_s=figures[0],
        ttft_p90_s=figures[1],
        ttft_p99_s=figures[2],
        tpot_p50_s=figures[3],
        tpot_p90_s=figures[4],
        tpot_p99_s=figures[5],
        output_tokens_per_s=tokens,
        usd_per_hour=usd,
        joules_per_token=joules,
        energy_share=share,
        meets=meets,
        notes=tuple(notes),
        power_basis="; ".join(
            f"{gpu}: {serving_power_w(cat, gpu)[0]:,.0f} W per GPU, {serving_power_w(cat, gpu)[1]}"
            for gpu in dict.fromkeys(p.gpu for p in used)
        ),
        steps=(d_steps, p_steps, transfer, online, workload.prefix_hit),
    )


def simulate_plan(plan: Plan, requests: ld.Requests) -> ld.LoadResult:
    """The load simulation of `requests` on the plan's pools as sized (its step times, KV transfer and prefix hits)."""
    d_steps, p_steps, transfer, _, hit = plan.steps
    if plan.prefill is None:
        return ld.simulate(requests, d_steps, replicas=plan.decode.instances, prefix_hit=hit)
    return ld.simulate_disaggregated(
        requests,
        p_steps,
        d_steps,
        prefill_instances=plan.prefill.instances,
        decode_instances=plan.decode.instances,
        kv_transfer_s=transfer,
        prefix_hit=hit,
    )


#: Requests each goodput probe simulates, and the bisection's relative tolerance.
GOODPUT_REQUESTS = 2000
GOODPUT_TOLERANCE = 0.02


def plan_goodput(plan: Plan, workload: Workload, *, count: int = GOODPUT_REQUESTS, seed: int = 0) -> float | None:
    """The highest Poisson rate (requests/s) at which the plan, as sized, still meets both p90 targets in its
    simulation (its online overhead added to every TTFT): doubling or halving from the workload's rate, then
    bisection to GOODPUT_TOLERANCE. None for a plan that was not simulated; 0.0 when even 1/64 of the rate misses."""
    if not plan.steps:
        return None
    online = plan.steps[3]

    def meets(rate: float) -> bool:
        result = simulate_plan(plan, ld.poisson_requests(rate, workload.prompt, workload.output, count, seed))
        return result.meets(workload.max_ttft_p90_s - online, workload.max_tpot_p90_s)

    rate = workload.rate_per_s
    if meets(rate):
        lo, hi = rate, rate * 2.0
        for _ in range(8):
            if not meets(hi):
                break
            lo, hi = hi, hi * 2.0
        else:
            return lo
    else:
        lo, hi = rate / 2.0, rate
        for _ in range(6):
            if meets(lo):
                break
            lo, hi = lo / 2.0, lo
        else:
            return 0.0
    while hi - lo > GOODPUT_TOLERANCE * lo:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo
