"""Every reader fed random mutations of its fixtures: a key missing, a value of the wrong type, NaN, inf, a huge number,
a line dropped, the file cut short or emptied. Each either imports or is refused with one line (ImportFileError); no
other exception, no traceback, ever."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

#: Fixtures that are not benchmark files.
NOT_FORMATS = {"README.md", "engine_startup_logs.csv"}
SAMPLES = sorted(p.name for p in FIXTURES.iterdir() if p.is_file() and p.name not in NOT_FORMATS)
#: Mutations per fixture (fixed seeds: a failure is reproduced by its id).
PER_FIXTURE = int(__import__("os").environ.get("FUZZ_PER_FIXTURE", "14"))
#: What a file might lack, given so that reading goes on past it to the values.
FULL = ImportContext(gpu="h100-sxm", model="llama-3.1-8b", batch=8, input_tokens=512, output_tokens=128)
ODD_VALUES: list[Any] = [None, "", "x", "1e999", [], {}, True, -1, 0, 1e308, -1e308, float("nan"), float("inf"), 10**30, "NaN", "-inf"]
ODD_TEXT = ["nan", "inf", "-inf", "1e999", "-1", "0", "abc", "", "99999999999999999999999", "1,2", '"', "\t"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb")


def _json_records(text: str) -> tuple[Any, bool] | None:
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()], True
        except json.JSONDecodeError:
            return None


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    out = [at] if at else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            out += _paths(v, (*at, i))
    return out


def _mutate_json(doc: Any, rng: random.Random) -> Any:
    paths = _paths(doc)
    if not paths:
        return rng.choice(ODD_VALUES)
    path = rng.choice(paths)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.4:
        del parent[last]  # a key missing
    else:
        parent[last] = rng.choice(ODD_VALUES)  # a wrong type, NaN, inf, a huge number
    return doc


def _mutate_text(text: str, rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:  # a number replaced
        numbers = list(re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text))
        if numbers:
            m = rng.choice(numbers)
            return text[: m.start()] + rng.choice(ODD_TEXT) + text[m.end() :]
    if kind == 1:  # a line dropped
        lines = text.splitlines(keepends=True)
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
            return "".join(lines)
    if kind == 2:  # cut short
        return text[: rng.randrange(max(len(text), 1))]
    lines = text.splitlines(keepends=True)  # a line's fields shuffled
    if lines:
        i = rng.randrange(len(lines))
        parts = lines[i].rstrip("\n").split(rng.choice([",", "|", " ", ":"]))
        rng.shuffle(parts)
        lines[i] = " ".join(parts) + "\n"
    return "".join(lines)


def mutated(name: str, seed: int) -> bytes:
    rng = random.Random(f"{name}:{seed}")
    text = (FIXTURES / name).read_text(encoding="utf-8")
    if seed == 0:
        return b""  # an empty file
    parsed = _json_records(text) if text.lstrip()[:1] in "{[" else None
    if parsed is not None and rng.random() < 0.8:
        doc, lines = parsed
        for _ in range(rng.randint(1, 3)):
            doc = _mutate_json(doc, rng)
        if lines and isinstance(doc, list):
            return "\n".join(json.dumps(r, allow_nan=True) for r in doc).encode()
        return json.dumps(doc, allow_nan=True).encode()
    for _ in range(rng.randint(1, 3)):
        text = _mutate_text(text, rng)
    return text.encode()


@pytest.mark.parametrize("name", SAMPLES)
def test_every_mutation_of_a_fixture_imports_or_is_refused_in_one_line(store, name):
    for seed in range(PER_FIXTURE):
        data = mutated(name, seed)
        for context in (FULL, ImportContext()):
            try:
                parse_file(store, data, name, context=context)
            except ImportFileError as exc:
                message = str(exc)
                assert message and "\n" not in message, (name, seed, message)
                assert "Traceback" not in message and len(message) < 2_000, (name, seed, message[:300])
            except Exception as exc:  # anything else is a traceback on the page
                raise AssertionError(f"{name} mutation {seed}: {type(exc).__name__}: {exc}") from exc


def test_the_mutations_reach_the_readers():
    """Not only empty files: most mutations are still their format's file, so the readers (not the decoding) see them."""
    kept = sum(
        1 for name in SAMPLES for seed in range(1, PER_FIXTURE) if mutated(name, seed)[:1] in (b"{", b"[") or b"\n" in mutated(name, seed)
    )
    assert kept > 0.7 * len(SAMPLES) * (PER_FIXTURE - 1)
