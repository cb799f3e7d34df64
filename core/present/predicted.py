"""The predicted figures in words: what the scenario's framework is expected to reach, with its held-out error.

Every page that shows a ceiling shows the predicted figure beside it through
these sentences, so the wording, the band and what it rests on read the same
everywhere: "expected with vLLM: 1,150 tokens/s (±12%: held-out error on 37
measurements of vLLM on Hopper)".
"""

from __future__ import annotations

import math

from core.model.result import Ceiling
from core.present.text import duration, si


def band_text(error: float | None) -> str:
    """±12% (the held-out mean absolute error), or "error unknown"."""
    if error is None or not math.isfinite(error):
        return "error unknown"
    return f"±{error:.0%}"


def basis(r: Ceiling) -> str:
    """What the band rests on, one clause."""
    return r.predicted_basis or "no held-out measurements"


def expected_tokens(r: Ceiling) -> str:
    """The predicted total throughput with its band, or why there is none."""
    if r.predicted_tokens_per_s_total is None:
        return "no prediction: the scenario does not fit" if not r.fits else "no prediction: no compute peak applies"
    return (
        f"expected with {r.scenario.framework}: {si(r.predicted_tokens_per_s_total)} tokens/s ({band_text(r.predicted_error)}: {basis(r)})"
    )


def expected_ttft(r: Ceiling) -> str:
    """The predicted time to first token with its band, and the burst's where the batch is more than one."""
    if r.predicted_ttft_s is None:
        return "no prediction: no compute peak applies"
    text = (
        f"expected with {r.scenario.framework} for a request arriving into a running batch of {r.scenario.batch}: "
        f"{duration(r.predicted_ttft_s)} ({band_text(r.predicted_ttft_error)} held out)"
    )
    if r.scenario.batch > 1 and r.predicted_burst_ttft_s is not None:
        text += f"; when the batch's {r.scenario.batch} prompts arrive together, the median is {duration(r.predicted_burst_ttft_s)}"
    return text


def share_of_ceiling(r: Ceiling) -> float | None:
    """The predicted throughput's share of the ceiling's."""
    if not r.predicted_tokens_per_s_total or not r.tokens_per_s_total:
        return None
    return r.predicted_tokens_per_s_total / r.tokens_per_s_total


def help_text(r: Ceiling) -> str:
    """What a predicted figure is, for a metric's help."""
    return (
        f"What {r.scenario.framework} is expected to reach: the ceiling's operations at the efficiencies and overheads fitted on "
        f"published measurements of it (sidebar: Framework). {band_text(r.predicted_error)} is the mean error of such predictions "
        f"on measurements held out one publisher at a time: {basis(r)}."
    )
