"""Serving a request load by continuous batching: per-request TTFT, TPOT and end-to-end latency, goodput, replicas needed.

A fast event simulation, not a model of the step times: the seconds of a step
come in as `StepTimes` (from the ceilings, or what a framework is expected to
reach) and the simulator only schedules requests against them. Its cost grows
with the number of events (arrivals, admissions, prefill chunks, completions),
not with the number of steps: between two events every running sequence
advances together, so a run of decode steps is one multiplication, and the
running sequences are kept as a heap of the step index at which each finishes,
against one decode-step counter per instance.

Rules stated once (aggregated serving, `simulate`):
- one replica serves its requests first come, first served, with chunked
  prefill as vLLM and SGLang schedule it: the admitted prompts, each less its
  cached part (prompt - floor(prompt x prefix_hit), at least 1 token), form
  one FCFS stream of tokens, and a step carries the next min(chunk_tokens,
  tokens left) of them, so one step may end a prompt and begin the next;
- a waiting request is admitted at a step's start while the step has prompt
  budget left (fewer than chunk_tokens tokens in the stream) and fewer than
  max batch (`len(decode_s) - 1`) sequences hold a slot, decoding or in the
  stream; a request arriving while the replica runs waits for the step in
  progress to end;
- a step takes decode_s[b] for its b decoding sequences (each advances one
  token) + np.interp(its prompt tokens, prefill_tokens, prefill_s);
- a request's first output token comes at the end of the step that carries
  its prompt's last token, then output - 1 more, one per step;
- memory is not modelled beyond max batch: a replica holds up to max batch
  sequences whatever their lengths, and never preempts one;
- n replicas: requests are dealt round-robin in arrival order (request i to
  replica i mod n), each replica serving its share independently.

Closed loop (`simulate_closed_loop`, as benchmarks run "concurrency N"): N
clients each send a request at t = 0 and the next as soon as the previous one
finishes; client c sends requests c, c + N, c + 2N ... and talks to replica
c mod n.

Disaggregated serving (`simulate_disaggregated`): a prefill pool of P
instances takes prompts from one FCFS queue (the next prompt goes to the first
instance free); an instance prefills one prompt at a time in ceil(tokens /
chunk_tokens) steps of prefill time only. The prompt's KV then moves for
kv_transfer_s; the request joins the decode instance with the fewest running +
waiting sequences (the lowest index on a tie), which batches continuously up
to its own max batch and admits it at the end of its step in progress. The
first token is computed by the prefill instance but reaches the client through
the decode instance once the KV has landed (as SGLang's and vLLM's PD routers
stream from the decode side): TTFT = prefill end + transfer - arrival, TPOT
counts the decode instance's output - 1 tokens from then on.

Times are seconds, lengths tokens, rates requests/s. At most MAX_REQUESTS
requests a run.
"""

from __future__ import annotations

import bisect
import csv
import heapq
import io
import itertools
import json
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The most requests one run (or one trace file) may hold.
MAX_REQUESTS = 1_000_000
#: Percentiles reported by `LoadResult.summary`.
PERCENTILES = (50, 90, 99)
#: Relative tolerance of `goodput`'s bisection: the rate returned meets the targets and is within 1% of one that does not.
GOODPUT_TOLERANCE = 0.01
#: `replicas_needed` gives up (None) past this many replicas.
MAX_REPLICAS = 4096

#: Trace column names accepted, by what they hold, compared in lower case with '_', ' ' and '-' left out; the first present
#: is used. Arrival times in seconds, in milliseconds, and in read_trace's `time_unit`; then prompt and output tokens.
ARRIVAL_S_COLUMNS = ("arrival_s",)
ARRIVAL_MS_COLUMNS = ("arrival_ms", "timestamp_ms")
ARRIVAL_COLUMNS = ("arrival_time", "timestamp", "arrival")
PROMPT_COLUMNS = ("prompt_tokens", "input_length", "input_tokens", "context_tokens", "request_tokens")
OUTPUT_COLUMNS = ("output_tokens", "output_length", "generated_tokens", "response_tokens")

Figure = Literal["ttft", "tpot", "e2e"]
#: The figures a LoadResult has per request.
FIGURES: tuple[Figure, ...] = ("ttft", "tpot", "e2e")
KvTransfer = float | Sequence[float] | FloatArray | Callable[[IntArray], Any]


@dataclass(frozen=True)
class StepTimes:
    """The seconds of an instance's steps, given to the simulator.

    `decode_s[b]`: one decode step with b running sequences (s), b = 0 .. max
    batch (`decode_s[0]` = 0). `chunk_tokens`: the most prompt tokens one step
    carries (chunked prefill). The extra seconds a step spends on x prompt
    tokens: np.interp(x, prefill_tokens, prefill_s), both increasing, the
    tokens covering 1 .. chunk_tokens. `basis`: what the figures are
    ("predicted (vLLM)", "ceiling" ...), carried into the results.
    """

    decode_s: FloatArray
    chunk_tokens: int
    prefill_tokens: FloatArray
    prefill_s: FloatArray
    basis: str = "ceiling"

    def __post_init__(self) -> None:
        decode = np.asarray(self.decode_s, dtype=np.float64)
        tokens = np.asarray(self.prefill_tokens, dtype=np.float64)
        seconds = np.asarray(self.prefill_s, dtype=np.float64)
        if decode.ndim != 1 or decode.size < 2:
            raise ValueError("decode_s needs a step time for batch 1 at least: max batch (len(decode_s) - 1) is 0")
        if not np.isfinite(decode).all() or decode[0] != 0 or (decode[1:] <= 0).any():
            raise ValueError("decode_s must be finite, 0 at batch 0 and > 0 s for every batch from 1")
        if self.chunk_tokens < 1:
            raise ValueError(f"chunk_tokens must be at least 1, not {self.chunk_tokens}")
        if tokens.ndim != 1 or tokens.shape != seconds.shape or tokens.size == 0:
            raise ValueError("prefill_tokens and prefill_s must be two 1-D arrays of the same length")
        if not (np.isfinite(tokens).all() and np.isfinite(seconds).all()) or (seconds < 0).any():
            raise ValueError("prefill_tokens and prefill_s must be finite and prefill_s >= 0")
        if (np.diff(tokens) <= 0).any() or (np.diff(seconds) < 0).any():
            raise ValueError("prefill_tokens must increase and prefill_s must not decrease")
        if tokens[-1] < self.chunk_tokens:
            raise ValueError(f"prefill_tokens must reach chunk_tokens ({self.chunk_tokens}); its last point is {tokens[-1]:g}")
        object.__setattr__(self, "decode_s", decode)
        object.__setattr__(self, "prefill_tokens", tokens)
        object.__setattr__(self, "prefill_s", seconds)

    @property
    def max_batch(self) -> int:
        """The most sequences a decode step runs."""
        return int(self.decode_s.size - 1)

    def prefill_time_s(self, tokens: Any) -> FloatArray:
        """Extra seconds of a step carrying `tokens` prompt tokens (array in, array out)."""
        return np.interp(np.asarray(tokens, dtype=np.float64), self.prefill_tokens, self.prefill_s)


@dataclass(frozen=True)
class Requests:
    """A request stream in arrival order: arrival time (s, from 0), prompt and output tokens of each.

    Arrays are converted and checked (same length, 1 .. MAX_REQUESTS requests,
    times finite and >= 0, prompts >= 0, outputs >= 1); unsorted arrivals are
    sorted (stably). Closed-loop runs ignore the times and use the order.
    """

    arrival_s: FloatArray
    prompt_tokens: IntArray
    output_tokens: IntArray

    def __post_init__(self) -> None:
        arrival = np.asarray(self.arrival_s, dtype=np.float64).ravel()
        prompt = np.asarray(self.prompt_tokens).ravel()
        output = np.asarray(self.output_tokens).ravel()
        if not (arrival.size == prompt.size == output.size):
            raise ValueError(f"arrival_s, prompt_tokens and output_tokens differ in length ({arrival.size}, {prompt.size}, {output.size})")
        if arrival.size == 0:
            raise ValueError("no requests")
        if arrival.size > MAX_REQUESTS:
            raise ValueError(f"{arrival.size:,} requests: at most {MAX_REQUESTS:,} a run")
        if not np.isfinite(arrival).all() or (arrival < 0).any():
            raise ValueError("arrival times must be finite and >= 0 s")
        for label, values, least in (("prompt_tokens", prompt, 0), ("output_tokens", output, 1)):
            if not np.issubdtype(values.dtype, np.number) or not np.isfinite(values).all() or (values != np.round(values)).any():
                raise ValueError(f"{label} must be whole numbers")
            if (values < least).any():
                raise ValueError(f"{label} must be at least {least}; found {values.min():g}")
        prompt, output = prompt.astype(np.int64), output.astype(np.int64)
        if (np.diff(arrival) < 0).any():
            order = np.argsort(arrival, kind="stable")
            arrival, prompt, output = arrival[order], prompt[order], output[order]
        object.__setattr__(self, "arrival_s", arrival)
        object.__setattr__(self, "prompt_tokens", prompt)
        object.__setattr__(self, "output_tokens", output)

    def __len__(self) -> int:
        return int(self.arrival_s.size)


@dataclass(frozen=True)
class LoadResult:
    """One simulated run: per-request event times and figures (s, arrays in arrival order), what produced them.

    `arrival_s`: when each request was sent (closed loop: when its client's
    previous one finished); `first_token_s`: when its first output token
    reached the client; `finish_s`: its last token. `ttft_s` = first token -
    arrival; `tpot_s` = (finish - first token) / (output - 1), NaN for a
    one-token output; `e2e_s` = finish - arrival. `mode`: "aggregated",
    "closed loop" or "disaggregated"; `replicas`: instances serving (the
    decode pool's in disaggregated mode).
    """

    arrival_s: FloatArray
    first_token_s: FloatArray
    finish_s: FloatArray
    ttft_s: FloatArray
    tpot_s: FloatArray
    e2e_s: FloatArray
    prompt_tokens: IntArray
    output_tokens: IntArray
    basis: str
    mode: str
    replicas: int

    def percentile(self, figure: Figure, pct: float) -> float:
        """The pct-th percentile (0 .. 100, linear interpolation) of a figure over the requests (s); TPOT leaves out NaNs."""
        values = self._values(figure)
        values = values[~np.isnan(values)]
        return float(np.percentile(values, pct)) if values.size else math.nan

    def mean(self, figure: Figure) -> float:
        """The mean of a figure over the requests (s; TPOT leaves out NaNs, NaN when all are)."""
        values = self._values(figure)
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else math.nan

    def _values(self, figure: Figure) -> FloatArray:
        if figure not in FIGURES:
            raise ValueError(f"unknown figure {figure!r}: one of {', '.join(FIGURES)}")
        values: FloatArray = getattr(self, f"{figure}_s")
        return values

    @property
    def duration_s(self) -> float:
        """From the first arrival to the last finish (s)."""
        return float(self.finish_s.max() - self.arrival_s.min())

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens over the duration (tokens/s, all replicas)."""
        return float(self.output_tokens.sum()) / self.duration_s if self.duration_s > 0 else math.inf

    @property
    def requests_per_s(self) -> float:
        """Requests finished over the duration (requests/s, all replicas)."""
        return self.arrival_s.size / self.duration_s if self.duration_s > 0 else math.inf

    def meets(self, max_ttft_p90_s: float, max_tpot_p90_s: float) -> bool:
        """Whether p90 TTFT and p90 TPOT are both within the targets (s); no TPOT (all one-token outputs) meets any."""
        tpot = self.percentile("tpot", 90)
        return self.percentile("ttft", 90) <= max_ttft_p90_s and (math.isnan(tpot) or tpot <= max_tpot_p90_s)

    def summary(self) -> dict[str, Any]:
        """The run in figures, units in the key names: percentiles and means (s), throughputs, duration."""
        out: dict[str, Any] = {"requests": int(self.arrival_s.size), "basis": self.basis, "mode": self.mode, "replicas": self.replicas}
        for figure in FIGURES:
            for pct in PERCENTILES:
                out[f"{figure}_p{pct}_s"] = self.percentile(figure, pct)
            out[f"{figure}_mean_s"] = self.mean(figure)
        out["output_tokens_per_s"] = self.output_tokens_per_s
        out["requests_per_s"] = self.requests_per_s
        out["duration_s"] = self.duration_s
        return out

    def frame(self) -> pl.DataFrame:
        """One row per request: arrival, first token and finish times, TTFT, TPOT, E2E (s), prompt and output tokens."""
        return pl.DataFrame(
            {
                "arrival_s": self.arrival_s,
                "first_token_s": self.first_token_s,
                "finish_s": self.finish_s,
                "ttft_s": self.ttft_s,
                "tpot_s": self.tpot_s,
                "e2e_s": self.e2e_s,
                "prompt_tokens": self.prompt_tokens,
                "output_tokens": self.output_tokens,
            }
        )


def _result(req: Requests, arrival: FloatArray, first: FloatArray, finish: FloatArray, basis: str, mode: str, replicas: int) -> LoadResult:
    out = req.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (finish - first) / np.maximum(out - 1, 1), np.nan)
    return LoadResult(arrival, first, finish, first - arrival, tpot, finish - arrival, req.prompt_tokens, out, basis, mode, replicas)


# ---------------------------------------------------------------- request streams


def poisson_arrivals(rate_per_s: float, count: int, seed: int = 0) -> FloatArray:
    """Arrival times (s) of `count` requests of a Poisson process at `rate_per_s`, the first after one gap from 0.

    Gaps are exponential draws of a seeded generator divided by the rate, so
    one seed at two rates gives the same stream, stretched (what bisection on
    the rate needs to be monotonic).
    """
    if not (rate_per_s > 0 and math.isfinite(rate_per_s)):
        raise ValueError(f"rate must be a finite number of requests/s > 0, not {rate_per_s!r}")
    if not 1 <= count <= MAX_REQUESTS:
        raise ValueError(f"count must be 1 .. {MAX_REQUESTS:,}, not {count!r}")
    gaps = np.random.default_rng(seed).standard_exponential(count)
    arrivals: FloatArray = np.cumsum(gaps) / rate_per_s
    return arrivals


def poisson_requests(rate_per_s: float, prompt_tokens: Any, output_tokens: Any, count: int, seed: int = 0) -> Requests:
    """`count` Poisson arrivals at `rate_per_s` with the given prompt and output tokens (one number for all, or one per request)."""
    arrival = poisson_arrivals(rate_per_s, count, seed)
    prompt = np.broadcast_to(np.asarray(prompt_tokens), (count,))
    output = np.broadcast_to(np.asarray(output_tokens), (count,))
    return Requests(arrival, prompt, output)


def _normal(column: str) -> str:
    return "".join(ch for ch in str(column).strip().lower() if ch not in "_ -")


def _pick(columns: Sequence[str], wanted: Sequence[str]) -> str | None:
    normal = {_normal(c): c for c in reversed(columns)}
    return next((normal[_normal(w)] for w in wanted if _normal(w) in normal), None)


Records = Callable[[Sequence[str]], Iterator[tuple[int, list[Any]]]]


def _json_records(items: Iterator[tuple[int, Any]], name: str, kind: str) -> Records:
    def records(keys: Sequence[str]) -> Iterator[tuple[int, list[Any]]]:
        for number, item in items:
            if not isinstance(item, dict):
                raise ValueError(f"{name}: {kind} {number}: not a JSON object")
            absent = [k for k in keys if k not in item]
            if absent:
                raise ValueError(f"{name}: {kind} {number}: no {absent[0]!r} field")
            yield number, [item[k] for k in keys]

    return records


def _jsonl(lines: list[str], name: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{name}: line {number}: not valid JSON ({e.msg})") from None


def _table(data: bytes, name: str) -> tuple[str, list[str], Records]:
    """(how rows are counted, column names, rows' values of the given columns) of a CSV, JSONL or JSON array file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text (a CSV or JSONL file)") from None
    head = text.lstrip()[:1]
    if head == "[":
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}: line {e.lineno}: not valid JSON ({e.msg})") from None
        if not items or not isinstance(items[0], dict):
            raise ValueError(f"{name}: item 1: a JSON array must hold one object per request")
        return "item", list(items[0]), _json_records(enumerate(items, start=1), name, "item")
    if head == "{":
        rows = _jsonl(text.splitlines(), name)
        number, item = next(rows)
        if not isinstance(item, dict):
            raise ValueError(f"{name}: line {number}: not a JSON object")
        return "line", list(item), _json_records(itertools.chain([(number, item)], rows), name, "line")
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise ValueError(f"{name}: line 1: not CSV this reader understands ({e})") from None
    if not header:
        raise ValueError(f"{name}: empty file")

    def records(keys: Sequence[str]) -> Iterator[tuple[int, list[Any]]]:
        where = [header.index(k) for k in keys]
        width = len(header)
        try:
            for row in reader:
                if len(row) != width:
                    if not any(cell.strip() for cell in row):
                        continue
                    raise ValueError(f"{name}: line {reader.line_num}: {len(row)} fields where the header has {width}")
                yield reader.line_num, [row[w] for w in where]
        except csv.Error as e:
            raise ValueError(f"{name}: line {reader.line_num}: not CSV this reader understands ({e})") from None

    return "line", header, records


def _number(value: Any, where: str, label: str, whole: bool, least: float) -> float:
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(f"{where}: {label} is missing or not a number ({value!r})")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {label} {value!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {label} {value!r} is not a finite number")
    if x < least:
        raise ValueError(f"{where}: {label} {value!r} is {'negative' if x < 0 else f'below {least:g}'}")
    if whole and x != round(x):
        raise ValueError(f"{where}: {label} {value!r} is not a whole number of tokens")
    return x


def _instant(value: Any, where: str) -> float:
    """Seconds since the epoch of a date-time text (ISO 8601; no time zone read as UTC)."""
    try:
        when = datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"{where}: arrival time {value!r} is neither a number of seconds nor a date-time") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def read_trace(data: bytes | str | Path, name: str = "", *, time_unit: Literal["s", "ms"] = "s") -> Requests:
    """The requests of a trace file: CSV (a header row), JSONL (one object per line) or a JSON array of objects.

    Columns (any case, '_', ' ' and '-' ignored; the first present is used):
    arrival time `arrival_s` (s), `arrival_ms`, `timestamp_ms` (ms), or
    `arrival_time`, `timestamp`, `arrival` (numbers in `time_unit`: seconds
    unless told "ms", as Mooncake's traces are; or ISO date-times, as Azure's
    are, no time zone read as UTC); prompt `prompt_tokens`, `input_length`,
    `input_tokens`, `context_tokens`, `request_tokens`; output
    `output_tokens`, `output_length`, `generated_tokens`, `response_tokens`.
    Other columns are ignored. Times may be absolute: the earliest is
    subtracted; rows are sorted by time.

    `data` is the file's bytes or its path; `name` names it in messages
    (default: the path's name). At most MAX_REQUESTS requests. A bad file
    raises ValueError naming the file, the line (the item of a JSON array)
    and what is wrong: a missing column or field, a value that is not a
    number, negative, not whole, an output of 0 tokens, too many requests.
    """
    if isinstance(data, (str, Path)):
        path = Path(data)
        name = name or path.name
        data = path.read_bytes()
    name = name or "trace"
    kind, columns, records = _table(data, name)
    wanted = {
        "arrival time": ARRIVAL_S_COLUMNS + ARRIVAL_MS_COLUMNS + ARRIVAL_COLUMNS,
        "prompt tokens": PROMPT_COLUMNS,
        "output tokens": OUTPUT_COLUMNS,
    }
    picked = {label: _pick(columns, names) for label, names in wanted.items()}
    arrival_column = _normal(picked["arrival time"] or "")
    scale = 1e-3 if time_unit == "ms" else 1.0
    if arrival_column in map(_normal, ARRIVAL_MS_COLUMNS):
        scale = 1e-3
    elif arrival_column in map(_normal, ARRIVAL_S_COLUMNS):
        scale = 1.0
    missing = [label for label, column in picked.items() if column is None]
    if missing:
        accepted = "; ".join(f"{label}: {', '.join(wanted[label])}" for label in missing)
        raise ValueError(
            f"{name}: no column for {' and '.join(missing)} (accepted: {accepted}); columns found: {', '.join(map(str, columns))}"
        )
    times: list[float] = []
    prompts: list[float] = []
    outputs: list[float] = []
    dated: bool | None = None
    for number, (when, prompt, output) in records([str(picked[k]) for k in wanted]):
        where = f"{name}: {kind} {number}"
        if len(times) >= MAX_REQUESTS:
            raise ValueError(f"{where}: more than {MAX_REQUESTS:,} requests; at most that many a trace")
        if dated is None:
            dated = isinstance(when, str) and not _is_number(when)
        times.append(_instant(when, where) if dated else _number(when, where, "arrival time", False, 0) * scale)
        prompts.append(_number(prompt, where, "prompt tokens", True, 0))
        outputs.append(_number(output, where, "output tokens", True, 1))
    if not times:
        raise ValueError(f"{name}: no requests (a header and no rows)")
    arrival = np.asarray(times, dtype=np.float64)
    return Requests(arrival - arrival.min(), np.asarray(prompts, dtype=np.int64), np.asarray(outputs, dtype=np.int64))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- the simulation


def _check(prefix_hit: float, replicas: int) -> None:
    if not 0 <= prefix_hit < 1:
        raise ValueError(f"prefix_hit is the fraction of a prompt already cached, 0 <= x < 1, not {prefix_hit!r}")
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, not {replicas!r}")


def _prefill_tokens(prompt: IntArray, prefix_hit: float) -> IntArray:
    """The prompt tokens a prefill computes: those not cached, at least 1."""
    tokens: IntArray = np.maximum(prompt - np.floor(prompt * prefix_hit).astype(np.int64), 1)
    return tokens


def _prefill_work(prompt: IntArray, steps: StepTimes, prefix_hit: float) -> tuple[IntArray, FloatArray, float]:
    """Per request prefilled alone: its chunks and the prefill time of its last chunk (s); the prefill time of a full chunk (s)."""
    tokens = _prefill_tokens(prompt, prefix_hit)
    chunks = -(-tokens // steps.chunk_tokens)
    last = steps.prefill_time_s(tokens - (chunks - 1) * steps.chunk_tokens)
    return chunks, last, float(steps.prefill_time_s(steps.chunk_tokens))


def _serve(
    arrival: list[float],
    waiting_at_0: list[int],
    tokens: list[int],
    remaining: list[int],
    successor: list[int],
    steps: StepTimes,
) -> tuple[list[float], list[float], list[float]]:
    """One aggregated instance: (sent, first token, finish) times (s) of its requests, locally indexed.

    Requests 0 .. len(arrival) - 1 arrive at `arrival` (sorted); those in
    `waiting_at_0` are queued at t = 0 and request successor[r] (>= 0) is sent
    when r finishes (closed loop). `tokens`: prompt tokens to prefill;
    `remaining`: decode tokens after the first.

    The admitted prompts form one FCFS stream of tokens; a step carries the
    next min(chunk, stream) of them, so a step may finish one prompt and start
    the next. Between events the steps are alike and are taken at once.
    """
    m = len(tokens)
    big = m + 1  # heap key = finish step x big + request
    decode_s = steps.decode_s.tolist()
    batch = len(decode_s) - 1
    chunk = steps.chunk_tokens
    full_s = float(steps.prefill_time_s(chunk))
    xs, ys = steps.prefill_tokens.tolist(), steps.prefill_s.tolist()
    sent = arrival + [0.0] * (m - len(arrival))
    first = [0.0] * m
    finish = [0.0] * m
    heap: list[int] = []
    push, pop = heapq.heappush, heapq.heappop
    waiting = deque(waiting_at_0)
    stream: deque[int] = deque()
    scheduled = len(arrival)
    i = 0
    t = 0.0
    step = 0
    running = 0
    pending = 0  # prompt tokens left in the stream
    head = 0  # of which the stream's first request's
    while True:
        while pending < chunk and running + len(stream) < batch:
            if waiting:
                r = waiting.popleft()
            elif i < scheduled and arrival[i] <= t:
                r = i
                i += 1
            elif running == 0 and not stream and i < scheduled:
                t = arrival[i]
                r = i
                i += 1
            else:
                break
            if not stream:
                head = tokens[r]
            stream.append(r)
            pending += tokens[r]
        if stream:
            d = decode_s[running]
            if pending >= chunk:
                k = pending // chunk
                kh = -(-head // chunk)
                if kh < k:
                    k = kh
                if heap:
                    kc = heap[0] // big - step
                    if kc < k:
                        k = kc
                t += k * (d + full_s)
                done = k * chunk
            else:
                k = 1
                done = pending
                j = bisect.bisect_left(xs, done)
                if j == 0 or xs[j] == done:
                    t += d + ys[j]
                else:
                    t += d + ys[j - 1] + (ys[j] - ys[j - 1]) * (done - xs[j - 1]) / (xs[j] - xs[j - 1])
            pending -= done
        elif running:
            d = decode_s[running]
            k = heap[0] // big - step
            if running < batch and i < scheduled:
                ka = int(-((t - arrival[i]) // d))
                if ka < k:
                    k = ka if ka > 0 else 1
            t += k * d
            done = 0
        else:
            break
        step += k
        end = (step + 1) * big
        while heap and heap[0] < end:
            r = pop(heap) % big
            finish[r] = t
            running -= 1
            if successor[r] >= 0:
                sent[successor[r]] = t
                waiting.append(successor[r])
        while stream and head <= done:
            done -= head
            r = stream.popleft()
            head = tokens[stream[0]] if stream else 0
            first[r] = t
            if remaining[r] > 0:
                push(heap, (step + remaining[r]) * big + r)
                running += 1
            else:
                finish[r] = t
                if successor[r] >= 0:
                    sent[successor[r]] = t
                    waiting.append(successor[r])
        head -= done
    return sent, first, finish


def _run_replicas(
    req: Requests, steps: StepTimes, prefix_hit: float, groups: list[IntArray], closed: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Sent, first token and finish times (s) of all requests, each group (global indices, in order) served by one replica.

    closed > 0: closed loop with that many clients (request j's successor is j + closed).
    """
    tokens = _prefill_tokens(req.prompt_tokens, prefix_hit)
    remaining = req.output_tokens - 1
    m = len(req)
    sent, first, finish = np.zeros(m), np.zeros(m), np.zeros(m)
    local = np.zeros(m, dtype=np.int64)
    for idx in groups:
        if idx.size == 0:
            continue
        if closed:
            local[idx] = np.arange(idx.size)
            nxt = idx + closed
            successor = np.where(nxt < m, local[np.minimum(nxt, m - 1)], -1).tolist()
            arrival: list[float] = []
            at_0 = np.flatnonzero(idx < closed).tolist()
        else:
            successor = [-1] * idx.size
            arrival = req.arrival_s[idx].tolist()
            at_0 = []
        s, f, e = _serve(arrival, at_0, tokens[idx].tolist(), remaining[idx].tolist(), successor, steps)
        sent[idx], first[idx], finish[idx] = s, f, e
    return sent, first, finish


def simulate(requests: Requests, steps: StepTimes, *, replicas: int = 1, prefix_hit: float = 0.0) -> LoadResult:
    """Aggregated continuous batching of `requests` on `replicas` identical replicas (dealt round-robin; module docstring)."""
    _check(prefix_hit, replicas)
    groups = [np.arange(r, len(requests), replicas) for r in range(replicas)]
    sent, first, finish = _run_replicas(requests, steps, prefix_hit, groups, 0)
    return _result(requests, sent, first, finish, steps.basis, "aggregated", replicas)


def simulate_closed_loop(
    requests: Requests, steps: StepTimes, *, concurrency: int, replicas: int = 1, prefix_hit: float = 0.0
) -> LoadResult:
    """`concurrency` clients sending `requests` in order, each its next when its previous finishes (arrival times ignored).

    Client c sends requests c, c + N, c + 2N ... to replica c mod `replicas`;
    the result's arrival_s are the times they were sent.
    """
    _check(prefix_hit, replicas)
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1 client, not {concurrency!r}")
    client_replica = np.arange(len(requests)) % concurrency % replicas
    groups = [np.flatnonzero(client_replica == r) for r in range(replicas)]
    sent, first, finish = _run_replicas(requests, steps, prefix_hit, groups, concurrency)
    return _result(requests, sent, first, finish, steps.basis, "closed loop", replicas)


def _prefill_pool(arrival: FloatArray, seconds: FloatArray, instances: int) -> FloatArray:
    """End of each prompt's prefill (s): one FCFS queue, the next prompt to the first instance free."""
    free = [0.0] * instances
    end = np.empty(arrival.size)
    replace = heapq.heapreplace
    for j, (a, s) in enumerate(zip(arrival.tolist(), seconds.tolist(), strict=True)):
        start = free[0] if free[0] > a else a
        end[j] = start + s
        replace(free, start + s)
    return end


def _decode_pool(ready: list[float], order: list[int], remaining: list[int], decode_s: list[float], instances: int) -> list[float]:
    """Finish times (s) of requests joining a pool of decode instances at `ready` (visited in `order`, by time).

    Each joins the instance with the fewest running + waiting sequences and is
    admitted at the end of that instance's step in progress (at once when it is
    idle) while it runs fewer than its max batch.
    """
    m = len(ready)
    big = m + 1
    batch = len(decode_s) - 1
    finish = [0.0] * m
    t = [0.0] * instances
    step = [0] * instances
    running = [0] * instances
    load = [0] * instances
    heaps: list[list[int]] = [[] for _ in range(instances)]
    waiting: list[deque[int]] = [deque() for _ in range(instances)]
    due = [math.inf] * instances
    events: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop

    def plan(q: int) -> None:
        """The time of instance q's next event (a completion, or a step end that admits a waiting request)."""
        n = running[q]
        if n == 0:
            due[q] = math.inf
            return
        d = decode_s[n]
        k = heaps[q][0] // big - step[q]
        if n < batch and waiting[q]:
            ka = int(-((t[q] - ready[waiting[q][0]]) // d))
            k = min(k, max(ka, 1))
        due[q] = t[q] + k * d
        push(events, (due[q], q))

    def admit(q: int) -> None:
        while waiting[q] and running[q] < batch:
            r = waiting[q].popleft()
            push(heaps[q], (step[q] + remaining[r]) * big + r)
            running[q] += 1

    def advance(q: int) -> None:
        n = running[q]
        k = round((due[q] - t[q]) / decode_s[n])
        t[q] = due[q]
        step[q] += k
        end = (step[q] + 1) * big
        h = heaps[q]
        while h and h[0] < end:
            finish[pop(h) % big] = t[q]
            running[q] -= 1
            load[q] -= 1
        admit(q)
        plan(q)

    for r in [*order, -1]:
        a = ready[r] if r >= 0 else math.inf
        while events and events[0][0] <= a:
            when, q = pop(events)
            if when == due[q]:
                advance(q)
        if r < 0:
            break
        q = load.index(min(load))
        load[q] += 1
        waiting[q].append(r)
        if running[q] == 0:
            t[q] = a
        if running[q] < batch and (t[q] >= a or len(waiting[q]) == 1):
            if t[q] >= a:
                admit(q)
            plan(q)
    return finish


def _kv_seconds(kv_transfer_s: KvTransfer, prompt: IntArray) -> FloatArray:
    value = kv_transfer_s(prompt) if callable(kv_transfer_s) else kv_transfer_s
    seconds = np.broadcast_to(np.asarray(value, dtype=np.float64), prompt.shape).copy()
    if not np.isfinite(seconds).all() or (seconds < 0).any():
        raise ValueError("kv_transfer_s must give a finite delay >= 0 s for every request")
    return seconds


def simulate_disaggregated(
    requests: Requests,
    prefill: StepTimes,
    decode: StepTimes,
    *,
    prefill_instances: int = 1,
    decode_instances: int = 1,
    kv_transfer_s: KvTransfer = 0.0,
    prefix_hit: float = 0.0,
) -> LoadResult:
    """Prefill and decode on separate pools (module docstring): `prefill`'s chunk and prefill times, `decode`'s decode steps.

    `kv_transfer_s`: the delay (s) from a prompt's prefill end to its KV being
    on a decode instance: one number for all, one per request, or a function
    of the prompt tokens (array in, seconds out; e.g. `lambda p: 2e-6 * p`).
    The whole prompt's KV moves, its cached part too. A one-token output
    finishes with its first token.
    """
    _check(prefix_hit, prefill_instances)
    if decode_instances < 1:
        raise ValueError(f"decode_instances must be at least 1, not {decode_instances!r}")
    chunks, last, full = _prefill_work(requests.prompt_tokens, prefill, prefix_hit)
    prefill_end = _prefill_pool(requests.arrival_s, (chunks - 1) * full + last, prefill_instances)
    ready = prefill_end + _kv_seconds(kv_transfer_s, requests.prompt_tokens)
    remaining = requests.output_tokens - 1
    decoding = np.flatnonzero(remaining > 0)
    order = decoding[np.argsort(ready[decoding], kind="stable")].tolist()
    finish = np.asarray(_decode_pool(ready.tolist(), order, remaining.tolist(), decode.decode_s.tolist(), decode_instances))
    finish = np.where(remaining > 0, finish, ready)
    basis = prefill.basis if prefill.basis == decode.basis else f"{prefill.basis} prefill, {decode.basis} decode"
    return _result(requests, requests.arrival_s, ready, finish, basis, "disaggregated", decode_instances)


# ---------------------------------------------------------------- capacity


def _meets(requests: Requests, steps: StepTimes, replicas: int, prefix_hit: float, ttft_s: float, tpot_s: float) -> bool:
    return simulate(requests, steps, replicas=replicas, prefix_hit=prefix_hit).meets(ttft_s, tpot_s)


def _targets(max_ttft_p90_s: float, max_tpot_p90_s: float) -> None:
    if not (max_ttft_p90_s > 0 and max_tpot_p90_s > 0):
        raise ValueError(f"targets must be > 0 s (TTFT p90 {max_ttft_p90_s!r}, TPOT p90 {max_tpot_p90_s!r})")


def goodput(
    make_requests: Callable[[float], Requests],
    steps: StepTimes,
    *,
    max_ttft_p90_s: float,
    max_tpot_p90_s: float,
    replicas: int = 1,
    prefix_hit: float = 0.0,
    min_rate_per_s: float = 1e-4,
    max_rate_per_s: float = 1e7,
) -> float:
    """The highest arrival rate (requests/s, all replicas) whose p90 TTFT and p90 TPOT both meet the targets (s).

    `make_requests(rate)` gives the stream at a rate (e.g. `lambda r:
    poisson_requests(r, 1024, 256, 10_000)`; one seed at every rate keeps
    the answer monotonic). The rate is bracketed by doubling or halving from
    an estimate of the replicas' capacity, then bisected to GOODPUT_TOLERANCE
    (1%): the rate returned meets the targets and 1.01 x it does not. 0.0
    when even `min_rate_per_s` does not; `max_rate_per_s` when it still does.
    """
    _check(prefix_hit, replicas)
    _targets(max_ttft_p90_s, max_tpot_p90_s)
    sample = make_requests(1.0)
    chunks, last, full = _prefill_work(sample.prompt_tokens, steps, prefix_hit)
    decode_s = float(sample.output_tokens.mean()) * float(steps.decode_s[-1]) / steps.max_batch
    per_request_s = decode_s + float(((chunks - 1) * full + last).mean())
    guess = min(max(replicas / per_request_s, min_rate_per_s), max_rate_per_s)

    def ok(rate: float) -> bool:
        return _meets(make_requests(rate), steps, replicas, prefix_hit, max_ttft_p90_s, max_tpot_p90_s)

    if ok(guess):
        lo, hi = guess, guess * 2
        while ok(hi):
            if hi >= max_rate_per_s:
                return max_rate_per_s
            lo, hi = hi, min(hi * 2, max_rate_per_s)
    else:
        lo, hi = guess / 2, guess
        while not ok(lo):
            if lo <= min_rate_per_s:
                return 0.0
            lo, hi = max(lo / 2, min_rate_per_s), lo
    while hi - lo > GOODPUT_TOLERANCE * lo:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def replicas_needed(
    rate_per_s: float,
    make_requests: Callable[[float], Requests],
    steps: StepTimes,
    *,
    max_ttft_p90_s: float,
    max_tpot_p90_s: float,
    prefix_hit: float = 0.0,
    max_replicas: int = MAX_REPLICAS,
) -> int | None:
    """The fewest replicas (round-robin) whose p90 TTFT and p90 TPOT meet the targets (s) at `rate_per_s` (all replicas).

    Doubling, then bisection on the count. None when `max_replicas` still
    misses them (a prompt too slow for the TTFT target, a batch too slow for
    the TPOT one: no number of replicas helps).
    """
    _check(prefix_hit, max_replicas)
    _targets(max_ttft_p90_s, max_tpot_p90_s)
    if not (rate_per_s > 0 and math.isfinite(rate_per_s)):
        raise ValueError(f"rate must be a finite number of requests/s > 0, not {rate_per_s!r}")
    requests = make_requests(rate_per_s)

    def ok(n: int) -> bool:
        return _meets(requests, steps, n, prefix_hit, max_ttft_p90_s, max_tpot_p90_s)

    lo, hi = 0, 1
    while not ok(hi):
        if hi >= max_replicas:
            return None
        lo, hi = hi, min(hi * 2, max_replicas)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
