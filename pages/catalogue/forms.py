"""Forms of the catalogue page: add a custom accelerator or model, delete custom entries."""

from __future__ import annotations

import datetime as dt
from typing import Any

import streamlit as st

from core.catalogue.catalogue import add_custom_accelerator, add_custom_model, config_source, delete_custom
from core.catalogue.model_config import ConfigError, slugify
from core.catalogue.seed import FORM_WORDS, CatalogueError, accelerator_from_row, field_type
from core.catalogue.specs import Accelerator, accelerator_columns
from core.evidence.matching import NoMatchError
from core.evidence.probes import ProbeFileError, delete_profile, import_probe, measured_line
from core.present.tables import profiles_display
from core.present.text import escape_markdown
from core.store import ReadOnlyError, StoreError
from pages.shared.data import catalogue, store

#: The peaks' order on the form: the formats people look up first.
FORM_PEAKS = ("bf16", "fp8", "fp4", "fp16", "int8", "fp6", "tf32", "fp32", "int4")
#: Where each accelerator field goes in the form: the record's identity first, then memory, the peaks in a grid, the rest.
FORM_GROUPS = (("name", "vendor"), ("form_factor", "year"), ("memory_bytes", "bandwidth_bytes_per_s"))


def custom_accelerator_form() -> None:
    """A form with one input per accelerator field, in its datasheet unit; validated before anything is stored.

    Every problem is listed in the form's words (label, unit); nothing is stored unless all fields pass.
    """
    st.subheader("Custom accelerator")
    row: dict[str, Any] = {"form_factor": "custom", "notes": "user-entered", "custom": True}
    fields = {name: col for name, col in accelerator_columns().items() if col.form}
    with st.form("custom_gpu", clear_on_submit=False):
        placed: set[str] = set()
        for group in FORM_GROUPS:
            cols = st.columns(len(group))
            for where, name in zip(cols, group, strict=True):
                row[name] = _field_input(name, fields[name], where)
                placed.add(name)
        st.markdown("**Dense peaks** (leave 0 where the precision is unsupported; at least one is needed)")
        peaks = sorted((n for n in fields if n.startswith("peak_")), key=lambda n: _order(n.removeprefix("peak_")))
        cols = st.columns(3)
        for i, name in enumerate(peaks):
            row[name] = _field_input(name, fields[name], cols[i % 3])
            placed.add(name)
        rest = [n for n in fields if n not in placed]
        cols = st.columns(2)
        for i, name in enumerate(rest):
            row[name] = _field_input(name, fields[name], cols[i % 2] if name != "sources" else st)
        submitted = st.form_submit_button("Add accelerator", icon=":material/add:")
    if submitted:
        row["id"] = slugify(row.get("name") or "custom")
        row["vendor"] = row.get("vendor") or "custom"
        row["sources"] = row.get("sources") or "user-entered"
        try:
            acc = accelerator_from_row(row, FORM_WORDS)
            add_custom_accelerator(store(), acc)
        except CatalogueError as exc:
            _refused("Not added", exc.problems)
        except StoreError as exc:
            _refused("Not added", [str(exc)])
        else:
            year = f", {acc.year}" if acc.year else ", no year"
            st.success(f"Added {escape_markdown(acc.name)} as `{acc.id}`{year}.", icon=":material/check_circle:")


def _refused(what: str, problems: list[str]) -> None:
    """An error box listing every problem, in the user's words."""
    if len(problems) == 1:
        st.error(f"{what}: {escape_markdown(problems[0])}", icon=":material/error:")
    else:
        st.error(f"{what}:\n" + "\n".join(f"- {escape_markdown(p)}" for p in problems), icon=":material/error:")


def _field_input(name: str, col: Any, where: Any) -> Any:
    """One field's input in its reading unit; returns the SI value (None for an empty or zero figure)."""
    label = col.heading()
    if name == "year":  # text, so that it can be left empty (unknown); validated as a whole number from 2010 to 2030
        info = Accelerator.model_fields["year"]
        bounds = {type(m).__name__: m for m in info.metadata}
        first, last = bounds["Ge"].ge, bounds["Le"].le  # type: ignore[attr-defined]
        this_year = min(max(dt.date.today().year, first), last)
        text = where.text_input(
            label,
            value=str(this_year),
            key=f"custom_{name}",
            help=f"Year of release or announcement, {first} to {last} (default: this year). Leave it empty if unknown: the "
            "ridge page's year filter keeps accelerators without a year.",
        )
        return text.strip() or None
    if field_type(name) is str or field_type(name) is list:
        text = where.text_input(label, value=str(col.example or ""), key=f"custom_{name}", help=_capital(col.doc))
        return text.strip() or None
    if field_type(name) is int:
        value = where.number_input(label, 0, 10_000, int(col.example or 0), key=f"custom_{name}", help=f"{_capital(col.doc)}; 0 = unknown.")
        return value or None
    value = where.number_input(
        label,
        0.0,
        1e6,
        float(col.example or 0.0),
        key=f"custom_{name}",
        help=f"{_capital(col.doc)}; 0 = unknown or unsupported.",
        format="%.4g",
    )
    return value * col.scale if value else None


def _order(precision: str) -> int:
    return FORM_PEAKS.index(precision) if precision in FORM_PEAKS else len(FORM_PEAKS)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def custom_model_form() -> None:
    """Upload or paste a Hugging Face config.json; refused with the key named if it is incomplete.

    With both a file and pasted text, what the user changed since the last press is used, and the note says
    which; when both changed (or neither is new and nothing was chosen before) the form asks to remove one.
    A file removed from the uploader (×) is never used.
    """
    st.subheader("Custom model")
    with st.form("custom_model", clear_on_submit=False):
        name = st.text_input("Name", placeholder="My fine-tune 8B", help="Display name; the id is derived from it.")
        upload = st.file_uploader("config.json", type=["json"], help="The model's Hugging Face config.json.", key="cm_upload")
        pasted = st.text_area(
            "…or paste config.json",
            height=150,
            key="cm_pasted",
            help="Used when no file is uploaded. With both, the one you changed since the last press is used (and the note says "
            "which); remove the file with × to use the text.",
        )
        submitted = st.form_submit_button("Add model", icon=":material/add:")
    if not submitted:
        return
    last = st.session_state.get("cm_last", {})
    file_id = upload.file_id if upload is not None else None
    used, note = config_source(file_id, upload.name if upload is not None else "", pasted, last)
    st.session_state["cm_last"] = {"file": file_id, "text": pasted, "used": used}
    if not name.strip():
        _refused("Not added", ["Name is empty: give the model a name"])
        return
    if used is None:
        _refused("Not added", [note])
        return
    if note:
        st.info(escape_markdown(note), icon=":material/info:")
    if used == "file" and upload is not None:
        text, source = upload.getvalue().decode("utf-8", errors="replace"), upload.name
    else:
        text, source = pasted, "the pasted config.json"
    try:
        rec = add_custom_model(store(), text, model_id=slugify(name), name=name.strip(), source=source)
    except (ConfigError, CatalogueError) as exc:
        _refused("Not added", [str(exc)])
    except StoreError as exc:
        _refused("Not added", [str(exc)])
    else:
        origin = f"the uploaded {upload.name}" if used == "file" and upload is not None else "the pasted text"
        st.success(
            f"Added {escape_markdown(rec.name)} as `{rec.id}` from {escape_markdown(origin)} ({rec.num_layers} layers, "
            f"hidden size {rec.hidden_size:,}).",
            icon=":material/check_circle:",
        )


def delete_custom_form() -> None:
    """Delete one custom entry (reference rows cannot be deleted)."""
    cat = catalogue(datasheet=True)
    custom = [("accelerator", g) for g, a in cat.accelerators.items() if a.custom]
    custom += [("model", m) for m, r in cat.records.items() if r.custom]
    st.subheader("Your custom entries")
    if not custom:
        st.caption("None yet. Custom entries live in the store and survive restarts and reseeding.")
        return
    for line in st.session_state.pop("_cat_done", []):
        st.success(line, icon=":material/check:")
    c1, c2 = st.columns([3, 1])
    entries = {f"{kind}:{entry}": (kind, entry) for kind, entry in custom}
    was = st.session_state.get("cat_custom_pick")
    if was is not None and was not in entries:  # deleted meanwhile: said, and the picker does not act on another entry
        st.warning(f"The {was.replace(':', ' ', 1)} is no longer stored (deleted in this or another session).")
        del st.session_state["cat_custom_pick"]
    pick = c1.selectbox(
        "Entry",
        list(entries),
        format_func=lambda k: f"{entries[k][0]}: {entries[k][1]}",
        key="cat_custom_pick",  # keyed by the entry's id, so a list that changed keeps the choice on the same entry
        help="A custom accelerator or model.",
    )
    kind, entry = entries[pick]
    if c2.button(
        "Delete",
        icon=":material/delete:",
        key=f"cat_delete_{pick}",  # a click made while another entry was shown never deletes this one
        disabled=store().read_only,
        help=f"Remove the {kind} {entry} from the store.",
    ):
        now = catalogue(datasheet=True)
        still = entry in now.accelerators if kind == "accelerator" else entry in now.records
        if not still:
            st.warning(f"The {kind} {escape_markdown(entry)} is no longer stored (deleted in another session): nothing was deleted.")
            return
        delete_custom(store(), kind, entry)
        st.session_state["_cat_done"] = [f"Deleted the custom {kind} {escape_markdown(entry)}."]
        st.session_state.pop("cat_custom_pick", None)
        st.rerun()


AUTO_MATCH = "matched by the device's name"


def probe_form() -> None:
    """Import a probe document (python -m core.probe) as a measured profile; list and delete profiles."""
    cat = catalogue(datasheet=True)
    st.subheader("Measured profiles", help="Your accelerator's real roofs, measured by the probe, kept beside the datasheet figures.")
    st.markdown(
        "Measure this machine: `python -m core.probe --device cpu --out probe.json` (a GPU: `--device auto`, with "
        "`pip install -r requirements-probe.txt`), then import `probe.json` here or with `python -m core.cli import-probe probe.json`."
    )
    names = {g: a.name for g, a in cat.accelerators.items()}
    with st.form("probe_import", clear_on_submit=True):
        upload = st.file_uploader("Probe document (JSON)", type=["json"], help="The file python -m core.probe --out FILE wrote.")
        gpu = st.selectbox(
            "Accelerator it measured",
            [AUTO_MATCH, *names],
            format_func=lambda g: names.get(g, g),
            help="Matched by the device's name when left as is; a device the catalogue lacks becomes a custom accelerator.",
        )
        submitted = st.form_submit_button("Import probe", icon=":material/upload:")
    if submitted:
        if upload is None:
            st.error("Not imported: choose a probe document first.", icon=":material/error:")
        else:
            try:
                done = import_probe(store(), upload.getvalue(), upload.name, gpu=None if gpu == AUTO_MATCH else gpu)
            except (ProbeFileError, NoMatchError, ReadOnlyError, StoreError) as exc:
                st.error(f"Not imported: {escape_markdown(str(exc))}", icon=":material/error:")
            else:
                device = escape_markdown(done.document.device.name)
                if done.created:
                    text = f"Imported {device} as a new custom accelerator, `{done.accelerator_id}`, whose figures are the measured ones."
                else:
                    line = measured_line(catalogue(datasheet=True), done.accelerator_id) or ""
                    text = f"Imported {device} as a measured profile of `{done.accelerator_id}`: {line}."
                st.success(text, icon=":material/check_circle:")
    cat = catalogue(datasheet=True)  # with what was just imported
    if cat.profiles.is_empty():
        st.caption("No measured profile yet.")
        return
    shown = profiles_display(cat)
    st.dataframe(
        shown, hide_index=True, key="probe_table", column_config={"bandwidth (GB/s)": st.column_config.NumberColumn(format="%.1f")}
    )
    c1, c2 = st.columns([3, 1])
    label = {r["profile"]: f"{r['profile']} · {r['accelerator']} · probed {r['probed at'][:10]}" for r in shown.iter_rows(named=True)}
    pick = c1.selectbox(
        "Profile",
        list(label),
        format_func=label.__getitem__,
        key="probe_pick",
        help="Each accelerator's newest profile is listed and used; deleting it brings back the one before, if any.",
    )
    if c2.button(
        "Delete profile",
        icon=":material/delete:",
        disabled=store().read_only,
        key=f"probe_delete_{pick}",  # keyed by the profile's id: a stale click never deletes another profile
        help=f"Remove measured profile {pick}.",
    ):
        if int(pick) not in set(store().query("probe_profiles")["id"].to_list()):
            st.warning(f"Measured profile {pick} is no longer stored (deleted in another session): nothing was deleted.")
            return
        delete_profile(store(), int(pick))
        st.rerun()
