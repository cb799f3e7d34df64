"""Total and active parameter counts of every seeded model against its published figures.

data/seed/models.csv states, per model, which convention the published
figure follows:

- total_convention 'unique': compare total_params;
  'tied_lm_head_counted_twice': the checkpoint stores the tied lm_head as a
  second tensor, so compare total + vocab x hidden;
- published_extra_params (a vision encoder, say) is added to the computed
  total before comparing (it is a part of the published total the text model
  lacks; the active figures are text-only, see llama-4's notes);
- active_convention 'all': active_params; 'no_input_embedding': active -
  vocab x hidden; 'no_embeddings': active - 2 x vocab x hidden.

A figure passes if it is within 1%, or if the computed value lies in
[published - rounding / 2, published + rounding) where rounding is the unit
of the published figure's last printed digit (a printed "3.3B" may be 3.35B
rounded or truncated).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from core.catalogue.model_config import ConfigError, load_config, model_from_config, parse_config_text
from core.catalogue.operations import summary
from tests.helpers import SEED

ROWS = list(csv.DictReader((SEED / "models.csv").open(encoding="utf-8")))


def _within(computed: float, published: float, rounding: float) -> bool:
    return abs(computed - published) <= 0.01 * published or published - rounding / 2 <= computed < published + rounding


def _record(row: dict):
    cfg = json.loads((SEED / row["config_file"]).read_text(encoding="utf-8"))
    return model_from_config(cfg, model_id=row["id"], name=row["name"])


def test_every_seed_model_is_listed() -> None:
    """Every config under data/seed/models/ has a models.csv row, and every row's config exists."""
    files = {p.name for p in (SEED / "models").glob("*.json")}
    listed = {Path(r["config_file"]).name for r in ROWS}
    assert files == listed
    assert len(ROWS) == len({r["id"] for r in ROWS})


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_total_params_match_published(row: dict) -> None:
    """The computed total (in the published convention, plus any extra published parts) matches models.csv."""
    rec = _record(row)
    s = summary(rec)
    vh = rec.vocab_size * rec.hidden_size
    conv = row["total_convention"]
    assert conv in ("unique", "tied_lm_head_counted_twice"), conv
    if conv == "tied_lm_head_counted_twice":
        assert rec.tie_embeddings, "only a tied lm_head can be counted twice"
    computed = s["total_params"] + (vh if conv == "tied_lm_head_counted_twice" else 0) + float(row["published_extra_params"] or 0)
    published, rounding = float(row["published_total_params"]), float(row["total_rounding"])
    assert _within(computed, published, rounding), (
        f"{row['id']}: total {computed:,.0f} vs published {published:,.0f} ({computed / published - 1:+.3%}; "
        f"convention {conv}) — source: {row['params_source']}"
    )


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_active_params_match_published(row: dict) -> None:
    """The computed active count (in the published convention) matches models.csv.

    A published active figure from the same tensor count as a total that counts
    a tied lm_head twice (Falcon 40B: one safetensors figure for both) counts it
    twice as well, so the same adjustment is applied.
    """
    rec = _record(row)
    s = summary(rec)
    vh = rec.vocab_size * rec.hidden_size
    conv = row["active_convention"]
    offsets = {"all": 0, "no_input_embedding": vh, "no_embeddings": 2 * vh}
    assert conv in offsets, conv
    computed = s["active_params"] - offsets[conv]
    if row["total_convention"] == "tied_lm_head_counted_twice":
        computed += vh
    published, rounding = float(row["published_active_params"]), float(row["active_rounding"])
    assert _within(computed, published, rounding), (
        f"{row['id']}: active {computed:,.0f} vs published {published:,.0f} ({computed / published - 1:+.3%}; "
        f"convention {conv}) — source: {row['params_source']}"
    )


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_active_not_above_total(row: dict) -> None:
    """Active parameters never exceed the total; they are equal exactly for dense models."""
    rec = _record(row)
    s = summary(rec)
    assert s["active_params"] <= s["total_params"]
    assert (s["active_params"] == s["total_params"]) == (not rec.is_moe)


def test_exact_figures_are_exact() -> None:
    """Where models.csv gives an exact safetensors count (rounding 1) for a dense model, the computed count equals it exactly."""
    for row in ROWS:
        if row["total_rounding"] == "1" and row["total_convention"] == "unique" and row["published_extra_params"] in ("", "0"):
            rec = _record(row)
            if not rec.is_moe:
                assert summary(rec)["total_params"] == float(row["published_total_params"]), row["id"]


# -- refused configs ---------------------------------------------------------------

LLAMA_BASE = json.loads((SEED / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads", "vocab_size"])
def test_missing_required_field_is_named(field: str) -> None:
    """A llama config without a required shape field raises ConfigError naming that field."""
    cfg = {k: v for k, v in LLAMA_BASE.items() if k != field}
    with pytest.raises(ConfigError, match=field):
        model_from_config(cfg, model_id="broken")


@pytest.mark.parametrize(
    ("field", "value"), [("hidden_size", -4096), ("num_hidden_layers", 0), ("hidden_size", 4096.5), ("num_hidden_layers", "32")]
)
def test_invalid_field_value_is_named(field: str, value: object) -> None:
    """A non-positive, fractional or non-numeric shape field raises ConfigError naming the field."""
    with pytest.raises(ConfigError, match=field):
        model_from_config({**LLAMA_BASE, field: value}, model_id="broken")


def test_moe_config_without_top_k_is_refused() -> None:
    """An MoE config without num_experts_per_tok is refused with that field named."""
    cfg = json.loads((SEED / "models" / "mixtral-8x7b.json").read_text(encoding="utf-8"))
    del cfg["num_experts_per_tok"]
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        model_from_config(cfg, model_id="broken")


def test_non_object_json_is_refused() -> None:
    """JSON that is not an object ("[1,2]") is refused: the message says an object was expected and what came."""
    with pytest.raises(ConfigError, match=r"expected a JSON object, got list"):
        parse_config_text("[1,2]", source="upload.json")


@pytest.mark.parametrize("text", ['{"hidden_size": 4096,', "not json", ""])
def test_invalid_json_is_refused(text: str) -> None:
    """Invalid JSON is refused with the source name, 'is not valid JSON' and a line/column position."""
    with pytest.raises(ConfigError, match=r"upload\.json is not valid JSON: line \d+, column \d+: "):
        parse_config_text(text, source="upload.json")


def test_load_config_missing_file(tmp_path: Path) -> None:
    """A config path that does not exist is refused with 'file not found', never a bare FileNotFoundError."""
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.json")


def test_load_config_non_object_file(tmp_path: Path) -> None:
    """A file holding a JSON array is refused naming the file."""
    p = tmp_path / "config.json"
    p.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.json: expected a JSON object"):
        load_config(p)
