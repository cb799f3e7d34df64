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
communication term, core.model.ceilings.comm_seconds). The operations are
timed by the one engine (core.model.engine.sort_work and SortedWork.times,
at each class's achieved bandwidth and peak); core.model.ceilings.
achieved_step_times adds the rest. A request served online also pays
overhead_request_s once (the HTTP and tokenisation path) before its first
token.

Every efficiency lies in (0, 1) and every overhead is positive: the
parameters live on a logit (efficiencies) or log (overheads) scale, theta,
and `parameters` maps them back. They are fitted per accelerator family and
framework by core.evidence.predictor (a hierarchy: each level of `LEVELS`
adds its own shift to theta, so a cell with few measurements borrows from
its vendor and from the global prior); `Predictor` holds a fit and gives
each scenario its parameters. core.model.ceilings.achieved_step_times is
the one function that times a step at achieved rates: pages, the CLI, the
sweep and the fit call it.
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

#: The serving frameworks a prediction can be made for (the reference set's frameworks; MLPerf rows run TensorRT-LLM and
#: others under MLPerf's rules, fitted as their own framework).
FRAMEWORKS: tuple[str, ...] = (
    "vLLM",
    "SGLang",
    "TensorRT-LLM",
    "llama.cpp",
    "MLX",
    "JetStream",
    "Intel Gaudi software (PyTorch)",
    "MLPerf",
)

GIB = float(1 << 30)


def prefill_chunk(framework: str, memory_bytes: float, name: str = "") -> float:
    """Prompt tokens `framework` prefills per step by default on an accelerator with this much memory (its
    chunked-prefill token budget; inf: the prompt whole). A longer prefill runs in chunks, each reading the weights.

    vLLM `vllm serve` (0.9.0-0.27.1, vllm/engine/arg_utils.py): max_num_batched_tokens 8192 where the device has at
    least 70 GiB and is not an A100, else 2048. SGLang (0.5.3-0.5.16, python/sglang/srt/server_args.py
    _handle_gpu_memory_settings): chunked_prefill_size 2048 under 35 GiB, 4096 under 60 GiB, 8192 under 160 GiB,
    16384 above. TensorRT-LLM (tensorrt_llm/llmapi/llm_args.py, BaseLlmArgs): max_num_tokens 8192. llama.cpp
    (common/common.h, tools/llama-bench): n_ubatch 512 of n_batch 2048. MLX (mlx_lm/generate.py): prefill_step_size
    2048. MLPerf rows run TensorRT-LLM's budget. Others (JetStream, Intel Gaudi): the prompt whole.
    """
    gib = memory_bytes / GIB
    if framework == "vLLM":
        return 8192.0 if gib >= 70 and "a100" not in name.lower() else 2048.0
    if framework == "SGLang":
        return 2048.0 if gib < 35 else 4096.0 if gib < 60 else 8192.0 if gib < 160 else 16384.0
    return PREFILL_CHUNK.get(framework, math.inf)


#: The fixed prefill budgets (frameworks whose default does not depend on the device): see `prefill_chunk`.
PREFILL_CHUNK: dict[str, float] = {"TensorRT-LLM": 8192.0, "MLPerf": 8192.0, "llama.cpp": 512.0, "MLX": 2048.0}
#: llama.cpp's layer split (several GPUs, no tensor parallelism): a pipeline whose stages run one after another for one
#: sequence; a prompt's micro-batches (n_ubatch of n_batch tokens) overlap across the stages, at most this many at once.
LAYER_SPLIT_MICROBATCHES = 4.0

#: The operation classes whose efficiencies differ, and the kinds (core.catalogue.operations.KINDS) in each.
CLASSES: tuple[str, ...] = ("elementwise", "gemm", "moe", "attention")
CLASS_OF_KIND: dict[str, int] = {"embed": 0, "norm": 0, "matmul": 1, "lm_head": 1, "moe": 2, "attn": 3}
#: KINDS code -> class index
CLASS_BY_CODE = np.array([CLASS_OF_KIND[k] for k in KINDS], dtype=np.intp)


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
        "user": f"{gpu} | {framework}",  # a refit on the user's own measurements (core.evidence.refit)
    }


#: What a band is the error of: a rate or time per output token (decode and serving throughput, TPOT), or a time to first
#: token / prefill rate.
BAND_KINDS: tuple[str, ...] = ("tokens", "ttft")


@dataclass(frozen=True)
class Band:
    """The held-out error of predictions in one cell: mean |prediction - measured| / measured over n measurements."""

    mape: float
    n: int
    basis: str  # which measurements: "37 held-out measurements of vLLM on Hopper"
    widened: bool = False  # no held-out evidence in the cell: the error of a wider group, widened


#: A cell with fewer held-out measurements than this borrows the band of a wider group, widened by WIDEN.
MIN_BAND_ROWS = 3
WIDEN = 1.5


@dataclass(frozen=True)
class Predictor:
    """A fitted predicted model: the global theta, each level's shifts by key, and the held-out errors (bands).

    `bands` maps (family, framework, kind) to the held-out error of predictions of that kind (BAND_KINDS) there;
    "*" stands for every family or every framework (core.evidence.predictor measures them leaving one publisher's
    campaign out at a time).
    """

    theta: tuple[float, ...]
    shifts: Mapping[str, Mapping[str, tuple[float, ...]]]
    bands: Mapping[tuple[str, str, str], Band] = field(default_factory=dict)
    frameworks: Mapping[str, int] = field(default_factory=dict)  # framework -> measurements it was fitted on
    note: str = ""

    def theta_of(self, keys: Sequence[Mapping[str, str]]) -> Array:
        """theta for each row of level keys (`level_keys`): the global theta plus each known key's shift."""
        out = np.repeat(np.asarray(self.theta, dtype=np.float64)[None, :], len(keys), axis=0)
        for level, shifts in self.shifts.items():
            rows: dict[str, list[int]] = {}
            for i, k in enumerate(keys):
                rows.setdefault(k.get(level, ""), []).append(i)
            for value, at in rows.items():
                s = shifts.get(value)
                if s is not None:
                    out[at] += s
        return out

    def parameters_of(self, keys: Sequence[Mapping[str, str]]) -> Array:
        """The parameters (own units) for each row of level keys."""
        return parameters(self.theta_of(keys))

    def band(self, family: str, framework: str, kind: str = "tokens") -> Band:
        """The held-out error for predictions of `kind` on this family with this framework: the cell's own where it has
        MIN_BAND_ROWS held-out measurements, else the framework's, the family's or everyone's, widened (and said so)."""
        own = self.bands.get((family, framework, kind))
        if own is not None and own.n >= MIN_BAND_ROWS:
            return own
        for key in ((("*", framework, kind)), ((family, "*", kind)), (("*", "*", kind))):
            wider = self.bands.get(key)
            if wider is not None and wider.n >= MIN_BAND_ROWS:
                return Band(
                    wider.mape * WIDEN, wider.n, f"no held-out measurement of {framework} on {family}: {wider.basis}, x {WIDEN:g}", True
                )
        return Band(float("nan"), 0, "no held-out measurements", True)

    def to_json(self) -> dict[str, Any]:
        """The fit as plain data (core.evidence.predictor writes it to data/seed/predictor.json)."""
        return {
            "params": list(NAMES),
            "theta": [round(x, 6) for x in self.theta],
            "shifts": {lv: {k: [round(x, 6) for x in v] for k, v in sorted(m.items())} for lv, m in self.shifts.items()},
            "bands": [
                {"family": f, "framework": w, "kind": k, "mape": round(b.mape, 6), "n": b.n, "basis": b.basis}
                for (f, w, k), b in sorted(self.bands.items())
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
        bands = {
            (b["family"], b["framework"], b["kind"]): Band(float(b["mape"]), int(b["n"]), str(b["basis"])) for b in data.get("bands", [])
        }
        return cls(tuple(float(x) for x in data["theta"]), shifts, bands, dict(data.get("frameworks", {})), str(data.get("note", "")))

    def dumps(self) -> str:
        """The fit as JSON text."""
        return json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"
