"""The book of open rollouts, and the ledger actor's call convention, without Ray or HTTP."""

from __future__ import annotations

import asyncio

import pytest

from serve.book import LedgerBook, RolloutBook, RolloutLedger
from serve.mode import GuardMode
from serve.record import TurnRecord
from serve.rules.facts import SessionFacts
from serve.turn import RequestError


def _turn() -> TurnRecord:
    return TurnRecord(index=99, prompt_ids=(1,), completion_ids=(2,), logprobs=(), tool_calls=1)


def test_turns_are_numbered_in_arrival_order_and_a_late_turn_after_close_is_dropped():
    book = RolloutBook(4, GuardMode.MONITOR)
    record = book.open("pi", "pi-v1", ("h",), "r1", ("tests/t.py",), 5.0)
    assert record.guard is GuardMode.MONITOR and record.opened_at_s == 5.0
    assert [book.commit("r1", _turn(), None, "k", True, None) for _ in range(3)] == [0, 1, 2]
    view = book.view("r1")
    assert view.turns == 3 and view.protected == ("tests/t.py",) and view.record.allowlist == ("h",)
    closed = book.close("r1")
    assert closed.closed and [t.index for t in closed.turns] == [0, 1, 2]
    assert book.commit("r1", _turn(), None, "k", True, None) == -1  # closed while the turn ran


def test_the_record_keeps_the_conversation_of_requests_with_tools_and_else_the_first():
    book = RolloutBook(4, GuardMode.ENFORCE)
    book.open("pi", "a", (), "r1", (), 0.0)
    book.commit("r1", _turn(), ({"role": "user", "content": "first"},), "k0", False, None)
    book.commit("r1", _turn(), ({"role": "user", "content": "agent"},), "k1", True, None)
    book.commit("r1", _turn(), ({"role": "user", "content": "summarise"},), "k2", False, None)
    record = book.record("r1")
    assert record.conversation[0]["content"] == "agent" and record.conversation_key == "k1"


def test_facts_are_kept_per_tool_set_newest_winning_and_bounded():
    book = RolloutBook(4, GuardMode.ENFORCE, max_facts=2)
    book.open("pi", "a", (), "r1", (), 0.0)
    old, new = SessionFacts((), ()), SessionFacts((), ())
    book.commit("r1", _turn(), None, "k", True, (("bash",), old))
    book.commit("r1", _turn(), None, "k", True, (("bash",), new))
    assert book.facts("r1", ("bash",)) is new and book.facts("r1", ("read",)) is None
    for names in (("a",), ("b",)):
        book.commit("r1", _turn(), None, "k", True, (names, SessionFacts((), ())))
    assert book.facts("r1", ("bash",)) is None  # the oldest tool set dropped beyond max_facts
    assert book.facts("gone", ("bash",)) is None


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda b: b.open("pi", "a", (), "r1", (), 0.0), "rollout_exists"),
        (lambda b: b.open("pi", "a", (), "r3", (), 0.0), "too_many_rollouts"),
        (lambda b: b.close("r2") and b.open("claude", "a", (), None, (), 0.0), "rollout_invalid"),
        (lambda b: b.view("nope"), "rollout_not_found"),
        (lambda b: b.record("nope"), "rollout_not_found"),
        (lambda b: b.close("nope"), "rollout_not_found"),
    ],
)
def test_refusals_name_the_problem(call, code):
    book = RolloutBook(2, GuardMode.ENFORCE)
    book.open("pi", "a", (), "r1", (), 0.0)
    book.open("pi", "a", (), "r2", (), 0.0)
    with pytest.raises(RequestError) as caught:
        call(book)
    assert caught.value.code == code


def test_standalone_books_open_on_first_use_and_evict_the_least_recently_used():
    book = RolloutBook(2, GuardMode.ENFORCE, auto_open=True)
    book.view("k1")
    book.view("k2")
    book.view("k1")
    book.view("k3")
    assert list(book.entries) == ["k1", "k3"]


class _Ref:
    """Stands in for an ObjectRef: awaitable, holding what the actor call returned."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        if False:
            yield
        return self.value


class _Handle:
    """A ledger actor in this process, reached the way a replica reaches the real one."""

    def __init__(self, ledger: RolloutLedger) -> None:
        outer = self
        self.ledger = ledger
        self.sent: list[str] = []

        class _Method:
            def __init__(self, name: str) -> None:
                self.name = name

            def remote(self, *args):
                outer.sent.append(args[0] if args else self.name)
                return _Ref(getattr(ledger, self.name)(*args))

        self.call, self.size = _Method("call"), _Method("size")


def test_the_ledger_returns_refusals_as_values_and_the_replica_raises_them_again():
    ledger = RolloutLedger(4, "enforce")
    assert ledger.call("view", "nope") == (False, (404, "rollout_not_found", "no open rollout with this id"))
    with pytest.raises(ValueError, match="no method 'entries'"):
        ledger.call("entries")
    handle = _Handle(ledger)
    book = LedgerBook(handle)

    async def go():
        await book.call("open", "pi", "a", (), "r1", (), 0.0)
        pending = book.call("commit", "r1", _turn(), None, "k", True, None)
        assert handle.sent[-1] == "commit"  # sent before anyone waits for it
        index = await pending
        with pytest.raises(RequestError, match="already open"):
            await book.call("open", "pi", "a", (), "r1", (), 0.0)
        return index, await book.size()

    assert asyncio.run(go()) == (0, 1)


def test_replica_options_are_fixed_or_autoscaled():
    from serve.app import autoscaling

    assert autoscaling(1, 1) == {"num_replicas": 1}
    scaled = autoscaling(2, 6)["autoscaling_config"]
    assert scaled["min_replicas"] == 2 and scaled["max_replicas"] == 6
    with pytest.raises(ValueError, match="1 <= minimum <= maximum"):
        autoscaling(3, 2)


def test_several_replicas_without_a_ledger_are_refused():
    from serve.app import build_app
    from serve.proxy import ProxyConfig

    with pytest.raises(ValueError, match="needs a ledger"):
        build_app(ProxyConfig("http://127.0.0.1:1/v1"), num_replicas=2)
