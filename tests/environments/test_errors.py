"""``cli_main``: a user error is one ``error:`` line (its traceback under ``--debug``); a bug is not."""

from __future__ import annotations

import pytest

from environments.errors import UsageError, cli_main


def test_the_status_passes_through_and_debug_never_reaches_the_command():
    seen = []

    def main(argv: list[str]) -> int:
        seen.append(argv)
        return 3

    with pytest.raises(SystemExit) as stopped:
        cli_main(main, ["a", "--debug", "b"])
    assert stopped.value.code == 3 and seen == [["a", "b"]]


def test_a_user_error_is_one_line_and_debug_or_a_bug_keeps_the_traceback():
    def fails(exc: Exception):
        def main(argv: list[str]) -> None:
            raise exc

        return main

    with pytest.raises(SystemExit, match=r"^error: --x 1: give 2 \(more with --debug\)$"):
        cli_main(fails(UsageError("--x 1: give 2\nand more")), [])
    wrapped = RuntimeError("a Ray task failed")
    wrapped.cause = UsageError("inside: fix it")  # what Ray's task errors carry
    with pytest.raises(SystemExit, match="^error: inside: fix it$"):
        cli_main(fails(wrapped), [])
    with pytest.raises(UsageError):
        cli_main(fails(UsageError("x")), ["--debug"])
    with pytest.raises(KeyError):
        cli_main(fails(KeyError("a bug")), [])
