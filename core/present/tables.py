"""Tables in reading units for the pages (units in column names)."""

from __future__ import annotations

import io

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.prices import chosen_prices
from core.catalogue.specs import SOURCE_SEPARATOR, accelerator_columns
from core.evidence.probes import measured_line
from core.model.sweep import SWEEP_COLUMNS
from core.present.text import sig


def operations_display(ops: pl.DataFrame) -> pl.DataFrame:
    """The per-operation roofline table (core.model.ceilings.operation_table) in GFLOP, MB, µs and %.

    What a reader looks for first (which operation, how long, what share of the step, what bounds it)
    comes first, so it is in view at 1280 px; the FLOP and byte counts behind it follow.
    """
    return ops.select(
        pl.col("op").alias("operation"),
        pl.col("group").alias("layer group"),
        pl.col("layers"),
        (pl.col("time_s") * 1e6).alias("time (µs)"),
        (pl.col("share") * 100).alias("share of step (%)"),
        pl.col("bound"),
        pl.col("intensity").alias("intensity (FLOP/B)"),
        (pl.col("flops") / 1e9).alias("GFLOP"),
        (pl.col("weight_bytes") / 1e6).alias("weights (MB)"),
        (pl.col("act_bytes") / 1e6).alias("activations (MB)"),
        (pl.col("kv_bytes") / 1e6).alias("KV (MB)"),
    )


def accelerator_table(gpus: pl.DataFrame) -> pl.DataFrame:
    """Accelerators in reading units (each field's Column: GB, TB/s, dense TFLOP/s per precision, W, GB/s), the bf16 ridge, sources."""
    columns = accelerator_columns()
    last_peak = [n for n in columns if n.startswith("peak_")][-1]
    shown = []
    for name, col in columns.items():
        if name in ("sources", "notes"):
            continue
        value = pl.col(name) / col.scale if col.scale != 1 else pl.col(name)
        shown.append(value.alias(col.heading()))
        if name == last_peak:
            shown.append((pl.col("peak_bf16") / pl.col("bandwidth_bytes_per_s")).alias("bf16 ridge (FLOP/B)"))
    return gpus.select(
        *shown,
        web_links(pl.col("sources").str.split(SOURCE_SEPARATOR.strip()).list.first().str.strip_chars()).alias("source"),
        pl.col("sources").alias("all sources"),
        pl.col("notes"),
        pl.col("custom"),
    )


def web_links(url: pl.Expr) -> pl.Expr:
    """A column of URLs for a link column: web addresses (http, https) only, anything else (a `javascript:` URL) empty, so it
    is never drawn as a link (core.present.text.web_link for one)."""
    low = url.str.strip_chars().str.to_lowercase()
    return pl.when(low.str.starts_with("https://") | low.str.starts_with("http://")).then(url)


def model_table(models: pl.DataFrame) -> pl.DataFrame:
    """Models in reading units: parameters in billions, KV cache in KiB per token (bf16)."""
    return models.select(
        "id",
        "name",
        pl.col("architecture"),
        pl.col("attention"),
        (pl.col("total_params") / 1e9).alias("total params (B)"),
        (pl.col("active_params") / 1e9).alias("active params (B)"),
        (pl.col("published_total_params") / 1e9).alias("published total (B)"),
        pl.col("layers"),
        pl.col("hidden_size").alias("hidden"),
        pl.col("num_heads").alias("heads"),
        pl.col("num_kv_heads").alias("KV heads"),
        pl.col("head_dim").alias("head dim"),
        pl.col("experts"),
        pl.col("experts_per_token").alias("experts / token"),
        (pl.col("kv_bytes_per_token_bf16") / 1e3).alias("KV per token, bf16 (kB)"),
        pl.col("window").alias("sliding window (tokens)"),
        pl.col("window_layers").alias("window layers"),
        pl.col("native_weights").alias("native weights"),
        pl.col("max_context").alias("max context (tokens)"),
        pl.col("hf_repo").alias("Hugging Face repo"),
        web_links(pl.col("params_source").str.split(" ; ").list.first().str.strip_chars()).alias("params source"),
        pl.col("config_source").alias("config source"),
        pl.col("notes"),
        pl.col("custom"),
    )


def profiles_display(cat: Catalogue) -> pl.DataFrame:
    """Each accelerator's newest measured profile, for the catalogue page: where it came from and how it compares."""
    names = {g: a.name for g, a in cat.accelerators.items()}
    p = cat.profiles
    return pl.DataFrame(
        {
            "profile": p["id"],
            "accelerator": [names.get(g, g) for g in p["accelerator_id"]],
            "device": p["device_name"],
            "backend": p["backend"],
            "probed at": p["probed_at"],
            "bandwidth (GB/s)": p["bandwidth_bytes_per_s"] / 1e9,
            "vs datasheet": [(measured_line(cat, g) or "") if g in names else "accelerator deleted" for g in p["accelerator_id"]],
        },
        schema={
            "profile": pl.Int32,
            "accelerator": pl.String,
            "device": pl.String,
            "backend": pl.String,
            "probed at": pl.String,
            "bandwidth (GB/s)": pl.Float64,
            "vs datasheet": pl.String,
        },
    )


def what_if_display(table: pl.DataFrame) -> pl.DataFrame:
    """The what-if table (what_ifs) in reading units: ms, tokens/s, and × the current figure."""
    return table.select(
        "move",
        "lever",
        "change",
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("change_tokens_per_s_per_user").alias("× per user"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        pl.col("change_tokens_per_s_total").alias("× total"),
        (pl.col("time_per_output_token_s") * 1e3).alias("time per output token (ms)"),
        pl.col("change_time_per_output_token_s").alias("× time per token"),
        (pl.col("ttft_s") * 1e3).alias("time to first token (ms)"),
        pl.col("change_ttft_s").alias("× TTFT"),
        "fits",
        "bound",
    )


def comparison_display(table: pl.DataFrame) -> pl.DataFrame:
    """The comparison in reading units (units in the column names); the price's basis and date beside every $ figure;
    the figures the search ran on (predicted, or the ceiling's) with the ceiling's throughput beside them as the bound.

    The figures a choice rests on (speed per user and per GPU, $ per million tokens, the latencies)
    come right after the configuration, so they are in view at 1280 px; the rest follow.
    """
    return table.select(
        pl.col("gpu_name").alias("accelerator"),
        "status",
        pl.col("num_gpus").alias("GPUs"),
        "batch",
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("tokens_per_s_per_gpu").alias("tokens/s per GPU"),
        pl.col("usd_per_million_tokens").alias("$ per million output tokens"),
        (pl.col("time_per_output_token_s") * 1e3).alias("time per output token (ms)"),
        (pl.col("ttft_s") * 1e3).alias("time to first token (ms)"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        pl.col("ceiling_tokens_per_s_total").alias("ceiling tokens/s total"),
        (pl.col("predicted_error") * 100).alias("held-out error (%)"),
        pl.col("basis").alias("figures are"),
        pl.col("binds").alias("what binds"),
        pl.col("usd_per_million_input_tokens").alias("$ per million input tokens"),
        pl.col("usd_per_gpu_hour").alias("$ per GPU-hour"),
        pl.col("price_basis").alias("price used"),
        pl.col("break_even_months").alias("buying pays off after (months)"),
        pl.col("tokens_per_s_per_watt").alias("tokens/s per W"),
        pl.col("replicas"),
        pl.col("gpus_needed").alias("GPUs for the load"),
        pl.col("usd_per_month").alias("$ per month for the load"),
        pl.col("why").alias("why this configuration"),
        pl.col("scaleup_domain").alias("scale-up domain (GPUs)"),
        pl.col("ridge").alias("ridge (FLOP/B)"),
        pl.col("compute_used").alias("compute"),
        pl.col("bound"),
        (pl.col("peak_flops") / 1e12).alias("peak per GPU (TFLOP/s)"),
        (pl.col("bandwidth_bytes_per_s") / 1e12).alias("bandwidth per GPU (TB/s)"),
        (pl.col("memory_required_bytes") / 1e9).alias("memory used (GB)"),
        (pl.col("capacity_bytes") / 1e9).alias("memory on the GPUs (GB)"),
    )


def sweep_display(frame: pl.DataFrame, model_names: dict[str, str] | None = None) -> pl.DataFrame:
    """A sweep result in reading units (ms, GB), units in the column names.

    Each row's configuration (accelerator, model, GPUs, batch, weights) and its figures come first, so
    they are in view at 1280 px; the other formats, the context and the memory follow. Models are
    named by `model_names` (id -> name) where given, as the page's model picker names them.
    """
    if frame.is_empty():
        return frame
    return frame.select(
        pl.col("gpu_name").alias("accelerator"),
        pl.col("model").replace_strict(model_names, default=pl.col("model"), return_dtype=pl.String) if model_names else pl.col("model"),
        pl.col("num_gpus").alias("GPUs"),
        pl.col("batch"),
        pl.col("weights"),
        (pl.col("time_per_output_token_s") * 1e3).alias("time per output token (ms)"),
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        (pl.col("tokens_per_s_total") / pl.col("num_gpus")).alias("tokens/s per GPU"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        pl.col("predicted_tokens_per_s_total").alias("expected tokens/s total"),
        (pl.col("predicted_tpot_s") * 1e3).alias("expected time per output token (ms)"),
        (pl.col("predicted_error") * 100).alias("held-out error (%)"),
        pl.col("fits"),
        (pl.col("ttft_s") * 1e3).alias("time to first token (ms)"),
        (pl.col("predicted_ttft_s") * 1e3).alias("expected time to first token (ms)"),
        pl.col("usd_per_million_tokens").alias("$ per million output tokens (median on-demand price)"),
        pl.col("predicted_usd_per_million_tokens").alias("expected $ per million output tokens"),
        pl.col("compute_used").alias("compute"),
        pl.col("kv").alias("KV"),
        pl.col("context").alias("context (tokens)"),
        pl.col("bound"),
        pl.col("ridge").alias("ridge (FLOP/B)"),
        (pl.col("memory_required_bytes") / 1e9).alias("memory needed (GB)"),
        (pl.col("capacity_bytes") / 1e9).alias("memory on the GPUs (GB)"),
        pl.col("max_batch").alias("largest batch"),
        pl.col("min_gpus").alias("fewest GPUs"),
    )


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    """The frame as a Parquet file (every sweep column, SI units)."""
    buf = io.BytesIO()
    frame.select([c for c in SWEEP_COLUMNS if c in frame.columns] or frame.columns).write_parquet(buf)
    return buf.getvalue()


def comparison_table(cmp: pl.DataFrame) -> pl.DataFrame:
    """The comparison in reading units (units in the column names)."""
    cols = [
        pl.col("row"),
        pl.col("status"),
        pl.col("gpu").alias("accelerator"),
        pl.col("num_gpus").alias("GPUs"),
        pl.col("model"),
        pl.col("weights"),
        pl.col("kv").alias("KV"),
        pl.col("phase"),
        pl.col("batch").alias("batch (sequences)"),
        pl.col("input_tokens").alias("input (tokens)"),
        pl.col("output_tokens").alias("output (tokens)"),
        pl.col("tokens_per_s").alias("measured (tokens/s)"),
        pl.col("predicted_tokens_per_s").alias("ceiling (tokens/s)"),
        (pl.col("ratio") * 100).alias("measured / ceiling (%)"),
        (pl.col("mbu") * 100).alias("MBU (%)"),
        (pl.col("mfu") * 100).alias("MFU (%)"),
    ]
    if "expected_tokens_per_s" in cmp.columns:
        cols.append(pl.col("expected_tokens_per_s").alias("expected (tokens/s)"))
        cols.append((pl.col("expected_ratio") * 100).alias("measured / expected (%)"))
    if "refit_tokens_per_s" in cmp.columns:
        cols.append(pl.col("refit_tokens_per_s").alias("expected after your refit (tokens/s)"))
    cols += [
        (pl.col("ttft_s") * 1e3).alias("TTFT (ms)"),
        (pl.col("tpot_s") * 1e3).alias("TPOT (ms)"),
        pl.col("flags").list.join("; ").alias("flags"),
    ]
    return cmp.select(cols)


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Neutralise cells a spreadsheet would run as a formula (= + - @ at the start)."""
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype == pl.String:
            exprs.append(
                pl.when(pl.col(name).str.contains(r"^[=+\-@\t\r]")).then(pl.lit("'") + pl.col(name)).otherwise(pl.col(name)).alias(name)
            )
        elif isinstance(dtype, pl.List):
            exprs.append(pl.col(name).cast(pl.List(pl.String)).list.join("; ").alias(name))
    return frame.with_columns(exprs) if exprs else frame


def prices_display(prices: pl.DataFrame, gpu_ids: list[str], kind: str, names: dict[str, str], rates: str = "on-demand") -> pl.DataFrame:
    """Every published price of one kind for the accelerators given, in their order, oldest last within one, with what it
    is (its basis), whether the median uses it (core.catalogue.prices.chosen_prices) and its source."""
    order = {g: i for i, g in enumerate(gpu_ids)}
    rows = prices.filter(pl.col("gpu").is_in(gpu_ids) & (pl.col("kind") == kind))
    used = [chosen_prices(prices, g, kind, rates)[0] for g in dict.fromkeys(gpu_ids)]
    counted = pl.concat(used).select("gpu", "provider", "offer", "usd").with_columns(pl.lit(True).alias("in median")) if used else None
    if counted is not None and counted.height:
        rows = rows.join(counted, on=["gpu", "provider", "offer", "usd"], how="left", nulls_equal=True)
    else:
        rows = rows.with_columns(pl.lit(None, dtype=pl.Boolean).alias("in median"))
    unit = "$ per GPU-hour" if kind == "rent" else "$ per GPU"
    return rows.sort(pl.col("gpu").replace_strict(order, return_dtype=pl.Int64), pl.col("as_of"), descending=[False, True]).select(
        pl.col("gpu").replace_strict(names, default=pl.col("gpu")).alias("accelerator"),
        pl.col("usd").alias(unit),
        pl.col("basis").alias("what it is"),
        pl.col("in median").fill_null(False),
        "provider",
        "offer",
        pl.when(pl.col("region") != "").then(pl.col("region")).alias("region"),  # none stated: a dash, not a blank
        pl.when(pl.col("as_of") != "").then(pl.col("as_of")).otherwise(pl.lit("undated")).alias("as of"),
        pl.col("source_url").alias("source"),
        "note",
    )


#: Significant digits a download keeps: full precision, without float noise (157.3, not 157.29999999999998).
CSV_DIGITS = 12
_FLOATS = (pl.Float32, pl.Float64)


def _floats(frame: pl.DataFrame) -> list[str]:
    return [name for name, dtype in frame.schema.items() if dtype in _FLOATS]


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as a CSV download holds it: floats to CSV_DIGITS significant digits (no float noise), NaN empty, no formulas."""
    exprs = [pl.col(n).cast(pl.Float64).fill_nan(None).round_sig_figs(CSV_DIGITS).alias(n) for n in _floats(frame)]
    return csv_safe(frame.with_columns(exprs) if exprs else frame)


def number_format(values: pl.Series, digits: int = 3) -> str:
    """A printf format for a Streamlit NumberColumn writing this column as people write numbers.

    Streamlit's sprintf writes "%,.3g" as the number rounded to 3 significant figures, with thousands
    separators and without trailing zeros or an exponent at ordinary magnitudes (116.6667 -> "117",
    4.6429 -> "4.64", 1530.0 -> "1,530", 0.00819 -> "0.00819", 12346.7 -> "12,300"). A column of whole
    numbers (GB on the GPUs, a count stored as a float) keeps every digit: "%,.0f" (1,128, not 1,130).
    The data keeps full precision: sorting, AppTests and downloads see the exact values.
    """
    return number_formats(pl.DataFrame({"v": values.cast(pl.Float64)}), digits)["v"]


def number_formats(frame: pl.DataFrame, digits: int = 3) -> dict[str, str]:
    """number_format of every float column of `frame`, in one pass over the frame (a table is drawn on every rerun)."""
    names = _floats(frame)
    if not names:
        return {}
    whole = frame.select(_all_whole(n) for n in names).row(0, named=True)
    return {n: "%,.0f" if whole[n] else f"%,.{digits}g" for n in names}


def _all_whole(name: str) -> pl.Expr:
    """True when the column has a finite value and every finite value is a whole number."""
    values = pl.col(name).cast(pl.Float64).fill_nan(None)
    finite = values.filter(values.is_finite())
    return ((finite.len() > 0) & (finite == finite.round(0)).all()).alias(name)


#: Glide's text metrics at Streamlit's 14 px font, for `table_width`: about 7.5 px a character, 16 px padding a cell,
#: and a header's sort/menu affordance; a column is never narrower than 50 px nor wider than 500 px.
_CHAR_PX, _CELL_PAD_PX, _HEADER_EXTRA_PX, _MIN_COL_PX, _MAX_COL_PX = 7.5, 16, 10, 50, 500


def table_width(frame: pl.DataFrame, rows: int = 200) -> int:
    """About how wide (px) Streamlit's grid draws `frame`, each column sized to its header and its widest cell as shown.

    An estimate from the first `rows` rows, for deciding whether to say the table scrolls sideways; the browser
    test measures the real thing.
    """
    total = 0.0
    for name in frame.columns:
        col = frame[name].head(rows)
        if col.dtype in _FLOATS:
            cells = [sig(v, 3) for v in col.drop_nulls().to_list()]
        elif col.dtype.is_integer():
            cells = [f"{v:,}" for v in col.drop_nulls().to_list()]
        elif col.dtype == pl.Boolean:
            cells = ["xx"]
        else:
            cells = [str(v) for v in col.drop_nulls().to_list()]
        longest = max((len(c) for c in cells), default=1)
        width = max(len(name) * _CHAR_PX + _HEADER_EXTRA_PX, longest * _CHAR_PX) + _CELL_PAD_PX
        total += min(_MAX_COL_PX, max(_MIN_COL_PX, width))
    return round(total)
