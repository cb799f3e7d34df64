"""Record shapes (pydantic): an accelerator and a model, each field defined once.

An accelerator field is declared here with its bounds and its `Column`: the
seed CSV column and the unit it is written in there, the label and unit it is
shown and entered in, and its help text. The seed reader, the store's rows,
the custom-accelerator form, the catalogue table, the CLI's JSON and the
seed's format document (`accelerator_format_doc`) are all derived from these
declarations, so a new field is added here, in the seed CSV and in a
migration that adds its column, and nowhere else.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from core.catalogue.precisions import PEAK_PRECISIONS, compute_precision, storage_format

# Plausibility bounds: anything outside them is a typo or a unit slip.
MEMORY_BYTES_RANGE = (1e9, 2e12)  # 1 GB .. 2 TB per device
BANDWIDTH_RANGE = (1e9, 5e13)  # 1 GB/s (a probed laptop CPU) .. 50 TB/s
PEAK_FLOPS_RANGE = (1e10, 5e16)  # 10 GFLOP/s (a probed CPU's fp32) .. 50 PFLOP/s
POWER_RANGE = (5.0, 3000.0)  # W
SLUG = r"^[a-z0-9][a-z0-9.\-]*$"


def outside_bounds(
    bandwidth: float | None,
    peaks: dict[str, float | None],
    *,
    bandwidth_label: str = "bandwidth_bytes_per_s",
    peak_label: str = "peak_flops.{}",
    exact: bool = True,
) -> list[str]:
    """What of a measured bandwidth and peaks (a probe's) lies outside the physical bounds every accelerator has
    (BANDWIDTH_RANGE, PEAK_FLOPS_RANGE), in words, each named by its label; empty when all are inside. NaN is outside.
    `exact`: the bounds in B/s and FLOP/s as well as in words."""
    problems = []
    lo, hi = BANDWIDTH_RANGE
    if bandwidth is not None and not lo <= bandwidth <= hi:
        span = f"{lo:.0e} to {hi:.0e} B/s (1 GB/s to 50 TB/s)" if exact else "1 GB/s to 50 TB/s"
        problems.append(f"{bandwidth_label} {bandwidth:.3g} B/s is outside {span}")
    lo, hi = PEAK_FLOPS_RANGE
    for prec, value in peaks.items():
        if value is not None and not lo <= value <= hi:
            span = f"{lo:.0e} to {hi:.0e} FLOP/s (10 GFLOP/s to 50 PFLOP/s)" if exact else "10 GFLOP/s to 50 PFLOP/s"
            problems.append(f"{peak_label.format(prec)} {value:.3g} FLOP/s is outside {span}")
    return problems


#: How a list of sources is written in one seed or store cell.
SOURCE_SEPARATOR = " ; "


@dataclass(frozen=True)
class Column:
    """How one accelerator field is written in the seed CSV, shown on screen and typed into the form.

    `unit` and `scale` are the reading unit and its size in the field's SI
    unit (GB: 1e9 bytes); the seed CSV and the form use the reading unit, the
    store and the code SI. `seed` is the CSV column (default: the field's
    name); `form` says whether the custom-accelerator form asks for it.
    """

    label: str
    doc: str
    unit: str = ""
    scale: float = 1.0
    seed: str | None = None
    form: bool = True
    example: float | str | None = None  # the form's starting value

    def heading(self) -> str:
        """The column heading on screen: label with its unit."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


def _peak(precision: str) -> Any:
    unit = "TOPS" if precision.startswith("int") else "TFLOP/s"
    doc = f"dense {precision.upper()} {'integer ' if precision.startswith('int') else ''}tensor peak"
    if precision == "fp32":
        doc = "dense FP32 (non tensor-core vector FP32 unless noted)"
    return Column(f"{precision} dense", doc, unit, 1e12, seed=f"{precision}_{'tops' if precision.startswith('int') else 'tflops'}")


#: Peak FLOP/s of one precision: empty (unsupported), never 0.
Peak = float | None


class Accelerator(BaseModel):
    """One accelerator; figures in SI base units, compute as dense peaks (no 2:4 sparsity)."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=SLUG, max_length=64), Column("ID", "stable lowercase slug, e.g. `h100-sxm`, `mi300x`", form=False)]
    name: Annotated[str, Field(min_length=1, max_length=120), Column("Name", "display name, e.g. `NVIDIA H100 SXM5 80GB`")]
    vendor: Annotated[str, Field(min_length=1, max_length=40), Column("Vendor", "NVIDIA, AMD, Intel, Google, AWS, Apple ...")]
    form_factor: Annotated[
        str, Column("Form factor", "SXM, PCIe, OAM, superchip, module, board, chip (TPU), SoC, desktop", example="custom")
    ] = ""
    architecture: Annotated[
        str | None,
        Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 +.()\-]*$", max_length=40),
        Column(
            "Architecture",
            "the architecture generation the vendor names (Hopper, Blackwell, CDNA 3, Gaudi 3, TPU v6e, Apple M3 ...): the family "
            "whose measured efficiencies a prediction borrows; empty: the vendor's",
            example="Hopper",
        ),
    ] = None
    year: Annotated[int | None, Field(ge=2010, le=2030), Column("Year", "year of general availability / announcement", example=2025)] = None
    memory_bytes: Annotated[
        float,
        Field(ge=MEMORY_BYTES_RANGE[0], le=MEMORY_BYTES_RANGE[1]),
        Column("Memory", "device memory in decimal GB as the datasheet prints it (80 for H100 80GB)", "GB", 1e9, "memory_gb", example=80.0),
    ]
    memory_type: Annotated[
        str | None,
        Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 +.\-]*$", max_length=24),
        Column("Memory type", "memory technology as a cited source prints it (HBM3e, GDDR6, LPDDR5X ...); empty where none does"),
    ] = None
    bandwidth_bytes_per_s: Annotated[
        float,
        Field(ge=BANDWIDTH_RANGE[0], le=BANDWIDTH_RANGE[1]),
        Column("Bandwidth", "peak memory bandwidth, TB/s decimal (3.35 for H100 SXM)", "TB/s", 1e12, "bandwidth_tb_s", example=3.35),
    ]
    peak_fp32: Annotated[Peak, _peak("fp32")] = None
    peak_tf32: Annotated[Peak, _peak("tf32")] = None
    peak_bf16: Annotated[Peak, _peak("bf16")] = None
    peak_fp16: Annotated[Peak, _peak("fp16")] = None
    peak_fp8: Annotated[Peak, _peak("fp8")] = None
    peak_int8: Annotated[Peak, _peak("int8")] = None
    peak_fp6: Annotated[Peak, _peak("fp6")] = None
    peak_fp4: Annotated[Peak, _peak("fp4")] = None
    peak_int4: Annotated[Peak, _peak("int4")] = None
    power_w: Annotated[
        float | None,
        Field(ge=POWER_RANGE[0], le=POWER_RANGE[1]),
        Column("Power", "board / module power (max TDP / TGP)", "W", 1.0, "power_w", example=700.0),
    ] = None
    scaleup_bytes_per_s: Annotated[
        float | None,
        Field(gt=0, le=1e13),
        Column(
            "Scale-up link",
            "scale-up link bandwidth per device, total bidirectional as the vendor quotes it (NVLink 4 = 900); "
            "empty if none (PCIe only: put the PCIe figure and say so in notes)",
            "GB/s",
            1e9,
            "scaleup_gb_s",
        ),
    ] = None
    scaleup_domain: Annotated[
        int | None,
        Field(ge=1, le=100_000),
        Column(
            "Scale-up domain",
            "devices one tensor-parallel group can span in the vendor's standard platform (8 on an HGX board, 72 in an NVL72 rack, "
            "8 PCIe cards in one server, 1 for parts that are not ganged in practice); empty where no source says",
            "devices",
            1.0,
            "scaleup_domain",
            example=8,
        ),
    ] = None
    allreduce_latency_s: Annotated[
        float | None,
        Field(gt=0, le=0.01),
        Column(
            "All-reduce latency",
            "time of one small-message all-reduce over the scale-up domain as a published NCCL/RCCL measurement prints it "
            "(the per-call cost a ring term does not see); empty where none is published",
            "µs",
            1e-6,
            "allreduce_latency_us",
        ),
    ] = None
    scaleout_bytes_per_s: Annotated[
        float | None,
        Field(gt=0, le=1e12),
        Column(
            "Scale-out link",
            "network bandwidth per device to devices outside its scale-up domain (InfiniBand / RoCE / Ethernet NICs per device "
            "in the vendor's reference system), decimal GB/s per direction (400 Gb/s = 50 GB/s); say the system in notes; "
            "empty where no source prints it",
            "GB/s",
            1e9,
            "scaleout_gb_s",
        ),
    ] = None
    list_price_usd: Annotated[
        float | None, Field(gt=0), Column("List price", "published list price where one exists, else empty", "USD", 1.0, "list_price_usd")
    ] = None
    sources: Annotated[
        list[str],
        Column(
            "Source URL",
            "one or more URLs separated by ` ; ` (datasheet, whitepaper, vendor spec page)",
            seed="source_urls",
            example="https://",
        ),
    ] = Field(default_factory=list)
    notes: Annotated[
        str,
        Column(
            "Notes",
            "subtle cases: figure printed only as sparse (halved here), per GPU vs per pair (H100 NVL), power mode, per chip (TPU), "
            'boost vs base clock, unified memory (Apple), etc. Quote with `"` if it contains commas.',
            form=False,
        ),
    ] = ""
    custom: bool = False

    @field_validator("sources", mode="before")
    @classmethod
    def _split_sources(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [s.strip() for s in value.split(";") if s.strip()]
        return [] if value is None else value

    @model_validator(mode="before")
    @classmethod
    def _empty_cells_take_defaults(cls, data: Any) -> Any:
        """An empty cell (None) of an optional text field is its default (""), as in the seed CSV."""
        if isinstance(data, dict):
            texts = {n for n, f in cls.model_fields.items() if isinstance(f.default, str)}
            return {k: v for k, v in data.items() if v is not None or k not in texts}
        return data

    @field_validator(*(f"peak_{p}" for p in PEAK_PRECISIONS))
    @classmethod
    def _peak_plausible(cls, value: float | None, info: Any) -> float | None:
        # errors of pydantic's own kinds, with their bounds in ctx, so that messages say them in the field's unit
        prec = info.field_name.removeprefix("peak_")
        if value is None:
            return None
        if value <= 0:
            raise PydanticCustomError(
                "empty_or_positive", "{precision} peak must be empty (unsupported) or > 0, got {got}", {"precision": prec, "got": value}
            )
        lo, hi = PEAK_FLOPS_RANGE
        if value < lo:
            raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to {ge}", {"ge": lo})
        if value > hi:
            raise PydanticCustomError("less_than_equal", "Input should be less than or equal to {le}", {"le": hi})
        return value

    @model_validator(mode="after")
    def _some_peak(self) -> Accelerator:
        if not any(self.peak_flops.values()):
            raise PydanticCustomError(
                "no_peak", "No dense peak given: enter at least one precision's dense peak (TFLOP/s or TOPS), e.g. bf16 dense"
            )
        return self

    @property
    def peak_flops(self) -> dict[str, float | None]:
        """Dense peak FLOP/s by precision (None where unsupported), in PEAK_PRECISIONS order."""
        return {p: getattr(self, f"peak_{p}") for p in PEAK_PRECISIONS}

    def store_row(self) -> dict[str, Any]:
        """The row as the store keeps it: every field, sources joined into one text cell."""
        row = self.model_dump()
        row["sources"] = SOURCE_SEPARATOR.join(self.sources)
        return row

    def record(self) -> dict[str, Any]:
        """The JSON record of the CLI's `gpus`: every field, the peaks grouped by precision."""
        peaks = {f"peak_{p}" for p in PEAK_PRECISIONS}
        out = {k: v for k, v in self.model_dump().items() if k not in peaks}
        return {**out, "peak_flops": self.peak_flops}


def accelerator_columns() -> dict[str, Column]:
    """Every accelerator field that has a Column, in declaration order."""
    return {name: col for name, info in Accelerator.model_fields.items() if (col := column_of(info)) is not None}


def value_type(info: FieldInfo) -> type:
    """The Python type of a pydantic field's value, optional or not, constraints stripped (str, int, float, bool, list ...)."""
    annotation = info.annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return typing.cast(type, typing.get_origin(annotation) or annotation)


def column_of(info: FieldInfo) -> Column | None:
    """The Column declared on a field, if any."""
    return next((m for m in info.metadata if isinstance(m, Column)), None)


def accelerator_format_doc() -> str:
    """The column table of data/seed/ACCELERATORS_FORMAT.md, written from the declarations above.

    `python -m core.catalogue.specs` rewrites the table in that file.
    """
    lines = ["| column | unit | meaning |", "| --- | --- | --- |"]
    for name, col in accelerator_columns().items():
        lines.append(f"| {col.seed or name} | {col.unit} | {col.doc} |")
    return "\n".join(lines)


#: The lines around the generated table in ACCELERATORS_FORMAT.md.
FORMAT_DOC_MARKERS = (
    "<!-- columns: generated from core/catalogue/specs.py (python -m core.catalogue.specs) -->",
    "<!-- end of columns -->",
)


def with_format_doc(text: str) -> str:
    """The text of ACCELERATORS_FORMAT.md with its column table replaced by `accelerator_format_doc()`."""
    start, end = FORMAT_DOC_MARKERS
    head, _, rest = text.partition(start + "\n")
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{accelerator_format_doc()}\n{end}{tail}"


class ModelRecord(BaseModel):
    """The shape of a transformer, parsed from a Hugging Face config.json."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=SLUG, max_length=80)]
    name: str
    architecture: str
    vocab_size: Annotated[int, Field(gt=0)]
    hidden_size: Annotated[int, Field(gt=0)]
    num_layers: Annotated[int, Field(gt=0)]
    num_heads: Annotated[int, Field(gt=0)]
    num_kv_heads: Annotated[int, Field(gt=0)]
    head_dim: Annotated[int, Field(gt=0)]
    intermediate_size: Annotated[int, Field(ge=0)]
    mlp_gated: bool = True
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    tie_embeddings: bool = False
    # mixture of experts
    num_experts: Annotated[int, Field(ge=0)] = 0
    experts_per_token: Annotated[int, Field(ge=0)] = 0
    moe_intermediate_size: Annotated[int, Field(ge=0)] = 0
    num_shared_experts: Annotated[int, Field(ge=0)] = 0
    shared_intermediate_size: Annotated[int, Field(ge=0)] = 0
    moe_layer_ids: list[int] = Field(default_factory=list)
    router_bias: bool = False
    # multi-head latent attention (DeepSeek)
    kv_lora_rank: Annotated[int, Field(ge=0)] = 0
    q_lora_rank: Annotated[int, Field(ge=0)] = 0
    qk_nope_head_dim: Annotated[int, Field(ge=0)] = 0
    qk_rope_head_dim: Annotated[int, Field(ge=0)] = 0
    v_head_dim: Annotated[int, Field(ge=0)] = 0
    # sliding-window (or chunked) attention layers hold at most `window` tokens
    window: Annotated[int, Field(ge=0)] = 0
    window_layer_ids: list[int] = Field(default_factory=list)
    attention_sinks: bool = False
    native_weights: str = "bf16"
    max_context: Annotated[int, Field(ge=0)] = 0
    custom: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> ModelRecord:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads ({self.num_heads}) must be a multiple of num_key_value_heads ({self.num_kv_heads})")
        for ids in (self.moe_layer_ids, self.window_layer_ids):
            if any(not 0 <= i < self.num_layers for i in ids) or len(set(ids)) != len(ids):
                raise ValueError("layer ids must be distinct and within num_hidden_layers")
        if self.num_moe_layers and not (self.num_experts and self.experts_per_token):
            raise ValueError("MoE layers need num_experts and experts_per_token")
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token exceeds num_experts")
        if self.num_window_layers and not self.window:
            raise ValueError("sliding-window layers need a window size")
        return self

    @property
    def num_moe_layers(self) -> int:
        return len(self.moe_layer_ids)

    @property
    def num_window_layers(self) -> int:
        return len(self.window_layer_ids)

    @property
    def is_moe(self) -> bool:
        return self.num_moe_layers > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0


class PrecisionFields(BaseModel):
    """Shared validation of the three precision fields (weights, KV cache, compute) of a record."""

    @field_validator("weights", "kv", check_fields=False)
    @classmethod
    def _storage(cls, value: str) -> str:
        return storage_format(value).name

    @field_validator("compute", check_fields=False)
    @classmethod
    def _compute(cls, value: str | None) -> str | None:
        return None if value is None else compute_precision(value)


if __name__ == "__main__":  # in a checkout: rewrite the seed's format document
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "data" / "seed" / "ACCELERATORS_FORMAT.md"
    doc.write_text(with_format_doc(doc.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the column table of {doc}")
