"""llama.cpp `llama-batched-bench` (text table, -jsonl), `llama-server` timing lines and ollama --verbose.

- `llama-batched-bench`: its `|    PP |     TG |    B |   N_KV | ...` table (and
  the `main: n_kv_max = ..., is_pp_shared = ...` line before it), or its
  `--output-format jsonl` lines; each row is one prefill measurement (PP prompt
  tokens x B sequences, or one prompt when the prompt is shared) and one decode
  measurement (B sequences generating TG tokens each);
- `llama-server`: each request's `print_timings` lines ("prompt eval time = ... ms /
  N tokens (... ms per token, ... tokens per second)", "eval time = ..."), in the
  log layout of each era: `print_timings: ` (2023), `INFO [print_timings]` with
  `--log-format text` (2024), `slot print_timing: id  0 | task 0 |` then the lines
  (late 2024), and one prefixed line each (2025); one prefill and one decode
  measurement per request, batch 1;
- `llama-server`'s JSON log (its default from Feb to Sep 2024, `--log-format json`;
  `server_log` in examples/server/utils.hpp): one object per line, `tid`,
  `timestamp`, `level`, `function`, `line`, `msg`, then the call's own fields;
  `print_timings` writes a "prompt eval time" record (`t_prompt_processing`,
  `n_prompt_tokens_processed`, `t_token`, `n_tokens_second`) and a "generation
  eval time" record (`t_token_generation`, `n_decoded`, ...) per request (Feb-Mar
  2024: `slot_id`, `task_id`, `num_prompt_tokens_processed`); the same two
  measurements, from the records' full-precision numbers;
- ollama `--verbose` (`api.Metrics.Summary`): one block per reply, a prefill
  (prompt eval) and a decode (eval) measurement, batch 1.

The llama.cpp logs name the model file (`llama_model_loader: loaded meta data ...
from PATH`), its type (`file type   = Q4_K - Medium`, older `model ftype`) and size
and the CUDA device (`Device 0: NVIDIA H100 80GB HBM3, ...`) where the start-up
lines were kept; what a file lacks comes from the context (validation asks).
Where the field names come from: tests/fixtures/README.md.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePath
from typing import Any

from core.evidence.formats import Extract, Format, FormatError, Getter, Input, from_records, require, text
from core.evidence.formats.exports import GGML_WEIGHTS, GGUF_TYPES

MS = 1e-3

# -- what a llama.cpp start-up log says about the run -----------------------------------------------

_LOADED = re.compile(r"loaded meta data with \d+ key-value pairs and \d+ tensors from (?P<path>.+?) \(version .*\)\s*$")
_SERVER_MODEL = re.compile(r"\bload_model: loading model '(?P<path>[^']+)'")
_FTYPE = re.compile(r"(?:\bfile type   =|\bmodel ftype\s+=)\s*(?P<type>.+?)\s*$")
_FILE_SIZE = re.compile(r"(?:\bfile size   =|\bmodel size\s+=)\s*(?P<size>[0-9.]+) (?P<unit>[KMGT]iB)\b")
_CUDA_FOUND = re.compile(r"\bfound (?P<n>\d+) (?:CUDA|ROCm|MUSA) devices:")
_DEVICE = re.compile(r"^\s*Device (?P<i>\d+): (?P<name>[^,]+),")
_UNITS = {"KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3, "TiB": 1024.0**4}


def _request_notes(requests: int) -> list[str]:
    """What a llama-server log's requests are read as (its text and its JSON log alike)."""
    return [
        f"{requests} requests' timings: a prefill (prompt tokens/s) and a decode (generated tokens/s) measurement each, batch 1 "
        "(requests that overlapped on other slots shared the GPU: their rates are lower than a lone request's)",
        "input tokens = the prompt tokens evaluated (a prefix reused from the cache is not counted)",
    ]


def gguf_weights(name: str | None) -> str | None:
    """The storage format a GGUF file type or file name implies (Q4_K - Medium / ...-Q4_K_M.gguf -> q4_k_m), as llama-bench reads it."""
    t = str(name or "").lower()
    exact = next((w for key, w in GGUF_TYPES if re.search(rf"(?<![a-z0-9])(?:{key})(?![a-z0-9])", t)), None)
    return exact or next((w for key, w in GGML_WEIGHTS if re.search(rf"(?<![a-z0-9]){key}", t)), None)


def _start_up(body: str) -> dict[str, Any]:
    """Model file, its type and size, accelerator and device count from a llama.cpp log's start-up lines (None where absent)."""
    out: dict[str, Any] = {"path": None, "ftype": None, "bytes": None, "gpu": None, "gpus": None}
    for line in body.splitlines():
        if out["path"] is None and (m := _LOADED.search(line) or _SERVER_MODEL.search(line)):
            out["path"] = m["path"].strip()
        elif out["ftype"] is None and (m := _FTYPE.search(line)):
            out["ftype"] = m["type"]
        elif out["bytes"] is None and (m := _FILE_SIZE.search(line)):
            out["bytes"] = float(m["size"]) * _UNITS[m["unit"]]
        elif out["gpus"] is None and (m := _CUDA_FOUND.search(line)):
            out["gpus"] = int(m["n"])
        elif out["gpu"] is None and (m := _DEVICE.match(line)):
            out["gpu"] = m["name"].strip()
    return out


def _run_spec(run: dict[str, Any]) -> dict[str, tuple[str, Getter]]:
    """The spec entries a llama.cpp log's start-up lines fill (the same for every measurement)."""
    model = PurePath(run["path"]).name if run["path"] else None
    weights = gguf_weights(run["ftype"]) or gguf_weights(model)
    return {
        "gpu": ("ggml_cuda_init Device 0", lambda r: run["gpu"]),
        "num_gpus": ("ggml_cuda_init found N devices", lambda r: run["gpus"]),
        "model": ("llama_model_loader ... from PATH", lambda r: model),
        "weights": ("file type / model ftype" if run["ftype"] else "model file name", lambda r: weights),
        "kv": ("(llama.cpp's default -ctk f16)", lambda r: "fp16"),
        "model_bytes": ("file size / model size", lambda r: run["bytes"]),
    }


def _run_notes(run: dict[str, Any]) -> list[str]:
    notes = []
    if run["gpus"] and run["gpus"] > 1:
        notes.append(
            f"the log found {run['gpus']} devices: read as the count the model ran on (give the accelerator count if it used fewer)"
        )
    if run["ftype"] is None and run["path"] is None:
        notes.append("no start-up lines (model file, file type, device): give the model, accelerator and weights as context")
    notes.append("KV cache read as llama.cpp's default f16 (give it as context if -ctk set another type)")
    return notes


def _div(num: Any, den: Any) -> Any:
    """num / den for number texts (den > 0); otherwise the offending text, so validation names it."""
    try:
        a, b = float(num), float(den)
    except (TypeError, ValueError):
        return num
    if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return num if not math.isfinite(a) else f"{num} / {den}"
    return a / b


# -- llama-batched-bench ------------------------------------------------------------------------------

_BB_HEADER = re.compile(r"^\s*\|\s*PP\s*\|\s*TG\s*\|\s*B\s*\|\s*N_KV\s*\|", re.MULTILINE)
_BB_PARAMS = re.compile(r"\bn_kv_max = \d+,.*\bis_pp_shared = \d+")
_BB_JSON_KEYS = ("pp", "tg", "pl", "speed_pp", "speed_tg")
_BB_COLUMNS = ("PP", "TG", "B", "S_PP t/s", "S_TG t/s")


def is_batched_bench(head: str) -> bool:
    """llama-batched-bench's text output: its `| PP | TG | B | N_KV |` table header or its `n_kv_max = ..., is_pp_shared = ...` line."""
    return _BB_HEADER.search(head) is not None or _BB_PARAMS.search(head) is not None


def is_batched_bench_json(record: dict[str, Any]) -> bool:
    """A llama-batched-bench `--output-format jsonl` line."""
    return all(k in record for k in _BB_JSON_KEYS) and "n_kv_max" in record


def _params(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+) = (-?\d+)", line))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _bb_rows(rows: list[dict[str, Any]], numbers: list[int], fmt: str, run: dict[str, Any], extra: list[str]) -> Extract:
    """Two measurements per batched-bench row: prefill (S_PP) and decode (S_TG)."""
    out: list[dict[str, Any]] = []
    lines: list[int] = []
    shared_rows = separate_rows = 0
    for r, n in zip(rows, numbers, strict=True):
        shared = str(r["shared"]).strip() not in ("", "0", "None")
        separate = str(r["separate"]).strip() not in ("", "0", "None")
        shared_rows += shared
        separate_rows += separate
        out.append(
            {
                "phase": "prefill",
                "batch": 1 if shared else r["B"],
                "input": r["PP"],
                "output": 0,
                "tps": r["S_PP"],
                "ttft": r["T_PP"],
                "tpot": None,
            }
        )
        tg_steps = r["TG"] if not separate else _times(r["TG"], r["B"])
        out.append(
            {
                "phase": "decode",
                "batch": 1 if separate else r["B"],
                "input": r["PP"],
                "output": r["TG"],
                "tps": r["S_TG"],
                "ttft": None,
                "tpot": _div(r["T_TG"], tg_steps) if r["T_TG"] is not None else None,
            }
        )
        lines += [n, n]
    labels = {
        "jsonl": ("pl", "pp", "tg", "speed_pp", "speed_tg", "t_pp", "t_tg"),
        "text": ("B", "PP", "TG", "S_PP t/s", "S_TG t/s", "T_PP s", "T_TG s"),
    }
    b, pp, tg, spp, stg, tpp, ttg = labels["jsonl" if fmt.endswith("jsonl") else "text"]
    spec: dict[str, tuple[str, Getter]] = {
        **_run_spec(run),
        "phase": (f"{spp} (prefill) / {stg} (decode)", lambda r: r["phase"]),
        "batch": (f"{b} (1 for a shared prompt's prefill)", lambda r: r["batch"]),
        "input_tokens": (pp, lambda r: r["input"]),
        "output_tokens": (tg, lambda r: r["output"]),
        "tokens_per_s": (f"{spp} / {stg}", lambda r: r["tps"]),
        "ttft_s": (tpp, lambda r: r["ttft"]),
        "tpot_s": (f"{ttg} / {tg}", lambda r: r["tpot"]),
    }
    notes = [
        f"{len(rows)} batched-bench rows: a prefill ({spp}: {b} x {pp} prompt tokens/s) and a decode ({stg}: "
        f"{b} sequences' generated tokens/s, {tg} tokens after {pp}) measurement each",
        *_run_notes(run),
        *extra,
    ]
    if shared_rows:
        notes.append(
            "is_pp_shared = 1: one prompt of PP tokens is prefilled (batch 1) and its KV cache shared by the B sequences, "
            "so decode reads one copy of the prompt's cache (it can beat a ceiling that counts B copies)"
        )
    if separate_rows:
        notes.append("is_tg_separate = 1: the B sequences decode one after another (batch 1), S_TG is their tokens/s")
    extract = from_records(fmt, out, spec, notes=notes, rows=lines)
    extract.row_label = "record" if fmt.endswith("jsonl") else "line"
    return extract


def _times(a: Any, b: Any) -> Any:
    try:
        return float(a) * float(b)
    except (TypeError, ValueError):
        return a


def batched_bench_text(body: str, context: dict[str, Any]) -> Extract:
    """`llama-batched-bench` text output: the table below its `| PP | TG | B | N_KV | ...` header, read by column name."""
    fmt = "llama-batched-bench"
    params: dict[str, str] = {}
    header: list[str] = []
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    for n, line in enumerate(body.splitlines(), 1):
        if _BB_PARAMS.search(line):
            params = _params(line)
            continue
        if not line.lstrip().startswith("|"):
            header = [] if rows else header
            continue
        cells = _cells(line)
        if cells[:4] == ["PP", "TG", "B", "N_KV"]:
            header = cells
            missing = [c for c in _BB_COLUMNS if c not in header]
            if missing:
                raise FormatError(f"the table has no {', '.join(missing)} column", row=n, column=missing[0])
            continue
        if not header or all(set(c) <= set("-:") for c in cells):
            continue
        if len(cells) != len(header):
            raise FormatError(f"the row has {len(cells)} cells, the header {len(header)}", row=n, column="|")
        cell = dict(zip(header, cells, strict=True))
        rows.append(
            {
                "PP": cell["PP"],
                "TG": cell["TG"],
                "B": cell["B"],
                "S_PP": cell["S_PP t/s"],
                "S_TG": cell["S_TG t/s"],
                "T_PP": cell.get("T_PP s"),
                "T_TG": cell.get("T_TG s"),
                "shared": params.get("is_pp_shared", "0"),
                "separate": params.get("is_tg_separate", "0"),
            }
        )
        numbers.append(n)
    if not rows:
        raise FormatError("no llama-batched-bench table rows (a '| PP | TG | B | N_KV | ... |' header and rows below it)", column="PP")
    extra = [] if params else ["no 'n_kv_max = ..., is_pp_shared = ...' line: read as is_pp_shared = 0 (a prompt per sequence)"]
    return _bb_rows(rows, numbers, fmt, _start_up(body), extra)


def batched_bench_jsonl(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`llama-batched-bench --output-format jsonl`: one object per (pp, tg, pl) with speed_pp and speed_tg."""
    fmt = "llama-batched-bench-jsonl"
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(records, 1):
        require(r, fmt, *((k,) for k in _BB_JSON_KEYS), row=i)
        rows.append(
            {
                "PP": text(r["pp"]),
                "TG": text(r["tg"]),
                "B": text(r["pl"]),
                "S_PP": text(r["speed_pp"]),
                "S_TG": text(r["speed_tg"]),
                "T_PP": text(r.get("t_pp")),
                "T_TG": text(r.get("t_tg")),
                "shared": text(r.get("is_pp_shared", 0)),
                "separate": text(r.get("is_tg_separate", 0)),
            }
        )
    empty = {"path": None, "ftype": None, "bytes": None, "gpu": None, "gpus": None}
    extra = ["the JSON lines name no model file or device: give the model, accelerator and weights as context"]
    return _bb_rows(rows, list(range(1, len(rows) + 1)), fmt, empty, extra)


# -- llama-server print_timings ---------------------------------------------------------------------


_PROMPT = re.compile(
    r"prompt eval time\s*=\s*(?P<ms>\S+) ms /\s*(?P<n>\S+) tokens \(\s*(?P<per>\S+) ms per token,\s*(?P<tps>\S+) tokens per second\)"
)
_EVAL = re.compile(
    r"(?:generation )?eval time\s*=\s*(?P<ms>\S+) ms /\s*(?P<n>\S+) (?:tokens|runs)\s*"
    r"\(\s*(?P<per>\S+) ms per token,\s*(?P<tps>\S+) tokens per second\)"
)
#: llama.cpp's own context totals (llama-cli, batched-bench, ...), not a server request
_LIBRARY_TIMINGS = re.compile(r"\b(?:llama_print_timings|llama_perf_context_print|common_perf_print)\b")
_SLOT = re.compile(r"\bid\s+(?P<slot>-?\d+) \| task (?P<task>-?\d+) \|")
_SLOT_KV = re.compile(r"\b(?:id_slot|slot_id)=(?P<slot>-?\d+) (?:id_task|task_id)=(?P<task>-?\d+)")
_SERVER_LINES = re.compile(
    r"(?:\bslot print_timing: id\s+\d+ \| task|(?<![\w])print_timings: prompt eval time|\bINFO \[\s*print_timings\]"
    r"|\bsrv\s+load_model: loading model|\bmain: HTTP server is listening|\bserver is listening on http"
    r"|^Available slots:$|^ -> Slot \d+ - max context: \d+)",
    re.MULTILINE,
)


def is_llama_server_log(head: str) -> bool:
    """llama-server's own lines: `slot print_timing: id  0 | task 0 |`, `print_timings: prompt eval time`, its start-up lines."""
    return _SERVER_LINES.search(head) is not None


def llama_server_log(body: str, context: dict[str, Any]) -> Extract:
    """A llama-server log: per request, `prompt eval time` (prefill) then `eval time` (decode); batch 1 each."""
    fmt = "llama-server-log"
    out: list[dict[str, Any]] = []
    lines: list[int] = []
    pending: dict[str, Any] | None = None
    slot: dict[str, str] = {}
    skipped: dict[str, int] = {}
    requests = 0
    for n, line in enumerate(body.splitlines(), 1):
        if _LIBRARY_TIMINGS.search(line):
            continue
        if m := _SLOT.search(line) or _SLOT_KV.search(line):
            slot = {"slot": m["slot"], "task": m["task"]}
        if m := _PROMPT.search(line):
            pending = {"line": n, **m.groupdict()}
            continue
        m = _EVAL.search(line)
        if not m:
            continue
        requests += 1
        prompt = pending
        pending = None
        if prompt is None:
            skipped["eval time without a prompt eval time line before it"] = (
                skipped.get("eval time without a prompt eval time line before it", 0) + 1
            )
            continue
        if prompt["n"] == "0":
            skipped["prompts served from the cache (0 tokens evaluated)"] = (
                skipped.get("prompts served from the cache (0 tokens evaluated)", 0) + 1
            )
        else:
            out.append(
                {
                    "row": prompt["line"],
                    "phase": "prefill",
                    "input": prompt["n"],
                    "output": 0,
                    "tps": prompt["tps"],
                    "ttft": prompt["ms"],
                    "tpot": None,
                    **slot,
                }
            )
            lines.append(prompt["line"])
        if m["n"] == "0":
            skipped["requests that generated no token"] = skipped.get("requests that generated no token", 0) + 1
        else:
            out.append(
                {
                    "row": n,
                    "phase": "decode",
                    "input": prompt["n"],
                    "output": m["n"],
                    "tps": m["tps"],
                    "ttft": None,
                    "tpot": m["per"],
                    **slot,
                }
            )
            lines.append(n)
    if not out:
        raise FormatError(
            "no llama-server timing lines ('prompt eval time = ... tokens per second)' then 'eval time = ...'): "
            "not a llama-server log, or no request finished in it",
            column="prompt eval time",
        )
    run = _start_up(body)
    spec: dict[str, tuple[str, Getter]] = {
        **_run_spec(run),
        "phase": ("prompt eval time (prefill) / eval time (decode)", lambda r: r["phase"]),
        "batch": ("(one request)", lambda r: 1),
        "input_tokens": ("prompt eval time ... / N tokens", lambda r: r["input"]),
        "output_tokens": ("eval time ... / N tokens", lambda r: r["output"]),
        "tokens_per_s": ("tokens per second", lambda r: r["tps"]),
        "ttft_s": ("prompt eval time (ms)", lambda r: r["ttft"]),
        "tpot_s": ("eval time ms per token", lambda r: r["tpot"]),
    }
    notes = [
        *_request_notes(requests),
        *_run_notes(run),
    ]
    if skipped:
        notes.append("skipped: " + ", ".join(f"{k}: {v}" for k, v in skipped.items()))
    extract = from_records(fmt, out, spec, scale={"ttft_s": MS, "tpot_s": MS}, notes=notes, rows=lines)
    extract.row_label = "line"
    return extract


# -- llama-server JSON log (2024) -------------------------------------------------------------------

#: The prompt record's token count (`num_...` Feb-Mar 2024, `n_...` from 2002bc96b).
_JSON_PROMPT = ("n_prompt_tokens_processed", "num_prompt_tokens_processed")


def is_llama_server_json_log(record: dict[str, Any]) -> bool:
    """A llama-server JSON log record: `server_log`'s fields, `function` and `msg` as text (any record, start-up included)."""
    return (
        # the fields `server_log` writes first in every record (its ordered_json: tid, timestamp, level, function, line, msg)
        record.keys() >= {"tid", "timestamp", "level", "function", "line", "msg"}
        and isinstance(record.get("function"), str)
        and isinstance(record.get("msg"), str)
        and record.get("level") in ("INFO", "WARN", "ERR", "VERB")
    )


def _field(record: dict[str, Any], n: int, *names: str) -> Any:
    """The first of `names` the record holds (a number stays a number; anything else is text, which validation names)."""
    for name in names:
        if name in record:
            value = record[name]
            return value if value is None or isinstance(value, int | float | str) else text(value)
    raise FormatError(f"the print_timings record lacks {names[0]}", row=n, column=names[0])


def llama_server_json_log(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """llama-server's JSON log: per request, print_timings' prompt record (prefill) then its generation record (decode)."""
    fmt = "llama-server-json-log"
    out: list[dict[str, Any]] = []
    pending: dict[Any, dict[str, Any]] = {}
    skipped: dict[str, int] = {}
    requests = 0

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for n, rec in enumerate(records, 1):
        if not isinstance(rec, dict) or rec.get("function") != "print_timings" or not isinstance(rec.get("msg"), str):
            continue
        msg = rec["msg"].lstrip()
        slot = rec.get("id_slot", rec.get("slot_id"))
        task = rec.get("id_task", rec.get("task_id"))
        key = (text(slot), text(task))
        if msg.startswith("prompt eval time"):
            pending[key] = {
                "line": n,
                "n": _field(rec, n, *_JSON_PROMPT),
                "ms": _field(rec, n, "t_prompt_processing"),
                "tps": _field(rec, n, "n_tokens_second"),
            }
            continue
        if not msg.startswith("generation eval time"):
            continue  # "total time": the sum of the two
        requests += 1
        decoded, per, tps = (_field(rec, n, k) for k in ("n_decoded", "t_token", "n_tokens_second"))
        _field(rec, n, "t_token_generation")
        prompt = pending.pop(key, None)
        if prompt is None:
            skip("generation records without a prompt record of the same task before them")
            continue
        ids = {"slot": text(slot), "task": text(task)}
        if prompt["n"] == 0:
            skip("prompts served from the cache (0 tokens evaluated)")
        else:
            out.append(
                {
                    "row": prompt["line"],
                    "phase": "prefill",
                    "input": prompt["n"],
                    "output": 0,
                    "tps": prompt["tps"],
                    "ttft": prompt["ms"],
                    "tpot": None,
                    **ids,
                }
            )
        if decoded == 0:
            skip("requests that generated no token")
        else:
            out.append({"row": n, "phase": "decode", "input": prompt["n"], "output": decoded, "tps": tps, "ttft": None, "tpot": per, **ids})
    if not out:
        raise FormatError(
            "no print_timings records ('prompt eval time' then 'generation eval time'): no request finished in this llama-server log",
            column="function",
        )
    spec: dict[str, tuple[str, Getter]] = {
        "kv": ("(llama.cpp's default -ctk f16)", lambda r: "fp16"),
        "phase": ("print_timings prompt eval time (prefill) / generation eval time (decode)", lambda r: r["phase"]),
        "batch": ("(one request)", lambda r: 1),
        "input_tokens": ("n_prompt_tokens_processed", lambda r: r["input"]),
        "output_tokens": ("n_decoded", lambda r: r["output"]),
        "tokens_per_s": ("n_tokens_second", lambda r: r["tps"]),
        "ttft_s": ("t_prompt_processing (ms)", lambda r: r["ttft"]),
        "tpot_s": ("t_token (ms)", lambda r: r["tpot"]),
    }
    notes = [
        *_request_notes(requests),
        "the JSON log names no model file, type or device (llama.cpp's own start-up lines went to stderr): "
        "give the model, accelerator and weights as context",
        "KV cache read as llama.cpp's default f16 (give it as context if -ctk set another type)",
    ]
    if skipped:
        notes.append("skipped: " + ", ".join(f"{k}: {v}" for k, v in skipped.items()))
    # record N is the file's Nth (non-blank) line, as the importer numbers JSON lines in its own messages
    return from_records(fmt, out, spec, scale={"ttft_s": MS, "tpot_s": MS}, notes=notes, rows=[r["row"] for r in out])


# -- ollama --verbose -------------------------------------------------------------------------------------

_OLLAMA_LINE = re.compile(
    r"^(?P<key>total duration|load duration|peak memory|prompt eval count|prompt eval duration|prompt eval rate|eval count|eval duration|eval rate):\s+(?P<value>.*?)\s*$"
)
_GO_DURATION = re.compile(r"(?P<n>\d+(?:\.\d*)?)(?P<unit>h|ms|m|s|µs|μs|us|ns)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ns": 1e-9}


def is_ollama_verbose(head: str) -> bool:
    """ollama run --verbose: its `eval rate:            N tokens/s` or `eval count:           N token(s)` lines."""
    return re.search(r"^(?:prompt )?eval (?:rate:\s+\S+ tokens/s|count:\s+\d+ token\(s\))\s*$", head, re.MULTILINE) is not None


def go_duration(value: str) -> float | None:
    """Seconds of a Go time.Duration as %v prints it ("1.234s", "212.508µs", "1m2.5s"); None if it is not one."""
    v = value.strip()
    if v == "0s":
        return 0.0
    parts = list(_GO_DURATION.finditer(v))
    if not parts or "".join(p.group(0) for p in parts) != v:
        return None
    return sum(float(p["n"]) * _GO_UNITS[p["unit"]] for p in parts)


def _count(value: str) -> str:
    m = re.fullmatch(r"(\S+) token\(s\)", value)
    return m.group(1) if m else value


def _rate(value: str) -> str:
    m = re.fullmatch(r"(\S+) tokens/s", value)
    return m.group(1) if m else value


def ollama_verbose(body: str, context: dict[str, Any]) -> Extract:
    """ollama `--verbose` blocks: per reply a prefill (prompt eval rate) and a decode (eval rate) measurement, batch 1."""
    fmt = "ollama-verbose"
    blocks: list[dict[str, tuple[int, str]]] = []
    cur: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(body.splitlines(), 1):
        m = _OLLAMA_LINE.match(line)
        if not m:
            continue
        key = m["key"]
        if key in cur or (key == "total duration" and cur):
            blocks.append(cur)
            cur = {}
        cur[key] = (n, m["value"])
    if cur:
        blocks.append(cur)
    out: list[dict[str, Any]] = []
    lines: list[int] = []
    for b in blocks:
        prompt = b.get("prompt eval count")
        if prompt is not None and "prompt eval rate" in b:
            at, rate = b["prompt eval rate"]
            duration = b.get("prompt eval duration", (at, ""))[1]
            secs = go_duration(duration)
            out.append(
                {
                    "phase": "prefill",
                    "input": _count(prompt[1]),
                    "output": 0,
                    "tps": _rate(rate),
                    "ttft": duration if secs is None else secs,
                    "tpot": None,
                }
            )
            lines.append(at)
        if "eval rate" in b:
            at, rate = b["eval rate"]
            count = b.get("eval count")
            if count is None:
                raise FormatError("an 'eval rate' line without an 'eval count' line in its block", row=at, column="eval count")
            duration = b.get("eval duration", (at, ""))[1]
            secs = go_duration(duration)
            tokens = _count(count[1])
            tpot = _div(secs, tokens) if secs is not None else duration
            out.append(
                {
                    "phase": "decode",
                    "input": _count(prompt[1]) if prompt is not None else 0,
                    "output": tokens,
                    "tps": _rate(rate),
                    "ttft": None,
                    "tpot": tpot,
                }
            )
            lines.append(at)
    if not out:
        raise FormatError("no 'prompt eval rate:' or 'eval rate:' line: not ollama --verbose output", column="eval rate")
    spec: dict[str, tuple[str, Getter]] = {
        "kv": ("(ollama's default KV cache f16)", lambda r: "fp16"),
        "phase": ("prompt eval rate (prefill) / eval rate (decode)", lambda r: r["phase"]),
        "batch": ("(one reply)", lambda r: 1),
        "input_tokens": ("prompt eval count", lambda r: r["input"]),
        "output_tokens": ("eval count", lambda r: r["output"]),
        "tokens_per_s": ("prompt eval rate / eval rate", lambda r: r["tps"]),
        "ttft_s": ("prompt eval duration", lambda r: r["ttft"]),
        "tpot_s": ("eval duration / eval count", lambda r: r["tpot"]),
    }
    notes = [
        f"{len(blocks)} ollama --verbose blocks: a prefill (prompt eval rate) and a decode (eval rate) measurement each, batch 1",
        "ollama's verbose block names no model or accelerator: give them as context: model, accelerator (and the weights: "
        "ollama's default tags are Q4_K_M)",
        "input tokens = prompt eval count (a prompt prefix ollama kept in its cache is not counted)",
    ]
    extract = from_records(fmt, out, spec, notes=notes, rows=lines)
    extract.row_label = "line"
    return extract


def _records(inp: Input) -> list[dict[str, Any]]:
    if inp.records is None:
        raise FormatError("this format reads JSON lines ({...} per line)")
    return inp.records


#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = (
    Format(
        "llama-batched-bench-jsonl",
        "llama.cpp llama-batched-bench --output-format jsonl (a prefill and a decode measurement per line)",
        lambda i: batched_bench_jsonl(_records(i), i.context),
        json=is_batched_bench_json,
    ),
    Format(
        "llama-server-json-log",
        "llama.cpp llama-server JSON log (2024 default, --log-format json; each request's print_timings records: a prefill and a decode)",
        lambda i: llama_server_json_log(_records(i), i.context),
        json=is_llama_server_json_log,
    ),
    Format(
        "llama-batched-bench",
        "llama.cpp llama-batched-bench output (its | PP | TG | B | N_KV | ... table; a prefill and a decode measurement per row)",
        lambda i: batched_bench_text(i.text(), i.context),
        text=is_batched_bench,
    ),
    Format(
        "llama-server-log",
        "llama.cpp llama-server log (each request's print_timings lines: a prefill and a decode measurement)",
        lambda i: llama_server_log(i.text(), i.context),
        text=is_llama_server_log,
    ),
    Format(
        "ollama-verbose",
        "ollama run --verbose output (each reply's prompt eval rate and eval rate)",
        lambda i: ollama_verbose(i.text(), i.context),
        text=is_ollama_verbose,
    ),
)
