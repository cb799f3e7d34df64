"""Which page owns which link parameter, the scenario a page's widgets say, and links from older versions.

Every control that a shared link should carry is a widget bound to the
query parameter of its key (`bind="query-params"`): Streamlit seeds it from
the link, writes it back as it changes and leaves defaults out. LINKS says,
for every such key, which pages draw its widget (the sidebar's are every
page's) and how links written by earlier versions spelled it; `scenario()`
builds a page's Scenario from the widgets it owns, so a calculator option
never leaks into the roofline.

Streamlit writes a selection as its label, so a link names an accelerator
or a model by its name ("NVIDIA H100 SXM5 80GB"); `open_link` still accepts
the ids older links and the CLI use (`gpu=h100-sxm`), comma-separated lists
and `present=1`, rewriting such a link once, and names what it cannot use.
A refit of the predicted model on the user's own measurements is the one
parameter written by hand (`refit`): it comes from a fit, not from a widget.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.catalogue.catalogue import Catalogue, UnknownIdError
from core.catalogue.reference import METRICS
from core.model.scenario import FIELDS, Scenario, default, param
from core.plan.compare_request import link_keys, shown_labels
from core.present.text import escape_markdown

EVERY = "*"
#: the scorecard's metrics as its picker shows (and a link spells) them
METRIC_LABELS = {m: f"{m}: {what}" for m, (what, _) in METRICS.items()}
#: the measured page's two views, as its radio shows (and a link spells) them
MEASURED_VIEWS = {"published": "Published measurements", "yours": "Your datasets", "runs": "Compare runs"}
#: the compare page's two views, as its radio shows (and a link spells) them
COMPARE_VIEWS = {"group": "One scale-up group", "deploy": "Deployments at a request rate"}
#: the deployments' serving modes, as their picker shows (and a link spells) them
DEPLOY_MODES = {"aggregated": "Aggregated", "disaggregated": "Disaggregated"}
AUTO = "auto"  # how the compute picker shows (and a link spells) "the weights' default"
#: the compare request's link keys (field -> key) and the labels its controls show (key -> value -> label)
REQUEST_KEYS = link_keys()
REQUEST_LABELS = shown_labels()


@dataclass(frozen=True)
class Link:
    """One link parameter: the key of its widget, the pages that draw it, and how older links wrote it."""

    key: str
    pages: tuple[str, ...]  # url paths of the pages whose widget it is; EVERY for the sidebar's
    picks: str | None = None  # "accelerator" or "model": its options are catalogue ids, shown (and linked) by name
    many: bool = False  # a list (repeated in the link; older links separated the items by commas)
    toggle: bool = False  # older links wrote 1 and 0
    older: tuple[str, ...] = ()  # names older links used
    shown: Mapping[Any, str] | None = None  # option -> its label, where the control shows (and links) a label


LINKS: tuple[Link, ...] = (
    Link("gpu", (EVERY,), picks="accelerator"),
    Link("num_gpus", (EVERY,)),
    Link("model", (EVERY,), picks="model"),
    Link("weights", (EVERY,)),
    Link("kv", (EVERY,)),
    Link("compute", (EVERY,), shown={None: AUTO}),
    Link("batch", (EVERY,)),
    Link("context", (EVERY,)),
    Link("prompt", (EVERY,)),
    Link("framework", (EVERY,)),
    Link("present", (EVERY,), toggle=True),
    Link("measured", (EVERY,), toggle=True),
    Link("rf_compare", ("roofline",), picks="accelerator", many=True, older=("compare",)),
    Link("rf_precisions", ("roofline",), many=True),
    Link("eff_bandwidth", ("roofline", "calculator"), older=("rf_eff_b",)),
    Link("eff_compute", ("roofline", "calculator"), older=("rf_eff_c",)),
    Link("rd_precision", ("ridges",)),
    Link("rd_vendor", ("ridges",), many=True),
    Link("rd_form", ("ridges",), many=True),
    Link("rd_year", ("ridges",), many=True),
    Link("tour_step", ("tour",)),
    Link("spec_draft_len", ("calculator",)),
    Link("spec_acceptance", ("calculator",)),
    Link("spec_draft_model", ("calculator",), picks="model"),
    Link("overhead_ms", ("calculator",)),
    Link("reserve_pct", ("calculator",)),
    Link("usd_per_gpu_hour", ("calculator",)),
    Link("cmp_gpus", ("compare",), picks="accelerator", many=True),
    Link("cmp_view", ("compare",), shown=COMPARE_VIEWS),
    Link("dp_rate", ("compare",)),
    Link("dp_prompt", ("compare",)),
    Link("dp_output", ("compare",)),
    Link("dp_ttft", ("compare",)),
    Link("dp_tpot", ("compare",)),
    Link("dp_prefix", ("compare",)),
    Link("dp_modes", ("compare",), many=True, shown=DEPLOY_MODES),
    Link("dp_prefill_gpu", ("compare",), picks="accelerator"),
    Link("dp_max_gpus", ("compare",)),
    Link("dp_max_pool", ("compare",)),
    Link("dp_kwh", ("compare",)),
    Link("dp_pue", ("compare",)),
    # the one-group comparison's controls, from their declaration (core.plan.compare_request.CompareRequest)
    *(Link(key, ("compare",), shown=REQUEST_LABELS.get(key)) for key in REQUEST_KEYS.values()),
    Link("sw_gpus", ("sweep",), picks="accelerator", many=True),
    Link("sw_models", ("sweep",), picks="model", many=True),
    Link("sw_weights", ("sweep",), many=True),
    Link("sw_batches", ("sweep",), many=True),
    Link("sw_contexts", ("sweep",), many=True),
    Link("sw_counts", ("sweep",), many=True),
    Link("sw_at_batch", ("sweep",)),
    Link("sw_tpot", ("sweep",)),
    Link("sw_ttft", ("sweep",)),
    Link("sw_total", ("sweep",)),
    Link("sw_bound", ("sweep",)),
    Link("sw_fits", ("sweep",), toggle=True),
    Link("sw_domain", ("sweep",), toggle=True),
    Link("ms_refit", ("measured",), toggle=True, older=("ms_calibrate",)),
    Link("ms_view", ("measured",), shown=MEASURED_VIEWS),
    Link("ms_dataset", ("measured",)),
    Link("ms_runs", ("measured",), many=True),
    Link("cat_tab", ("catalogue",)),
    Link("cat_gpu_search", ("catalogue",)),
    Link("cat_gpu_vendor", ("catalogue",), many=True),
    Link("cat_gpu_form", ("catalogue",), many=True),
    Link("cat_model_search", ("catalogue",)),
    Link("cat_model_attn", ("catalogue",), many=True),
    Link("ms_ref_gpus", ("measured",), picks="accelerator", many=True),
    Link("ms_ref_models", ("measured",), picks="model", many=True),
    Link("ms_ref_frameworks", ("measured",), many=True),
    Link("ms_ref_publishers", ("measured",), many=True),
    Link("ms_sc_metric", ("measured",), shown=METRIC_LABELS),
)
BY_KEY = {link.key: link for link in LINKS}
REFIT = "refit"  # the refit's shifts, per accelerator and framework (core.evidence.refit.shift_text)
CAL = "cal"  # an older link's calibrated factors: no longer read (said so)


def key_of(name: str) -> str:
    """The widget key (and link parameter) of a Scenario field."""
    return param(name).key or name


def owned(key: str, page: str) -> bool:
    """Whether `page` draws the widget of `key` (the sidebar draws its own on every page)."""
    pages = BY_KEY[key].pages
    return EVERY in pages or page in pages


def labels(cat: Catalogue, kind: str) -> dict[str, str]:
    """id -> the label a picker shows, and a link carries, for accelerators or models."""
    if kind == "accelerator":
        return {g: acc.name for g, acc in cat.accelerators.items()}
    return {m: rec.name for m, rec in cat.records.items()}


# -- the page's scenario ---------------------------------------------------------


def current_page() -> str:
    """The url path of the page being drawn (set by streamlit_app.py before it runs the page)."""
    return str(st.session_state.get("_page", "overview"))


def scenario(**fixed: Any) -> Scenario:
    """The Scenario of the widgets this page and the sidebar draw (every other field at its default); `fixed` values win."""
    page, values = current_page(), {}
    for name in FIELDS:
        key = key_of(name)
        if key in BY_KEY and owned(key, page) and key in st.session_state:
            value = st.session_state[key]
            values[name] = value * param(name).scale if param(name).scale != 1 and value is not None else value
    values.update(fixed)
    return Scenario.model_validate(values)


def presenting() -> bool:
    """Whether presentation mode is on (pages fold their controls away and enlarge their charts)."""
    return bool(st.session_state.get("present"))


# -- the sidebar's scenario across a page switch ----------------------------------------

#: The sidebar's link keys (drawn on every page).
SIDEBAR_KEYS = tuple(link.key for link in LINKS if EVERY in link.pages)
_HELD = "_sidebar_held"


def _widget_default(key: str) -> Any:
    field = next((name for name in FIELDS if key_of(name) == key), None)
    return default(field) if field else False


def hold_sidebar() -> None:
    """After the sidebar is drawn: remember its values and the page they were drawn on."""
    values = {key: st.session_state[key] for key in SIDEBAR_KEYS if key in st.session_state}
    st.session_state[_HELD] = {"page": current_page(), "values": values}


def restore_sidebar(cat: Catalogue) -> None:
    """Before the sidebar is drawn on a page just switched to: put back what the last page's sidebar held.

    A page switch clicked while the last page was still running can reach
    Streamlit with a sidebar value dropped from the link, or reset to its
    default (seen in CI: batch kept, model back to the default). Nothing in
    the sidebar changes on a page switch, so a value that differs from the
    one held, or a held value the link lacks, is set again; setting it also
    makes Streamlit write it back into the link. Browser history navigation
    still wins: Streamlit lets the restored link's values override these.
    An accelerator or model deleted meanwhile is not put back.
    """
    held = st.session_state.get(_HELD)
    if not held or held["page"] == current_page():
        return
    for key, value in held["values"].items():
        if BY_KEY[key].picks and value not in labels(cat, BY_KEY[key].picks):
            continue
        lost = value != _widget_default(key) and not st.query_params.get_all(key)
        if st.session_state.get(key) != value or lost:
            st.session_state[key] = value


# -- the refit on your own measurements ----------------------------------------------------------


def set_refit(text: str, source: str) -> None:
    """Offer a refit (core.evidence.refit.shift_text) to every page; the sidebar switches it on."""
    st.session_state["refit"] = {"text": text, "source": source}


def refit_on() -> dict[str, str] | None:
    """The refit in use ({"text", "source"}), or None when there is none or it is switched off."""
    held = st.session_state.get("refit")
    return held if held and st.session_state.get("use_refit") else None


def write_refit() -> None:
    """Keep the refit in the link while it is on."""
    held = refit_on()
    if held:
        st.query_params[REFIT] = held["text"]
    elif REFIT in st.query_params:
        del st.query_params[REFIT]


# -- links --------------------------------------------------------------------------


def open_link(cat: Catalogue, page: Any, *, move: bool = False) -> None:
    """On a session's first run: rewrite a link in an older form once (reloading the page), and note what it cannot use.

    Accelerators and models given by id become their names, comma lists
    become repeated parameters, 1/0 become true/false, renamed parameters get
    their new names; an id the catalogue lacks is dropped with a message
    naming the closest ones. Values a widget refuses (out of range, not an
    option) are noted after the page has run (`note_refused_values`).
    """
    if st.session_state.get("_link_opened"):
        return
    st.session_state["_link_opened"] = True
    given = {k: st.query_params.get_all(k) for k in st.query_params}
    current, messages = _current_form(cat, given)
    if REFIT in current:
        set_refit(current[REFIT][-1], "the shared link")
        st.session_state["use_refit"] = True
    if CAL in current:
        messages.append(
            "link parameter cal= is a calibration of an earlier version, which the predicted model replaces; ignored "
            "(refit your dataset on the Measured vs predicted page)"
        )
        del current[CAL]
    st.session_state["_link_messages"] = messages
    st.session_state["_link_given"] = current  # compared with what the widgets took, after the first run
    if current != given or move:  # one switch, to `page` (move: the link's address is another page's)
        st.switch_page(page, query_params=current)


def _current_form(cat: Catalogue, given: dict[str, list[str]]) -> tuple[dict[str, list[str]], list[str]]:
    older = {name: link for link in LINKS for name in link.older}
    out: dict[str, list[str]] = {}
    messages: list[str] = []
    for name, values in given.items():
        link = BY_KEY.get(name) or older.get(name)
        if link is None:
            out[name] = values
            continue
        if link.many and len(values) == 1 and "," in values[0] and not (link.picks and values[0] in labels(cat, link.picks).values()):
            values = [v for v in values[0].split(",") if v]
        if link.toggle:
            values = [{"1": "true", "0": "false"}.get(v, v) for v in values]
        unfinite = [v for v in values if _not_finite(v)]
        if unfinite:  # inf, nan, 1e309: no control takes them (a number input would raise on them)
            messages.append(f"link parameter {name}={_shown(unfinite[0])} is not a finite number; ignored")
            values = [v for v in values if v not in unfinite]
        if link.picks:
            names = labels(cat, link.picks)
            kept, unknown = [], []
            for v in values:
                if v in names.values():
                    kept.append(v)
                elif v in names:
                    kept.append(names[v])
                else:
                    unknown.append(v)
            if len(unknown) == 1:
                v = unknown[0]
                close = UnknownIdError(link.picks, v, list(names)).suggestions if len(v) <= MAX_ID else []
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                messages.append(f"link parameter {name}={_shown(v)} is not in the catalogue{hint}; ignored")
            elif unknown:  # one line for them all, however many
                some = ", ".join(_shown(v) for v in unknown[:3])
                messages.append(f"link parameter {name}: {len(unknown):,} values are not in the catalogue ({some} ...); ignored")
            values = kept
        if values:
            out[link.key] = values
    return out, messages


#: The longest id a link's value is matched against for suggestions (a longer one is cut when named).
MAX_ID = 120


def _shown(value: str) -> str:
    """A link's value as a message names it: quoted, and cut with its length where it is long."""
    return repr(value) if len(value) <= MAX_ID else f"{value[:40]!r}… ({len(value):,} characters)"


def _not_finite(value: str) -> bool:
    try:
        return not math.isfinite(float(value))
    except ValueError:
        return False


def note_refused_values(cat: Catalogue) -> list[str]:
    """After the first run of a session: the link's values a widget did not take (dropped or corrected).

    They join the link's messages (shown in the sidebar for the session); the
    new ones are returned, escaped for markdown, to show at once.
    """
    given = st.session_state.pop("_link_given", None)
    if given is None:
        return []
    messages = []
    for key, values in given.items():
        if key not in BY_KEY or not owned(key, current_page()):
            continue
        now = st.query_params.get_all(key)
        if not _same(now, values) and not (not now and _same(_as_link(cat, key), values)):
            using = f"using {', '.join(now)}" if now else "using the default"
            messages.append(f"link parameter {key}={_shown(', '.join(values))} is not a value this control takes; {using}")
    st.session_state["_link_messages"] = [*st.session_state.get("_link_messages", []), *messages]
    return [escape_markdown(m) for m in messages]


def _as_link(cat: Catalogue, key: str) -> list[str]:
    """The widget's current value as a link would spell it."""
    value = st.session_state.get(key)
    items = list(value) if isinstance(value, list | tuple) else [value]
    link = BY_KEY[key]
    names = labels(cat, link.picks) if link.picks else dict(link.shown or {})
    return [names.get(v, str(v).lower() if isinstance(v, bool) else str(v)) for v in items]


def _same(a: list[str], b: list[str]) -> bool:
    """Two link values alike (numbers compared as numbers: 1 and 1.0 are the same)."""

    def number(text: str) -> float | str:
        try:
            return float(text)
        except ValueError:
            return text

    return len(a) == len(b) and all(x == y or number(x) == number(y) for x, y in zip(a, b, strict=True))


def share_link(cat: Catalogue) -> str:
    """The link that reproduces this view: this page and every parameter it carries.

    Accelerators and models are written by id (as the CLI names them): ids
    stay when a display name is edited, and `open_link` reads them.
    """
    base = str(getattr(st.context, "url", "") or "").split("?")[0]
    pairs = []
    for key in st.query_params:
        picks = BY_KEY[key].picks if key in BY_KEY else None
        ids = {name: i for i, name in labels(cat, picks).items()} if picks else {}
        pairs += [(key, ids.get(v, v)) for v in st.query_params.get_all(key)]
    return f"{base}?{urllib.parse.urlencode(pairs)}" if pairs else base


def link_messages() -> list[str]:
    """What the link that opened this session could not use (escaped for markdown)."""
    return [escape_markdown(m) for m in st.session_state.get("_link_messages", [])]
