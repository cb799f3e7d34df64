"""Deployments past one tensor-parallel group: a layout's step on each GPU, its communication and its memory.

A replica of the model (one engine instance) runs on `gpus_per_replica = tp x dp_attention x pp` GPUs:

- **tensor parallel** `tp`: each attention group's weights and heads split `tp` ways, two all-reduces per layer of
  its tokens' activations over the scale-up link (the ceiling's communication, core.model.ceilings.comm_seconds);
- **attention data parallel** `dp_attention`: that many attention groups, each with its own share of the batch and
  its own KV cache (for MLA models whose one latent KV head tensor parallelism cannot shard);
- **expert parallel**: the routed experts spread over the stage's `tp x dp_attention` GPUs, each token sent to its
  top-k experts' GPUs and back (dispatch and combine: two all-to-alls per MoE layer of tokens x k x hidden), with
  the hottest GPU's share of the expert work `imbalance` times the mean; without it the experts are split like
  every matmul (and, past one attention group, the MoE's tokens all-reduced over the stage);
- **pipeline parallel** `pp`: the layers in `pp` stages, the running batch in `pp` micro-batches so that every
  stage is busy; each stage sends its micro-batch's activations to the next;
- **data parallel** `replicas`: independent copies.

Each GPU's work is the engine's (core.model.engine.operation_work), divided as the layout divides it, and timed per
operation at the roofs, max(bytes / B, FLOPs / P), or at the predicted model's achieved rates and overheads
(core.model.predicted) when parameters are given. A group of GPUs inside the accelerator's scale-up domain talks over
the scale-up link (its one-way half); a group past it sends the share of its traffic bound for other domains over the
scale-out fabric (`scaleout_bytes_per_s`, per GPU and direction), the two at once, so the slower sets the time. Every
transfer pays the published small-message latency of the accelerator (`allreduce_latency_s`).

Approximations, stated: the embedding and lm_head are spread over the stages like the layers (a stage's time is the
mean stage's); dispatch sends each token's activations once per expert it is routed to (no de-duplication per GPU);
a tensor-parallel attention group splits its tokens before dispatch (each GPU dispatches batch / stage GPUs tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue.catalogue import Catalogue
from core.catalogue.operations import KINDS
from core.model import predicted as pm
from core.model.ceilings import ScenarioArrays, kv_elements_per_sequence, scenario_parameters, scenario_steps
from core.model.engine import Steps, model_table, operation_work
from core.model.scenario import Scenario

Array = npt.NDArray[np.float64]

#: The hottest GPU's routed-expert work over the mean, under expert parallelism, by default: 1 + 0.109, TensorRT-LLM's
#: measured imbalance ratio (max - mean) / mean of routed tokens by rank with its offline EP load balancer (DeepSeek-R1,
#: EP 32 on GB200, 9 slots per rank), Table 1 of "Scaling Expert Parallelism in TensorRT-LLM (Part 1)", 2025-06-05,
#: https://github.com/NVIDIA/TensorRT-LLM/blob/1d263f15a979ef2902c60de3f6238bcc0952bb29/docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md
#: (read 2026-12-03). Without the balancer the same table prints 1.564 (2.564 x the mean): `NO_BALANCER_IMBALANCE`.
DEFAULT_IMBALANCE = 1.109
NO_BALANCER_IMBALANCE = 2.564

_MOE = KINDS.index("moe")


class LayoutError(ValueError):
    """A layout that cannot run a model on an accelerator (the message says which bound it breaks)."""


class Layout(BaseModel):
    """How one replica of a model is spread over GPUs, and how many replicas serve together."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(1, ge=1, le=1024, description="tensor-parallel degree of an attention group (within a scale-up domain)")
    dp_attention: int = Field(
        1, ge=1, le=1024, description="attention data-parallel groups in a stage, each with its own batch share and KV"
    )
    expert_parallel: bool = Field(False, description="routed experts spread over the stage's tp x dp_attention GPUs (all-to-all)")
    pp: int = Field(1, ge=1, le=256, description="pipeline stages")
    replicas: int = Field(1, ge=1, le=100_000, description="independent replicas (data parallel)")
    imbalance: float = Field(
        DEFAULT_IMBALANCE, ge=1.0, le=10.0, description="hottest GPU's expert work over the mean, with expert parallelism"
    )

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage: tp x dp_attention."""
        return self.tp * self.dp_attention

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one replica: tp x dp_attention x pp."""
        return self.stage_gpus * self.pp

    @property
    def gpus(self) -> int:
        """Every GPU of the deployment."""
        return self.gpus_per_replica * self.replicas

    @property
    def label(self) -> str:
        """E.g. "TP8", "DP-attention 8 x EP8", "TP4 x PP2 x 3 replicas"."""
        parts = [f"TP{self.tp}"] if self.tp > 1 or (self.dp_attention == 1 and not self.expert_parallel) else []
        if self.dp_attention > 1:
            parts.append(f"DP-attention {self.dp_attention}")
        if self.expert_parallel:
            parts.append(f"EP{self.stage_gpus}")
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        text = " x ".join(parts)
        return text + (f", {self.replicas} replicas" if self.replicas > 1 else "")


@dataclass(frozen=True)
class LayoutStep:
    """One step of a replica under a layout, seconds (a decode step: one token for each of `batch` sequences)."""

    layout: Layout
    batch: float  # sequences in the replica's step
    tokens_per_sequence: float  # new tokens per sequence (1 in decode, the prompt in prefill)
    microbatch: float  # sequences each pipeline stage runs at once
    operations_s: float  # one stage's operations on its busiest GPU, at the roofs or the achieved rates
    memory_s: float  # of which memory-bound operations
    compute_s: float  # and compute-bound ones
    overhead_s: float  # kernels, step and per-sequence overheads of one stage step (0 at the ceiling)
    tp_comm_s: float  # the attention groups' all-reduces, one stage step
    moe_comm_s: float  # dispatch and combine (expert parallel) or the stage's MoE all-reduce, one stage step
    pp_comm_s: float  # one stage-to-stage transfer of a micro-batch
    stage_s: float  # one stage step: operations + overheads + communication
    time_s: float  # a token's time through every stage: pp x (stage + transfer)
    costed: bool  # False where a link figure is missing (that communication is not costed)

    @property
    def tokens_per_s(self) -> float:
        """New tokens per second of the replica: batch x tokens per sequence / time."""
        return self.batch * self.tokens_per_sequence / self.time_s

    @property
    def bound(self) -> str:
        """Which term dominates the stage step: memory, compute or communication."""
        comm = self.tp_comm_s + self.moe_comm_s + self.pp_comm_s
        if comm > max(self.memory_s, self.compute_s):
            return "communication"
        return "memory" if self.memory_s >= self.compute_s else "compute"


@dataclass(frozen=True)
class LayoutMemory:
    """Bytes on the fullest GPU of a replica under a layout."""

    weight_bytes: float  # its share of the weights (attention side / tp / pp, experts / stage GPUs / pp)
    kv_bytes_per_sequence: float  # one sequence's KV cache on the GPU that holds it
    capacity_bytes: float  # the GPU's memory less the reserve
    max_batch: float  # sequences a replica holds at the context (NaN: no KV to hold)

    @property
    def fits(self) -> bool:
        """The weights fit with room for at least one sequence."""
        return bool(self.max_batch >= 1) if not math.isnan(self.max_batch) else self.weight_bytes <= self.capacity_bytes


def check(cat: Catalogue, scenario: Scenario, layout: Layout) -> list[str]:
    """What is wrong with running `scenario`'s model on its accelerator under `layout` (empty: it can run)."""
    g = cat.gpu_index[scenario.gpu]
    m = cat.model_index[scenario.model]
    domain = float(cat.hardware.scaleup_domain[g])
    problems: list[str] = []
    if not math.isnan(domain) and layout.tp > domain:
        problems.append(f"tensor parallel {layout.tp} is past the {scenario.gpu} scale-up domain of {domain:.0f} GPUs")
    if layout.expert_parallel and moe_layers(cat, m) == 0:
        problems.append(f"expert parallel needs a mixture-of-experts model; {scenario.model} has no routed experts")
    layers = int(cat.model_arrays["num_layers"][m])
    if layout.pp > layers:
        problems.append(f"{layout.pp} pipeline stages for {layers} layers")
    if layout.expert_parallel and moe_layers(cat, m) > 0:
        experts = float(model_table(cat.ops_matrix, m).experts[0, _moe_columns(cat, m)].max())
        if layout.stage_gpus > experts:
            problems.append(f"expert parallel over {layout.stage_gpus} GPUs for {experts:.0f} experts")
    return problems


def _moe_columns(cat: Catalogue, model: int) -> npt.NDArray[np.intp]:
    return np.flatnonzero(model_table(cat.ops_matrix, model).kind[0] == _MOE)


def moe_layers(cat: Catalogue, model: int) -> float:
    """Layers with routed experts in the model at catalogue row `model` (0: a dense model)."""
    table = model_table(cat.ops_matrix, model)
    columns = _moe_columns(cat, model)
    return float(table.layers[0, columns].max()) if len(columns) else 0.0


def link_seconds(cat: Catalogue, gpu: int, group: int, message_bytes: float) -> tuple[float, bool]:
    """(seconds, costed) to move `message_bytes` out of each GPU of a group of `group` GPUs to the others, spread evenly:
    inside the scale-up domain over the link's one-way half, the share bound for other domains over the scale-out
    fabric at the same time (the slower sets the time). No latency (the callers add it per transfer)."""
    if group <= 1 or message_bytes <= 0:
        return 0.0, True
    hw = cat.hardware
    one_way = float(hw.scaleup_bytes_per_s[gpu]) / 2.0
    domain = float(hw.scaleup_domain[gpu])
    domain = group if math.isnan(domain) else min(domain, group)
    outside = (group - domain) / (group - 1.0)
    inside_s = message_bytes * (1.0 - outside) / one_way if outside < 1.0 else 0.0
    out_s = 0.0
    if outside > 0:
        scaleout = float(hw.scaleout_bytes_per_s[gpu])
        if math.isnan(scaleout):
            return (0.0 if math.isnan(inside_s) else inside_s), False
        out_s = message_bytes * outside / scaleout
    if math.isnan(inside_s):
        return out_s, False
    return max(inside_s, out_s), True


def _latency(cat: Catalogue, gpu: int) -> float:
    value = float(cat.hardware.allreduce_latency_s[gpu])
    return 0.0 if math.isnan(value) else value


def layout_step(
    cat: Catalogue,
    scenario: Scenario,
    layout: Layout,
    *,
    prefill: bool = False,
    predictor: pm.Predictor | None = None,
) -> LayoutStep:
    """One step of a replica of `scenario` under `layout`: a decode step of `scenario.batch` sequences at its context,
    or (`prefill`) the prefill of `scenario.batch` prompts of `scenario.prompt` tokens. At the roofs (the ceiling,
    derated by the scenario's efficiencies, plus its overhead per step), or, with `predictor`, at the scenario's
    framework's achieved rates and overheads. `scenario.num_gpus` is ignored: the layout sets the GPUs."""
    s = ScenarioArrays.of(cat, [scenario])
    st = scenario_steps(cat, s)
    g, m = int(s.gpu[0]), int(s.model[0])
    base = st.prefill if prefill else st.decode
    q = float(base.q[0])
    microbatches = min(layout.pp, max(scenario.batch, 1))
    micro = scenario.batch / microbatches
    attention_batch = micro / layout.dp_attention
    steps = Steps.concat(
        replace(base, batch=np.array([attention_batch]), num_gpus=np.array([float(layout.tp)])),
        replace(base, batch=np.array([micro]), num_gpus=np.array([1.0])),
    )
    table = model_table(cat.ops_matrix, m)
    work = operation_work(table, steps)
    is_moe = table.kind[0] == _MOE
    real = table.kind[0] >= 0
    stage = float(layout.stage_gpus)
    spread = layout.imbalance / stage if layout.expert_parallel else 1.0 / stage
    flops = np.where(is_moe, work.flops[1] * spread, work.flops[0] / layout.tp)
    kv = (work.kv_read_bytes + work.kv_write_bytes) / work.kv_shard
    nbytes = np.where(
        is_moe, (work.weight_bytes[1] + work.act_bytes[1]) * spread, (work.weight_bytes[0] + work.act_bytes[0]) / layout.tp + kv[0]
    )
    flops, nbytes = flops / layout.pp, nbytes / layout.pp
    classes = pm.CLASS_BY_CODE[np.maximum(table.kind[0], 0)]
    bandwidth, peak = float(cat.hardware.bandwidth_bytes_per_s[g]), float(st.peak[0]) / scenario.eff_compute
    if predictor is None:
        eta_mem = np.full(len(pm.CLASSES), scenario.eff_bandwidth)
        eta_cmp = np.full(len(pm.CLASSES), scenario.eff_compute)
        kernel_s = step_s = sequence_s = 0.0
        fixed_s, eta_in, eta_out = scenario.overhead_s, 1.0, 1.0
    else:
        par = scenario_parameters(cat, s, predictor)[0]
        c = len(pm.CLASSES)
        eta_mem, eta_cmp = par[:c], par[c : 2 * c]
        P = pm.P
        kernel_s, step_s, sequence_s = par[P["overhead_kernel_s"]], par[P["overhead_step_s"]], par[P["overhead_sequence_s"]]
        fixed_s, eta_in, eta_out = 0.0, par[P["eta_comm"]], par[P["eta_comm_out"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        memory = np.where(real, nbytes / (bandwidth * eta_mem[classes]), 0.0)
        compute = np.where(real & (flops > 0), flops / (peak * eta_cmp[classes]), 0.0)
    compute = np.nan_to_num(compute)
    mem_side = memory >= compute
    memory_s, compute_s = float(memory[mem_side].sum()), float(compute[~mem_side].sum())
    kernels = float(table.layers[0, real].sum()) / layout.pp
    overhead = kernels * kernel_s + step_s + micro * sequence_s + fixed_s

    hidden = float(cat.model_arrays["hidden_size"][m])
    act = float(base.act_bytes[0])
    layers = float(cat.model_arrays["num_layers"][m]) / layout.pp
    routed_layers = moe_layers(cat, m) / layout.pp
    latency = _latency(cat, g)
    domain = float(cat.hardware.scaleup_domain[g])
    beyond_stage = not math.isnan(domain) and layout.stage_gpus > domain
    costed = True
    # the attention groups' all-reduces: two per layer, or one per MoE layer where the MoE's own exchange replaces it
    tp_comm = 0.0
    if layout.tp > 1:
        own_moe = layout.expert_parallel or layout.dp_attention > 1
        calls = 2.0 * layers - (routed_layers if own_moe else 0.0)
        message = attention_batch * q * hidden * act
        ring, ok = link_seconds(cat, g, layout.tp, 2.0 * (layout.tp - 1.0) / layout.tp * message)
        tp_comm = calls * (ring + latency)
        costed &= ok
    moe_comm = 0.0
    if routed_layers > 0 and layout.stage_gpus > 1 and (layout.expert_parallel or layout.dp_attention > 1):
        if layout.expert_parallel:  # dispatch and combine: this GPU's tokens x k copies, the others' share leaves it
            top_k = float(table.top_k[0, is_moe].max())
            sent = micro * q / stage * top_k * hidden * act * (stage - 1.0) / stage
            one, ok = link_seconds(cat, g, layout.stage_gpus, sent)
            moe_comm = routed_layers * 2.0 * (one + latency)
        else:  # the experts split like a matmul over the stage: the stage's tokens all-reduced
            message = micro * q * hidden * act
            one, ok = link_seconds(cat, g, layout.stage_gpus, 2.0 * (stage - 1.0) / stage * message)
            moe_comm = routed_layers * (one + latency)
        costed &= ok
    pp_comm = 0.0
    if layout.pp > 1:
        beyond = not math.isnan(domain) and layout.gpus_per_replica > domain
        message = micro * q * hidden * act / layout.stage_gpus  # each GPU of a stage sends its share to its peer
        if beyond:
            out = float(cat.hardware.scaleout_bytes_per_s[g])
            costed &= not math.isnan(out)
            pp_comm = (0.0 if math.isnan(out) else message / out) + latency
        else:
            pp_comm = message / (float(cat.hardware.scaleup_bytes_per_s[g]) / 2.0) + latency
    comm_in = tp_comm + (0.0 if beyond_stage else moe_comm)
    comm_out = moe_comm if beyond_stage else 0.0
    stage_s = memory_s + compute_s + overhead + comm_in / eta_in + comm_out / eta_out
    return LayoutStep(
        layout=layout,
        batch=float(scenario.batch),
        tokens_per_sequence=q,
        microbatch=micro,
        operations_s=memory_s + compute_s,
        memory_s=memory_s,
        compute_s=compute_s,
        overhead_s=overhead,
        tp_comm_s=tp_comm / eta_in,
        moe_comm_s=moe_comm / (eta_out if beyond_stage else eta_in),
        pp_comm_s=pp_comm / (eta_out if layout.gpus_per_replica > (domain if not math.isnan(domain) else math.inf) else eta_in),
        stage_s=stage_s,
        time_s=layout.pp * (stage_s + pp_comm / eta_in) if layout.pp > 1 else stage_s,
        costed=costed,
    )


def layout_memory(cat: Catalogue, scenario: Scenario, layout: Layout) -> LayoutMemory:
    """The fullest GPU of a replica: its weights (the attention side split `tp` ways and replicated over the attention
    groups, the routed experts over the stage's GPUs; each stage a `pp`-th of the layers), one sequence's KV cache
    (a group's sequences split by tensor parallelism where the KV heads allow), and the batch the replica holds."""
    s = ScenarioArrays.of(cat, [scenario])
    g, m = int(s.gpu[0]), int(s.model[0])
    table = model_table(cat.ops_matrix, m)
    is_moe = table.kind[0] == _MOE
    wb = float(s.weight_bytes[0])
    total = float(cat.model_arrays["total_params"][m]) * wb
    experts = float((table.params[0] * table.experts[0] * table.layers[0])[is_moe].sum()) * wb
    weights = ((total - experts) / layout.tp + experts / layout.stage_gpus) / layout.pp
    replicated = bool(cat.model_arrays["kv_replicated"][m] == 1)
    kv_heads = float(cat.model_arrays["kv_heads"][m])
    shard = 1.0 if replicated else min(float(layout.tp), kv_heads)
    kv_seq = float(kv_elements_per_sequence(cat, s.model, s.number("context"))[0]) * float(s.kv_bytes[0]) / shard / layout.pp
    capacity = float(cat.hardware.memory_bytes[g]) * (1.0 - scenario.reserve_fraction)
    # each attention group holds its own sequences: a replica holds dp_attention groups' worth (no KV: no limit, NaN)
    max_batch = float(math.floor(max(capacity - weights, 0.0) / kv_seq) * layout.dp_attention) if kv_seq > 0 else math.nan
    return LayoutMemory(weights, kv_seq, capacity, max_batch)


def serving_power_w(cat: Catalogue, gpu: str) -> tuple[float, str]:
    """(W, basis) one GPU of `gpu` draws while it serves: the median of the published per-GPU serving power figures of
    that accelerator (core.catalogue.serving_power: a GPU's mean draw, or a row's GPUs' sum over their count) where any
    is printed, else its board power (TDP), the upper bound the datasheet allows (NaN: no power figure)."""
    rows = cat.serving_power.filter(pl.col("gpu") == gpu)
    per_gpu = [
        r["value"] if r["metric"] == "gpu_power_w" else r["value"] / r["num_gpus"]
        for r in rows.iter_rows(named=True)
        if r["metric"] in ("gpu_power_w", "system_power_w")
    ]
    if per_gpu:
        publishers = sorted({str(p).split(" (")[0].split(" - ")[0] for p in rows["publisher"].to_list()})
        return float(np.median(per_gpu)), f"measured: the median of {len(per_gpu)} published serving figures ({', '.join(publishers)})"
    power = float(cat.hardware.power_w[cat.gpu_index[gpu]])
    return power, "board power (TDP): the upper bound, no serving figure published"


def energy_per_token_j(cat: Catalogue, gpu: str, gpus: int, tokens_per_s: float) -> float:
    """Joules per output token: every GPU of the deployment at the power it is measured to draw while serving (the
    median of the published figures, `serving_power_w`), else at its board power, the whole time. Tokens per kWh =
    3.6e6 / this."""
    power, _ = serving_power_w(cat, gpu)
    return gpus * power / tokens_per_s if tokens_per_s > 0 else math.nan
