"""The ridge page in a browser: both charts fit their column at 1280 x 800 and 1600 x 1400 with their legends whole,
the decode rule is labelled above the dots, the sidebar's accelerator is bold and ringed, axes read as numbers."""

from __future__ import annotations

import pytest

from core.model.roofline import decode_matmul_intensity
from tests.helpers import opened, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = "[data-testid='stMain'] [data-testid='stVegaLiteChart']"


def _charts_fit(page) -> list[dict]:  # type: ignore[no-untyped-def]
    """For each chart: its column's box, its SVG's box, and the box of every text in it (legends, labels, titles)."""
    return page.evaluate(
        """(sel) => [...document.querySelectorAll(sel)].map(el => {
            const box = r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
            const svg = el.querySelector('svg');
            return {
                column: box(el.parentElement.getBoundingClientRect()),
                svg: box(svg.getBoundingClientRect()),
                texts: [...svg.querySelectorAll('text')].map(t => ({text: t.textContent, weight: getComputedStyle(t).fontWeight
                    || t.getAttribute('font-weight'), attr: t.getAttribute('font-weight'), ...box(t.getBoundingClientRect())})),
            };
        })""",
        CHART,
    )


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1600, 1400)])
@pytest.mark.parametrize("batch", [1, 256])
def test_ridge_charts_fit_their_column_with_legends_whole(server, browser, width, height, batch):
    """Nothing of either chart (SVG or any text: names, ticks, legends, the rule's label) passes its column's edges."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    opened(page, server.url(f"ridges?batch={batch}"))
    page.locator(CHART).nth(1).locator("svg").wait_for()
    charts = _charts_fit(page)
    assert len(charts) == 2
    for chart in charts:
        col, svg = chart["column"], chart["svg"]
        assert svg["right"] <= col["right"] + 1 and svg["left"] >= col["left"] - 1, (svg, col)
        for t in chart["texts"]:
            if t["text"]:
                assert col["left"] - 1 <= t["left"] and t["right"] <= col["right"] + 1, t
    words = [t["text"] for t in charts[0]["texts"]]
    for legend in ("memory", "compute", "your accelerator (sidebar)"):
        assert legend in words
    intensity = decode_matmul_intensity(batch, "bf16")  # 2 x batch / 2 bytes
    assert f"decode matmul at batch {batch}: {intensity:,.0f} FLOP/byte" in words
    assert "10m" not in words and "100m" not in words and "1,000" in words
    assert "Ridge point (FLOP/byte, log scale)" in words
    # the rule's label sits above the plot's top, so never on a dot
    names = [t for t in charts[0]["texts"] if t["text"].startswith(("NVIDIA", "AMD", "Google", "Intel", "AWS"))]
    label = next(t for t in charts[0]["texts"] if t["text"].startswith("decode matmul at batch"))
    assert label["bottom"] <= min(t["top"] for t in names) + 2
    # the sidebar's accelerator (H100 SXM by default) is the one bold name on the y axis
    weights = {t["text"]: (t["attr"] or t["weight"]) for t in names}
    assert weights["NVIDIA H100 SXM5 80GB"] in ("bold", "700")
    assert all(w not in ("bold", "700") for n, w in weights.items() if n != "NVIDIA H100 SXM5 80GB")
    screenshot(page, f"ridges-{width}x{height}-batch{batch}")
    context.close()
