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


_S1 = "https://github.com/ggml-org/llama.cpp/blob/f4a71e707e2c0e041fb43be5a32659f364fc712d/tools/quantize/README.md"
_S2 = "https://github.com/ggerganov/llama.cpp/blob/02240912ff3621da378ed62cb5d0f279f17fc9d1/examples/quantize/README.md"
_S3 = "https://github.com/ggml-org/ggml/blob/d99724f2b141fed9e1a9f402213506c081433465/src/ggml-common.h"

#: llama.cpp's GGUF types as storage formats: (name, bits per weight, what the figure is).
#: A K-quant file mixes types per tensor (Q4_K_M keeps some tensors in Q6_K), so the figure is the
#: whole file's average bits per weight that llama.cpp's own quantize table prints for Llama-3.1-8B
#: (S1: tools/quantize/README.md, "bits/weight"); where a file states its own size (llama-bench's
#: model size) the ceiling uses that instead (core.evidence.reference). Compute: llama.cpp's kernels
#: dequantise these to 16-bit (fp16) for the matrix products, so they compute at the fp16 peak.
GGUF: tuple[tuple[str, float, str], ...] = (
    ("q8_0", 8.5008, f"8.5008 bits per weight, the whole-file average llama.cpp prints for Llama-3.1-8B ({_S1})"),
    ("q6_k", 6.5633, f"6.5633 bits per weight, the whole-file average llama.cpp prints for Llama-3.1-8B ({_S1})"),
    ("q5_k_m", 5.7036, f"5.7036 bits per weight (a Q5_K/Q6_K mix), the whole-file average for Llama-3.1-8B ({_S1})"),
    ("q5_k_s", 5.5704, f"5.5704 bits per weight, the whole-file average for Llama-3.1-8B ({_S1})"),
    ("q4_k_m", 4.8944, f"4.8944 bits per weight (a Q4_K/Q6_K mix), the whole-file average for Llama-3.1-8B ({_S1})"),
    ("q4_k_s", 4.6672, f"4.6672 bits per weight, the whole-file average for Llama-3.1-8B ({_S1})"),
    ("q4_0", 4.5, f"4.5 bits per weight: blocks of 32 weights in 16 bytes plus one fp16 scale (block_q4_0, {_S3})"),
    ("q3_k_m", 3.91, f"3.91 bits per weight, the whole-file average llama.cpp printed for Llama 2 7B ({_S2})"),
    ("q2_k", 3.1593, f"3.1593 bits per weight, the whole-file average for Llama-3.1-8B ({_S1})"),
    ("iq4_xs", 4.4597, f"4.4597 bits per weight, the whole-file average for Llama-3.1-8B ({_S1}; the type itself is 4.25 bpw)"),
)

#: Other spellings of a format (llama.cpp writes f16 / f32).
ALIASES = {"f16": "fp16", "f32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}

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
        *(Format(name, bits, "fp16", f"llama.cpp GGUF {name.upper()}: {what}") for name, bits, what in GGUF),
    )
}

_GGUF_NAMES = frozenset(name for name, _, _ in GGUF)

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
    key = ALIASES.get(key, key)
    if key not in FORMATS and key.replace("-", "_") in FORMATS:  # q4-k-m, as a file name's tag writes q4_k_m
        key = key.replace("-", "_")
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
    if fmt.name in _GGUF_NAMES:  # llama.cpp dequantises to fp16
        return "fp16"
    return "bf16"
