"""The scenario: one what-if (accelerator x count, model, precisions, batch, context, options).

`Scenario` is the one definition. Each field carries its default, its bounds
and a `Param`: its label, help text and unit on screen, its link parameter
and its command-line option. The sidebar, the calculator's options, a shared
link, the CLI's arguments (`add_cli_arguments`, `from_cli`), the report and
the tests all build and read this type; a frame of scenarios (a sweep) has
one column per field and is checked against the same bounds
(`check_frame`).
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import annotated_types
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.fields import FieldInfo

from core.catalogue.specs import PrecisionFields, value_type
from core.model.predicted import FRAMEWORKS


@dataclass(frozen=True)
class Param:
    """How a scenario field is asked for: on screen, in a link and on the command line.

    A control shows `unit` and holds the field's value divided by `scale`
    (overhead in ms: scale 1e-3); `key` names its widget and link parameter
    (default: the field's name). `lo`, `hi` and `step` are the control's
    range and step in its own unit where the field's bounds are too wide (or
    open) to slide over; `slider` draws a slider rather than a number box.
    A field of a fixed set of values (a Literal) shows `labels` (value ->
    its label, which a link spells) in a select box, or in a row of radio
    buttons with `radio`; `fmt` is a number box's printf format. The same
    Param declares a page's request (e.g. core.plan.compare_request).
    """

    label: str
    help: str
    unit: str = ""
    scale: float = 1.0
    key: str | None = None
    flag: str | None = None  # command-line option (default: --field-name)
    cli_required: bool = False
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    slider: bool = False
    labels: Mapping[Any, str] | None = field(default=None, hash=False, compare=False)
    radio: bool = False
    fmt: str | None = None


class Scenario(PrecisionFields):
    """One what-if: accelerator x count, model, precisions, phase sizes, options (SI units)."""

    model_config = ConfigDict(extra="forbid")

    gpu: Annotated[
        str, Param("Accelerator", "Accelerator id: its datasheet roof applies (dense peaks, decimal units).", cli_required=True)
    ] = "h100-sxm"
    model: Annotated[str, Param("Model", "Model id: its shapes come from its own config.json.", cli_required=True)] = "llama-3.1-8b"
    num_gpus: Annotated[
        int,
        Field(ge=1, le=1024),
        Param(
            "GPUs (tensor parallel)",
            "Tensor-parallel degree: weights and KV are sharded, bandwidth and compute add up, two all-reduces per layer.",
        ),
    ] = 1
    weights: Annotated[
        str,
        Param(
            "Weights",
            "Storage format of the weights, scales included (int4 = 4.125 bits). llama.cpp's GGUF types (q4_k_m ...) carry the "
            "whole-file bits per weight llama.cpp prints and compute at fp16, as its kernels dequantise them.",
        ),
    ] = "bf16"
    compute: Annotated[
        str | None,
        Param(
            "Compute",
            "Tensor-core format whose peak applies; auto (empty): fp8 weights compute in fp8, fp4 in fp4, others in bf16.",
        ),
    ] = None
    weight_bits: Annotated[
        float | None,
        Field(gt=0.0, le=64.0),
        Param(
            "Bits per weight (file)",
            "The model file's own average bits per weight (file bytes x 8 / parameters), e.g. from llama-bench's model size: "
            "a K-quant file mixes types per tensor. Empty: the weight format's bits.",
            unit="bits",
        ),
    ] = None
    kv: Annotated[str, Param("KV cache", "Storage format of the KV cache.")] = "bf16"
    batch: Annotated[int, Field(ge=1, le=1_000_000), Param("Batch (sequences)", "Sequences decoded together in one step.")] = 1
    context: Annotated[
        int,
        Field(ge=0, le=10_000_000),
        Param("Context (tokens)", "Tokens already in each sequence's KV cache during decode.", step=1024),
    ] = 4096
    prompt: Annotated[
        int, Field(ge=1, le=10_000_000), Param("Prompt (tokens)", "Prompt length for prefill and time to first token.", step=256)
    ] = 2048
    depth: Annotated[
        int,
        Field(ge=0, le=10_000_000),
        Param(
            "Prefill depth (tokens)",
            "Tokens already in each sequence's KV cache when its prompt is prefilled (a cached prefix, llama-bench's "
            "'pp512 @ d4096'): the prompt's attention also reads them.",
            step=1024,
        ),
    ] = 0
    spec_draft_len: Annotated[
        int,
        Field(ge=0, le=64),
        Param("Draft length (tokens)", "Speculative decoding: tokens the draft model proposes per verify step; 0 turns it off.", hi=16),
    ] = 0
    spec_acceptance: Annotated[
        float,
        Field(ge=0.0, lt=1.0),
        Param(
            "Acceptance rate",
            "Speculative decoding: probability that each drafted token is accepted, 0 <= a < 1.",
            hi=0.95,
            step=0.05,
            slider=True,
        ),
    ] = 0.7
    spec_draft_model: Annotated[
        str | None,
        Param(
            "Draft model",
            "Speculative decoding: the small model that drafts tokens (a model id); "
            "default on screen: the smallest of the same family and vocabulary.",
        ),
    ] = None
    eff_bandwidth: Annotated[
        float,
        Field(gt=0.0, le=1.0),
        Param(
            "Bandwidth efficiency", "Share of peak memory bandwidth reachable in practice; 1 = datasheet.", lo=0.3, step=0.05, slider=True
        ),
    ] = 1.0
    eff_compute: Annotated[
        float,
        Field(gt=0.0, le=1.0),
        Param("Compute efficiency", "Share of peak FLOP/s reachable in practice; 1 = datasheet.", lo=0.3, step=0.05, slider=True),
    ] = 1.0
    overhead_s: Annotated[
        float,
        Field(ge=0.0, le=10.0),
        Param(
            "Overhead per step",
            "Fixed time added to every step (kernel launches, scheduling).",
            unit="ms",
            scale=1e-3,
            key="overhead_ms",
            hi=100.0,
            step=0.1,
        ),
    ] = 0.0
    reserve_fraction: Annotated[
        float,
        Field(ge=0.0, lt=1.0),
        Param(
            "Memory reserve",
            "Share of each GPU's memory kept free for activations, CUDA graphs and fragmentation.",
            unit="%",
            scale=0.01,
            key="reserve_pct",
            hi=50.0,
            step=1.0,
            slider=True,
        ),
    ] = 0.10
    usd_per_gpu_hour: Annotated[
        float,
        Field(ge=0.0, le=1000.0),
        Param(
            "Price per GPU-hour",
            "Your price per GPU per hour; 0 uses the median published on-demand price of the accelerator (none published: no cost).",
            unit="USD",
            step=0.1,
        ),
    ] = 0.0
    framework: Annotated[
        str,
        Param(
            "Framework",
            "Serving engine the prediction is for: its efficiencies and overheads are fitted on published measurements of it "
            f"({', '.join(FRAMEWORKS)}); the ceiling does not depend on it.",
        ),
    ] = "vLLM"
    flash_attention: Annotated[
        bool,
        Param("Fused attention", "Flash attention: no score matrix in HBM; off writes it (unfused).", flag="--unfused-attention"),
    ] = True

    @property
    def uses_speculation(self) -> bool:
        """True when the scenario decodes speculatively (a draft length and a draft model)."""
        return self.spec_draft_len > 0 and self.spec_draft_model is not None

    @field_validator("framework")
    @classmethod
    def _known_framework(cls, value: str) -> str:
        if value not in FRAMEWORKS:
            raise ValueError(f"unknown framework {value!r}; known: {', '.join(FRAMEWORKS)}")
        return value

    def at(self, **changes: Any) -> Scenario:
        """The same scenario with some fields changed, validated."""
        return Scenario.model_validate({**self.model_dump(), **changes})


FIELDS: tuple[str, ...] = tuple(Scenario.model_fields)


def param(name: str, of: type[BaseModel] = Scenario) -> Param:
    """The Param of a field of the scenario (or of another type declared the same way, `of`)."""
    return next(m for m in of.model_fields[name].metadata if isinstance(m, Param))


def default(name: str, of: type[BaseModel] = Scenario) -> Any:
    """The default of a scenario field (or of `of`'s)."""
    return of.model_fields[name].default


def field_type(name: str, of: type[BaseModel] = Scenario) -> type:
    """The Python type of a scenario field (or of `of`'s), optional or not (str, int, float or bool)."""
    return value_type(of.model_fields[name])


def choices(name: str, of: type[BaseModel] = Scenario) -> tuple[Any, ...] | None:
    """The values a field of a fixed set (a Literal) may take, in their declared order; None for any other field."""
    annotation = of.model_fields[name].annotation
    return typing.get_args(annotation) if typing.get_origin(annotation) is typing.Literal else None


def bounds(name: str, of: type[BaseModel] = Scenario) -> tuple[float | None, bool, float | None, bool]:
    """(low, low inclusive, high, high inclusive) of a numeric field (None: unbounded)."""
    info: FieldInfo = of.model_fields[name]
    lo: float | None = None
    hi: float | None = None
    lo_inc = hi_inc = True
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            lo, lo_inc = float(m.ge), True  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Gt):
            lo, lo_inc = float(m.gt), False  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Le):
            hi, hi_inc = float(m.le), True  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Lt):
            hi, hi_inc = float(m.lt), False  # type: ignore[arg-type]
    return lo, lo_inc, hi, hi_inc


#: Polars types of the scenario columns.
DTYPES: dict[type, Any] = {str: pl.String, int: pl.Int64, float: pl.Float64, bool: pl.Boolean}
SCENARIO_SCHEMA: dict[str, Any] = {name: DTYPES[field_type(name)] for name in FIELDS}


def grid(base: Scenario, **axes: Sequence[Any]) -> pl.DataFrame:
    """Every combination of `axes` (field -> values; the first varies slowest), the other fields from `base`."""
    fixed = {k: [v] for k, v in base.model_dump().items() if k not in axes}
    frame = pl.DataFrame(fixed, schema={k: SCENARIO_SCHEMA[k] for k in fixed})
    for name, values in axes.items():
        frame = frame.join(pl.DataFrame({name: list(values)}, schema={name: SCENARIO_SCHEMA[name]}), how="cross")
    return frame


class ScenarioError(ValueError):
    """A scenario value out of its bounds: names the field (and the row of a frame)."""

    def __init__(self, field: str, problem: str, *, row: int | None = None) -> None:
        where = f"row {row}: " if row is not None else ""
        super().__init__(f"{field}: {where}{problem}")
        self.field, self.problem, self.row = field, problem, row


def _bound(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def check_frame(frame: pl.DataFrame) -> None:
    """Every numeric scenario column of a frame within its field's bounds; ScenarioError names the first value that is not."""
    checked = [n for n in FIELDS if n in frame.columns and field_type(n) in (int, float)]
    out_of_bounds = {}
    for name in checked:
        lo, lo_inc, hi, hi_inc = bounds(name)
        col = pl.col(name)
        bad = col.is_null() if default(name) is not None else pl.lit(False)  # an optional field may be empty
        if lo is not None:
            bad = bad | ((col < lo) if lo_inc else (col <= lo))
        if hi is not None:
            bad = bad | ((col > hi) if hi_inc else (col >= hi))
        out_of_bounds[name] = bad.arg_true().first()
    first = frame.select(**out_of_bounds).row(0, named=True) if checked else {}
    for name, row in first.items():
        if row is not None:
            lo, lo_inc, hi, hi_inc = bounds(name)
            rng = f"{'>=' if lo_inc else '>'} {_bound(lo)}" if lo is not None else ""
            rng += (" and " if rng else "") + (f"{'<=' if hi_inc else '<'} {_bound(hi)}" if hi is not None else "")
            raise ScenarioError(name, f"must be {rng}, got {frame[name][row]}", row=int(row))


# -- the command line ------------------------------------------------------------


def flag(name: str) -> str:
    """The command-line option of a scenario field."""
    return param(name).flag or "--" + name.replace("_", "-")


#: What a field shown scaled (Param.scale != 1) is given in on the command line: its own unit.
_UNSCALED = {"ms": "in seconds", "%": "as a fraction of 1"}


def add_cli_arguments(parser: argparse.ArgumentParser, *, only: tuple[str, ...] = FIELDS) -> None:
    """One option per scenario field (or per field of `only`), with the field's default, type and help."""
    for name in only:
        p, kind, dflt = param(name), field_type(name), default(name)
        text = p.help.rstrip(".")
        if p.unit:
            text += f" ({p.unit})" if p.scale == 1 else f" ({_UNSCALED[p.unit]}; the app shows {p.unit})"
        text = text.replace("%", "%%")  # argparse formats help with %
        if kind is bool:
            action = "store_false" if dflt else "store_true"
            parser.add_argument(flag(name), dest=name, action=action, help=text)
        elif p.cli_required:
            parser.add_argument(flag(name), dest=name, type=kind, required=True, help=text)
        else:
            parser.add_argument(flag(name), dest=name, type=kind, default=dflt, help=f"{text}; default: {dflt}")


def from_cli(args: argparse.Namespace, *, only: tuple[str, ...] = FIELDS) -> Scenario:
    """The Scenario of parsed command-line options (of the fields `only`; pydantic names a bad value's field)."""
    return Scenario.model_validate({name: getattr(args, name) for name in only if hasattr(args, name)})
