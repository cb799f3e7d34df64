"""A file of millions of tiny values is refused before it is parsed; the CLI checks a file's size before reading it (issue 32)."""

from __future__ import annotations

import os

import pytest

from core.catalogue.bounded_json import MAX_VALUES, JSONLimitError, check_limits, loads, value_count
from core.cli import main
from core.evidence.importers import MAX_FILE_BYTES, ImportFileError, import_file
from core.store import Store


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1", 1),
        ("[]", 2),  # the bound counts [ { and , outside strings, plus one: it never counts fewer values than there are
        ("[1,2,3]", 4),
        ('[{"a": "x,y,[z]"}, 2]', 4),  # commas and brackets inside a string do not count
        ('{"a": "quote \\" , ["}', 2),
    ],
)
def test_the_value_count_counts_separators_and_openings_outside_strings(text, values):
    assert value_count(text) == values
    assert value_count(text.encode()) == values


def test_a_document_of_more_values_than_the_limit_is_refused_before_it_is_parsed():
    """Five million and one empty objects: refused naming the limit; one fewer is read."""
    many = "[" + "{}," * MAX_VALUES + "{}]"
    with pytest.raises(JSONLimitError, match=f"holds more than {MAX_VALUES:,} values"):
        check_limits(many, max_bytes=10**9, source="big.json")
    assert len(loads("[" + "{}," * (MAX_VALUES // 3) + "{}]", max_bytes=10**9)) == MAX_VALUES // 3 + 1


def test_an_upload_of_millions_of_empty_objects_is_refused_with_one_line(tmp_path):
    data = b"[" + b"{}," * (MAX_VALUES + 10) + b"{}]"
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(ImportFileError, match=r"big\.json: holds more than 5,000,000 values"):
        import_file(store, data, "big.json")
    assert store.query("datasets").is_empty()


def test_the_cli_refuses_a_file_over_the_limit_before_reading_it(tmp_path, capsys, monkeypatch):
    """A sparse file of 1 byte over the limit: refused from its size (reading it is never tried)."""
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    read = []
    monkeypatch.setattr("pathlib.Path.read_bytes", lambda self: read.append(self) or b"")
    assert main(["import", str(big), "--db", str(tmp_path / "s.duckdb")]) == 2
    assert f"FILE: big.json is {MAX_FILE_BYTES + 1:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes" in capsys.readouterr().err
    assert read == []
    os.remove(big)
