"""The code base passes ruff's lint rules (E, F, I, UP, B at 110 columns) and is ruff-formatted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_check_passes():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:]


def test_ruff_format_leaves_nothing_to_change():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:]
