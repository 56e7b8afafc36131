"""What the guard does with its decisions: enforce them, only record them, or not check at all (pure).

- `enforce` (the default): every call is checked; a blocked call is replaced by the rule's notice, the
  block is recorded on the turn (`TurnRecord.blocks`) and the rollout scores 0.
- `monitor`: every call is checked and a call that would be blocked is recorded as a would-be block
  (`TurnRecord.would_block`, rule and reason), but the call passes through unchanged and the rollout is
  scored as if the guard were not there (an ablation: what would the guard have stopped?).
- `off`: nothing is checked and nothing is recorded; calls pass through.
"""

from __future__ import annotations

from enum import StrEnum


class GuardMode(StrEnum):
    ENFORCE = "enforce"
    MONITOR = "monitor"
    OFF = "off"

    @classmethod
    def parse(cls, value: object, key: str = "guard") -> GuardMode:
        """`value` as a mode; a `ValueError` naming `key` and the allowed values otherwise.

        YAML 1.1 (PyYAML) reads a bare `off` as `False`, so `False` is taken as `off`."""
        if value is False:
            return cls.OFF
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        allowed = ", ".join(m.value for m in cls)
        raise ValueError(f"{key}={value!r}: choose one of {allowed}")
