"""Record shapes (pydantic): accelerator, model and scenario.

These define the rules; bulk frames are validated with Polars expressions
derived from the same bounds (see `catalogue.validate_accelerators`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.precisions import PEAK_PRECISIONS, compute_precision, storage_format

# Plausibility bounds: anything outside them is a typo or a unit slip.
MEMORY_BYTES_RANGE = (1e9, 2e12)  # 1 GB .. 2 TB per device
BANDWIDTH_RANGE = (5e10, 5e13)  # 50 GB/s .. 50 TB/s
PEAK_FLOPS_RANGE = (1e12, 5e16)  # 1 TFLOP/s .. 50 PFLOP/s
POWER_RANGE = (5.0, 3000.0)  # W
SLUG = r"^[a-z0-9][a-z0-9.\-]*$"


class Accelerator(BaseModel):
    """One accelerator; figures in SI base units, compute as dense peaks."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=SLUG, max_length=64)]
    name: Annotated[str, Field(min_length=1, max_length=120)]
    vendor: Annotated[str, Field(min_length=1, max_length=40)]
    form_factor: str = ""
    year: Annotated[int, Field(ge=2010, le=2030)] | None = None
    memory_bytes: Annotated[float, Field(ge=MEMORY_BYTES_RANGE[0], le=MEMORY_BYTES_RANGE[1])]
    bandwidth_bytes_per_s: Annotated[float, Field(ge=BANDWIDTH_RANGE[0], le=BANDWIDTH_RANGE[1])]
    peak_flops: dict[str, float | None]
    power_w: Annotated[float, Field(ge=POWER_RANGE[0], le=POWER_RANGE[1])] | None = None
    scaleup_bytes_per_s: Annotated[float, Field(gt=0, le=1e13)] | None = None
    list_price_usd: Annotated[float, Field(gt=0)] | None = None
    sources: list[str] = Field(default_factory=list)
    notes: str = ""
    custom: bool = False

    @field_validator("peak_flops")
    @classmethod
    def _peaks_plausible(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        unknown = set(value) - set(PEAK_PRECISIONS)
        if unknown:
            raise ValueError(f"unknown precision column(s) {sorted(unknown)}")
        lo, hi = PEAK_FLOPS_RANGE
        for prec, flops in value.items():
            if flops is None:
                continue
            if flops <= 0:
                raise ValueError(f"{prec} peak must be empty (unsupported) or > 0, got {flops}")
            if not lo <= flops <= hi:
                raise ValueError(f"{prec} peak {flops:.3g} FLOP/s outside the plausible {lo:.0e}..{hi:.0e}")
        if not any(v for v in value.values()):
            raise ValueError("at least one precision needs a peak FLOP/s")
        return {p: value.get(p) for p in PEAK_PRECISIONS}


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


class Scenario(PrecisionFields):
    """One what-if: accelerator x count, model, precisions, phase sizes, options."""

    model_config = ConfigDict(extra="forbid")

    gpu: str
    model: str
    num_gpus: Annotated[int, Field(ge=1, le=1024)] = 1
    weights: str = "bf16"
    compute: str | None = None  # None: the default for the weight format
    kv: str = "bf16"
    batch: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    context: Annotated[int, Field(ge=0, le=10_000_000)] = 4096
    prompt: Annotated[int, Field(ge=1, le=10_000_000)] = 2048
    spec_draft_len: Annotated[int, Field(ge=0, le=64)] = 0
    spec_acceptance: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.7
    spec_draft_model: str | None = None
    eff_bandwidth: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    eff_compute: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    overhead_s: Annotated[float, Field(ge=0.0, le=10.0)] = 0.0
    reserve_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.10
    usd_per_gpu_hour: Annotated[float, Field(ge=0.0, le=1000.0)] = 0.0
    flash_attention: bool = True
