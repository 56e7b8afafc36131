"""The guard's route for one rollout, ``/s/<rollout_id>/v1``: the OpenAI base path a harness is given.

Written here once, below every user: the rollout actor builds it from the guard's answer to ``open``
(``actors.rollout``), the guard serves its endpoints under it (``serve.proxy``), and the sandbox relay
lets only those endpoints of it through (``environments.harnesses.sandboxed``).
"""

from __future__ import annotations

ROLLOUT_ID = "rollout_id"
"""The path parameter that names the rollout in the guard's route templates."""


def rollout_path(rollout_id: str, base: str = "") -> str:
    """``<base>/s/<rollout_id>/v1``: rollout ``rollout_id``'s OpenAI base path on a guard served at
    ``base`` (a shard's route such as ``/pi``; "" at the root)."""
    return f"{base}/s/{rollout_id}/v1"


def rollout_route(endpoint: str) -> str:
    """The route template of ``endpoint`` (``/chat/completions``) under every rollout's path, with the
    rollout as the ``{rollout_id}`` parameter: ``/s/{rollout_id}/v1/chat/completions``."""
    return rollout_path("{" + ROLLOUT_ID + "}") + endpoint
