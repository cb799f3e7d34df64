"""The probe's result: one JSON document (schema `roofline-explorer/probe`, version 1) that records every figure,
the method that produced it and its spread.

    {
      "schema": "roofline-explorer/probe", "version": 1,
      "created_at": "2026-12-01T12:00:00+00:00", "quick": false,
      "device": {"name": ..., "kind": "cpu|cuda|rocm|mps", "backend": "numpy|torch", "memory_bytes": ..., ...},
      "host": {"platform": ..., "python": ..., "libraries": {"numpy": "2.4.6", ...}},
      "bandwidth": [{"method": "copy|triad|add", "buffer_bytes": ..., "bytes_moved": ..., "best_s": ..., ...}],
      "matmul": [{"precision": "bf16", "shape": "square|decode|prefill", "m": ..., "n": ..., "k": ..., ...}],
      "summary": {"bandwidth_bytes_per_s": ..., "peak_flops": {"bf16": ...}},
      "skipped": [{"what": "fp8 matmul", "why": "..."}]
    }

Units are SI and decimal: bytes, seconds, bytes/s (1 TB/s = 1e12), FLOP/s.
A run's rate is computed from its best (shortest) time; `median_s` and
`spread` (median over best, minus 1) say how steady the repeats were.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA: Literal["roofline-explorer/probe"] = "roofline-explorer/probe"
VERSION: Literal[1] = 1
#: The precisions a probe may report (the catalogue's dense-peak precisions it can measure).
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")

Positive = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Device(_Strict):
    """What was measured."""

    name: Annotated[str, Field(min_length=1, max_length=120)]
    kind: Literal["cpu", "cuda", "rocm", "mps"]
    backend: Literal["numpy", "torch"]
    memory_bytes: Positive | None = None
    last_level_cache_bytes: Positive | None = None
    cores: Annotated[int, Field(ge=1)] | None = None
    driver: str | None = None  # NVIDIA/AMD driver version
    runtime: str | None = None  # CUDA / HIP / Metal runtime version, or the BLAS NumPy uses
    clock_mhz: Positive | None = None  # SM / core clock the vendor library reported
    memory_clock_mhz: Positive | None = None
    power_limit_w: Positive | None = None


class Host(_Strict):
    platform: str
    python: str
    libraries: dict[str, str] = Field(default_factory=dict)


class Timing(_Strict):
    """Repeated timings of one run (after warm-up): every repeat, its best and median."""

    repeats: Annotated[int, Field(ge=1)]
    best_s: Positive
    median_s: Positive
    times_s: list[Positive]

    @property
    def spread(self) -> float:
        """median / best - 1: 0.02 means the typical repeat was 2% slower than the best."""
        return self.median_s / self.best_s - 1.0


class BandwidthRun(Timing):
    """Streaming over a buffer: `copy` reads one array and writes another (2 x buffer bytes moved), `triad`
    (a = b + s * c, one kernel) and `add` (a = b + c, NumPy's one-pass stand-in for the triad) read two and
    write one (3 x). Bytes are counted as STREAM counts them: a write's read-for-ownership is not added."""

    method: Literal["copy", "triad", "add"]
    buffer_bytes: Positive  # one array
    bytes_moved: Positive  # per repeat, counted as the kernel's reads + writes
    bytes_per_s: Positive


class MatmulRun(Timing):
    """C[m, n] = A[m, k] @ B[k, n] at one precision: 2 m n k FLOPs per product."""

    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
    shape: Literal["square", "decode", "prefill"]
    m: Annotated[int, Field(ge=1)]
    n: Annotated[int, Field(ge=1)]
    k: Annotated[int, Field(ge=1)]
    flops: Positive  # per product
    bytes: Positive  # A, B and C once each, at the operands' width
    flops_per_s: Positive

    @property
    def intensity(self) -> float:
        """FLOP per byte of the product if each operand crossed memory once."""
        return self.flops / self.bytes


class Skipped(_Strict):
    what: str
    why: str


class Summary(_Strict):
    """The two roofs: the best sustained bandwidth of any run, the best square matmul per precision."""

    bandwidth_bytes_per_s: Positive
    peak_flops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8"], Positive] = Field(default_factory=dict)


class ProbeDocument(_Strict):
    """One probe of one device."""

    schema_: Annotated[Literal["roofline-explorer/probe"], Field(alias="schema")] = SCHEMA
    version: Literal[1] = VERSION
    created_at: str
    quick: bool = False
    device: Device
    host: Host
    bandwidth: Annotated[list[BandwidthRun], Field(min_length=1)]
    matmul: list[MatmulRun] = Field(default_factory=list)
    summary: Summary
    skipped: list[Skipped] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _summary_agrees(self) -> ProbeDocument:
        best = max(r.bytes_per_s for r in self.bandwidth)
        if abs(self.summary.bandwidth_bytes_per_s - best) > 1e-6 * best:
            raise ValueError(f"summary.bandwidth_bytes_per_s {self.summary.bandwidth_bytes_per_s:.6g} is not the best run's {best:.6g}")
        for prec, value in self.summary.peak_flops.items():
            runs = [r.flops_per_s for r in self.matmul if r.precision == prec and r.shape == "square"]
            if not runs or abs(value - max(runs)) > 1e-6 * max(runs):
                raise ValueError(f"summary.peak_flops.{prec} is not the best square {prec} matmul")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def summarise(bandwidth: list[BandwidthRun], matmul: list[MatmulRun]) -> Summary:
    """The roofs a set of runs shows: best bandwidth, best square product per precision."""
    peaks: dict[str, float] = {}
    for run in matmul:
        if run.shape == "square":
            peaks[run.precision] = max(peaks.get(run.precision, 0.0), run.flops_per_s)
    return Summary(bandwidth_bytes_per_s=max(r.bytes_per_s for r in bandwidth), peak_flops=peaks)  # type: ignore[arg-type]
