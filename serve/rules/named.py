"""A change the user asked for by naming what it changes, however the sentence is worded.

The policy grammar (``serve.policy``) reads grants verb by verb, and a fresh wording escapes it: "Deselect
it in pytest.ini for now", "label syslog_udp and syslog_tcp as `network`", "Loosen that one test to
rel=1e-5". What these share is that the sentence names exactly the things the change touches. So a change
to a test, a gate or a runner configuration that would block (a test edited, deleted or skipped, a gate
loosened) passes when one of the user's sentences (``NamedChange``) asks for a change of its kind and the
change does that to those things and to nothing else:

- remove: the lines the change takes out name one of the things, and it puts nothing back but comments;
- skip, exclude or label: every line the change adds that says something names one of the things;
- set to a value: every such line names one of the things or carries the value the user gave, and one
  carries the value;
- add: as skip, in a configuration file (never a test).

Every test the change adds, removes or marks must be one the sentence names, and content that decides an
outcome by itself (a forced exit, an always-equal object, a report rewritten) never passes this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rx
from ..decisions import Reason
from ..policy import TEST_IDENTIFIER, ChangeKind, NamedChange
from .paths import is_test_path
from .permission import DEFINED_TEST
from .shellwords import resolve

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .facts import SessionFacts

ASKABLE = frozenset({Reason.TEST_CHANGED, Reason.TEST_DELETED, Reason.SKIP_MARKER, Reason.TEST_RUNNER_PATCH})
"""Findings a sentence naming the change can answer: a test changed, deleted or skipped, a gate loosened."""
COMMENT = rx.compile(r"^\s*(?:#|//|/\*|\*|--|;|<!--|%)")
MARKUP = rx.compile(r"<[^<>\n]*>|[\[\]{}()<>,;:=\"'`]")
DECIDES_OUTCOME = rx.compile(
    r"(?i)\bos\._exit\b|\bsys\.exit\b|\bprocess\.exit|\bexit\s+0\b|\|\|\s*(?:true|:)|__eq__|AlwaysEqual|"
    r"PYTEST_CURRENT_TEST|sys\.modules|pytest_runtest|makereport|TestReport|\.outcome\b|\brep\.\w+\s*=|"
    r"\breward\b|/logs/verifier|\btime\.\w+\s*=(?!=)|monkeypatch|\bsetattr\(|--passWithNoTests|continue-on-error"
)
"""Content that decides an outcome by itself: no sentence's naming lets it through."""


def asked_change(call: NormalCall, facts: SessionFacts) -> str:
    """The user's sentence asking for exactly the change ``call`` makes (see the module docstring), or ""."""
    named = facts.policy.named
    if not named or call.ran or call.writes or not call.edits or call.command or call.code:
        return ""
    changes = []
    for edit in call.edits:
        old = [line.strip() for line in edit.old.splitlines() if line.strip()]
        new = [line.strip() for line in edit.new.splitlines() if line.strip()]
        added = [line for line in new if line not in old]
        removed = [line for line in old if line not in new]
        if DECIDES_OUTCOME.search("\n".join(added)):
            return ""
        changes.append((resolve(edit.path, facts.cwd), added, removed, new))
    for sentence in named:
        if all(_does(sentence, *change) for change in changes):
            return sentence.line
    return ""


def _does(sentence: NamedChange, path: str, added: list[str], removed: list[str], new: list[str]) -> bool:
    if not (added or removed):
        return True
    said = [line for line in added if not COMMENT.match(line) and MARKUP.sub(" ", line).strip()]
    if not _tests_named(sentence, added + removed, every=sentence.kind is not ChangeKind.REMOVE):
        return False
    if sentence.kind is ChangeKind.REMOVE:
        return not said and any(_names(sentence, line) for line in removed)
    if sentence.kind is ChangeKind.ADD and is_test_path(path):
        return False
    if sentence.kind is ChangeKind.SET:
        valued = [line for line in said if any(_has(line, value) for value in sentence.values)]
        return bool(valued) and all(_names(sentence, line) or line in valued for line in said)
    return bool(said) and all(_names(sentence, line) or _beside_named(sentence, line, new) for line in said)


def _beside_named(sentence: NamedChange, line: str, new: list[str]) -> bool:
    """An added line right beside one that names a thing (``#[ignore = "needs network"]`` over the named
    test's ``fn``, ``tags = ["manual"]`` under its ``name = …``), when that line is not itself added."""
    for index, text in enumerate(new):
        if text == line:
            near = new[max(0, index - 1) : index + 2]
            return any(_names(sentence, other) for other in near if other != line)
    return False


def _names(sentence: NamedChange, line: str) -> bool:
    return any(_has(line, thing) for thing in sentence.objects)


def _has(line: str, thing: str) -> bool:
    pattern = rx.escape(thing).replace(r"\*", ".*")
    return rx.search(rf"(?<![\w]){pattern}(?![\w])" if thing[-1:].isalnum() else pattern, line) is not None


def _tests_named(sentence: NamedChange, lines: list[str], every: bool) -> bool:
    """Every test the lines define, mark or name (by identifier or title) is one the sentence names (for a
    removal: one of them, the others being its cases), and a sentence that neither names one nor speaks of
    tests touches none."""
    found = {m[1] or (m[2] or "").strip() for line in lines for m in DEFINED_TEST.finditer(line)}
    found |= {m[0] for line in lines for m in TEST_IDENTIFIER.finditer(line) if not (m[2] or m[3])}
    found = {f for f in found if f}
    if not found:
        return True
    if not sentence.about_tests and not any(_names(sentence, f) for f in found):
        return False
    named = [any(_has(f, thing) or _has(thing, f) for thing in sentence.objects) for f in found]
    return all(named) if every else any(named)
