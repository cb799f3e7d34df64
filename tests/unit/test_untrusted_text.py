"""Text a user supplies (a custom accelerator's source) never becomes a live link of another scheme (issue 32)."""

from __future__ import annotations

import pytest

from core.catalogue.catalogue import add_custom_accelerator, load_catalogue
from core.catalogue.seed import CatalogueError, accelerator_frame, accelerator_from_row
from core.model.scenario import Scenario
from core.present.report import report_html
from core.present.tables import accelerator_table
from core.present.text import web_link
from core.store import Store
from tests.helpers import custom_gpu_row

HOSTILE = "javascript:alert(document.domain)"


def _chip(sources: str) -> dict:
    return custom_gpu_row(sources=sources)


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("https://example.com/sheet", "https://example.com/sheet"),
        ("HTTP://example.com", "HTTP://example.com"),
        (HOSTILE, None),
        (" JavaScript:alert(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("user-entered", None),
        ("https://", None),
        ("", None),
    ],
)
def test_only_a_web_address_is_a_link(url, link):
    assert web_link(url) == link


def test_a_custom_accelerator_with_a_javascript_source_is_refused_and_a_note_is_kept(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(CatalogueError, match="Source URL: 'javascript:alert.*is not a web address"):
        add_custom_accelerator(store, accelerator_from_row(_chip(HOSTILE)))
    assert "my-chip" not in load_catalogue(store).accelerators  # nothing written
    add_custom_accelerator(store, accelerator_from_row(_chip("user-entered")))  # the form's default note stays allowed
    assert load_catalogue(store).gpu("my-chip").sources == ["user-entered"]


def test_a_javascript_source_stored_by_an_older_version_is_shown_as_text_not_linked(tmp_path):
    """A store written before the refusal holds `javascript:alert(document.domain)` as a source: the report names it as text
    without an <a href>, and the catalogue table's link column leaves it empty."""
    store = Store(tmp_path / "s.duckdb")
    store.insert("insert_custom_accelerator", accelerator_frame([accelerator_from_row(_chip(HOSTILE))]))
    cat = load_catalogue(store)
    page = report_html(cat, Scenario(gpu="my-chip", model="llama-3.1-8b", batch=1, context=1024))
    assert 'href="javascript' not in page.lower() and "javascript:alert(document.domain) (not a web address: not linked)" in page
    shown = accelerator_table(cat.gpus.filter(cat.gpus["id"] == "my-chip"))
    assert shown["source"].to_list() == [None] and shown["all sources"].to_list() == [HOSTILE]
    seeded = accelerator_table(cat.gpus.filter(cat.gpus["id"] == "h100-sxm"))
    assert seeded["source"][0].startswith("https://")


def test_the_cli_sweeps_csv_writes_a_formula_like_name_as_text(tmp_path, capsys):
    """A custom accelerator named '=HYPERLINK("http://127.0.0.1:9/x","open")': `roofline sweep --out x.csv` writes its name
    with a leading apostrophe, so a spreadsheet shows it as text and never runs it; the Parquet file keeps it as it is."""
    import polars as pl

    from core.cli import main

    db = tmp_path / "s.duckdb"
    name = '=HYPERLINK("http://127.0.0.1:9/x","open")'
    add_custom_accelerator(Store(db), accelerator_from_row({**_chip("https://example.com/sheet"), "name": name}))
    out = tmp_path / "x.csv"
    args = ["sweep", "--db", str(db), "--gpu", "my-chip", "--model", "llama-3.1-8b", "--batch", "1", "--context", "1024"]
    assert main([*args, "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    cells = pl.read_csv(out)["gpu_name"].unique().to_list()
    assert cells == ["'" + name]
    assert main([*args, "--out", str(tmp_path / "x.parquet"), "--json"]) == 0
    assert pl.read_parquet(tmp_path / "x.parquet")["gpu_name"].unique().to_list() == [name]
