"""The layers of core/ as ARCHITECTURE.md draws them, read from the code's own imports."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

#: package -> the core packages it may import (ARCHITECTURE.md, "The packages").
ALLOWED = {
    "settings": set(),
    "catalogue": set(),
    "probe": set(),
    "store": {"catalogue", "settings"},
    "model": {"catalogue"},
    "plan": {"catalogue", "model"},
    "evidence": {"catalogue", "model", "store", "probe"},
    "present": {"catalogue", "model", "plan", "evidence"},
    "cli": {"catalogue", "model", "evidence", "store", "plan", "present", "probe", "settings"},
}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names taken) of every import in a file, at any depth (TYPE_CHECKING and function-local ones too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [alias.name for alias in node.names]))
    return out


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT / "core").parts
    return parts[0] if len(parts) > 1 else path.stem


def test_core_imports_run_downwards_only_and_never_streamlit():
    wrong = []
    for path in (ROOT / "core").rglob("*.py"):
        if path.name == "__init__.py" and path.parent == ROOT / "core":
            continue
        own = _package(path)
        for module, _ in _imports(path):
            top = module.split(".")[0]
            if top == "streamlit":
                wrong.append(f"{path.relative_to(ROOT)} imports streamlit")
            if top == "core" and "." in module:
                other = module.split(".")[1]
                if other != own and other not in ALLOWED[own]:
                    wrong.append(f"{path.relative_to(ROOT)} ({own}) imports core.{other}")
    assert not wrong, wrong


def test_private_names_stay_in_their_module():
    """No file takes a leading-underscore name from another module (tests included)."""
    taken = []
    for path in [*(ROOT / "core").rglob("*.py"), *(ROOT / "pages").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        for module, names in _imports(path):
            if module.split(".")[0] in ("core", "pages"):
                taken += [f"{path.relative_to(ROOT)}: {module}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert not taken, taken


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def test_no_module_of_core_or_pages_imports_itself_round_a_circle():
    """Module to module, TYPE_CHECKING and function-local imports counted: a circle hidden behind one is still a circle."""
    files = [*(ROOT / "core").rglob("*.py"), *(ROOT / "pages").rglob("*.py")]
    known = {_module_name(p) for p in files}
    edges: dict[str, set[str]] = {}
    for path in files:
        me = _module_name(path)
        for module, names in _imports(path):
            targets = {f"{module}.{n}" for n in names} | {module}
            edges.setdefault(me, set()).update(t for t in targets if t in known and t != me and not me.startswith(f"{t}."))
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not circles, circles
