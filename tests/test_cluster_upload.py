"""What ``ray job submit --working-dir .`` uploads (cluster.md's commands): Ray's own packaging of this
checkout, with ``.gitignore`` and ``.rayignore``, fits well under its limit and holds what the jobs run."""

from __future__ import annotations

import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_working_dir_ray_uploads_fits_and_holds_the_jobs(tmp_path: Path):
    from ray._private.runtime_env.packaging import GCS_STORAGE_MAX_SIZE, create_package

    package = tmp_path / "working_dir.zip"
    create_package(str(REPO), package, include_gitignore=True)
    size = package.stat().st_size
    assert size < GCS_STORAGE_MAX_SIZE // 2, f"{size / 2**20:.0f} MiB: extend .rayignore"
    names = {name for name in zipfile.ZipFile(package).namelist() if not name.endswith("/")}  # files
    for needed in ("jobs/train.py", "jobs/smoke.py", "actors/trainer.py", "serve/proxy.py", "pyproject.toml"):
        assert needed in names, needed
    assert any(name.startswith("jobs/configs/") for name in names)
    assert any(name.startswith("environments/tasks/") for name in names)
    assert not any(name.startswith(("tests/", ".git/", "artifacts/", ".venv/")) for name in names)
