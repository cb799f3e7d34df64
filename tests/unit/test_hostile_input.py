"""Hostile input: values are bound, names stored literally, exports neutralised, no user HTML, limits and XSRF kept."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import polars as pl
import pytest

import core.evidence.importers as importers
from core.evidence.importers import ImportFileError, import_file, list_datasets, rename_dataset
from core.present.tables import csv_safe
from core.store import Store

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
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
    """No unsafe_allow_html, st.html or components.html anywhere in the app."""
    pattern = re.compile(r"unsafe_allow_html\s*=\s*True|st\.html\(|components\.v1|components\.html")
    files = [ROOT / "streamlit_app.py", *(ROOT / "pages").rglob("*.py")]
    assert [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text())] == []


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
