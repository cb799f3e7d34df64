"""Number formats: storage size per element and which tensor-core peak applies.

A scenario names three precisions separately (see performance-model.md):
weights (storage), compute (the tensor-core format whose peak FLOP/s applies)
and KV cache (storage). Storage sizes include quantisation scales where they
matter, e.g. int4 with group 128 and one fp16 scale is 4 + 16/128 = 4.125 bits.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Precision columns an accelerator row may carry a dense peak for, widest last.
PEAK_PRECISIONS: tuple[str, ...] = (
    "fp4",
    "int4",
    "fp6",
    "fp8",
    "int8",
    "bf16",
    "fp16",
    "tf32",
    "fp32",
)


@dataclass(frozen=True)
class Format:
    """One storage format: bits per element (scales included) and its compute family."""

    name: str
    bits: float
    compute: str  # the peak column a matmul in this format runs at (W8A8 etc.)
    description: str

    @property
    def bytes(self) -> float:
        """Bytes per element, scales included."""
        return self.bits / 8.0


#: Storage formats for weights and KV cache.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("fp32", 32, "fp32", "IEEE float32"),
        Format("bf16", 16, "bf16", "bfloat16"),
        Format("fp16", 16, "fp16", "IEEE float16"),
        Format("fp8", 8, "fp8", "fp8 e4m3 with a per-tensor scale (negligible)"),
        Format("int8", 8, "int8", "int8 with per-channel scales (negligible)"),
        Format("fp6", 6.25, "fp6", "MXFP6: 6 bits + one 8-bit scale per 32 elements"),
        Format("mxfp4", 4.25, "fp4", "MXFP4: 4 bits + one 8-bit (E8M0) scale per 32 elements"),
        Format("nvfp4", 4.5, "fp4", "NVFP4: 4 bits + one fp8 (E4M3) scale per 16 elements"),
        Format("fp4", 4.5, "fp4", "alias of NVFP4: 4 bits + one fp8 scale per 16 elements"),
        Format("int4", 4.125, "int4", "int4, group size 128 with one fp16 scale per group (GPTQ/AWQ style)"),
    )
}

#: The order in which a missing compute precision falls back to a wider supported one.
#: Rule: compute at the nearest supported *wider* format (never a made-up peak).
FALLBACK_CHAIN: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp6", "fp8", "bf16", "fp16", "tf32", "fp32"),
    "fp6": ("fp6", "fp8", "bf16", "fp16", "tf32", "fp32"),
    "fp8": ("fp8", "bf16", "fp16", "tf32", "fp32"),
    "int4": ("int4", "int8", "fp8", "bf16", "fp16", "tf32", "fp32"),
    "int8": ("int8", "fp8", "bf16", "fp16", "tf32", "fp32"),
    "bf16": ("bf16", "fp16", "tf32", "fp32"),
    "fp16": ("fp16", "bf16", "tf32", "fp32"),
    "tf32": ("tf32", "fp32"),
    "fp32": ("fp32",),
}

#: The compute formats a scenario may ask for (the keys of FALLBACK_CHAIN), in a fixed order.
COMPUTE_FORMATS: tuple[str, ...] = tuple(FALLBACK_CHAIN)

#: Bytes per element of activations when the matmul computes in a given format.
ACTIVATION_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp6": 1.0,  # activations of fp6/fp4 kernels are kept in fp8 in practice
    "fp4": 1.0,
    "int4": 1.0,
}


class UnknownPrecisionError(ValueError):
    """A precision name the format list lacks."""


def storage_format(name: str, *, argument: str = "precision") -> Format:
    """The storage format called `name`; a clear error naming the argument otherwise."""
    key = name.strip().lower()
    if key not in FORMATS:
        known = ", ".join(FORMATS)
        raise UnknownPrecisionError(f"{argument}: unknown precision {name!r}; known: {known}")
    return FORMATS[key]


def compute_precision(name: str, *, argument: str = "compute precision") -> str:
    """Normalise a compute precision name to a peak column (nvfp4/mxfp4 compute at fp4)."""
    key = name.strip().lower()
    if key in FALLBACK_CHAIN:
        return key
    if key in FORMATS:
        return FORMATS[key].compute
    known = ", ".join(FALLBACK_CHAIN)
    raise UnknownPrecisionError(f"{argument}: unknown precision {name!r}; known: {known}")


def default_compute(weights: str) -> str:
    """The compute format a serving stack would use for a weight format.

    fp8 weights compute in fp8 (W8A8), fp4 formats in fp4, everything else
    (int4/int8 weight-only quantisation, W4A16) dequantises to bf16.
    """
    fmt = storage_format(weights, argument="weights")
    if fmt.compute in ("fp8", "fp4", "fp32"):
        return fmt.compute
    return "bf16"
