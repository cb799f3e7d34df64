"""The HTML report is of the page being viewed (its scenario's options, its sections) and exported charts say what they are of."""

from __future__ import annotations

import html.parser
import re

import altair as alt
import polars as pl
import pytest

from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.plan.planning import default_draft_model
from core.present.charts import export_chart
from core.present.exports import scenario_line, scenario_parts, titled
from core.present.figures import calculator_view
from core.present.report import MAX_ROWS, Section, report_html
from core.present.text import si


class _Cells(html.parser.HTMLParser):
    """The text of every table row, cell by cell, and all text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _parse(text: str) -> _Cells:
    parser = _Cells()
    parser.feed(text)
    return parser


def _figure(parsed: _Cells, label: str) -> str:
    return next(row[1] for row in parsed.rows if len(row) == 2 and row[0] == label)


@pytest.fixture(scope="module")
def spec_decoding(cat) -> Scenario:  # type: ignore[no-untyped-def]
    """The calculator's scenario with speculative decoding on: 4 draft tokens of the suggested draft model."""
    return Scenario(
        gpu="h100-sxm", model="llama-3.1-8b", num_gpus=2, spec_draft_len=4, spec_draft_model=default_draft_model(cat, "llama-3.1-8b")
    )


def test_a_calculator_report_with_speculative_decoding_reports_its_tokens_per_second(cat, spec_decoding):
    """The report of a scenario with speculative decoding says that scenario's tokens/s, not the plain scenario's."""
    with_spec = ceiling(cat, spec_decoding)
    plain = ceiling(cat, spec_decoding.model_copy(update={"spec_draft_len": 0, "spec_draft_model": None}))
    assert si(with_spec.tokens_per_s_per_user) != si(plain.tokens_per_s_per_user)  # the options change the figure
    # by hand: k = 4 drafts accepted with probability a each give (1 - a^(k+1)) / (1 - a) tokens a cycle
    a, k = spec_decoding.spec_acceptance, 4
    assert with_spec.tokens_per_step == pytest.approx((1 - a ** (k + 1)) / (1 - a))
    assert with_spec.tokens_per_s_per_user == pytest.approx(with_spec.tokens_per_step / with_spec.cycle_time_s)
    parsed = _parse(report_html(cat, spec_decoding, page="Ceiling calculator"))
    assert _figure(parsed, "Tokens/s per user") == si(with_spec.tokens_per_s_per_user)
    assert _figure(parsed, "Tokens/s total") == si(with_spec.tokens_per_s_total)
    assert _figure(parsed, "Speculative decoding").startswith(f"draft {spec_decoding.spec_draft_model}, 4 tokens")
    assert "Ceiling calculator" in " ".join(parsed.text)


def test_a_page_s_sections_are_in_its_report(cat, spec_decoding):
    """Sections: heading, sentence, figures, table cells as people write them, every chart as SVG titled with the scenario."""
    view = calculator_view(cat, spec_decoding)
    table = pl.DataFrame({"lever": ["a", "b"], "tokens/s": [157.29999999999998, None], "batch": [1, 2]})
    sections = [
        Section("What if: the three moves", text="One lever at a time.", figures=(("Largest batch", "104"),), table=table),
        Section("Where a decode cycle's time goes", charts=(view.breakdown, view.memory)),
    ]
    text = report_html(cat, spec_decoding, page="Ceiling calculator", sections=sections)
    parsed = _parse(text)
    body = " ".join(parsed.text)
    assert "What if: the three moves" in body and "One lever at a time." in body
    assert ["a", "157.3", "1"] in parsed.rows and ["b", "—", "2"] in parsed.rows  # 4 significant figures; no value: a dash
    assert ["Largest batch", "104"] in parsed.rows
    assert text.count("<svg") == 2 + 2  # the report's roofline and ridge points, and the section's two charts
    line = scenario_line(cat, spec_decoding)
    assert body.count(line) >= 2  # each of the section's charts carries the scenario in its title (SVG text)


def test_a_long_table_is_cut_and_says_so(cat):
    frame = pl.DataFrame({"row": list(range(MAX_ROWS + 5))})
    parsed = _parse(report_html(cat, Scenario(), sections=[Section("Rows", table=frame)]))
    assert f"The first {MAX_ROWS:,} of {MAX_ROWS + 5:,} rows" in " ".join(parsed.text)
    assert [str(MAX_ROWS - 1)] in parsed.rows and [str(MAX_ROWS)] not in parsed.rows


def _svg_text(svg: bytes) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode("utf-8"))).replace("&amp;", "&")


def test_an_exported_chart_says_model_accelerator_formats_and_batch(cat):
    """A chart whose title says none of the scenario gets the scenario's line; its own title stays."""
    sc = Scenario(gpu="mi300x", model="llama-3.1-70b", num_gpus=2, weights="fp8", kv="fp8", batch=48)
    view = calculator_view(cat, sc)
    own = view.breakdown["title"]
    svg = _svg_text(export_chart(titled(view.breakdown, scenario_line(cat, sc), scenario_parts(cat, sc)), "svg"))
    for part in ("Llama 3.1 70B", f"2 × {cat.gpu('mi300x').name}", "weights fp8", "KV fp8", "batch 48"):
        assert part in svg, (part, svg[:400])
    own_text = own if isinstance(own, str) else own["text"]
    assert own_text in svg  # the chart's own title is kept
    assert "title" not in view.breakdown or view.breakdown["title"] == own  # the shown chart is not changed


def test_a_title_that_already_says_the_scenario_is_left_alone_and_an_altair_chart_is_titled_too(cat):
    sc = Scenario(batch=64)
    line, parts = scenario_line(cat, sc), scenario_parts(cat, sc)
    said = {"mark": "point", "title": f"{cat.model(sc.model).name} on 1 × {cat.gpu(sc.gpu).name} · weights bf16, KV bf16 · batch 64"}
    assert titled(said, line, parts) is said
    bare = {"mark": "point"}
    assert titled(bare, line, parts)["title"] == {"text": line}
    chart = alt.Chart(pl.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q").properties(title="Measured points")
    out = titled(chart, line, parts).to_dict()
    assert out["title"] == {"text": "Measured points", "subtitle": [line]}
