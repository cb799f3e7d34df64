"""Parse a Hugging Face config.json into a `ModelRecord`, offline, without transformers.

One parser for every family in the catalogue: dense GQA (Llama, Mistral, Qwen,
Phi, Gemma, Falcon), MoE (Mixtral, Qwen-MoE, Llama 4, gpt-oss, GLM-4.5) and
MLA with MoE (DeepSeek-V3, Kimi K2). Fields a family's config class fills in
by default (and that published configs therefore omit) come from
`FAMILY_DEFAULTS`, each with the transformers class it mirrors.

A config.json is a user's file: its size and nesting are bounded before it
is parsed (core.catalogue.bounded_json), and every shape field is bounded
(`BOUNDS`, generously above the largest real checkpoint, which each bound
names) before any loop over layers or any allocation, so a config claiming
10^12 layers is refused at once with the field, its value and its bound.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from core.catalogue.bounded_json import MAX_DEPTH, JSONLimitError, loads
from core.catalogue.messages import Words, explain
from core.catalogue.specs import ModelRecord

#: Largest config.json read. Real ones are a few kB (the largest seed, Llama 4
#: Scout's, is 2.2 kB); a quantized checkpoint's, listing every module it leaves
#: unquantized, runs to tens of kB.
MAX_CONFIG_BYTES = 4_000_000


class ConfigError(ValueError):
    """A config.json that cannot describe a model; the message names the field."""


#: Defaults of transformers' config classes for fields published configs omit.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    # Gemma3TextConfig: vocab_size=262208, sliding_window_pattern=6, tied embeddings
    "gemma3_text": {"vocab_size": 262_208, "sliding_window_pattern": 6, "tie_word_embeddings": True},
    "gemma3": {"tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True},
    "gemma": {"tie_word_embeddings": True},
    # Falcon ties lm_head to the word embeddings (FalconForCausalLM._tied_weights_keys)
    "falcon": {"tie_word_embeddings": True},
    "RefinedWeb": {"tie_word_embeddings": True},
    # Llama4TextConfig: MoE every layer unless interleave_moe_layer_step says otherwise
    "llama4_text": {"interleave_moe_layer_step": 1, "tie_word_embeddings": False},
}


class Bound(NamedTuple):
    """The largest value accepted for a shape field, and the largest real model's value it is measured against."""

    limit: int
    largest: str


_LAYERS = Bound(1_024, "Llama 3.1 405B has 126 layers")
_HIDDEN = Bound(131_072, "Nemotron-4 340B has 18,432; Llama 3.1 405B 16,384")
_HEADS = Bound(4_096, "Falcon-180B has 232 heads; DeepSeek-V3 and Llama 3.1 405B 128")
_HEAD_DIM = Bound(4_096, "Gemma 2 and 3 have 256")
_FFN = Bound(1_048_576, "Nemotron-4 340B has 73,728; Llama 3.1 405B 53,248")
_EXPERTS = Bound(16_384, "Switch-C has 2,048 experts; Kimi K2 384")
_TOP_K = Bound(1_024, "Kimi K2, DeepSeek-V3 and GLM-4.5 route to 8")
_SHARED = Bound(1_024, "DeepSeek-V2-Lite has 2 shared experts")
_VOCAB = Bound(2_097_152, "Gemma 3 has 262,208 tokens")
_POSITIONS = Bound(268_435_456, "Llama 4 Scout has 10,485,760 positions")
_RANK = Bound(65_536, "DeepSeek-V3 has q_lora_rank 1,536 and kv_lora_rank 512")
_STEP = Bound(_LAYERS.limit, "a layer interval or count, at most the layer bound")

#: Upper bound of every integer field read from a config.json (aliases share one).
#: Each is 4x or more the largest real checkpoint named beside it.
BOUNDS: dict[str, Bound] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers"), _LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), _HIDDEN),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads"), _HEADS),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "n_head_kv"), _HEADS),
    **dict.fromkeys(("head_dim", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"), _HEAD_DIM),
    **dict.fromkeys(
        ("intermediate_size", "intermediate_size_mlp", "ffn_hidden_size", "moe_intermediate_size", "shared_expert_intermediate_size"),
        _FFN,
    ),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts"), _EXPERTS),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token", "moe_top_k"), _TOP_K),
    **dict.fromkeys(("n_shared_experts", "num_shared_experts"), _SHARED),
    "vocab_size": _VOCAB,
    **dict.fromkeys(("max_position_embeddings", "seq_length", "sliding_window", "attention_chunk_size"), _POSITIONS),
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank"), _RANK),
    **dict.fromkeys(
        (
            "moe_layer_freq",
            "interleave_moe_layer_step",
            "decoder_sparse_step",
            "sliding_window_pattern",
            "nope_layer_interval",
            "first_k_dense_replace",
            "max_window_layers",
        ),
        _STEP,
    ),
}

#: Families whose MLP is a plain up/down projection (no gate).
PLAIN_MLP = {"falcon", "RefinedWeb", "RefinedWebModel", "gpt2", "gpt_neox", "opt", "bloom", "phi", "starcoder2", "mpt"}
#: Families whose q/k/v projections carry a bias though the config has no flag for it.
QKV_BIAS = {"qwen2", "qwen2_moe"}
#: Families with RMSNorm on q and k per head.
QK_NORM = {"qwen3", "qwen3_moe", "gemma3_text", "olmo2"}


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json; a clear error naming the file when it is not a JSON object."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:  # refused before a byte is read
            raise ConfigError(f"{p}: the file is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,} bytes")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{p}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text") from exc
    return parse_config_text(text, source=str(p))


def parse_config_text(text: str, *, source: str = "config.json") -> dict[str, Any]:
    """Decode config.json text into a dict; errors name the source and position.

    Size and nesting are checked before parsing (MAX_CONFIG_BYTES, MAX_DEPTH).
    """
    try:
        cfg = loads(text, max_bytes=MAX_CONFIG_BYTES, max_depth=MAX_DEPTH, source=source)
    except JSONLimitError as exc:
        raise ConfigError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source} is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: expected a JSON object, got {type(cfg).__name__}")
    return cfg


def slugify(text: str) -> str:
    """A stable id slug from a display name ("Meta-Llama-3-8B" -> "meta-llama-3-8b")."""
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return slug or "model"


def model_from_config(cfg: dict[str, Any], *, model_id: str, name: str | None = None) -> ModelRecord:
    """The `ModelRecord` described by a config.json dict.

    Raises ConfigError naming the missing or invalid field.
    """
    top_type = str(cfg.get("model_type", ""))
    text = cfg.get("text_config")
    if isinstance(text, dict):
        text_type = str(text.get("model_type") or f"{top_type}_text")
        c = {**FAMILY_DEFAULTS.get(text_type, {}), **text}
        if "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
            c["tie_word_embeddings"] = cfg["tie_word_embeddings"]
        mtype = text_type
    else:
        mtype = top_type
        c = {**FAMILY_DEFAULTS.get(mtype, {}), **cfg}

    hidden = _int(c, "hidden_size", "n_embd", "d_model")
    layers = _int(c, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(c, "num_attention_heads", "n_head", "num_heads")
    vocab = _int(c, "vocab_size")
    kv_heads = _kv_heads(c, heads)
    head_dim = _opt_int(c, "head_dim") or _exact_div(hidden, heads, "hidden_size", "num_attention_heads")

    intermediate = _opt_int(c, "intermediate_size_mlp", "ffn_hidden_size") or _opt_int(c, "intermediate_size")
    if intermediate is None:
        if mtype in PLAIN_MLP:
            intermediate = 4 * hidden  # Falcon and GPT-style blocks: 4 x hidden
        else:
            raise ConfigError("intermediate_size: missing")

    moe = _moe(c, mtype, layers)
    mla = _mla(c)
    window, window_layers = _windows(c, mtype, layers)

    attention_bias = bool(c.get("attention_bias", False) or c.get("bias", False))
    quant = c.get("quantization_config") or cfg.get("quantization_config") or {}
    native = _native_weights(quant, str(c.get("torch_dtype") or cfg.get("torch_dtype") or "bfloat16"))

    fields: dict[str, Any] = {
        "id": model_id,
        "name": name or str(cfg.get("_name_or_path") or model_id),
        "architecture": mtype or "unknown",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_layers": layers,
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": intermediate,
        "mlp_gated": mtype not in PLAIN_MLP,
        "qkv_bias": attention_bias or mtype in QKV_BIAS,
        "o_bias": attention_bias,
        "mlp_bias": bool(c.get("mlp_bias", False)) or mtype == "gpt_oss",
        "qk_norm": mtype in QK_NORM,
        "tie_embeddings": bool(c.get("tie_word_embeddings", False)),
        "window": window,
        "window_layer_ids": window_layers,
        "attention_sinks": mtype == "gpt_oss",
        "native_weights": native,
        "max_context": _opt_int(c, "max_position_embeddings", "seq_length") or 0,
        **moe,
        **mla,
    }
    try:
        return ModelRecord(**fields)
    except ValidationError as exc:
        raise ConfigError("; ".join(explain(exc, MODEL_WORDS))) from exc


#: A ModelRecord field's words in messages: the config.json key it is read from (the user's file's words);
#: the id and the name come from the form's name.
MODEL_WORDS: dict[str, Words] = {
    "id": Words("ID made from the name", allowed="shorten the name"),
    "name": Words("Name", empty="give the model a name"),
    "num_layers": Words("num_hidden_layers", "layers"),
    "num_heads": Words("num_attention_heads", "heads"),
    "num_kv_heads": Words("num_key_value_heads", "heads"),
    "num_experts": Words("num_local_experts", "experts"),
    "experts_per_token": Words("num_experts_per_tok", "experts"),
    "num_shared_experts": Words("n_shared_experts", "experts"),
    "shared_intermediate_size": Words("shared_expert_intermediate_size"),
    "window": Words("sliding_window", "tokens"),
    "max_context": Words("max_position_embeddings", "tokens"),
    **{k: Words(k) for k in ("vocab_size", "hidden_size", "head_dim", "intermediate_size", "moe_intermediate_size")},
    **{k: Words(k) for k in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")},
}


def _int(c: dict[str, Any], *keys: str) -> int:
    value = _opt_int(c, *keys)
    if value is None:
        raise ConfigError(f"{keys[0]}: missing")
    return value


def _opt_int(c: dict[str, Any], *keys: str, minimum: int = 1) -> int | None:
    """The first of `keys` present: an integer from `minimum` to its bound (BOUNDS), else ConfigError naming it."""
    for key in keys:
        if key in c and c[key] is not None:
            return _checked(key, c[key], minimum)
    return None


def _checked(key: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key}: expected an integer, got {_show(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{key}: must be {'positive' if minimum == 1 else f'{minimum} or more'}, got {_show(value)}")
    bound = BOUNDS[key]
    if value > bound.limit:
        raise ConfigError(f"{key}: {_show(value)} is above the limit of {bound.limit:,} ({bound.largest})")
    return int(value)


def _show(value: Any) -> str:
    """A value for a one-line message: numbers with thousands separators, anything long cut short."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value)))
        return f"{value:,}" if digits <= 24 else f"a {digits:,}-digit number"
    if isinstance(value, float):
        return f"{value:,.0f}" if math.isfinite(value) and abs(value) < 1e24 else f"{value:.3g}"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _layer_ids(c: dict[str, Any], key: str, layers: int) -> list[int]:
    """A list of layer indices (moe_layers, mlp_only_layers): integers within the layers, no more entries than layers."""
    ids = c[key]
    if not isinstance(ids, list):
        raise ConfigError(f"{key}: expected a list of layer indices, got {_show(ids)}")
    if len(ids) > layers:
        raise ConfigError(f"{key}: {len(ids):,} entries for {layers} layers")
    for n, i in enumerate(ids):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers:
            raise ConfigError(f"{key}[{n}]: expected a layer index from 0 to {layers - 1}, got {_show(i)}")
    return list(ids)


def _exact_div(a: int, b: int, a_name: str, b_name: str) -> int:
    if a % b:
        raise ConfigError(f"head_dim: missing and {a_name} ({a}) is not divisible by {b_name} ({b})")
    return a // b


def _kv_heads(c: dict[str, Any], heads: int) -> int:
    kv = _opt_int(c, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if kv is not None:
        if c.get("model_type") in ("falcon", "RefinedWeb") and not c.get("new_decoder_architecture", True):
            return 1 if c.get("multi_query") else heads
        return kv
    if c.get("multi_query"):
        return 1
    return heads


def _moe(c: dict[str, Any], mtype: str, layers: int) -> dict[str, Any]:
    experts = _opt_int(c, "num_local_experts", "num_experts", "n_routed_experts") or 0
    if not experts:
        return {}
    per_token = _opt_int(c, "num_experts_per_tok", "experts_per_token", "moe_top_k")
    if per_token is None:
        raise ConfigError("num_experts_per_tok: missing for a mixture-of-experts config")
    expert_size = _opt_int(c, "moe_intermediate_size") or _opt_int(c, "intermediate_size")
    if expert_size is None:
        raise ConfigError("moe_intermediate_size: missing for a mixture-of-experts config")

    if "moe_layers" in c and isinstance(c["moe_layers"], list):
        moe_ids = _layer_ids(c, "moe_layers", layers)
    elif "first_k_dense_replace" in c:
        freq = _opt_int(c, "moe_layer_freq") or 1
        k = _opt_int(c, "first_k_dense_replace", minimum=0) or 0
        moe_ids = [i for i in range(layers) if i >= k and i % freq == 0]
    elif "interleave_moe_layer_step" in c:
        step = _opt_int(c, "interleave_moe_layer_step") or 1
        moe_ids = [i for i in range(layers) if (i + 1) % step == 0]
    else:
        step = _opt_int(c, "decoder_sparse_step") or 1
        dense_only = set(_layer_ids(c, "mlp_only_layers", layers) if c.get("mlp_only_layers") else [])
        moe_ids = [i for i in range(layers) if i not in dense_only and (i + 1) % step == 0]

    shared = _opt_int(c, "n_shared_experts", "num_shared_experts") or 0
    shared_size = expert_size
    if _opt_int(c, "shared_expert_intermediate_size"):
        shared, shared_size = 1, _int(c, "shared_expert_intermediate_size")
    elif mtype == "llama4_text":
        shared, shared_size = 1, _int(c, "intermediate_size")
    return {
        "num_experts": experts,
        "experts_per_token": per_token,
        "moe_intermediate_size": expert_size,
        "num_shared_experts": shared,
        "shared_intermediate_size": shared_size if shared else 0,
        "moe_layer_ids": moe_ids,
        "router_bias": mtype == "gpt_oss" or c.get("topk_method") == "noaux_tc",
    }


def _mla(c: dict[str, Any]) -> dict[str, Any]:
    rank = _opt_int(c, "kv_lora_rank")
    if not rank:
        return {}
    return {
        "kv_lora_rank": rank,
        "q_lora_rank": _opt_int(c, "q_lora_rank") or 0,
        "qk_nope_head_dim": _int(c, "qk_nope_head_dim"),
        "qk_rope_head_dim": _int(c, "qk_rope_head_dim"),
        "v_head_dim": _int(c, "v_head_dim"),
        "head_dim": _int(c, "qk_nope_head_dim") + _int(c, "qk_rope_head_dim"),
    }


def _windows(c: dict[str, Any], mtype: str, layers: int) -> tuple[int, list[int]]:
    """(window tokens, ids of layers that hold at most that many tokens)."""
    types = c.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers:
            raise ConfigError(f"layer_types: {len(types)} entries for {layers} layers")
        ids = [i for i, t in enumerate(types) if str(t) in ("sliding_attention", "chunked_attention")]
        window = _opt_int(c, "sliding_window", "attention_chunk_size") or 0
        if ids and not window:
            raise ConfigError("sliding_window: missing while layer_types names sliding layers")
        return window, ids
    if mtype == "llama4_text" and c.get("attention_chunk_size"):
        chunk = _int(c, "attention_chunk_size")
        nope = c.get("no_rope_layers")
        if isinstance(nope, list) and len(nope) == layers:
            # no_rope_layers[i] == 1 means layer i uses RoPE and chunked attention
            return chunk, [i for i, flag in enumerate(nope) if flag]
        interval = _opt_int(c, "nope_layer_interval") or 4
        return chunk, [i for i in range(layers) if (i + 1) % interval != 0]
    if not c.get("sliding_window") or c.get("use_sliding_window") is False:
        return 0, []
    window = _int(c, "sliding_window")
    if mtype == "gemma2":
        return window, [i for i in range(layers) if i % 2 == 0]
    if mtype == "gemma3_text":
        pattern = _opt_int(c, "sliding_window_pattern") or 6
        return window, [i for i in range(layers) if (i + 1) % pattern != 0]
    if mtype in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        max_window_layers = _opt_int(c, "max_window_layers", minimum=0) or layers
        return window, [i for i in range(layers) if i >= max_window_layers]
    return window, list(range(layers))


def _native_weights(quant: dict[str, Any], dtype: str) -> str:
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method in ("fp8", "compressed-tensors") and "fp8" in json.dumps(quant).lower():
        return "fp8"
    if method == "fp8":
        return "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method in ("awq", "gptq"):
        return "int4"
    return {"float16": "fp16", "float32": "fp32"}.get(dtype, "bf16")
