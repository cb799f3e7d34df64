"""The store and the catalogue for the pages, and how Streamlit's caches key on them."""

from __future__ import annotations

import hashlib

import streamlit as st

from core.catalogue.catalogue import Catalogue, load_catalogue
from core.evidence.predictor import with_predictor
from core.evidence.refit import with_shift_text
from core.model.scenario import Scenario
from core.present.figures import RooflineView, roofline_view
from core.store import SessionStore, Store, get_store
from pages.shared.params import refit_on

#: hash_funcs for st.cache_data: a catalogue by its store and generation (a write makes a new one).
HASH_FUNCS = {Catalogue: lambda cat: cat.key}


@st.cache_resource(show_spinner="Opening the store…")
def store() -> Store:
    """The process-wide store (created from data/seed on first run)."""
    return get_store()


def dataset_store() -> Store | SessionStore:
    """Where the measured page reads and imports datasets.

    The store; in read-only mode (ROOFLINE_READ_ONLY=1) this browser
    session's own SessionStore over it: uploads live in the session's memory
    only, other sessions never see them and the file is never written.
    """
    base = store()
    if not base.read_only:
        return base
    held = st.session_state.get("session_store")
    if not isinstance(held, SessionStore) or held.base is not base:
        held = st.session_state["session_store"] = SessionStore(base)
    return held


def catalogue(*, datasheet: bool = False) -> Catalogue:
    """The catalogue, cached in core until the store changes.

    With the sidebar's *Measured roofs* switch on, profiled accelerators
    carry their measured bandwidth and peaks (Catalogue.measured); the
    roofline and the catalogue page ask for the `datasheet` one, since they
    show both.
    """
    cat = _predicting(load_catalogue(store()))
    held = refit_on()
    if held:  # the user's refit of their accelerators and frameworks on top of the shipped fit
        cat = _refitted(cat, held["text"])
    return cat.measured() if st.session_state.get("measured") and not datasheet else cat


def _refitted(cat: Catalogue, text: str) -> Catalogue:
    key = (cat.key, text)
    held = _REFITTED.get(key)
    if held is None:
        predictor, problems = with_shift_text(cat.predictor, text)
        for problem in problems:
            st.warning(problem, icon=":material/link_off:")
        held = with_predictor(cat, predictor, tag="refit:" + hashlib.sha256(text.encode()).hexdigest()[:12])
        _REFITTED.clear()
        _REFITTED[key] = held
    return held


_REFITTED: dict[tuple[str, str], Catalogue] = {}


def _predicting(cat: Catalogue) -> Catalogue:
    """The catalogue with the predicted model every page shows beside the ceiling: the shipped fit (kept per catalogue)."""
    held = _PREDICTING.get(cat.key)
    if held is None:
        held = with_predictor(cat)
        _PREDICTING.clear()
        _PREDICTING[cat.key] = held
    return held


_PREDICTING: dict[str, Catalogue] = {}


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=64, show_spinner=False)
def _roofline_view(cat: Catalogue, sc: Scenario, overlay: tuple[str, ...], precisions: tuple[str, ...]) -> RooflineView:
    return roofline_view(cat, sc, overlay, precisions)


def roofline_view_of(cat: Catalogue, sc: Scenario, overlay: tuple[str, ...] = (), precisions: tuple[str, ...] = ()) -> RooflineView:
    """The batch-independent part of a roofline (roofs, the batch sweep), cached under the scenario at batch 1, so
    every batch of one scenario shares one entry (core.present.figures.roofline_view ignores the batch)."""
    return _roofline_view(cat, sc.model_copy(update={"batch": 1}), overlay, precisions)
