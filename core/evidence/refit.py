"""Your own measurements against what the framework is expected to reach, and the predicted model refitted on them.

`expected` predicts each measurement with the predicted model (core.model.predicted, the shipped fit or a refit):
expected_tokens_per_s for the row's phase, expected_ttft_s where the row has a TTFT, and expected_ratio = measured /
expected. The framework of a dataset is the one its format belongs to (FRAMEWORK_OF_FORMAT), else the one the user names.

`refit` fits, for each accelerator and framework a dataset holds, one shift of every parameter of the predicted model
on top of the fit it starts from (its prior: a Gaussian of width USER_SD around 0, so a few rows move it a little and
many rows a lot), by the same penalised least squares on log times as the shipped fit (core.evidence.predictor.fit).
A refit is offered only where it is good enough, the rule the app has always used: at least MIN_FIT_POINTS
observations under their ceiling, and an R² of their log times of at least MIN_FIT_R2 (`refusal` says why not). An
accepted refit applies to its own accelerator and framework only (the level "user" of the predictor's shifts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.evidence import predictor as pr
from core.model import predicted as pm
from core.model import workload as wl
from core.model.predicted import Predictor

Array = npt.NDArray[np.float64]

#: A refit rests on at least this many observations under their ceiling ...
MIN_FIT_POINTS = 4
#: ... and explains at least this share of the variance of their log times (R²); below either it is refused.
MIN_FIT_R2 = 0.5
#: The prior width of a refit's shifts (logit scale for efficiencies, log scale for overheads) ...
USER_SD = 1.0
#: ... and the spread of your measurements about the refitted model (log of the time): narrower than the shipped fit's,
#: since one's own runs of one setup agree with each other far better than campaigns do.
USER_NOISE = 0.05
#: The level of the predictor's shifts a refit adds, keyed "accelerator | framework" (core.model.predicted.level_keys).
USER = "user"

#: The framework a benchmark format's runs use (core.evidence.formats.registry names); a format of several (genai-perf,
#: llmperf, a generic CSV) has none: the user names it.
FRAMEWORK_OF_FORMAT: dict[str, str] = {
    "vllm-serve": "vLLM",
    "vllm-benchmark-serving": "vLLM",
    "vllm-throughput": "vLLM",
    "vllm-latency": "vLLM",
    "vllm-log": "vLLM",
    "vllm-pytorch": "vLLM",
    "sglang-serving": "SGLang",
    "sglang-one-batch": "SGLang",
    "trtllm-bench": "TensorRT-LLM",
    "llama-bench": "llama.cpp",
    "llama-bench-md": "llama.cpp",
    "llama-bench-sql": "llama.cpp",
    "mlperf-summary": "MLPerf",
    "mlperf-results": "MLPerf",
}


def framework_of(fmt: str | None, fallback: str) -> str:
    """The framework of a dataset's format, else `fallback`."""
    return FRAMEWORK_OF_FORMAT.get(fmt or "", fallback)


def refusal(points: int, r2: float | None) -> str | None:
    """Why a refit of `points` observations with this R² is refused, or None when it is accepted."""
    if points < MIN_FIT_POINTS:
        return f"refused: {points} point{'s' if points != 1 else ''} under the ceiling, a refit needs at least {MIN_FIT_POINTS}"
    if r2 is None or not math.isfinite(r2):
        return "refused: R² undefined (the times of these points do not vary)"
    if r2 < MIN_FIT_R2:
        return f"refused: R² {r2:.2f} is below {MIN_FIT_R2:g}, the refit explains too little of the times"
    return None


def _rows(rows: pl.DataFrame, framework: str) -> pl.DataFrame:
    """Measurement rows as the predictor's design reads them: the framework, and served online when a serving run."""
    out = rows.with_columns(pl.lit(framework).alias("framework"))
    if "online" not in out.columns:
        out = out.with_columns((pl.col("phase") == "mixed").alias("online"))
    return out


_SCENARIO = ("gpu", "num_gpus", "model", "weights", "kv", "compute", "phase", "batch", "input_tokens", "output_tokens")


def _distinct(rows: pl.DataFrame) -> tuple[pl.DataFrame, npt.NDArray[np.intp]]:
    """The rows' distinct scenarios (their keys, model_bytes, depth and tp where given) with the geometric mean of their rates
    and times to first token and their count, and each row's scenario: a million-row log is some thousands of them."""
    keys = [c for c in (*_SCENARIO, "model_bytes", "depth", "tp", "online", "status") if c in rows.columns]  # above-ceiling rows apart
    framed = rows.with_columns(pl.int_range(pl.len()).alias("_i"))
    logs = [pl.col("tokens_per_s").log().mean().exp().alias("tokens_per_s"), pl.len().alias("n")]
    if "ttft_s" in rows.columns:
        logs.append(pl.col("ttft_s").filter(pl.col("ttft_s") > 0).log().mean().exp().alias("ttft_s"))
    groups = framed.group_by(keys, maintain_order=True).agg(*logs, pl.col("_i"))
    of = np.empty(rows.height, dtype=np.intp)
    members = groups["_i"]
    of[members.explode().to_numpy()] = np.repeat(np.arange(groups.height), members.list.len().to_numpy())
    return groups.drop("_i"), of


def expected(cat: Catalogue, rows: pl.DataFrame, framework: str, predictor: Predictor | None = None) -> pl.DataFrame:
    """The rows with expected_tokens_per_s (their phase's rate as the framework is expected to reach it), expected_ttft_s
    (the expected median first token of the row's concurrency) and expected_ratio = measured / expected; each distinct
    scenario predicted once. `predictor` default: the catalogue's."""
    p = predictor if predictor is not None else cat.predictor
    if p is None or not rows.height:
        return rows.with_columns(
            *(pl.lit(None, dtype=pl.Float64).alias(c) for c in ("expected_tokens_per_s", "expected_ttft_s", "expected_ratio"))
        )
    distinct, of = _distinct(rows.select([c for c in rows.columns if c in (*_SCENARIO, "model_bytes", "depth", "tp", "tokens_per_s")]))
    des = pr.design(cat, _rows(distinct, framework).with_columns(pl.lit(1.0).alias("ttft_s")))  # a TTFT observation per scenario
    secs = pr.predict(des, p)
    is_rate = des.obs_kind == pr.RATE
    rate = np.full(distinct.height, np.nan)
    ttft = np.full(distinct.height, np.nan)
    counted = wl.rate(
        des.phase, des.batch, np.maximum(distinct["input_tokens"].cast(pl.Float64).to_numpy(), 1.0), des.output, np.ones(distinct.height)
    )
    rate[des.obs_row[is_rate]] = counted[des.obs_row[is_rate]] / secs[is_rate]
    ttft[des.obs_row[~is_rate]] = secs[~is_rate]
    return rows.with_columns(
        pl.Series("expected_tokens_per_s", rate[of], nan_to_null=True),
        pl.Series("expected_ttft_s", ttft[of], nan_to_null=True),
    ).with_columns((pl.col("tokens_per_s") / pl.col("expected_tokens_per_s")).alias("expected_ratio"))


def expected_rates(cat: Catalogue, framework: str, predictor: Predictor | None = None) -> Callable[[pl.DataFrame], Array]:
    """A function giving the expected tokens/s of measurement-like rows (a batch curve's grid)."""

    def rates(grid: pl.DataFrame) -> Array:
        out = expected(cat, grid, framework, predictor)["expected_tokens_per_s"]
        return out.cast(pl.Float64).fill_null(np.nan).to_numpy()  # type: ignore[no-any-return]

    return rates


@dataclass(frozen=True)
class CellFit:
    """The refit of one accelerator and framework: how many observations it rests on, how well it explains them, the
    mean error before and after, whether it is accepted (and why not), the efficiencies and overheads it gives."""

    gpu: str
    framework: str
    points: int
    r2: float | None
    mape_before: float
    mape_after: float
    accepted: bool
    note: str
    shift: tuple[float, ...]
    parameters: tuple[float, ...]  # the refitted cell's parameters in their own units (core.model.predicted.PARAMS)

    def record(self) -> dict[str, Any]:
        """The cell as plain data (the CLI's JSON, the page's table)."""
        return {
            "gpu": self.gpu,
            "framework": self.framework,
            "points": self.points,
            "r2": self.r2,
            "mape_before": self.mape_before,
            "mape_after": self.mape_after,
            "accepted": self.accepted,
            "note": self.note,
            **dict(zip(pm.NAMES, self.parameters, strict=True)),
        }


@dataclass(frozen=True)
class Refit:
    """A dataset's refit: one CellFit per accelerator and framework, the predictor with the accepted ones' shifts."""

    cells: tuple[CellFit, ...]
    predictor: Predictor

    @property
    def accepted(self) -> tuple[CellFit, ...]:
        return tuple(c for c in self.cells if c.accepted)

    def table(self) -> pl.DataFrame:
        """One row per cell, in reading units."""
        schema = {"gpu": pl.String, "framework": pl.String, "points": pl.Int64, "r2": pl.Float64, "mape_before": pl.Float64}
        if not self.cells:
            return pl.DataFrame(schema=schema)
        return pl.DataFrame([c.record() for c in self.cells])


def refit(cat: Catalogue, cmp: pl.DataFrame, framework: str, base: Predictor | None = None) -> Refit:
    """Refit the predicted model on a compared dataset (core.evidence.compare.compare: its rows with `status`), one shift
    per accelerator and framework on top of `base` (default: the catalogue's predictor), on the rows under their
    ceiling. Rows of one scenario enter as one observation of their geometric mean, weighted by their count."""
    start = base if base is not None else cat.predictor
    if start is None or not cmp.height:
        return Refit((), start or Predictor(tuple(pm.PRIOR.tolist()), {}))
    cols = [c for c in (*_SCENARIO, "model_bytes", "depth", "tp", "tokens_per_s", "ttft_s", "status") if c in cmp.columns]
    distinct, _ = _distinct(cmp.select(cols))
    rows = _rows(distinct, framework)
    des = pr.design(cat, rows)
    offset = start.theta_of(des.keys)
    ok = (rows["status"] == "ok").to_numpy() if "status" in rows.columns else np.ones(rows.height, dtype=bool)
    counts = rows["n"].cast(pl.Float64).to_numpy()
    good = np.isfinite(des.obs_seconds) & (des.obs_seconds > 0)
    before = pr.predict(des, start)
    cells: list[CellFit] = []
    user: dict[str, tuple[float, ...]] = dict(start.shifts.get(USER, {}))
    gpus = rows["gpu"].to_list()
    for gpu in dict.fromkeys(gpus):
        mine = np.array([g == gpu for g in gpus]) & ok
        obs = mine[des.obs_row] & good
        weight = counts[des.obs_row[obs]]
        points = int(weight.sum())
        if points == 0:
            cells.append(_refused(gpu, framework, 0, None, float("nan"), "refused: no point under the ceiling"))
            continue
        f = pr.fit(
            des, mine, levels=(), offset=offset, beta0=np.zeros(pm.NP), global_sd=USER_SD, noise=USER_NOISE, iterations=80, weights=counts
        )
        theta = offset[mine] + f.beta[None, :]
        after_secs, _ = pr.subset(des, mine).seconds(pm.parameters(theta))
        after = after_secs[good[mine[des.obs_row]]]  # the subset keeps its rows' observations in order
        y = des.obs_seconds[obs]
        err_before = float(np.average(np.abs(before[obs] - y) / y, weights=weight))
        err_after = float(np.average(np.abs(after - y) / y, weights=weight))
        ly = np.log(y)
        mean = float(np.average(ly, weights=weight))
        spread = float(np.sum(weight * (ly - mean) ** 2))
        r2 = (
            1.0 - float(np.sum(weight * (np.log(after) - ly) ** 2)) / spread
            if points > 1 and spread > 1e-12 * max(abs(mean), 1.0)
            else None
        )
        why = refusal(points, r2)
        shift = tuple(float(x) for x in f.beta)
        params = tuple(float(x) for x in pm.parameters(theta[:1])[0])
        cells.append(CellFit(gpu, framework, points, r2, err_before, err_after, why is None, why or "accepted", shift, params))
        if why is None:
            user[f"{gpu} | {framework}"] = shift
    shifts = {**start.shifts, USER: user}
    return Refit(tuple(cells), replace(start, shifts=shifts))


def _refused(gpu: str, framework: str, points: int, r2: float | None, before: float, why: str) -> CellFit:
    return CellFit(gpu, framework, points, r2, before, float("nan"), False, why, tuple([0.0] * pm.NP), tuple([float("nan")] * pm.NP))


def shift_text(cells: Sequence[CellFit]) -> str:
    """The accepted cells' shifts as a link value: gpu|framework|theta,theta,... per cell, cells joined by ';'."""
    return ";".join(f"{c.gpu}|{c.framework}|" + ",".join(f"{x:.4g}" for x in c.shift) for c in cells if c.accepted)


def with_shift_text(base: Predictor, text: str) -> tuple[Predictor, list[str]]:
    """A predictor with the shifts of a link value (`shift_text`), and what could not be read."""
    user = dict(base.shifts.get(USER, {}))
    problems = []
    for part in [p for p in text.split(";") if p]:
        try:
            gpu, framework, numbers = part.split("|")
            values = tuple(float(x) for x in numbers.split(","))
        except ValueError:
            problems.append(f"refit {part!r} could not be read")
            continue
        if len(values) != pm.NP or not all(math.isfinite(v) and abs(v) <= 20 for v in values) or framework not in pm.FRAMEWORKS:
            problems.append(f"refit {part!r}: {pm.NP} finite shifts and a known framework expected")
            continue
        user[f"{gpu} | {framework}"] = values
    return replace(base, shifts={**base.shifts, USER: user}), problems
