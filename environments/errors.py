"""The one marker every entry point catches: a problem the person running a job caused and can fix.

Its message names the problem and the fix in one line; ``jobs.cli`` prints it as ``error: <message>`` and
exits 1, with the traceback only under ``--debug``. Errors of the project's own making stay ordinary
exceptions, so a bug still shows its traceback. The classes that mark themselves with it: bad config
values (``actors.config_loader.ConfigError``), a model that cannot serve tool calls
(``actors.serving.weights.ModelSetupError``), SFT data and preflight problems, a malformed task folder,
a harness that is not installed and a sandbox backend that cannot run.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the person running the job can fix; the message says what to change."""


def user_error(exc: BaseException) -> UserError | None:
    """``exc`` as a ``UserError``, looking through the wrappers a Ray task or actor puts around it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, UserError):
            return exc
        exc = getattr(exc, "cause", None) or exc.__cause__
    return None
