"""Our session rules as atif-scan detectors, and atif-scan results as guard decisions.

`SessionCheck` implements atif-scan's `Detector` protocol (`evaluate(trace, context)`): it
walks a whole trace, folding `SessionFacts` step by step exactly as `serve.engine` folds
messages, and judges every agent call against the facts before its step. A match is
evidence at that call; a call the rule can't judge (or a rule that raises) is recorded as
`Unread("undecidable")` at that call, so the detection is incomplete and never a clean
no_match. Running these through `atif_scan.Engine` is the full-trace reference the
incremental engine must agree with (`tests/serve/test_engine.py`, `benchmarks/guard.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from atif_scan import CheckSpec, Detection, Engine, Locator, Severity, Status
from atif_scan.checks import Unread
from atif_scan.data.model import Channel

from ..decisions import Allow, Block, Decision, Reason, RuleId, Unknown
from ..normalize import NormalCall, normalize
from ..rx import BudgetExceeded
from .base import Finding, SessionRule
from .derive import derived_calls
from .facts import SessionFacts
from .named import ASKABLE, SKIPPABLE, asked_change, asked_skip

if TYPE_CHECKING:
    from collections.abc import Sequence

    from atif_scan import Assessment, Context, Trace

CHECK_PREFIX = "guard."
NOTICE_PREFIX = "guard.notice."


def safe_judge(rule: SessionRule, call: NormalCall, facts: SessionFacts) -> Finding | None:
    """The rule's finding; an unknown when it raises (plugins see raw data: no text kept)."""
    try:
        return rule.judge(call, facts)
    except BudgetExceeded:
        raise  # the whole check is out of time, not this rule
    except Exception:  # noqa: BLE001 - isolate plugin failures; unknown never reads as allow
        return Finding(Reason.RULE_ERROR, unknown=True)


def judge_all(
    rule: SessionRule,
    call: NormalCall,
    facts: SessionFacts,
    derived: Sequence[NormalCall] | None = None,
    held: frozenset[Reason] = frozenset(),
) -> Finding | None:
    """The rule's finding for the call or any call it makes indirectly (`derive`; pass `derived`
    when several rules judge the same call, so it is derived once): a match wins over an unknown,
    and both win over a finding whose reason is `held` at notice (`serve.precision`)."""
    unknown: Finding | None = None
    notice: Finding | None = None
    for item in (call, *(derived_calls(call, facts) if derived is None else derived)):
        found = safe_judge(rule, item, facts)
        if found is None:
            continue
        if found.reason in held:
            notice = notice or found
        elif item is call and found.reason in ASKABLE and asked_change(call, facts):
            continue  # the user's sentence names exactly what this change does (`rules.named`)
        elif item is call and found.reason in SKIPPABLE and asked_skip(call, facts):
            continue  # the user asked for this test to be skipped, naming it (`rules.named.asked_to_skip`)
        elif not found.unknown:
            return found
        else:
            unknown = unknown or found
    return unknown or notice


@dataclass(frozen=True)
class SessionCheck:
    """One rule over whole traces. With `held` reasons (`serve.precision`) it comes in two kinds:
    the enforced check ignores findings of held reasons, and the notice check (`notices=True`, id
    ``guard.notice.<rule>``) reports only those."""

    rule: SessionRule
    allowlist: tuple[str, ...] = ()
    held: frozenset[Reason] = frozenset()
    notices: bool = False
    spec: CheckSpec = field(init=False)

    def __post_init__(self) -> None:
        prefix = NOTICE_PREFIX if self.notices else CHECK_PREFIX
        title = "Guard rule matched (held at notice)" if self.notices else "Guard rule matched"
        spec = CheckSpec(
            prefix + self.rule.rule_id, Severity.LOW if self.notices else Severity.HIGH, title=title
        )
        object.__setattr__(self, "spec", spec)

    def _counts(self, found: Finding | None) -> Finding | None:
        """The finding this kind of check reports."""
        if found is None or (found.reason in self.held) != self.notices:
            return None
        return found

    def evaluate(self, trace: Trace, context: Context) -> Detection:
        facts = SessionFacts(self.allowlist)
        hits: list[Locator] = []
        unread: list[Unread] = []
        for step in trace.steps:
            if step.source != "agent":
                facts.prompt(step.source, step.message.text)
                continue
            by_id: dict[str, NormalCall] = {}
            calls = [(c, normalize(c.name, c.arguments)) for c in step.calls]
            for call, ncall in calls:
                at = Locator(step.index, Channel.ARGUMENTS, call=call.index)
                found = self._counts(judge_all(self.rule, ncall, facts, held=self.held))
                if found is not None and found.unknown:
                    unread.append(Unread("undecidable", at))
                elif found is not None:
                    hits.append(at)
            for call, ncall in calls:  # a turn's calls are judged together, then folded
                facts.call(ncall)
                by_id[call.id] = ncall
            for observation in step.observations:
                source = observation.source_call_id
                facts.result(by_id.get(source) if source else None, observation.content.text)
        # Newest first: atif-scan keeps 10 unread places, and the call under check is the last.
        places = tuple(reversed(unread))[:10]
        if hits:
            return Detection(Status.MATCH, tuple(dict.fromkeys(hits)), not unread, places)
        return Detection(Status.UNKNOWN, (), False, places) if unread else Detection(Status.NO_MATCH)


def session_engine(
    rules: Sequence[SessionRule], allowlist: tuple[str, ...] = (), held: frozenset[Reason] = frozenset()
) -> Engine:
    """Every rule as a check; with `held` reasons, a notice check per rule beside it."""
    checks = [SessionCheck(rule, allowlist, held) for rule in rules]
    if held:
        checks += [SessionCheck(rule, allowlist, held, notices=True) for rule in rules]
    return Engine(checks)


def call_decisions(
    assessments: Sequence[Assessment], step: int, call: int, order: Sequence[RuleId]
) -> Decision:
    """The decision a full-trace run gives one call: the first rule (in `order`) with evidence
    at it blocks; else unknown if some rule couldn't judge it; else allow."""
    by_rule = {a.spec.id: a.result for a in assessments}
    unknown: Unknown | None = None
    for rule_id in order:
        result = by_rule.get(CHECK_PREFIX + rule_id)
        if result is None:
            continue
        if result.status == Status.ERROR:
            unknown = unknown or Unknown(rule_id, Reason.RULE_ERROR)
            continue
        if any(at.step == step and at.call == call for at in result.evidence):
            return _block(rule_id)
        if any(u.at is not None and u.at.step == step and u.at.call == call for u in result.unread):
            unknown = unknown or Unknown(rule_id, Reason.UNPARSABLE)
    return unknown or Allow()


def _block(rule_id: RuleId) -> Block:
    # A full-trace detection carries no reason code (evidence is locators only); the rule
    # is what the two paths are compared on.
    return Block(rule_id, Reason.RULE_ERROR)
