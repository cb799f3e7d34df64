"""What the tests share, in one place: the checkout's folders and the command line run in this process."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SEED = ROOT / "data" / "seed"
APP = ROOT / "streamlit_app.py"

# -- the command line, in this process ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit status and what it wrote (as subprocess.CompletedProcess names them)."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout as JSON, the command having succeeded."""
        assert self.returncode == 0, self.stderr
        return json.loads(self.stdout)


def roofline(capsys: Any, *args: str) -> Ran:
    """`roofline ARGS` run in this process (core.cli.main, as the installed command calls it): the exit status (an
    argparse error's too) and stdout and stderr as captured by pytest's `capsys`."""
    from core.cli import main

    capsys.readouterr()  # what came before is not the command's
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse refuses an option with sys.exit(2)
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return Ran(code, out, err)
