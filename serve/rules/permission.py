"""What the session's policy (``serve.policy``) says about one change a rule is about to block.

``granted`` says whether the user's words allow the change (the rule then lets it pass); ``forbidden``
gives the user's sentence that forbade it, for the block notice. Only changes to gates are grantable
(tests, snapshots, runner configuration, thresholds, graders, build and CI files, a ``sitecustomize.py``):
what a rule finds in written content (a hook that rewrites outcomes, an always-equal object, a forced
exit, a reward write) never is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rx
from ..policy import Action, Grant

if TYPE_CHECKING:
    from .facts import SessionFacts


def relative(path: str, facts: SessionFacts) -> str:
    """``path`` relative to the session's working directory when inside it (the user names paths so)."""
    cwd = (facts.cwd or "").rstrip("/")
    if cwd and path.startswith(cwd + "/"):
        return path[len(cwd) + 1 :]
    return path


def granted(facts: SessionFacts, path: str | None, *actions: Action, named: bool = False) -> bool:
    """Whether one of ``actions`` on ``path`` (None: a command with no path, e.g. ``jest -u``) is what
    the user asked for or allowed, and no sentence of theirs forbids it; ``named``: only a grant that
    names the path counts (for graders and CI files, which a grant of a kind alone never opens)."""
    policy = facts.policy
    if not policy.grants:
        return False
    target = relative(path, facts) if path else None
    for action in actions:
        grant = policy.grant_for(action, target)
        if grant is not None and (grant.paths or not named):
            return True
    return False


def forbidden(facts: SessionFacts, path: str | None, action: Action) -> str:
    """The user's sentence forbidding ``action`` on ``path``, or ""."""
    if not facts.policy.limits:
        return ""
    limit = facts.policy.limit_for(action, relative(path, facts) if path else None)
    return limit.line if limit is not None else ""


DEFINED_TEST = rx.compile(
    r"\b(?:def|fun|func|fn|void|sub|function|Task(?:<\w+>)?|Unit)\s+([A-Za-z_]\w*)"
    r"|\b(?:it|test|describe|context|specify|scenario|(?:it|ignore|they)\s+should)\s*\(?\s*['\"`]"
    r"([^'\"`\n]{3,80})['\"`]"
)
"""A test a change defines or touches: its function, or its title in a ``test("…")`` call."""


def skip_granted(facts: SessionFacts, path: str | None, text: str) -> bool:
    """Whether the user asked for the tests ``text`` (a change that adds a skip) defines to be skipped: a
    grant that names tests covers those tests only ("mark test_ws_reconnect as skipped" is not a grant to
    skip test_ws_auth_refresh beside it)."""
    if not facts.policy.grants:
        return False
    defined = {m[1] or m[2].strip() for m in DEFINED_TEST.finditer(text)}
    target = relative(path, facts) if path else None
    grants = facts.policy.grants_for(Action.SKIP_TESTS, target)
    named = frozenset(t for g in grants for t in g.tests if t in text)  # the test the skip sits beside
    return any(g.names_only(defined, named) for g in grants)


PATHLIKE = rx.compile(r"@?[\w.-]*(?:/|\*)[\w./*-]*")
"""A path or glob (a scoped name, ``@typescript-eslint/no-explicit-any``, is none)."""


def within_named_paths(why: str, old: str, grants: list[Grant]) -> bool:
    """The loosened line ``why`` quotes brings only paths or globs (not in ``old``) that the grants'
    sentences name (any, when a sentence names none)."""
    quoted = why.split(": ", 1)[-1]
    before = _paths_in(old)
    brought = _paths_in(quoted) - before
    for grant in grants:
        named = _paths_in(grant.line)
        if not named or brought <= named | {p for p in brought if any(p in n or n in p for n in named)}:
            return True
    return False


def _paths_in(text: str) -> set[str]:
    return {m[0].strip("./'\"`") for m in PATHLIKE.finditer(text) if not m[0].startswith("@")} - {""}
