"""The incremental per-session checker.

`GuardSession` keeps one `SessionFacts` per session and folds each message into it once
(`sync(messages)` folds only the messages it hasn't seen), so checking a call costs the same
at any session length. `check(tool_call)` runs the declared-tools rule on the raw call, then
the session rules on its normalised form; the first block wins, an unknown is returned only
when nothing blocks, and a rule that raises is an unknown. Nothing here does I/O.

Its verdicts equal a full-trace atif-scan run with the same rules (`serve.rules.atif`): both
fold the same facts in the same order and judge each call against the facts before its turn.
Limit: if a harness rewrites earlier history (compaction), `sync` sees fewer messages than it
folded and starts over from the new history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .decisions import Allow, Block, Decision, RuleId, Unknown
from .normalize import NormalCall, normalize
from .rules import DeclaredToolsRule, SessionFacts, SessionRule, builtin_rules
from .rules.atif import safe_judge
from .rules.declared import declared_schemas, parse_arguments
from .trace import SOURCES, call_parts, message_text, tool_calls


def normalize_call(tool_call: Mapping[str, object]) -> NormalCall:
    _, name, raw = call_parts(tool_call)
    args, _ = parse_arguments(raw)
    return normalize(name, args)


@dataclass(frozen=True)
class GuardConfig:
    allowlist: tuple[str, ...] = ()
    """Hosts the task declares reachable beyond those the conversation names (`*.x.org` ok)."""
    fail_closed: bool = True
    """Whether an unknown (a rule that can't judge or raised) acts as a block."""


class GuardSession:
    def __init__(
        self,
        tools: object,
        config: GuardConfig | None = None,
        rules: Sequence[SessionRule] | None = None,
    ) -> None:
        self.config = config or GuardConfig()
        self.schemas = declared_schemas(tools)
        self.declared = DeclaredToolsRule()
        self.rules = list(builtin_rules() if rules is None else rules)
        self.facts = SessionFacts(self.config.allowlist)
        self.folded = 0
        self.pending: dict[str, NormalCall] = {}
        self.turn: list[NormalCall] = []

    def sync(self, messages: Sequence[Mapping[str, object]]) -> None:
        """Fold the messages not yet seen (called with each request's full history)."""
        if len(messages) < self.folded:
            self.__init__(None, self.config, self.rules)  # type: ignore[misc]
        for message in messages[self.folded :]:
            self.observe(message)

    def observe(self, message: Mapping[str, object]) -> None:
        """Fold one message, in conversation order."""
        self.folded += 1
        role = message.get("role")
        source = SOURCES.get(role) if isinstance(role, str) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            ncall = self.pending.get(call_id) if isinstance(call_id, str) and call_id else None
            self.facts.result(ncall, message_text(message.get("content")))
        elif source == "agent":
            calls = tool_calls(message)
            self.pending = {}
            for call in calls:
                ncall = normalize_call(call)
                self.facts.call(ncall)
                call_id = call_parts(call)[0]
                if call_id:
                    self.pending[call_id] = ncall
        elif source is not None:
            self.facts.prompt(source, message_text(message.get("content")))

    def check(self, tool_call: Mapping[str, object]) -> Decision:
        """The decision for one new call, given the messages folded so far."""
        found = self.declared.judge_raw(self.schemas, tool_call)
        if found is not None:
            return Block(RuleId.DECLARED_TOOLS, found.reason)
        ncall = normalize_call(tool_call)
        unknown: Unknown | None = None
        for rule in self.rules:
            found = safe_judge(rule, ncall, self.facts)
            if found is None:
                continue
            if not found.unknown:
                return Block(rule.rule_id, found.reason)
            unknown = unknown or Unknown(rule.rule_id, found.reason)
        return unknown or Allow()


def check_case(
    tools: object,
    messages: Sequence[Mapping[str, object]],
    tool_call: Mapping[str, object],
    config: GuardConfig | None = None,
) -> Decision:
    """One-shot check: fold `messages`, then judge `tool_call`."""
    session = GuardSession(tools, config)
    session.sync(messages)
    return session.check(tool_call)
