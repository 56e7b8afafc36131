"""The serving actor seen from another process, possibly on another node: ``AdapterServer`` over its Ray
handle. Publishing sends the adapter's bytes (``transfer.pack_adapter``) through Ray's object store to the
actor's ``publish_packed``, so trainer and server need no disk in common."""

from __future__ import annotations

import time
from typing import Any


class RayServing:
    """``AdapterServer`` over the serving actor's Ray handle (blocking calls)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.transfers: list[tuple[str, int, float]] = []
        """(name, bytes, seconds) of each adapter sent: pack, carry through the object store, unpack, load."""

    def publish(self, name: str, path: str) -> float:
        """Send the adapter folder's bytes to the serving actor (it may run on another node, with no disk in
        common); return the server's publish milliseconds."""
        import ray

        from actors.serving.transfer import pack_adapter

        started = time.perf_counter()
        packed = pack_adapter(path)
        publish_ms = ray.get(self.handle.publish_packed.remote(name, packed))
        self.transfers.append((name, packed.size_bytes, round(time.perf_counter() - started, 4)))
        return publish_ms

    def retire(self, name: str, wait: bool = True) -> None:
        import ray

        ray.get(self.handle.retire.remote(name, wait))
