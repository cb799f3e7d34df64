"""A click made on a page that showed other entries never acts on another one (issue 32): the catalogue's custom entries."""

from __future__ import annotations

from core.catalogue.catalogue import add_custom_accelerator, load_catalogue
from core.catalogue.seed import accelerator_from_row
from core.present.text import escape_markdown
from core.store import get_store
from tests.helpers import custom_gpu_row


def _chip(i: str) -> object:
    return accelerator_from_row(custom_gpu_row(id=f"chip-{i}", name=f"Chip {i}", sources="user-entered"))


def _custom(db) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(g for g, a in load_catalogue(get_store(db)).accelerators.items() if a.custom)


def test_a_delete_after_the_list_changed_deletes_the_entry_chosen(open_page, own_store):
    """The session picks entry 3 of 4 (chip-c); another process adds chip-0, which sorts before it; the session presses
    Delete: chip-c is deleted, not the first entry."""
    store = get_store(own_store)
    for i in "abcd":
        add_custom_accelerator(store, _chip(i))
    at = open_page("catalogue")
    at.selectbox(key="cat_custom_pick").set_value("accelerator:chip-c").run()
    add_custom_accelerator(store, _chip("0"))  # another process, meanwhile
    at.button(key="cat_delete_accelerator:chip-c").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _custom(own_store) == ["chip-0", "chip-a", "chip-b", "chip-d"]
    assert any(escape_markdown("Deleted the custom accelerator chip-c") in s.value for s in at.success)


def test_a_stale_delete_of_an_entry_gone_deletes_nothing(open_page, own_store):
    store = get_store(own_store)
    for i in "ab":
        add_custom_accelerator(store, _chip(i))
    one, two = open_page("catalogue"), open_page("catalogue")
    for at in (one, two):
        at.selectbox(key="cat_custom_pick").set_value("accelerator:chip-b").run()
    one.button(key="cat_delete_accelerator:chip-b").click().run()
    two.button(key="cat_delete_accelerator:chip-b").click().run()
    assert not two.exception, [e.value for e in two.exception]
    assert _custom(own_store) == ["chip-a"]  # the second click deleted nothing
    assert any("chip" in w.value and "no longer stored" in w.value for w in two.warning)
