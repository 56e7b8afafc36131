"""Ray actors (serving, trainers, rollouts, the rollout pool) as plain classes, and their errors.

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
