"""LMDeploy's benchmark CSVs: `profile_throughput`, `profile_restful_api` and the older `profile_generation`.

Each script wrote a different column set over the years (InternLM/lmdeploy,
`benchmark/*.py` and `lmdeploy/profiler.py`; tests/fixtures/README.md names the
commit of each). A shape is recognised by its exact set of column names and
read by name, one measurement per data row:

- `profile_throughput` and `profile_restful_api` are serving runs (phase
  mixed: output tokens/s, prefill included); batch = the `batch` / `bs`
  column (the concurrency), never more than the prompts sent. The newest
  `profile_restful_api` CSV has no concurrency (its `request_rate` is `inf`
  by default, every prompt sent at once, and the prompt count is not in the
  file): the batch is asked for. Tokens per request are the totals over the
  requests, or, where only rates are written, `throughput(out tok/s)` over
  the request rate (`RPM` / 60, the more precise of the two).
- `profile_generation` runs static batches: `batch` sequences, each of
  `prompt_tokens` then `completion_tokens`; its first CSV (v0.0.9) timed the
  decode only (phase decode), later ones the whole generation (mixed).

No shape names the model or the accelerator: both come from the context.
The `50%(s)` ... `99%(s)` / `percentile50(s)` columns are percentiles of
every token's latency pooled over the run, not of per-request TPOT: they are
not read (a note says so).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.evidence.formats import CONTEXT_WORDS, Extract, Format, FormatError, Getter, Input, ask, from_records, ratio, rounded

#: A record: the file's row (text cells by column name) plus the values derived from it.
Row = dict[str, Any]


def _num(value: Any) -> float | None:
    """A cell's number (None where it is empty, not a number or not finite)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(float(value)) else None
    if not isinstance(value, str):
        return None
    try:
        out = float(value.strip())
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def _cell(name: str) -> Getter:
    """A getter of one column's text; `-` (what LMDeploy writes for a latency it did not measure) and blanks are None."""

    def get(r: Row) -> Any:
        v = r.get(name)
        return None if v is None or v.strip() in ("", "-") else v

    return get


def _per_request(total: str, count: str) -> Getter:
    """A total over the run divided by the number of requests, rounded (the raw cell where either is not a number)."""

    def get(r: Row) -> Any:
        num, den = _num(r.get(total)), _num(r.get(count))
        if num is None or den is None:
            return r.get(total) if num is None else r.get(count)
        return rounded(ratio(num, den))

    return get


def _from_rates(out_col: str, total_col: str | None, rpm: str) -> Getter:
    """Tokens per request from token rates and the request rate: tokens/s x 60 / RPM (or (total - out) x 60 / RPM)."""

    def get(r: Row) -> Any:
        out, per_min = _num(r.get(out_col)), _num(r.get(rpm))
        if out is None or per_min is None:
            return r.get(out_col) if out is None else r.get(rpm)
        if total_col is None:
            return rounded(ratio(out * 60, per_min))
        total = _num(r.get(total_col))
        if total is None:
            return r.get(total_col)
        return rounded(ratio((total - out) * 60, per_min))

    return get


def _concurrency(batch: str, prompts: str | None) -> Getter:
    """The concurrency column, capped at the prompts sent (fewer prompts than workers run fewer at once)."""

    def get(r: Row) -> Any:
        b = r.get(batch)
        if prompts is None:
            return b
        n = r.get(prompts)
        nb, nn = _num(b), _num(n)
        return n if nb is not None and nn is not None and nn < nb else b

    return get


def _gpus_from_memory(r: Row) -> Any:
    """profile_generation's tensor-parallel size: mem_per_proc(GB) / mem_per_gpu(GB) (mem_per_gpu = memory / tp)."""
    proc, gpu = _num(r.get("mem_per_proc(GB)")), _num(r.get("mem_per_gpu(GB)"))
    if proc is None or gpu is None or gpu < 0.5:
        return None
    tp = proc / gpu
    if not math.isfinite(tp):
        return None
    return round(tp) if round(tp) >= 1 and abs(tp - round(tp)) < 0.05 else None


@dataclass(frozen=True)
class Shape:
    """One column set one version of one script wrote, and how its columns become a measurement."""

    version: str  # the releases that wrote it
    columns: frozenset[str]
    spec: dict[str, tuple[str, Getter]]
    scale: dict[str, float]
    batch_asked: bool = False  # no concurrency in the file: the batch comes from the context


def _shape(version: str, header: str, spec: dict[str, tuple[str, Getter]], scale: dict[str, float] | None = None, **kw: Any) -> Shape:
    return Shape(version, frozenset(next(csv.reader([header]))), spec, scale or {}, **kw)


MS = 1e-3
PCT_NOTE = "the 50%/75%/95%/99% columns are percentiles of every token's latency pooled over the run (not per-request TPOT): not read"


def _serving(batch: str, prompts: str) -> dict[str, tuple[str, Getter]]:
    return {
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": (f"{batch} (capped at {prompts})", _concurrency(batch, prompts)),
        "requests": (prompts, _cell(prompts)),
    }


def _old_totals(prompts: str, out: str, ttft: str) -> dict[str, tuple[str, Getter]]:
    """v0.1.0a1/a2: totals of prompt and completion tokens, first-token latency in seconds."""
    return {
        **_serving("batch", prompts),
        "input_tokens": (f"prompt_tokens / {prompts}", _per_request("prompt_tokens", prompts)),
        "output_tokens": (f"completion_tokens / {prompts}", _per_request("completion_tokens", prompts)),
        "tokens_per_s": (out, _cell(out)),
        "ttft_s": (ttft, _cell(ttft)),
    }


def _rates(prompts: str) -> dict[str, tuple[str, Getter]]:
    """v0.1.0 to v0.8: rates only; tokens per request = tokens/s over requests/s (RPM / 60)."""
    out, total = "throughput(out tok/s)", "throughput(total tok/s)"
    return {
        **_serving("batch", prompts),
        "input_tokens": (f"({total} - {out}) x 60 / RPM", _from_rates(out, total, "RPM")),
        "output_tokens": (f"{out} x 60 / RPM", _from_rates(out, None, "RPM")),
        "tokens_per_s": (out, _cell(out)),
        "ttft_s": ("FTL(ave)(s)", _cell("FTL(ave)(s)")),
    }


def _profiler(batch: str | None) -> dict[str, tuple[str, Getter]]:
    """v0.9.0+: the run's totals and means in ms (lmdeploy/profiler.py save_csv; profile_restful_api's FIELD_NAMES)."""
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(serving run)", lambda r: "mixed"),
        "input_tokens": ("total_input_tokens / completed", _per_request("total_input_tokens", "completed")),
        "output_tokens": ("total_output_tokens / completed", _per_request("total_output_tokens", "completed")),
        "tokens_per_s": ("output_throughput", _cell("output_throughput")),
        "ttft_s": ("mean_ttft_ms", _cell("mean_ttft_ms")),
        "tpot_s": ("mean_tpot_ms", _cell("mean_tpot_ms")),
        "requests": ("completed", _cell("completed")),
    }
    if batch is not None:
        spec["batch"] = (f"{batch} (capped at num_prompts)", _concurrency(batch, "num_prompts"))
    return spec


def _generation(out: str, ttft: str | None, phase: str, gpus: bool = False) -> dict[str, tuple[str, Getter]]:
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(static batch, decode only)" if phase == "decode" else "(static batch, prefill included)", lambda r: phase),
        "batch": ("batch", _cell("batch")),
        "input_tokens": ("prompt_tokens", _cell("prompt_tokens")),
        "output_tokens": ("completion_tokens", _cell("completion_tokens")),
        "tokens_per_s": (out, _cell(out)),
    }
    if ttft is not None:
        spec["ttft_s"] = (ttft, _cell(ttft))
    if gpus:
        spec["num_gpus"] = ("mem_per_proc(GB) / mem_per_gpu(GB)", _gpus_from_memory)
    return spec


_FTL = "1st_token_latency(min)(s),1st_token_latency(max)(s),1st_token_latency(ave)(s)"
_PROFILER_TAIL = (
    "completed,total_input_tokens,total_output_tokens,duration,request_throughput,input_throughput,"
    "output_throughput,mean_e2e_latency_ms,mean_ttft_ms,mean_tpot_ms,mean_itl_ms"
)
_MS = {"ttft_s": MS, "tpot_s": MS}

THROUGHPUT: tuple[Shape, ...] = (
    _shape(
        "v0.9.0+",
        "backend,bs,dataset_name,sharegpt_output_len,random_input_len,random_output_len,random_range_ratio,num_prompts," + _PROFILER_TAIL,
        _profiler("bs"),
        _MS,
    ),
    _shape(
        "v0.7.0-v0.8",
        "batch,num_prompts,RPS,RPM,FTL(ave)(s),throughput(out tok/s),throughput(total tok/s)",
        _rates("num_prompts"),
    ),
    _shape(
        "v0.1.0-v0.6",
        "batch,num_promts,RPS,RPM,FTL(ave)(s),FTL(min)(s),FTL(max)(s),50%(s),75%(s),95%(s),99%(s),"
        "throughput(out tok/s),throughput(total tok/s)",
        _rates("num_promts"),
    ),
    _shape(
        "v0.1.0a2",
        f"batch,num_promts,prompt_tokens,completion_tokens,{_FTL},percentile50(s),percentile75(s),percentile95(s),"
        "percentile99(s),output token thr(tokens/s),total token thr(token/s),RPS,RPM",
        _old_totals("num_promts", "output token thr(tokens/s)", "1st_token_latency(ave)(s)"),
    ),
    _shape(
        "v0.1.0a1",
        f"batch,num_promts,prompt_tokens,completion_tokens,{_FTL},output token thr(tokens/s,total token thr(token/s),RPM",
        _old_totals("num_promts", "output token thr(tokens/s", "1st_token_latency(ave)(s)"),
    ),
)

RESTFUL: tuple[Shape, ...] = (
    _shape(
        "v0.9.0+",
        "backend,dataset_name,sharegpt_output_len,random_input_len,random_output_len,random_range_ratio,request_rate," + _PROFILER_TAIL,
        _profiler(None),
        _MS,
        batch_asked=True,
    ),
    _shape(
        "v0.1.0-v0.6.1",
        "batch,num_prompts,RPS,RPM,FTL(ave)(s),FTL(min)(s),FTL(max)(s),throughput(out tok/s),throughput(total tok/s)",
        _rates("num_prompts"),
    ),
    _shape(
        "v0.1.0a2",
        f"batch,num_prompts,prompt_tokens,completion_tokens,{_FTL},output token thr(tokens/s,total token thr(token/s),RPS,RPM",
        _old_totals("num_prompts", "output token thr(tokens/s", "1st_token_latency(ave)(s)"),
    ),
    _shape(
        "v0.1.0a1",
        f"batch,num_prompts,prompt_tokens,completion_tokens,{_FTL},output token thr(tokens/s,total token thr(token/s),RPM",
        _old_totals("num_prompts", "output token thr(tokens/s", "1st_token_latency(ave)(s)"),
    ),
)

_PCT = "50%(s),75%(s),95%(s),99%(s)"
GENERATION: tuple[Shape, ...] = (
    _shape(
        "v0.5.2-v0.10.1",
        f"batch,prompt_tokens,completion_tokens,throughput(total tok/s),throughput(out tok/s),mem(GB),FTL(ave)(s),FTL(min)(s),FTL(max)(s),{_PCT}",
        _generation("throughput(out tok/s)", "FTL(ave)(s)", "mixed"),
    ),
    _shape(
        "v0.1.0-v0.5.1",
        f"batch,prompt_tokens,completion_tokens,throughput(out tok/s),mem(GB),FTL(ave)(s),FTL(min)(s),FTL(max)(s),{_PCT}",
        _generation("throughput(out tok/s)", "FTL(ave)(s)", "mixed"),
    ),
    _shape(
        "v0.1.0a1-a2",
        f"batch,prompt_tokens,completion_tokens,{_FTL},percentile50(s),percentile75(s),percentile95(s),percentile99(s),"
        "throughput(token/s),mem_per_proc(GB),mem_per_gpu(GB)",
        _generation("throughput(token/s)", "1st_token_latency(ave)(s)", "mixed", gpus=True),
    ),
    _shape(
        "v0.0.9-v0.0.14",
        "batch,prompt_tokens,completion_tokens,throughput_per_proc(token/s),throughput_per_node(token/s),"
        "mem_per_proc(GB),mem_per_gpu(GB),mem_per_node(GB)",
        _generation("throughput_per_proc(token/s)", None, "decode", gpus=True),
    ),
)


def _match(shapes: tuple[Shape, ...], headers: list[str]) -> Shape | None:
    names = frozenset(h.strip() for h in headers)
    return next((s for s in shapes if s.columns == names), None)


def _detector(shapes: tuple[Shape, ...]) -> Callable[[list[str]], bool]:
    return lambda headers: _match(shapes, headers) is not None


def _rate_words(value: Any) -> str:
    rate = (value or "").strip()[:40] if isinstance(value, str) else ""
    if rate.lower() in ("inf", "infinity", "+inf"):
        return "request_rate inf: every prompt sent at once, and the file does not say how many"
    return f"requests at request_rate {rate or '(empty)'}/s"


def read_lmdeploy(fmt: str, tool: str, shapes: tuple[Shape, ...], inp: Input) -> Extract:
    """One measurement per data row of an LMDeploy CSV, read by column name (the shape its header names)."""
    shape = _match(shapes, inp.headers)
    if shape is None:
        raise FormatError(f"the header is not one of {tool}'s column sets: not a {fmt} file?", row=1)
    numbered = [
        (i, r) for i, r in enumerate(csv.DictReader(io.StringIO(inp.text())), 1) if any((v or "").strip() for k, v in r.items() if k)
    ]
    rows = [r for _, r in numbered]
    if not rows:
        raise FormatError("the CSV has a header but no data rows")
    ctx = inp.context
    missing = [c for c in ("gpu", "model") if ctx.get(c) is None]
    lacks = [f"names no {' and no '.join(CONTEXT_WORDS[c] for c in missing)}"] if missing else []
    row, column = None, None
    if shape.batch_asked and ctx.get("batch") is None:
        missing.append("batch")
        lacks.append(f"holds no concurrency ({_rate_words(rows[0].get('request_rate'))})")
        row, column = 1, "request_rate"
    if missing:
        raise FormatError(ask(f"{tool} CSV {', and '.join(lacks)}", *missing), row=row, column=column)
    notes = [f"{tool} CSV, column set of LMDeploy {shape.version}"]
    if any(c.endswith("%(s)") or c.startswith("percentile") for c in shape.columns):
        notes.append(PCT_NOTE)
    if "RPM" in shape.columns and "prompt_tokens" not in shape.columns:
        notes.append("tokens per request = token rate x 60 / RPM (the file holds no token counts)")
    extract = from_records(fmt, rows, shape.spec, scale=dict(shape.scale), notes=notes, rows=[i for i, _ in numbered])
    extract.row_label = "row"
    return extract


#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = (
    Format(
        "lmdeploy-throughput",
        "LMDeploy benchmark/profile_throughput.py --csv (every column set since v0.1.0a1)",
        lambda i: read_lmdeploy("lmdeploy-throughput", "profile_throughput", THROUGHPUT, i),
        csv=_detector(THROUGHPUT),
    ),
    Format(
        "lmdeploy-restful-api",
        "LMDeploy benchmark/profile_restful_api.py CSV (--csv of v0.1.0-v0.6.1; the appended results CSV since v0.9.0)",
        lambda i: read_lmdeploy("lmdeploy-restful-api", "profile_restful_api", RESTFUL, i),
        csv=_detector(RESTFUL),
    ),
    Format(
        "lmdeploy-generation",
        "LMDeploy benchmark/profile_generation.py --csv (static batches; v0.0.9-v0.10.1)",
        lambda i: read_lmdeploy("lmdeploy-generation", "profile_generation", GENERATION, i),
        csv=_detector(GENERATION),
    ),
)
