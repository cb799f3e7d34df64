"""Two or more runs side by side: each measurement aligned with its partners on the scenario, with deltas and ratios.

A run is a dataset (or any set of measurements) already compared with its ceilings and with what its framework is
expected to reach (`core.present.figures.measured_view`'s `cmp`). Runs are aligned on the scenario columns
(`core.evidence.compare.SCENARIO_KEYS`: accelerator, count, model, formats, phase, batch or concurrency, lengths),
except those that ARE the comparison: a column that holds one value within each run and not the same value in every
run (H100 against MI300X: the accelerator; fp8 against bf16: the weights) is what the runs differ in, so it is left out
of the alignment and named (`RunsComparison.differ`); only `DIFFERABLE` columns can be. A run's rows at one scenario are reduced to their median; a
scenario's prompt and output lengths match a baseline's within `LENGTH_TOLERANCE` (a serving tool's mean lengths move by
a token or two between runs), and the baseline's are kept. The first run is the baseline: every other run's figures
get their difference (run - baseline) and ratio (run / baseline) at each scenario both have. A scenario held by one run
only is listed as unmatched, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from core.evidence.compare import SCENARIO_KEYS

#: Lengths within this share of each other are the same scenario (and take the baseline's lengths).
LENGTH_TOLERANCE = 0.05
#: The columns that can be what runs differ in (what a person compares runs across); phase, batch and lengths never
#: are: a serving rate is not set against a decode rate, nor one concurrency against another.
DIFFERABLE = ("gpu", "num_gpus", "model", "weights", "kv", "compute")
#: What each aligned scenario carries per run: the median of the run's rows there.
METRICS = ("tokens_per_s", "ttft_s", "tpot_s")
SHARES = ("ratio", "expected_ratio")
_LENGTHS = ("input_tokens", "output_tokens")
#: Above this many scenarios per run the lengths are matched exactly (the tolerant pass is a loop over scenarios).
_TOLERANT_MAX = 20_000


class RunsError(ValueError):
    """Runs that cannot be compared (fewer than two, or one with no measurements); str() names which."""


@dataclass(frozen=True)
class RunsComparison:
    """Runs aligned on their scenarios.

    `table`: one row per (scenario, run) holding it: the scenario columns (`keys`, then `differ` with each run's own
    value), `run` (its label), `rows` (measurements reduced), the METRICS and SHARES medians, for each metric
    `<metric>_delta` and `<metric>_vs_baseline` (null for the baseline and where it has no row), and `partner`:
    "baseline", "matched" or "unmatched (only in <run>)". `summary`: per run, the scenarios it shares with the
    baseline and the medians of its ratios there."""

    labels: tuple[str, ...]
    keys: tuple[str, ...]
    differ: tuple[str, ...]
    table: pl.DataFrame
    summary: pl.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def matched(self) -> int:
        """Scenarios every run holds."""
        full = self.table.group_by("scenario").agg(pl.col("run").n_unique().alias("n")).filter(pl.col("n") == len(self.labels))
        return full.height

    @property
    def unmatched(self) -> int:
        """Rows of the table whose scenario no other run holds."""
        return self.table.filter(pl.col("partner").str.starts_with("unmatched")).height


def compare_runs(runs: Sequence[tuple[str, pl.DataFrame]]) -> RunsComparison:
    """Align `runs` (label, compared rows) on their scenarios; the first is the baseline (module docstring)."""
    if len(runs) < 2:
        raise RunsError(f"a comparison needs at least two runs; {len(runs)} given")
    labels = [label for label, _ in runs]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup is not None:
        raise RunsError(f"two runs are both called {dup!r}: give each run its own name")
    empty = [label for label, rows in runs if rows.is_empty()]
    if empty:
        raise RunsError(f"run {empty[0]!r} holds no measurements")
    scenario_cols = [c for c in SCENARIO_KEYS if all(c in rows.columns for _, rows in runs)]
    reduced = [_reduce(rows, scenario_cols, i, label) for i, (label, rows) in enumerate(runs)]
    differ = tuple(c for c in scenario_cols if c in DIFFERABLE and _is_what_differs(reduced, c))
    keys = tuple(c for c in scenario_cols if c not in differ)
    notes: list[str] = []
    if differ:
        notes.append(f"The runs differ in {', '.join(_WORDS.get(c, c) for c in differ)}: aligned on the rest of the scenario.")
    frame = pl.concat(reduced, how="vertical_relaxed")
    frame, moved = _align_lengths(frame, keys)
    if moved:
        verb = "is" if moved == 1 else "are"
        notes.append(
            f"{moved:,} scenario{'' if moved == 1 else 's'} of later runs matched the baseline's lengths within "
            f"{LENGTH_TOLERANCE:.0%} and {verb} shown at the baseline's lengths."
        )
    table = _with_baseline(frame, keys, labels)
    return RunsComparison(tuple(labels), keys, differ, table, _summary(table, labels), notes)


_WORDS = {
    "gpu": "accelerator",
    "num_gpus": "accelerator count",
    "model": "model",
    "weights": "weight format",
    "kv": "KV-cache format",
    "compute": "compute format",
    "phase": "phase",
    "batch": "batch",
    "input_tokens": "prompt length",
    "output_tokens": "output length",
}


def _reduce(rows: pl.DataFrame, scenario_cols: list[str], index: int, label: str) -> pl.DataFrame:
    """One row per scenario of a run: the medians of its finite figures, and how many rows were reduced."""
    present = [c for c in (*METRICS, *SHARES) if c in rows.columns]
    finite = [pl.col(c).cast(pl.Float64).filter(pl.col(c).cast(pl.Float64).is_finite()).median().alias(c) for c in present]
    out = (
        rows.with_columns(pl.col(c).cast(pl.String) for c in scenario_cols if rows.schema[c] in (pl.Categorical, pl.Enum))
        .group_by(scenario_cols, maintain_order=True)
        .agg(pl.len().alias("rows"), *finite)
        .with_columns(pl.lit(index, dtype=pl.Int32).alias("run_index"), pl.lit(label).alias("run"))
    )
    missing = [pl.lit(None, dtype=pl.Float64).alias(c) for c in (*METRICS, *SHARES) if c not in present]
    return out.with_columns(missing) if missing else out


def _is_what_differs(reduced: list[pl.DataFrame], column: str) -> bool:
    """One value within each run, and not the same one in every run."""
    values = []
    for frame in reduced:
        distinct = frame[column].unique()
        if distinct.len() != 1:
            return False
        values.append(distinct[0])
    return len(set(values)) > 1


def _align_lengths(frame: pl.DataFrame, keys: tuple[str, ...]) -> tuple[pl.DataFrame, int]:
    """A non-baseline scenario with no exact baseline partner takes the lengths of the baseline scenario whose other
    keys are equal and whose lengths are within LENGTH_TOLERANCE (the nearest); how many were moved."""
    lengths = [c for c in _LENGTHS if c in keys]
    if not lengths:
        return frame, 0
    others = [c for c in keys if c not in lengths]
    base = frame.filter(pl.col("run_index") == 0)
    if base.height > _TOLERANT_MAX or frame.height - base.height > _TOLERANT_MAX:
        return frame, 0
    exact = {tuple(r) for r in base.select(keys).iter_rows()}
    by_rest: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in base.select(*others, *lengths).iter_rows():
        by_rest.setdefault(row[: len(others)], []).append(row[len(others) :])
    new_lengths: list[list[Any]] = [[] for _ in lengths]
    moved = 0
    at = [keys.index(c) for c in lengths]
    for row in frame.select("run_index", *keys).iter_rows():
        run_index, key = row[0], row[1:]
        own = tuple(key[i] for i in at)
        chosen = own
        if run_index != 0 and tuple(key) not in exact:
            rest = tuple(key[keys.index(c)] for c in others)
            near = [cand for cand in by_rest.get(rest, []) if _within(own, cand)]
            if near:
                chosen = min(near, key=lambda cand: sum(abs(a - b) / max(abs(b), 1) for a, b in zip(own, cand, strict=True)))
                moved += chosen != own
        for i, value in enumerate(chosen):
            new_lengths[i].append(value)
    return frame.with_columns(pl.Series(c, v, dtype=frame.schema[c]) for c, v in zip(lengths, new_lengths, strict=True)), moved


def _within(own: tuple[Any, ...], cand: tuple[Any, ...]) -> bool:
    return all(
        a is not None and b is not None and abs(a - b) <= LENGTH_TOLERANCE * max(abs(a), abs(b), 1) for a, b in zip(own, cand, strict=True)
    )


def _with_baseline(frame: pl.DataFrame, keys: tuple[str, ...], labels: list[str]) -> pl.DataFrame:
    """Each run's scenario rows merged (a run's rows moved onto one scenario reduced again), numbered, set against the
    baseline's row at the same scenario, and each row's partner named."""
    key_list = list(keys)
    merged = frame.group_by([*key_list, "run_index", "run"], maintain_order=True).agg(
        *(pl.col(c).first() for c in frame.columns if c not in (*key_list, "run_index", "run", "rows", *METRICS, *SHARES)),
        pl.col("rows").sum(),
        *(pl.col(c).median() for c in (*METRICS, *SHARES)),
    )
    scenario_ids = merged.select(key_list).unique(maintain_order=True).with_row_index("scenario")
    merged = merged.join(scenario_ids, on=key_list, how="left", nulls_equal=True)
    base = merged.filter(pl.col("run_index") == 0).select("scenario", *(pl.col(m).alias(f"_base_{m}") for m in METRICS))
    out = merged.join(base, on="scenario", how="left")
    holders = out.group_by("scenario").agg(pl.col("run").n_unique().alias("_holders"))
    out = out.join(holders, on="scenario", how="left")
    has_base = pl.col("_base_tokens_per_s").is_not_null() | pl.col("_base_ttft_s").is_not_null() | pl.col("_base_tpot_s").is_not_null()
    in_base = out.select("scenario", "run_index").filter(pl.col("run_index") == 0)["scenario"]
    baseline_row = pl.col("scenario").is_in(in_base.implode())
    not_base = pl.col("run_index") != 0
    out = out.with_columns(
        *(pl.when(not_base & has_base).then(pl.col(m) - pl.col(f"_base_{m}")).alias(f"{m}_delta") for m in METRICS),
        *(pl.when(not_base & (pl.col(f"_base_{m}") > 0)).then(pl.col(m) / pl.col(f"_base_{m}")).alias(f"{m}_vs_baseline") for m in METRICS),
        pl.when(pl.col("_holders") == 1)
        .then(pl.format("unmatched (only in {})", pl.col("run")))
        .when(pl.col("run_index") == 0)
        .then(pl.lit("baseline"))
        .when(baseline_row)
        .then(pl.lit("matched"))
        .otherwise(pl.lit(f"matched, not in the baseline ({labels[0]})"))
        .alias("partner"),
    )
    return out.sort("scenario", "run_index").drop("_holders", *(f"_base_{m}" for m in METRICS))


def _summary(table: pl.DataFrame, labels: list[str]) -> pl.DataFrame:
    """Per run: its scenarios, those it shares with the baseline, and the medians of its ratios to the baseline there and
    of its shares of the ceiling and of the expected figure over all its scenarios."""
    shared = pl.col("partner") == "matched"
    return (
        table.group_by("run_index", "run", maintain_order=True)
        .agg(
            pl.len().alias("scenarios"),
            pl.col("rows").sum().alias("rows"),
            (shared | (pl.col("partner") == "baseline")).sum().alias("with_baseline"),
            pl.col("partner").str.starts_with("unmatched").sum().alias("unmatched"),
            *(pl.col(f"{m}_vs_baseline").filter(shared).median().alias(f"median_{m}_vs_baseline") for m in METRICS),
            *(pl.col(s).median().alias(f"median_{s}") for s in SHARES),
        )
        .sort("run_index")
        .with_columns(
            pl.when(pl.col("run_index") == 0).then(pl.lit(None, dtype=pl.UInt32)).otherwise(pl.col("with_baseline")).alias("with_baseline")
        )
    )


def runs_json(result: RunsComparison) -> dict[str, Any]:
    """The comparison as JSON-ready values (the CLI's `compare-runs --json`)."""
    return {
        "runs": list(result.labels),
        "baseline": result.labels[0],
        "aligned_on": list(result.keys),
        "runs_differ_in": list(result.differ),
        "matched_scenarios": result.matched,
        "unmatched_rows": result.unmatched,
        "notes": result.notes,
        "summary": result.summary.drop("run_index").to_dicts(),
        "rows": result.table.drop("run_index").to_dicts(),
    }
