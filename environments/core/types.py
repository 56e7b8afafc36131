"""The task: what an agent is asked to do, what it starts from, and how its result is judged.

A task is pure data. Its files live in memory as ``{relative path: bytes}`` so that a task read from a
folder, from a JSONL dataset or from Harbor's layout is the same value; ``environments.tasks.layout`` maps
it to disk. What the agent may read is the instruction, the workspace and ``env``; everything else (hidden
files, the oracle, the reference) stays outside its sandbox. The verifier runs the oracle in a fresh copy
of what the agent produced plus the hidden files, never in the agent's own sandbox.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum

from environments.core.placement import Placement, check_relative_path


class Source(StrEnum):
    DATA = "data"
    REPO = "repo"


class Kind(StrEnum):
    ANALYSIS = "analysis"
    REPAIR = "repair"
    QA = "qa"
    BUILD = "build"
    EXTEND = "extend"


class Split(StrEnum):
    TRAIN = "train"
    EVAL = "eval"


KINDS_BY_SOURCE: dict[Source, frozenset[Kind]] = {
    Source.DATA: frozenset({Kind.ANALYSIS}),
    Source.REPO: frozenset({Kind.REPAIR, Kind.QA, Kind.BUILD, Kind.EXTEND}),
}

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$")


def _checked_files(files: dict[str, bytes], where: str) -> dict[str, bytes]:
    for path, data in files.items():
        check_relative_path(path, where)
        if not isinstance(data, bytes):
            raise ValueError(f"{where}[{path!r}]: contents must be bytes, got {type(data).__name__}")
    return dict(sorted(files.items()))


@dataclass(frozen=True, slots=True)
class Limits:
    """What one session of the task may use. The sandbox enforces them; check 6 measures the reference."""

    agent_timeout_s: float = 600.0
    """Wall time for the agent's session; the reference run must fit in it."""
    verify_timeout_s: float = 60.0
    """Wall time for one oracle run."""
    memory_mb: int = 2048
    """Peak resident memory of the session's processes."""
    max_processes: int = 64
    """Process count; enforced by the sandbox's cgroup (a per-user rlimit cannot express it)."""
    cpus: float = 1.0

    def __post_init__(self) -> None:
        for name in ("agent_timeout_s", "verify_timeout_s", "cpus"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"limits.{name}={value!r}: must be a positive number")
        for name in ("memory_mb", "max_processes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limits.{name}={value!r}: must be an integer >= 1")


@dataclass(frozen=True, slots=True)
class CommandOracle:
    """Pass iff ``command`` exits 0 in a fresh copy of the produced workspace plus the hidden files; with
    ``reward_dir``, the reward the command writes there decides instead (Harbor's verdict: ``reward.json``'s
    ``reward``, else ``reward.txt``; >= ``PASS_REWARD`` passes; the exit status is ignored)."""

    command: str
    env: dict[str, str] = field(default_factory=dict)
    reward_dir: str | None = None
    """A folder of the verify tree (emptied before the run) where the command writes its reward."""

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("oracle.command: must not be empty; give the verify command, e.g. 'pytest -q'")
        if self.reward_dir is not None:
            check_relative_path(self.reward_dir, "oracle.reward_dir")


@dataclass(frozen=True, slots=True)
class AnswerOracle:
    """Pass iff the file ``answer_path`` holds ``expected``: a number within tolerance, or the text
    (case, spacing and surrounding quotes ignored).

    A number passes when ``|got - expected| <= abs_tol + rel_tol * |expected|``.
    """

    expected: float | str
    answer_path: str = "answer.txt"
    abs_tol: float = 0.0
    rel_tol: float = 0.0

    def __post_init__(self) -> None:
        check_relative_path(self.answer_path, "oracle.answer_path")
        if isinstance(self.expected, bool) or not isinstance(self.expected, int | float | str):
            raise ValueError(f"oracle.expected={self.expected!r}: must be a number or a string")
        if isinstance(self.expected, float) and not math.isfinite(self.expected):
            raise ValueError("oracle.expected: must be finite; a NaN answer cannot be checked")
        if isinstance(self.expected, str) and not self.expected.strip():
            raise ValueError("oracle.expected: must not be blank")
        if self.abs_tol < 0 or self.rel_tol < 0:
            raise ValueError("oracle.abs_tol and oracle.rel_tol: must be >= 0")


Oracle = CommandOracle | AnswerOracle


@dataclass(frozen=True, slots=True)
class Reference:
    """A known-good solution: ``files`` are laid over the workspace, then ``command`` (if any) runs in it."""

    files: dict[str, bytes] = field(default_factory=dict)
    command: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", _checked_files(self.files, "reference.files"))
        if not self.files and not (self.command and self.command.strip()):
            raise ValueError("reference: give files, a command, or both; an empty reference proves nothing")


@dataclass(frozen=True, slots=True)
class Task:
    """One verifiable task. Construct it only with valid values: ``__post_init__`` says what is wrong."""

    id: str
    source: Source
    kind: Kind
    instruction: str
    workspace: dict[str, bytes]
    """What the agent starts from, relative path -> bytes."""
    hidden: dict[str, bytes]
    """Tests and oracle data, added only to the verifier's fresh copy."""
    oracle: Oracle
    reference: Reference
    split: Split = Split.TRAIN
    limits: Limits = field(default_factory=Limits)
    allowed_hosts: tuple[str, ...] = ()
    """Hosts the agent may reach besides the guard; empty means none."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables the agent's session gets (agent-readable, so scanned for leaks)."""
    placement: Placement = field(default_factory=Placement)
    """Where the files sit in the sandbox (work directory, absolute mounts, own image); see placement.py."""
    judge: str = "isolated"
    """How pytest and unittest tests are judged: ``isolated`` (the default: the tests never share a
    process with the agent's code, ``environments.integrity.judging``) or ``in-process``, an explicit
    opt-in for tests that cannot run isolated."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"task.id={self.id!r}: use 1-128 chars of [a-z0-9._-], starting alphanumeric")
        for name, enum in (("source", Source), ("kind", Kind), ("split", Split)):
            value = getattr(self, name)
            try:
                object.__setattr__(self, name, enum(value))
            except ValueError:
                allowed = ", ".join(e.value for e in enum)
                raise ValueError(f"task {self.id}: {name}={value!r}: must be one of {allowed}") from None
        if self.kind not in KINDS_BY_SOURCE[self.source]:
            allowed = ", ".join(sorted(KINDS_BY_SOURCE[self.source]))
            raise ValueError(
                f"task {self.id}: kind={self.kind} does not fit source={self.source}; use {allowed}"
            )
        if not self.instruction.strip():
            raise ValueError(f"task {self.id}: instruction is empty; say what the agent must do")
        if not isinstance(self.oracle, CommandOracle | AnswerOracle):
            raise ValueError(f"task {self.id}: oracle must be a CommandOracle or an AnswerOracle")
        object.__setattr__(self, "workspace", _checked_files(self.workspace, f"task {self.id}: workspace"))
        object.__setattr__(self, "hidden", _checked_files(self.hidden, f"task {self.id}: hidden"))
        clash = sorted(set(self.workspace) & set(self.hidden))
        if clash:
            raise ValueError(f"task {self.id}: {clash} are both workspace and hidden; rename the hidden copy")
        hosts = tuple(self.allowed_hosts)
        bad = [h for h in hosts if not _HOST.match(h)]
        if bad:
            raise ValueError(f"task {self.id}: allowed_hosts {bad}: give bare host names, no scheme or port")
        object.__setattr__(self, "allowed_hosts", hosts)
        object.__setattr__(self, "env", dict(self.env))
        if self.judge not in ("isolated", "in-process"):
            raise ValueError(f"task {self.id}: judge={self.judge!r}: must be isolated or in-process")
        if not isinstance(self.placement, Placement):
            raise ValueError(f"task {self.id}: placement must be a Placement")
