"""Progress of a long loop someone waits on, written to stderr so stdout keeps its own contract.

Where the stream is a terminal: a tqdm bar. Elsewhere (a log file, CI, ``ray job logs``): no bar, whose
carriage returns would pile up, but a plain line at most every ``every_s`` seconds and one at the end:

    validate: 12/40 tasks (30%), 1m20s, about 3m07s left

``progress_text`` and ``LineProgress`` take their clock and stream as arguments, so they are tested
without waiting; ``progress`` picks between the two.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


def duration_text(seconds: float) -> str:
    """``45s``, ``3m07s`` or ``1h02m``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def progress_text(label: str, done: int, total: int, elapsed_s: float, unit: str = "items") -> str:
    """One progress line: count, share, time so far and, once something is done, the time left at the
    rate so far."""
    share = f" ({100 * done // total}%)" if total > 0 else ""
    text = f"{label}: {done}/{total} {unit}{share}, {duration_text(elapsed_s)}"
    if 0 < done < total:
        text += f", about {duration_text(elapsed_s / done * (total - done))} left"
    return text


class LineProgress:
    """tqdm's ``update``/``close`` and context manager, writing ``progress_text`` lines: after an update
    when ``every_s`` seconds have passed since the last line, when the total is reached, and at ``close``
    when the last line is behind."""

    def __init__(
        self,
        total: int,
        label: str,
        unit: str = "items",
        file: TextIO | None = None,
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.label, self.unit = total, label, unit
        self.file = file if file is not None else sys.stderr
        self.every_s = every_s
        self.clock = clock
        self.done = 0
        self._started = self._last_line = clock()
        self._shown = -1
        """``done`` as of the last line written."""

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.done >= self.total or self.clock() - self._last_line >= self.every_s:
            self._write()

    def close(self) -> None:
        if self._shown != self.done:
            self._write()

    def _write(self) -> None:
        now = self.clock()
        text = progress_text(self.label, self.done, self.total, now - self._started, self.unit)
        print(text, file=self.file, flush=True)
        self._last_line, self._shown = now, self.done

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(
    total: int, label: str, unit: str = "items", file: TextIO | None = None, every_s: float = 10.0
) -> Any:
    """A tqdm bar on ``file`` (stderr by default) when it is a terminal, else a ``LineProgress``; use it
    as a context manager and call ``update(n)``."""
    stream = file if file is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=label, unit=f" {unit}", file=stream, mininterval=1.0)
    return LineProgress(total, label, unit, stream, every_s)
