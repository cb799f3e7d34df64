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
