"""Hostile input: values are bound, names stored literally, exports neutralised, no user HTML, limits and XSRF kept."""

from __future__ import annotations

import json
import math
import re
import tomllib

import polars as pl
import pytest

import core.catalogue.model_config as model_config
import core.evidence.importers as importers
from core.catalogue import bounded_json
from core.catalogue.catalogue import add_custom_model, load_catalogue
from core.catalogue.model_config import ConfigError, load_config, model_from_config, parse_config_text
from core.evidence.importers import ImportFileError, import_file, list_datasets, rename_dataset
from core.present.tables import csv_safe
from core.store import Store
from tests.helpers import FIXTURES, ROOT, SEED

NASTY = "'; DROP TABLE datasets; --"


def test_dataset_names_that_look_like_sql_are_stored_literally(tmp_path):
    """Import and rename with SQL in the name: the name is a value, every table is still there."""
    store = Store(tmp_path / "s.duckdb")
    res = import_file(store, (FIXTURES / "generic.csv").read_bytes(), "x'); DELETE FROM measurements; --.csv", name=NASTY)
    assert list_datasets(store)["name"].to_list() == [NASTY]
    rename_dataset(store, res.dataset_id, NASTY + " 2")
    ds = list_datasets(store)
    assert ds["name"].to_list() == [NASTY + " 2"]
    assert ds["file_name"].to_list() == ["x'); DELETE FROM measurements; --.csv"]
    assert store.query("dataset_measurements", dataset_id=res.dataset_id).height == res.rows == 11


def test_no_sql_is_built_from_strings_in_core_or_pages():
    """execute()/sql() take a named query or a literal; never an f-string, % or + concatenation."""
    bad = re.compile(r"\.(execute|sql)\(\s*(f[\"']|[\"'][^\"']*[\"']\s*(%|\+|\.format))")
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for folder in ("core", "pages")
        for p in (ROOT / folder).rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if bad.search(line)
    ]
    assert hits == []


def test_no_page_renders_html():
    """No unsafe_allow_html or components.html anywhere in the app, and st.html only for a style sheet that is a
    string literal of the same module (a NAME_CSS constant: nothing a user typed or uploaded can reach it)."""
    pattern = re.compile(r"unsafe_allow_html\s*=\s*True|components\.v1|components\.html")
    files = [ROOT / "streamlit_app.py", *(ROOT / "pages").rglob("*.py")]
    assert [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text())] == []
    for path in files:
        text = path.read_text()
        for call in re.finditer(r"st\.html\(([^)]*)\)", text):
            name = call.group(1).strip()
            assert re.fullmatch(r"[A-Z_]+_CSS", name), f"{path.name}: st.html({name})"
            assert re.search(rf'^{name} = (\(\s*)?"', text, re.M), f"{path.name}: {name} is not a string literal"


def test_csv_exports_neutralise_formula_cells():
    """Cells starting with = + - @ (or tab / CR) get a leading quote; others, numbers and lists are kept."""
    frame = pl.DataFrame(
        {
            "name": ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)", "\tx", "plain", "a=b", None],
            "value": [-1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            "tags": [["=x", "y"], [], ["z"], ["a"], ["b"], ["c"], ["d"], ["e"]],
        }
    )
    out = csv_safe(frame)
    assert out["name"].to_list() == ['\'=HYPERLINK("http://x")', "'+1", "'-2+3", "'@SUM(A1)", "'\tx", "plain", "a=b", None]
    assert out["value"].to_list() == frame["value"].to_list()
    assert out["tags"].to_list() == ["=x; y", "", "z", "a", "b", "c", "d", "e"]


def test_streamlit_config_keeps_xsrf_on_and_the_upload_limit_matches_core():
    """XSRF protection stays on; the uploader's limit is the importer's limit."""
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["enableXsrfProtection"] is True
    assert cfg["server"].get("enableCORS", True) is True
    assert cfg["server"]["maxUploadSize"] * 1_000_000 == importers.MAX_FILE_BYTES


def test_a_file_over_the_limit_is_refused_with_a_message(tmp_path, monkeypatch):
    """Bytes beyond MAX_FILE_BYTES (the CLI path, which has no uploader in front) are refused, naming the limit."""
    store = Store(tmp_path / "s.duckdb")
    data = (FIXTURES / "generic.csv").read_bytes()
    monkeypatch.setattr(importers, "MAX_FILE_BYTES", len(data) - 1)
    with pytest.raises(ImportFileError, match=r"big\.csv: the file is .* MB; the limit is"):
        import_file(store, data, "big.csv")
    assert list_datasets(store).height == 0


# -- hostile files, round two: nesting, size, non-finite and absurd shapes -----------------------

LLAMA_TEXT = (SEED / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8")


def _llama_with(field: str, literal: str) -> str:
    """The Llama 3.1 8B config.json text with one field's value replaced by a JSON literal (as a hostile file would hold it)."""
    text, n = re.subn(rf'("{field}": )[^,\n}}]+', lambda m: m.group(1) + literal, LLAMA_TEXT)
    assert n == 1, field
    return text


def _depth_of(value: object) -> int:
    """Nesting depth of a parsed JSON value, walked independently of the scanner (a list or object is one level)."""
    if isinstance(value, dict):
        return 1 + max((_depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth_of(v) for v in value), default=0)
    return 0


DEPTH_CASES = [
    '["[[[", "\\"[[", {"a": [1]}]',  # brackets in strings, an escaped quote: 3 levels (list, object, list)
    '["\\\\", [[1]]]',  # an escaped backslash ends right before the closing quote: 3
    '["' + "\\" * 17 + '"[[[", 1]',  # 17 backslashes: the quote after them is escaped, [[[ stays in the string: 1
    '["' + "\\" * 18 + '", [[1]]]',  # 18: nine escaped backslashes, the quote closes the string: 3
    '{"k": "}}}]]]", "v": [{"w": [[], {}]}]}',  # closers in a string do not close anything: 5
    "[]",
    "42",
]


@pytest.mark.parametrize("text", DEPTH_CASES)
@pytest.mark.parametrize("block", [1 << 23, 3])
def test_nesting_depth_counts_brackets_outside_strings(text, block, monkeypatch):
    """The pre-parse scan's depth equals the parsed value's depth, also when a string or an escape spans scan blocks."""
    monkeypatch.setattr(bounded_json, "_BLOCK", block)
    assert bounded_json.nesting_depth(text) == bounded_json.nesting_depth(text.encode()) == _depth_of(json.loads(text))


def test_a_deep_benchmark_json_is_refused_before_parsing(tmp_path):
    """A benchmark JSON nested 50,000 levels deep: one line naming the depth and the limit, no RecursionError, nothing written."""
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(ImportFileError) as err:
        import_file(store, b"[" * 50_000 + b"]" * 50_000, "deep.json")
    assert str(err.value) == "deep.json: nested 50,000 levels deep; the limit is 64"
    assert list_datasets(store).height == 0


def test_a_json_lines_record_with_an_unreadable_number_names_the_record(tmp_path):
    """JSON lines whose second record holds a 5,000-digit integer (over Python's 4,300-digit int() limit): that record is named."""
    store = Store(tmp_path / "s.duckdb")
    data = b'{"latency_ms": 1}\n{"latency_ms": ' + b"9" * 5_000 + b"}\n"
    with pytest.raises(ImportFileError) as err:
        import_file(store, data, "runs.jsonl")
    assert str(err.value) == "runs.jsonl: record 2: a number has more than 4,300 digits"
    assert list_datasets(store).height == 0


def test_a_deep_config_json_is_refused_before_parsing(tmp_path):
    """A config.json nested 50,000 levels deep (text and file): the depth and the limit, named with the source."""
    deep = '{"a": ' * 50_000 + "1" + "}" * 50_000
    with pytest.raises(ConfigError) as err:
        parse_config_text(deep)
    assert str(err.value) == "config.json: nested 50,000 levels deep; the limit is 64"
    path = tmp_path / "config.json"
    path.write_text(deep, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: nested 50,000 levels deep; the limit is 64"


def test_an_over_large_config_json_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A config.json of 4,000,001 bytes: refused by its size from the file system (never parsed), and as pasted text."""
    text = '{"pad": "' + "x" * (model_config.MAX_CONFIG_BYTES - 10) + '"}'  # 9 + (limit - 10) + 2 = limit + 1 bytes
    assert len(text) == 4_000_001
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(model_config, "loads", lambda *a, **k: pytest.fail("the file was parsed"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: the file is 4,000,001 bytes; the limit is 4,000,000 bytes"
    monkeypatch.undo()
    with pytest.raises(ConfigError) as err:
        parse_config_text(text, source="upload.json")
    assert str(err.value) == "upload.json: the file is 4,000,001 bytes; the limit is 4,000,000 bytes"


HOSTILE_SHAPES = [
    ("num_hidden_layers", "NaN", "num_hidden_layers: expected an integer, got nan"),
    ("num_hidden_layers", "Infinity", "num_hidden_layers: expected an integer, got inf"),
    ("hidden_size", "1e999", "hidden_size: expected an integer, got inf"),
    ("num_attention_heads", "-Infinity", "num_attention_heads: expected an integer, got -inf"),
    ("vocab_size", "true", "vocab_size: expected an integer, got True"),
    ("intermediate_size", "14336.5", "intermediate_size: expected an integer, got 14336.5"),
    ("num_key_value_heads", "-8", "num_key_value_heads: must be positive, got -8"),
    (
        "num_hidden_layers",
        "1000000000000",
        "num_hidden_layers: 1,000,000,000,000 is above the limit of 1,024 (Llama 3.1 405B has 126 layers)",
    ),
    ("vocab_size", "1000000000000000", "vocab_size: 1,000,000,000,000,000 is above the limit of 2,097,152 (Gemma 3 has 262,208 tokens)"),
    ("hidden_size", "1e300", "hidden_size: 1e+300 is above the limit of 131,072 (Nemotron-4 340B has 18,432; Llama 3.1 405B 16,384)"),
    (
        "max_position_embeddings",
        "9" * 30,
        "max_position_embeddings: a 30-digit number is above the limit of 268,435,456 (Llama 4 Scout has 10,485,760 positions)",
    ),
]


@pytest.mark.parametrize(("field", "literal", "message"), HOSTILE_SHAPES)
def test_a_hostile_shape_field_is_refused_naming_field_value_and_bound(field, literal, message):
    """Llama 3.1 8B's config.json with one size made NaN, infinite, fractional, negative, a bool or absurdly large: one line naming it.

    10^12 layers is refused by its bound before any loop over layers (it used to keep the parser busy for minutes).
    """
    cfg = parse_config_text(_llama_with(field, literal))
    with pytest.raises(ConfigError) as err:
        model_from_config(cfg, model_id="hostile")
    assert str(err.value) == message


def test_hostile_layer_lists_and_counters_are_refused_naming_the_entry():
    """moe_layers / mlp_only_layers entries that are not layer indices, and a NaN first_k_dense_replace: the entry is named."""
    mixtral = json.loads((SEED / "models" / "mixtral-8x7b.json").read_text(encoding="utf-8"))  # 32 layers
    cases = [
        ({"moe_layers": [0, "1"]}, "moe_layers[1]: expected a layer index from 0 to 31, got '1'"),
        ({"moe_layers": list(range(33))}, "moe_layers: 33 entries for 32 layers"),
        ({"mlp_only_layers": [{"x": 1}]}, "mlp_only_layers[0]: expected a layer index from 0 to 31, got {'x': 1}"),
        ({"first_k_dense_replace": math.nan}, "first_k_dense_replace: expected an integer, got nan"),
        ({"first_k_dense_replace": "x" * 500}, "first_k_dense_replace: expected an integer, got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."),
    ]
    for extra, message in cases:
        with pytest.raises(ConfigError) as err:
            model_from_config({**mixtral, **extra}, model_id="hostile")
        assert str(err.value) == message


def test_every_bound_is_at_least_four_times_the_largest_seed_value():
    """The bounds' claim: each is 4x or more the largest value any seed config.json (or its text_config) holds for that field."""
    largest: dict[str, int] = {}
    for path in (SEED / "models").glob("*.json"):
        cfg = json.loads(path.read_text(encoding="utf-8"))
        for part in (cfg, cfg.get("text_config") or {}):
            for key, value in part.items():
                if key in model_config.BOUNDS and isinstance(value, int) and not isinstance(value, bool):
                    largest[key] = max(largest.get(key, 0), value)
    assert largest["num_hidden_layers"] == 126 and largest["vocab_size"] == 256_000  # Llama 3.1 405B, Gemma 2
    assert {k: v for k, v in largest.items() if model_config.BOUNDS[k].limit < 4 * v} == {}


def test_loads_refuses_non_finite_numbers_where_every_number_must_be_one():
    """allow_nan=False: NaN and 1e999 are refused with their line and column; with the default they parse as Python reads them."""
    with pytest.raises(bounded_json.JSONLimitError) as err:
        bounded_json.loads('{"a": [1, NaN]}', max_bytes=100, allow_nan=False, source="p.json")
    assert str(err.value) == "p.json: NaN at line 1 column 11 is not a finite number"
    with pytest.raises(bounded_json.JSONLimitError) as err:
        bounded_json.loads('{"s": "NaN 1e999",\n "b": 1e999}', max_bytes=100, allow_nan=False, source="p.json")
    assert str(err.value) == "p.json: 1e999 at line 2 column 7 is not a finite number"
    assert math.isnan(bounded_json.loads('{"a": NaN}', max_bytes=100)["a"])


HOSTILE_CONFIGS = {
    "deep": '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "nan size": _llama_with("num_hidden_layers", "NaN"),
    "10^12 layers": _llama_with("num_hidden_layers", "1000000000000"),
    "10^15 vocab": _llama_with("vocab_size", "1000000000000000"),
    "over-large": '{"pad": "' + "x" * 4_000_000 + '"}',
    "5,000-digit size": _llama_with("hidden_size", "4" * 5_000),
}


@pytest.mark.parametrize("case", list(HOSTILE_CONFIGS))
def test_a_refused_custom_model_leaves_the_store_unchanged(tmp_path, case):
    """add_custom_model (the catalogue page's and the CLI's path) refuses each hostile config.json; the store's models are as before."""
    store = Store(tmp_path / "s.duckdb")
    before, generation = store.query("models")["id"].sort().to_list(), store.generation
    with pytest.raises(ConfigError) as err:
        add_custom_model(store, HOSTILE_CONFIGS[case], model_id="hostile", name="Hostile")
    assert "\n" not in str(err.value)
    assert store.query("models")["id"].sort().to_list() == before
    assert store.generation == generation
    assert "hostile" not in load_catalogue(store).records


def test_a_stored_custom_model_past_a_bound_is_left_out_and_named_not_fatal(tmp_path):
    """A custom model an older version stored with vocab_size 10^15 (accepted then) no longer stops the catalogue from loading."""
    from core.store import Store

    store = Store(tmp_path / "old.duckdb")
    cfg = json.loads((SEED / "models" / "llama-3.1-8b.json").read_text())
    cfg["vocab_size"] = 10**15
    store.execute("insert_custom_model", id="huge-vocab", name="Huge vocab", config_json=json.dumps(cfg), notes="")
    cat = load_catalogue(store)
    assert "huge-vocab" not in cat.records and "llama-3.1-8b" in cat.records
    assert len(cat.unreadable) == 1 and cat.unreadable[0].startswith("Huge vocab (huge-vocab): vocab_size")
    assert store.query("models").filter(pl.col("id") == "huge-vocab").height == 1  # the store untouched
