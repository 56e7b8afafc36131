"""Protocols at the seams between actors. Each method says who calls it and when."""

from __future__ import annotations

from typing import Any, Protocol


class PolicyServer(Protocol):
    """Serves one base model and its named LoRA adapter versions over the OpenAI API.

    Implemented by ``actors.serving.server.VLLMServer`` (and its Ray actor handle, method for method).
    """

    def url(self) -> str:
        """OpenAI base URL (``.../v1``). Called by the guard and the rollout launchers once at start."""
        ...

    def base_model_name(self) -> str:
        """Model name that selects the base weights with no adapter."""
        ...

    def publish(self, name: str, path: str) -> float:
        """Called by a trainer after each save, with a new version name; returns publish milliseconds.
        Never pauses requests for other adapters; a name already live is an error, not an overwrite."""
        ...

    def retire(self, name: str, wait: bool = True) -> None:
        """Called by a trainer for versions that fell out of its staleness window; the adapter is unloaded
        after the last request or lease naming it."""
        ...

    def adapters(self) -> list[str]:
        """Live adapter names. Called by evaluation and by tests."""
        ...

    def lease(self, name: str) -> None:
        """Called by a rollout when a session starts on ``name``; pairs with ``release`` when it ends."""
        ...

    def release(self, name: str) -> None: ...

    def check_health(self) -> dict[str, Any]:
        """Called by the train loop every step; raises if the server is down for good."""
        ...
