"""The data-parallel ranks' meeting point and settings, without starting a process."""

from __future__ import annotations

import pytest

from actors.ranks import Rendezvous, free_port, rank_problems


def test_each_rank_gets_the_same_meeting_point_and_its_own_rank():
    meet = Rendezvous("10.0.0.5", 29500, 3)
    assert meet.env(0) == {
        "MASTER_ADDR": "10.0.0.5",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "3",
        "RANK": "0",
        "LOCAL_RANK": "0",
    }
    assert meet.env(2)["RANK"] == "2" and meet.env(2)["MASTER_ADDR"] == "10.0.0.5"
    with pytest.raises(ValueError, match="rank 3 is outside a world of 3"):
        meet.env(3)


def test_a_free_port_can_be_bound_on_the_host():
    import socket

    port = free_port("127.0.0.1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize(
    ("ranks", "gpus", "fsdp", "problem"),
    [
        (1, 0.33, "", None),  # three trainers sharing one GPU, one rank each
        (4, 1.0, "full_shard auto_wrap", None),
        (2, 0.0, "", None),  # CPU ranks (gloo)
        (0, 1.0, "", "ranks=0: must be >= 1"),
        (2, 0.5, "", "ranks of one trainer cannot share a GPU"),
        (2, 1.0, "full_shard zero3", "unknown ['zero3']"),
    ],
)
def test_rank_settings_are_checked_with_the_fix(ranks, gpus, fsdp, problem):
    problems = rank_problems(ranks, gpus, fsdp)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0]
