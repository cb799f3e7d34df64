"""The predicted model: what an engine reaches, the same operations as the ceiling with achieved rates.

The ceiling times every operation of a step at the datasheet roofs,
max(bytes / B, FLOPs / P). The prediction times the same operations
(core.model.engine.operation_work) at achieved rates:

    t_op  = max(bytes / (B x eta_mem[class]), FLOPs / (P x eta_compute[class]))
    t_step = reps x ( sum of t_op over the step's operations
                      + kernels x overhead_kernel_s          (launch and latency floor of each kernel)
                      + overhead_step_s                      (scheduling, sampling, the host's share)
                      + sequences x overhead_sequence_s      (per sequence in the batch)
                      + comm_in / eta_comm + comm_out / eta_comm_out )

where an operation's class is elementwise (embedding, norms), GEMM (the
projections, MLP and lm_head), MoE (the routed experts) or attention,
`kernels` is the operation rows' layers summed (one kernel per operation
and layer), `reps` the repetitions of the step (a prefill of more tokens
than the engine's chunk runs in chunks: the weights are read once per
chunk, the rest of the work is shared out) and comm_in / comm_out the
tensor-parallel all-reduces within and beyond the accelerator's scale-up
domain at the link's bandwidth with the published latency (the ceiling's
communication term). A request served online also pays
overhead_request_s once (the HTTP and tokenisation path) before its first
token.

Every efficiency lies in (0, 1) and every overhead is positive: the
parameters live on a logit (efficiencies) or log (overheads) scale, theta,
and `parameters` maps them back. They are fitted per accelerator family and
framework by core.evidence.predictor (a hierarchy: each level of `LEVELS`
adds its own shift to theta, so a cell with few measurements borrows from
its vendor and from the global prior); `Predictor` holds a fit and gives
each scenario its parameters. `step_times` is the one function that times a
step at achieved rates: pages, the CLI, the sweep and the fit call it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from core.catalogue.operations import KINDS

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]

#: The operation classes whose efficiencies differ, and the kinds (core.catalogue.operations.KINDS) in each.
CLASSES: tuple[str, ...] = ("elementwise", "gemm", "moe", "attention")
CLASS_OF_KIND: dict[str, int] = {"embed": 0, "norm": 0, "matmul": 1, "lm_head": 1, "moe": 2, "attn": 3}
#: KINDS code -> class index (padding -1 stays -1)
_CLASS_BY_CODE = np.array([CLASS_OF_KIND[k] for k in KINDS] + [-1], dtype=np.intp)


@dataclass(frozen=True)
class Param:
    """One parameter of the predicted model: its name, unit, meaning, scale (logit or log) and prior centre."""

    name: str
    unit: str
    doc: str
    logit: bool
    prior: float  # the global prior's centre, in the parameter's own unit


def _eff(name: str, doc: str, prior: float) -> Param:
    return Param(name, "", doc, True, prior)


def _over(name: str, doc: str, prior: float) -> Param:
    return Param(name, "s", doc, False, prior)


#: The parameters, in order (column p of a parameter array is PARAMS[p]).
PARAMS: tuple[Param, ...] = (
    *(_eff(f"eta_mem_{c}", f"share of peak bandwidth the {c} operations reach", 0.8) for c in CLASSES),
    *(_eff(f"eta_compute_{c}", f"share of the dense peak the {c} operations reach", 0.6) for c in CLASSES),
    _over("overhead_kernel_s", "per kernel: one per operation row and layer, every step", 3e-6),
    _over("overhead_step_s", "per step: scheduling, sampling and the host's share", 5e-4),
    _over("overhead_sequence_s", "per sequence of the batch, every step", 3e-6),
    _eff("eta_comm", "share of the scale-up link the tensor-parallel all-reduces reach (latency included as published)", 0.6),
    _eff("eta_comm_out", "the same for all-reduces wider than the scale-up domain (over the host's PCIe or network)", 0.25),
    _over("overhead_request_s", "once per request served online, before its first token (HTTP, tokenisation, queue entry)", 0.02),
)
NAMES: tuple[str, ...] = tuple(p.name for p in PARAMS)
NP = len(PARAMS)
LOGIT = np.array([p.logit for p in PARAMS])
PRIOR = np.array([math.log(p.prior / (1 - p.prior)) if p.logit else math.log(p.prior) for p in PARAMS])
P = {name: i for i, name in enumerate(NAMES)}


def parameters(theta: Array) -> Array:
    """theta (logit / log scale, rows x NP) as the parameters themselves: efficiencies in (0, 1), overheads in seconds."""
    with np.errstate(over="ignore"):
        return np.where(LOGIT, 1.0 / (1.0 + np.exp(-theta)), np.exp(theta))


def ideal(rows: int) -> Array:
    """Parameters that make the prediction the ceiling: every efficiency 1, no overhead."""
    out = np.zeros((rows, NP))
    out[:, LOGIT] = 1.0
    return out


# -- the parts of a step that do not depend on the parameters -------------------------------------------------


@dataclass(frozen=True)
class StepParts:
    """Per step (row) and operation (column), one GPU, one repetition: memory time at the datasheet bandwidth, compute time
    at the datasheet peak, the operation's class; per step: kernels, sequences, communication, repetitions."""

    mem_s: Array
    compute_s: Array
    op_class: Index
    kernels: Array
    sequences: Array
    comm_in_s: Array
    comm_out_s: Array
    reps: Array

    def take(self, rows: Index | npt.NDArray[np.bool_]) -> StepParts:
        """The parts of the given steps."""
        return StepParts(**{k: getattr(self, k)[rows] for k in self.__dataclass_fields__})


def step_parts(
    op_kind: npt.NDArray[np.int8],
    layers: Array,
    weight_bytes: Array,
    other_bytes: Array,
    flops: Array,
    bandwidth: Array,
    peak: Array,
    sequences: Array,
    comm_s: Array,
    beyond_domain: npt.NDArray[np.bool_],
    reps: Array,
) -> StepParts:
    """A step's parts from its per-GPU work (steps x operations): weight bytes (read once per repetition), the other bytes
    and the FLOPs (shared out over the repetitions), at each step's datasheet bandwidth and peak (NaN peak: no compute time)."""
    r = reps[:, None]
    real = op_kind >= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mem = (weight_bytes + other_bytes / r) / bandwidth[:, None]
        cmp = np.nan_to_num(flops / r / peak[:, None], nan=0.0, posinf=0.0)
    return StepParts(
        mem_s=np.where(real, mem, 0.0),
        compute_s=np.where(real, cmp, 0.0),
        op_class=_CLASS_BY_CODE[np.where(real, op_kind, len(KINDS))],
        kernels=np.where(real, layers, 0.0).sum(axis=1),
        sequences=sequences / reps,
        comm_in_s=np.where(beyond_domain, 0.0, comm_s),
        comm_out_s=np.where(beyond_domain, comm_s, 0.0),
        reps=reps,
    )


def step_times(parts: StepParts, params: Array, *, jacobian: bool = False) -> tuple[Array, Array | None]:
    """Each step's predicted time (s) at `params` (steps x NP, parameters in their own units: `parameters`), and with
    `jacobian` its derivative by each parameter (steps x NP)."""
    cls = parts.op_class
    eta_mem = np.zeros_like(parts.mem_s)
    eta_cmp = np.zeros_like(parts.mem_s)
    for c in range(len(CLASSES)):
        at = cls == c
        eta_mem = np.where(at, params[:, [c]], eta_mem)
        eta_cmp = np.where(at, params[:, [len(CLASSES) + c]], eta_cmp)
    real = cls >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t_mem = np.where(real, parts.mem_s / eta_mem, 0.0)
        t_cmp = np.where(real, parts.compute_s / eta_cmp, 0.0)
    memory_bound = t_mem >= t_cmp
    ops = np.where(memory_bound, t_mem, t_cmp).sum(axis=1)
    k, s, q = params[:, P["overhead_kernel_s"]], params[:, P["overhead_step_s"]], params[:, P["overhead_sequence_s"]]
    e_in, e_out = params[:, P["eta_comm"]], params[:, P["eta_comm_out"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        comm = np.where(parts.comm_in_s > 0, parts.comm_in_s / e_in, 0.0) + np.where(parts.comm_out_s > 0, parts.comm_out_s / e_out, 0.0)
    reps = parts.reps
    time = reps * (ops + parts.kernels * k + s + parts.sequences * q + comm)
    if not jacobian:
        return time, None
    jac = np.zeros((len(time), NP))
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in range(len(CLASSES)):
            at = cls == c
            jac[:, c] = -reps * np.where(at & memory_bound, t_mem / eta_mem, 0.0).sum(axis=1)
            jac[:, len(CLASSES) + c] = -reps * np.where(at & ~memory_bound, t_cmp / eta_cmp, 0.0).sum(axis=1)
        jac[:, P["eta_comm"]] = -reps * np.where(parts.comm_in_s > 0, parts.comm_in_s / e_in**2, 0.0)
        jac[:, P["eta_comm_out"]] = -reps * np.where(parts.comm_out_s > 0, parts.comm_out_s / e_out**2, 0.0)
    jac[:, P["overhead_kernel_s"]] = reps * parts.kernels
    jac[:, P["overhead_step_s"]] = reps
    jac[:, P["overhead_sequence_s"]] = reps * parts.sequences
    return time, jac


# -- a fit: the hierarchy's shifts and the held-out error of each cell ------------------------------------------

#: The levels of the hierarchy, most general first, and the parameters each may shift (the others come from above).
#: A scenario's theta = the global theta + the shift of each level's key it has (a key the fit never saw shifts nothing).
_EFF = [P[n] for n in NAMES[:8]]
LEVELS: dict[str, tuple[int, ...]] = {
    "vendor": (*_EFF, P["eta_comm"], P["eta_comm_out"]),
    "family": tuple(range(NP)),
    "gpu": (P["eta_mem_gemm"], P["eta_compute_gemm"], P["eta_mem_attention"], P["overhead_kernel_s"], P["eta_comm"], P["eta_comm_out"]),
    "framework": tuple(range(NP)),
    "framework_family": (
        P["eta_mem_gemm"],
        P["eta_mem_moe"],
        P["eta_compute_gemm"],
        P["eta_compute_moe"],
        P["overhead_kernel_s"],
        P["overhead_step_s"],
        P["overhead_request_s"],
    ),
    "weights": (P["eta_mem_gemm"], P["eta_mem_moe"], P["eta_compute_gemm"], P["eta_compute_moe"]),
    "weights_framework": (P["eta_mem_gemm"], P["eta_mem_moe"], P["eta_compute_gemm"], P["eta_compute_moe"]),
    "model": (P["eta_mem_gemm"], P["eta_mem_moe"], P["eta_compute_gemm"], P["eta_compute_moe"], P["overhead_kernel_s"]),
}


def weight_class(weights: str) -> str:
    """The class of a weight format whose kernels behave alike: 16-bit, 8-bit, int4 (W4A16), fp4 or llama.cpp's GGUF types."""
    if weights in ("bf16", "fp16", "fp32"):
        return "16-bit"
    if weights in ("fp8", "int8"):
        return "8-bit"
    if weights == "int4":
        return "int4"
    if weights in ("nvfp4", "mxfp4", "fp4", "fp6"):
        return "fp4"
    return "gguf"


def level_keys(vendor: str, family: str, gpu: str, framework: str, weights: str, model: str) -> dict[str, str]:
    """The key of each level for one (accelerator, framework, weight format, model)."""
    w = weight_class(weights)
    return {
        "vendor": vendor,
        "family": family,
        "gpu": gpu,
        "framework": framework,
        "framework_family": f"{framework} | {family}",
        "weights": w,
        "weights_framework": f"{w} | {framework}",
        "model": model,
    }


@dataclass(frozen=True)
class Band:
    """The held-out error of predictions in one cell: mean |prediction - measured| / measured over n measurements."""

    mape: float
    n: int
    basis: str  # which measurements: "37 held-out measurements of vLLM on NVIDIA Hopper"
    widened: bool = False  # no held-out evidence in the cell: the error of a wider group, widened


@dataclass(frozen=True)
class Predictor:
    """A fitted predicted model: the global theta, each level's shifts by key, and the held-out errors (bands).

    `bands` maps (family, framework) and (family, "*"), ("*", framework), ("*", "*") to the held-out error of that
    group (core.evidence.predictor measures them leaving one publisher's campaign out at a time).
    """

    theta: tuple[float, ...]
    shifts: Mapping[str, Mapping[str, tuple[float, ...]]]
    bands: Mapping[tuple[str, str], Band] = field(default_factory=dict)
    frameworks: Mapping[str, int] = field(default_factory=dict)  # framework -> measurements it was fitted on
    note: str = ""

    def theta_of(self, keys: Sequence[Mapping[str, str]]) -> Array:
        """theta for each row of level keys (`level_keys`): the global theta plus each known key's shift."""
        out = np.repeat(np.asarray(self.theta, dtype=np.float64)[None, :], len(keys), axis=0)
        for level, shifts in self.shifts.items():
            for i, k in enumerate(keys):
                s = shifts.get(k.get(level, ""))
                if s is not None:
                    out[i] += s
        return out

    def parameters_of(self, keys: Sequence[Mapping[str, str]]) -> Array:
        """The parameters (own units) for each row of level keys."""
        return parameters(self.theta_of(keys))

    def band(self, family: str, framework: str) -> Band:
        """The held-out error for predictions on this family with this framework: the cell's own where it has held-out
        measurements, else the framework's, the family's or everyone's, widened by half (and said so)."""
        own = self.bands.get((family, framework))
        if own is not None and own.n >= 3:
            return own
        for key in ((("*", framework)), ((family, "*")), (("*", "*"))):
            wider = self.bands.get(key)
            if wider is not None and wider.n >= 3:
                return Band(wider.mape * 1.5, wider.n, f"no held-out measurement of {framework} on {family}: {wider.basis}, x 1.5", True)
        return Band(float("nan"), 0, "no held-out measurements", True)

    def to_json(self) -> dict[str, Any]:
        """The fit as plain data (core.evidence.predictor writes it to data/seed/predictor.json)."""
        return {
            "params": list(NAMES),
            "theta": [round(x, 6) for x in self.theta],
            "shifts": {lv: {k: [round(x, 6) for x in v] for k, v in sorted(m.items())} for lv, m in self.shifts.items()},
            "bands": [
                {"family": f, "framework": w, "mape": round(b.mape, 6), "n": b.n, "basis": b.basis} for (f, w), b in sorted(self.bands.items())
            ],
            "frameworks": dict(sorted(self.frameworks.items())),
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Predictor:
        """A fit read back from `to_json`'s data; a parameter list other than NAMES is refused."""
        if tuple(data.get("params", ())) != NAMES:
            raise ValueError("the fit's parameters are not this version's (core.model.predicted.PARAMS): refit it")
        shifts = {lv: {k: tuple(float(x) for x in v) for k, v in m.items()} for lv, m in data.get("shifts", {}).items()}
        bands = {(b["family"], b["framework"]): Band(float(b["mape"]), int(b["n"]), str(b["basis"])) for b in data.get("bands", [])}
        return cls(tuple(float(x) for x in data["theta"]), shifts, bands, dict(data.get("frameworks", {})), str(data.get("note", "")))

    def dumps(self) -> str:
        """The fit as JSON text."""
        return json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"
