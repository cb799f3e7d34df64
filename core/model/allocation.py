"""Memory as the serving engine allocates it: weights, activation peak, CUDA graphs, the KV cache and its tokens.

`allocate(cat, gpu, num_gpus, model, ...)` follows what vLLM or SGLang does at
start-up on each GPU of a tensor-parallel group and returns an `Allocation`
(a frozen dataclass, bytes per GPU): the device total as CUDA reports it, the
engine's budget, what it subtracts from it (weights, the activation peak of
its profile run, the CUDA-graph pool where the version subtracts it,
non-torch memory), the KV-cache bytes left, the KV-cache tokens rounded down
to whole blocks (pages) as the engine rounds them, and the largest
concurrency for L tokens per request ("Maximum concurrency for L tokens per
request: X" in vLLM's log). Every setting left out takes the engine's own
default for that version, the rules by GPU memory included. Each term comes
with one sentence and its source (`Allocation.terms`).

How each engine sizes the KV cache (the research notes,
docs/engine-memory/engine_defaults.md, sections 1-9; versions read from the
release wheels on PyPI, commits as 9-hex prefixes from `vllm/_version.py`):

- vLLM V1, 0.9.1 onwards: KV = total x gpu_memory_utilization - (weights +
  the torch peak of the profile run + non-torch memory)
  (`vllm/v1/worker/gpu_worker.py @ v0.11.0 (f71952c1c)` L183, L259-280;
  `vllm/utils/__init__.py @ v0.11.0` L2853-2859, `memory_profiling`). 0.8.0-0.9.0
  subtract the same peak (`gpu_worker.py @ v0.8.0` L151-186), as V0 did.
  CUDA graphs are captured after the KV cache until 0.19 (they live in the
  1 - utilisation headroom); from the 0.20.0 wheel their estimate is
  subtracted too (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` "1",
  `vllm/envs.py @ v0.20.0 (b8160878f)` L1722-1726; `gpu_worker.py @ v0.18.0`
  L396-440). 0.34.0's extensible KV cache (`vllm/v1/worker/extensible_kv_cache.py
  @ v0.34.0 (62d4bc3c7)` L592-618) sizes after warm-up against the whole device
  (utilisation 1.0) less a margin: modelled, flagged approximate.
- Blocks: num_blocks = KV // (block_size x bytes per token per layer) // layers
  (`vllm/v1/core/kv_cache_utils.py @ v0.11.0` L813-828); "GPU KV cache size" =
  num_blocks // groups x block_size (0.9.1-0.27), num_blocks x block_size
  (0.8.0-0.9.0), int(concurrency x max_model_len) (0.28+, `@ v0.34.0`
  L1140-1175); concurrency = num_blocks / blocks one request needs
  (0.9.1+, `@ v0.11.0` L780-795; tokens / L before). Layers with a sliding
  window form their own KV groups (vLLM's hybrid allocator); a window group
  needs cdiv(min(window - 1 + max_num_batched_tokens, L), block) + 1 blocks.
- SGLang: free memory before the weights load F, after it F - W - what else
  was allocated meanwhile; KV = (F - W - other) - F x (1 - mem_fraction_static)
  = F x mem_fraction_static - W - other
  (`python/sglang/srt/model_executor/model_runner.py @ v0.5.5` L1260-1322,
  `profile_max_num_token`; `mem_cache/kv_cache_configurator.py @ v0.5.23`
  L2990-3060); tokens = KV // cell size, rounded down to page_size (default 1).
  Activations and CUDA graphs live in the 1 - mem_fraction_static headroom.

Terms the engines measure and this module cannot: each is one rule with
constants chosen once, stated below with what they were checked against
(printed term values in the start-up logs of tests/fixtures/engine_startup_logs.csv
and the research notes; never a constant per log).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import storage_format

GIB = float(1 << 30)
MIB = float(1 << 20)

ENGINES = ("vLLM", "SGLang")
#: The newest release each engine's research notes read (vLLM 0.34.0 of 2026-11-16, SGLang 0.5.23 of 2026-10-30).
DEFAULT_VERSION = {"vLLM": "0.34.0", "SGLang": "0.5.23"}
#: The oldest release whose sizing the notes and the start-up logs cover (vLLM 0.5.3 and SGLang 0.4.2 are the oldest logs).
OLDEST_VERSION = {"vLLM": "0.5.0", "SGLang": "0.4.0"}
USAGES = ("serve", "LLM")  # vLLM's usage context: `vllm serve` (OPENAI_API_SERVER) or the offline `LLM(...)` class

# --- the device total -------------------------------------------------------------------------------------------
#: DRAM capacities are binary: a datasheet's "80 GB" H100 carries 80 GiB of HBM3 (five 16 GiB stacks), a "24 GB" RTX 3090
#: twelve 2 GiB GDDR6X chips. CUDA reports a little less as the device total (`torch.cuda.mem_get_info()[1]`, which vLLM
#: multiplies by its utilisation): the driver keeps the rest. The printed totals: H100 79.18 GiB (llm-d-benchmark,
#: "Free memory on device: 78.57/79.18 GiB"), A100 40GB 39.50 GiB (vllm#12330, "total_gpu_memory (39.50GiB)"), RTX 3090
#: 23.58 GiB (vllm#10517), L40S 44.42 GiB of 45 GiB after ECC (tim-roethig/ai-platform@8fc2c9b, "(43.93/44.42 GiB)").
#: One fraction, the least-squares fit to those four totals (not to any KV figure): 1.15% of the capacity.
CUDA_RESERVE_FRACTION = 0.0115
#: NVIDIA data-centre boards with GDDR memory run ECC by default, which takes 1/16 of it: nvidia-smi prints 46,068 MiB for an
#: L40S (tim-roethig/ai-platform@8fc2c9b, ollama_vs_vllm.md) = 48 GiB x 15/16 - 12 MiB. HBM keeps ECC out of band.
ECC_GDDR_IDS = frozenset({"l40s", "l40", "l4", "a40", "a10", "a10g", "t4"})
ECC_SHARE = 1.0 / 16.0
#: Parts whose GPU shares the system's memory: CUDA's total is what the OS leaves, not modelled (flagged).
UNIFIED_FORM_FACTORS = frozenset({"desktop", "module", "SoC"})

# --- what an engine process holds besides torch tensors ---------------------------------------------------------
#: The CUDA context and torch's start-up, held before the engine measures anything: vLLM's "Free memory on device" at
#: start-up is 0.61 GiB under the total on an H100 (llm-d) and 0.49 GiB on an L40S (TP8, ai-platform); SGLang's
#: "Load weight begin. avail mem" is 0.82 GiB under an RTX 3090's total (jerryzsj/my-deepseek-r1). vLLM leaves it in the
#: 1 - utilisation headroom; SGLang's F is the total less it (and, with tensor parallelism, less the NCCL and custom
#: all-reduce buffers below, set up before F is measured; the NON_TORCH_BYTES workspaces come after it).
CUDA_CONTEXT_BYTES = 0.6 * GIB
#: vLLM's non-torch increase during start-up (cuBLAS/NCCL workspaces): 0.13-0.14 GiB on one H100 (llm-d, five models),
#: 0.10 on an A100 (vllm#12330); with tensor parallelism NCCL's buffers, and vLLM's custom all-reduce buffers where the
#: GPUs share an NVLink/xGMI fabric: 0.54-0.55 GiB on 2 x H100 (llm-d), 0.21 on 8 x L40S over PCIe (custom all-reduce off),
#: 0.25 on 2 x RTX 4090 (vllm#13061).
NON_TORCH_BYTES = 0.15 * GIB
NCCL_BYTES = 0.1 * GIB
CUSTOM_ALLREDUCE_BYTES = 0.3 * GIB
LINKED_FORM_FACTORS = frozenset({"SXM", "OAM", "superchip"})

# --- the profile run's activation peak ---------------------------------------------------------------------------
#: The forward pass over max_num_batched_tokens tokens: per token, 3 x (hidden + intermediate per GPU) activations of
#: 2 bytes (the residual, the normed input, the gate/up output and the activated product alive at once). Checked on
#: vllm#10517 (Llama 3.1 8B, profile batch = max_model_len): printed peak_torch_memory - weights = 2.07 GiB at 20,000
#: tokens and 2.99 GiB at 29,000 against 2.06 and 2.99 by this rule. MoE layers: 3 x hidden + top_k x (3 x expert
#: intermediate per GPU + hidden) (fused_moe's three caches) plus the shared experts' 3 x intermediate per GPU.
FORWARD_MULTIPLE = 3.0
ACTIVATION_BYTES = 2.0
#: The sampler run that follows (`_dummy_sampler_run`: max_num_seqs rows of logits, top-k and top-p on), in fp32 buffers of
#: max_num_seqs x vocab, by the sampler path the version takes. The peak is the larger of the forward and the sampler.
#: - "native" (PyTorch sort, `vllm/v1/sample/ops/topk_topp_sampler.py @ v0.11.0` `apply_top_k_top_p`): the bf16 logits (0.5),
#:   their fp32 copy, the sorted values, their int64 indices (2), the radix sort's scratch (3), softmax of the sorted
#:   values, the masks: about 9; 10 as the printed peaks read: llm-d H100 (1,024 seqs, vLLM "latest" of Jan 2026) Llama
#:   3.1 8B 4.76, Llama 3.3 70B TP2 4.84, Qwen3-32B 5.64, gpt-oss 7.38 GiB against 4.89, 4.89, 5.80, 7.67; 8 x L40S
#:   (256 seqs, 0.10.2) Qwen3-235B 1.40 against 1.45.
#: - "triton" (0.17.1-0.21, `apply_top_k_top_p_triton` in place, `topk_topp_triton.py @ v0.19.1` L965-1035): bf16 logits
#:   (0.5), fp32 logits, probabilities, exponential noise, plus a kernel buffer of min(SMs, rows) rows: 4.
#: - "flashinfer" (`flashinfer_sample`): bf16 logits (0.5), fp32 logits, the softmax and FlashInfer's renormed
#:   probabilities: 3.5.
SAMPLER_BUFFERS = {"native": 10.0, "triton": 4.0, "flashinfer": 3.5}
SAMPLERS = tuple(SAMPLER_BUFFERS)
LOGIT_BYTES = 4.0

# --- CUDA graphs -----------------------------------------------------------------------------------------------------
#: Per captured batch size: vLLM 0.19's "Estimated CUDA graph memory" is 2.35 GiB for 51 sizes (Qwen3-8B, A100,
#: dariustanrd/tokenkaki) and 2.73 GiB for 51 (Qwen2.5-72B TP4, L40S, gnosia93/agentic-ai-eks): 47 and 55 MiB a size.
CUDA_GRAPH_BYTES_PER_SIZE = 50.0 * MIB
#: Data-centre Blackwell (compute capability 10.x) captures up to 1,024 from 0.28 (`vllm/config/vllm.py @ v0.34.0` L2398-2408).
SM100_IDS = frozenset({"b200", "b300", "gb200", "gb300"})

# --- 0.34.0's extensible KV cache (`extensible_kv_cache.py @ v0.34.0` L592-618; research notes section 4d) ----------
EXTENSIBLE_MARGIN_FLOOR = {"cuda": 1.0 * GIB, "rocm": 3.0 * GIB}
EXTENSIBLE_MARGIN_FRACTION = 0.75
EXTENSIBLE_NON_TORCH_RESERVE = {"cuda": 512.0 * MIB, "rocm": 1.0 * GIB}

_SOURCE_VLLM_SIZING = "vllm/v1/worker/gpu_worker.py @ v0.11.0 (f71952c1c) L259-280; vllm/utils/__init__.py @ v0.11.0 L2853-2859"
_SOURCE_SGLANG_SIZING = "sglang/srt/model_executor/model_runner.py @ v0.5.5 L1260-1322 (profile_max_num_token)"


class AllocationError(ValueError):
    """An engine, version or setting this module cannot size; the message names it."""


@dataclass(frozen=True)
class Term:
    """One term of the allocation: its bytes per GPU, whether the engine subtracts it from its budget, a sentence, a source."""

    name: str
    bytes: float
    subtracted: bool
    explanation: str
    source: str


@dataclass(frozen=True)
class EngineSettings:
    """The engine's settings as used: given ones, or the version's defaults (named in `defaulted`)."""

    engine: str
    version: str
    #: gpu_memory_utilization (vLLM) or mem_fraction_static (SGLang)
    memory_fraction: float
    max_model_len: int
    #: vLLM: the profile run's tokens; SGLang: chunked_prefill_size (it sizes nothing here)
    max_num_batched_tokens: int
    #: vLLM: the sampler run's rows and the CUDA-graph sizes; SGLang: cuda_graph_max_bs (its default fraction reads it)
    max_num_seqs: int
    #: vLLM block_size, SGLang page_size
    block_size: int
    usage: str
    enforce_eager: bool
    #: vLLM: the profile's top-k/top-p path ("native", "triton", "flashinfer"); SGLang: "" (its sampler is not profiled)
    sampler: str
    defaulted: tuple[str, ...]


@dataclass(frozen=True)
class Allocation:
    """Memory per GPU as the engine allocates it at start-up (bytes), and the KV cache's tokens and concurrency."""

    gpu: str
    num_gpus: int
    model: str
    weights: str
    kv: str
    settings: EngineSettings
    #: the device total CUDA reports (what vLLM multiplies by its utilisation)
    total_bytes: float
    #: held before the engine measures: the CUDA context (vLLM: in the headroom); SGLang: with tensor parallelism also
    #: NCCL's (and custom all-reduce's) buffers, all off its F
    context_bytes: float
    #: vLLM: total x utilisation; SGLang: F x mem_fraction_static, F = total - context_bytes
    budget_bytes: float
    weights_bytes: float
    #: the profile run's torch peak above the weights (vLLM subtracts it; SGLang leaves it to the headroom, 0 here)
    activation_bytes: float
    #: the CUDA-graph pool the version subtracts (0 where it is captured into the headroom)
    cuda_graph_bytes: float
    #: non-torch memory the engine counts (vLLM: NCCL/cuBLAS workspaces; 0.34: plus its reserve and margin)
    non_torch_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token: float
    kv_cache_blocks: int
    kv_cache_tokens: int
    concurrency_tokens: int
    max_concurrency: float
    #: why a figure is only approximate (sliding-window groups, unified memory, 0.34's post-warm-up sizing, V0 ...)
    approximate: tuple[str, ...]
    terms: tuple[Term, ...]

    def sentences(self) -> list[str]:
        """Each term as "name: X.XX GiB - explanation (source)"."""
        return [f"{t.name}: {t.bytes / GIB:.2f} GiB - {t.explanation} ({t.source})" for t in self.terms]


def parse_version(version: str) -> tuple[int, int, int]:
    """A version string's first three numbers: "0.10.1.1" -> (0, 10, 1), "0.11.0+582e4e37.nv25.11" -> (0, 11, 0),
    "0.4.3.post4" -> (0, 4, 3), "0.9.1.dev705+g01220ce89" -> (0, 9, 1)."""
    numbers = re.findall(r"\d+", version.split("+")[0].split(".dev")[0].split("rc")[0].split(".post")[0])
    if not numbers:
        raise AllocationError(f"engine version: cannot read {version!r} (expected e.g. 0.11.0)")
    parts = [int(n) for n in numbers[:3]] + [0] * (3 - min(len(numbers), 3))
    return parts[0], parts[1], parts[2]


def default_sampler(version: str) -> str:
    """The top-k/top-p path a `pip install vllm` of this version takes: FlashInfer is an optional extra up to 0.11.0 and
    opt-in (`VLLM_USE_FLASHINFER_SAMPLER`) from 0.11.1 (`topk_topp_sampler.py @ v0.11.2` L34-44), so "native"; the Triton
    kernel from 0.17.1 (`@ v0.17.1` L245-255, for 8 rows or more); FlashInfer on by default from 0.22.0 (`vllm/envs.py
    @ v0.22.0` L818-821). The Docker images install FlashInfer: pass "flashinfer" for an image of 0.8.0-0.11.0."""
    v = parse_version(version)
    if v >= (0, 22, 0):
        return "flashinfer"
    if v >= (0, 17, 1):
        return "triton"
    return "native"


def device_total_bytes(cat: Catalogue, gpu: str) -> float:
    """The device total CUDA reports: the datasheet capacity read as GiB, less ECC's 1/16 on GDDR data-centre boards,
    less the driver's 1.15% (CUDA_RESERVE_FRACTION)."""
    capacity = cat.gpu(gpu).memory_bytes / 1e9 * GIB
    if gpu in ECC_GDDR_IDS:
        capacity *= 1.0 - ECC_SHARE
    return capacity * (1.0 - CUDA_RESERVE_FRACTION)


@dataclass(frozen=True)
class _Shape:
    """What sizing needs of a model, per GPU."""

    params: float
    vocab: int
    forward_elems_per_token: float
    kv_bytes_per_token: float
    #: (layers, bytes per token per layer, window) of each attention row (window 0: full attention)
    layer_rows: tuple[tuple[int, float, int], ...]


def _shape(cat: Catalogue, model: str, tp: int, kv_bytes: float) -> _Shape:
    rec = cat.model(model)
    i = cat.model_index[model]
    arrays = cat.model_arrays
    replicated = arrays["kv_replicated"][i] == 1
    shard = 1.0 if replicated else min(float(tp), float(arrays["kv_heads"][i]))
    attn = cat.attention_matrix
    rows = tuple(
        (int(attn.layers[i, r]), float(attn.kv_elems[i, r]) * kv_bytes / shard, int(attn.window[i, r]))
        for r in range(attn.kind.shape[1])
        if attn.kind[i, r] >= 0 and attn.layers[i, r] > 0
    )
    h = float(rec.hidden_size)
    dense = FORWARD_MULTIPLE * (h + rec.intermediate_size / tp)
    moe = 0.0
    if rec.num_experts:
        shared = rec.num_shared_experts * rec.shared_intermediate_size
        moe = (
            FORWARD_MULTIPLE * h
            + rec.experts_per_token * (FORWARD_MULTIPLE * rec.moe_intermediate_size / tp + h)
            + FORWARD_MULTIPLE * shared / tp
        )
        if rec.moe_layer_ids is not None and len(rec.moe_layer_ids) >= rec.num_layers:
            dense = 0.0  # every layer is an MoE layer
    return _Shape(
        params=float(arrays["total_params"][i]),
        vocab=rec.vocab_size,
        forward_elems_per_token=max(dense, moe),
        kv_bytes_per_token=sum(layers * b for layers, b, _ in rows),
        layer_rows=rows,
    )


@dataclass(frozen=True)
class _Start:
    """What both engines' sizing starts from: the deployment, the release, the device total, the weights per GPU, the
    model's KV shape; `approximate` and `defaulted` collect the reasons and the settings taken by default."""

    cat: Catalogue
    gpu: str
    n: int
    model: str
    weights: str
    kv: str
    version: str
    v: tuple[int, int, int]
    total: float
    weights_bytes: float
    shape: _Shape
    windowed: bool
    rocm: bool
    approximate: list[str]
    defaulted: list[str]

    @property
    def deployment(self) -> tuple[Catalogue, str, int, str, str, str, str, tuple[int, int, int]]:
        """(catalogue, accelerator, GPUs, model, weights, KV format, release as given, release as numbers)."""
        return self.cat, self.gpu, self.n, self.model, self.weights, self.kv, self.version, self.v


def _vllm_batch_defaults(v: tuple[int, int, int], mem: float, name: str, gpu: str, usage: str) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM picks for this GPU (research notes sections 1-2)."""
    big = {"LLM": 16384, "serve": 8192}[usage]
    small = {"LLM": 8192, "serve": 2048}[usage]
    a100 = "a100" in name
    if v < (0, 8, 0):  # V0: 256 sequences; the token budget is set by the caller (see `allocate`)
        return 0, 256
    if v < (0, 8, 5):
        hopper = "h100" in name or "h200" in name
        tokens = big if hopper else small
        seqs = 1024 if v < (0, 8, 4) or hopper else 256
    elif v < (0, 28, 0):
        large = mem >= 70 * GIB and (v < (0, 9, 0) or not a100)
        tokens, seqs = (big, 1024) if large else (small, 256)
    else:
        if mem >= 160 * GIB:
            tokens, seqs = 16384, 1024
        elif mem >= 70 * GIB and not a100 and not (v >= (0, 34, 0) and gpu == "dgx-spark"):
            tokens, seqs = big, 1024
        else:
            tokens, seqs = small, 256
    return tokens, seqs


def _vllm_capture_sizes(v: tuple[int, int, int], max_num_seqs: int, max_num_batched_tokens: int, gpu: str) -> list[int]:
    """The batch sizes vLLM captures CUDA graphs for (research notes section 5)."""
    if v < (0, 10, 0):
        return [s for s in [1, 2, 4, *range(8, 513, 8)] if s <= max_num_batched_tokens]
    if v < (0, 11, 1):
        cap = min(max_num_seqs * 2, 512)
        return [1, 2, 4, *range(8, cap + 1, 8)]
    ceiling = 1024 if v >= (0, 28, 0) and gpu in SM100_IDS else 512
    cap = min(max_num_seqs * 2, ceiling, max_num_batched_tokens)
    return [s for s in [1, 2, 4, *range(8, 256, 8), *range(256, cap + 1, 16)] if s <= cap]


def _sglang_fraction(v: tuple[int, int, int], gpu_mem_mib: float, tp: int) -> tuple[float, int, int]:
    """(mem_fraction_static, chunked_prefill_size, cuda_graph_max_bs) SGLang picks (research notes sections 6-8)."""
    gib = 1024.0
    if v < (0, 4, 9):  # 0.4.6's rule (`server_args.py @ v0.4.6` L223-237); 0.4.3's printed defaults agree (0.85 at TP4, 0.88 at TP1)
        chunk = 2048 if gpu_mem_mib < 25_000 else 8192
        if gpu_mem_mib <= 81_920:
            fraction = 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
        else:
            fraction = (gpu_mem_mib - 13 * gib) / gpu_mem_mib
        return fraction, chunk, 160
    if v < (0, 5, 3):  # the reserved-memory table (`server_args.py @ v0.5.1` L366-391)
        if gpu_mem_mib < 35 * gib:
            reserved = (2.8 + tp / 10) * gib
        elif gpu_mem_mib < 90 * gib:
            reserved = (9.5 + tp / 2) * gib
        elif gpu_mem_mib < 160 * gib:
            reserved = (12 + tp / 2) * gib
        else:
            reserved = 32 * gib
        chunk = 2048 if gpu_mem_mib < 35 * gib else 8192 if gpu_mem_mib < 160 * gib else 16384
        return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3), chunk, 160
    # 0.5.3+: from the chunk and the graph batch (`server_args.py @ v0.5.5` L772-817; `arg_groups/memory_hook.py @ v0.5.23`)
    big_tp = tp >= 4
    if gpu_mem_mib < 20 * gib:
        chunk, max_bs = 2048, 8
    elif gpu_mem_mib < 35 * gib:
        if v >= (0, 5, 20):
            chunk, max_bs = 4096, (160 if big_tp else 48)
        else:
            chunk, max_bs = 2048, (80 if big_tp else (16 if v < (0, 5, 5) else 24))
    elif gpu_mem_mib < 60 * gib:
        chunk, max_bs = 4096, (160 if big_tp else 32)
    elif gpu_mem_mib < 160 * gib:
        chunk, max_bs = 8192, (512 if big_tp else 256)
    else:
        chunk, max_bs = 16384, 512
    reserved = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp / 8 * 1024
    if gpu_mem_mib > 60 * gib:
        reserved = max(reserved, 10 * gib)
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3), chunk, max_bs


def allocate(
    cat: Catalogue,
    gpu: str,
    num_gpus: int,
    model: str,
    *,
    weights: str = "bf16",
    kv: str = "bf16",
    engine: str = "vLLM",
    version: str | None = None,
    gpu_memory_utilization: float | None = None,
    mem_fraction_static: float | None = None,
    max_model_len: int | None = None,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    block_size: int | None = None,
    usage: str = "serve",
    enforce_eager: bool = False,
    sampler: str | None = None,
    concurrency_tokens: int | None = None,
) -> Allocation:
    """The start-up allocation of `engine` serving `model` on `num_gpus` (tensor parallel) x `gpu`, per GPU.

    Settings left None take the engine version's default (rules by GPU memory included); `concurrency_tokens` is L of
    "Maximum concurrency for L tokens per request" (default: max_model_len). `sampler` (vLLM: "native", "triton",
    "flashinfer") is the top-k/top-p path of the profile's sampler run; by default the one a `pip install vllm` of that
    version takes (`default_sampler`).
    """
    if engine not in ENGINES:
        raise AllocationError(f"engine: unknown {engine!r}; known: {', '.join(ENGINES)}")
    if usage not in USAGES:
        raise AllocationError(f"usage: unknown {usage!r}; known: {', '.join(USAGES)}")
    if num_gpus < 1:
        raise AllocationError("num_gpus: at least 1")
    acc = cat.gpu(gpu)
    rec = cat.model(model)
    version = version or DEFAULT_VERSION[engine]
    v = parse_version(version)
    if v < parse_version(OLDEST_VERSION[engine]):
        raise AllocationError(
            f"engine version: {engine} {version} is older than the releases this module reads ({OLDEST_VERSION[engine]} "
            f"to {DEFAULT_VERSION[engine]})"
        )
    wfmt, kfmt = storage_format(weights, argument="weights"), storage_format(kv, argument="kv")
    shape = _shape(cat, model, num_gpus, kfmt.bytes)
    approximate: list[str] = []
    if v > parse_version(DEFAULT_VERSION[engine]):
        approximate.append(f"{engine} {version} is newer than the newest release read ({DEFAULT_VERSION[engine]}): sized as that one")
    if acc.form_factor in UNIFIED_FORM_FACTORS:
        approximate.append(f"{acc.name} shares system memory: CUDA's total is what the OS leaves, taken here as the whole capacity")
    defaulted: list[str] = []
    if max_model_len is None:
        if not rec.max_context:
            raise AllocationError(f"max_model_len: {model} names no context length; give one")
        max_model_len = rec.max_context
        defaulted.append("max_model_len")
    start = _Start(cat, gpu, num_gpus, model, weights, kv, version, v, device_total_bytes(cat, gpu),
                   shape.params * wfmt.bytes / num_gpus, shape, any(w > 0 for _, _, w in shape.layer_rows),
                   acc.vendor == "AMD", approximate, defaulted)  # fmt: skip
    if engine == "vLLM":
        return _vllm(
            start, gpu_memory_utilization, max_model_len, max_num_batched_tokens, max_num_seqs, block_size, usage, enforce_eager,
            sampler, concurrency_tokens,
        )  # fmt: skip
    return _sglang(
        start, mem_fraction_static, max_model_len, max_num_batched_tokens, block_size, usage, enforce_eager, concurrency_tokens,
    )  # fmt: skip


def _vllm(
    start: _Start,
    util: float | None,
    max_model_len: int,
    tokens: int | None,
    seqs: int | None,
    block: int | None,
    usage: str,
    eager: bool,
    sampler: str | None,
    concurrency_tokens: int | None,
) -> Allocation:
    cat, gpu, n, model, weights, kv, version, v = start.deployment
    total, weights_bytes, shape, windowed = start.total, start.weights_bytes, start.shape, start.windowed
    approximate, defaulted = start.approximate, start.defaulted
    rocm = start.rocm
    acc = cat.gpu(gpu)
    rec = cat.model(model)
    v0 = v < (0, 8, 0)
    extensible = v >= (0, 34, 0)
    if v0:
        approximate.append("vLLM V0 (before 0.8): sized as V1's peak rule; its profile batch is max(max_model_len, 2048)")
    default_tokens, default_seqs = _vllm_batch_defaults(v, total, acc.name.lower(), gpu, usage)
    if util is None:
        util = 0.9 if v < (0, 20, 0) else (1.0 if extensible else 0.92)
        defaulted.append("gpu_memory_utilization")
    if tokens is None:
        tokens = max(max_model_len, 2048) if v0 else default_tokens
        if v >= (0, 11, 1):
            tokens = min((seqs or default_seqs) * max_model_len, tokens)
        defaulted.append("max_num_batched_tokens")
    if seqs is None:
        seqs = default_seqs
        if v >= (0, 10, 1):
            seqs = min(seqs, tokens)
        defaulted.append("max_num_seqs")
    if block is None:
        block = 64 if extensible or rec.is_mla else 16
        defaulted.append("block_size")
    if sampler is None:
        sampler = default_sampler(version)
        defaulted.append("sampler")
    if sampler not in SAMPLER_BUFFERS:
        raise AllocationError(f"sampler: unknown {sampler!r}; known: {', '.join(SAMPLERS)}")
    settings = EngineSettings("vLLM", version, util, max_model_len, tokens, seqs, block, usage, eager, sampler, tuple(defaulted))

    forward = tokens * shape.forward_elems_per_token * ACTIVATION_BYTES
    sampled = min(seqs, tokens) * shape.vocab * LOGIT_BYTES * SAMPLER_BUFFERS[sampler]
    activation = max(forward, sampled)
    linked = acc.form_factor in LINKED_FORM_FACTORS
    non_torch = NON_TORCH_BYTES + (NCCL_BYTES + (CUSTOM_ALLREDUCE_BYTES if linked else 0.0) if n > 1 else 0.0)
    sizes = [] if eager else _vllm_capture_sizes(v, seqs, tokens, gpu)
    graph_estimate = len(sizes) * CUDA_GRAPH_BYTES_PER_SIZE
    graphs_subtracted = v >= (0, 20, 0)
    graphs = graph_estimate if graphs_subtracted else 0.0
    budget = total * util
    held = weights_bytes + activation + non_torch + graphs
    extra = 0.0
    if extensible:
        approximate.append("vLLM 0.34's extensible KV cache sizes after warm-up, against the device less a margin")
        platform = "rocm" if rocm else "cuda"
        margin = max(EXTENSIBLE_MARGIN_FLOOR[platform], EXTENSIBLE_MARGIN_FRACTION * activation)
        used = CUDA_CONTEXT_BYTES + weights_bytes + non_torch + graphs
        available = min(budget - used, total - used - margin) - activation - EXTENSIBLE_NON_TORCH_RESERVE[platform]
        extra = (budget - held) - available
        non_torch += extra
        kv_bytes = max(available, 0.0)
    else:
        kv_bytes = max(budget - held, 0.0)

    L = concurrency_tokens or max_model_len
    blocks, printed_tokens, concurrency = _vllm_blocks(v, kv_bytes, shape, block, tokens, L, windowed, approximate)
    terms = (
        Term("device total", total, False, _TOTAL_SENTENCE, "torch.cuda.mem_get_info; CUDA_RESERVE_FRACTION"),
        Term(
            "budget",
            budget,
            False,
            f"vLLM's requested memory: the device total x gpu_memory_utilization {util:g}",
            "vllm/v1/worker/gpu_worker.py @ v0.11.0 (f71952c1c) L183; vllm/config/cache.py defaults per version",
        ),
        Term(
            "CUDA context",
            CUDA_CONTEXT_BYTES,
            False,
            "the CUDA context and torch's start-up, outside vLLM's count (in the 1 - utilisation headroom)",
            "CUDA_CONTEXT_BYTES",
        ),
        Term(
            "weights",
            weights_bytes,
            True,
            f"the catalogue's parameters x {storage_format(weights).bytes:g} bytes ({weights}) / {n} GPUs",
            "cat.model_arrays total_params; core.catalogue.precisions FORMATS",
        ),
        Term(
            "activation peak",
            activation,
            True,
            f"the profile run's torch peak above the weights: the larger of a {tokens}-token forward "
            f"({forward / GIB:.2f} GiB) and the {sampler} sampler over {min(seqs, tokens)} rows of {shape.vocab} logits "
            f"({sampled / GIB:.2f} GiB)",
            "GPUModelRunner.profile_run (gpu_model_runner.py @ v0.11.0 L3392-3397); FORWARD_MULTIPLE, SAMPLER_BUFFERS",
        ),
        Term(
            "CUDA graphs",
            graphs,
            graphs_subtracted,
            f"{len(sizes)} captured sizes x {CUDA_GRAPH_BYTES_PER_SIZE / MIB:.0f} MiB"
            + ("" if graphs_subtracted else f" ({graph_estimate / GIB:.2f} GiB, captured after the KV cache, into the headroom)"),
            "vllm/v1/worker/gpu_worker.py @ v0.18.0 L396-440; vllm/envs.py @ v0.20.0 L1722-1726",
        ),
        Term(
            "non-torch",
            non_torch,
            True,
            "cuBLAS/NCCL workspaces"
            + (", NCCL and custom all-reduce buffers" if n > 1 and linked else ", NCCL buffers" if n > 1 else "")
            + (f", and 0.34's margin and non-torch reserve ({extra / GIB:.2f} GiB)" if extensible else ""),
            "vllm/utils/__init__.py @ v0.11.0 L2853-2859 (non_torch_increase); NON_TORCH_BYTES"
            + ("; vllm/v1/worker/extensible_kv_cache.py @ v0.34.0 L592-618" if extensible else ""),
        ),
        Term("KV cache", kv_bytes, False, "what is left of the budget after the subtracted terms", _SOURCE_VLLM_SIZING),
    )
    return Allocation(
        gpu=gpu,
        num_gpus=n,
        model=model,
        weights=weights,
        kv=kv,
        settings=settings,
        total_bytes=total,
        context_bytes=CUDA_CONTEXT_BYTES,
        budget_bytes=budget,
        weights_bytes=weights_bytes,
        activation_bytes=activation,
        cuda_graph_bytes=graphs,
        non_torch_bytes=non_torch,
        kv_cache_bytes=kv_bytes,
        kv_bytes_per_token=shape.kv_bytes_per_token,
        kv_cache_blocks=blocks,
        kv_cache_tokens=printed_tokens,
        concurrency_tokens=L,
        max_concurrency=concurrency,
        approximate=tuple(approximate),
        terms=terms,
    )


_TOTAL_SENTENCE = "the datasheet capacity read as GiB (DRAM is binary), less ECC's 1/16 on GDDR data-centre boards, less the driver's 1.15%"


def _vllm_blocks(
    v: tuple[int, int, int],
    kv_bytes: float,
    shape: _Shape,
    block: int,
    batched: int,
    L: int,
    windowed: bool,
    approximate: list[str],
) -> tuple[int, int, float]:
    """(num_blocks, "GPU KV cache size" tokens, "Maximum concurrency") as vLLM computes them."""
    rows = shape.layer_rows
    per_layer = {b for _, b, _ in rows}
    hybrid = windowed and v >= (0, 10, 0) and len(per_layer) == 1
    if windowed and not hybrid:
        approximate.append("sliding-window layers counted as full attention (this vLLM version or mixed page sizes)")
    if hybrid:
        approximate.append("sliding-window layers in their own KV groups (vLLM's hybrid allocator), page sizes uniform")
        by_type: dict[int, int] = {}
        for layers, _, window in rows:
            by_type[window] = by_type.get(window, 0) + layers
        group_size = min(by_type.values())
        if max(by_type.values()) < group_size * 1.25:
            group_size = max(by_type.values())
        groups = {w: math.ceil(count / group_size) for w, count in by_type.items()}
        n_groups = sum(groups.values())
        page = block * per_layer.pop() * group_size
        blocks = int(kv_bytes // page)
        needed = 0
        for window, count in groups.items():
            if window == 0:
                needed += count * math.ceil(L / block)
            else:
                needed += count * (math.ceil(min(window - 1 + batched, L) / block) + 1)
        concurrency = blocks / needed
        tokens = blocks // n_groups * block
    else:
        blocks = int(kv_bytes // (block * shape.kv_bytes_per_token))
        if v < (0, 9, 1):
            tokens = blocks * block
            concurrency = tokens / L
        else:
            tokens = blocks * block
            concurrency = blocks / math.ceil(L / block)
    if v >= (0, 28, 0):
        tokens = int(concurrency * L)
    return blocks, tokens, concurrency


def _sglang(
    start: _Start,
    fraction: float | None,
    max_model_len: int,
    chunk: int | None,
    page: int | None,
    usage: str,
    eager: bool,
    concurrency_tokens: int | None,
) -> Allocation:
    cat, gpu, n, model, weights, kv, version, v = start.deployment
    total, weights_bytes, shape, windowed = start.total, start.weights_bytes, start.shape, start.windowed
    approximate, defaulted = start.approximate, start.defaulted
    gpu_mem_mib = total / MIB
    default_fraction, default_chunk, max_bs = _sglang_fraction(v, gpu_mem_mib, n)
    if fraction is None:
        fraction = default_fraction
        defaulted.append("mem_fraction_static")
    if chunk is None:
        chunk = default_chunk
        defaulted.append("max_num_batched_tokens")
    if page is None:
        page = 1
        defaulted.append("block_size")
    if windowed:
        approximate.append("sliding-window layers counted as full attention in SGLang's token pool")
    settings = EngineSettings("SGLang", version, fraction, max_model_len, chunk, max_bs, page, usage, eager, "", tuple(defaulted))
    linked = cat.gpu(gpu).form_factor in LINKED_FORM_FACTORS
    comm = NCCL_BYTES + (CUSTOM_ALLREDUCE_BYTES if linked else 0.0) if n > 1 else 0.0
    free_before = total - CUDA_CONTEXT_BYTES - comm
    budget = free_before * fraction
    kv_bytes = max(budget - weights_bytes - NON_TORCH_BYTES, 0.0)
    cells = int(kv_bytes // shape.kv_bytes_per_token)
    tokens = cells // page * page
    L = concurrency_tokens or max_model_len
    terms = (
        Term("device total", total, False, _TOTAL_SENTENCE, "torch.cuda.mem_get_info; CUDA_RESERVE_FRACTION"),
        Term(
            "CUDA context",
            CUDA_CONTEXT_BYTES + comm,
            True,
            "held before the weights load, so SGLang's F (free memory then) is the total less it: the CUDA context"
            + (", NCCL and custom all-reduce buffers" if n > 1 and linked else ", NCCL buffers" if n > 1 else ""),
            "model_runner.py @ v0.5.5 L309, L471-475; CUDA_CONTEXT_BYTES, NCCL_BYTES, CUSTOM_ALLREDUCE_BYTES",
        ),
        Term(
            "budget",
            budget,
            False,
            f"F x mem_fraction_static {fraction:g}: weights and the KV pool share it",
            _SOURCE_SGLANG_SIZING + "; server_args.py defaults per version",
        ),
        Term(
            "weights",
            weights_bytes,
            True,
            f"the catalogue's parameters x {storage_format(weights).bytes:g} bytes ({weights}) / {n} GPUs",
            "cat.model_arrays total_params; core.catalogue.precisions FORMATS",
        ),
        Term(
            "activation peak",
            0.0,
            False,
            f"not subtracted: activations (chunked prefill {chunk}) live in the 1 - mem_fraction_static headroom",
            "server_args.py @ v0.5.5 L772-817",
        ),
        Term(
            "CUDA graphs",
            0.0,
            False,
            f"not subtracted: graphs (up to batch {max_bs}) are captured into the headroom after the pool",
            "server_args.py @ v0.5.5 L840-857",
        ),
        Term(
            "non-torch",
            NON_TORCH_BYTES,
            True,
            "cuBLAS and other workspaces allocated while the weights load, so off the free memory SGLang measures after them",
            _SOURCE_SGLANG_SIZING + "; NON_TORCH_BYTES",
        ),
        Term("KV cache", kv_bytes, False, "F x mem_fraction_static - weights - non-torch: the token pool", _SOURCE_SGLANG_SIZING),
    )
    return Allocation(
        gpu=gpu,
        num_gpus=n,
        model=model,
        weights=weights,
        kv=kv,
        settings=settings,
        total_bytes=total,
        context_bytes=CUDA_CONTEXT_BYTES + comm,
        budget_bytes=budget,
        weights_bytes=weights_bytes,
        activation_bytes=0.0,
        cuda_graph_bytes=0.0,
        non_torch_bytes=NON_TORCH_BYTES,
        kv_cache_bytes=kv_bytes,
        kv_bytes_per_token=shape.kv_bytes_per_token,
        kv_cache_blocks=tokens // page,
        kv_cache_tokens=tokens,
        concurrency_tokens=L,
        max_concurrency=tokens / L,
        approximate=tuple(approximate),
        terms=terms,
    )


__all__ = ["Allocation", "AllocationError", "EngineSettings", "Term", "allocate", "default_sampler", "device_total_bytes", "parse_version"]
