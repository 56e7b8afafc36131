"""The incremental per-session checker.

`GuardSession` keeps one `SessionFacts` per session and folds each message into it once
(`sync(messages)` folds only the messages it hasn't seen), so checking a call costs the same
at any session length. `check(tool_call)` runs the declared-tools rule on the raw call, then
each session rule on its normalised form and on every call it makes by other means
(`rules.derive`: decoded payloads, code's writes and commands, applied patches); the first block
wins, an unknown is returned only when nothing blocks, and a rule that raises is an unknown. A
finding whose reason is held at notice (`serve.precision`) never blocks: it rides along on the
`Allow` as a notice.
Every check is bounded (sizes and one time budget, see `check`). Nothing here does I/O.

Its verdicts equal a full-trace atif-scan run with the same rules (`serve.rules.atif`): both
fold the same facts in the same order and judge each call against the facts before its turn
(for a history that was not rewritten; see below).
Compaction: a harness that runs long rewrites its earlier history (pi puts a user message
carrying a summary in place of the old turns, opencode restarts the history at a "What did we do
so far?" turn, hermes keeps the first turns and puts a summary between them and the recent ones).
`sync` notices a rewrite, shrinking or not, by a fingerprint of what it folded (see `sync`). It
then re-folds the new history from scratch, keeping the declared tools, into fresh facts that
first absorb the old ones (`SessionFacts.absorb`): a session knows at least what it had shown
before the rewrite (hosts named, files seen and created, git revs and remotes, the task's words
and repos, the working directory, test literals), so verdicts after a compaction equal those
without it. The old facts are absorbed before the new history is folded because the fold is
ordered (the first system message sets the working directory; a write counts as a creation only
of a file not seen before), and the re-fold then judges the kept turns as the first fold did.
Limit: the new history is folded as usual, its summary too, and pi (and hermes, at times) send
the summary, which the model wrote, as a user message: a host only the summary names becomes
known. The proxy keeps one session per conversation key (tool names and first two messages), so
this path is taken where a compaction keeps those (hermes); pi's and opencode's compactions
change the second message, and there the proxy starts a new session that absorbs the facts of
the rollout's latest session with the same tools (`serve.proxy`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import rx
from .decisions import Allow, Block, Decision, Held, Reason, RuleId, Unknown
from .normalize import NormalCall, normalize
from .precision import NOTICE_ONLY
from .rules import DeclaredToolsRule, SessionFacts, SessionRule, builtin_rules
from .rules.atif import judge_all
from .rules.declared import declared_schemas, parse_arguments
from .rules.decode import opaque
from .rules.derive import derived_calls
from .trace import SOURCES, call_parts, message_text, tool_calls


def _fingerprint(message: Mapping[str, object]) -> bytes:
    """A digest of one message as sent (keys in any order)."""
    text = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def normalize_call(tool_call: Mapping[str, object]) -> NormalCall:
    _, name, raw = call_parts(tool_call)
    args, _ = parse_arguments(raw)
    return normalize(name, args)


CHECK_TRIES = 2
"""Runs of one check before a spent time budget makes it an unknown (`GuardSession.check`)."""


@dataclass(frozen=True)
class GuardConfig:
    allowlist: tuple[str, ...] = ()
    """Hosts the task declares reachable beyond those the conversation names (`*.x.org` ok)."""
    fail_closed: bool = True
    """Whether an unknown (a rule that can't judge or raised) acts as a block."""
    protected: tuple[str, ...] = ()
    """Absolute paths the task protects (its tests, runner configuration, graders), from the
    task's metadata; with none, the rules fall back to name conventions."""
    check_budget_s: float = 0.5
    """Time one check may take; past it the call is an unknown (blocked when failing closed)."""
    max_argument_chars: int = 256 * 1024
    """Largest tool-call arguments checked; larger ones are unknown without being read."""
    max_shell_chars: int = 32 * 1024
    """Largest shell command or program text parsed (parsing is linear, but not free)."""
    notice_only: frozenset[Reason] = NOTICE_ONLY
    """Reasons held at notice: recorded with the allowed call, never blocking (`serve.precision`)."""


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
        self.facts = SessionFacts(self.config.allowlist, self.config.protected)
        self.folded = 0
        self.pending: dict[str, NormalCall] = {}
        self.turn: list[NormalCall] = []
        self.first = b""  # fingerprint of the first folded message
        self.last = b""  # fingerprint of the last folded message
        self.refolds = 0  # histories found rewritten (compactions)

    def sync(self, messages: Sequence[Mapping[str, object]]) -> None:
        """Fold the messages not yet seen (called with each request's full history).

        What was folded is fingerprinted by two anchors, the first folded message and the last
        one: the history is taken as grown when both still sit at their places, and as rewritten
        (re-folded, see the module docstring) when it is shorter or either anchor changed. Two
        anchors keep the check at two hashes a request, whatever the history's length, and they
        catch every compaction format the harnesses send: dropping or summarising turns shifts
        the recent ones onto other places, so the last anchor moves even when the new history is
        no shorter (hermes keeps its first turns; pi and opencode replace them). A rewrite that
        keeps both anchors in place changes only turns in between: opencode's pruning, which
        clears old tool output to "[Old tool result content cleared]", is one, and missing it
        costs nothing, as it removes text whose facts were already folded and facts only grow.
        """
        n = self.folded
        if n and (
            len(messages) < n
            or _fingerprint(messages[n - 1]) != self.last
            or _fingerprint(messages[0]) != self.first
        ):
            self._refold(messages)
            return
        for message in messages[n:]:
            self.observe(message)

    def _refold(self, messages: Sequence[Mapping[str, object]]) -> None:
        """Fold a rewritten history from scratch into fresh facts that keep what the old ones knew."""
        old = self.facts
        self.facts = SessionFacts(self.config.allowlist, self.config.protected)
        self.facts.absorb(old)
        self.folded = 0
        self.pending = {}
        self.turn = []
        self.refolds += 1
        for message in messages:
            self.observe(message)

    def observe(self, message: Mapping[str, object]) -> None:
        """Fold one message, in conversation order."""
        fingerprint = _fingerprint(message)
        if not self.folded:
            self.first = fingerprint
        self.last = fingerprint
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
        """The decision for one new call, given the messages folded so far.

        Bounded: arguments over `max_argument_chars`, or shell/program text over
        `max_shell_chars`, are an unknown without being parsed, and every pattern match runs
        under one deadline of `check_budget_s` (`serve.rx`); running out is an unknown too. An
        unknown blocks when failing closed, so a hostile input costs at most `CHECK_TRIES`
        bounded checks and is never an allow. The budget is wall-clock time, so a pause that is
        not the input's doing (a garbage collection of a large heap, a busy machine) can spend it
        on an ordinary call; the check is pure, so it runs again with a fresh budget, and only
        a call that runs out every time is an unknown."""
        raw = call_parts(tool_call)[2]
        if isinstance(raw, str) and len(raw) > self.config.max_argument_chars:
            return Unknown(RuleId.LIMITS, Reason.TOO_LARGE)
        for _ in range(CHECK_TRIES):
            try:
                with rx.budget(self.config.check_budget_s):
                    return self._check(tool_call)
            except rx.BudgetExceeded:
                continue
        return Unknown(RuleId.LIMITS, Reason.CHECK_BUDGET)

    def _check(self, tool_call: Mapping[str, object]) -> Decision:
        found = self.declared.judge_raw(self.schemas, tool_call)
        if found is not None:
            return Block(RuleId.DECLARED_TOOLS, found.reason)
        ncall = normalize_call(tool_call)
        limit = self.config.max_shell_chars
        if len(ncall.command or "") > limit or len(ncall.code or "") > limit:
            return Unknown(RuleId.LIMITS, Reason.TOO_LARGE)
        derived = derived_calls(ncall, self.facts)  # once for every rule
        held = self.config.notice_only
        unknown: Unknown | None = None
        notices: list[Held] = []
        for rule in self.rules:
            found = judge_all(rule, ncall, self.facts, derived, held)
            if found is None:
                continue
            if found.reason in held:
                notices.append(Held(rule.rule_id, found.reason))
            elif not found.unknown:
                return Block(rule.rule_id, found.reason, policy_line=found.policy_line)
            else:
                unknown = unknown or Unknown(rule.rule_id, found.reason)
        if any(opaque(t) for t in (ncall.command, ncall.code) if t):
            if Reason.OPAQUE_EXECUTION in held:
                notices.append(Held(RuleId.LIMITS, Reason.OPAQUE_EXECUTION))
            else:
                unknown = unknown or Unknown(RuleId.LIMITS, Reason.OPAQUE_EXECUTION)
        return unknown or Allow(notices=tuple(notices))


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
