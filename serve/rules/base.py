"""The plugin contract every session rule implements.

A rule judges one normalised call against the session's facts (`SessionFacts`, folded before
the call) and returns None (no match), or a `Finding`: a match with a reason code, or
`unknown=True` when it can't judge the call statically. Rules are pure and must not mutate
the facts; `serve.rules.atif.SessionCheck` runs them inside atif-scan, `serve.engine` runs
them per call, and a rule that raises becomes an unknown (never an allow) in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..decisions import Reason, RuleId

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .facts import SessionFacts


@dataclass(frozen=True, slots=True)
class Finding:
    reason: Reason
    unknown: bool = False
    policy_line: str = ""
    """The user's sentence that forbade what the call does (``serve.policy``), when one did."""


class SessionRule(Protocol):
    @property
    def rule_id(self) -> RuleId: ...

    def judge(self, call: NormalCall, facts: SessionFacts) -> Finding | None:
        """Called once per new tool call, with the facts of everything before it."""
        ...


def code_texts(call: NormalCall, facts: SessionFacts) -> tuple[str, ...]:
    """Program text the call runs: a code tool's code and interpreter code in shell commands."""
    from .shellread import read_shell

    out: list[str] = [call.code] if call.code else []
    if call.command:
        out += read_shell(call.command, facts.cwd).code
    return tuple(out)
