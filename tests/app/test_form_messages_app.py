"""AppTest: the typed-measurement form says its errors by its own labels and units; a custom accelerator added without a
year is drawn on the ridge page whatever the year filter."""

from __future__ import annotations

import polars as pl

from core.catalogue.catalogue import delete_custom
from core.present.text import escape_markdown
from pages.shared.data import store
from tests.app.conftest import chart_frames


def _submit(at, label: str):  # type: ignore[no-untyped-def]
    next(b for b in at.button if b.label == label).click().run()
    return at


def test_typed_measurement_errors_use_the_forms_labels_and_units(open_page):
    """0 tokens/s, then 0 output tokens on a decode measurement, then a TPOT of 20 s typed in ms: each refused by the
    form's label and unit (ms), never by a column name such as tokens_per_s or tpot_s."""
    at = open_page("measured")
    at.radio(key="ms_view").set_value("yours").run()
    at.number_input(key="ms_one_tps").set_value(0.0)
    _submit(at, "Add this measurement")
    errors = [e.value for e in at.error]
    assert "Not added: " + escape_markdown("Tokens/s must be more than 0 tokens/s (got 0 tokens/s)") in errors, errors
    at.number_input(key="ms_one_tps").set_value(150.0)
    at.number_input(key="ms_one_out").set_value(0)
    _submit(at, "Add this measurement")
    errors = [e.value for e in at.error]
    wanted = "Output tokens per request: a decode or serving measurement needs at least 1 output token"
    assert "Not added: " + escape_markdown(wanted) in errors, errors
    # batch 1 at 150 tokens/s means ~6.7 ms per token; 10,000 ms (the form's largest TPOT) is off by ~1,500x: a unit slip
    at.number_input(key="ms_one_out").set_value(128)
    at.number_input(key="ms_one_tpot").set_value(10_000.0)
    _submit(at, "Add this measurement")
    (error,) = [e.value for e in at.error]
    assert error.startswith("Not added: Tokens/s is") and "Batch \\(sequences\\) / TPOT" in error, error
    assert "tokens_per_s" not in error and "tpot_s" not in error


def test_a_custom_accelerator_without_a_year_is_on_the_ridge_page(open_page):
    """Added with the year box emptied, it has no year; the ridge page narrowed to 2024 still draws it (ridge 500 / 2)."""
    try:
        at = open_page("catalogue")
        next(t for t in at.text_input if t.label == "Name").set_value("Apptest yearless")
        at.text_input(key="custom_year").set_value("")
        at.number_input(key="custom_bandwidth_bytes_per_s").set_value(2.0)
        at.number_input(key="custom_peak_bf16").set_value(500.0)
        _submit(at, "Add accelerator")
        assert any("Added Apptest yearless as `apptest-yearless`, no year." in s.value for s in at.success), [e.value for e in at.error]
        at = open_page("ridges", rd_year=["2024", "2024"])  # type: ignore[arg-type]
        dots = next(f for f in chart_frames(at) if "bound" in f.columns)
        mine = dots.filter(pl.col("id") == "apptest-yearless")
        assert mine.height == 1 and mine["ridge"].item() == 250.0 and mine["year"].item() is None
        assert set(dots["year"].drop_nulls().to_list()) == {2024}
        assert any("without a year" in c.value for c in at.caption)
    finally:  # the session's other AppTests count the seeded catalogue: the entry goes, as the page deletes it
        delete_custom(store(), "accelerator", "apptest-yearless")
