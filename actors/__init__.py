"""Ray actors (serving, and later trainers and rollouts) as plain classes, plus their seams.

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
from actors.protocols import PolicyServer

__all__ = [
    "ActorError",
    "AdapterCapacityError",
    "AdapterError",
    "AdapterExistsError",
    "AdapterInvalidError",
    "AdapterNotFoundError",
    "PolicyServer",
    "ServerStartError",
    "ServerUnavailableError",
    "ServingError",
]
