"""The ROOFLINE_* variables (core/settings.py): defaults, empty as unset, a malformed value named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import Settings, SettingsError, settings, user_data_dir
from core.store.files import SharedFile
from core.store.paths import IN_CHECKOUT, StoreError, default_db_path, read_only_from_env
from tests.helpers import ROOT, roofline

VARIABLES = ("ROOFLINE_DB", "ROOFLINE_READ_ONLY", "ROOFLINE_BUSY_TIMEOUT", "ROOFLINE_HOLD_S", "ROOFLINE_SVG_CHARTS")


@pytest.fixture
def clean_env(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_every_setting_is_a_roofline_variable_and_has_its_documented_default(clean_env):
    s = settings()
    assert (s.db, s.read_only, s.busy_timeout, s.hold_s, s.svg_charts) == (None, False, 10.0, 0.25, False)
    assert sorted(f"ROOFLINE_{name.upper()}" for name in Settings.model_fields) == sorted(VARIABLES)
    assert all(field.description for field in Settings.model_fields.values())


def test_values_are_read_when_asked_for_and_an_empty_one_counts_as_unset(clean_env, tmp_path):
    clean_env.setenv("ROOFLINE_DB", str(tmp_path / "x.duckdb"))
    clean_env.setenv("ROOFLINE_READ_ONLY", "yes")
    clean_env.setenv("ROOFLINE_BUSY_TIMEOUT", "2.5")
    clean_env.setenv("ROOFLINE_HOLD_S", "")
    assert default_db_path() == tmp_path / "x.duckdb"
    assert read_only_from_env() is True
    file = SharedFile(tmp_path / "x.duckdb", read_only=False)
    assert (file.busy_timeout, file.hold_s) == (2.5, 0.25)
    clean_env.setenv("ROOFLINE_READ_ONLY", "off")
    assert read_only_from_env() is False


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("ROOFLINE_BUSY_TIMEOUT", "ten", "ROOFLINE_BUSY_TIMEOUT='ten'"),
        ("ROOFLINE_BUSY_TIMEOUT", "-1", "greater than 0"),
        ("ROOFLINE_HOLD_S", "1e9", "ROOFLINE_HOLD_S='1e9'"),
        ("ROOFLINE_READ_ONLY", "maybe", "ROOFLINE_READ_ONLY='maybe'"),
    ],
)
def test_a_malformed_value_is_one_message_naming_the_variable(clean_env, tmp_path, name, value, said):
    clean_env.setenv(name, value)
    with pytest.raises(SettingsError, match="bad environment setting") as raised:
        settings()
    assert said in str(raised.value)
    with pytest.raises(StoreError, match=name):  # the store says it as its own error: one line in the CLI and on a page
        SharedFile(tmp_path / "x.duckdb", read_only=False)
        read_only_from_env()


def test_the_cli_says_a_malformed_setting_in_one_line_and_writes_nothing(clean_env, tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    clean_env.setenv("ROOFLINE_BUSY_TIMEOUT", "soon")
    ran = roofline(capsys, "gpus", "--db", str(db), "--json")
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        "error: bad environment setting: ROOFLINE_BUSY_TIMEOUT='soon': Input should be a valid number, unable to parse string as a number"
    ]
    assert not db.exists()


def test_the_default_store_is_the_checkouts_file_or_the_users_data_folder(clean_env, tmp_path):
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert user_data_dir() == tmp_path / "share" / "roofline-explorer"  # platformdirs, as the store used before it
    expected = ROOT / "data" / "roofline.duckdb" if IN_CHECKOUT else tmp_path / "share" / "roofline-explorer" / "roofline.duckdb"
    assert default_db_path() == expected
    assert isinstance(default_db_path(), Path)
