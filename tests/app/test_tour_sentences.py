"""The tour's sentences against the figures beside them, read off the running pages (AppTest).

For each scenario the sentence and the table (or chart) are read from the page; the words (grows / barely moves),
the ratios and the times it quotes are recomputed here from the table's own cells, and the table's cells from
core.model.ceilings.ceiling for the same scenario.
"""

from __future__ import annotations

import math
import re

import pytest

from pages.roofline.terms import term_key
from tests.app.conftest import chart_frames

STEP_4 = "4. Where decode and prefill land"
STEP_5 = "5. Batching is free until the ridge"
STEP_7 = "7. Three moves, and no others"

SCENARIOS = {
    "8B on H100, default context": {"gpu": "h100-sxm", "model": "llama-3.1-8b"},
    "70B on 4 x H100 at 32k context": {"gpu": "h100-sxm", "model": "llama-3.1-70b", "num_gpus": "4", "context": "32768"},
    "8B on H100, short context": {"gpu": "h100-sxm", "model": "llama-3.1-8b", "context": "256"},
}


def _cat():
    from core.catalogue.catalogue import load_catalogue
    from core.store import get_store

    return load_catalogue(get_store())


def _scenario(params: dict[str, str], **more):
    from core.model.scenario import Scenario

    values = {k: int(v) if k in ("num_gpus", "context", "batch") else v for k, v in params.items()}
    return Scenario(**{**values, **more})


def _text(at, needle: str) -> str:
    return next(md.value for md in at.markdown if needle in md.value)


def _table(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _number(s: str) -> float:
    return float(s.replace(",", ""))


def _sig3(x: float) -> str:
    """x to 3 significant figures, written with thousands separators (how the tour writes ms)."""
    decimals = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_step_5_words_agree_with_its_table(open_page, name):
    params = SCENARIOS[name]
    at = open_page("tour", tour_step=STEP_5, **params)
    text = _text(at, "From batch 1 to")
    table = _table(at, "step time (ms)").set_index("batch")
    m = re.search(
        r"From batch 1 to ([\d,]+) the step time (barely moves:|grows) ([\d.]+)× \(([\d.,]+) ms → ([\d.,]+) ms\); "
        r"with the weights alone \(no KV cache\) it would grow ([\d.]+)× \(([\d.,]+) ms → ([\d.,]+) ms\)",
        text,
    )
    assert m, text
    b = int(_number(m[1]))
    t1, tb = table.loc[1, "step time (ms)"], table.loc[b, "step time (ms)"]
    growth = tb / t1
    # the verb follows the ratio in the table: "barely moves" only under 1.25x
    assert m[2] == ("barely moves:" if growth < 1.25 else "grows")
    assert m[3] == f"{growth:.1f}"
    assert (m[4], m[5]) == (_sig3(t1), _sig3(tb))
    w1, wb = table.loc[1, "step time, weights alone (ms)"], table.loc[b, "step time, weights alone (ms)"]
    assert m[6] == f"{wb / w1:.1f}"
    assert (m[7], m[8]) == (_sig3(w1), _sig3(wb))
    # the table's cells are the ceilings of those scenarios
    from core.model.ceilings import ceiling

    cat = _cat()
    assert tb == pytest.approx(ceiling(cat, _scenario(params, batch=b)).step_time_s * 1e3, rel=1e-9)
    assert wb == pytest.approx(ceiling(cat, _scenario(params, batch=b, context=0)).step_time_s * 1e3, rel=1e-9)
    # where the free lunch ends: KV bytes per step reach the weight bytes at weights / (KV per sequence)
    lunch = re.search(r"match the weight reads at a batch of about ([\d,]+)", text)
    assert lunch, text
    ratio = table.loc[1, "weights read (GB)"] / table.loc[1, "KV cache read (GB)"]
    assert abs(_number(lunch[1]) - ratio) <= 1.0
    ridge = re.search(r"reach the ridge at a batch of about ([\d,]+)", text)
    assert ridge
    if _number(lunch[1]) < _number(ridge[1]):
        assert "So the lunch ends first, before the ridge" in text
    else:
        assert "Here the ridge" in text and "comes first" in text


def test_step_5_for_the_default_scenario_says_what_the_issue_measured(open_page):
    """8B on an H100 at 4,096 tokens: 4.64 ms at batch 1, 14.9 ms at 64 (3.2x); the weights alone 1.0x; lunch ends near 28."""
    at = open_page("tour", tour_step=STEP_5, gpu="h100-sxm", model="llama-3.1-8b")
    text = _text(at, "From batch 1 to")
    assert "From batch 1 to 64 the step time grows 3.2× (4.64 ms → 14.9 ms)" in text
    assert "with the weights alone (no KV cache) it would grow 1.0×" in text
    assert "match the weight reads at a batch of about 28" in text
    assert "barely moves" not in text


@pytest.mark.parametrize("name", ["8B on H100, default context", "70B on 4 x H100 at 32k context"])
def test_step_4_prefill_counts_both_ways_against_the_chart(open_page, name):
    """The prefill matmul's figure with activations is the chart's point; the weights-only one is the seed's 2 x 2,048 / 2."""
    at = open_page("tour", tour_step=STEP_4, **SCENARIOS[name])
    text = _text(at, "counting weights only")
    m = re.search(r"prefill's matmuls sit at ([\d,]+) FLOP/byte counting weights and activations .*?; ([\d,]+) counting weights only", text)
    assert m, text
    points = next(f for f in chart_frames(at) if "point" in f.columns and "prefill matmul" in f["point"].to_list())
    shown = points.filter(points["point"] == "prefill matmul")["intensity"][0]
    assert _number(m[1]) == round(shown)
    assert _number(m[2]) == 2 * 2048 / 2
    assert "2 FLOPs per token × 2,048 tokens ÷ 2 bytes per weight" in text
    assert "runs for the last prompt token only" in text


def test_roofline_terms_give_the_prefill_matmul_both_ways(open_page):
    at = open_page("roofline", gpu="h100-sxm", model="llama-3.1-8b")
    at.session_state[term_key("Prefill matmul")] = True  # the term's text is drawn once its expander is opened
    at.run()
    text = _text(at, "counting weights only")
    points = next(f for f in chart_frames(at) if "point" in f.columns and "prefill matmul" in f["point"].to_list())
    shown = points.filter(points["point"] == "prefill matmul")["intensity"][0]
    assert f"{round(shown):,} FLOP/byte counting weights and activations" in text
    assert "2,048 counting weights only, as the seed does" in text
    assert "is 295 FLOP/byte, so they are compute-bound" in text


@pytest.mark.parametrize(
    "params",
    [
        {"gpu": "h100-sxm", "model": "llama-3.1-8b"},
        {"gpu": "h100-sxm", "model": "llama-3.1-70b", "num_gpus": "2", "batch": "32"},
    ],
)
def test_step_7_is_the_calculators_what_if_table(open_page, params):
    """The tour's three moves and the calculator's what-ifs: one table for one scenario, the seed's three moves, names."""
    tour = _table(open_page("tour", tour_step=STEP_7, **params), "lever")
    calc = _table(open_page("calculator", **params), "lever")
    assert tour.equals(calc)
    assert set(tour["move"]) == {"as is", "lift the diagonal", "slide right", "raise the ceiling"}
    rows = tour.set_index("lever")
    assert "NVIDIA H200 SXM 141GB" in rows.loc["more bandwidth", "change"]
    assert rows.loc["more bandwidth", "move"] == "lift the diagonal"
    assert rows.loc["more FLOP/s", "move"] == "raise the ceiling"
    assert "Intel Gaudi 3" in rows.loc["more FLOP/s", "change"]


def test_step_7_sentence_quotes_its_table(open_page):
    at = open_page("tour", tour_step=STEP_7, gpu="h100-sxm", model="llama-3.1-8b")
    text = _text(at, "three moves")
    rows = _table(at, "lever").set_index("lever")
    for lever in ("more bandwidth", "int4 weights", "more FLOP/s"):
        assert f"{rows.loc[lever, '× per user']:.2f}× the tokens/s per user" in text
    assert f"{rows.loc['larger batch', '× total']:.2f}× the tokens/s in total" in text
    for move in ("lift the diagonal", "slide right", "raise the ceiling"):
        assert f"**{move}**" in text


@pytest.mark.parametrize("page", ["calculator", "home"])
def test_does_not_fit_says_what_would(open_page, page):
    """Seed 004's 70B on 2 x H100 at batch 32 and the default 4,096 tokens does not fit; the page names batch 2,
    3 GPUs, 275 tokens, and each of those fits while one step further does not."""
    from core.model.ceilings import ceiling

    params = {"gpu": "h100-sxm", "model": "llama-3.1-70b", "num_gpus": "2", "batch": "32"}
    at = open_page(page, **params)
    text = next(i.value for i in at.info if "What would fit" in i.value)
    m = re.search(r"a batch of at most ([\d,]+); ([\d,]+) GPUs or more; a context of at most ([\d,]+) tokens", text)
    assert m, text
    batch, gpus, context = (int(_number(g)) for g in m.groups())
    assert (batch, gpus, context) == (2, 3, 275)
    cat = _cat()
    sc = _scenario(params)
    assert not ceiling(cat, sc).fits
    assert ceiling(cat, sc.at(batch=batch)).fits and not ceiling(cat, sc.at(batch=batch + 1)).fits
    assert ceiling(cat, sc.at(num_gpus=gpus)).fits and not ceiling(cat, sc.at(num_gpus=gpus - 1)).fits
    assert ceiling(cat, sc.at(context=context)).fits and not ceiling(cat, sc.at(context=context + 1)).fits


def test_seed_example_fits_at_the_context_the_tour_names(open_page):
    """The tour's check-yourself answer names the seed's context and command; the calculator at it shows the seed's figure."""
    at = open_page("tour", tour_step=STEP_5, gpu="h100-sxm", model="llama-3.1-8b")
    answer = next(md.value for md in at.markdown if "The seed counts weights only" in md.value)
    assert "--context 256" in answer and "1,542 tokens/s" in answer
    calc = open_page("calculator", gpu="h100-sxm", model="llama-3.1-70b", num_gpus="2", batch="32", context="256")
    metrics = {m.label: m.value for m in calc.metric}
    assert metrics["Fits in memory"] == "yes"
    from core.model.ceilings import ceiling
    from core.present.text import si
    from core.present.tour import SEED_004_EXAMPLE

    total = ceiling(_cat(), SEED_004_EXAMPLE).tokens_per_s_total
    assert metrics["Tokens/s total"] == si(total)
    assert total == pytest.approx(1530, rel=0.10)
