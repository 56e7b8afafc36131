"""Errors raised by the actors, one small tree. Messages are for operators: they say what to change.

ActorError
├── ServingError                  the vLLM server process
│   ├── ServerStartError          it did not become healthy in time (log tail attached)
│   └── ServerUnavailableError    it is down and could not be brought back
├── RolloutsFailingError          every rollout fails before it is scored (a harness that cannot run)
└── AdapterError                  one named LoRA adapter
    ├── AdapterExistsError        the name is already live: publish a new name, never overwrite
    ├── AdapterNotFoundError      no live adapter has that name
    ├── AdapterInvalidError       the files are missing, truncated, not LoRA, or the rank is too large
    └── AdapterCapacityError      max_loras adapters are live: retire one or raise max_loras
"""

from __future__ import annotations

from environments.errors import UserError


class ActorError(RuntimeError):
    """Base of every error the actors raise on purpose."""


class ServingError(ActorError):
    pass


class ServerStartError(ServingError):
    pass


class ServerUnavailableError(ServingError):
    pass


class RolloutsFailingError(ActorError, UserError):
    """One line for the person running the job: the fix is on this machine (install, sandbox), not in code."""


class AdapterError(ActorError):
    pass


class AdapterExistsError(AdapterError):
    pass


class AdapterNotFoundError(AdapterError):
    pass


class AdapterInvalidError(AdapterError):
    pass


class AdapterCapacityError(AdapterError):
    pass
