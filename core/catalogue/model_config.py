"""Parse a Hugging Face config.json into a `ModelRecord`, offline, without transformers.

One parser for every family in the catalogue: dense GQA (Llama, Mistral, Qwen,
Phi, Gemma, Falcon), MoE (Mixtral, Qwen-MoE, Llama 4, gpt-oss, GLM-4.5) and
MLA with MoE (DeepSeek-V3, Kimi K2). Fields a family's config class fills in
by default (and that published configs therefore omit) come from
`FAMILY_DEFAULTS`, each with the transformers class it mirrors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.catalogue.specs import ModelRecord


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
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{p}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text") from exc
    return parse_config_text(text, source=str(p))


def parse_config_text(text: str, *, source: str = "config.json") -> dict[str, Any]:
    """Decode config.json text into a dict; errors name the source and position."""
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
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
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "config"
        raise ConfigError(f"{loc}: {err['msg']}") from exc


def _int(c: dict[str, Any], *keys: str) -> int:
    value = _opt_int(c, *keys)
    if value is None:
        raise ConfigError(f"{keys[0]}: missing")
    return value


def _opt_int(c: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        if key in c and c[key] is not None:
            value = c[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
                raise ConfigError(f"{key}: expected an integer, got {value!r}")
            if value <= 0:
                raise ConfigError(f"{key}: must be positive, got {value!r}")
            return int(value)
    return None


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
        moe_ids = [int(i) for i in c["moe_layers"]]
    elif "first_k_dense_replace" in c:
        freq = _opt_int(c, "moe_layer_freq") or 1
        k = int(c.get("first_k_dense_replace") or 0)
        moe_ids = [i for i in range(layers) if i >= k and i % freq == 0]
    elif "interleave_moe_layer_step" in c:
        step = _opt_int(c, "interleave_moe_layer_step") or 1
        moe_ids = [i for i in range(layers) if (i + 1) % step == 0]
    else:
        step = _opt_int(c, "decoder_sparse_step") or 1
        dense_only = set(c.get("mlp_only_layers") or [])
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
        max_window_layers = int(c.get("max_window_layers") or layers)
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
