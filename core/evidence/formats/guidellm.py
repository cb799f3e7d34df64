"""guidellm (the vLLM project's load tool): benchmarks.json / .yaml / .csv of every version.

guidellm saves one report of benchmarks (one per strategy its profile ran:
synchronous, concurrent@N, throughput, constant@R, poisson@R). Each becomes
one `mixed` measurement (a serving run's output tokens/s, prefill included),
from the statistics of the *successful* requests, as guidellm reports them:

- v0.2-v0.3 (`guidellm/benchmark/output.py`, `GenerativeBenchmarksReport`):
  `benchmarks[i].args.strategy`, `.worker.backend_model`, `.request_totals`,
  `.metrics.<name>.successful.{mean, median, percentiles.p90, p99}`.
- v0.4 and later (`guidellm/benchmark/schemas/.../report.py`, `benchmark.py`,
  `metrics.py`): `benchmarks[i].config.strategy`, `.config.backend.model`,
  `.metrics.request_totals`, the same metric names.
- the v0.4+ `benchmarks.csv` (`guidellm/benchmark/outputs/csv.py`): one row
  per benchmark under a header of three rows (group, field, statistic).
- the v0.2-v0.3 `benchmarks.csv` (`output.py`, `GenerativeBenchmarksReport.save_csv`):
  one header row (`Type,Run Id,Id,Name,...,Successful Requests,
  Successful <Metric> mean/median/std dev/[min, 0.1, ..., max]`, then the same
  for errored, incomplete and total; `Args`, `Worker` as JSON text).

batch = the strategy's concurrency (synchronous 1, concurrent `streams`);
a rate-based strategy (throughput, constant, poisson) holds none, so the
measured mean request concurrency, rounded, stands in (noted). tpot is
`inter_token_latency_ms` (first to last token over output tokens - 1, the
TPOT of vLLM's bench): guidellm's `time_per_output_token_ms` counts the first
token's wait too (v0.4+) or divides by all output tokens (v0.2-v0.3).
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import yaml

from core.evidence.formats import Extract, Format, FormatError, Getter, ask, from_records, number, rounded, value_of

MS = 1e-3
#: A YAML report larger than this is refused (PyYAML builds the whole document in memory).
MAX_YAML_BYTES = 20_000_000
_RATE_BASED = ("throughput", "constant", "poisson", "async", "trace")


# -- the report (JSON or YAML) --------------------------------------------------------------------


def is_guidellm_report(r: dict[str, Any]) -> bool:
    """A guidellm report: `benchmarks` whose first one is a `generative_benchmark` (every version since v0.2)."""
    benches = r.get("benchmarks")
    return (
        isinstance(benches, list) and bool(benches) and isinstance(benches[0], dict) and benches[0].get("type_") == "generative_benchmark"
    )


def _scalar(value: Any) -> Any:
    """A file value as a JSON scalar (a YAML date or a nested object becomes short text, for the message)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)[:40]


def _stat(bench: dict[str, Any], metric: str, stat: str) -> Any:
    """metrics.<metric>.successful.<stat> (stat "p90"/"p99" read from percentiles)."""
    metrics = bench.get("metrics")
    node: Any = metrics.get(metric) if isinstance(metrics, dict) else None
    node = node.get("successful") if isinstance(node, dict) else None
    if stat in ("p90", "p99"):
        node = node.get("percentiles") if isinstance(node, dict) else None
    return _scalar(node.get(stat)) if isinstance(node, dict) else None


def _concurrency_of(kind: Any, streams: Any, measured: Any) -> tuple[Any, bool]:
    """(batch, measured?) of a strategy: synchronous 1, concurrent its streams, rate-based the measured mean, rounded."""
    if kind == "synchronous":
        return 1, False
    if kind == "concurrent" and streams is not None:
        return _scalar(streams), False
    value = number(measured)
    if value is not None and value > 0:
        return max(1, round(value)), True
    return _scalar(measured), True


def _report_rows(report: dict[str, Any], context: dict[str, Any], fmt: str) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
    """One row per benchmark: the values a measurement takes, and the file's field each came from."""
    benches = report.get("benchmarks")
    if not isinstance(benches, list) or not benches:
        raise FormatError("the guidellm report holds no benchmarks", column="benchmarks")
    old = any(isinstance(b, dict) and isinstance(b.get("args"), dict) and "strategy" in b["args"] for b in benches)
    where = "args" if old else "config"
    top_args: dict[str, Any] = report["args"] if isinstance(report.get("args"), dict) else {}
    rows: list[dict[str, Any]] = []
    measured: list[int] = []
    for i, b in enumerate(benches, 1):
        if not isinstance(b, dict):
            raise FormatError(f"benchmark {i} is a {type(b).__name__}, not an object", column="benchmarks")
        for path in ((where, "strategy", "type_"), ("metrics",)):
            node: Any = b
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    raise FormatError(f"benchmark {i}: field {'.'.join(path)} is missing: not a guidellm benchmark?", column=".".join(path))
                node = node[key]
        if not isinstance(b["metrics"], dict):
            raise FormatError(f"benchmark {i}: metrics is a {type(b['metrics']).__name__}, not an object", column="metrics")
        strategy = b[where]["strategy"]
        if old:
            model = (b.get("worker") or {}).get("backend_model") if isinstance(b.get("worker"), dict) else None
            count = (b.get("request_totals") or {}).get("successful") if isinstance(b.get("request_totals"), dict) else None
        else:
            backend = b[where].get("backend")
            model = backend.get("model") if isinstance(backend, dict) else None
            model = model or top_args.get("model")
            totals = b["metrics"].get("request_totals")
            count = totals.get("successful") if isinstance(totals, dict) else None
        batch, from_measure = _concurrency_of(strategy.get("type_"), strategy.get("streams"), _stat(b, "request_concurrency", "mean"))
        if from_measure:
            measured.append(i)
        rows.append(
            {
                "model": _scalar(model) or None,
                "batch": batch,
                "input": rounded(_stat(b, "prompt_token_count", "mean")),
                "output": rounded(_stat(b, "output_token_count", "mean")),
                "tps": _stat(b, "output_tokens_per_second", "mean"),
                "requests": _scalar(count),
                **{
                    f"{k}_{s}": _stat(b, m, s)
                    for k, m in (("ttft", "time_to_first_token_ms"), ("itl", "inter_token_latency_ms"))
                    for s in ("mean", "median", "p90", "p99")
                },
            }
        )
    m = "metrics.{}.successful.{}"
    labels = {
        "model": "worker.backend_model" if old else "config.backend.model",
        "batch": f"{where}.strategy.streams / metrics.request_concurrency.successful.mean",
        "input_tokens": m.format("prompt_token_count", "mean"),
        "output_tokens": m.format("output_token_count", "mean"),
        "tokens_per_s": m.format("output_tokens_per_second", "mean"),
        "requests": "request_totals.successful" if old else "metrics.request_totals.successful",
        **_latency_labels(lambda metric, stat: m.format(metric, stat if stat in ("mean", "median") else f"percentiles.{stat}")),
    }
    return rows, labels, _notes(measured, len(rows), context)


def _latency_labels(name: Any) -> dict[str, str]:
    out = {}
    for kind, metric in (("ttft", "time_to_first_token_ms"), ("tpot", "inter_token_latency_ms")):
        for col, stat in ((f"{kind}_s", "mean"), (f"{kind}_p50_s", "median"), (f"{kind}_p90_s", "p90"), (f"{kind}_p99_s", "p99")):
            out[col] = name(metric, stat)
    return out


def _notes(measured: list[int], total: int, context: dict[str, Any]) -> list[str]:
    notes = ["successful requests only (errored and incomplete ones left out); tpot = inter-token latency"]
    if measured and context.get("batch") is None:
        shown = ", ".join(map(str, measured[:10])) + (", ..." if len(measured) > 10 else "")
        notes.append(
            f"benchmark {shown} of {total}: a rate-based strategy (no fixed concurrency): batch = the measured mean request concurrency, rounded"
        )
    return notes


def _extract(
    fmt: str, rows: list[dict[str, Any]], labels: dict[str, str], notes: list[str], context: dict[str, Any], lines: list[int] | None = None
) -> Extract:
    if context.get("gpu") is None:
        raise FormatError(ask("guidellm results name no accelerator", "gpu"), column="(not in the file)")
    spec: dict[str, tuple[str, Getter]] = {
        "model": (labels["model"], value_of("model")),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": (labels["batch"], value_of("batch")),
        "input_tokens": (labels["input_tokens"], value_of("input")),
        "output_tokens": (labels["output_tokens"], value_of("output")),
        "tokens_per_s": (labels["tokens_per_s"], value_of("tps")),
        "requests": (labels["requests"], value_of("requests")),
    }
    scale: dict[str, float] = {}
    for kind, key in (("ttft", "ttft"), ("tpot", "itl")):
        for col, stat in ((f"{kind}_s", "mean"), (f"{kind}_p50_s", "median"), (f"{kind}_p90_s", "p90"), (f"{kind}_p99_s", "p99")):
            if any(r.get(f"{key}_{stat}") is not None for r in rows):
                spec[col] = (labels[col], value_of(f"{key}_{stat}"))
                scale[col] = MS
    extract = from_records(fmt, rows, spec, scale=scale, notes=notes, rows=lines)
    extract.row_label = "line" if lines else "benchmark"
    return extract


def guidellm_report(records: list[dict[str, Any]], context: dict[str, Any], fmt: str = "guidellm-json") -> Extract:
    """A guidellm benchmarks.json (any version since v0.2): one measurement per benchmark."""
    rows, labels, notes = _report_rows(records[0], context, fmt)
    return _extract(fmt, rows, labels, notes, context)


# -- YAML -------------------------------------------------------------------------------------------

_YAML_TOP = re.compile(r"^(?:benchmarks|args|config|metadata):[ \t]*$", re.M)
_YAML_KEYS = re.compile(
    r"^[ \t-]*(?:type_: generative_benchmark|(?:strategy_index|run_index|backend_model|guidellm_version|"
    r"measured_concurrencies|prefer_response_metrics|data_column_mapper|request_totals):)",
    re.M,
)


def is_guidellm_yaml(head: str) -> bool:
    """A YAML report (keys sorted by yaml.dump): a top-level `benchmarks:` (or `args:`) and guidellm's own keys."""
    start = head.lstrip()
    return not start.startswith(("{", "[")) and bool(_YAML_TOP.search(head[:4096])) and bool(_YAML_KEYS.search(head))


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """yaml.safe_load's loader, reading the `!!python/...` tags that yaml.dump writes for a Path or a tuple as plain data
    (a list, a mapping or text): nothing is constructed, nothing is called."""


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _plain)


def load_yaml(data: bytes) -> dict[str, Any]:
    """The report a YAML file holds; FormatError (naming the line) for a file too large, malformed or not a mapping."""
    if len(data) > MAX_YAML_BYTES:
        raise FormatError(f"the YAML is {len(data) / 1e6:,.0f} MB; the limit is {MAX_YAML_BYTES / 1e6:,.0f} MB")
    try:
        value = yaml.load(data.decode("utf-8-sig"), Loader=_Loader)  # noqa: S506 (a SafeLoader: no object is built)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise FormatError(f"the YAML is malformed: {exc.problem or exc.context}", row=line) from None
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"the YAML cannot be read: {str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__}") from None
    if not isinstance(value, dict):
        raise FormatError(f"the YAML is a single {type(value).__name__}, not a guidellm report")
    if not is_guidellm_report(value):
        raise FormatError("the YAML holds no benchmarks of type generative_benchmark: not a guidellm report", column="benchmarks")
    return value


def guidellm_yaml(data: bytes, context: dict[str, Any]) -> Extract:
    """A guidellm benchmarks.yaml (any version): the same report as the JSON."""
    fmt = "guidellm-yaml"
    rows, labels, notes = _report_rows(load_yaml(data), context, fmt)
    return _extract(fmt, rows, labels, notes, context)


# -- CSV (v0.4+, multi-row header) ------------------------------------------------------------------


def is_guidellm_csv(head: str) -> bool:
    """guidellm's benchmarks.csv (v0.4+): header rows 'Run Info,Run Info,...' then 'Run ID,Run Index,...'."""
    lines = head.lstrip("\ufeff").splitlines()
    return len(lines) >= 2 and lines[0].startswith("Run Info,Run Info,") and lines[1].startswith("Run ID,Run Index,")


def _percentile(cell: str, index: int) -> Any:
    """Item `index` of a "[min, p0.1, p1, p5, p10, p25, p75, p90, p95, p99, max]" cell (the text itself when malformed)."""
    text = cell.strip()
    if not text:
        return None
    parts = text.strip("[]").split(",")
    return parts[index].strip() if text.startswith("[") and text.endswith("]") and len(parts) == 11 else text


def guidellm_csv(body: str, context: dict[str, Any]) -> Extract:
    """A guidellm v0.4+ benchmarks.csv: columns named (group, field, statistic) over three header rows."""
    fmt = "guidellm-csv"
    try:
        table = list(csv.reader(io.StringIO(body)))
    except csv.Error as exc:
        raise FormatError(f"not a well-formed CSV: {exc}") from None
    table = [r for r in table if any(c.strip() for c in r)]
    depth = 3 if len(table) > 2 and table[2][:1] == [""] else 2
    if len(table) <= depth:
        raise FormatError("the guidellm CSV has a header but no benchmark rows")
    header = [tuple(col) for col in zip(*(r + [""] * (len(table[0]) - len(r)) for r in table[:depth]), strict=False)]
    index: dict[tuple[str, ...], int] = {}
    for n, key in enumerate(header):
        index.setdefault(tuple(k.strip() for k in key) + ("",) * (3 - depth), n)
    data = table[depth:]

    def col(group: str, field: str, stat: str = "") -> int | None:
        return index.get((group, field, stat))

    for need in (("Benchmark", "Strategy", ""), ("Token Throughput", "Successful Output Tokens/Sec", "Mean")):
        if col(*need) is None:
            raise FormatError(
                f"column {' / '.join(p for p in need if p)} is missing: not a guidellm benchmarks.csv?", column=" / ".join(need[:2])
            )
    rows: list[dict[str, Any]] = []
    measured: list[int] = []
    for n, raw in enumerate(data, 1):
        line = depth + n

        def cell(group: str, field: str, stat: str = "", raw: list[str] = raw) -> str | None:
            at = col(group, field, stat)
            return raw[at].strip() if at is not None and at < len(raw) and raw[at].strip() else None

        kind = cell("Benchmark", "Strategy")
        streams = None
        if kind == "concurrent":
            streams = _streams(cell("Run Info", "Profile"), cell("Run Info", "Run Index"))
        batch, from_measure = _concurrency_of(kind, streams, _num(cell("Server Throughput", "Successful Concurrency", "Mean")))
        if from_measure:
            measured.append(line)
        rows.append(
            {
                "_line": line,
                "model": _json_field(cell("Run Info", "Backend"), "model"),
                "batch": batch,
                "input": rounded(_num(cell("Token Metrics", "Successful Input Tokens", "Mean"))),
                "output": rounded(_num(cell("Token Metrics", "Successful Output Tokens", "Mean"))),
                "tps": cell("Token Throughput", "Successful Output Tokens/Sec", "Mean"),
                "requests": cell("Request Counts", "Successful"),
                **{
                    f"{key}_{stat}": (
                        cell(group, "Successful ms", stat.capitalize())
                        if stat in ("mean", "median")
                        else _percentile(cell(group, "Successful ms", "Percentiles") or "", 7 if stat == "p90" else 9)
                    )
                    for key, group in (("ttft", "Time to First Token"), ("itl", "Inter Token Latency"))
                    for stat in ("mean", "median", "p90", "p99")
                },
            }
        )
    labels = {
        "model": "Run Info / Backend (model)",
        "batch": "Run Info / Profile (streams) / Server Throughput / Successful Concurrency / Mean",
        "input_tokens": "Token Metrics / Successful Input Tokens / Mean",
        "output_tokens": "Token Metrics / Successful Output Tokens / Mean",
        "tokens_per_s": "Token Throughput / Successful Output Tokens/Sec / Mean",
        "requests": "Request Counts / Successful",
        **_latency_labels(
            lambda metric, stat: (
                f"{'Time to First Token' if metric.startswith('time') else 'Inter Token Latency'} / Successful ms / "
                + {"mean": "Mean", "median": "Median", "p90": "Percentiles (p90)", "p99": "Percentiles (p99)"}[stat]
            )
        ),
    }
    return _extract(fmt, rows, labels, _notes(measured, len(rows), context), context, [r["_line"] for r in rows])


# -- CSV (v0.2-v0.3, one header row) ---------------------------------------------------------------

#: Its percentile columns: `<Status> <Metric> [min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max]` (p90 item 7, p99 item 9).
_V03_PCT = "[min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max]"


def is_guidellm_v03_csv(headers: list[str]) -> bool:
    """guidellm's v0.2-v0.3 benchmarks.csv: one header row starting Type,Run Id,Id,Name,...,Successful Requests.

    The first columns `save_csv` writes (`_benchmark_desc_headers_and_values`, then the successful status's count).
    """
    head = ("Type", "Run Id", "Id", "Name", "Start Time", "End Time", "Duration", "Successful Requests")
    return tuple(h.strip().lstrip("\ufeff") for h in headers[: len(head)]) == head


def _v03_column(metric: str, stat: str) -> str:
    """The column `_benchmark_status_metrics_stats` names for the successful requests' `metric` and `stat`."""
    name = f"Successful {metric.replace('_', ' ').capitalize()}"
    return f"{name} {_V03_PCT}" if stat in ("p90", "p99") else f"{name} {stat.replace('_', ' ')}"


def guidellm_v03_csv(body: str, context: dict[str, Any]) -> Extract:
    """A guidellm v0.2-v0.3 benchmarks.csv: one row per benchmark, columns named as `save_csv` names them."""
    fmt = "guidellm-csv-v0.3"
    try:
        table = [r for r in csv.reader(io.StringIO(body)) if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise FormatError(f"not a well-formed CSV: {exc}") from None
    if len(table) < 2:
        raise FormatError("the guidellm CSV has a header but no benchmark rows")
    index: dict[str, int] = {}
    for n, name in enumerate(table[0]):
        index.setdefault(name.strip().lstrip("\ufeff"), n)
    needed = ("Name", "Args", _v03_column("output_tokens_per_second", "mean"), _v03_column("time_to_first_token_ms", "mean"))
    for need in needed:
        if need not in index:
            raise FormatError(f"column {need} is missing: not a guidellm benchmarks.csv?", column=need)
    rows: list[dict[str, Any]] = []
    measured: list[int] = []
    for n, raw in enumerate(table[1:], 1):

        def cell(name: str, raw: list[str] = raw) -> str | None:
            at = index.get(name)
            return raw[at].strip() if at is not None and at < len(raw) and raw[at].strip() else None

        def stat(metric: str, which: str) -> Any:
            value = cell(_v03_column(metric, which))
            return _percentile(value or "", 7 if which == "p90" else 9) if which in ("p90", "p99") else value

        kind, _, rate = (cell("Name") or "").partition("@")
        streams = _json_path(cell("Args"), "strategy", "streams")
        if kind == "concurrent" and streams is None and rate.isdigit():
            streams = int(rate)
        batch, from_measure = _concurrency_of(kind, streams, _num(stat("request_concurrency", "mean")))
        if from_measure:
            measured.append(n)
        rows.append(
            {
                "model": _json_field(cell("Worker"), "backend_model"),
                "batch": batch,
                "input": rounded(_num(stat("prompt_token_count", "mean"))),
                "output": rounded(_num(stat("output_token_count", "mean"))),
                "tps": stat("output_tokens_per_second", "mean"),
                "requests": cell("Successful Requests"),
                **{
                    f"{key}_{s}": stat(metric, s)
                    for key, metric in (("ttft", "time_to_first_token_ms"), ("itl", "inter_token_latency_ms"))
                    for s in ("mean", "median", "p90", "p99")
                },
            }
        )
    labels = {
        "model": "Worker (backend_model)",
        "batch": f"Name / Args (strategy.streams) / {_v03_column('request_concurrency', 'mean')}",
        "input_tokens": _v03_column("prompt_token_count", "mean"),
        "output_tokens": _v03_column("output_token_count", "mean"),
        "tokens_per_s": _v03_column("output_tokens_per_second", "mean"),
        "requests": "Successful Requests",
        **_latency_labels(lambda metric, s: _v03_column(metric, s) + (f" ({s})" if s in ("p90", "p99") else "")),
    }
    extract = _extract(fmt, rows, labels, _notes(measured, len(rows), context), context)
    extract.row_label = "row"
    return extract


def _json_path(text: str | None, *path: str) -> Any:
    """A scalar at `path` in a cell of JSON text (None where the cell is not JSON or lacks it)."""
    try:
        node: Any = json.loads(text) if text else None
    except (json.JSONDecodeError, RecursionError):
        return None
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return _scalar(node)


def _num(text: str | None) -> Any:
    """A CSV cell as a number where it is one (rounding needs it), else the text (validation names it)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _json_field(text: str | None, key: str) -> Any:
    try:
        value = json.loads(text) if text else None
    except (json.JSONDecodeError, RecursionError):
        return None
    return _scalar(value.get(key)) or None if isinstance(value, dict) else None


def _streams(profile: str | None, run_index: str | None) -> Any:
    """The concurrent profile's streams for this run (`streams[run_index]` of the Profile column); None where absent."""
    try:
        value = json.loads(profile) if profile else None
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("attributes"), dict):
        value = value["attributes"]
    streams = value.get("streams") if isinstance(value, dict) else None
    if isinstance(streams, int) and not isinstance(streams, bool):
        return streams
    if isinstance(streams, list) and run_index is not None and run_index.isdigit() and int(run_index) < len(streams):
        return _scalar(streams[int(run_index)])
    return None


FORMATS: tuple[Format, ...] = (
    Format(
        "guidellm-json",
        "guidellm benchmarks.json (v0.2 and later; one measurement per benchmark)",
        lambda i: guidellm_report(i.records or [{}], i.context),
        json=is_guidellm_report,
    ),
    Format(
        "guidellm-yaml",
        "guidellm benchmarks.yaml (v0.2 and later)",
        lambda i: guidellm_yaml(i.data, i.context),
        text=is_guidellm_yaml,
    ),
    Format(
        "guidellm-csv",
        "guidellm benchmarks.csv (v0.4 and later: three header rows)",
        lambda i: guidellm_csv(i.text(), i.context),
        text=is_guidellm_csv,
    ),
    Format(
        "guidellm-csv-v0.3",
        "guidellm benchmarks.csv (v0.2-v0.3: one header row)",
        lambda i: guidellm_v03_csv(i.text(), i.context),
        csv=is_guidellm_v03_csv,
    ),
)
