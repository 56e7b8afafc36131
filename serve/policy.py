"""The session's policy: what the user allowed or forbade in words, read once per user message.

Rules consult it before they block a change to a gate: an action the user asked for (regenerate golden
files, update snapshots, lower a named threshold, register a marker, add a fixture, add an opt-in
``sitecustomize.py``, install the project editable, add a benchmark target, edit or delete named tests)
is not tampering, and a block notice names the user's sentence that forbade what the call does. Nothing
else reads the user's words for permission; what this reader does not understand leaves the default
rules in force.

Grammar (one sentence at a time; a sentence ends at ``.``, ``!``, ``?``, ``;`` or a line break):

    sentence  := limit | grant
    grant     := [opener] verb-phrase        (imperative or permissive: "please ...", "you may ...",
                                              "feel free to ...", "it's fine to ...", "go ahead and ...",
                                              "I want you to ...", "we need to ...", or the bare verb)
    limit     := "do not" | "don't" | "never" | "must not" | "should not" | "no need to" | "avoid"
                 + verb-phrase (the negation reaches an action that starts within 30 characters after it:
                 "bump the threshold so we don't slide back" is a grant),
                 or  paths + ("are"|"is") ("read-only"|"off-limits"|"frozen"),
                 or "leave" paths ("alone"|"as they are"|"untouched")
    verb-phrase := action [objects]

    action (the ``Action`` it grants):
      regenerate|update|refresh|re-record|rebuild|accept|bless  + snapshots|goldens|golden files|
          expected output|fixtures|baselines|approvals, or snapshots ... "and accept them", or
          overwrite|rewrite|regenerate + an expected-output path (testdata/, /expected/, .snap, .golden,
          .out)                                                                -> UPDATE_SNAPSHOTS
      raise|bump|increase|tighten + threshold words                            -> RAISE_THRESHOLD
      lower|reduce|decrease|relax|drop|loosen|widen + threshold words          -> LOWER_THRESHOLD
          (threshold words: coverage, fail_under, threshold, minimum, limit, budget, bar, gate,
           max-warnings, timeout, tolerance, epsilon, atol, rtol, minimum_coverage, maxIssues)
      register + marker                                                        -> REGISTER_MARKER
      add|create|write + fixture                                               -> ADD_FIXTURE
      add|create|write|enable + sitecustomize                                  -> ADD_SITECUSTOMIZE
      install + editable|-e|"in development mode"|"the project"|"the package", set up + environment|
          project|dependencies, install|add|upgrade|bump + dependencies|packages|modules, upgrade X to
          vN|the latest, upgrade|bump|pin|update + requirement|version, move|migrate|switch to X (vN)
          ... add|install it, install anything|whatever|any ..., tidy the module, pip|npm|gem|cargo|go
          install, cargo add, go get (the hosts rule also lets through, ungranted, installs of what the
          project declares and of packages the user named: ``rules.installs``)
                                                                               -> INSTALL_PROJECT
      add|create|write + benchmark                                             -> ADD_BENCHMARK
      edit|modify|update|change|fix|rewrite|adjust + tests or a test path      -> EDIT_TESTS
      delete|remove|drop + tests or a test path                                -> DELETE_TESTS
      skip|disable|xfail|mark + tests or a test path, add + t.Skip|skip|xfail|@Disabled|@Ignore
                                                                               -> SKIP_TESTS
      edit|modify|update|change|adjust|make + CI, workflow, pipeline, Makefile, recipe, pyproject,
          setup.cfg, tox.ini, package.json, a step or job; switch|turn ... off; disable a rule, lint or
          check; add ... to an ignore/exclude list; ignore E501; exclude X from a tool (lint, detekt)
                                                                               -> EDIT_GATES
      (for tests: the verb's object comes within four words that are not "so", "until", "make", "to",
       "and", "then", ...: "change the code so the tests pass" grants nothing)

    objects: paths and globs in the sentence (backquoted, or path-like: a ``/``, a file extension or a
    ``*``); none means the grant covers what the action's words name (any snapshot, any threshold).

A limit beats a grant for the same path. A grant with paths covers those paths only (a glob by
``fnmatch``, a folder by prefix, a bare file name by base name); a grant on tests that names none ("remove
that test file") covers the paths its message names elsewhere. A command with no path (``jest -u``) is
covered by any grant of its action. Rules may ask for a grant that names the path (graders, CI files).
"""

from __future__ import annotations

import enum
import fnmatch
import posixpath
import re
from dataclasses import dataclass


class Action(enum.Enum):
    UPDATE_SNAPSHOTS = "update snapshots or golden files"
    RAISE_THRESHOLD = "raise a threshold"
    LOWER_THRESHOLD = "lower a threshold"
    REGISTER_MARKER = "register a test marker"
    ADD_FIXTURE = "add a test fixture"
    ADD_SITECUSTOMIZE = "add a sitecustomize.py"
    INSTALL_PROJECT = "install the project"
    ADD_BENCHMARK = "add a benchmark"
    EDIT_TESTS = "edit tests"
    DELETE_TESTS = "delete tests"
    SKIP_TESTS = "skip tests"
    EDIT_GATES = "edit CI, build or tool configuration"


@dataclass(frozen=True)
class Grant:
    """One permission (or, in ``SessionPolicy.limits``, one prohibition) and the sentence it rests on."""

    action: Action | None
    """None for a limit on paths whatever the action ("leave tests/ alone")."""
    paths: tuple[str, ...]
    line: str
    tests: tuple[str, ...] = ()
    """Tests a grant on tests names by identifier or title ("mark test_ws_reconnect as skipped"): a skip
    it allows is one of theirs (``names_only``)."""

    def names_only(self, defined: set[str], named: frozenset[str] = frozenset()) -> bool:
        """Whether a change defining the tests ``defined`` stays within the tests this grant names: every one
        of them is named (a grant that names none stays within; a change whose tests can't be told, a
        module-wide skip, is within only a grant that names none)."""
        if not self.tests:
            return True
        if not defined:
            return bool(set(self.tests) & named)
        return all(d in self.tests or len(d) >= 4 and d in self.line for d in defined)

    def covers(self, path: str | None) -> bool:
        if not self.paths or path is None:  # no path: a command the grant's action names (``jest -u``)
            return True
        return any(path_matches(pattern, path) for pattern in self.paths)


class ChangeKind(enum.Enum):
    """What a sentence asks to do to the things it names (``NamedChange``)."""

    REMOVE = "remove"
    EXCLUDE = "skip, exclude or label"
    SET = "set to a value"
    ADD = "add"
    DESCRIBED = "a change described in the file's own words"


@dataclass(frozen=True)
class NamedChange:
    """A sentence that asks for a change to things it names exactly: "Remove TestLoadLegacyV1Snapshot",
    "Deselect test_invoice_rounding in pytest.ini", "Set TreatWarningsAsErrors to false", "label
    syslog_udp and syslog_tcp as `network`". A change that does that to those things and nothing else is
    what the user asked for, however the sentence is worded (``rules.named``)."""

    kind: ChangeKind
    objects: tuple[str, ...]
    values: tuple[str, ...]
    about_tests: bool
    line: str
    labels: bool = False
    """The verb labels or marks ("label them `network`"): a label, never a selection of what runs."""


@dataclass(frozen=True)
class SessionPolicy:
    grants: tuple[Grant, ...] = ()
    limits: tuple[Grant, ...] = ()
    named: tuple[NamedChange, ...] = ()

    def grant_for(self, action: Action, path: str | None = None) -> Grant | None:
        """The grant that allows ``action`` (on ``path``), unless a limit forbids it; else None."""
        if self.limit_for(action, path) is not None:
            return None
        for grant in self.grants:
            if grant.action is action and grant.covers(path):
                return grant
        return None

    def grants_for(self, action: Action, path: str | None = None) -> list[Grant]:
        """Every grant that allows ``action`` (on ``path``), none when a limit forbids it."""
        if self.limit_for(action, path) is not None:
            return []
        return [g for g in self.grants if g.action is action and g.covers(path)]

    def limit_for(self, action: Action | None, path: str | None = None) -> Grant | None:
        """The user's prohibition of ``action`` on ``path`` (or of any change to ``path``), if any."""
        for limit in self.limits:
            if limit.action not in (None, action):
                continue
            if limit.paths and limit.covers(path) or not limit.paths and limit.action is action:
                return limit
        return None

    def merged(self, other: SessionPolicy) -> SessionPolicy:
        return SessionPolicy(
            self.grants + tuple(g for g in other.grants if g not in self.grants),
            self.limits + tuple(g for g in other.limits if g not in self.limits),
            self.named + tuple(n for n in other.named if n not in self.named),
        )


EMPTY = SessionPolicy()

SENTENCE = re.compile(r"[^.!?;\n]+(?:\.(?=\w)[^.!?;\n]*)*")
PATHISH = re.compile(
    r"`([^`\n]{1,200})`"
    r"|(?<![\w/.-])((?:\.{0,2}/)?[\w.*-]+(?:/[\w.*-]*)+|(?:GNU)?[Mm]akefile|Justfile|Rakefile|Dockerfile|[\w*-]+(?:\.[\w-]+)*\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|json|"
    r"ya?ml|toml|ini|cfg|txt|snap|golden|out|expected|csv|sh|mk|lock|md|cjs|mjs|cts|mts|xml|gradle|kts|neon|"
    r"properties|conf)|\.[\w-]+rc(?:\.\w+)?\b|\.[\w-]+ignore\b|\.flake8\b|[\w-]*\*[\w.*-]*)(?![\w/])"
)
LIMIT_OPENER = re.compile(
    r"\b(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|no\s+need\s+to|avoid|"
    r"without|refrain\s+from|not\s+allowed\s+to|may\s+not|can(?:not|'t)|please\s+don'?t)\b",
    re.I,
)
FROZEN = re.compile(
    r"\b(?:read[- ]only|off[- ]limits|frozen|untouchable|must\s+stay\s+as\s+(?:is|they\s+are))\b"
    r"|\bleave\b.*\b(?:alone|as\s+(?:is|they\s+are)|untouched|unchanged)\b",
    re.I,
)


def _object(verbs: str, objects: str) -> str:
    """``verb`` then, within four words none of which turns the object into a purpose ("change the code
    so the tests pass"), one of ``objects``."""
    purpose = r"so|until|make|making|get|getting|to|and|then|while|when|if|but"
    gap = rf"(?:\s+(?!(?:{purpose})\b)[\w`'./*-]+){{0,4}}?"
    return rf"\b(?:{verbs})\b{gap}\s+(?:the\s+|a\s+|an\s+)?\b(?:{objects})\b"


TEST_WORDS = r"(?:tests?|specs?|test\s+(?:files?|cases?|suites?)|assertions?|the\s+suite)"
THRESHOLD_WORDS = (
    r"(?:coverage|fail_under|fail-under|threshold|minimum|min(?:imum)?[- ]coverage|limit|budgets?|bar|gate|"
    r"p\d{2}|latency\s+targets?|slos?|"
    r"max[-_ ]?warnings|timeout|cutoff|floor|tolerance|epsilon|atol|rtol|minimum_coverage|maxIssues)"
)
GATE_NUMBER_WORDS = (
    r"(?:coverage|fail_under|fail-under|threshold|minimum(?:_coverage)?|min(?:imum)?[- ]coverage|budgets?|"
    r"p\d{2}|latency\s+targets?|slos?|max[-_ ]?warnings|maxIssues|floor|cutoff)"
)
"""Limits of a gate a user may set to a value (not a request timeout or a retry limit)."""
SET_TO = (
    rf"\b(?:set|change|make|move|put)\b[^.;!?\n]{{0,40}}?{GATE_NUMBER_WORDS}[^.;!?\n]{{0,30}}?\bto\s+\d"
    rf"|{GATE_NUMBER_WORDS}(?:[^.;!?\n]|\.(?=\w)){{0,40}}?\bfrom\s+\d[\d.]*\s*(?:%|[a-zA-Z]{{1,3}})?\s+to\s+\d"
)
"""A threshold set to a value the user gives: they chose the direction ("set minimum_coverage to 92")."""
ACTIONS: tuple[tuple[Action, re.Pattern[str]], ...] = (
    (
        Action.UPDATE_SNAPSHOTS,
        re.compile(
            r"\b(?:regenerate|re-?generate|update|refresh|re-?record|rebuild|accept|bless|recreate|redo|"
            r"re-?bake|overwrite|bump|regen|promote|(?:generate|create|record|make)(?=[^.;!?\n]{0,40}?\bbaselines?\b))"
            r"\b[^.;!?\n]{0,60}?\b(?:snapshots?|expect\s+tests?|expect\s+outputs?|"
            r"todo\s+file|rubocop_todo|goldens?|golden\s+(?:files?|outputs?|data)|"
            r"expected\s+(?:outputs?|results?|files?)|fixtures?|baselines?|approvals?|approved\s+files?|"
            r"cassettes?|recordings?)\b"
            r"|\b(?:snapshots?|goldens?|golden\s+files?|expected\s+outputs?)\b[^.;!?\n]{0,80}?(?:\band\b|\bthen\b|,|\u2014|"
            r"\s-)\s+(?:\w+\s+){0,2}?(?:accept|update|regenerate|refresh|re-?record|overwrite)\s+(?:them|it|those)\b"
            r"|\b(?:snapshots?|goldens?|golden\s+files?|expected\s+outputs?|fixtures?|baselines?)\b[^.;!?\n]{0,80}?"
            r"\b(?:needs?|should\s+be|must\s+be|to\s+be|want)\s+(?:to\s+be\s+)?(?:regenerat|re-?generat|updat|refresh|"
            r"re-?record|rewrit|re-?bless)\w*"
            r"|\b(?:snapshots?|goldens?|golden\s+files?|baselines?)\b[^.;!?\n]{0,40}?\b(?:needs?|can|may)\s+"
            r"(?:accepting|updating|regenerating|refreshing|re-?recording|blessing|(?:be\s+)?(?:accepted|updated|"
            r"regenerated|refreshed|re-?recorded|blessed))\b"
            r"|\b(?:regenerate|re-?generate|update|refresh|re-?record|rewrites?|overwrite|replace|re-?bless)\b"
            r"[^.;!?\n]{0,40}?(?:__snapshots__|/golden|testdata/|/expected/|\.snap\b|\.golden\b|\.out\b|"
            r"\.expected\b|\.approved\.)",
            re.I,
        ),
    ),
    (
        Action.RAISE_THRESHOLD,
        re.compile(
            rf"\b(?:raise|bump|increase|tighten|lift|up)\b[^.;!?\n]{{0,60}}?\b{THRESHOLD_WORDS}\b|{SET_TO}"
            rf"|\b{THRESHOLD_WORDS}\b[^.;!?\n]{{0,40}}?\b(?:raised|increased|bumped|tightened|go\s+up)\b",
            re.I,
        ),
    ),
    (
        Action.LOWER_THRESHOLD,
        re.compile(
            rf"\b(?:lower|reduce|decrease|relax|drop|loosen|ease|widen)\b[^.;!?\n]{{0,60}}?\b{THRESHOLD_WORDS}\b|{SET_TO}"
            rf"|\b{THRESHOLD_WORDS}\b[^.;!?\n]{{0,40}}?\b(?:lowered|reduced|decreased|relaxed|dropped|"
            r"go\s+down)\b"
            rf"|\b{THRESHOLD_WORDS}\b[^.;!?\n]{{0,40}}?\b(?:can|may|should|could|will)\s+(?:drop|go\s+down|"
            r"come\s+down|be\s+(?:lowered|reduced|relaxed))\b",
            re.I,
        ),
    ),
    (
        Action.REGISTER_MARKER,
        re.compile(r"\b(?:register|declare|add)\b[^.;!?\n]{0,60}?\bmarkers?\b", re.I),
    ),
    (
        Action.ADD_FIXTURE,
        re.compile(r"\b(?:add|create|write|provide|define|put)\b[^.;!?\n]{0,60}?\bfixtures?\b", re.I),
    ),
    (
        Action.ADD_SITECUSTOMIZE,
        re.compile(r"\b(?:add|create|write|enable|ship|provide)\b[^.;!?\n]{0,60}?\bsitecustomize\b", re.I),
    ),
    (
        Action.INSTALL_PROJECT,
        re.compile(
            r"\binstall\b[^.;!?\n]{0,60}?(?:\beditable\b|(?<!\w)-e(?!\w)|\bdevelop(?:ment)?\s+mode\b|"
            r"\bthe\s+(?:project|package|repo(?:sitory)?|library|module)\b|\blocally\b|\bin\s+place\b)"
            r"|\b(?:pip|npm|gem|cargo|go|bundle|poetry|uv)\s+install\b|\bcargo\s+add\b|\bgo\s+get\b"
            r"|\binstall\s+(?:anything|whatever|any\b)"
            r"|\bset\s+(?:\w+\s+)?up\b[^.;!?\n]{0,40}?\b(?:environment|env|project|repo|dependencies|deps|"
            r"toolchain|venv|virtualenv)\b"
            r"|\b(?:install|fetch|restore|add|upgrade|update|bump)\b[^.;!?\n]{0,40}?\b(?:dependenc(?:y|ies)|deps|"
            r"packages?|modules?|gems?|crates?|lockfile|requirements)\b|\btidy\s+(?:the\s+)?modules?\b|\bgo\s+mod\s+tidy\b"
            r"|\b(?:upgrade|bump)\s+[\w@/.-]+\s+to\s+(?:v?\d|the\s+latest)"
            r"|\b(?:upgrade|bump|pin|update)\b[^.;!?\n]{0,40}?\b(?:requirements?|versions?|pins?)\b"
            r"|\b(?:move|migrate|switch|port)\b[^.;!?\n]{0,60}?\bto\s+[\w@/.-]+\s*\(?(?:v|@)\d"
            r"[^.;!?\n]{0,40}?\b(?:add|install)\s+it\b",
            re.I,
        ),
    ),
    (
        Action.ADD_SITECUSTOMIZE,
        re.compile(r"\b(?:add|create|write|drop|put|place)\b[^.;!?\n]{0,40}?\.pth\b", re.I),
    ),
    (
        Action.ADD_BENCHMARK,
        re.compile(r"\b(?:add|create|write|set\s+up)\b[^.;!?\n]{0,60}?\bbench(?:mark)?s?\b", re.I),
    ),
    (
        Action.SKIP_TESTS,
        re.compile(
            _object(r"skip|disable|xfail|quarantine|mark", rf"{TEST_WORDS}|flaky")
            + r"|\b(?:add|put|use)\b[^.;!?\n]{0,30}?(?:\bt\.Skip|\bskip(?:if|Unless)?\b|\bxfail\b|@Disabled|"
            r"@Ignore|\bpending\b|XCTSkip|GTEST_SKIP|@test_broken|\bskip_on_\w+|\bskip_if\w*)"
            r"|\b(?:behind|under)\s+(?:an?\s+|the\s+)?`?[\w-]+`?\s+build\s+(?:tag|constraint)"
            r"|\b(?:skip\w*|xfail|ignore|disable\w*)(?:\(\))?[^.;!?\n]{0,20}?\b(?:is|are)\s+(?:fine|ok(?:ay)?|"
            r"acceptable|allowed)\b|\b(?:fine|ok(?:ay)?|alright)\s+to\s+(?:skip|xfail|ignore|disable|deselect|mark)\b",
            re.I,
        ),
    ),
    (
        Action.DELETE_TESTS,
        re.compile(_object(r"delete|remove|drop|get\s+rid\s+of", rf"{TEST_WORDS}|obsolete"), re.I),
    ),
    (
        Action.EDIT_TESTS,
        re.compile(
            _object(
                r"edit|modify|update|change|rewrite|adjust|amend|touch|extend|refactor|rename", TEST_WORDS
            ),
            re.I,
        ),
    ),
    (
        Action.EDIT_GATES,
        re.compile(
            r"\b(?:switch|turn)\b[^.;!?\n]{0,40}?\boff\b|\bdisable\b[^.;!?\n]{0,30}?\b(?:rules?|lint\w*|checks?|"
            r"warnings?|linters?)\b|\badd\b[^.;!?\n]{0,40}?\b(?:ignore|exclude|allow|omit)(?:\s+list|-list|s)?\b"
            r"|\badd\b[^.;!?\n]{0,40}?\bto\s+(?:the\s+)?\.?[\w-]*ignore\b"
            r"|\b(?:keep|leave)\b[^.;!?\n]{0,50}?\bout\s+of\s+(?:the\s+)?(?:default\s+)?[\w-]+"
            r"|\bignore\s+(?:rule\s+)?[A-Z]{1,4}\d{2,4}\b|\bexclude\b[^.;!?\n]{0,60}?\bfrom\s+(?:the\s+)?[\w-]+",
            re.I,
        ),
    ),
    (
        Action.EDIT_GATES,
        re.compile(
            _object(
                r"edit|modify|update|change|adjust|amend|touch|rewrite|park|pause|disable|skip",
                r"ci|workflows?|pipelines?|make\s*files?|make\s+targets?|recipes?|pyproject(?:\.toml)?|"
                r"setup\.cfg|tox\.ini|package\.json|(?:[\w-]+\s+)?(?:steps?|jobs?)",
            ),
            re.I,
        ),
    ),
)
NAMED_TEST = re.compile(
    r"(?<![\w./-])[\w./-]{0,200}?(?<![A-Za-z])(?:tests?|specs?|__tests__)(?![A-Za-z])[\w./-]{0,200}?\.\w+"
    r"|\btest_\w+|\btest[A-Z]\w*|\bTest[A-Z]\w*|\b[A-Z]\w*(?:Tests?|Spec)\b|\b\w+_test\b|\b[A-Z]\w*#\w+"
    r"|\b[a-z]+[A-Z]\w*\s+(?:test|spec)\b|\b(?:the|this|that)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:test|spec)\b"
    r"|\b(?:test|spec|example|case|it)\s+[`'\"][^`'\"\n]{3,80}[`'\"]"
    r"|[`'\"][^`'\"\n]{3,80}[`'\"]\s+(?:test|spec|example|case)\b"
)
"""A test the user names: a test file, a test's identifier, or a quoted test title."""
TEST_FILE = r"`?[\w./-]{0,200}?(?:test|spec)[\w./-]{0,200}"
PRONOUN = r"(?:it|them|that|this|those)"
TEST_NAME = (
    r"(?:test_\w+|test[A-Z]\w*|Test[A-Z]\w*|[A-Z]\w*(?:Tests?|Spec)|[\w./-]*(?:test|spec)[\w./-]*\.\w+)"
)
TARGETED: tuple[tuple[Action, re.Pattern[str]], ...] = (
    (
        Action.SKIP_TESTS,
        re.compile(
            rf"\b(?:mark|tag|make|set|flag|annotate)\s+(?:{PRONOUN}|the\s+(?:test|spec|case)|{TEST_NAME})\b"
            r"(?:\s+\S+){0,4}?\s+(?:as\s+|with\s+)?[`'\"#\[]*"
            r"(?:skip(?:ped|s)?|xfail(?:ed)?|ignored?|pending|disabled?|quarantined?)\b"
            rf"|\b(?:skip|xfail|quarantine|ptest|xit|xtest|xdescribe|pend|mute)\s+{PRONOUN}\b|\b(?:test|it|describe)\.skip\s+{PRONOUN}\b"
            r"|\bchange\b[^.;!?\n]{0,100}?\bto\s+[`'\"]?(?:ignore|skip|xit|pending|xfail)\b"
            r"|\bdisable\s+`?[\w.:]*(?:test|spec)\w*"
            r"|\b(?:disable|skip|xfail|quarantine|ignore)\s+(?:just\s+|only\s+)?(?:that|this|the)\s+one\b"
            r"|\bwith\s+(?:an?\s+)?@(?:Disabled|Ignore|Skip)\w*"
            r"|\b(?:with|add|using|put)\s+(?:a\s+|an\s+)?(?:[\w.-]+\s+)?(?:skip|xfail|ignore|pending)\w*\s+(?:marker|"
            r"decorator|annotation|tag|attribute)",
            re.I,
        ),
    ),
    (
        Action.DELETE_TESTS,
        re.compile(
            rf"\b(?:delete|remove|drop|git\s+rm|rm|get\s+rid\s+of|throw\s+away|nuke)\s+(?:{PRONOUN}|the\s+file)\b"
            rf"|\b(?:delete|remove|drop|git\s+rm|rm)\s+{TEST_FILE}",
            re.I,
        ),
    ),
    (
        Action.EDIT_TESTS,
        re.compile(
            rf"\b(?:git\s+mv|mv|rename)\s+(?:{PRONOUN}\b|{TEST_FILE})|\bmove\s+{TEST_FILE}"
            r"|\b(?:remove|drop|delete|take\s+out|get\s+rid\s+of)\b(?:\s+\S+){0,3}?\s+[`'\"]?(?:\.only\b|xfail\b|"
            r"fdescribe\b|\bfit\b|\bxit\b|@skip\w*|@pytest\.mark\.(?:skip|xfail)\w*|the\s+(?:skip|xfail)\s+marker)"
            r"|\b(?:set|add|put)\b[^.;!?\n]{0,60}?\b(?:on|to|in|for)\s+(?:that|this)\s+test(?:'s)?\b"
            r"|\b(?:turn|switch|set|use|allow|compare|loosen|relax|change|tolerate)\b[^.;!?\n]{0,80}?\b(?:in|for|on)\s+"
            r"(?:only\s+)?(?:(?:that|this)\s+(?:one\s+)?|the\s+one\s+)(?:test|spec|assert\w*|example|case)\b"
            rf"|\b(?:give|allow|let)\s+(?:only\s+)?{TEST_FILE}\b[^.;!?\n]{{0,60}}?\b(?:tolerance|max\w*|threshold|"
            r"diff\w*|delta|epsilon|allowance|leeway)"
            r"|\bmake\s+(?:the\s+)?\S+\s+(?:test|spec)s?\s+(?:check|accept|ignore|allow|tolerate|not\s+care)\b"
            r"|\b(?:loosen|relax|weaken|simplify)\s+(?:that|this|the)\s+(?:one\s+)?(?:assert\w*|expectation|check)\b"
            r"|\badd\s+(?:that|this|the|a|the\s+new)\s+(?:case|row|example)\s+to\s+the\s+(?:table|cases|rows|examples)",
            re.I,
        ),
    ),
)
"""Grants that need a test named in the same or the previous sentence (``NAMED_TEST``): "mark it
skipped", "delete that file"."""
GATE_NOUN = re.compile(
    r"\b(?:jobs?|steps?|checks?|lint\w*|ci|workflows?|pipelines?|stages?|gates?|hooks?|typecheck\w*|mypy|tsc|rules?|polic(?:y|ies)|"
    r"eslint|ruff|flake8|pylint|rubocop|phpstan|detekt|clippy|coverage|codecov)\b",
    re.I,
)
GATE_IN_CONTEXT = (
    Action.EDIT_GATES,
    re.compile(
        r"\badd\b[^.;!?\n]{0,40}?\b(?:override|exemption)s?\b"
        r"|\b(?:advisory(?!\s+(?:checks?|scans?|db|database|ids?|feed))|non-?blocking|non-?fatal|continue-on-error|allow_failure|"
        r"allowed\s+to\s+fail)\b"
        r"|\blet\b[^.;!?\n]{0,40}?\bfail\b",
        re.I,
    ),
)
"""Loose words for a gate change ("make it advisory", "add an override") that grant only beside a gate
noun in the same sentence ("make the socket non-blocking" grants nothing)."""
CONFIG_PATH = (
    r"`?(?:[\w./-]*/)?(?:[\w.-]+\.(?:ya?ml|toml|ini|cfg|json|jsonc|xml|neon|props|gradle|kts|conf|sbt|exs|cmake|"
    r"mk|bazel)|\.[\w-]+rc(?:\.\w+)?|(?:GNU)?[Mm]akefile|[Jj]ustfile|Rakefile|CMakeLists\.txt|\.flake8|"
    r"\.clang-tidy|\.bazelrc)\b`?"
)
CONFIG_VERB = (
    r"set|change|make|turn|switch|mark|configure|lower|raise|relax|bump|reduce|increase|enable|disable|add|"
    r"remove|drop|edit|update|adjust|tweak|loosen|allow|put|comment\s+out|exclude|ignore|modify|rewrite"
)
NAMED_CONFIG = (
    Action.EDIT_GATES,
    re.compile(
        rf"\b(?:{CONFIG_VERB})\b(?:(?!\b(?:so|until|because|since|such|unless|make|makes|pass|passes)\b)"
        rf"[^.;!?\n]){{0,80}}?\b(?:in|of|to|from|inside|within)\s+(?:the\s+)?(?:\w+\s+){{0,2}}?{CONFIG_PATH}"
        rf"|\b(?:{CONFIG_VERB})\s+(?:the\s+)?{CONFIG_PATH}(?!\s+(?:so|such|in\s+order|to\s+(?!\S*\d)))",
        re.I,
    ),
)
"""A change to a configuration file the sentence names ("lower it to 6 in phpstan.neon", "set the patch status
to informational in codecov.yml", "change phpstan.neon accordingly"): read only beside a loosening word
(``LOOSENING``, in the sentence or the one before), and the grant covers the named files only."""
LOOSENING = re.compile(
    r"\b(?:lower|relax|reduce|decrease|loosen|disable|turn\w*\s+off|switch\w*\s+off|exclude|ignore\w*|skip|deselect|"
    r"allow\w*|informational|advisory|non-?blocking|non-?fatal|warn(?:ing)?s?\s+only|false|off|level|overrides?|exempt\w*|"
    r"(?:keep|leave)\s+(?:\w+\s+){0,5}?out|"
    r"continue-on-error)\b"
    r"|['\"]not\s+[\w-]+['\"]|(?<![\w-])(?:-k|-m|--skip|--ignore|--deselect|--exclude)\b",
    re.I,
)
"""What a change to a named configuration file must be about for the sentence to grant loosening it."""
WRONG = re.compile(
    r"\b(?:tests?|specs?|expectations?|assertions?|cases?|rows?|examples?|test_\w+|test[A-Z]\w*|Test\w+|\w+Tests?|"
    r"\w+Spec)\b(?:\s+[\w:'\"{},\[\]()<>.=-]+){0,6}?\s+(?:is|are)\s+(?:\w+\s+)?(?:wrong|incorrect|bogus|mistaken)\b"
    r"|\bwrong\s+(?:expected|expectation|assert\w*|row|case|example)"
    r"|\b(?:implementation|impl|code|parser|function|logic|behaviou?r)\s+is\s+(?:right|correct|fine)\b|\btypo\b"
    r"|\bexpected\s+(?:\w+\s+)?should\s+be\b",
    re.I,
)
MEANT = re.compile(r"\bby\s+design\b|\bon\s+purpose\b|\bintentional(?:ly)?\b|\b(?:team|we)\s+agreed\b", re.I)
"""The user says a behaviour is meant: then a change they ask for to an assertion named by its noun ("change
that assert to allow 1 wei") is the test's, but "fix it" may still mean the code."""
SNAPSHOT_NOUN = re.compile(
    r"\b(?:snapshots?|goldens?|golden\s+files?|expected\s+outputs?|fixtures?|baselines?|approvals?|expect\s+tests?)\b",
    re.I,
)
REDO_THEM = (
    Action.UPDATE_SNAPSHOTS,
    re.compile(
        r"\b(?:regenerate|re-?generate|update|refresh|re-?record|rewrite|accept|overwrite|redo|re-?bless|promote)\s+"
        r"(?:them|it|those|these)\b",
        re.I,
    ),
)
"""In a message about snapshots: "rewrite them" in the next sentence means the snapshots."""
OTHERS = re.compile(r"\b(?:other|rest|remaining)\b", re.I)
"""A limit on "the other tests" beside a grant is the grant's boundary, not a ban on the grant."""
"""The user says a test is wrong (not the code: "`add` is wrong" is no such sentence): then "fix it" means
the test."""
EXPECTATION_EDIT = (
    Action.EDIT_TESTS,
    re.compile(
        r"\b(?:correct|update|change|adjust)\b(?:\s+(?!to\b|so\b|and\b|return\w*\b)\S+){0,3}?\s+(?:the\s+)?"
        r"(?:test(?:'s)?\s+)?"
        r"expect(?:ations?|ed\s+(?:values?|strings?|outputs?|results?|numbers?|amounts?|totals?|counts?|figures?))\b"
        r"|\b(?:correct|update|change|adjust)\s+\S+\s+and\s+(?:the\s+)?(?:test(?:'s)?\s+)?expect(?:ations?|ed\s+values?)\b",
        re.I,
    ),
)
"""A named test's expectation changed in words ("change that expectation"): read wherever the message
names the test."""
TEST_FIX = r"fix|correct|change|update|adjust|amend"
TO_ITS_OBJECT = r"\b(?:\s+(?!failing\b|broken\b)\S+){0,4}?\s+"
"""A verb's object within four words that are not "failing" or "broken" (the code's state, not the test)."""
FIX_THE_TEST = (
    Action.EDIT_TESTS,
    re.compile(
        rf"\b(?:{TEST_FIX}){TO_ITS_OBJECT}(?:{PRONOUN}|the\s+test'?s?|expect\w*|"
        r"assert\w*|rows?|cases?|examples?|values?|strings?|tests?|specs?)\b",
        re.I,
    ),
)
FIX_THE_ASSERT = (
    Action.EDIT_TESTS,
    re.compile(
        rf"\b(?:{TEST_FIX}|compare){TO_ITS_OBJECT}(?:the\s+test'?s?|"
        r"expect\w*|assert\w*|rows?|examples?|(?:that|this)\s+(?:one\s+)?tests?)\b",
        re.I,
    ),
)
"""``FIX_THE_TEST`` without its pronoun: read where the user says a behaviour is meant (``MEANT``)."""
GATE_WORDS = {
    r"\bci\b|\bworkflows?\b|\bpipelines?\b": (".github/workflows/*", ".gitlab-ci.yml", ".circleci/*", "ci/*"),
    r"\bmake\s*files?\b|\bmake\s+targets?\b|\brecipes?\b": ("Makefile", "*.mk", "GNUmakefile"),
    r"\bpyproject\b": ("pyproject.toml",),
    r"\bmypy\b": ("mypy.ini", ".mypy.ini", "setup.cfg", "pyproject.toml"),
    r"\beslint\b": (".eslintrc*", "eslint.config.*", "package.json"),
    r"\b(?:ruff|flake8)\b": ("ruff.toml", ".ruff.toml", ".flake8", "setup.cfg", "pyproject.toml", "tox.ini"),
    r"\bsetup\.cfg\b": ("setup.cfg",),
    r"\btox\b": ("tox.ini",),
    r"\bpackage\.json\b": ("package.json",),
    r"\bjest\b": ("jest.config.*", "package.json"),
    r"\bvitest\b": ("vitest.config.*", "vite.config.*"),
    r"\bplaywright\b": ("playwright.config.*",),
    r"\bpytest\b": ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py"),
    r"\bpyright\b": ("pyrightconfig.json", "pyproject.toml"),
    r"\b(?:coverage|codecov)\b": (
        ".coveragerc",
        "pyproject.toml",
        "setup.cfg",
        "codecov.yml",
        "codecov.yaml",
    ),
    r"\bphpunit\b": ("phpunit.xml", "phpunit.xml.dist"),
    r"\bphpstan\b": ("phpstan.neon", "phpstan.neon.dist"),
    r"\bgolangci(?:-lint)?\b": (".golangci.yml", ".golangci.yaml"),
    r"\b(?:tsc|typescript)\b": ("tsconfig*.json",),
    r"\bnextest\b": (".config/nextest.toml",),
    r"\b(?:ctest|cmake)\b": ("CMakeLists.txt", "*.cmake"),
    r"\b(?:surefire|failsafe|maven)\b": ("pom.xml",),
    r"\bdetekt\b": ("detekt.yml", "detekt.yaml", "config/detekt.yml"),
    r"\bclippy\b": ("clippy.toml", "Cargo.toml", ".cargo/config.toml"),
    r"\bktlint\b": (".editorconfig",),
    r"\brubocop\b": (".rubocop.yml", ".rubocop_todo.yml"),
}
"""Gate kinds a sentence may name instead of a path, and the files they stand for."""
PLACE_WORDS = frozenset(w for w in GATE_WORDS if w.startswith((r"\bci", r"\bmake", r"\bpackage")))
"""CI, Makefile and package.json words: a place, not a tool (beside a named path they add nothing)."""
TOOL_WORDS = frozenset(
    {r"\bmypy\b", r"\beslint\b", r"\b(?:ruff|flake8)\b", r"\bpyproject\b", r"\bsetup\.cfg\b", r"\btox\b"}
)
"""Tool names that stand for their configuration files wherever the message names them (CI, Makefile and
package.json words count only in the grant's own sentence)."""
NEGATION_REACH = 30
"""A negation reaches an action starting at most this many characters after it ("do not update the
snapshots"; "bump the threshold so we don't slide back" negates nothing it precedes)."""
TEST_PATH_ACTIONS = frozenset({Action.EDIT_TESTS, Action.DELETE_TESTS, Action.SKIP_TESTS})
MAX_TEXT = 64 * 1024


def read_policy(text: str) -> SessionPolicy:
    """The grants and limits one user message states (see the module docstring)."""
    grants: list[Grant] = []
    limits: list[Grant] = []
    wrong = WRONG.search(text[:MAX_TEXT]) is not None
    meant = MEANT.search(text[:MAX_TEXT]) is not None
    named = NAMED_TEST.search(text[:MAX_TEXT]) is not None
    previous = ""
    for match in SENTENCE.finditer(text[:MAX_TEXT]):
        sentence = " ".join(match[0].split())
        if len(sentence) < 4:
            continue
        near = previous + " " + sentence  # a test or a snapshot named here or in the sentence before
        previous = sentence
        actions_read = ACTIONS
        if named:
            actions_read += (EXPECTATION_EDIT,) + (
                (FIX_THE_TEST,) if wrong else (FIX_THE_ASSERT,) if meant else ()
            )
        if named:  # a test named anywhere in the message: "mark that one example pending" two sentences on
            actions_read += TARGETED
        if SNAPSHOT_NOUN.search(near):
            actions_read += (REDO_THEM,)
        if GATE_NOUN.search(sentence):
            actions_read += (GATE_IN_CONTEXT,)
        if LOOSENING.search(near):
            actions_read += (NAMED_CONFIG,)
        paths = tuple(dict.fromkeys(p for p in _paths(sentence)))
        negations = [m.end() for m in LIMIT_OPENER.finditer(sentence)]
        actions = []
        limited = False
        for action, pattern in actions_read:
            found = pattern.search(sentence)
            if found is None:
                continue
            if any(0 <= found.start() - end <= NEGATION_REACH for end in negations):  # "do not update ..."
                limits.append(Grant(action, paths, sentence))
                limited = True
            elif action not in actions:
                actions.append(action)
        if negations and not limited and not actions:
            if paths and _changes(sentence[min(negations) :]):  # "don't touch ci/"
                limits.append(Grant(None, paths, sentence))
            continue
        frozen = FROZEN.search(sentence)
        if frozen and frozen[0].lower().startswith("leave"):  # "…in ci.yml, leave linux + lint alone"
            frozen = frozen if _paths(frozen[0]) else None
        if frozen and paths:
            left = tuple(_paths(frozen[0])) if frozen[0].lower().startswith("leave") else paths
            limits.append(Grant(None, left, sentence))
            continue
        for action in actions:
            covered = paths
            if (
                action in (Action.DELETE_TESTS, Action.SKIP_TESTS) and not covered
            ):  # "…pricing.lock; delete it"
                covered = tuple(dict.fromkeys(_paths(" ".join(near.split()))))
            if action is Action.EDIT_GATES and covered:  # "exclude src/gen from pyright": pyright's files too
                covered += _tool_files(sentence)
            if action is Action.EDIT_GATES and not covered:  # the tool the message names stands for its files
                covered = tuple(
                    g
                    for words, globs in GATE_WORDS.items()
                    if re.search(words, sentence, re.I)
                    or (words in TOOL_WORDS and re.search(words, text[:MAX_TEXT], re.I))
                    for g in globs
                )
            grants.append(Grant(action, covered, sentence))
    grants = [  # a pronoun beside only non-test files ("a stale pricing.lock; delete it") is about those
        g
        for g in grants
        if not g.paths
        or not (
            g.action in (Action.DELETE_TESTS, Action.SKIP_TESTS)
            and not any(TESTISH.search(p) for p in g.paths)
            and not re.search(rf"\b{TEST_WORDS}\b", g.line, re.I)  # "remove its tests" names tests
        )
        and not (
            g.action is Action.UPDATE_SNAPSHOTS
            and not SNAPSHOT_NOUN.search(g.line)  # "update it" beside src/header.js is about the code
            and not any(SNAPSHOT_PATHISH.search(p) or TESTISH.search(p) for p in g.paths)
        )
    ]
    grants = [  # "the coverage floor can drop to 80; we'll backfill tests for retry.py": coverage's files too
        Grant(g.action, g.paths + _tool_files(g.line), g.line)
        if g.action in (Action.LOWER_THRESHOLD, Action.RAISE_THRESHOLD) and g.paths
        else g
        for g in grants
    ]
    grants = [_test_grant(g, text) if g.action in TEST_PATH_ACTIONS else g for g in grants]
    grants = [_named_tests(g, text) if g.action is Action.SKIP_TESTS else g for g in grants]
    if grants:  # "… don't touch the other tests" beside grants on named tests; "don't touch the apply job"
        specific = {g.action for g in grants if g.paths and g.action not in TEST_PATH_ACTIONS}
        scoped = all(g.paths for g in grants if g.action in TEST_PATH_ACTIONS)
        limits = [
            limit
            for limit in limits
            if not (OTHERS.search(limit.line) and scoped)
            and not (limit.action in specific and not limit.paths)
        ]
    return SessionPolicy(tuple(grants), tuple(limits), read_named_changes(text))


TESTISH = re.compile(r"(?<![A-Za-z])(?:tests?|specs?|__tests__|testdata)(?![a-z])|Test|Spec|\*", re.I)


SNAPSHOT_PATHISH = re.compile(
    r"snap|golden|testdata|fixture|expected|baseline|approved|cassette|\.out\b|\.ambr\b|__snapshots__", re.I
)


def _test_grant(grant: Grant, text: str) -> Grant:
    """A grant on tests covers the test paths it names ("change that expectation and switch pricing.py
    to ...": not pricing.py), else those its message names elsewhere ("tests/x.ts still ..."), else any."""
    paths = tuple(p for p in grant.paths if TESTISH.search(p))
    if not paths:
        paths = tuple(p for p in _message_paths(text) if TESTISH.search(p))
    return Grant(grant.action, paths, grant.line)


TEST_IDENTIFIER = re.compile(
    r"(?<![/\w.-])(?:test_\w+|test[A-Z]\w*|Test[A-Z]\w*|[A-Z]\w*(?:Tests?|Spec)|\w+_test)\b"
    r"(?!\.(?:py|js|ts|go|rb|rs|java|kt|exs?|php|cs|swift|jsx|tsx|mjs|cjs)\b)(?:[.#:]+([A-Za-z_]\w*))?"
    r"|\b(?:test|spec|example|case|it)\s+[`'\"]([^`'\"\n]{3,80})[`'\"]|[`'\"]([^`'\"\n]{3,80})[`'\"]\s+(?:test|spec)\b"
)
"""A test named by identifier (``test_ws_reconnect``, ``PaymentRetryTest.retriesThreeTimes``) or title."""


def test_names(text: str) -> set[str]:
    """The identifiers and titles of tests ``text`` names (a ``Class.method`` gives both)."""
    out: set[str] = set()
    for m in TEST_IDENTIFIER.finditer(text[:MAX_TEXT]):
        if m[2] or m[3]:
            out.add((m[2] or m[3]).strip())
        else:
            out.add(m[0].split(".")[0].split("#")[0].split(":")[0])
            if m[1]:
                out.add(m[1])
    return out


def _named_tests(grant: Grant, text: str) -> Grant:
    """A skip grant names the tests its sentence (or the one before, kept in the grant's line's message)
    names; a grant whose sentence names none keeps the message's."""
    names = test_names(grant.line) or test_names(text)
    return Grant(grant.action, grant.paths, grant.line, tuple(sorted(names)))


def _tool_files(sentence: str) -> tuple[str, ...]:
    """The configuration files of the tools a sentence names (not CI, Makefile or package.json: places)."""
    return tuple(
        g
        for words, globs in GATE_WORDS.items()
        if words not in PLACE_WORDS and re.search(words, sentence, re.I)
        for g in globs
    )


def _message_paths(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_paths(" ".join(text[:MAX_TEXT].split()))))


CHANGE_WORDS = re.compile(
    r"\b(?:touch|edit|modify|change|alter|rewrite|delete|remove|update|overwrite|replace|move|rename)\b", re.I
)


def _changes(text: str) -> bool:
    return CHANGE_WORDS.search(text) is not None


def _paths(sentence: str):
    for match in PATHISH.finditer(sentence):
        value = (match[1] or match[2] or "").strip().rstrip(",:")
        if not value or " " in value.strip() and match[1] is None:
            continue
        if match[1] is not None and not re.search(r"[/.*]", value):
            continue  # a backquoted word that is no path (a command, a marker name)
        yield value.lstrip("./") if value.startswith("./") else value


def path_matches(pattern: str, path: str) -> bool:
    """Whether ``path`` (absolute or relative) is one ``pattern`` names: a glob, a folder (by prefix, as
    a trailing part of the path) or a file (by its trailing parts, or its base name when bare)."""
    path = path.rstrip("/")
    pattern = pattern.strip().rstrip("/")
    if not pattern:
        return False
    if any(c in pattern for c in "*?["):
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, "*/" + pattern):
            return True
        return "/" not in pattern and fnmatch.fnmatch(posixpath.basename(path), pattern)
    if "/" not in pattern:
        return posixpath.basename(path) == pattern or f"/{pattern}/" in f"/{path}/"
    return (
        path == pattern
        or path.endswith("/" + pattern)
        or f"/{pattern}/" in f"/{path}/"
        or path.startswith(pattern + "/")
    )


CHANGE_KINDS = (
    (ChangeKind.REMOVE, r"remove|delete|drop|get\s+rid\s+of|retire|rip\s+out"),
    (
        ChangeKind.EXCLUDE,
        r"disable|skip|deselect|exclude|ignore|quarantine|mark|label|tag|keep\s+(?:\w+\s+){0,3}?out|leave\s+out",
    ),
    (
        ChangeKind.SET,
        r"loosen|relax|lower|raise|bump|set|change|increase|decrease|reduce|widen|downgrade|demote|"
        r"(?:turn|switch)\s+(?:(?:it|them|that|this)\s+)?off",
    ),
    (ChangeKind.ADD, r"add|register|declare"),
)
NAMED_OBJECT = re.compile(
    r"`([^`\n]{2,80})`"
    r"|(?<![\w/.-])((?:[A-Za-z_*][\w*-]*(?:(?:\.|::|/|#)[\w*-]+)+|[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|"
    r"[A-Z]+[a-z0-9]+[A-Z]\w*|[A-Z][A-Z0-9_]{3,}|[a-z]{2,}\d+[a-z\d]*|[\w.-]+=[\w.+-]+))(?![\w-])"
    r"|(?<![\w@])(@[A-Za-z][\w-]+|(?<![\w:]):[a-z_]\w+|[A-Za-z][\w-]*\*|[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}"
    r"|[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?=\s+(?:tests?|specs?|cases?|examples?)\b))"
)
"""A thing named exactly: backquoted, dotted or pathed, snake_case, camelCase, CamelCase, CONSTANT, k=v."""
SET_VALUE = re.compile(r"\bto\s+[`'\"]?([\w.+%-]+)|=\s*([\w.+-]+)")
PRONOUN_OBJECT = re.compile(
    r"\b(?:it|its|them|their|those|the\s+option|(?:that|this|those|these)\s+(?:\w+\s+){0,2}?(?:ones?|modules?|"
    r"files?|tests?|packages?|dirs?|director(?:y|ies)|folders?|jobs?|steps?|checks?|rules?|specs?|tags?))\b",
    re.I,
)
VALUE_PRONOUN = re.compile(
    r"\s+(?:that|this|it)\b(?!\s+(?:\w+\s+){0,2}?(?:tests?|files?|checks?|rules?))", re.I
)
"""A value named by a pronoun ("we agreed to go to 85. Set that in mix.exs"): the sentence before gave it."""
FILE_NAME = re.compile(r"\.(?:[a-z]{1,5}|ya?ml|json[c5]?|props|toml)$|^(?:GNU)?[Mm]akefile$|^[A-Z]\w*file$")
"""A file's name: the change is in it, so it says nothing of what the change does."""
VALUE = re.compile(r"\d|^(?:true|false|on|off|none|warn|warning|error|info|null|yes|no)$", re.I)
TESTS_WORD = re.compile(r"\b(?:tests?|specs?|test\s+cases?|suites?)\b|\btest_\w+|\bTest\w+|\w+Tests?\b", re.I)


NOT_ASKING = re.compile(
    r"\b(?:won'?t|will\s+not|does(?:n'?t|\s+not)|did(?:n'?t|\s+not)|rather\s+than|instead\s+of|would|might|"
    r"someone|whether|unless|otherwise)\b",
    re.I,
)
"""Words that make a sentence describe or weigh a change rather than ask for it."""
IMPERATIVE = (
    r"(?:^|[,:;(]\s*|\s[-\u2013\u2014]\s+|\b(?:please|just|also|now|then|and|but|so|first|next|finally|simply|"
    r"kindly|go\s+ahead\s+and|"
    r"you\s+can|you\s+may|feel\s+free\s+to|can\s+you|could\s+you|(?:it'?s\s+)?(?:fine|ok(?:ay)?|alright|safe)"
    r"\s+to)\s+)"
)
"""Where an asking verb stands: at the start of the sentence or of a clause, or after a softener."""
DOCS_TARGET = re.compile(r"(?<![\w./-])[\w./-]{1,200}\.(?:md|rst|adoc)\b|\b(?:changelog|readme)\b", re.I)
NON_TEST_PATH = re.compile(
    r"\b(?![\w./-]*(?:test|spec))[\w./-]+\.(?:py|js|ts|go|rs|rb|ya?ml|toml|json|cfg|ini|java|kt)\b"
)
LABEL_VERB = re.compile(r"^(?:mark|label|tag)\b", re.I)
GENERIC_PARTS = frozenset(
    "tests test src lib app fixtures spec specs docs internal pkg cmd main core utils".split()
)


def read_named_changes(text: str) -> tuple[NamedChange, ...]:
    """The sentences of ``text`` that ask for a change to things they name (``NamedChange``): the verb in
    the imperative, no negation or hedge in the sentence, no docs file as its target. A pronoun object
    ("disable it") takes the first thing the sentence before names."""
    out: list[NamedChange] = []
    previous = ""
    for match in SENTENCE.finditer(text[:MAX_TEXT]):
        sentence = " ".join(match[0].split())
        before, previous = previous, sentence
        count = len(out)
        if len(sentence) < 4 or LIMIT_OPENER.search(sentence) or NOT_ASKING.search(sentence):
            kinds: tuple[tuple[ChangeKind, str], ...] = ()
        else:
            kinds = () if DOCS_TARGET.search(sentence) else CHANGE_KINDS
        for kind, verbs in kinds:
            verb = re.search(rf"{IMPERATIVE}(?P<verb>\b(?:{verbs})\b)", sentence, re.I)
            if verb is None:
                continue
            tail = sentence[verb.start("verb") :]
            objects = _named_objects(tail)
            if PRONOUN_OBJECT.search(tail[:40]):  # the thing named just before, and its parts
                candidates = _named_objects(sentence[: verb.start("verb")]) or _named_objects(before)
                if NON_TEST_PATH.search(tail):  # "remove it from utils.py": no test is meant
                    candidates = tuple(c for c in candidates if not TESTS_WORD.fullmatch(c))
                names = [c for c in candidates if "=" not in c] or list(candidates)  # a name, not a setting
                right_after = PRONOUN_OBJECT.match(
                    tail[len(verb["verb"]) :].strip()
                )  # "bump its default": nearest
                first = tuple(names[-1:]) if right_after else tuple(names[:1])
                objects += first + (_parts(first[0]) if first else ())
            values: tuple[str, ...] = ()
            if kind is ChangeKind.SET:
                values = tuple(
                    v for m in SET_VALUE.finditer(tail) for v in m.groups() if v and VALUE.search(v)
                )
                if not values and VALUE_PRONOUN.match(tail[len(verb["verb"]) :]):  # "go to 85. Set that"
                    values = tuple(
                        v for m in SET_VALUE.finditer(before) for v in m.groups() if v and VALUE.search(v)
                    )
            objects += tuple(  # ingest/_proto is the module ingest._proto
                o.strip("/").replace("/", ".")
                for o in objects
                if "/" in o and "." not in o.rsplit("/", 1)[-1]
            )
            if objects or kind is ChangeKind.SET and any(re.search(r"\d", v) for v in values):
                about = bool(TESTS_WORD.search(sentence) or TESTS_WORD.search(before))
                labels = LABEL_VERB.match(verb["verb"]) is not None
                out.append(NamedChange(kind, tuple(dict.fromkeys(objects)), values, about, sentence, labels))
            break
        described = _described(sentence, before) if len(out) == count else None
        if described is not None:
            out.append(described)
    return tuple(out)


DESCRIBE_VERB = (
    r"configure|set\s+up|apply|give|disable|exclude|skip|add|change|set|lower|raise|split|allow|ignore|"
    r"turn\s+off|switch\s+off|limit|restrict|register|hook\s+up|wire\s+up|enable|move|create"
)
PARENTHESES = re.compile(r"\([^()]*\)")
PATH_TOKEN = re.compile(r"(?<![\w./-])[\w.-]{1,200}/[\w./-]{1,300}")
VALUE_TOKEN = re.compile(r"(?<![\w.])\d[\w.]{0,40}|" + PATH_TOKEN.pattern)
"""Numbers and paths of a sentence, each read from where it starts (a run of dots costs one pass)."""
ASIDE_FORBIDS = re.compile(
    rf"(?:{LIMIT_OPENER.pattern}|{NOT_ASKING.pattern})\W+(?:\w+\W+){{0,3}}?(?:{CONFIG_VERB})\b", re.I
)
"""A negation of a change in parentheses: the sentence's request stops short of it."""


def _described(sentence: str, before: str) -> NamedChange | None:
    """A sentence asking for a change to a file or tool it names, in the change's own words ("configure
    golangci so CI only reports issues introduced after origin/main"): ``rules.named`` lets a change pass
    that is in a file the sentence names and whose every line shares a word or a value with it. A
    negation outside parentheses, or a hedge, reads as no request."""
    plain = PARENTHESES.sub(" ", sentence)
    if LIMIT_OPENER.search(plain) or NOT_ASKING.search(plain) or DOCS_TARGET.search(sentence):
        return None
    for aside in PARENTHESES.findall(
        sentence
    ):  # "(CI doesn't read it)" is an aside, "(don't ignore E501)" not
        if ASIDE_FORBIDS.search(aside):
            return None
    if re.search(rf"{IMPERATIVE}\b(?:{DESCRIBE_VERB})\b", sentence, re.I) is None:
        return None
    pointed = re.search(r"\b(?:that|this|it|them|those)\b", sentence, re.I)  # "register it": the one before
    values = tuple(m[0] for m in VALUE_TOKEN.finditer(sentence))
    values += tuple(m[0] for m in PATH_TOKEN.finditer(before)) if pointed else ()
    quoted = (before if pointed else "") + " " + sentence
    values += tuple(m[1] for m in re.finditer(r"`([^`\n]{3,60})`", quoted))  # "get `# pragma: no cover`"
    about = bool(TESTS_WORD.search(sentence) or TESTS_WORD.search(before))
    return NamedChange(ChangeKind.DESCRIBED, (), values, about, sentence)


def _parts(value: str) -> tuple[str, ...]:
    """``Matrix.Inverse``, ``billing._vendor``: each part is named too, but a folder's generic name."""
    if "/" in value:
        return ()
    parts = (part.strip() for part in re.split(r"::|[.#:=]", value))
    return tuple(
        p
        for p in parts
        if len(p) >= 4 and p != value and not VALUE.search(p) and p.lower() not in GENERIC_PARTS
    )


def _named_objects(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for m in NAMED_OBJECT.finditer(text):
        value = (m[1] or m[2] or m[3] or "").strip().rstrip(".,:;")
        if len(value) < 3 or value.lower() in ("e.g", "i.e") or FILE_NAME.search(value) and "*" not in value:
            continue
        found.append(value)
        found += _parts(value)
    return tuple(found)
