"""Trackio, the runs' tracker: one writer per process, local SQLite files only (never a Space).

The train job's trainers log through TRL (``report_to``), each into its own node's Trackio folder; this
writer is for what runs outside a trainer: an SFT run or a sweep's points (their TRL log history,
replayed), the trainers' steps gathered on the driver's node after a run on a cluster
(``jobs.train.gather_trackio``), and the evaluation's table and its per-step figures, in the same project
as the training run they judge.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def trackio_command(project: str, trackio_dir: str | None = None) -> str:
    """The shell command that opens the Trackio dashboard of ``project`` (``trackio show``, the CLI of the
    installed Trackio), reading ``trackio_dir`` when given, else ``$TRACKIO_DIR`` when set, else Trackio's
    default folder."""
    import shlex

    folder = os.environ.get("TRACKIO_DIR", "") if trackio_dir is None else trackio_dir
    command = f"trackio show --project {shlex.quote(project)}"
    return f"TRACKIO_DIR={shlex.quote(str(Path(folder).resolve()))} {command}" if folder else command


def history_rows(history: Sequence[dict[str, Any]]) -> list[tuple[int, dict[str, float]]]:
    """(step, metrics) rows of a TRL log history: every number of each entry (a number written as text
    too) but ``step`` itself; entries without a number are left out."""
    rows = []
    for entry in history:
        metrics = {}
        for key, value in entry.items():
            if key == "step" or isinstance(value, bool):
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                metrics[key] = number
        if metrics:
            rows.append((int(entry.get("step", 0)), metrics))
    return rows


class TrackioLogger:
    """A Trackio writer for one project (a sweep's actor, an SFT run, an evaluation). Must live in a process
    that has not imported Trackio yet when a directory is given: Trackio reads ``TRACKIO_DIR`` at import."""

    def __init__(self, project: str, trackio_dir: str = "") -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # local SQLite only; never reach for a Space
        if trackio_dir:
            os.environ["TRACKIO_DIR"] = str(Path(trackio_dir).resolve())
        import trackio

        self._trackio = trackio
        self.project = project

    def log_run(
        self,
        name: str,
        config: dict[str, Any],
        rows: Sequence[tuple[int, dict[str, float]]],
        tables: dict[str, Sequence[dict[str, Any]]] | None = None,
    ) -> int:
        """One run of ``(step, metrics)`` rows, plus ``tables`` (name -> records) logged once; returns
        how many rows were logged."""
        run = self._trackio.init(
            project=self.project, name=name, config=config, auto_log_cpu=False, auto_log_gpu=False
        )
        for step, metrics in rows:
            run.log(metrics, step=step)
        if tables:
            import pandas as pd

            run.log({k: self._trackio.Table(dataframe=pd.DataFrame(list(v))) for k, v in tables.items() if v})
        run.finish()
        return len(rows)

    def directory(self) -> str:
        from trackio.utils import TRACKIO_DIR

        return str(TRACKIO_DIR)
