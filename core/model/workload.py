"""What a measured figure counts, in step times: the one rule from phases to rates, for the ceiling and the prediction.

A measurement (or a published row) is one of three phases:

- decode: a decode rate or a time per output token; one decode step of
  `batch` sequences counts `batch` tokens: seconds = decode step,
  rate = batch / seconds;
- prefill: prompt processing; the prefill of `batch` prompts counts
  batch x input tokens: seconds = that prefill, rate = batch x input / seconds;
- mixed: a serving run (requests of `input` prompt and `output` generated
  tokens at a concurrency of `batch`): a wave of `batch` requests is the
  prefill of their prompts and `output` decode steps, plus, served online,
  one request overhead: seconds = prefill + output x decode step (+ request),
  rate = batch x output / seconds. Whether the requests run in step or
  arrive spread over the run, each costs its prompt's prefill and a share
  of `output` decode steps of `batch` sequences, so the rate is the same.

A time to first token depends on how the requests arrive:

- served online by a closed-loop client at a concurrency of `batch` (a
  server in its steady state: each request sent as another finishes, so
  arrivals spread over the run), a request arrives into a running batch of
  `batch` - 1 others: ttft = its prompt's chunks, each a step that also
  carries the others' decode tokens (core.model.ceilings.arrival_steps),
  plus the request overhead;
- a fixed batch, or every request sent at once (a burst), waits at the
  median for about half the wave's prompts to be prefilled before its own:
  ttft = prefill of the wave x (batch + 1) / (2 batch).

At batch 1 both are one prompt's prefill. The ceiling's TTFT is one
prompt's prefill alone (the best a request can see).

A time per output token served by a closed loop at a concurrency of
`batch` (the server in its steady state) carries, besides its decode steps,
the prefills of the `batch` - 1 others that arrive while it generates its
`output` tokens: tpot = decode step + wave prefill x (batch - 1) /
(batch x output) (`served_tpot`); a fixed batch's is the decode step.

`seconds` and `rate` are written once and called by the ceiling comparison
(core.evidence.compare), the prediction (core.model.ceilings) and the fit
(core.evidence.predictor).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

PHASES: tuple[str, ...] = ("decode", "prefill", "mixed")
DECODE, PREFILL, MIXED = range(3)


def phase_codes(phases: list[str] | npt.NDArray[np.str_]) -> npt.NDArray[np.intp]:
    """Phase names as codes into PHASES."""
    index = {p: i for i, p in enumerate(PHASES)}
    return np.array([index[p] for p in phases], dtype=np.intp)


def seconds(phase: npt.NDArray[np.intp], output: Array, decode_s: Array, prefill_s: Array, request_s: Array) -> Array:
    """The time a row's rate counts: a decode step, a prefill (of the batch's prompts), or a serving wave."""
    return np.where(phase == DECODE, decode_s, np.where(phase == PREFILL, prefill_s, prefill_s + output * decode_s + request_s))


def rate(phase: npt.NDArray[np.intp], batch: Array, prompt: Array, output: Array, secs: Array) -> Array:
    """tokens/s of `seconds`: batch / s (decode), batch x prompt / s (prefill), batch x output / s (mixed)."""
    counted = np.where(phase == DECODE, batch, np.where(phase == PREFILL, batch * prompt, batch * output))
    with np.errstate(divide="ignore", invalid="ignore"):
        return counted / secs  # type: ignore[no-any-return]


def seconds_of_rate(phase: npt.NDArray[np.intp], batch: Array, prompt: Array, output: Array, tokens_per_s: Array) -> Array:
    """The inverse of `rate`: the seconds a measured rate counts."""
    counted = np.where(phase == DECODE, batch, np.where(phase == PREFILL, batch * prompt, batch * output))
    with np.errstate(divide="ignore", invalid="ignore"):
        return counted / tokens_per_s  # type: ignore[no-any-return]


def burst_ttft(batch: Array, wave_prefill_s: Array, request_s: Array) -> Array:
    """The median time to first token of a burst of `batch` requests: half the wave's prefill before its own, plus the
    request."""
    return wave_prefill_s * burst_share(batch) + request_s


def burst_share(batch: Array) -> Array:
    """d burst_ttft / d wave prefill: (batch + 1) / (2 batch)."""
    return (batch + 1.0) / (2.0 * batch)  # type: ignore[no-any-return]


def expected_ttft(steady: npt.NDArray[np.bool_], batch: Array, wave_prefill_s: Array, arrival_s: Array, request_s: Array) -> Array:
    """The median time to first token: of a request arriving into a running batch where the server is in its `steady`
    state (`arrival_s`, its prompt's steps among the others' decode), else of a burst (`burst_ttft`); plus the request."""
    return np.where(steady, arrival_s + request_s, burst_ttft(batch, wave_prefill_s, request_s))  # type: ignore[no-any-return]


def tpot_share(batch: Array, output: Array) -> Array:
    """d served_tpot / d wave prefill: (batch - 1) / (batch x output)."""
    return (batch - 1.0) / (batch * np.maximum(output, 1.0))  # type: ignore[no-any-return]


def served_tpot(batch: Array, output: Array, decode_s: Array, wave_prefill_s: Array) -> Array:
    """The time per output token of a request served at a concurrency of `batch` in the steady state: its decode steps,
    plus the prefills of the `batch` - 1 others that arrive while it generates its `output` tokens, spread over them:
    decode + wave prefill x (batch - 1) / (batch x output). At batch 1 it is the decode step."""
    return decode_s + wave_prefill_s * tpot_share(batch, output)  # type: ignore[no-any-return]
