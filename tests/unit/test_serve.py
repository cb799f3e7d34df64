"""serve.py sets three things inside Streamlit; each test fails when a Streamlit upgrade moves what it sets."""

from __future__ import annotations

import pytest
from streamlit import delta_generator, env_util, net_util
from streamlit.runtime.pages_manager import PagesManager


def test_the_flag_serve_sets_stops_streamlit_s_once_per_process_repl_check(monkeypatch):
    """With the flag set, the first element of a run no longer walks the stack to ask whether a REPL runs it."""

    def walked() -> bool:
        raise AssertionError("is_repl walked the stack")

    monkeypatch.setattr(env_util, "is_repl", walked)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    with pytest.raises(AssertionError, match="walked the stack"):
        delta_generator._maybe_print_use_warning()  # unset: the check runs (and would walk the stack)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", True)
    delta_generator._maybe_print_use_warning()  # set, as serve.py does: no check


def test_the_other_settings_serve_makes_are_still_streamlit_s():
    """The legacy pages/ detection switch and the external-address lookup serve.py turns off."""
    assert isinstance(PagesManager.uses_pages_directory, bool | None)
    assert callable(net_util.get_external_ip)
