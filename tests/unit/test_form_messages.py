"""Form errors in the user's words: every field of the custom-accelerator and custom-model forms is refused by its
label, with values and bounds in the unit the form shows, never the validator's field name or SI figure."""

from __future__ import annotations

import json
import re

import pytest
from annotated_types import Ge, Gt, Le

from core.catalogue.catalogue import add_custom_model, config_source
from core.catalogue.messages import Words, number, quantity
from core.catalogue.model_config import ConfigError
from core.catalogue.seed import FORM_WORDS, CatalogueError, accelerator_from_row, accelerator_words
from core.catalogue.specs import PEAK_FLOPS_RANGE, Accelerator, accelerator_columns
from core.store import SEED, Store

#: What a message must never show: a code field name or pydantic's own wording.
INTERNALS = re.compile(r"_bytes|_per_s|peak_|_w\b|_usd|_latency_s|Input should|String should|Value error|'custom'")


def _row(**changes: object) -> dict:
    """A valid form row (SI units), as the form builds it, with `changes`."""
    base = {
        "id": "my-chip",
        "name": "My chip",
        "vendor": "Me",
        "form_factor": "custom",
        "year": 2025,
        "memory_bytes": 80e9,
        "bandwidth_bytes_per_s": 3.35e12,
        "peak_bf16": 989.4e12,
        "sources": "user-entered",
        "notes": "user-entered",
        "custom": True,
    }
    return {**base, **changes}


def _refusal(**changes: object) -> list[str]:
    with pytest.raises(CatalogueError) as err:
        accelerator_from_row(_row(**changes), FORM_WORDS)
    for problem in err.value.problems:
        assert not INTERNALS.search(problem), problem
    return err.value.problems


def test_the_issues_examples_read_in_the_forms_words():
    """Bandwidth in TB/s, an empty name, an empty memory, no peak at all."""
    assert _refusal(bandwidth_bytes_per_s=0.5e9) == ["Bandwidth must be at least 0.001 TB/s (got 0.0005 TB/s)"]
    assert _refusal(bandwidth_bytes_per_s=3350e12) == ["Bandwidth must be at most 50 TB/s (got 3,350 TB/s)"]
    assert _refusal(name="") == ["Name is empty: give the accelerator a name"]
    assert _refusal(memory_bytes=None) == ["Memory is empty: enter it in GB"]
    assert _refusal(peak_bf16=None) == ["No dense peak given: enter at least one precision's dense peak (TFLOP/s or TOPS), e.g. bf16 dense"]


def test_every_problem_is_listed_not_only_the_first():
    """Three bad fields, three sentences, in the form's order."""
    problems = _refusal(name="", memory_bytes=5e15, power_w=1.0)
    assert problems == [
        "Name is empty: give the accelerator a name",
        "Memory must be at most 2,000 GB (got 5,000,000 GB)",
        "Power must be at least 5 W (got 1 W)",
    ]


def _bounds(name: str) -> dict[str, float]:
    info = Accelerator.model_fields[name]
    out: dict[str, float] = {}
    for m in info.metadata:
        if isinstance(m, Ge):
            out["ge"] = float(m.ge)
        elif isinstance(m, Gt):
            out["gt"] = float(m.gt)
        elif isinstance(m, Le):
            out["le"] = float(m.le)
    if name.startswith("peak_"):
        out = {"ge": PEAK_FLOPS_RANGE[0], "le": PEAK_FLOPS_RANGE[1]}
    return out


@pytest.mark.parametrize("name", [n for n, c in accelerator_columns().items() if c.form and c.unit or n == "year"])
def test_every_numeric_field_of_the_form_is_refused_by_its_label_in_its_unit(name):
    """Each numeric input of the form, below its lower and above its upper bound: the message names the label the form
    shows and the bound divided by the unit's size (GB = 1e9 bytes, TB/s = 1e12 B/s, TFLOP/s = 1e12 FLOP/s, µs = 1e-6 s)."""
    col = accelerator_columns()[name]
    bounds = _bounds(name)
    assert bounds, f"{name} has no bound to test"
    plain = name == "year"
    for key, phrase in (("ge", "at least"), ("gt", "more than"), ("le", "at most")):
        if key not in bounds:
            continue
        bound = bounds[key]
        bad = bound * 2 if key == "le" else (bound / 2 if bound > 0 else -1.0)
        if name in ("year", "scaleup_domain"):
            bad = int(bound + 1) if key == "le" else int(bound - 1)
        shown = f"{bound / col.scale:g}" if plain else number(bound / col.scale)
        problems = _refusal(**{name: bad})
        assert len(problems) == 1, problems
        assert problems[0].startswith(f"{col.label} must be {phrase} {shown}"), (problems[0], shown)
        assert col.unit in problems[0]


def test_text_fields_say_what_is_allowed():
    """Memory type with a character it cannot hold; a name whose ID would be too long; an empty vendor."""
    (mem,) = _refusal(memory_type="HBM$3")
    assert mem.startswith("Memory type 'HBM$3' cannot be used: use letters, digits, spaces")
    (long_id,) = _refusal(id="x" * 70)
    assert long_id == "ID made from the name is too long: at most 64 characters (it has 70); shorten the name"
    assert _refusal(vendor="") == ["Vendor is empty: name the vendor"]


def test_units_and_numbers_are_written_as_people_write_them():
    """Thousands separators, no float noise, singular units for one, no separators in a year."""
    assert number(50_000.0) == "50,000" and number(0.001) == "0.001" and number(3.35) == "3.35"
    assert quantity(1.0, Words("Scale-up domain", "devices")) == "1 device"
    assert quantity(8.0, Words("Scale-up domain", "devices")) == "8 devices"
    assert quantity(2010, Words("Year", grouped=False)) == "2010"
    assert quantity(1e-5, accelerator_words()["allreduce_latency_s"]) == "10 µs"


def test_the_seed_names_its_row_and_the_field_in_the_csvs_unit():
    """The seed reader's messages use the same translation, with the file, row and id in front."""
    words = accelerator_words()
    with pytest.raises(CatalogueError) as err:
        accelerator_from_row(_row(bandwidth_bytes_per_s=3350e12), words)
    assert str(err.value) == "Bandwidth must be at most 50 TB/s (got 3,350 TB/s)"


# -- the custom-model form ----------------------------------------------------------------------


@pytest.fixture
def llama() -> dict:
    path = next(p for p in sorted((SEED / "models").rglob("*.json")) if json.loads(p.read_text()).get("model_type") == "llama")
    return json.loads(path.read_text())


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "models.duckdb")


def _model_refusal(store: Store, text: str, name: str = "My model", source: str = "config.json") -> str:
    with pytest.raises((ConfigError, CatalogueError)) as err:
        add_custom_model(store, text, model_id=name.lower().replace(" ", "-"), name=name, source=source)
    message = str(err.value)
    assert not re.search(r"Input should|String should|Value error", message), message
    assert message.count(source) <= 1, message  # the source said once ("config.json config.json" was the bug)
    return message


def test_invalid_json_names_the_source_once_with_line_and_column(store):
    """Line 3, column 5 of a pasted text: '  "x": 1' is missing its comma after the previous line."""
    text = '{\n  "a": 1\n    "b": 2\n}'
    message = _model_refusal(store, text)
    assert message.startswith("config.json is not valid JSON: line 3, column 5: Expecting ',' delimiter")
    assert _model_refusal(store, text, source="mine.json").startswith("mine.json is not valid JSON: line 3")


def test_a_missing_or_bad_key_is_named_by_the_files_own_key(store, llama):
    """num_hidden_layers absent, num_key_value_heads not dividing num_attention_heads: the file's keys, the file named once."""
    missing = {k: v for k, v in llama.items() if k != "num_hidden_layers"}
    assert _model_refusal(store, json.dumps(missing)) == "config.json: num_hidden_layers: missing"
    odd = {**llama, "num_key_value_heads": 7}
    message = _model_refusal(store, json.dumps(odd))
    assert message.startswith("config.json: num_attention_heads (") and "must be a multiple of num_key_value_heads (7)" in message


def test_the_models_name_is_checked_in_the_forms_words(store, llama):
    """A name whose ID passes 80 characters, and a name the catalogue already has."""
    long = "m" * 90
    message = _model_refusal(store, json.dumps(llama), name=long)
    assert message == "config.json: ID made from the name is too long: at most 80 characters (it has 90); shorten the name"
    taken = _model_refusal(store, json.dumps(llama), name="Llama 3.2 1B")
    assert taken == "Name: the ID 'llama-3.2-1b' made from this name already exists (Llama 3.2 1B); choose another name"
    with pytest.raises(CatalogueError, match=r"^Name: a model named 'Llama 3.2 1B' already exists; choose another name"):
        add_custom_model(store, json.dumps(llama), model_id="other-id", name="Llama 3.2 1B")


def test_the_model_form_uses_what_the_user_changed_last_never_a_stale_upload():
    """Only a file or only text: that one. Both: the one changed since the last press, said in the note; both new: refused."""
    assert config_source(None, "", "", {}) == (None, "no config.json: upload the file or paste its text")
    assert config_source("f1", "a.json", "", {})[0] == "file"
    assert config_source(None, "", "{}", {"file": "f1", "text": ""})[0] == "text"  # the upload was removed (×): never used
    used, note = config_source("f1", "a.json", '{"x": 1}', {"file": "f1", "text": "", "used": "file"})
    assert used == "text" and "the uploaded a.json, from an earlier try, was not used" in note
    used, note = config_source("f2", "b.json", '{"x": 1}', {"file": "f1", "text": '{"x": 1}', "used": "text"})
    assert used == "file" and note.startswith("Used the uploaded b.json")
    used, note = config_source("f1", "a.json", '{"x": 1}', {})
    assert used is None and "remove the file (×) or clear the text" in note
    used, _ = config_source("f1", "a.json", '{"x": 1}', {"file": "f1", "text": '{"x": 1}', "used": "text"})
    assert used == "text"  # pressed again unchanged: as before
