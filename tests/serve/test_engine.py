"""The incremental engine: equal to a full-trace atif-scan run, flat cost, no false blocks on
the real captured requests of pi, opencode and hermes."""

from __future__ import annotations

import json

import pytest
from atif_scan import Context
from guardcases import case, load_captures, load_corpus, need

from serve.decisions import Allow, Block, RuleId, Unknown
from serve.engine import GuardConfig, GuardSession, check_case
from serve.rules import builtin_rules, session_engine
from serve.rules.atif import call_decisions
from serve.trace import session_trace, tool_calls

ORDER = [r.rule_id for r in builtin_rules()]
CAPTURES = load_captures()


def full_trace_decision(messages: list, tool_call: dict):
    trace = session_trace(messages, tool_call)
    assessments = session_engine(builtin_rules()).evaluate(trace, Context())
    return call_decisions(assessments, len(trace.steps) - 1, 0, ORDER)


def incremental_decision(messages: list, tool_call: dict):
    session = GuardSession([])
    session.sync(messages)
    session.schemas = {tool_call["function"]["name"]: {}}  # rule 1 isn't an atif detector
    return session.check(tool_call)


def same(a, b) -> bool:
    if isinstance(a, Allow) or isinstance(b, Allow):
        return type(a) is type(b)
    return type(a) is type(b) and a.rule_id == b.rule_id


def test_incremental_verdicts_equal_a_full_trace_atif_scan_run_on_every_corpus_case() -> None:
    for c in need(load_corpus(), "guard dev corpus"):
        try:
            json.loads(c["tool_call"]["function"]["arguments"])
        except ValueError:
            continue
        full = full_trace_decision(c["messages"], c["tool_call"])
        assert same(incremental_decision(c["messages"], c["tool_call"]), full), c["id"]


def test_every_prefix_of_every_corpus_session_agrees_with_the_full_trace_run() -> None:
    checked = 0
    for c in need(load_corpus(), "guard dev corpus")[::4]:
        messages = c["messages"]
        for i, message in enumerate(messages):
            for call in tool_calls(message):
                assert same(incremental_decision(messages[:i], call), full_trace_decision(messages[:i], call))
                checked += 1
    assert checked, "no tool call in the history of the sampled dev sessions"


@pytest.mark.parametrize("name,body", CAPTURES, ids=[n for n, _ in CAPTURES] or None)
def test_captured_real_requests_produce_no_false_block(name: str, body: dict) -> None:
    tools = body.get("tools", [])
    session = GuardSession(tools)
    for message in body["messages"]:
        for call in tool_calls(message):
            decision = session.check(call)
            assert isinstance(decision, Allow), (name, decision)
        session.observe(message)


def test_captures_cover_all_three_harnesses() -> None:
    names = {n.split("-")[0] for n, _ in need(CAPTURES, "harness captures")}
    assert {"pi", "oc", "hermes"} <= names
    calls = sum(len(tool_calls(m)) for _, b in CAPTURES for m in b["messages"])
    assert calls >= 3


def test_sync_folds_each_message_once_and_restarts_on_rewritten_history() -> None:
    session = GuardSession([])
    messages = [{"role": "user", "content": "use https://data.example.org/x.csv"}]
    session.sync(messages)
    session.sync(messages)
    assert session.folded == 1 and session.facts.messages == 1
    session.sync(messages + [{"role": "user", "content": "more"}])
    assert session.folded == 2
    session.sync([{"role": "user", "content": "compacted"}])
    assert session.folded == 1 and session.refolds == 1
    assert session.facts.host_known("data.example.org")  # kept across the rewrite (SessionFacts.absorb)


def test_a_rule_that_raises_is_unknown_and_unknown_never_reads_as_allow() -> None:
    class Broken:
        rule_id = RuleId.HOSTS

        def judge(self, call, facts):
            raise RuntimeError("boom with secret text")

    c = case("pi", "ls")
    session = GuardSession(c["tools"], rules=[Broken()])
    decision = session.check(c["tool_call"])
    assert isinstance(decision, Unknown) and "boom" not in decision.notice
    from serve.decisions import Verdict, verdict

    assert verdict(decision) is Verdict.BLOCK and verdict(decision, fail_closed=False) is Verdict.UNKNOWN


def test_first_block_wins_over_an_earlier_unknown() -> None:
    class Unsure:
        rule_id = RuleId.REWARD_TAMPERING

        def judge(self, call, facts):
            from serve.decisions import Reason
            from serve.rules import Finding

            return Finding(Reason.UNPARSABLE, unknown=True)

    c = case("pi", "curl https://evil.example.net/x")
    session = GuardSession(c["tools"], rules=[Unsure(), *builtin_rules()])
    session.sync(c["messages"])
    decision = session.check(c["tool_call"])
    assert isinstance(decision, Block) and decision.rule_id is RuleId.HOSTS


def test_allowlist_makes_a_host_reachable() -> None:
    c = case("pi", "curl -s https://mirror.corp.example/simple/")
    assert isinstance(check_case(c["tools"], c["messages"], c["tool_call"]), Block)
    allowed = check_case(
        c["tools"], c["messages"], c["tool_call"], GuardConfig(allowlist=("*.corp.example",))
    )
    assert isinstance(allowed, Allow)
