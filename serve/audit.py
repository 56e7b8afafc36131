"""Re-scan saved rollout trajectories with the current guard rules.

    python -m serve.audit PATH... [--verbose]

Every rollout's ATIF trajectory is saved beside its run (``<out_dir>/<harness>/trajectories/`` for the
train job, ``<out_dir>/trajectories/<harness>/`` for the evaluation; ``actors.trajectories``). Each PATH
is a trajectory file (``*.json``, or ``*.jsonl`` with one trajectory a line) or a folder, searched
recursively for them. Every session is run through ``session_engine(builtin_rules(), allowlist)`` (the
allowlist its rollout declared, from ``extra.guard.allowlist``), and each session with a finding is
printed with, per finding, the rule, the ATIF step, the call's index in that step and the tool's name
(no argument or message text). Findings of reasons held at notice (``serve.precision``: rules not yet
precise enough to block) are listed apart as notices and do not make a session one with findings.
Sessions where a rule could not judge some call are listed as undecided. Then one summary line and,
last, one JSON object. Exit 0: no finding; 1: findings; 2: some
input unreadable (malformed JSON, not an ATIF trajectory, ...) or no trajectory found. While walking a
folder, JSON files that are not trajectories (``results.json``, checkpoint configs) are skipped and
counted; a file named on the command line must be one.

The same rules load into atif-scan's own CLI as a plugin (it has no automatic discovery)::

    atif-scan --plugin serve.audit:checks --packs none --pattern '*.json' --format text PATH

There a check's allowlist comes from ``GUARD_AUDIT_ALLOWLIST`` (comma-separated hosts), since an
atif-scan detector does not see the trajectory's ``extra``; each check's version is a hash of the
guard's source and that allowlist, so atif-scan's result cache never reuses results of other rules.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from atif_scan import CheckSpec, Context, Detection, Engine, Status, TraceError, parse_trace

from environments.errors import cli_main

from .decisions import Reason
from .precision import NOTICE_ONLY
from .rules import builtin_rules, session_engine
from .rules.atif import CHECK_PREFIX, NOTICE_PREFIX, SessionCheck

if TYPE_CHECKING:
    from atif_scan import Trace

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2
SUFFIXES = (".json", ".jsonl")
MAX_BYTES = 256 * 1024 * 1024
ALLOWLIST_ENV = "GUARD_AUDIT_ALLOWLIST"
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}")
"""Tool names and session ids are printed only in this shape (anything else reads ``?``)."""


def safe_name(value: object) -> str:
    return value if isinstance(value, str) and SAFE_NAME.fullmatch(value) else "?"


class Unreadable(Exception):
    """An input that is not a readable trajectory; ``code`` is a fixed word, never input text."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class Hit:
    rule: str
    step: int
    """The ATIF ``step_id`` (the 1-based position when the step has none)."""
    call: int
    """The call's index within its step."""
    tool: str


@dataclass(frozen=True, slots=True)
class SessionAudit:
    source: str
    session: str
    hits: tuple[Hit, ...] = ()
    undecided: tuple[str, ...] = ()
    """Rules that could not judge some call of the session (or failed): neither clean nor a finding."""
    notices: tuple[Hit, ...] = ()
    """Findings of reasons held at notice (`serve.precision`): reported, not counted as findings."""
    live: str | None = None
    """What the guard recorded live (its mode, blocks and monitor-mode would-blocks), when saved."""


@dataclass
class Summary:
    sessions: list[SessionAudit] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    skipped: int = 0

    def rule_sessions(self, attr: str) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for s in self.sessions:
            rules = set(s.undecided) if attr == "undecided" else {h.rule for h in getattr(s, attr)}
            counts.update(rules)
        return dict(sorted(counts.items()))

    @property
    def exit_code(self) -> int:
        if self.unreadable or not self.sessions:
            return EXIT_UNREADABLE
        return EXIT_FINDINGS if any(s.hits for s in self.sessions) else EXIT_CLEAN

    def to_json(self) -> dict[str, object]:
        return {
            "sessions": len(self.sessions),
            "sessions_with_findings": sum(bool(s.hits) for s in self.sessions),
            "findings": sum(len(s.hits) for s in self.sessions),
            "sessions_by_rule": self.rule_sessions("hits"),
            "notice_sessions_by_rule": self.rule_sessions("notices"),
            "sessions_with_notices": sum(bool(s.notices) for s in self.sessions),
            "notices": sum(len(s.notices) for s in self.sessions),
            "sessions_undecided": sum(bool(s.undecided) for s in self.sessions),
            "undecided_by_rule": self.rule_sessions("undecided"),
            "unreadable": len(self.unreadable),
            "skipped": self.skipped,
            "rules": [r.rule_id.value for r in builtin_rules()],
            "exit": self.exit_code,
        }


def allowlist_of(doc: Mapping[str, object]) -> tuple[str, ...]:
    """The allowlist the rollout declared (``extra.guard.allowlist``, as ``RolloutRecord.to_atif`` has it)."""
    extra = doc.get("extra")
    guard = extra.get("guard") if isinstance(extra, Mapping) else None
    hosts = guard.get("allowlist") if isinstance(guard, Mapping) else None
    return tuple(h for h in hosts if isinstance(h, str)) if isinstance(hosts, list) else ()


def live_summary(doc: Mapping[str, object]) -> str | None:
    """``guard <mode>: N blocked[, M would-block]`` from the rollout's record in ``extra.guard``."""
    extra = doc.get("extra")
    guard = extra.get("guard") if isinstance(extra, Mapping) else None
    blocks = guard.get("blocks") if isinstance(guard, Mapping) else None
    if not isinstance(guard, Mapping) or not isinstance(blocks, list):
        return None
    mode = guard.get("guard")
    text = f"guard {mode}" if mode in ("enforce", "monitor", "off") else "guard"
    text += f": {len(blocks)} blocked"
    would = guard.get("would_block")
    return text + (f", {len(would)} would-block" if isinstance(would, list) and would else "")


def is_trajectory(doc: object) -> bool:
    if not isinstance(doc, Mapping):
        return False
    version = doc.get("schema_version")
    return (isinstance(version, str) and version.startswith("ATIF")) or isinstance(doc.get("steps"), list)


def hits_of(
    trace: Trace, assessments: Sequence[object]
) -> tuple[tuple[Hit, ...], tuple[str, ...], tuple[Hit, ...]]:
    """(findings, rules that could not judge some call, notices of reasons held at notice)."""
    hits: list[Hit] = []
    notices: list[Hit] = []
    undecided: list[str] = []
    for a in assessments:
        spec_id: str = a.spec.id  # type: ignore[attr-defined]
        if not spec_id.startswith(CHECK_PREFIX):
            continue
        held = spec_id.startswith(NOTICE_PREFIX)
        rule = spec_id.removeprefix(NOTICE_PREFIX if held else CHECK_PREFIX)
        result: Detection = a.result  # type: ignore[attr-defined]
        if result.status == Status.MATCH:
            for at in dict.fromkeys(result.evidence):
                step = trace.steps[at.step]
                call = at.call if at.call is not None else 0
                tool = step.calls[call].name if call < len(step.calls) else ""
                number = step.step_id if step.step_id is not None else at.step + 1
                (notices if held else hits).append(Hit(rule, number, call, safe_name(tool)))
        elif result.status in (Status.UNKNOWN, Status.ERROR) and not held:
            undecided.append(rule)

    def order(found: list[Hit]) -> tuple[Hit, ...]:
        return tuple(sorted(found, key=lambda h: (h.step, h.call, h.rule)))

    return order(hits), tuple(undecided), order(notices)


class Auditor:
    """Scans trajectory documents; one engine per distinct allowlist."""

    def __init__(self, held: frozenset[Reason] = NOTICE_ONLY) -> None:
        self.rules = builtin_rules()
        self.held = held
        """Reasons held at notice (`serve.precision`): their findings are reported as notices."""
        self._engines: dict[tuple[str, ...], Engine] = {}

    def engine(self, allowlist: tuple[str, ...]) -> Engine:
        if allowlist not in self._engines:
            self._engines[allowlist] = session_engine(self.rules, allowlist, self.held)
        return self._engines[allowlist]

    def scan(self, doc: Mapping[str, object], source: str, fallback_id: str) -> SessionAudit:
        try:
            trace = parse_trace(doc)
        except TraceError as error:
            code = str(error)
            raise Unreadable(code if re.fullmatch(r"[a-z_]{1,64}", code) else "invalid_trace") from None
        except (ValueError, TypeError, KeyError):
            raise Unreadable("invalid_trace") from None
        assessments = self.engine(allowlist_of(doc)).evaluate(trace, Context())
        hits, undecided, notices = hits_of(trace, assessments)
        session = doc.get("session_id")
        return SessionAudit(
            source,
            safe_name(session) if session else safe_name(fallback_id),
            hits,
            undecided,
            notices,
            live_summary(doc),
        )


def trajectory_files(paths: Sequence[str]) -> Iterator[tuple[Path, bool]]:
    """(file, named on the command line) for every input, folders walked in sorted order."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.suffix in SUFFIXES and found.is_file():
                    yield found, False
        else:
            yield path, True


def documents(path: Path) -> Iterator[tuple[str, object]]:
    """(source label, parsed JSON or an ``Unreadable``) for each document in the file."""
    try:
        if path.stat().st_size > MAX_BYTES:
            yield str(path), Unreadable("file_too_large")
            return
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        yield str(path), Unreadable("not_found")
        return
    except (OSError, UnicodeDecodeError):
        yield str(path), Unreadable("unreadable_file")
        return
    if path.suffix == ".jsonl":
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if not lines:
            yield str(path), Unreadable("empty_file")
        for number, line in lines:
            yield f"{path}:{number}", _parse(line)
        return
    yield str(path), _parse(text)


def _parse(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return Unreadable("invalid_json")
    except RecursionError:
        return Unreadable("json_too_deep")


def audit(paths: Sequence[str], auditor: Auditor | None = None) -> Summary:
    auditor = auditor or Auditor()
    summary = Summary()
    for path, named in trajectory_files(paths):
        for source, doc in documents(path):
            if isinstance(doc, Unreadable):
                summary.unreadable.append((source, doc.code))
                continue
            if not is_trajectory(doc):
                if named:
                    summary.unreadable.append((source, "not_a_trajectory"))
                else:
                    summary.skipped += 1
                continue
            assert isinstance(doc, Mapping)
            try:
                summary.sessions.append(auditor.scan(doc, source, path.stem))
            except Unreadable as error:
                summary.unreadable.append((source, error.code))
    return summary


def report_lines(summary: Summary, verbose: bool = False) -> Iterator[str]:
    for s in summary.sessions:
        live = f" (live {s.live})" if s.live else ""
        if s.hits:
            yield f"{s.source}: session {s.session}: {len(s.hits)} finding(s){live}"
            for h in s.hits:
                yield f"  {h.rule}  step {h.step}  call {h.call}  tool {h.tool}"
        if s.undecided:
            yield f"{s.source}: session {s.session}: undecided by {', '.join(s.undecided)}"
        if s.notices:
            yield f"{s.source}: session {s.session}: {len(s.notices)} notice(s), held at notice, not findings"
            for h in s.notices:
                yield f"  notice {h.rule}  step {h.step}  call {h.call}  tool {h.tool}"
        if verbose and not s.hits and not s.undecided and not s.notices:
            yield f"{s.source}: session {s.session}: clean{live}"
    for source, code in summary.unreadable:
        yield f"{source}: unreadable ({code})"
    data = summary.to_json()
    by_rule = data["sessions_by_rule"]
    assert isinstance(by_rule, dict)
    rules = f" ({', '.join(f'{r}: {n}' for r, n in by_rule.items())})" if by_rule else ""
    nothing = "; no trajectory found" if not summary.sessions else ""
    yield (
        f"audit: {data['sessions']} sessions scanned, {data['sessions_with_findings']} with findings{rules}, "
        f"{data['sessions_with_notices']} with notices, "
        f"{data['sessions_undecided']} undecided, {data['unreadable']} unreadable, "
        f"{data['skipped']} skipped (not trajectories){nothing}"
    )
    yield json.dumps(data, sort_keys=True)


def rules_fingerprint(allowlist: tuple[str, ...]) -> str:
    """A hash of the guard's source (every module under ``serve/``) and the allowlist."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    digest.update(json.dumps(list(allowlist)).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class PluginCheck:
    """A ``SessionCheck`` whose spec version names the rules' source, for atif-scan's result cache."""

    inner: SessionCheck
    spec: CheckSpec

    def evaluate(self, trace: Trace, context: Context) -> Detection:
        return self.inner.evaluate(trace, context)


def checks() -> list[PluginCheck]:
    """The atif-scan plugin factory: ``atif-scan --plugin serve.audit:checks``."""
    raw = os.environ.get(ALLOWLIST_ENV, "")
    allowlist = tuple(h.strip() for h in raw.split(",") if h.strip())
    version = rules_fingerprint(allowlist)
    out = []
    for notices in (False, True) if NOTICE_ONLY else (False,):
        for rule in builtin_rules():
            inner = SessionCheck(rule, allowlist, NOTICE_ONLY, notices)
            out.append(PluginCheck(inner, dataclasses.replace(inner.spec, version=version)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m serve.audit", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trajectory files or folders")
    parser.add_argument("--verbose", "-v", action="store_true", help="list clean sessions too")
    args = parser.parse_args(argv)
    summary = audit(args.paths)
    for line in report_lines(summary, args.verbose):
        print(line)
    return summary.exit_code


if __name__ == "__main__":
    cli_main(main)
