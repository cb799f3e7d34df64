"""Names a user gives (an accelerator's, a model's, a dataset's) are text on every page, never markdown (issue 32).

Every page is opened on a store whose custom accelerator, custom model and dataset are named with markdown a page could
render: a link, bold and a coloured span. Wherever Streamlit renders markdown (a body, a caption, an alert, a label, a
help text, a radio's options), the name must appear escaped: the raw link, bold and colour never do.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.catalogue.catalogue import add_custom_accelerator, add_custom_model
from core.catalogue.seed import accelerator_from_row
from core.evidence.importers import import_file
from core.store import get_store
from tests.helpers import FIXTURES, SEED

HOSTILE = "[phish](http://127.0.0.1:9/evil) **bold** :red[x]"
RAW = ("[phish](", "**bold**", ":red[")


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    from pages.shared import data

    mp = pytest.MonkeyPatch()
    db = tmp_path_factory.mktemp("hostile") / "h.duckdb"
    mp.setenv("ROOFLINE_DB", str(db))
    data.store.clear()
    store = get_store(db)
    row = {"id": "evil-chip", "name": "Chip " + HOSTILE, "vendor": "Me", "form_factor": "custom", "memory_bytes": 80e9}
    add_custom_accelerator(
        store, accelerator_from_row({**row, "bandwidth_bytes_per_s": 3e12, "peak_bf16": 9e14, "sources": "user-entered"})
    )
    config = (SEED / "models" / "llama-3.2-1b.json").read_text()
    add_custom_model(store, config, model_id="evil-model", name="Model " + HOSTILE)
    csv = (FIXTURES / "generic.csv").read_text()
    import_file(store, csv.encode(), "generic.csv", name="Dataset " + HOSTILE)
    yield db
    get_store(db).close()
    data.store.clear()
    mp.undo()


def _texts(node: Any) -> list[str]:
    """The markdown-rendered strings of an element tree: bodies, labels, help texts and a radio's options."""
    out: list[str] = []
    proto = getattr(node, "proto", None)
    if proto is not None and hasattr(proto, "DESCRIPTOR"):
        names = {f.name for f in proto.DESCRIPTOR.fields}
        for field in ("body", "label", "help", "caption"):
            if field in names and isinstance(getattr(proto, field), str):
                out.append(getattr(proto, field))
        if getattr(node, "type", "") == "radio" and "options" in names:
            out.extend(str(o) for o in proto.options)
    for child in getattr(node, "children", {}).values():
        out.extend(_texts(child))
    return out


PAGES = [
    ("home", {}),
    ("roofline", {"rf_compare": ["evil-chip", "h100-sxm"]}),
    ("ridges", {}),
    ("tour", {}),
    ("calculator", {}),
    ("compare", {"cmp_gpus": ["evil-chip", "h100-sxm"]}),
    ("sweep", {"sw_gpus": ["evil-chip", "h100-sxm"], "sw_models": ["evil-model", "llama-3.1-8b"]}),
    ("catalogue", {}),
    ("measured", {"ms_view": "Your datasets"}),
]


@pytest.mark.parametrize(("page", "extra"), PAGES, ids=[p for p, _ in PAGES])
def test_no_page_renders_a_users_name_as_markdown(open_page, hostile_store, page, extra):
    at = open_page(page, gpu="evil-chip", model="evil-model", batch="8", **extra)
    texts = _texts(at._tree)
    shown = [t for t in texts if "phish" in t]
    if page not in ("ridges", "catalogue"):  # these two show names only in tables and charts (text, not markdown)
        assert shown, f"{page}: the hostile name is not on the page, so the test would prove nothing"
    leaks = [t for t in shown if any(r in t for r in RAW)]
    assert leaks == [], f"{page}: a name rendered as markdown: {leaks[:3]}"
