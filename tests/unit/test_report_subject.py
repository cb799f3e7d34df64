"""A page whose subject is not the sidebar's scenario reports its own subject first (issue 31)."""

from __future__ import annotations

import re

from core.model.scenario import Scenario
from core.present.report import Section, report_html


def test_a_report_with_a_subject_leads_with_it_and_cites_every_accelerator_it_shows(cat):
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    subject = "Llama 3.1 70B fp8 on AMD Instinct MI300X and NVIDIA B200: cheapest per million output tokens"
    page = report_html(
        cat, sc, page="Compare accelerators", sections=[Section("The comparison", text="two accelerators")], subject=subject,
        gpus=["mi300x", "b200", "h100-sxm"],
    )  # fmt: skip
    assert f"<title>Roofline report: {subject}</title>" in page and f"<h1>Roofline report: {subject}</h1>" in page
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert headings[0] == "The comparison"  # the page's own view first
    assert headings[1] == "The sidebar's scenario, for reference: Llama 3.1 8B on 1 × NVIDIA H100 SXM5 80GB"
    for g in ("mi300x", "b200"):
        acc = cat.gpu(g)
        assert f"<li>{acc.name}: " in page and all(u in page for u in acc.sources)


def test_a_report_without_a_subject_is_the_scenarios_as_before(cat):
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    page = report_html(cat, sc, page="Overview", sections=[Section("The scenario on its roofline", text="x")])
    assert "<h1>Roofline report: Llama 3.1 8B on 1 × NVIDIA H100 SXM5 80GB</h1>" in page
    assert re.findall(r"<h2>(.*?)</h2>", page)[:3] == ["Scenario", "Headline figures", "The scenario on its roofline"]
    assert "The page's other accelerators" not in page


def test_report_numbers_are_written_as_people_write_them(cat):
    import polars as pl

    table = pl.DataFrame({"accelerator": ["x"], "tokens/s": [21380.123], "GB": [10743.3], "share": [0.000123]})
    page = report_html(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b"), sections=[Section("T", table=table)])
    assert "21,380" in page and "10,743" in page and "0.0001230" in page
    assert not re.search(r"\d\.\d+e[+-]\d\d", re.sub(r"<svg.*?</svg>", "", page, flags=re.S))  # no 2.138e+04 outside the charts


def test_the_calculator_reports_sentences_agree_on_which_step_they_mean(cat):
    """Issue 31: with a 4-token draft at batch 16, the headline's intensity is the verify step's (5 tokens of each sequence),
    the reading gives the plain decode step's and then the verify step's with the same figure, and both sentences that
    say where the matmuls reach the ridge give the same batch: the verify step's, ceil(ridge x 2 bytes / (2 x 5))."""
    import math

    from core.model.ceilings import ceiling
    from core.model.roofline import operating_points
    from core.plan.planning import frontier
    from core.present.readings import frontier_reading, plain_reading

    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=16, spec_draft_len=4, spec_draft_model="llama-3.2-1b")
    r = ceiling(cat, sc)
    page = report_html(cat, sc, page="Ceiling calculator")
    assert f"Verify step intensity (5 tokens of each sequence)</td><td>{r.intensity:,.1f} FLOP/byte" in page
    reading = plain_reading(cat, operating_points(cat, sc), r)
    verify = math.ceil(r.ridge * 2 / (2 * 5))
    assert (
        f"it runs at {r.intensity:,.1f} FLOP/byte, and its matmuls reach the ridge at a batch of about **{verify:,}** (now 16)" in reading
    )
    assert f"Verifying 5 tokens of each sequence per step, the decode matmuls reach the ridge at batch {verify:,}" in frontier_reading(
        cat, sc, frontier(cat, sc, result=r), result=r
    )


def test_a_report_table_breaks_only_long_words(cat):
    """The ridge report's table read "comput / e" and "vendo / r": every cell could break anywhere. Now only a cell with a
    word longer than 24 characters (a URL) may break mid-word, so the table still keeps to the page."""
    import polars as pl

    url = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
    table = pl.DataFrame({"vendor": ["AMD"], "bound": ["compute-bound"], "source": [url]})
    page = report_html(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b"), sections=[Section("T", table=table)])
    css = re.search(r"<style>(.*?)</style>", page).group(1)  # type: ignore[union-attr]
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", css))
    assert "anywhere" not in rules["td,th"] and "overflow-wrap:anywhere" in rules[".long"]
    assert "<td>AMD</td><td>compute-bound</td>" in page and f'<td class="long">{url}</td>' in page
