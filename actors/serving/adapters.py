"""Pure LoRA adapter bookkeeping: validating adapter folders, the live registry, retire readiness.

No HTTP and no Ray: the serving actor calls these and does the I/O. The registry is the source of truth
for what is live; after a server restart it is what gets re-published.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from actors.errors import (
    AdapterCapacityError,
    AdapterExistsError,
    AdapterInvalidError,
    AdapterNotFoundError,
)

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """What a validated adapter folder holds."""

    rank: int
    target_modules: tuple[str, ...]
    weights_bytes: int


def check_adapter_name(name: str, base_name: str) -> None:
    if not _NAME.match(name):
        raise AdapterInvalidError(
            f"adapter name {name!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if name == base_name:
        raise AdapterExistsError(f"adapter name {name!r} is the base model's served name: pick another")


def _safetensors_complete(path: Path) -> int:
    """Check a safetensors file is whole (header parses, data reaches exactly the end); return its size."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise AdapterInvalidError(f"{path}: truncated safetensors file (no header): re-save the adapter")
        (header_len,) = struct.unpack("<Q", head)
        if 8 + header_len > size:
            raise AdapterInvalidError(
                f"{path}: truncated safetensors header: the adapter is still being written?"
            )
        try:
            header = json.loads(fh.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise AdapterInvalidError(f"{path}: safetensors header is not JSON: re-save the adapter") from exc
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
    if not ends:
        raise AdapterInvalidError(f"{path}: holds no tensors: re-save the adapter")
    if 8 + header_len + max(ends) != size:
        raise AdapterInvalidError(
            f"{path}: data size does not match its header ({size} bytes): "
            "the file is truncated or still being written"
        )
    return size


def inspect_adapter(path: Path, max_rank: int) -> AdapterInfo:
    """Validate a PEFT LoRA adapter folder for serving; raise AdapterInvalidError naming the problem."""
    if not path.is_dir():
        raise AdapterInvalidError(
            f"adapter path {path} is not a folder: pass the folder save_pretrained wrote"
        )
    config_path, weights_path = path / ADAPTER_CONFIG, path / ADAPTER_WEIGHTS
    if not config_path.is_file():
        raise AdapterInvalidError(f"{path}: no {ADAPTER_CONFIG}: not a PEFT adapter folder")
    if not weights_path.is_file():
        raise AdapterInvalidError(f"{path}: no {ADAPTER_WEIGHTS}: save with safe_serialization=True")
    try:
        config = json.loads(config_path.read_text())
    except json.JSONDecodeError as exc:
        raise AdapterInvalidError(
            f"{config_path}: not valid JSON: the adapter is still being written?"
        ) from exc
    if config.get("peft_type") != "LORA":
        raise AdapterInvalidError(
            f"{config_path}: peft_type is {config.get('peft_type')!r}, only LORA is served"
        )
    rank = config.get("r")
    if not isinstance(rank, int) or rank < 1:
        raise AdapterInvalidError(f"{config_path}: r={rank!r} is not a positive integer")
    ranks = [rank, *config.get("rank_pattern", {}).values()]
    if max(ranks) > max_rank:
        raise AdapterInvalidError(
            f"{path}: LoRA rank {max(ranks)} exceeds the server's max_lora_rank={max_rank}: "
            f"train with r <= {max_rank} or start serving with max_lora_rank >= {max(ranks)}"
        )
    targets = config.get("target_modules") or ()
    return AdapterInfo(
        rank=rank,
        target_modules=tuple(sorted(targets if isinstance(targets, list) else [targets])),
        weights_bytes=_safetensors_complete(weights_path),
    )


def adapter_problem(path: str) -> str | None:
    """Why ``path`` is not a loadable adapter folder (a file missing), or None: the cheap check before a
    publish (the evaluation's checkpoints, ``jobs.use``'s adapter); ``inspect_adapter`` checks the rest."""
    missing = [name for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS) if not (Path(path) / name).is_file()]
    return f"{', '.join(missing)} missing in {path}" if missing else None


class AdapterState(StrEnum):
    LIVE = "live"
    RETIRING = "retiring"


@dataclass(slots=True)
class AdapterEntry:
    name: str
    path: Path
    """The server's own copy, never the publisher's folder (which may be rewritten)."""
    info: AdapterInfo
    state: AdapterState = AdapterState.LIVE
    leases: int = 0


@dataclass(slots=True)
class AdapterRegistry:
    """Names the server knows, their state, and who still holds them."""

    capacity: int
    entries: dict[str, AdapterEntry] = field(default_factory=dict)

    def reserve(self, name: str) -> None:
        """Check a publish can go ahead; raise before any file is copied."""
        if name in self.entries:
            state = self.entries[name].state
            raise AdapterExistsError(
                f"adapter {name!r} is already {state}: publish a new version name instead of overwriting"
            )
        if len(self.entries) >= self.capacity:
            raise AdapterCapacityError(
                f"{len(self.entries)} adapters are loaded (max_loras={self.capacity}): "
                "retire old versions first "
                f"or start serving with a larger max_loras"
            )

    def add(self, entry: AdapterEntry) -> None:
        self.reserve(entry.name)
        self.entries[entry.name] = entry

    def live(self) -> list[str]:
        return sorted(n for n, e in self.entries.items() if e.state is AdapterState.LIVE)

    def get(self, name: str) -> AdapterEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise AdapterNotFoundError(
                f"no adapter named {name!r}; live: {', '.join(self.live()) or 'none'}"
            ) from None

    def lease(self, name: str) -> None:
        """A session will keep naming this adapter; retire waits for it to be released."""
        entry = self.get(name)
        if entry.state is not AdapterState.LIVE:
            raise AdapterNotFoundError(
                f"adapter {name!r} is being retired: start new sessions on a live version"
            )
        entry.leases += 1

    def release(self, name: str) -> None:
        entry = self.entries.get(name)
        if entry is not None and entry.leases > 0:
            entry.leases -= 1

    def mark_retiring(self, name: str) -> AdapterEntry:
        entry = self.get(name)
        entry.state = AdapterState.RETIRING
        return entry

    def drop(self, name: str) -> AdapterEntry | None:
        return self.entries.pop(name, None)


def ready_to_unload(entry: AdapterEntry, busy_adapters: frozenset[str]) -> bool:
    """True when no lease holds the adapter and the server reports no running or waiting request for it."""
    return entry.state is AdapterState.RETIRING and entry.leases == 0 and entry.name not in busy_adapters


_LORA_INFO = re.compile(r"^vllm:lora_requests_info\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)\s*$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def busy_adapters_from_metrics(text: str) -> frozenset[str]:
    """Adapters with running or waiting requests, from vLLM's Prometheus ``lora_requests_info`` gauge.

    vLLM keeps one series per label combination, valued with the time it was last set: the newest one is
    the current state.
    """
    newest: tuple[float, dict[str, str]] | None = None
    for match in _LORA_INFO.finditer(text):
        stamp = float(match["value"])
        if newest is None or stamp > newest[0]:
            newest = (stamp, dict(_LABEL.findall(match["labels"])))
    if newest is None:
        return frozenset()
    labels = newest[1]
    names = labels.get("running_lora_adapters", "").split(",") + labels.get(
        "waiting_lora_adapters", ""
    ).split(",")
    return frozenset(n for n in names if n)
