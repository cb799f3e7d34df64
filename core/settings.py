"""The app's settings: every `ROOFLINE_*` environment variable, declared once.

Each field is read from `ROOFLINE_<NAME>` (an empty value counts as unset).
A value that does not parse is one `SettingsError` naming the variable, its
value and what it takes, never a traceback from deep inside the store. The
settings are read when asked for (`settings()`), so a process that sets a
variable before it opens the store, as the tests do, gets what it set.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

APP_NAME = "roofline-explorer"


class SettingsError(ValueError):
    """A `ROOFLINE_*` variable holds a value its setting cannot take; the message names it."""


class Settings(BaseSettings):
    """The environment's say in how the app and the CLI run (`ROOFLINE_<FIELD>`)."""

    model_config = SettingsConfigDict(env_prefix="ROOFLINE_", env_ignore_empty=True, extra="ignore", frozen=True)

    db: Path | None = Field(
        None,
        description="the DuckDB file (default: data/roofline.duckdb in a checkout, else the user's data folder)",
    )
    read_only: bool = Field(False, description="open the store read-only: nothing is saved (1, true, yes, on)")
    busy_timeout: float = Field(10.0, gt=0, le=3600, description="seconds to wait for another process holding the store before giving up")
    hold_s: float = Field(
        0.25, ge=0, le=60, description="seconds a process keeps the store open after its last operation (opening costs ~30 ms)"
    )
    svg_charts: bool = Field(False, description="draw the pages' charts as SVG (the in-app chart-text tests read them)")


def settings() -> Settings:
    """The settings as the environment gives them now; SettingsError naming the variable if one is malformed."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = f"ROOFLINE_{str(err['loc'][0]).upper()}" if err["loc"] else "ROOFLINE_*"
            problems.append(f"{name}={err.get('input')!r}: {err['msg']}")
        raise SettingsError("bad environment setting: " + "; ".join(problems)) from None


def user_data_dir() -> Path:
    """The per-user data folder (platformdirs; on Linux $XDG_DATA_HOME or ~/.local/share, then roofline-explorer)."""
    from platformdirs import user_data_path

    return user_data_path(APP_NAME, appauthor=False)
