"""The one marker every entry point catches: a problem the person running a command caused and can fix.

Its message names the problem and the fix in one line; ``cli_main`` (every ``python -m`` command) and
``jobs.cli.job_main`` (the jobs) print it as ``error: <message>`` and exit 1, with the traceback only under
``--debug``. Errors of the project's own making stay ordinary exceptions, so a bug still shows its
traceback. The classes that mark themselves with it: bad config values (``actors.config_loader.ConfigError``,
an unknown model preset or tool-call parser included), a model that cannot serve tool calls
(``actors.serving.weights.ModelSetupError``), SFT data and preflight problems, an adapter push that cannot
reach a hub, a malformed task folder, a harness that is not installed, a sandbox backend that cannot run,
and ``UsageError``: a command-line argument that names something missing or unknown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

DEBUG_FLAG = "--debug"


class UserError(Exception):
    """A problem the person running the job can fix; the message says what to change."""


class UsageError(UserError, ValueError):
    """A command-line argument that names a file, task or setting that is not there; says what to give."""


def user_error(exc: BaseException) -> UserError | None:
    """``exc`` as a ``UserError``, looking through the wrappers a Ray task or actor puts around it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, UserError):
            return exc
        exc = getattr(exc, "cause", None) or exc.__cause__
    return None


def one_line(exc: BaseException) -> str:
    """An error's message as one line (a multi-line message keeps its first line and says so)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0] + (" (more with --debug)" if len(lines) > 1 else "")


@contextmanager
def user_errors(debug: bool) -> Iterator[None]:
    """A ``UserError`` raised inside (or wrapped by Ray) leaves as ``SystemExit("error: <one line>")``, exit
    status 1; with ``debug`` it keeps its traceback. Anything else is a bug and keeps its traceback."""
    try:
        yield
    except Exception as exc:
        found = user_error(exc)
        if found is None or debug:
            raise
        raise SystemExit(f"error: {one_line(found)}") from None


def cli_main(main: Callable[[list[str]], int | None], argv: Sequence[str] | None = None) -> NoReturn:
    """Run a command's ``main(argv)`` and exit with its status: the ``if __name__ == "__main__"`` line of
    every command that is not a job. ``--debug`` anywhere in ``argv`` is taken out before ``main`` parses
    it and shows a user error's traceback instead of its one line."""
    given = list(sys.argv[1:] if argv is None else argv)
    with user_errors(DEBUG_FLAG in given):
        status = main([arg for arg in given if arg != DEBUG_FLAG])
    raise SystemExit(status or 0)
