"""Fitting the predicted model (core.model.predicted) on published measurements, and scoring it held out.

`design` turns measurement rows (the reference set through
core.evidence.reference.as_measurements, or a user's dataset) into what the
fit needs: each row's decode step, the prefill of its wave of prompts in
the engine's chunks and one prompt arriving into its running batch, its
level keys, and its observations (the seconds its rate counts and, where a
row has one, its time to first token: core.model.workload, a served row's
as its steady state's arrival, a fixed batch's or a max-load run's as a
burst). `fit` finds the global theta and each level's shifts by penalised
least squares on the log of the times (Huber-weighted, so that a handful of
rows far from any model do not bend it): each shift has a Gaussian prior
around 0 whose width is its level's (`PRIOR_SD`), so a cell with few rows
stays near its parents. The steps are Gauss-Newton; each linear step is
solved level by level (block coordinate descent), every block a small
solve.

`held_out` predicts every row from a fit on the rows of every other group
(a publisher's campaign by default: one article, one submission, one
performance page, whatever its URLs), so no campaign predicts itself.
`shipped` reads the fit that ships with the seed (data/seed/predictor.json,
written by `python -m core.evidence.predictor`): the fit on every
reference row and the held-out errors of each accelerator family and
framework, which every prediction carries as its band.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.once import Once
from core.evidence.compare import decode_context
from core.model import predicted as pm
from core.model import workload as wl
from core.model.ceilings import ScenarioArrays, achieved_step_times, achieved_work, arrival_steps, scenario_steps
from core.model.engine import SortedWork, Steps
from core.model.predicted import Band, Predictor

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]

#: Prior width of each level's shifts: (efficiencies on the logit scale, overheads on the log scale).
PRIOR_SD: dict[str, tuple[float, float]] = {
    "vendor": (0.7, 1.0),
    "family": (0.5, 0.7),
    "gpu": (0.3, 0.5),
    "framework": (0.7, 1.0),
    "framework_family": (0.4, 0.7),
    "weights": (0.5, 0.3),
    "weights_framework": (0.4, 0.3),
    "model": (0.2, 0.5),
}
#: Prior width of the global theta around core.model.predicted.PRIOR.
GLOBAL_SD = 2.0
#: The spread of a measurement about the model, on the log of its time: a residual counts as (residual / NOISE)^2 against
#: the priors' widths. Chosen by the held-out error it gives (leave one campaign out, decode throughput and TPOT,
#: 2026-12-02): 18.6% at 1.0, 21.4% at 0.5, 25.4% at 0.3, 24.6% at 0.2; a narrower spread fits each campaign's own rows
#: better (10.2% in sample at 1.0, 6.8% at 0.2) and predicts the others worse. After that day's reading of TTFT,
#: requests and statistics and the llama.cpp CUDA rows: 17.3% at 0.7, 17.4% at 1.0, 19.7% at 1.5 (prefill 83%, 77%,
#: 74%; TTFT 37%, 39%, 43%), so 1.0 stays. A refit on your own rows
#: (core.evidence.refit) uses its own, narrower spread.
NOISE = 1.0
#: Residuals beyond this (on the log of the time, in units of the fit's spread) are weighted down (Huber), so that a few
#: rows far from any model do not bend the fit.
HUBER = 0.25
RATE, TTFT = 0, 1


@dataclass(frozen=True)
class Design:
    """What the fit needs of measurement rows: their steps' work, keys and observations."""

    cat: Catalogue
    rows: pl.DataFrame
    keys: list[dict[str, str]]
    codes: Index  # rows x levels: the index of each row's key among `level_keys[level]`
    level_keys: dict[str, list[str]]
    decode: tuple[Steps, Index, Array, SortedWork]
    prefill: tuple[Steps, Index, Array, SortedWork, Array]
    arrival: tuple[Steps, SortedWork, Array]  # one prompt arriving into the running batch: its steps, work, chunks
    steady: npt.NDArray[np.bool_]  # a TTFT of a server in its steady state (core.model.workload.expected_ttft)
    served: npt.NDArray[np.bool_]  # a time per output token of a server in its steady state (core.model.workload.served_tpot)
    phase: Index
    batch: Array
    output: Array
    online: Array
    pipe: Array
    obs_row: Index
    obs_kind: Index
    obs_seconds: Array

    def seconds(self, params: Array, *, jacobian: bool = False) -> tuple[Array, Array | None]:
        """Each observation's predicted seconds at per-row `params` (own units), and d seconds / d params (obs x NP)."""
        cat = self.cat
        steps, gpu, peak, work = self.decode
        td, jd = achieved_step_times(cat, steps, gpu, peak, params, jacobian=jacobian, work=work)
        steps_p, gpu_p, peak_p, work_p, reps = self.prefill
        tp, jp = achieved_step_times(cat, steps_p, gpu_p, peak_p, params, reps=reps, jacobian=jacobian, work=work_p)
        tp = tp * self.pipe
        steps_a, work_a, reps_a = self.arrival
        ta, ja = achieved_step_times(cat, steps_a, gpu_p, peak_p, params, reps=reps_a, jacobian=jacobian, work=work_a)
        ta = ta * self.pipe
        request = params[:, pm.P["overhead_request_s"]] * self.online
        rate_s = wl.seconds(self.phase, self.output, td, tp, request)
        rate_s = np.where(self.served, wl.served_tpot(self.batch, self.output, td, tp), rate_s)
        ttft_s = wl.expected_ttft(self.steady, self.batch, tp, ta, request)
        r, k = self.obs_row, self.obs_kind
        secs = np.where(k == TTFT, ttft_s[r], rate_s[r])
        if not jacobian:
            return secs, None
        assert jd is not None and jp is not None and ja is not None
        jp = jp * self.pipe[:, None]
        dec, pre = (self.phase == wl.DECODE)[:, None], (self.phase == wl.PREFILL)[:, None]
        j_rate = np.where(dec, jd, np.where(pre, jp, jp + self.output[:, None] * jd))
        j_rate = np.where(self.served[:, None], jd + jp * wl.tpot_share(self.batch, self.output)[:, None], j_rate)
        j_ttft = np.where(self.steady[:, None], ja * self.pipe[:, None], jp * wl.burst_share(self.batch)[:, None])
        req = pm.P["overhead_request_s"]
        j_rate[:, req] += np.where(self.phase == wl.MIXED, self.online, 0.0)
        j_ttft[:, req] += self.online
        return secs, np.where((k == TTFT)[:, None], j_ttft[r], j_rate[r])


def served_tpot_rows(rows: pl.DataFrame) -> npt.NDArray[np.bool_]:
    """Reference rows whose figure is the time per output token of a closed loop at a concurrency above 1: its decode
    steps carry the prefills of the requests arriving meanwhile (core.model.workload.served_tpot)."""
    if "metric" not in rows.columns or "batch_kind" not in rows.columns:
        return np.zeros(rows.height, dtype=bool)
    served = (pl.col("metric") == "tpot") & (pl.col("batch_kind") == "concurrency") & (pl.col("batch") > 1)
    return rows.select(served.fill_null(False)).to_series().to_numpy()  # type: ignore[no-any-return]


def layer_split(rows: pl.DataFrame) -> pl.Expr:
    """llama.cpp on several GPUs with no tensor-parallel degree printed: its default layer split, a pipeline."""
    tp = pl.col("tp").is_null() if "tp" in rows.columns else pl.lit(True)
    return (pl.col("framework") == "llama.cpp") & tp & (pl.col("num_gpus") > 1)


def design(cat: Catalogue, rows: pl.DataFrame) -> Design:
    """The fit's design of measurement rows with columns gpu, model, num_gpus, weights, kv, compute, phase, batch,
    input_tokens, output_tokens, tokens_per_s, framework and, where known, online, ttft_s, model_bytes, tp, metric.

    Reference rows (with `metric`) give one observation each: a TTFT, or the seconds their rate counts; other rows
    give their rate and, where they have one, their time to first token."""
    hw = cat.hardware
    rows = rows.with_columns(layer_split(rows).alias("_split"))
    if "online" not in rows.columns:
        rows = rows.with_columns((pl.col("phase") == "mixed").alias("online"))
    split = rows["_split"].to_numpy()
    ngpu = rows["num_gpus"].to_numpy().astype(np.float64)
    pp = np.where(split, ngpu, 1.0)
    prompt = np.maximum(rows["input_tokens"].cast(pl.Float64).to_numpy(), 1.0)
    output = np.maximum(rows["output_tokens"].cast(pl.Float64).fill_null(1).to_numpy(), 1.0)
    batch = rows["batch"].cast(pl.Float64).to_numpy()
    depth = pl.col("depth").fill_null(0) if "depth" in rows.columns else pl.lit(0, dtype=pl.Int64)
    scen = rows.select(
        "gpu",
        "model",
        pl.Series("num_gpus", (ngpu / pp).astype(np.int64)),
        "weights",
        "compute",
        "kv",
        pl.col("batch").cast(pl.Int64),
        decode_context(rows).alias("context"),
        pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).alias("prompt"),
        depth.cast(pl.Int64).alias("depth"),
    )
    if "model_bytes" in rows.columns:
        params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
        total = rows["model"].replace_strict(params, default=None, return_dtype=pl.Float64)
        scen = scen.with_columns((rows["model_bytes"].cast(pl.Float64) * 8.0 / total).alias("weight_bits"))
    s = ScenarioArrays.of(cat, scen)
    st = scenario_steps(cat, s)
    peak = np.where(st.compute_used >= 0, hw.peaks[s.gpu, np.maximum(st.compute_used, 0)], np.nan)
    chunk = np.array(
        [pm.prefill_chunk(f, hw.memory_bytes[g], hw.names[g]) for f, g in zip(rows["framework"].to_list(), s.gpu.tolist(), strict=True)]
    )
    reps = np.maximum(np.ceil(batch * prompt / chunk), 1.0)
    d = st.decode
    wave = Steps(
        d.model,
        d.num_gpus,
        d.weight_bytes,
        d.kv_bytes,
        d.act_bytes,
        batch,
        prompt,
        s.number("depth"),  # a prompt prefilled over tokens already cached
        np.ones(len(batch), bool),
        d.flash,
    )
    arrival, arrival_reps = arrival_steps(wave, batch, prompt, chunk)
    micro = np.minimum(np.ceil(prompt / pm.PREFILL_CHUNK["llama.cpp"]), pm.LAYER_SPLIT_MICROBATCHES)
    pipe = (micro + pp - 1.0) / (micro * pp)
    keys = [
        pm.level_keys(hw.vendors[g], hw.families[g], hw.ids[g], fw, w, m)
        for g, fw, w, m in zip(s.gpu.tolist(), rows["framework"].to_list(), scen["weights"].to_list(), scen["model"].to_list(), strict=True)
    ]
    level_keys: dict[str, list[str]] = {}
    codes = np.zeros((rows.height, len(pm.LEVELS)), dtype=np.intp)
    for j, level in enumerate(pm.LEVELS):
        values = [k[level] for k in keys]
        uniq = list(dict.fromkeys(values))
        level_keys[level] = uniq
        pos = {v: i for i, v in enumerate(uniq)}
        codes[:, j] = [pos[v] for v in values]
    phase = wl.phase_codes(rows["phase"].to_list())
    rate_secs, ttft = observed_seconds(rows)
    index = np.arange(rows.height)
    if "metric" in rows.columns:  # a reference row is one printed figure
        is_ttft = (rows["metric"] == "ttft").to_numpy()
        obs_row, obs_kind = index, np.where(is_ttft, TTFT, RATE)
        obs_seconds = reference_seconds(rows)
    else:
        has = np.isfinite(ttft) & (ttft > 0)
        obs_row = np.concatenate([index, index[has]])
        obs_kind = np.concatenate([np.full(rows.height, RATE), np.full(int(has.sum()), TTFT)])
        obs_seconds = np.concatenate([rate_secs, ttft[has]])
    return Design(
        cat=cat,
        rows=rows,
        keys=keys,
        codes=codes,
        level_keys=level_keys,
        decode=(d, s.gpu, peak, achieved_work(cat, d)),
        prefill=(wave, s.gpu, peak, achieved_work(cat, wave, reps), reps),
        arrival=(arrival, achieved_work(cat, arrival, arrival_reps), arrival_reps),
        steady=rows["online"].cast(pl.Boolean).to_numpy(),
        served=served_tpot_rows(rows),
        phase=phase,
        batch=batch,
        output=output,
        online=rows["online"].cast(pl.Float64).to_numpy(),
        pipe=pipe,
        obs_row=obs_row,
        obs_kind=obs_kind.astype(np.intp),
        obs_seconds=obs_seconds,
    )


def observed_seconds(rows: pl.DataFrame) -> tuple[Array, Array]:
    """Per measurement row: the seconds its rate counts (core.model.workload) and its time to first token (NaN: none)."""
    phase = wl.phase_codes(rows["phase"].to_list())
    batch = rows["batch"].cast(pl.Float64).to_numpy()
    prompt = np.maximum(rows["input_tokens"].cast(pl.Float64).to_numpy(), 1.0)
    output = np.maximum(rows["output_tokens"].cast(pl.Float64).fill_null(1).to_numpy(), 1.0)
    rate_secs = wl.seconds_of_rate(phase, batch, prompt, output, rows["tokens_per_s"].cast(pl.Float64).to_numpy())
    ttft = rows["ttft_s"].cast(pl.Float64).to_numpy() if "ttft_s" in rows.columns else np.full(rows.height, np.nan)
    return rate_secs, ttft


def reference_seconds(rows: pl.DataFrame) -> Array:
    """Per reference row (one printed figure each): the seconds that figure counts, a TTFT's own."""
    rate_secs, ttft = observed_seconds(rows)
    return np.where((rows["metric"] == "ttft").to_numpy(), ttft, rate_secs)  # type: ignore[no-any-return]


def subset(des: Design, rows: npt.NDArray[np.bool_]) -> Design:
    """The design of some of its rows (their observations kept)."""
    cat = des.cat
    index = np.flatnonzero(rows)
    new_of = np.full(len(rows), -1)
    new_of[index] = np.arange(len(index))
    keep = rows[des.obs_row]
    d_steps, d_gpu, d_peak, _ = des.decode
    p_steps, p_gpu, p_peak, _, reps = des.prefill
    dec = d_steps.take(index)
    pre = p_steps.take(index)
    a_steps, _, a_reps = des.arrival
    arr = a_steps.take(index)
    return Design(
        cat=cat,
        rows=des.rows[index],
        keys=[des.keys[i] for i in index],
        codes=des.codes[index],
        level_keys=des.level_keys,
        decode=(dec, d_gpu[index], d_peak[index], achieved_work(cat, dec)),
        prefill=(pre, p_gpu[index], p_peak[index], achieved_work(cat, pre, reps[index]), reps[index]),
        arrival=(arr, achieved_work(cat, arr, a_reps[index]), a_reps[index]),
        steady=des.steady[index],
        served=des.served[index],
        phase=des.phase[index],
        batch=des.batch[index],
        output=des.output[index],
        online=des.online[index],
        pipe=des.pipe[index],
        obs_row=new_of[des.obs_row[keep]],
        obs_kind=des.obs_kind[keep],
        obs_seconds=des.obs_seconds[keep],
    )


# -- the fit --------------------------------------------------------------------------------------------------


def _level_sd() -> list[Array]:
    """Each level's prior width per parameter (a parameter the level may not shift: a width near 0)."""
    out = []
    for level, allowed in pm.LEVELS.items():
        eff, over = PRIOR_SD[level]
        sd = np.where(pm.LOGIT, eff, over).astype(np.float64)
        mask = np.zeros(pm.NP, dtype=bool)
        mask[list(allowed)] = True
        out.append(np.where(mask, sd, 1e-6))
    return out


def _theta(des: Design, beta: Array, shifts: list[Array], offset: Array | None) -> Array:
    th = np.repeat(beta[None, :], des.rows.height, axis=0) if offset is None else offset + beta[None, :]
    for j, d in enumerate(shifts):
        th = th + d[des.codes[:, j]]
    return th


@dataclass(frozen=True)
class _Blocks:
    """The observations of each block of one level, sorted once: sums over a block are one reduceat."""

    order: Index
    starts: Index
    present: Index  # the block of each run of sorted observations
    size: int

    @classmethod
    def of(cls, codes: Index, size: int) -> _Blocks:
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if len(codes) else np.zeros(0, dtype=np.intp)
        return cls(order, starts, sorted_codes[starts] if len(codes) else starts, size)

    def sums(self, values: Array) -> Array:
        """Per block, the sum of `values`' rows (observations x ...); 0 for a block without observations."""
        out = np.zeros((self.size, *values.shape[1:]))
        if len(self.order):
            out[self.present] = np.add.reduceat(values[self.order], self.starts, axis=0)
        return out


@dataclass(frozen=True)
class Fit:
    """A fit's numbers: the global theta, each level's shifts (blocks x NP, in `Design.level_keys` order), its loss."""

    beta: Array
    shifts: list[Array]
    loss: float
    iterations: int


def fit(
    des: Design,
    use: npt.NDArray[np.bool_] | None = None,
    *,
    levels: Sequence[str] | None = None,
    offset: Array | None = None,
    beta0: Array | None = None,
    global_sd: float = GLOBAL_SD,
    sd_scale: float = 1.0,
    noise: float = NOISE,
    weights: Array | None = None,
    iterations: int = 40,
    sweeps: int = 4,
) -> Fit:
    """Penalised Gauss-Newton on log times over the observations of the rows `use` (default: all).

    `levels`: the levels whose shifts are fitted (default: all of core.model.predicted.LEVELS; the others stay 0);
    `offset`: a theta per row the fit adds to (a refit on top of a shipped fit); `beta0`: the global theta's prior
    centre (default core.model.predicted.PRIOR) and start; `weights`: a weight per row (default 1: a row standing for
    n measurements of one scenario counts n times).
    """
    use_rows = np.ones(des.rows.height, dtype=bool) if use is None else use
    sub = subset(des, use_rows) if not use_rows.all() else des
    off = None if offset is None else offset[use_rows]
    fitted = set(pm.LEVELS) if levels is None else set(levels)
    sds = [sd * sd_scale if level in fitted else np.full(pm.NP, 1e-9) for level, sd in zip(pm.LEVELS, _level_sd(), strict=True)]
    centre = pm.PRIOR.copy() if beta0 is None else beta0.copy()
    beta = centre.copy()
    shifts = [np.zeros((len(des.level_keys[level]), pm.NP)) for level in pm.LEVELS]
    codes = sub.codes
    obs_row = sub.obs_row
    ly = np.log(sub.obs_seconds)
    good = np.isfinite(ly)
    obs_row, ly = obs_row[good], ly[good]
    kinds = sub.obs_kind[good]
    row_weight = np.ones(sub.rows.height) if weights is None else np.asarray(weights, dtype=np.float64)[use_rows]
    obs_weight = row_weight[obs_row]
    sub_obs = dataclasses.replace(sub, obs_row=obs_row, obs_kind=kinds, obs_seconds=sub.obs_seconds[good])

    def evaluate(beta: Array, shifts: list[Array]) -> tuple[float, Array, Array, Array, Array, Array]:
        th = _theta(sub, beta, shifts, off)
        par = pm.parameters(th)
        secs, jac = sub_obs.seconds(par, jacobian=True)
        assert jac is not None
        r = (np.log(secs) - ly) / noise
        a = np.abs(r)
        loss = float(np.sum(obs_weight * np.where(a <= HUBER, r * r, 2 * HUBER * a - HUBER * HUBER)))
        pen = sum(float(np.sum((d / sd) ** 2)) for d, sd in zip(shifts, sds, strict=True)) + float(
            np.sum(((beta - centre) / global_sd) ** 2)
        )
        return loss + pen, r, a, secs, jac, par

    if not len(ly):
        return Fit(beta, shifts, 0.0, 0)
    cur, r, a, secs, jac, par = evaluate(beta, shifts)
    obs_codes = codes[obs_row]
    active = [j for j, level in enumerate(pm.LEVELS) if level in fitted]  # the levels not fitted stay 0: no work
    blocks = {j: _Blocks.of(obs_codes[:, j], len(shifts[j])) for j in active}
    done = 0
    while done < iterations:
        done += 1
        w = obs_weight * np.where(a <= HUBER, 1.0, HUBER / np.maximum(a, 1e-12))
        dpar = np.where(pm.LOGIT, par * (1 - par), par)[obs_row]
        jt = np.nan_to_num(jac * dpar / secs[:, None]) / noise  # d (log seconds / noise) / d theta, per observation
        outer = w[:, None, None] * jt[:, :, None] * jt[:, None, :]
        wj = (w * r)[:, None] * jt
        db = np.zeros(pm.NP)
        dd = [np.zeros_like(d) for d in shifts]
        lin = np.zeros(len(r))
        h_global = np.linalg.inv(outer.sum(axis=0) + np.diag(np.full(pm.NP, 1 / global_sd**2)))
        h_blocks = {j: np.linalg.inv(blocks[j].sums(outer) + np.diag(1 / sds[j] ** 2)[None]) for j in active}
        for _ in range(sweeps):
            part = lin - jt @ db
            grad = wj.sum(axis=0) + (w * part) @ jt + (beta - centre) / global_sd**2
            db = -h_global @ grad
            lin = part + jt @ db
            for j in active:
                b, sd = blocks[j], sds[j]
                c = obs_codes[:, j]
                part = lin - np.einsum("ij,ij->i", jt, dd[j][c])
                gb = b.sums(wj + (w * part)[:, None] * jt) + shifts[j] / sd**2
                dd[j] = -np.einsum("bij,bj->bi", h_blocks[j], gb)
                lin = part + np.einsum("ij,ij->i", jt, dd[j][c])
        step = 1.0
        for _ in range(10):
            nb = beta + step * db
            nd = [d + step * x for d, x in zip(shifts, dd, strict=True)]
            new = evaluate(nb, nd)
            if new[0] < cur:
                break
            step /= 2
        else:
            break
        gain = cur - new[0]
        beta, shifts = nb, nd
        cur, r, a, secs, jac, par = new
        if gain < 1e-7 * max(cur, 1.0):
            break
    return Fit(beta, shifts, cur, done)


def predictor_of(des: Design, f: Fit, trained: npt.NDArray[np.bool_] | None = None, **extra: Any) -> Predictor:
    """A Predictor from a fit: the shifts of the keys its training rows had (the others fitted nothing)."""
    seen = np.ones(des.rows.height, dtype=bool) if trained is None else trained
    shifts: dict[str, dict[str, tuple[float, ...]]] = {}
    for j, level in enumerate(pm.LEVELS):
        present = set(des.codes[seen, j].tolist())
        shifts[level] = {
            key: tuple(float(x) for x in f.shifts[j][i])
            for i, key in enumerate(des.level_keys[level])
            if i in present and np.any(np.abs(f.shifts[j][i]) > 1e-9)
        }
    return Predictor(tuple(float(x) for x in f.beta), shifts, **extra)


def predict(des: Design, predictor: Predictor) -> Array:
    """Each observation's predicted seconds under a Predictor."""
    secs, _ = des.seconds(predictor.parameters_of(des.keys))
    return secs


# -- scoring held out -----------------------------------------------------------------------------------------


def held_out(des: Design, groups: Sequence[str], use: npt.NDArray[np.bool_], **options: Any) -> Array:
    """Each observation's prediction from a fit on the `use` rows of every other group (groups: one label per row)."""
    labels = np.asarray(groups, dtype=object)
    pred = np.full(len(des.obs_row), np.nan)
    for g in dict.fromkeys(labels.tolist()):
        mine = labels == g
        train = use & ~mine
        f = fit(des, train, **options)
        p = predictor_of(des, f, train)
        at = mine[des.obs_row]
        sub = subset(des, mine)
        pred[at] = predict(sub, p)
    return pred


# -- the shipped fit ------------------------------------------------------------------------------------------

#: Where the shipped fit lives, beside the seed it is fitted on.
FILE_NAME = "predictor.json"


def reference_rows(cat: Catalogue) -> pl.DataFrame:
    """The reference set as the fit's rows: measurement columns, framework, campaign, online, metric and family."""
    from core.evidence.reference import as_measurements  # the reference module builds on the comparison

    ref = as_measurements(cat, cat.reference)
    families = dict(zip(cat.hardware.ids, cat.hardware.families, strict=True))
    return ref.with_columns(
        (pl.col("batch_kind") == "concurrency").alias("online"),
        pl.col("gpu").replace_strict(families, default=None).alias("family"),
    )


def seed_hash(cat: Catalogue) -> str:
    """A hash of what the shipped fit rests on: the reference rows, the accelerators' figures, the models' shapes, the
    predicted model's parameters and levels."""
    h = hashlib.sha256()
    h.update(cat.reference.sort("id").write_csv().encode())
    h.update(cat.gpus.drop("custom", strict=False).sort("id").write_csv().encode())
    h.update(cat.models.select("id", "total_params").sort("id").write_csv().encode())
    h.update(json.dumps([pm.NAMES, {k: list(v) for k, v in pm.LEVELS.items()}, PRIOR_SD]).encode())
    return h.hexdigest()[:16]


#: Which band a reference metric's error counts towards (core.model.predicted.BAND_KINDS).
BAND_OF_METRIC = {
    "output_tokens_per_s": "tokens",
    "output_tokens_per_s_per_user": "tokens",
    "tpot": "tokens",
    "itl": "tokens",
    "ttft": "ttft",
    "prefill_tokens_per_s": "ttft",
}
#: The ways the shipped fit is held out: by a publisher's campaign (the bands), by accelerator and by model.
HOLD_OUT = ("campaign", "gpu", "model")


def relative_errors(rows: pl.DataFrame, predicted_s: Array, measured_s: Array) -> Array:
    """|prediction - measured| / measured of each row's own figure: a time's as times, a rate's as rates."""
    times = rows["metric"].is_in(["tpot", "itl", "ttft"]).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(times, np.abs(predicted_s - measured_s) / measured_s, np.abs(measured_s / predicted_s - 1.0))  # type: ignore[no-any-return]


def bands_of(rows: pl.DataFrame, errors: Array) -> dict[tuple[str, str, str], Band]:
    """The held-out error of each (family, framework, kind), and of each family, each framework and everyone."""
    frame = rows.select("family", "framework", pl.col("metric").replace_strict(BAND_OF_METRIC).alias("kind")).with_columns(
        pl.Series("e", errors)
    )
    frame = frame.filter(pl.col("e").is_finite())
    out: dict[tuple[str, str, str], Band] = {}
    for by in (["family", "framework"], ["family"], ["framework"], []):
        groups = frame.group_by([*by, "kind"]).agg(pl.col("e").mean().alias("mape"), pl.len().alias("n"))
        for g in groups.iter_rows(named=True):
            fam, fw = g.get("family", "*"), g.get("framework", "*")
            what = " on ".join(x for x in (fw if fw != "*" else "", fam if fam != "*" else "") if x) or "every framework and accelerator"
            out[(fam, fw, g["kind"])] = Band(float(g["mape"]), int(g["n"]), f"held-out error on {g['n']} measurements of {what}")
    return out


def scored(rows: pl.DataFrame) -> npt.NDArray[np.bool_]:
    """The reference rows the scorecard scores: all but those whose scenario as run is not known (`unscored` says why)."""
    if "unscored" not in rows.columns:
        return np.ones(rows.height, dtype=bool)
    return rows["unscored"].is_null().to_numpy()  # type: ignore[no-any-return]


def fitted(rows: pl.DataFrame, des: Design) -> npt.NDArray[np.bool_]:
    """The reference rows the fit uses: those scored and under their ceilings with a time to fit, but not a served run's
    mean time to first token. The model gives the median; a closed loop's mean TTFT also counts the tail waits it
    leaves out (queueing at the concurrency, the first wave's burst), so it is scored, not fitted. A burst's mean is
    its median."""
    ok = (rows["status"] == "ok").to_numpy() & np.isfinite(des.obs_seconds) & (des.obs_seconds > 0) & scored(rows)
    if "statistic" not in rows.columns:
        return ok  # type: ignore[no-any-return]
    mean_ttft = (pl.col("metric") == "ttft") & (pl.col("statistic") == "mean") & (pl.col("batch_kind") == "concurrency")
    return ok & ~rows.select(mean_ttft.fill_null(False)).to_series().to_numpy()  # type: ignore[no-any-return]


def build(cat: Catalogue, progress: Any = None) -> dict[str, Any]:
    """The shipped fit of a catalogue's reference set: the fit on every row under its ceiling, each row held out by
    campaign, by accelerator and by model, and the bands (JSON-ready)."""
    from core.evidence.reference import reference_compare

    rows = reference_compare(cat).with_columns((pl.col("batch_kind") == "concurrency").alias("online"))
    des = design(cat, rows)
    ok = fitted(rows, des)
    full = fit(des, ok)
    held: dict[str, dict[str, float]] = {}
    for by in HOLD_OUT:
        if progress:
            progress(f"holding out each {by}")
        pred = held_out(des, rows[by].cast(pl.String).to_list(), ok)
        held[by] = {i: float(f"{v:.6g}") for i, v in zip(rows["id"].to_list(), pred.tolist(), strict=True) if math.isfinite(v)}
    campaign = np.array([held["campaign"].get(i, np.nan) for i in rows["id"].to_list()])
    bands = bands_of(rows, np.where(scored(rows), relative_errors(rows, campaign, des.obs_seconds), np.nan))
    counts = rows.filter(pl.Series(ok)).group_by("framework").len()
    predictor = predictor_of(
        des,
        full,
        ok,
        bands=bands,
        frameworks=dict(zip(counts["framework"], counts["len"], strict=True)),
        note=f"fitted on {int(ok.sum())} of {rows.height} published measurements (the rest lie above their ceilings, are a "
        "served run's mean time to first token, or were run in a scenario their source does not print)",
    )
    return {"seed_hash": seed_hash(cat), "fit": predictor.to_json(), "held_out": held}


@dataclass(frozen=True)
class Shipped:
    """The fit that ships with the seed: the predictor, each reference row's held-out predictions (seconds, by the way it
    was held out: HOLD_OUT) and whether it was fitted on this catalogue's reference set and figures."""

    predictor: Predictor
    held_out: dict[str, dict[str, float]]
    current: bool


def shipped_path() -> Path:
    """data/seed/predictor.json (in a checkout) or its copy in the installed package."""
    from core.store.paths import SEED

    return SEED / FILE_NAME


def shipped(cat: Catalogue) -> Shipped:
    """The shipped fit (cached per catalogue, read once however many ask at once). A catalogue whose reference set or
    figures differ from the ones it was fitted on still gets it, marked not current (the scorecard says so); a missing
    file gives an unfitted prior."""
    return _SHIPPED.get(cat.key, lambda: _read_shipped(cat))


def _read_shipped(cat: Catalogue) -> Shipped:
    path = shipped_path()
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        return Shipped(Predictor.from_json(data["fit"]), data.get("held_out", {}), data.get("seed_hash") == seed_hash(cat))
    return Shipped(Predictor(tuple(float(x) for x in pm.PRIOR), {}, note=f"no {FILE_NAME}: the global prior, unfitted"), {}, False)


_SHIPPED: Once[Shipped] = Once()


def with_predictor(cat: Catalogue, predictor: Predictor | None = None, *, tag: str = "") -> Catalogue:
    """The catalogue whose evaluations predict with `predictor` (default: the shipped fit); `tag` names a refit in the
    catalogue's key, so caches keyed on it tell the two apart."""
    chosen = predictor if predictor is not None else shipped(cat).predictor
    key = cat.key if not tag else f"{cat.key}#{tag}"
    return dataclasses.replace(cat, predictor=chosen, key=key)


def main(argv: Sequence[str] | None = None) -> int:
    """python -m core.evidence.predictor [--check]: write data/seed/predictor.json (or say whether it is current)."""
    import argparse

    from core.catalogue.catalogue import load_catalogue
    from core.store.store import Store

    parser = argparse.ArgumentParser(prog="python -m core.evidence.predictor", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped fit is not the fit of today's seed")
    args = parser.parse_args(argv)
    store = Store(Path(":memory:"))
    cat = load_catalogue(store)
    if args.check:
        current = shipped(cat).current
        print("current" if current else f"stale: run python -m core.evidence.predictor to refit {shipped_path()}")
        return 0 if current else 1
    data = build(cat, progress=lambda text: print(text, file=sys.stderr))
    path = shipped_path()
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
