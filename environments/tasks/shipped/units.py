"""The building block of the repo tasks: one function with its tests, a realistic bug, a feature request
and a question about it. ``repo_tasks.py`` turns each unit into a repair, a build, an extend and a qa task
inside the small repository the unit belongs to.

A unit's code lives in real files, so that linters, editors and ``node --check`` see it as code:
``code/units/<repo>/<name>.py`` (``.js`` for JS) is the working function, ``<name>_feature.py`` the
function after its feature request; the bug is a text edit of the first. ``code/`` ships as package data.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

CODE = Path(__file__).with_name("code")
"""The task code the shipped repo tasks are built from (``code/units/``, ``code/qa/``)."""


def unit_code(path: str) -> str:
    """The text of ``code/units/<path>``, exactly as the file holds it."""
    return (CODE / "units" / path).read_text(encoding="utf-8")


class Lang(StrEnum):
    PY = "py"
    JS = "js"


@dataclass(frozen=True, slots=True)
class Bug:
    old: str
    """A snippet of the unit's source, present exactly once."""
    new: str
    report: str
    """What a user saw, in the voice of a bug report."""


@dataclass(frozen=True, slots=True)
class Feature:
    request: str
    source: str
    """The whole function after the change."""
    cases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    repo: str
    module: str
    """Module stem inside the repo's package (``src/<module>.js`` for JS)."""
    name: str
    signature: str
    spec: str
    source: str
    cases: tuple[str, ...]
    """Python: ``expr`` (asserted true) or ``raises:Error:expr``; JS: whole assert statements."""
    bug: Bug
    feature: Feature
    probe: str
    """An expression whose value the qa task asks for."""
    probe_answer: str | None = None
    """JSON of the probe's value, for JS units (Python ones are computed at generation)."""
    imports: tuple[str, ...] = ()
    test_imports: tuple[str, ...] = ()
    lang: Lang = Lang.PY

    def __post_init__(self) -> None:
        if self.source.count(self.bug.old) != 1:
            raise ValueError(f"unit {self.name}: bug.old must occur exactly once in the source")
        if f"{self.name}(" not in self.feature.source:
            raise ValueError(f"unit {self.name}: feature.source must define {self.name}")
