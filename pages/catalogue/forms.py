"""Forms of the catalogue page: add a custom accelerator or model, delete custom entries."""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from core.catalogue.catalogue import add_custom_accelerator, add_custom_model, delete_custom
from core.catalogue.model_config import ConfigError, slugify
from core.catalogue.seed import CatalogueError, accelerator_from_row, field_type
from core.catalogue.specs import accelerator_columns
from core.evidence.matching import NoMatchError
from core.evidence.probes import ProbeFileError, delete_profile, import_probe, measured_line
from core.present.tables import profiles_display
from core.present.text import escape_markdown
from core.store import ReadOnlyError, StoreError
from pages.shared.data import catalogue, store


def custom_accelerator_form() -> None:
    """A form with one input per accelerator field, in its datasheet unit; validated before anything is stored."""
    st.subheader("Custom accelerator")
    row: dict[str, Any] = {"form_factor": "custom", "notes": "user-entered", "custom": True}
    with st.form("custom_gpu", clear_on_submit=False):
        cols = st.columns(3)
        for i, (name, col) in enumerate(c for c in accelerator_columns().items() if c[1].form):
            where = cols[i % 3] if name.startswith("peak_") else st
            row[name] = _field_input(name, col, where)
        submitted = st.form_submit_button("Add accelerator", icon=":material/add:")
    if submitted:
        row["id"] = slugify(row.get("name") or "custom")
        row["vendor"] = row.get("vendor") or "custom"
        row["sources"] = row.get("sources") or "user-entered"
        try:
            acc = accelerator_from_row(row)
            add_custom_accelerator(store(), acc)
        except (CatalogueError, StoreError, ValidationError) as exc:
            st.error(f"Not added: {escape_markdown(str(exc))}", icon=":material/error:")
        else:
            st.success(f"Added {escape_markdown(acc.name)} as `{acc.id}`.", icon=":material/check_circle:")


def _field_input(name: str, col: Any, where: Any) -> Any:
    """One field's input in its reading unit; returns the SI value (None for an empty or zero figure)."""
    label = col.heading()
    if field_type(name) is str or field_type(name) is list:
        text = where.text_input(label, value=str(col.example or ""), key=f"custom_{name}", help=col.doc)
        return text.strip() or None
    if field_type(name) is int:
        value = where.number_input(label, 0, 10_000, int(col.example or 0), key=f"custom_{name}", help=f"{col.doc}; 0 = unknown.")
        return value or None
    value = where.number_input(
        label, 0.0, 1e6, float(col.example or 0.0), key=f"custom_{name}", help=f"{col.doc}; 0 = unknown or unsupported."
    )
    return value * col.scale if value > 0 else None


def custom_model_form() -> None:
    """Upload or paste a Hugging Face config.json; refused with the field named if it is incomplete."""
    st.subheader("Custom model")
    with st.form("custom_model", clear_on_submit=False):
        name = st.text_input("Name", placeholder="My fine-tune 8B", help="Display name; the id is derived from it.")
        upload = st.file_uploader("config.json", type=["json"], help="The model's Hugging Face config.json.")
        pasted = st.text_area("…or paste config.json", height=150, help="Used when no file is uploaded.")
        submitted = st.form_submit_button("Add model", icon=":material/add:")
    if submitted:
        text = upload.getvalue().decode("utf-8", errors="replace") if upload is not None else pasted
        if not name.strip():
            st.error("Not added: name is empty.", icon=":material/error:")
        elif not text.strip():
            st.error("Not added: upload a config.json or paste its text.", icon=":material/error:")
        else:
            try:
                rec = add_custom_model(store(), text, model_id=slugify(name), name=name.strip())
            except (ConfigError, CatalogueError, StoreError) as exc:
                st.error(f"Not added: config.json {escape_markdown(str(exc))}", icon=":material/error:")
            else:
                st.success(
                    f"Added {escape_markdown(rec.name)} as `{rec.id}` ({rec.num_layers} layers, hidden {rec.hidden_size}).",
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
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Entry", custom, format_func=lambda kv: f"{kv[0]}: {kv[1]}", help="A custom accelerator or model.")
    if c2.button("Delete", icon=":material/delete:", disabled=store().read_only, help="Remove this entry from the store."):
        delete_custom(store(), choice[0], choice[1])
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
        "Delete profile", icon=":material/delete:", disabled=store().read_only, key="probe_delete", help="Remove this measured profile."
    ):
        delete_profile(store(), int(pick))
        st.rerun()
