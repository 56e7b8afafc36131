"""Data-parallel ranks of one trainer: where its processes meet, and which settings can work.

A trainer with ``ranks > 1`` runs as that many Ray actors, one GPU each on GPU nodes (one CPU process each
on CPU, with gloo). Each sets torch.distributed's ``env://`` variables from a ``Rendezvous`` before it
builds TRL's trainer; Accelerate reads them, and TRL's ``AsyncGRPOTrainer`` does the rest: rank 0 holds the
rollout pool and hands every rank its row of each packed micro-batch, gradients are averaged (DDP) or the
model sharded (FSDP, ``fsdp``), and rank 0 publishes each adapter version after a collective save.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

FSDP_WORDS = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard", "offload", "auto_wrap")
"""The words of Transformers' ``fsdp`` setting (``TrainingArguments.fsdp``)."""


@dataclass(frozen=True, slots=True)
class Rendezvous:
    """Rank 0's address and a free port on its node: the ``MASTER_ADDR`` / ``MASTER_PORT`` of every rank."""

    address: str
    port: int
    world: int

    def env(self, rank: int) -> dict[str, str]:
        """The process environment of ``rank``. ``LOCAL_RANK`` is 0: Ray shows each rank actor only its own
        GPU (``CUDA_VISIBLE_DEVICES``), so that GPU is device 0 in every rank's process."""
        if not 0 <= rank < self.world:
            raise ValueError(f"rank {rank} is outside a world of {self.world} ranks")
        return {
            "MASTER_ADDR": self.address,
            "MASTER_PORT": str(self.port),
            "WORLD_SIZE": str(self.world),
            "RANK": str(rank),
            "LOCAL_RANK": "0",
        }


def free_port(host: str) -> int:
    """A TCP port free on ``host`` now (the OS picks it); rank 0 listens on it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def rank_problems(ranks: int, gpus: float, fsdp: str) -> list[str]:
    """What is wrong with a trainer's ``ranks`` (processes), ``gpus`` (per rank) and ``fsdp`` settings."""
    problems = []
    if ranks < 1:
        problems.append(f"ranks={ranks}: must be >= 1 (processes per trainer)")
    if ranks > 1 and 0 < gpus < 1:
        problems.append(
            f"ranks={ranks} with gpus={gpus}: ranks of one trainer cannot share a GPU "
            "(NCCL needs one device per rank); use gpus=1, or ranks=1 to share a GPU"
        )
    unknown = [word for word in fsdp.split() if word not in FSDP_WORDS]
    if unknown:
        problems.append(f"fsdp={fsdp!r}: unknown {unknown}; use words from {', '.join(FSDP_WORDS)}")
    return problems
