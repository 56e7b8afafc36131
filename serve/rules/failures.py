"""What just failed, and a change aimed at hiding it.

A check run prints what failed: a test (``//src/geo:haversine_test FAILED``), a file (``error: …
src/varint.zig:94``), a rule or advisory (``CS8602``, ``RUSTSEC-2026-0042``, ``CKV_AWS_18``); a user says
so too ("LedgerReconcileSpec fails"). The session keeps those lines as it folds (``failure_lines``) and
reads their names only when a change needs them (``names_in``; ``failing_names`` is both at once).
A change to a test, a build, runner or gate file that then takes one of them out of what runs
(``"src/varint.zig"`` dropped from build.zig's test list) or puts it beside a word that skips, ignores or
excludes (``tags = ["manual"]``
beside ``name = "haversine_test"``, ``<NoWarn>CS8602</NoWarn>``, ``@tag :skip`` above the failing test)
hides the failure instead of fixing it, however the file spells its skips. The user's sentence naming
that very change answers it (``rules.named``).
"""

from __future__ import annotations

import bisect
import fnmatch
import re

from .. import rx

MAX_NAMES = 2000
FAILURE = rx.compile(
    r"(?i)\b(?:fail\w*|errors?|broken|breaks|regress\w*|vulnerab\w*|violations?|warnings?)\b|[✖✗✘❌✕]"
)
NAME = rx.compile(
    # CKV_AWS_18, RUSTSEC-2026-0042, CS8602
    r"(?<![\w.-])(?:[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+|[A-Z]{1,4}\d{3,5}|"
    r"(?:[\w.-]+/)+[\w.-]*\w|"  # src/varint.zig, //src/geo:haversine_test's path, prorate/3
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|"  # DecimalTests.testParsesGermanLocale
    r"[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z]+[a-z0-9]+[A-Z]\w*|\w+\.(?:py|rs|go|zig|ts|js|rb|ex|exs|kt|java|"
    r"scala|swift|cs|cpp|cc|c|php|R))(?![\w-])"
)
"""A name precise enough to stand for one thing: a rule or advisory id, a path, a snake_case, camelCase or
CamelCase identifier, a source file."""
GLOB = rx.compile(r"[\w./-]*\*[\w.*/-]*")
"""A glob in a skip or exclusion (``**/Ledger*``): it hides every failing name it matches."""
TITLE = rx.compile(r"""(?<![\w])['"]([A-Za-z][^'"\n]{5,80}?\s[^'"\n]{1,80})['"](?![\w])""")
"""A test's title in quotes ("ProrationTest 'handles mid-cycle downgrade' fails"): matched as text."""
WINDOW = 2
"""Lines after a failure line that still belong to it (the file and line under a failed test's title)."""
WINDOW_BEFORE = 1
"""Lines before it that do too (``running 3 tests from ./tests/cjk_test.ts`` above the failed title),
unless they say something passed."""
PASSED = rx.compile(r"(?i)\b(?:pass(?:ed|es)?|ok)\b|[✓✔]")
SKIPPING = rx.compile(
    r"XCTSkip|GTEST_SKIP|markTestSkipped|\bt\.Skip|:skip\b|DISABLED_|!\s*\w+\.|!=|\bnot\s+(?:test|\w+\()"
    r"|#\[cfg\(|target_compatible_with|@incompatible|\b(?i:skip\w*|ignor\w*|exclud\w*|deselect\w*|filter\w*|nowarn|suppress\w*|disabled?\w*|allow\w*|manual|"
    r"baseline|xfail\w*|pending|flaky|quarantin\w*|exempt\w*|no_?match\w*|should_panic)\b|[\"'\s]!\w|\$TODO\b|\bTODO:\s*\{"
)
NOT_NAMES = frozenset({"node_modules", "site-packages", "__init__", "exit_code", "exit_status"})


FAILURE_WORDS = (
    "fail",
    "error",
    "broke",
    "regress",
    "vulnerab",
    "violation",
    "warning",
    "✖",
    "✗",
    "✘",
    "❌",
    "✕",
)
"""Substrings every ``FAILURE`` match holds (lower case)."""
SENTENCE_END = rx.compile(r"(?<=[.!?;])\s+|\n")


def failure_lines(text: str, prose: bool = False) -> list[str]:
    """The failure lines of ``text`` and the lines just after them; ``prose`` (a user's message): sentences
    instead of lines, the one saying what fails and none after it. One pass of ``FAILURE`` over the text:
    this runs on every tool result as the session folds."""
    low = text.lower()
    if not any(word in low for word in FAILURE_WORDS):  # most output says nothing failed: a C-level scan
        return []
    hits = [m.start() for m in FAILURE.finditer(text)]
    if not hits:
        return []
    window, before = (0, 0) if prose else (WINDOW, WINDOW_BEFORE)
    bounds = [(m.start(), m.end()) for m in SENTENCE_END.finditer(text)] if prose else None
    starts = (
        [0] + [end for _, end in bounds] if bounds is not None else [0] + [i + 1 for i in _newlines(text)]
    )
    ends = (
        [start for start, _ in bounds] + [len(text)]
        if bounds is not None
        else [i for i in _newlines(text)] + [len(text)]
    )
    wanted: set[int] = set()
    for hit in hits:
        index = bisect.bisect_right(starts, hit) - 1
        wanted.update(range(index, min(index + window + 1, len(starts))))
        if before and index and not PASSED.search(text, starts[index - 1], ends[index - 1]):
            wanted.add(index - 1)
    return [text[starts[i] : ends[i]][:MAX_LINE] for i in sorted(wanted)][:MAX_LINES]


def _newlines(text: str) -> list[int]:
    out, at = [], text.find("\n")
    while at != -1:
        out.append(at)
        at = text.find("\n", at + 1)
    return out


MAX_LINES = 200
MAX_LINE = 400


def names_in(lines: list[str]) -> set[str]:
    """The names ``lines`` (``failure_lines``) hold: read only when a change needs them."""
    out: set[str] = set()
    for line in lines:
        for name in _names(line):
            out |= _pieces(name)
        out |= {m[1] for m in TITLE.finditer(line)}
        if len(out) > MAX_NAMES:
            break
    return {n for n in out if len(n) >= 4 and n not in NOT_NAMES}


def failing_names(text: str, prose: bool = False) -> set[str]:
    """The names on failure lines of ``text`` and the lines just after them."""
    return names_in(failure_lines(text, prose))


def hides_failure(old: str, new: str, failing: set[str], config: bool, folder: str = "") -> str:
    """What in the change of ``old`` into ``new`` hides a failing name (see the module docstring), or "";
    ``config``: the file is a build, runner or gate file (where dropping a name drops it from the run);
    ``folder``: the file's folder in the workspace (a skip added to the build file of the failing target's
    own package, ``services/quota/BUILD.bazel`` for ``//services/quota:quota_test``, is aimed at it)."""
    if not failing:
        return ""
    old_lines = [line.strip() for line in old.splitlines()]
    new_lines = [line.strip() for line in new.splitlines()]
    skipped = _skips(old_lines, new_lines, failing, config, folder)
    if skipped or not config:
        return skipped
    return (
        _selects_without(old_lines, new_lines, failing)
        or _names_anew(old_lines, new_lines, failing)
        or _drops(old, new, failing)
    )


def _skips(old_lines: list[str], new_lines: list[str], failing: set[str], config: bool, folder: str) -> str:
    """An added line with a skipping word beside a failing name (in its block, by another spelling, by
    its head, by a glob, or in the failing target's own build file)."""
    kept = set(old_lines)
    for index, line in enumerate(new_lines):
        if line in kept or not SKIPPING.search(line):
            continue
        text = " ".join(new_lines[_block_start(new_lines, index) : index + WINDOW + 1])
        near = _names(text) & failing or {t for t in failing if " " in t and t in text}
        near |= {t for t in failing if _spelled_in(t, text) or _heads(t, line)}
        near |= {t for t in failing if _globbed(t, line)}
        if config and folder and len(folder) >= 3 and SKIP_TAG.search(line):
            near |= {
                t for t in failing if t == folder or t.startswith(folder + "/") or t.endswith("/" + folder)
            }
        if near:
            return f"skips the failing {min(near)!r}: {line[:80]!r}"
    return ""


def _selects_without(old_lines: list[str], new_lines: list[str], failing: set[str]) -> str:
    """A selection of what runs, added, that no longer takes in a failing file of its folders."""
    kept = set(old_lines)
    for line in new_lines:
        if line in kept or not SELECTION.search(line):
            continue
        chosen = [m[0] for m in GLOB.finditer(line)] + list(_names(line))
        dirs = {c.split("/", 1)[0] for c in chosen if "/" in c}
        left = {
            t
            for t in failing
            if "/" in t
            and t.split("/", 1)[0] in dirs
            and SOURCE_FILE.search(t)
            and not any(
                t == c or fnmatch.fnmatchcase(t, c) or fnmatch.fnmatchcase(t, "*/" + c) for c in chosen
            )
        }
        if left and chosen:
            return f"selects what runs without the failing {min(left)!r}: {line[:80]!r}"
    return ""


def _names_anew(old_lines: list[str], new_lines: list[str], failing: set[str]) -> str:
    """A failing rule or test named anew as a list entry of a configuration: set aside there."""
    kept = set(old_lines)
    before = " ".join(old_lines)
    for line in new_lines:
        if line not in kept and BARE_ITEM.match(line):
            named = {t for t in _names(line) & failing if "/" not in t and not SOURCE_FILE.search(t)}
            named = {t for t in named if t not in before}
            if named:
                return f"names the failing {min(named)!r} in its configuration: {line[:80]!r}"
    return ""


def _drops(old: str, new: str, failing: set[str]) -> str:
    """A failing name, its file's stem, or a glob that took it in, gone from a configuration."""
    dropped = (_names(old) - _names(new)) & failing
    stems = {_stem(t) for t in failing} - {""}
    dropped |= (_words(old) - _words(new)) & stems
    dropped |= {t for t in failing if _globbed(t, old) and not _globbed(t, new) and t not in new}
    return f"drops the failing {min(dropped)!r} from what runs" if dropped else ""


BARE_ITEM = rx.compile(r"""^(?:-\s+)?['"]?[\w.:/@#$-]+['"]?\s*,?$|^\[-?[\w:]+\]$""")
"""A list entry and nothing else (``'PSAvoidUsingPlainTextForPassword',``, ``CVE-2026-31337``)."""
SKIP_TAG = rx.compile(r"(?i)\b(?:manual|skip\w*|disabled?|exclusive|flaky|broken)\b")
"""The words of a skip that need no name beside them: in the failing target's own build file they mean it."""
SELECTION = rx.compile(
    r"(?i)\b(?:tests?|testMatch|test_?paths|testpaths|include|files|roots|spec_?files?|specs?|test_?dirs?|"
    r"test_?files?|test_?patterns?)\b['\"]?\s*(?:=>|[:=])"
)
"""A key choosing which tests run (MakeMaker's ``TESTS =>``, jest's ``testMatch``, pytest's ``testpaths``)."""
SOURCE_FILE = rx.compile(r"\.\w{1,5}$")
BLOCK_BACK = 6
"""Lines back to the start of the block a skip sits in (``name = "quote_test"`` three lines over ``tags``)."""
CLOSER = rx.compile(r"^[)\]}]+[;,]?$|^end$|^$")


def _block_start(lines: list[str], index: int) -> int:
    """Where the block holding ``lines[index]`` starts, at most ``BLOCK_BACK`` lines back."""
    start = index
    while start > 0 and index - start < BLOCK_BACK and not CLOSER.match(lines[start - 1]):
        start -= 1
    return min(start, max(0, index - WINDOW))


def _heads(name: str, line: str) -> bool:
    """A word of ``line`` that is the head of the failing ``name`` (``myapp.billing-test`` of
    ``myapp.billing-test/prorates-mid-cycle-upgrade``, ``testFuzz_`` of ``testFuzz_deposit``), or a bare
    folder a ``!`` pattern leaves out (``"!src"`` of ``src/router.cr``)."""
    for m in rx.finditer(r"(!?)([\w.:/#-]{6,}|(?<=!)[\w.-]{2,})", line):
        head = m[2]
        if name.startswith(head) and name != head and (head[-1] in "_./:#-" or name[len(head)] in "_./:#-"):
            return True
        if m[1] and name.startswith(head.rstrip("/") + "/"):
            return True
    return False


GENERIC_STEMS = frozenset(
    "test tests spec specs main index init setup utils util helpers helper common config conftest lib mod "
    "core base types errors error check checks build".split()
)
"""File stems too common to stand for one failing thing."""


def _stem(name: str) -> str:
    """``tdiff`` of ``tests/tdiff.nim``: how a runner's list often names a failing file; "" for a name that
    is not a file or whose stem is too common."""
    if not rx.search(r"/|\.\w{1,5}$", name) or rx.search(r"\s", name):
        return ""
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    return stem if len(stem) >= 4 and stem.lower() not in GENERIC_STEMS else ""


def _words(text: str) -> set[str]:
    """The words of ``text``, whole and split at underscores (``run_integration_tests``: ``integration``)."""
    out: set[str] = set()
    for word in (m[0] for m in rx.finditer(r"\w+", text)):
        out.add(word)
        if "_" in word:
            out.update(w for w in word.split("_") if w)
    return out


def _spelled_in(name: str, text: str) -> bool:
    """``name`` of several words spelled in ``text`` with other separators (``Ledger.Amount.round`` in
    ``/Ledger.Amount/round/rounds half…/``)."""
    words = [m[0] for m in rx.finditer(r"\w+", name)]
    if len(words) < 2 or len(name) < 8:
        return False
    pattern = r"(?<!\w)" + r"\W{1,3}".join(re.escape(w) for w in words) + r"(?!\w)"
    return rx.search(pattern, text) is not None


def _globbed(name: str, text: str) -> bool:
    """A glob in ``text`` (``tests/*_test.yaml``) matches ``name`` or its tail."""
    globs = [m[0] for m in GLOB.finditer(text) if len(rx.sub(r"[*./]", "", m[0])) >= 3]
    return any(fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(name, g.rsplit("/", 1)[-1]) for g in globs)


def _pieces(name: str) -> set[str]:
    """A name and its tails that are names too: ``src/varint.zig`` of ``/home/u/x/src/varint.zig``,
    ``testParsesGermanLocale`` of ``DecimalTests.testParsesGermanLocale``, ``prorate/3`` of
    ``Pennant.Billing.prorate/3``."""
    out = {name}
    if "/" in name:  # `services/quota/quota_test/test.log`: the target is one of its folders
        out |= {part for part in name.split("/") if rx.fullmatch(r"[A-Za-z][A-Za-z0-9]*_\w+", part)}
    for sep in "/.":
        parts = name.split(sep)
        out |= {t for t in (sep.join(parts[i:]) for i in range(1, len(parts))) if NAME.fullmatch(t)}
    return out


def _names(text: str) -> set[str]:
    return {m[0].rstrip(":.") for m in NAME.finditer(text)}
