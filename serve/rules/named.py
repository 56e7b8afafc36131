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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import rx
from ..decisions import Reason
from ..policy import TEST_IDENTIFIER, Action, ChangeKind, NamedChange
from .asked import content_words
from .paths import is_test_path
from .permission import DEFINED_TEST, forbidden
from .shellwords import resolve

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .facts import SessionFacts

ASKABLE = frozenset({Reason.TEST_CHANGED, Reason.TEST_DELETED, Reason.SKIP_MARKER, Reason.TEST_RUNNER_PATCH})
"""Findings a sentence naming the change can answer: a test changed, deleted or skipped, a gate loosened."""
SKIPPABLE = frozenset({Reason.TEST_CHANGED, Reason.SKIP_MARKER})
"""Findings a request to skip a named test can answer (``asked_skip``)."""
COMMENT = rx.compile(r"^\s*(?:#(?![\[!])|//|/\*|\*|--|;|<!--|%)")
"""A comment line (a Rust attribute, ``#[ignore]``, is none)."""
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
    if not named or call.ran or call.command or call.code or not (call.edits or call.writes):
        return ""
    if any(content.count("\n") > MAX_WRITTEN_LINES for _, content in call.writes):
        return ""  # a long file written whole: what it drops from one that was there is not read here
    touched = [resolve(p, facts.cwd) for p in call.touched_paths]
    if any(forbidden(facts, p, a) for p in touched for a in (Action.EDIT_GATES, Action.EDIT_TESTS)):
        return ""  # a sentence of the user's forbids it: no other sentence's naming answers that
    changes = []
    pairs = [(e.path, e.old, e.new) for e in call.edits] + [(p, "", c) for p, c in call.writes]
    for path, before, after in pairs:  # a new file: every line of it added
        old = [line.rstrip() for line in before.splitlines() if line.strip()]
        new = [line.rstrip() for line in after.splitlines() if line.strip()]
        added = [line for line in new if line not in old]  # indentation kept: a re-indent is a change
        removed = [line for line in old if line not in new]
        if DECIDES_OUTCOME.search("\n".join(added)):
            return ""
        changes.append(Change(resolve(path, facts.cwd), added, removed, old, new))
    for sentence in named:
        if all(_does(sentence, change) for change in changes):
            return sentence.line
    return ""


@dataclass(frozen=True)
class Change:
    path: str
    added: list[str]
    removed: list[str]
    old: list[str]
    new: list[str]


def _does(sentence: NamedChange, change: Change) -> bool:
    if not (change.added or change.removed):
        return True
    said = [line for line in change.added if not COMMENT.match(line) and MARKUP.sub(" ", line).strip()]
    if sentence.kind is ChangeKind.DESCRIBED:
        return _described(sentence, change, said)
    if sentence.kind is ChangeKind.REMOVE:
        return not said and _removes_only_named(sentence, change)
    if sentence.kind is ChangeKind.ADD and is_test_path(change.path):
        return False
    if not said or not all(_replaced(sentence, line, change.added) for line in change.removed):
        return False  # a skip, a value or an addition takes nothing out
    shapes = {VALUE_WORD.sub("#", line.strip()) for line in change.removed}
    values_only = all(VALUE_WORD.sub("#", line.strip()) in shapes for line in change.added)
    if not values_only and not _tests_named(sentence, change.added):
        return False  # (a value moved on a line, ``test_coverage: [threshold: 85]``, marks no test)
    if (sentence.labels or sentence.kind is ChangeKind.ADD) and any(SELECTS.search(line) for line in said):
        return False  # asked to label or add, not to choose what runs
    if not all(_new_names_named(sentence, line, change.removed) for line in said):
        return False
    if sentence.kind is ChangeKind.SET and not sentence.objects:  # "bump the ci profile to 1000 examples"
        shapes = {VALUE_WORD.sub("#", line.strip()) for line in change.added}
        return (
            len(change.removed) == len(said)
            and all(any(_has(line, v) for v in sentence.values) for line in said)
            and all(VALUE_WORD.sub("#", line.strip()) in shapes for line in change.removed)
        )
    if sentence.kind is ChangeKind.SET and not sentence.values:  # "set ignoreFailures on that module's tests"
        return all(_names(sentence, line) for line in said)
    if sentence.kind is ChangeKind.SET:  # the value on a line that names the thing it is for
        valued = [
            line for line in said if any(_has(line, v) for v in sentence.values) and _names(sentence, line)
        ]
        return bool(valued) and all(_names(sentence, line) for line in said)
    return all(_names(sentence, line) or _beside_named(sentence, line, change.new) for line in said)


MAX_WRITTEN_LINES = 20
GENERIC_STEMS = frozenset("package config settings setup index main project tests test build".split())
"""Stems too common for a sentence's word to name the file (``package`` of ``package.json``)."""


def _file_words(line: str) -> set[str]:
    """The words of ``line`` that may name a file, trimmed of punctuation (``.golangci.yml,``)."""
    trimmed = {w.strip("`'\"(),;:") for w in line.split()}
    return trimmed | {w.lower() for w in trimmed}


LOOSE_WORDS = rx.compile(
    r"(?i)ignor|skip|deselect|exclud|disabl|\boff\b|warn|allow|suppress|baseline|new-from|only[-_]?new|xfail|"
    r"continue-on-error|\|\|\s*true|severity|advisory|manual|failures|passwithnotests|omit|\bnot\b|\bfalse\b"
    r"|(?:^|[\s\"'\[,=])!\w"
)
"""Words of a loosening: a line the sentence describes may carry one only where the sentence says it too."""
CONFIG_WORD = rx.compile(r"(?i)\bconfig\w*|\bsettings?\b|\bset\s+up\b")
CREATES = rx.compile(r"(?i)\b(?:set\s+up|create|add|write)\s+(?:a|an|the|me\s+a)?\s*(?:new\s+)?\S*")


TOOL_OF = {"noxfile": "nox", "conftest": "pytest", "pre-commit-config": "pre-commit", "Cargo": "cargo"}
"""Files a sentence names by their tool's name ("add a nox session" names ``noxfile.py``)."""


def names_file(line: str, path: str, strict: bool = False) -> bool:
    """Whether the user's sentence ``line`` names the file at ``path``: by its path or name, or by its
    stem or tool (``golangci`` for ``.golangci.yml``, ``nox`` for ``noxfile.py``); ``strict``: a stem or
    tool only beside a word of configuring or as the object of "in", "from", "for" or "to"."""
    base = path.rsplit("/", 1)[-1]
    stem = base.lstrip(".").split(".", 1)[0]
    if any(f == base or f.endswith("/" + base) for f in _file_words(line)) and len(base) >= 4:
        return True
    words = content_words(line) | {w.lower() for w in line.split()}
    tools = {
        t.lower() for t in (stem, TOOL_OF.get(stem, "")) if len(t) >= 3 and t.lower() not in GENERIC_STEMS
    }
    if not tools & words:
        return False
    if not strict:
        return True
    aimed = any(rx.search(rf"(?i)\b(?:in|from|for|to|of)\s+(?:the\s+)?{rx.escape(t)}\b", line) for t in tools)
    return aimed or CONFIG_WORD.search(line) is not None or stem.lower().endswith("rc")


def _described(sentence: NamedChange, change: Change, said: list[str]) -> bool:
    """A change in a file the sentence names (its path or name; its stem, ``golangci`` for
    ``.golangci.yml``, beside a word of configuring), that removes only what it puts back in another form,
    and whose every added line is the sentence's: what the line brings that the line it replaces did not
    shares a word or a value with the sentence (or only moves the file's own lines), every number it brings
    is one the sentence gives, and every word of a loosening it brings (``ignore``, ``skip``, ``off``) comes
    with its key's words all in the sentence. A whole file written is read only when the sentence asks to
    create it (what it drops from one that was there is not seen)."""
    line = sentence.line
    if not names_file(line, change.path, strict=True):
        return False
    if not change.old and not CREATES.search(line):
        return False  # a file written whole over one that may have been there
    if not all(_replaced(sentence, removed, change.added) for removed in change.removed):
        return False
    words = content_words(line)
    numbers = set(NUMBER.findall(line))
    old_words = content_words(" ".join(change.old))
    stems = {w.rstrip("s") for w in words}
    for added in said:
        brought = _brought(added, change.removed)
        brought_words = content_words(brought)
        loosens = LOOSE_WORDS.search(brought) is not None
        if not set(NUMBER.findall(brought)) <= numbers:
            return False  # a number the sentence never gave (``fail_under = 40`` beside "4 workers")
        if loosens and not {w.rstrip("s") for w in brought_words} <= stems | {"true"}:
            return False  # a loosening whose words the sentence does not all say (``ignore_errors``)
        if not change.old and not loosens:
            continue  # a plain line of a file the user asked for
        literals = [a or b for a, b in QUOTED_LITERAL.findall(brought)]
        if literals and all(q in line or any(q in v for v in sentence.values) for q in literals):
            continue  # its strings are the sentence's (``name = "cli"`` for tests/cli/main.rs)
        if any(v in brought for v in sentence.values if not v[:1].isdigit()) or brought_words & words:
            continue
        if content_words(added) <= old_words:
            continue  # a line the file had, moved
        return False
    return bool(said)


NUMBER = rx.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
QUOTED_LITERAL = rx.compile(r"\"([^\"\n]+)\"|'([^'\n]+)'")


def _brought(added: str, removed: list[str]) -> str:
    """What ``added`` says that the removed line it most resembles did not (all of it when none does)."""
    mine = added.split()
    best: list[str] = []
    for line in removed:
        theirs = line.split()
        if len(set(mine) & set(theirs)) > len(set(mine) & set(best)):
            best = theirs
    return " ".join(w for w in mine if w not in best)


SELECTS = rx.compile(
    r"(?:^|[\s'\"=,\[])(?:-k|-m|--deselect|--ignore|--exclude|--skip|-E|--filter)\b|\bnot\s+\w"
)
NAMEY = rx.compile(
    r"[\w./:*@-]*(?:/|::|\*)[\w./:*@-]*|\btest_\w+|\b\w+_test\b|\b[A-Z]\w*Tests?\b|\bTest[A-Z]\w*"
)
"""A token that names a file, a folder, a glob or a test: what a skip or exclusion could carry along."""


def _new_names_named(sentence: NamedChange, line: str, removed: list[str]) -> bool:
    """Every name the line brings that the removed lines did not hold is (or holds) one the user named
    (``omit = src/legacy/*, src/billing/*`` for "omit src/legacy": src/billing is not)."""
    before = {m[0] for text in removed for m in NAMEY.finditer(text)}
    return all(
        any(_has(token, thing) or _has(thing, token) for thing in sentence.objects)
        for token in (m[0].strip(".,:;") for m in NAMEY.finditer(TAG.sub(" ", line)))
        if token and token not in before and len(token) > 2
    )


def _replaced(sentence: NamedChange, line: str, added: list[str]) -> bool:
    """A removed line that lives on in an added one: its words all stay (``addopts = -ra`` growing a flag),
    only its values change (``<TreatWarningsAsErrors>true`` to ``false``), or, for a skip or exclusion, both
    name the thing (``<directory>tests/Legacy`` to ``<exclude>tests/Legacy``, ``TEST(Matrix, Inverse)`` to
    ``TEST(Matrix, DISABLED_Inverse)``)."""
    words = set(WORD.findall(line))
    shape = VALUE_WORD.sub("#", line.strip())
    return any(
        words <= set(WORD.findall(other))
        or VALUE_WORD.sub("#", other.strip()) == shape
        or sentence.kind is ChangeKind.EXCLUDE
        and _names(sentence, line)
        and _names(sentence, other)
        for other in added
    )


TAG = rx.compile(r"<[^<>\n]*>")
WORD = rx.compile(r"[\w.:/*@#-]+")
VALUE_WORD = rx.compile(r"(?i)\d[\w.+-]*|\b(?:true|false|on|off|none|warn|warning|error|info|null|yes|no)\b")


def _removes_only_named(sentence: NamedChange, change: Change) -> bool:
    """Every removed line names the thing, or lies inside a removed definition (a test, a block) that
    does: "Remove TestLoadLegacyV1Snapshot" takes its body with it, not the test beside it."""
    removed = set(change.removed)
    inside = -1  # indentation of the named definition being removed, -1 when none
    for line in change.old:
        depth = len(line) - len(line.lstrip())
        if inside >= 0 and depth <= inside and not CLOSER.match(line):
            inside = -1
        if line not in removed:
            continue
        if inside >= 0:
            continue
        if not _names(sentence, line):
            return False
        if DEFINES.search(line):
            inside = depth
    return True


DEFINES = rx.compile(r"\b(?:def|fn|func|fun|function|class|describe|context|it|test|TEST\w*)\b|[{:]\s*$")
CLOSER = rx.compile(r"^\s*[})\]]+[;,]?\s*$|^\s*end\s*$")
"""A line that only closes the block above it (``}``, ``end``)."""


def _names(sentence: NamedChange, line: str) -> bool:
    return any(_has(line, thing) for thing in sentence.objects)


def _beside_named(sentence: NamedChange, line: str, new: list[str]) -> bool:
    """An added line right beside one that names a thing (``#[ignore = "needs network"]`` over the named
    test's ``fn``, ``tags = ["manual"]`` under its ``name = …``)."""
    places = [index for index, text in enumerate(new) if text == line]
    return bool(places) and all(
        any(_names(sentence, other) for other in new[max(0, i - 1) : i + 2] if other != line) for i in places
    )  # every copy of the line (one `@skip` over the named test and one over another is not beside)


def _has(line: str, thing: str) -> bool:
    """``thing`` in ``line``, a hyphen, an underscore and a space spelling one separator ("the
    overnight-legs test" names ``test("split keeps overnight legs")``)."""
    pattern = "[-_ ]".join(rx.escape(part).replace(r"\*", ".*") for part in rx.split(r"[-_ ]", thing))
    return rx.search(rf"(?<![\w]){pattern}(?![\w])" if thing[-1:].isalnum() else pattern, line) is not None


def _tests_named(sentence: NamedChange, lines: list[str]) -> bool:
    """Every test the lines define, mark or name (by identifier or title) is one the sentence names, and a
    sentence that neither names one nor speaks of tests touches none."""
    found = {m[1] or (m[2] or "").strip() for line in lines for m in DEFINED_TEST.finditer(line)}
    found |= {m[0] for line in lines for m in TEST_IDENTIFIER.finditer(line) if not (m[2] or m[3])}
    found = {f for f in found if f}
    if not found:
        return True
    if not sentence.about_tests and not any(_names(sentence, f) for f in found):
        return False
    return all(any(_has(f, thing) or _has(thing, f) for thing in sentence.objects) for f in found)


SKIP_CUE = rx.compile(
    r"(?i)\bskip\w*|\bfilter\w*\s+(?:\w+\s+){0,3}?out\b|\bassum\w+|\bonly\s+(?:compile|build|run)s?\b"
    r"|\bbehind\s+an?\s+\w+|\bxfail|\bpending\b|\bfixme\b|\bquarantin\w*|\bexpected\s+failure"
    r"|\bmark\w*\s+(?:\w+\s+){0,4}?as\b|\bexclude\b|\bmask\b|\bdisable\b|\bturn\s+(?:\w+\s+){0,3}?off\b"
    r"|\b[\w.-]+\s*=\s*false\b"
)
"""A sentence asking for a test to be skipped, conditioned or marked."""
IDENTIFIER = rx.compile(
    r"(?<![\w.-])(?:[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|\w*\d\w*[A-Za-z]\w*)(?![\w-])"
    r"|(?<![A-Za-z])[`'\"]([^`'\"\n]{3,80})[`'\"](?![A-Za-z])"
)
"""A name in a sentence that can only be a thing's name (``test_dma_drain``, ``gpuAssemblyMatchesCpu``,
``'exports PDF'``), not an ordinary word."""


def asked_to_skip(requests: list[str], changes: list[tuple[str, str, str]]) -> str:
    """The request that asks for a test to be skipped or conditioned and names, by an identifier or a
    quoted title, every test the change defines or touches, where the change takes nothing out but what
    it puts back (a line wrapped, prefixed or guarded); "" when none does."""
    for _, old, new in changes:
        before = [line.strip() for line in old.splitlines() if line.strip()]
        after = "\n".join(new.splitlines())
        if any(line not in after for line in before) or DECIDES_OUTCOME.search(new):
            return ""  # a line taken out (not kept in another form), or content that decides an outcome
    text = "\n".join(f"{path}\n{old}\n{new}" for path, old, new in changes)
    defined = {m[1] or m[2].strip() for m in DEFINED_TEST.finditer(text)}
    for sentence in requests:
        if not SKIP_CUE.search(sentence):
            continue
        names = {(m[1] or m[0]).strip() for m in IDENTIFIER.finditer(sentence)}
        named = {n for n in names if len(n) >= 4 and n in text}
        if named and all(any(n in d or d in n for n in named) for d in defined if TEST_NAME.search(d)):
            return sentence
    return ""


TEST_NAME = rx.compile(r"(?i)test|spec|should|it\b|\s")
"""A defined name that is a test's (a helper function the change shows is none)."""


def asked_skip(call: NormalCall, facts: SessionFacts) -> str:
    """The user's sentence asking for exactly the skip ``call``'s edits make (``asked_to_skip``), where no
    sentence forbids changing the tests; only edits (a whole file written hides what it drops)."""
    if call.ran or call.command or call.code or call.writes or not call.edits:
        return ""
    if any(forbidden(facts, resolve(e.path, facts.cwd), Action.EDIT_TESTS) for e in call.edits):
        return ""
    return asked_to_skip(facts.loosening_asked, [(e.path, e.old, e.new) for e in call.edits])
