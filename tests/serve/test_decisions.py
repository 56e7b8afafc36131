"""Decision values, their fixed notices, and the package's public surface."""

from __future__ import annotations

import pytest

import serve
from serve.decisions import NOTICES, Block, Reason, RuleId, Unknown, Verdict, verdict


def test_every_rule_has_a_fixed_notice_and_blocks_check_their_fields() -> None:
    assert set(NOTICES) == set(RuleId)
    assert Block(RuleId.HOSTS, Reason.HOST_UNRESOLVABLE).notice == NOTICES[RuleId.HOSTS]
    with pytest.raises(ValueError):
        Block("hosts", "anything the model wrote")  # type: ignore[arg-type]


def test_unknown_is_never_allow() -> None:
    u = Unknown(RuleId.HOSTS)
    assert verdict(u) is Verdict.BLOCK and verdict(u, fail_closed=False) is Verdict.UNKNOWN


def test_exports_are_sorted_and_complete() -> None:
    assert serve.__all__ == sorted(serve.__all__)
    assert all(hasattr(serve, name) for name in serve.__all__)
