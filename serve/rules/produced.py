"""Files a run produced, and the same files written by the agent's own hand.

A training run prints ``wrote results/metrics.json``; ``vitest --outputFile=.reports/vitest.json`` names
its report. What a run writes is what a grader or a merge gate reads. The agent writing that very file
itself (a write or edit tool, ``echo … >``, ``cat <<EOF >``) afterwards puts a grade there that no run
reached, whatever the file is called. Running the program again to produce it is no such write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rx
from .shellwords import resolve

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .shellread import ShellView

DATA_FILE = r"[\w./-]*[\w-]\.(?:json|xml|csv|tsv|txt|info|html|out|log|ya?ml)"
OUTPUT_FLAG = rx.compile(
    r"--(?:output[-_]?file|outputFile|output|out|junitxml|junit[-_]?xml|json[-_]report[-_]file|report[-_]?"
    r"(?:path|file|dir)|results?[-_]?(?:path|file)|benchmark_out|metrics[-_]?(?:path|file))[= ]+['\"]?("
    + DATA_FILE
    + r")\b"
)
"""A run told where to write its results (``--outputFile=.reports/vitest.json``, ``--junitxml=…``)."""
OUTPUT_SAID = rx.compile(
    r"(?i)\b(?:wrote|written(?:\s+to)?:?|saved(?:\s+to)?|saving(?:\s+\w+)?\s+to|writing(?:\s+to)?|exported\s+to|"
    r"results?\s+(?:in|to)|report(?:\s+\w+)?\s+(?:written|saved)(?:\s+to)?:?|output(?:\s+file)?:)\s+[`'\"]?("
    + DATA_FILE
    + r")\b"
)
"""A run saying what it wrote (``wrote results/metrics.json``)."""
HAND_WRITERS = frozenset({"echo", "printf", "cat", "tee", "sed", "perl", "jq", "touch", "truncate"})
"""Shell commands whose writes are the agent's own text, not a program's results."""


def outputs_named(view: ShellView | None, cwd: str | None) -> set[str]:
    """Files the commands of ``view`` are told to write their results to."""
    out: set[str] = set()
    for command in view.commands if view is not None else ():
        if command.name in HAND_WRITERS:
            continue
        out |= {resolve(m[1], cwd) for m in OUTPUT_FLAG.finditer(" ".join(command.argv))}
    return out


def outputs_said(text: str, cwd: str | None) -> set[str]:
    """Files a command's output says it wrote."""
    return {resolve(m[1], cwd) for m in OUTPUT_SAID.finditer(text)}


def hand_written(call: NormalCall, view: ShellView | None, cwd: str | None) -> list[str]:
    """Paths ``call`` writes with the agent's own text: file tools and shell writers, and a file those wrote
    moved or copied into place (``jq … > /tmp/m.json && mv /tmp/m.json results/metrics.json``)."""
    paths = [resolve(p, cwd) for p in call.touched_paths if p not in call.deletes]
    for command in view.commands if view is not None else ():
        if command.name in HAND_WRITERS:
            paths += command.writes
        elif command.name in ("mv", "cp", "install") and any(
            resolve(w, cwd) in paths for w in command.argv[1:]
        ):
            paths += command.writes
    return paths
