"""Where a log-log chart's text labels go so that none overlaps another, a marker or a line (pure, deterministic).

A label is a box of text in pixels: about 0.6 x font size per character wide
(0.66 bold) and 1.25 x font size high, centred on its position. Positions are
computed on a plot of `width` x `height` pixels over log10 domains and returned
in data units (FLOP/byte, FLOP/s); drawn on a wider plot (a chart stretched to
its column), every box keeps its centre's place in log space and its size in
pixels, so what did not overlap at `width` does not overlap wider either.

Each label tries candidate places around its anchor, nearest first; the first
that is inside the plot and clear of every label placed before it, every
marker and every line segment is kept. A label with no clear place is not drawn
(the chart lists it elsewhere, e.g. the roofs' legend names each ridge).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Width of one character and height of a line, as multiples of the font size.
CHAR_WIDTH, BOLD_CHAR_WIDTH, LINE_HEIGHT = 0.6, 0.66, 1.25
#: Clear space kept around a label, in pixels.
PAD = 2.0


@dataclass(frozen=True)
class Label:
    """A label to place: its text and font, the data point it names, and how big its marker there is (radius, px)."""

    text: str
    x: float
    y: float
    font_size: float = 11.0
    bold: bool = False
    marker_px: float = 6.0
    max_gap: float = math.inf  # the farthest its box may sit from its marker's edge, px (a far one gets a leader line)


@dataclass(frozen=True)
class Box:
    """A box in plot pixels (x to the right, y downwards)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def hits_segment(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        """Whether the segment a-b crosses the box (Liang-Barsky clipping)."""
        (ax, ay), (bx, by) = a, b
        dx, dy = bx - ax, by - ay
        t0, t1 = 0.0, 1.0
        for p, q in ((-dx, ax - self.x0), (dx, self.x1 - ax), (-dy, ay - self.y0), (dy, self.y1 - ay)):
            if p == 0:
                if q < 0:
                    return False
                continue
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return False
        return True


@dataclass(frozen=True)
class Plot:
    """Log10 domains mapped onto a plot of width x height pixels."""

    x_dom: tuple[float, float]
    y_dom: tuple[float, float]
    width: float
    height: float

    def px(self, x: float, y: float) -> tuple[float, float]:
        lx0, lx1 = math.log10(self.x_dom[0]), math.log10(self.x_dom[1])
        ly0, ly1 = math.log10(self.y_dom[0]), math.log10(self.y_dom[1])
        return (math.log10(x) - lx0) / (lx1 - lx0) * self.width, (ly1 - math.log10(y)) / (ly1 - ly0) * self.height

    def data(self, px: float, py: float) -> tuple[float, float]:
        lx0, lx1 = math.log10(self.x_dom[0]), math.log10(self.x_dom[1])
        ly0, ly1 = math.log10(self.y_dom[0]), math.log10(self.y_dom[1])
        return 10 ** (lx0 + px / self.width * (lx1 - lx0)), 10 ** (ly1 - py / self.height * (ly1 - ly0))


def text_size(text: str, font_size: float, bold: bool = False) -> tuple[float, float]:
    """A label's (width, height) in pixels."""
    return len(text) * font_size * (BOLD_CHAR_WIDTH if bold else CHAR_WIDTH), font_size * LINE_HEIGHT


def box_at(cx: float, cy: float, text: str, font_size: float, bold: bool = False) -> Box:
    """The box of a label centred at (cx, cy) pixels."""
    w, h = text_size(text, font_size, bold)
    return Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


#: Directions tried around an anchor, in order: right, below-right, above-right, left, below-left, above-left, below, above.
_DIRECTIONS = ((1, 0), (1, 1), (1, -1), (-1, 0), (-1, 1), (-1, -1), (0, 1), (0, -1))
#: Gaps between a marker's edge and its label, in pixels, nearest first.
_GAPS = (4.0, 14.0, 28.0, 46.0, 70.0)


def _candidates(anchor: tuple[float, float], w: float, h: float, r: float, max_gap: float) -> list[tuple[float, float]]:
    ax, ay = anchor
    out = []
    for gap in (g for g in _GAPS if g <= max_gap):
        for dx, dy in _DIRECTIONS:
            cx = ax + dx * (r + gap + w / 2)
            cy = ay + dy * (r + gap + h / 2)
            out.append((cx, cy))
    return out


def place(
    labels: Sequence[Label],
    plot: Plot,
    *,
    markers: Sequence[tuple[float, float, float]] = (),
    lines: Sequence[Sequence[tuple[float, float]]] = (),
) -> list[tuple[float, float] | None]:
    """Each label's centre in data units, or None where it found no clear place; labels earlier in `labels` go first.

    `markers`: (x, y, radius in px) in data units, every marker the labels must
    stay clear of (each label's own anchor counts too); `lines`: polylines in
    data units (the roofs, the batch paths) the labels must not cross.
    """
    bounds = Box(0.0, 0.0, plot.width, plot.height)
    obstacles = [
        Box(px - r - PAD, py - r - PAD, px + r + PAD, py + r + PAD)
        for x, y, r in [*markers, *((lb.x, lb.y, lb.marker_px) for lb in labels)]
        for px, py in [plot.px(x, y)]
    ]
    segments = [(plot.px(*a), plot.px(*b)) for line in lines for a, b in zip(line, line[1:], strict=False)]
    placed: list[Box] = []
    out: list[tuple[float, float] | None] = []
    for lb in labels:
        w, h = text_size(lb.text, lb.font_size, lb.bold)
        found = None
        for cx, cy in _candidates(plot.px(lb.x, lb.y), w, h, lb.marker_px, lb.max_gap):
            box = box_at(cx, cy, lb.text, lb.font_size, lb.bold)
            if box.x0 < bounds.x0 or box.y0 < bounds.y0 or box.x1 > bounds.x1 or box.y1 > bounds.y1:
                continue
            padded = Box(box.x0 - PAD, box.y0 - PAD, box.x1 + PAD, box.y1 + PAD)
            if any(padded.overlaps(o) for o in [*placed, *obstacles]):
                continue
            if any(padded.hits_segment(a, b) for a, b in segments):
                continue
            found = (cx, cy, box)
            break
        if found is None:
            out.append(None)
            continue
        placed.append(found[2])
        out.append(plot.data(found[0], found[1]))
    return out


def leader(label: Label, centre: tuple[float, float], plot: Plot) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The line from a label's marker to its box (data units), for a label placed far from it; None when it is near."""
    ax, ay = plot.px(label.x, label.y)
    cx, cy = plot.px(*centre)
    w, h = text_size(label.text, label.font_size, label.bold)
    dx, dy = cx - ax, cy - ay
    # where the ray from the centre back to the anchor leaves the box, and where it leaves the marker
    t_box = min(abs((w / 2 + PAD) / dx) if dx else math.inf, abs((h / 2 + PAD) / dy) if dy else math.inf)
    dist = math.hypot(dx, dy)
    gap = dist * (1 - t_box) - label.marker_px
    if gap < 20.0:
        return None
    end = (cx - dx * t_box, cy - dy * t_box)
    start = (ax + dx / dist * (label.marker_px + PAD), ay + dy / dist * (label.marker_px + PAD))
    return plot.data(*start), plot.data(*end)
