"""Ray actors (serving, trainers, rollouts, the rollout pool) as plain classes, and their errors; and the
libraries the jobs share (config loading, model presets, SFT and the tiny agent, the evaluation report).

Heavy modules (vLLM, torch, Ray) are imported where they are used, never here.
"""

from actors.errors import (
    ActorError,
    AdapterCapacityError,
    AdapterError,
    AdapterExistsError,
    AdapterInvalidError,
    AdapterNotFoundError,
    ServerStartError,
    ServerUnavailableError,
    ServingError,
)

__all__ = [
    "ActorError",
    "AdapterCapacityError",
    "AdapterError",
    "AdapterExistsError",
    "AdapterInvalidError",
    "AdapterNotFoundError",
    "ServerStartError",
    "ServerUnavailableError",
    "ServingError",
]
