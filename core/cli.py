"""Command line: the same core functions as the app, JSON out (`roofline ...` once installed, or `python -m core.cli ...`).

    roofline gpus --json
    roofline models --json
    roofline model-from-config PATH --json
    roofline ridge --gpu h100-sxm [--precision bf16] --json
    roofline ceiling --gpu h100-sxm --model llama-3.1-70b --num-gpus 2 --batch 32 --json [--ops]
    roofline sweep [--gpu ID ...] [--model ID ...] --out FILE.parquet|FILE.csv
    roofline report --gpu h100-sxm --model llama-3.1-70b --num-gpus 2 --out report.html
    roofline import FILE [--format F] [--gpu ID --num-gpus N --model ID --weights P --kv P] [--name NAME] --json
    roofline measured DATASET [--refit] [--framework NAME] --json
    roofline datasets --json
    roofline delete-dataset DATASET --json
    roofline probe [--device auto|cuda|rocm|mps|cpu] [--quick] [--out FILE] [--json]
    roofline import-probe FILE [--gpu ID] --json
    roofline bench-command --tool vllm --gpu ID --model ID --batch B --input-tokens I --output-tokens O [--num-gpus N] --json
    roofline prices [--gpu ID ...] [--kind rent|buy] --json
    roofline compare --gpu ID --gpu ID ... --model ID [--tpot-ms X --ttft-s Y | --target KEY] [--rent | --buy --years N
                     --usd-per-kwh P --pue Q --utilization U] [--price ID=USD] [--requests-per-s R --input-tokens I
                     --output-tokens O] --json
    roofline frontier --gpu ID --model ID [--num-gpus N] [--buy ...] --json

Every command takes --db PATH (default: ROOFLINE_DB or data/roofline.duckdb).
An --out file's folder is created when it does not exist yet.
The scenario options of `ceiling`, `report` and `sweep` are the fields of
core.model.scenario.Scenario (defaults, bounds and help text from there; the
sweep's axes repeat), and `import`'s context options the fields of
core.evidence.importers.ImportContext.
Errors print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shlex
import sys
import typing
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from core.catalogue.catalogue import Catalogue
    from core.model.scenario import Scenario
    from core.plan.costs import Ownership


#: The sweep's axes (repeatable options); every other scenario field is one value.
SWEEP_AXES = ("gpu", "model", "weights", "batch", "context", "num_gpus")


def _sweep_default(name: str) -> str:
    """What a sweep axis defaults to, in words."""
    from core.model.sweep import DEFAULT_CONTEXTS, DEFAULT_WEIGHTS

    return {
        "gpu": "every accelerator",
        "model": "every model",
        "weights": " ".join(DEFAULT_WEIGHTS),
        "batch": "1, 2, 4 ... 1024",
        "context": " ".join(str(c) for c in DEFAULT_CONTEXTS),
        "num_gpus": "1",
    }[name]


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser([command] if command else []).parse_args(argv)  # only the command given is built (and imported)
    from core.model.allocator import keep_freed_memory  # ctypes only

    keep_freed_memory()  # a sweep's arrays are not faulted in afresh (core/model/allocator.py)
    try:
        result = args.func(args)
    except Exception as exc:
        said = _user_error(exc)
        if said is None:
            raise
        print(f"error: {said}", file=sys.stderr)
        return 2
    if result is not None:
        print(json.dumps(_clean(result), indent=2 if not args.json else None))
    return 0


def _user_error(exc: Exception) -> str | None:
    """The one line a user error prints (None: not a user error, so its traceback is shown). The error types are
    imported here, once one is raised: the command that raised it has imported their modules already."""
    from pydantic import ValidationError

    from core.catalogue.catalogue import UnknownIdError
    from core.catalogue.model_config import ConfigError
    from core.catalogue.precisions import UnknownPrecisionError
    from core.catalogue.seed import CatalogueError
    from core.evidence.importers import ImportFileError
    from core.evidence.probes import ProbeFileError
    from core.model.allocation import AllocationError
    from core.model.scenario import FIELDS, ScenarioError, flag
    from core.plan.compare_request import RequestError
    from core.store.paths import StoreError

    plain = (
        CliError,
        UnknownIdError,
        CatalogueError,
        ConfigError,
        UnknownPrecisionError,
        StoreError,
        ImportFileError,
        ProbeFileError,
        AllocationError,
        RequestError,
    )
    if isinstance(exc, plain):
        return str(exc)
    if isinstance(exc, ScenarioError):
        return f"{flag(exc.field) if exc.field in FIELDS else exc.field}: {exc.problem}"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        return f"{flag(field) if field in FIELDS else '--' + field.replace('_', '-')}: {err['msg']}"
    return None


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """Every command, and the options of those in `commands` (None: of every one). `main` builds the options of the
    command given alone, so each command imports only what it uses, and `roofline --help` needs no data library."""
    p = argparse.ArgumentParser(prog="roofline", description="Roofline Explorer command line")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="DuckDB store path (default: ROOFLINE_DB or data/roofline.duckdb)")
    common.add_argument("--json", action="store_true", help="compact JSON output (one line)")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (text, options, shared) in COMMANDS.items():
        parser = sub.add_parser(name, parents=[common] if shared else [], help=text)
        if commands is None or name in commands:
            options(parser)
    return p


def _gpus_options(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=cmd_gpus)


def _models_options(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=cmd_models)


def _model_from_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path")
    parser.add_argument("--id", help="model id (default: from the file name)")
    parser.set_defaults(func=cmd_model_from_config)


def _ridge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--precision", default="bf16")
    parser.set_defaults(func=cmd_ridge)


def _ceiling_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments

    add_cli_arguments(parser)
    parser.add_argument("--ops", action="store_true", help="add the per-operation table of the decode step")
    parser.set_defaults(func=cmd_ceiling)


def _predict_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments

    add_cli_arguments(parser)
    parser.set_defaults(func=cmd_predict)


def _memory_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments

    add_cli_arguments(parser)
    parser.add_argument("--engine-version", help="the engine's release (default: the newest read, vLLM 0.34.0, SGLang 0.5.23)")
    parser.add_argument("--gpu-memory-utilization", type=float, help="vLLM's --gpu-memory-utilization (default: the version's)")
    parser.add_argument("--mem-fraction-static", type=float, help="SGLang's --mem-fraction-static (default: its rule by GPU memory)")
    parser.add_argument("--max-model-len", type=int, help="the engine's --max-model-len / --context-length (default: the model's)")
    parser.add_argument("--max-num-seqs", type=int, help="vLLM's --max-num-seqs (default: the version's rule by GPU memory)")
    parser.add_argument("--max-num-batched-tokens", type=int, help="vLLM's --max-num-batched-tokens (default: the version's)")
    parser.set_defaults(func=cmd_memory)


def _report_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments

    add_cli_arguments(parser)
    parser.add_argument("--out", required=True, help="output file, .html")
    parser.set_defaults(func=cmd_report)


def _sweep_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import FIELDS, add_cli_arguments, field_type, flag, param

    for name in SWEEP_AXES:
        parser.add_argument(
            flag(name),
            dest=name,
            action="append",
            type=field_type(name),
            help=f"{param(name).help} Repeatable; default: {_sweep_default(name)}.",
        )
    add_cli_arguments(parser, only=tuple(name for name in FIELDS if name not in SWEEP_AXES))
    parser.add_argument("--out", required=True, help="output file, .parquet or .csv")
    parser.set_defaults(func=cmd_sweep)


def _import_options(parser: argparse.ArgumentParser) -> None:
    from core.catalogue.specs import value_type
    from core.evidence.formats.registry import BY_NAME as IMPORT_FORMATS
    from core.evidence.importers import ImportContext

    parser.add_argument("file", help="the benchmark output file")
    parser.add_argument("--format", choices=list(IMPORT_FORMATS), help="the file's format (default: detected from its content)")
    for name, info in ImportContext.model_fields.items():
        choices = literal_choices(info)  # a field of fixed values (--phase decode|prefill|mixed) is offered as choices
        kind = str if choices else value_type(info)
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, choices=choices, help=info.description)
    parser.add_argument("--map", action="append", default=[], metavar="COLUMN=HEADER", help="generic CSV: read COLUMN from HEADER")
    parser.add_argument("--name", help="dataset name (default: the file name)")
    parser.set_defaults(func=cmd_import)


def _measured_options(parser: argparse.ArgumentParser) -> None:
    from core.model.predicted import FRAMEWORKS

    parser.add_argument("dataset", help="the dataset's id (as `import` prints it) or its name")
    parser.add_argument("--refit", action="store_true", help="refit the predicted model on the dataset, per accelerator and framework")
    parser.add_argument(
        "--framework",
        choices=list(FRAMEWORKS),
        help="the framework the runs used (default: the dataset's format's, else vLLM)",
    )
    parser.set_defaults(func=cmd_measured)


def _compare_runs_options(parser: argparse.ArgumentParser) -> None:
    from core.model.predicted import FRAMEWORKS

    parser.add_argument(
        "runs", nargs="+", metavar="DATASET", help="datasets (ids as `import` prints them, or names); the first is the baseline"
    )
    parser.add_argument(
        "--framework",
        choices=list(FRAMEWORKS),
        help="the framework every run used (default: each dataset's format's, else vLLM): whose expected figures the shares use",
    )
    parser.set_defaults(func=cmd_compare_runs)


def _datasets_options(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=cmd_datasets)


def _delete_dataset_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="the dataset's id (as `import` and `datasets` print it) or its name")
    parser.set_defaults(func=cmd_delete_dataset)


def _probe_options(parser: argparse.ArgumentParser) -> None:
    from core.probe import cli as probe_cli

    probe_cli.add_arguments(parser)
    parser.set_defaults(func=cmd_probe)


def _import_probe_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the probe's JSON (python -m core.probe --out FILE)")
    parser.add_argument("--gpu", help="the catalogue accelerator it measured (default: matched by the device's name, else a new one)")
    parser.set_defaults(func=cmd_import_probe)


def _bench_command_options(parser: argparse.ArgumentParser) -> None:
    from core.evidence.bench_commands import TOOLS as BENCH_TOOLS
    from core.model.scenario import add_cli_arguments

    parser.add_argument("--tool", required=True, choices=list(BENCH_TOOLS), help="benchmark tool")
    add_cli_arguments(parser, only=("gpu", "num_gpus", "model", "weights", "kv", "batch"))
    parser.add_argument("--input-tokens", type=int, required=True, help="prompt tokens per request")
    parser.add_argument("--output-tokens", type=int, required=True, help="output tokens per request")
    parser.set_defaults(func=cmd_bench_command)


def _prices_options(parser: argparse.ArgumentParser) -> None:
    from core.catalogue.prices import KINDS, RATES

    parser.add_argument("--gpu", action="append", help="accelerator id; repeatable (default: every priced one)")
    parser.add_argument("--kind", choices=KINDS, help="rent ($ per GPU-hour) or buy ($ per GPU); default: both")
    parser.add_argument(
        "--rent-prices", choices=RATES, default="on-demand", help="which rent prices the median uses: on-demand instance rates or every one"
    )
    parser.set_defaults(func=cmd_prices)


def _reference_options(parser: argparse.ArgumentParser) -> None:
    from core.catalogue.reference import METRICS as REFERENCE_METRICS

    parser.add_argument("--gpu", action="append", help="accelerator id; repeatable (default: every one)")
    parser.add_argument("--model", action="append", help="model id; repeatable (default: every one)")
    parser.add_argument(
        "--framework", action="append", help="framework as the rows name it (TensorRT-LLM, vLLM, llama.cpp ...); repeatable"
    )
    parser.add_argument("--metric", action="append", choices=list(REFERENCE_METRICS), help="metric; repeatable (default: every one)")
    parser.set_defaults(func=cmd_reference)


def _scorecard_options(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(func=cmd_scorecard)


def _compare_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments
    from core.plan.compare_request import add_request_arguments

    parser.add_argument("--gpu", action="append", required=True, help="accelerator id; repeatable")
    add_cli_arguments(parser, only=workload_fields())
    add_request_arguments(parser)  # the service target and the sort, declared with the page's controls
    _cost_arguments(parser)
    parser.add_argument(
        "--requests-per-s", type=float, help="a load to serve: requests per second (with --input-tokens and --output-tokens)"
    )
    parser.add_argument("--input-tokens", type=int, help="prompt tokens per request (sets the workload's prompt; context = input + output)")
    parser.add_argument("--output-tokens", type=int, help="output tokens per request")
    parser.set_defaults(func=cmd_compare)


def _frontier_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments

    parser.add_argument("--gpu", action="append", required=True, help="accelerator id; repeatable")
    add_cli_arguments(parser, only=workload_fields())
    parser.add_argument("--num-gpus", type=int, help="tensor-parallel degree (default: the cheapest that fits at the batch)")
    _cost_arguments(parser)
    parser.set_defaults(func=cmd_frontier)


def _deploy_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments
    from core.plan.deploy import Workload

    parser.add_argument("--gpu", action="append", required=True, help="accelerator id; repeatable (each gets its own plans)")
    parser.add_argument("--prefill-gpu", help="disaggregated: put the prefill pool on this accelerator (default: the --gpu's own)")
    add_cli_arguments(parser, only=tuple(n for n in workload_fields() if n not in ("batch", "context", "prompt", "depth")))
    for name, info in Workload.model_fields.items():
        parser.add_argument(
            "--" + name.replace("_", "-"), dest=name, type=float, default=info.default, help=f"{info.description} (default {info.default})"
        )
    parser.add_argument(
        "--trace",
        help="a request trace (CSV, JSONL or JSON: arrival time, prompt and output tokens) to simulate instead of a Poisson stream",
    )
    parser.add_argument(
        "--serving", choices=("both", "aggregated", "disaggregated"), default="both", help="which plans to make (default both)"
    )
    parser.add_argument(
        "--max-gpus", type=int, default=64, help="most GPUs one aggregated instance takes (expert parallel up to it; default 64)"
    )
    parser.add_argument(
        "--max-pool-gpus", type=int, default=16, help="most GPUs one disaggregated prefill or decode instance takes (default 16)"
    )
    _cost_arguments(parser)
    parser.set_defaults(func=cmd_deploy)


def _deployments_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scored", action="store_true", help="only the rows set against a layout (not those left unscored, with why)")
    parser.set_defaults(func=cmd_deployments)


def _layout_options(parser: argparse.ArgumentParser) -> None:
    from core.model.scenario import add_cli_arguments
    from core.plan.layouts import Layout

    add_cli_arguments(parser)
    for name, info in Layout.model_fields.items():
        kind = type(info.default)
        if kind is bool:
            parser.add_argument("--" + name.replace("_", "-"), dest=name, action="store_true", help=info.description)
        else:
            parser.add_argument(
                "--" + name.replace("_", "-"),
                dest=name,
                type=kind,
                default=info.default,
                help=f"{info.description} (default {info.default})",
            )
    parser.add_argument("--prefill", action="store_true", help="time the prefill of the batch's prompts instead of a decode step")
    parser.set_defaults(func=cmd_layout)


#: Every command: the line `--help` gives it, the function that adds its options, whether it takes --db and --json.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], bool]] = {
    "gpus": ("list accelerators", _gpus_options, True),
    "models": ("list models", _models_options, True),
    "model-from-config": ("parse a Hugging Face config.json", _model_from_config_options, True),
    "ridge": ("ridge point of an accelerator", _ridge_options, True),
    "ceiling": ("ceilings of one scenario", _ceiling_options, True),
    "predict": ("what the scenario's framework reaches (the predicted model), beside the ceiling", _predict_options, True),
    "memory": ("how the scenario's framework (vLLM or SGLang) sizes memory at start-up: its KV-cache tokens", _memory_options, True),
    "report": ("write a self-contained HTML report of one scenario", _report_options, True),
    "sweep": ("sweep a grid of scenarios to a file", _sweep_options, True),
    "import": ("import benchmark results (CSV, JSON, JSONL) as a dataset", _import_options, True),
    "measured": ("a stored dataset against its ceilings and the predicted model: summary, flags by cause, refit", _measured_options, True),
    "compare-runs": (
        "two or more stored datasets side by side, aligned on the scenario: each metric's difference and ratio to the first",
        _compare_runs_options,
        True,
    ),
    "datasets": ("list the imported datasets: id, name, format, rows, imported at", _datasets_options, True),
    "delete-dataset": ("delete an imported dataset and its measurements (the catalogue is kept)", _delete_dataset_options, True),
    "probe": ("measure this machine's memory bandwidth and matmul throughput (python -m core.probe)", _probe_options, False),
    "import-probe": ("store a probe document as a measured profile of an accelerator", _import_probe_options, True),
    "bench-command": ("the benchmark command that measures a scenario", _bench_command_options, True),
    "prices": ("the published prices of accelerators, with sources and dates", _prices_options, True),
    "reference": ("the published reference measurements, each against its ceiling", _reference_options, True),
    "scorecard": ("how well the model predicts the published measurements (leave one source out)", _scorecard_options, True),
    "compare": ("accelerators for one workload: cheapest configuration, costs, load", _compare_options, True),
    "frontier": ("tokens/s per GPU and $ per million tokens against tokens/s per user", _frontier_options, True),
    "deploy": (
        "plans for a request rate past one tensor-parallel group: aggregated replicas and disaggregated prefill and decode "
        "pools, with expert, pipeline and data parallel layouts, p50/p90/p99 from a simulation, priced, with energy",
        _deploy_options,
        True,
    ),
    "layout": (
        "one replica's step under a parallel layout (tensor, attention data, expert, pipeline parallel): its time at the "
        "roofs and as the framework is expected to run it, its communication, and its memory",
        _layout_options,
        True,
    ),
    "deployments": (
        "the published deployments (disaggregated, wide expert parallel) against their layouts' ceilings and predictions",
        _deployments_options,
        True,
    ),
}


#: The scenario fields a workload (`compare`, `frontier`) leaves out: the accelerator and its count are the comparison's.
_NOT_WORKLOAD = ("gpu", "num_gpus", "usd_per_gpu_hour", "spec_draft_len", "spec_acceptance", "spec_draft_model")


def workload_fields() -> tuple[str, ...]:
    """The scenario fields of a workload (`compare`, `frontier`)."""
    from core.model.scenario import FIELDS

    return tuple(n for n in FIELDS if n not in _NOT_WORKLOAD)


def _cost_arguments(parser: argparse.ArgumentParser) -> None:
    from core.catalogue.prices import RATES
    from core.plan.costs import DEFAULT_SOURCES, Ownership

    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--rent", dest="mode", action="store_const", const="rent", help="rent on demand (default)")
    mode.add_argument("--buy", dest="mode", action="store_const", const="buy", help="buy and amortise")
    parser.set_defaults(mode="rent")
    parser.add_argument(
        "--rent-prices",
        choices=RATES,
        default="on-demand",
        help="which published rent prices a median uses: on-demand instance rates (default) or every rent price "
        "(serverless, managed endpoints, marketplace floors and second-hand reports too)",
    )
    for name, info in Ownership.model_fields.items():
        if name not in ("mode", "rent_prices"):
            parser.add_argument(
                "--" + name.replace("_", "-"),
                type=float,
                default=info.default,
                help=f"buy mode; default {info.default}: {DEFAULT_SOURCES[name]}",
            )
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="ID=USD",
        help="your price for an accelerator ($ per GPU-hour with --rent, $ per GPU with --buy)",
    )


def _ownership(args: argparse.Namespace) -> tuple[Ownership, dict[str, float]]:
    from core.catalogue.prices import parse_price
    from core.plan.costs import Ownership

    own = Ownership.model_validate({n: getattr(args, n) for n in Ownership.model_fields})
    given: dict[str, float] = {}
    for item in args.price:
        price = parse_price(item, "=")
        if price is None:
            raise CliError(f"--price: expected ID=USD with a price > 0, got {item!r}")
        given[price[0]] = price[1]
    return own, given


def _workload(args: argparse.Namespace) -> Scenario:
    from core.model.scenario import from_cli

    sc = from_cli(args, only=workload_fields()).model_copy(update={"gpu": args.gpu[0]})
    if getattr(args, "input_tokens", None) is not None:
        out = args.output_tokens or 0
        sc = sc.at(prompt=args.input_tokens, context=args.input_tokens + out)
    return sc


def _catalogue(args: argparse.Namespace) -> Catalogue:
    from core.catalogue.catalogue import load_catalogue
    from core.evidence.predictor import with_predictor
    from core.store.store import get_store

    return with_predictor(load_catalogue(get_store(args.db)))


def cmd_gpus(args: argparse.Namespace) -> list[dict[str, Any]]:
    return [acc.record() for acc in _catalogue(args).accelerators.values()]


def cmd_models(args: argparse.Namespace) -> list[dict[str, Any]]:
    models = _catalogue(args).models
    keep = [
        "id",
        "name",
        "architecture",
        "layers",
        "hidden_size",
        "num_heads",
        "num_kv_heads",
        "head_dim",
        "attention",
        "experts",
        "experts_per_token",
        "window",
        "native_weights",
        "total_params",
        "active_params",
        "kv_bytes_per_token_bf16",
        "published_total_params",
        "params_source",
        "custom",
    ]
    return [{("kv_bytes_per_token" if k == "kv_bytes_per_token_bf16" else k): r[k] for k in keep} for r in models.iter_rows(named=True)]


def cmd_model_from_config(args: argparse.Namespace) -> dict[str, Any]:
    from core.catalogue.model_config import load_config, model_from_config, slugify
    from core.catalogue.operations import summary

    cfg = load_config(args.path)
    model_id = args.id or slugify(Path(args.path).stem if Path(args.path).stem != "config" else Path(args.path).parent.name)
    record = model_from_config(cfg, model_id=model_id)
    s = summary(record)
    return {
        **record.model_dump(exclude={"moe_layer_ids", "window_layer_ids"}),
        "layers": record.num_layers,
        "moe_layers": record.num_moe_layers,
        "window_layers": record.num_window_layers,
        "total_params": s["total_params"],
        "active_params": s["active_params"],
        "kv_bytes_per_token": s["kv_elems_per_token"] * 2.0,
    }


def cmd_ridge(args: argparse.Namespace) -> dict[str, Any]:
    import polars as pl

    from core.catalogue.precisions import compute_precision
    from core.model.roofline import ridge_points

    cat = _catalogue(args)
    cat.gpu(args.gpu)
    prec = compute_precision(args.precision, argument="--precision")
    row = ridge_points(cat.gpus.filter(pl.col("id") == args.gpu)).filter(pl.col("precision") == prec)
    if not row.height:
        raise CliError(f"--precision: {args.gpu} has no {prec} peak (unsupported natively)")
    r = row.row(0, named=True)
    return {
        "gpu": args.gpu,
        "precision": prec,
        "ridge": r["ridge"],
        "peak_flops": r["peak_flops"],
        "bandwidth_bytes_per_s": r["bandwidth_bytes_per_s"],
    }


def cmd_ceiling(args: argparse.Namespace) -> dict[str, Any]:
    from core.model.ceilings import ceiling, operation_table
    from core.model.scenario import from_cli
    from core.plan.planning import would_fit

    cat = _catalogue(args)
    scenario = from_cli(args)
    r = ceiling(cat, scenario)
    out = r.record()
    fit = would_fit(cat, scenario, r)
    out["would_fit"] = fit.record() if fit is not None else None  # null when it fits
    if args.ops:
        out["ops"] = operation_table(cat, scenario, communication=True).to_dicts()
    return out


def cmd_predict(args: argparse.Namespace) -> dict[str, Any]:
    from core.model.ceilings import ceiling
    from core.model.scenario import from_cli

    cat = _catalogue(args)
    scenario = from_cli(args)
    r = ceiling(cat, scenario)
    pairs = {
        "tokens_per_s_total": "predicted_tokens_per_s_total",
        "tokens_per_s_per_user": "predicted_tokens_per_s_per_user",
        "time_per_output_token_s": "predicted_tpot_s",
        "ttft_s": "predicted_ttft_s",
        "prefill_tokens_per_s": "predicted_prefill_tokens_per_s",
        "usd_per_million_tokens": "predicted_usd_per_million_tokens",
    }
    return {
        "scenario": r.scenario.model_dump(),
        "framework": scenario.framework,
        "predicted": {name: getattr(r, pred) for name, pred in pairs.items()},
        "ceiling": {name: getattr(r, name) for name in pairs},
        "share_of_ceiling": {name: _share(getattr(r, pred), getattr(r, name), name) for name, pred in pairs.items()},
        "held_out_error": {"tokens": r.predicted_error, "ttft": r.predicted_ttft_error, "basis": r.predicted_basis},
        "fits": r.fits,
        "flags": r.flags,
        "method": (
            "the ceiling's operations at the framework's fitted efficiencies per operation class, plus per-kernel, per-step, "
            "per-sequence and per-request overheads (core.model.predicted); ttft: a request arriving into the running batch (a "
            "server at this concurrency in its steady state), its prompt in the framework's prefill chunks, each a step that also "
            "carries the other sequences' tokens (the median when the prompts arrive together: predicted_burst_ttft_s of "
            "`ceiling --json`); held_out_error: mean |predicted - measured| / measured of "
            "published measurements like these, one publisher's campaign held out at a time"
        ),
    }


def _share(predicted: float | None, bound: float | None, name: str) -> float | None:
    """The share of the ceiling a predicted figure reaches: predicted / ceiling for a rate, ceiling / predicted for a time
    or a price (lower is better)."""
    if not predicted or not bound:
        return None
    return bound / predicted if name.endswith("_s") or name.startswith("usd") else predicted / bound


def cmd_memory(args: argparse.Namespace) -> dict[str, Any]:
    from core.model.allocation import ENGINES, GIB, allocate
    from core.model.scenario import from_cli

    cat = _catalogue(args)
    sc = from_cli(args)
    if sc.framework not in ENGINES:
        raise CliError(f"--framework: start-up memory is modelled for {', '.join(ENGINES)}, not {sc.framework}")
    a = allocate(
        cat, sc.gpu, sc.num_gpus, sc.model, weights=sc.weights, kv=sc.kv, engine=sc.framework, version=args.engine_version,
        gpu_memory_utilization=args.gpu_memory_utilization, mem_fraction_static=args.mem_fraction_static,
        max_model_len=args.max_model_len or cat.model(sc.model).max_context or sc.context, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, concurrency_tokens=sc.context,
    )  # fmt: skip
    return {
        "engine": a.settings.engine,
        "version": a.settings.version,
        "settings": {k: v for k, v in vars(a.settings).items() if k not in ("engine", "version")},
        "gib_per_gpu": {t.name: round(t.bytes / GIB, 4) for t in a.terms},
        "kv_bytes_per_token": a.kv_bytes_per_token,
        "kv_cache_tokens": a.kv_cache_tokens,
        "max_concurrency": a.max_concurrency,
        "concurrency_tokens": a.concurrency_tokens,
        "approximate": list(a.approximate),
        "terms": a.sentences(),
    }


def cmd_report(args: argparse.Namespace) -> dict[str, Any]:
    from core.model.scenario import from_cli
    from core.present.report import report_html

    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise CliError(f"--out: {out.name} must end in .html")
    _check_out(out)
    cat = _catalogue(args)
    text = report_html(cat, from_cli(args))
    _write_out(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return {"out": str(out), "bytes": len(text.encode("utf-8"))}


def cmd_sweep(args: argparse.Namespace) -> dict[str, Any]:
    from core.model.scenario import FIELDS, from_cli
    from core.model.sweep import DEFAULT_BATCHES, DEFAULT_CONTEXTS, DEFAULT_WEIGHTS, scenario_grid, sweep
    from core.present.tables import csv_safe

    cat = _catalogue(args)
    out = Path(args.out)
    if out.suffix not in (".parquet", ".csv"):
        raise CliError(f"--out: {out.name} must end in .parquet or .csv")
    _check_out(out)
    gpus = args.gpu or cat.gpus["id"].to_list()
    models = args.model or list(cat.records)
    for g in gpus:
        cat.gpu(g)
    for m in models:
        cat.model(m)
    base = from_cli(args, only=tuple(name for name in FIELDS if name not in SWEEP_AXES))  # validates the fixed fields
    grid = scenario_grid(
        gpus,
        models,
        weights=args.weights or DEFAULT_WEIGHTS,
        batches=args.batch or DEFAULT_BATCHES,
        contexts=args.context or DEFAULT_CONTEXTS,
        num_gpus=args.num_gpus or (1,),
        base=base,
    )
    result = sweep(cat, grid)  # checks every axis value against the Scenario's bounds
    if out.suffix == ".parquet":
        _write_out(out, result.write_parquet)
    else:
        _write_out(out, csv_safe(result).write_csv)  # a custom name starting "=" is text in a spreadsheet, not a formula
    return {"rows": result.height, "out": str(out)}


def _check_out(out: Path) -> None:
    """Before the work: --out can be written (its folder exists or can be created there), else a CliError naming why."""
    if out.is_dir():
        raise CliError(f"--out: {out} is a folder; give a file name in it")
    folder = out.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise CliError(f"--out: cannot create the folder {out.parent}: {folder} is a file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"--out: cannot write in {folder} (permission denied)")


def _make_folder(out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"--out: cannot create the folder {out.parent}: {exc.strerror or exc}") from None


def _write_out(out: Path, write: Any) -> None:
    """Write --out whole or not at all: into a temporary file beside it (its folder created), then renamed over it."""
    _make_folder(out)
    tmp = out.with_name(f".{out.name}.partial")
    try:
        write(tmp)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CliError(f"--out: cannot write {out}: {exc.strerror or exc}") from None


def literal_choices(info: Any) -> list[str] | None:
    """The values of a pydantic field typed as a Literal (optional or not), for an option's choices; None for any other field."""
    annotation = info.annotation
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is typing.Literal:
            return [str(v) for v in typing.get_args(arg)]
    return None


def cmd_import(args: argparse.Namespace) -> dict[str, Any]:
    from core.evidence.importers import MAX_FILE_BYTES, ImportContext, ImportFileError, import_file
    from core.store.store import get_store

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"FILE: no file at {path}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:  # before reading it: a 1 GB file is refused without holding it in memory
        raise CliError(f"FILE: {path.name} is {size:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes")
    mapping = {}
    for item in args.map:
        column, sep, header = item.partition("=")
        if not sep or not column.strip() or not header.strip():
            raise CliError(f"--map: expected COLUMN=HEADER, got {item!r}")
        mapping[column.strip()] = header.strip()
    context = ImportContext.model_validate({name: getattr(args, name) for name in ImportContext.model_fields})

    def progress(fraction: float, message: str) -> None:
        if sys.stderr.isatty():
            print(f"\r{fraction:4.0%} {message}".ljust(60), end="", file=sys.stderr, flush=True)

    store = get_store(args.db)
    try:
        result = import_file(
            store,
            path.read_bytes(),
            path.name,
            fmt=args.format,
            context=context,
            name=args.name,
            mapping=mapping,
            progress=progress,
        )
    except ImportFileError as exc:
        if exc.duplicate_of is None or not store.dataset_writable(exc.duplicate_of):
            raise
        db = f" --db {shlex.quote(args.db)}" if args.db else ""
        raise CliError(f"{exc} with `roofline delete-dataset {exc.duplicate_of}{db}`") from None
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return {"dataset_id": result.dataset_id, "name": result.name, "format": result.format, "rows": result.rows, "notes": result.notes}


def cmd_measured(args: argparse.Namespace) -> dict[str, Any]:
    """`measured DATASET`: core.evidence.compare.summary of the dataset against the ceiling and the predicted model
    (compared once; refitted once with --refit, each row predicted before and after)."""
    from core.evidence.compare import summary
    from core.evidence.importers import list_datasets
    from core.evidence.refit import MIN_FIT_POINTS, MIN_FIT_R2, refit
    from core.store.store import get_store

    store = get_store(args.db)
    info = _dataset(list_datasets(store), args.dataset)
    cat = _catalogue(args)
    framework, cmp = _compared(cat, store, info, args.framework)
    out: dict[str, Any] = {"dataset": {k: info[k] for k in ("id", "name", "format", "file_name")}, "framework": framework, **summary(cmp)}
    if args.refit:
        fit = refit(cat, cmp, framework)
        out["refit"] = {"min_points": MIN_FIT_POINTS, "min_r2": MIN_FIT_R2, "cells": [c.record() for c in fit.cells]}
    return out


def _dataset(datasets: pl.DataFrame, given: Any) -> dict[str, Any]:
    """The stored dataset `given` names (its id or its name); CliError naming the datasets otherwise."""
    import polars as pl

    given = str(given).strip()
    hit = datasets.filter((pl.col("id").cast(pl.String) == given) | (pl.col("name") == given))
    if hit.height != 1:
        known = ", ".join(f"{i} ({n!r})" for i, n in zip(datasets["id"], datasets["name"], strict=True)) or "none; import one first"
        several = f"names {hit.height} datasets ({', '.join(str(i) for i in hit['id'])}): give the id" if hit.height else "is not stored"
        raise CliError(f"DATASET: {given!r} {several}; datasets: {known}")
    return hit.row(0, named=True)


def _compared(cat: Catalogue, store: Any, info: dict[str, Any], framework: str | None) -> tuple[str, pl.DataFrame]:
    """A stored dataset against its ceilings and what its framework (`framework`, else its format's) is expected to reach."""
    from core.evidence.compare import compare
    from core.evidence.importers import dataset_rows
    from core.evidence.refit import expected, framework_of

    used = framework or framework_of(info["format"], "vLLM")
    return used, expected(cat, compare(cat, dataset_rows(store, int(info["id"])), flag_text=False), used)


def cmd_compare_runs(args: argparse.Namespace) -> dict[str, Any]:
    """`compare-runs A B ...`: core.evidence.runs.compare_runs of stored datasets, each against its ceiling and what its
    framework is expected to reach; the first is the baseline."""
    from core.evidence.importers import list_datasets
    from core.evidence.runs import RunsError, compare_runs, runs_json
    from core.store.store import get_store

    store = get_store(args.db)
    datasets = list_datasets(store)
    infos = [_dataset(datasets, given) for given in args.runs]
    cat = _catalogue(args)
    runs = []
    for info in infos:
        runs.append((f"{info['name']} (#{info['id']})", _compared(cat, store, info, args.framework)[1]))
    try:
        result = compare_runs(runs)
    except RunsError as exc:
        raise CliError(f"DATASET: {exc}") from None
    return runs_json(result)


def cmd_datasets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """`datasets`: every imported dataset, newest first (the measured page's list)."""
    from core.evidence.importers import list_datasets
    from core.store.store import get_store

    rows = list_datasets(get_store(args.db))
    return [
        {
            "id": int(d["id"]),
            "name": d["name"],
            "format": d["format"],
            "rows": int(d["row_count"]),
            "imported_at": d["imported_at"].isoformat(sep=" ", timespec="seconds"),
            "file_name": d["file_name"],
        }
        for d in rows.iter_rows(named=True)
    ]


def cmd_delete_dataset(args: argparse.Namespace) -> dict[str, Any]:
    """`delete-dataset DATASET`: delete one dataset and its measurements in one transaction (nothing else is touched)."""
    import polars as pl

    from core.evidence.importers import delete_dataset, list_datasets
    from core.store.store import get_store

    store = get_store(args.db)
    datasets = list_datasets(store)
    given = str(args.dataset).strip()
    hit = datasets.filter((pl.col("id").cast(pl.String) == given) | (pl.col("name") == given))
    if hit.height > 1:
        raise CliError(f"DATASET: {given!r} names {hit.height} datasets ({', '.join(str(i) for i in hit['id'])}): give the id")
    if hit.height == 0:
        if datasets.height == 0:
            raise CliError(f"DATASET: {given!r} is not stored; the store holds no datasets (`roofline import FILE` adds one)")
        by_name = dict(zip(datasets["name"], datasets["id"], strict=True))
        close = difflib.get_close_matches(given, list(by_name), n=3, cutoff=0.3)
        hint = (
            f"did you mean {', '.join(f'{n!r} (id {by_name[n]})' for n in close)}?"
            if close
            else "`roofline datasets` lists the stored ones"
        )
        raise CliError(f"DATASET: {given!r} is not stored; {hint}")
    info = hit.row(0, named=True)
    delete_dataset(store, int(info["id"]))
    return {"deleted": {"id": int(info["id"]), "name": info["name"], "rows": int(info["row_count"])}}


def cmd_probe(args: argparse.Namespace) -> None:
    from core.probe import cli as probe_cli

    if args.out:
        _check_out(args.out)  # before the measurement, not after it
        _make_folder(args.out)
    try:
        backend = probe_cli.backend_for(args.device)
    except RuntimeError as exc:
        raise CliError(str(exc)) from None
    probe_cli.measure(args, backend)


def cmd_import_probe(args: argparse.Namespace) -> dict[str, Any]:
    from core.catalogue.catalogue import load_catalogue
    from core.evidence.matching import NoMatchError
    from core.evidence.probes import MAX_PROBE_BYTES, import_probe, measured_vs_datasheet
    from core.store.store import get_store

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"FILE: no file at {path}")
    if path.stat().st_size > MAX_PROBE_BYTES:  # before reading it
        raise CliError(f"FILE: {path.name} is {path.stat().st_size:,} bytes; a probe file is at most {MAX_PROBE_BYTES:,} bytes")
    store = get_store(args.db)
    try:
        done = import_probe(store, path.read_bytes(), path.name, gpu=args.gpu)
    except NoMatchError as exc:
        raise CliError(f"--gpu: {exc}") from None
    table = measured_vs_datasheet(load_catalogue(store), done.accelerator_id)
    return {
        "profile_id": done.profile_id,
        "accelerator": done.accelerator_id,
        "created_accelerator": done.created,
        "device": done.document.device.name,
        "figures": table.to_dicts(),
    }


def cmd_bench_command(args: argparse.Namespace) -> dict[str, Any]:
    from core.evidence.bench_commands import bench_command
    from core.model.scenario import from_cli

    sc = from_cli(args, only=("gpu", "num_gpus", "model", "weights", "kv", "batch"))
    for name in ("input_tokens", "output_tokens"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')}: must be at least 1, got {getattr(args, name)}")
    cmd = bench_command(args.tool, _catalogue(args), sc, input_tokens=args.input_tokens, output_tokens=args.output_tokens)
    return {
        "tool": cmd.tool,
        "command": cmd.command,
        "result_file": cmd.result_file,
        "import_command": cmd.import_command,
        "notes": list(cmd.notes),
        "options_from": cmd.source,
        "options_url": cmd.url,
    }


def cmd_prices(args: argparse.Namespace) -> list[dict[str, Any]]:
    import polars as pl

    from core.catalogue.prices import chosen_prices, is_old

    cat = _catalogue(args)
    for g in args.gpu or []:
        cat.gpu(g)  # an unknown id is named, with suggestions
    rows = cat.prices
    if args.gpu:
        rows = rows.filter(pl.col("gpu").is_in(args.gpu))
    if args.kind:
        rows = rows.filter(pl.col("kind") == args.kind)
    pairs = rows.select("gpu", "kind").unique().iter_rows()
    used = {(g, k): (cat.price(g, k, rates=args.rent_prices), chosen_prices(cat.prices, g, k, args.rent_prices)[0]) for g, k in pairs}
    out = []
    for r in rows.iter_rows(named=True):
        price, counted = used[(r["gpu"], r["kind"])]
        voted = counted.filter((pl.col("provider") == r["provider"]) & (pl.col("offer") == r["offer"]) & (pl.col("usd") == r["usd"]))
        out.append({**r, "as_of": r["as_of"] or None, "median_used": price.usd, "in_median": voted.height > 0, "old": is_old(r["as_of"])})
    return out


#: what `reference` prints of each row
REFERENCE_FIELDS = (
    "id",
    "gpu",
    "num_gpus",
    "tp",
    "ep",
    "model",
    "weights",
    "kv",
    "compute",
    "batch_printed",
    "batch",
    "batch_kind",
    "input_tokens",
    "output_tokens",
    "scope",
    "metric",
    "value",
    "unit",
    "measured",
    "ceiling",
    "ratio",
    "mbu",
    "mfu",
    "fits",
    "cause",
    "framework",
    "framework_version",
    "publisher",
    "source_url",
    "source_date",
    "read_on",
    "note",
)


def cmd_reference(args: argparse.Namespace) -> list[dict[str, Any]]:
    import polars as pl

    from core.evidence.reference import reference_compare
    from core.evidence.reference import unit_of as reference_unit

    cat = _catalogue(args)
    for g in args.gpu or []:
        cat.gpu(g)
    for m in args.model or []:
        cat.model(m)
    rows = reference_compare(cat)
    for column, wanted in (("gpu", args.gpu), ("model", args.model), ("framework", args.framework), ("metric", args.metric)):
        if wanted:
            rows = rows.filter(pl.col(column).is_in(wanted))
    out = rows.select(REFERENCE_FIELDS).with_columns(pl.col("read_on").cast(pl.String))
    return [{**r, "unit_si": reference_unit(r["metric"])} for r in out.iter_rows(named=True)]


def cmd_scorecard(args: argparse.Namespace) -> dict[str, Any]:
    from core.evidence.scorecard import scorecard

    return scorecard(_catalogue(args)).as_json()


def cmd_compare(args: argparse.Namespace) -> dict[str, Any]:
    from core.plan.compare_request import from_cli
    from core.plan.purchase import Load, compare_accelerators

    cat = _catalogue(args)
    own, given = _ownership(args)
    load = None
    lengths = (args.requests_per_s, args.input_tokens, args.output_tokens)
    if any(v is not None for v in lengths):
        if any(v is None for v in lengths):
            raise CliError("--requests-per-s, --input-tokens and --output-tokens go together")
        load = Load(requests_per_s=args.requests_per_s, input_tokens=args.input_tokens, output_tokens=args.output_tokens)
    request = from_cli(args, own)
    tpot, ttft = request.limits()
    target = request.preset
    sc = _workload(args)
    rent, buy = (given, None) if own.mode == "rent" else (None, given)
    table = compare_accelerators(
        cat, args.gpu, sc, max_tpot_s=tpot, max_ttft_s=ttft, own=own, prices=rent, buy_prices=buy, load=load, sort_by=request.sort_by
    )
    return {
        "workload": sc.model_dump(exclude={"gpu", "num_gpus", "usd_per_gpu_hour"}),
        "target": {"tpot_s": tpot, "ttft_s": ttft, "preset": target.key if target else None, "source": target.source if target else None},
        "ownership": own.model_dump(),
        "load": load.model_dump() if load else None,
        "accelerators": table.to_dicts(),
    }


def cmd_frontier(args: argparse.Namespace) -> dict[str, Any]:
    import polars as pl

    from core.plan.purchase import compare_accelerators, frontier_curves

    cat = _catalogue(args)
    own, given = _ownership(args)
    sc = _workload(args)
    rent, buy = (given, None) if own.mode == "rent" else (None, given)
    if args.num_gpus is not None and args.num_gpus < 1:
        raise CliError(f"--num-gpus: must be at least 1, got {args.num_gpus}")
    table = compare_accelerators(cat, args.gpu, sc, own=own, prices=rent, buy_prices=buy)
    curves = frontier_curves(cat, table, sc, own=own, prices=rent, buy_prices=buy, num_gpus=args.num_gpus)
    return {
        "workload": sc.model_dump(exclude={"gpu", "num_gpus", "usd_per_gpu_hour"}),
        "ownership": own.model_dump(),
        "points": curves.drop("chosen", "meets").to_dicts(),
        "unplaced": table.filter(pl.col("status") != "ok").select("gpu", "status").to_dicts() if args.num_gpus is None else [],
    }


def cmd_deploy(args: argparse.Namespace) -> dict[str, Any]:
    from core.catalogue.catalogue import UnknownIdError
    from core.model.scenario import from_cli
    from core.plan.deploy import Workload, plan_deployments, plan_goodput, plan_split

    cat = _catalogue(args)
    own, given = _ownership(args)
    if own.mode != "rent":
        raise CliError("--buy: deployment plans are priced per GPU-hour; give --price ID=USD per GPU-hour with --rent")
    base = from_cli(args, only=tuple(n for n in workload_fields() if n not in ("batch", "context", "prompt", "depth"))).model_copy(
        update={"gpu": args.gpu[0]}
    )
    numbers = {n: getattr(args, n) for n in Workload.model_fields}
    workload = Workload.model_validate(
        {n: (int(v) if n in ("prompt", "output") and float(v).is_integer() else v) for n, v in numbers.items()}
    )
    for gpu in [*args.gpu, *([args.prefill_gpu] if args.prefill_gpu else [])]:
        if gpu not in cat.gpu_index:
            raise UnknownIdError("accelerator", gpu, sorted(cat.gpu_index))
    if args.max_gpus < 1 or args.max_pool_gpus < 1:
        raise CliError("--max-gpus and --max-pool-gpus: at least 1")
    modes = ("aggregated", "disaggregated") if args.serving == "both" else (args.serving,)
    trace = _trace(args.trace) if args.trace else None
    if trace is not None:
        span = float(trace.arrival_s[-1] - trace.arrival_s[0])
        if len(trace) < 2 or span <= 0:
            raise CliError(f"--trace: {args.trace}: its {len(trace):,} request(s) arrive at one instant: no rate to plan for")
        workload = workload.model_copy(
            update={
                "rate_per_s": len(trace) / span,
                "prompt": max(1, round(float(trace.prompt_tokens.mean()))),
                "output": max(1, round(float(trace.output_tokens.mean()))),
            }
        )
    if args.prefill_gpu:
        plans = [
            p
            for p in (
                plan_split(cat, base, workload, args.prefill_gpu, g, max_pool_gpus=args.max_pool_gpus, prices=given, own=own)
                for g in args.gpu
            )
            if p
        ]
        if "aggregated" in modes:
            plans += plan_deployments(cat, base, workload, args.gpu, modes=("aggregated",), max_gpus=args.max_gpus, prices=given, own=own)
    else:
        plans = plan_deployments(
            cat, base, workload, args.gpu, modes=modes, max_gpus=args.max_gpus, max_pool_gpus=args.max_pool_gpus, prices=given, own=own
        )
    return {
        "workload": workload.model_dump(),
        "model": base.model,
        "framework": base.framework,
        "trace": args.trace,
        "plans": [{**p.record(), "goodput_per_s": None if trace is not None else plan_goodput(p, workload)} for p in plans],
        "unplanned": [g for g in args.gpu if not any(p.decode.gpu == g for p in plans)],
    }


#: The largest request trace `deploy --trace` reads (bytes), checked before the file is read.
TRACE_MAX_BYTES = 200_000_000


def _trace(path: str) -> Any:
    import os

    from core.plan.load import read_trace

    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise CliError(f"--trace: cannot read {path}: {exc.strerror}") from None
    if size > TRACE_MAX_BYTES:
        raise CliError(f"--trace: {path} is {size / 1e6:,.0f} MB; at most {TRACE_MAX_BYTES / 1e6:,.0f} MB")
    try:
        with open(path, "rb") as handle:
            return read_trace(handle.read(), os.path.basename(path))
    except ValueError as exc:
        raise CliError(f"--trace: {exc}") from None


def cmd_layout(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses

    from core.model.scenario import from_cli
    from core.plan.layouts import Layout, check, layout_memory, layout_step

    cat = _catalogue(args)
    sc = from_cli(args)
    layout = Layout.model_validate({n: getattr(args, n) for n in Layout.model_fields})
    problems = check(cat, sc, layout)
    if problems:
        raise CliError("; ".join(problems))
    out: dict[str, Any] = {"layout": layout.label, "gpus_per_replica": layout.gpus_per_replica, "gpus": layout.gpus}
    for name, predictor in (("ceiling", None), ("predicted", cat.predictor)):
        step = layout_step(cat, sc, layout, prefill=args.prefill, predictor=predictor)
        record = {k: v for k, v in dataclasses.asdict(step).items() if k != "layout"}
        out[name] = {
            **record,
            "tokens_per_s": step.tokens_per_s,
            "tokens_per_s_per_gpu": step.tokens_per_s / layout.gpus_per_replica,
            "bound": step.bound,
        }
    out["memory"] = dataclasses.asdict(layout_memory(cat, sc, layout))
    return out


def cmd_deployments(args: argparse.Namespace) -> dict[str, Any]:
    import polars as pl

    from core.plan.published import score_deployments

    table = score_deployments(_catalogue(args))
    scored = table.filter(pl.col("unscored").is_null())
    above = scored.filter(pl.col("share_of_ceiling") > 1.0)
    return {
        "rows": (scored if args.scored else table).to_dicts(),
        "scored": scored.height,
        "unscored": table.height - scored.height,
        "above_ceiling": above.select("id", "share_of_ceiling", "cause").to_dicts(),
        "median_share_of_ceiling": scored["share_of_ceiling"].median(),
        "median_predicted_error": scored["predicted_error"].drop_nulls().median(),
    }


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
