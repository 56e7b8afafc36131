"""Compatibility of the isolated judge, measured on real test suites.

Each library below is a small pure-Python package from PyPI whose sdist ships its tests. Its sdist (exact
version pinned here, downloaded once with ``pip download --no-deps --no-binary :all:`` into ``--cache``,
outside the repository) becomes a task: the library's code is the workspace (the "agent's solution"), its
test files are the hidden tests, as in a repair task, and the oracle is ``python -m pytest -q <tests>``.
The task is verified twice through ``environments.tasks.oracle.verify`` with ``SubprocessRunner`` (on the
host, no sandbox: these are libraries, not hack attempts): once with ``judge="in-process"`` (the command
as given, the project's sealed reporter) and once isolated (the tests in a pristine interpreter, the
library behind proxies in a confined child). Per-test outcomes are read from each run's report (for the
in-process run the sealed report is unsealed with the run's key, kept by a shim around the oracle's
``secrets``, so outcomes are read even when some tests fail).

Only tests whose in-process outcome is ``passed`` or ``failed`` count; a test is *identical* when its
isolated outcome is the same. Per library: tests compared, identical, share, examples of differing tests;
overall: the share over all compared tests, and the verify wall time per run (median over libraries,
isolated vs in-process, and the ratio).

    .venv/bin/python benchmarks/isolation_compat.py [--only NAME ...] [--cache DIR] [--keep DIR]

Per-library figures go to ``benchmarks/data/isolation_compat.json``; the last line is one JSON object of
figures. Runs the libraries one after another (a shared machine): about 5-10 minutes in all.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.stats import percentile  # noqa: E402
from environments.core.runner import SubprocessRunner  # noqa: E402
from environments.core.types import CommandOracle, Kind, Limits, Reference, Source, Task  # noqa: E402
from environments.integrity.reports import unseal_report  # noqa: E402
from environments.tasks import oracle as oracle_module  # noqa: E402
from environments.tasks.oracle import verify, write_start  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "isolation_compat.json"
COUNTED = ("passed", "failed")


@dataclass(frozen=True)
class Library:
    name: str
    version: str
    tests: tuple[str, ...]
    """Test paths inside the sdist (after ``src/`` is flattened): the hidden files and the pytest args."""
    args: tuple[str, ...] = ()
    """Extra pytest arguments (``-o addopts=`` where the sdist's config asks for plugins not installed)."""
    drop: tuple[str, ...] = ()
    """Files of the sdist left out of the task."""


LIBRARIES = (
    Library("inflection", "0.5.1", ("test_inflection.py",)),
    Library("six", "1.16.0", ("test_six.py",)),
    Library("toolz", "1.0.0", ("toolz/tests",)),
    Library("tabulate", "0.9.0", ("test",)),
    Library("isodate", "0.7.2", ("tests",)),
    Library("semver", "3.0.2", ("tests",), args=("-o", "addopts=")),
    Library("cachetools", "5.5.0", ("tests",)),
    Library("jmespath", "1.0.1", ("tests",)),
    Library("more-itertools", "10.5.0", ("tests",)),
    Library("boltons", "24.0.0", ("tests",)),
    Library("toml", "0.10.2", ("tests",)),
    Library("wcwidth", "0.2.13", ("tests",), args=("-o", "addopts=")),
    Library("idna", "3.10", ("tests",)),
    Library("parse", "1.20.2", ("tests",)),
    Library("xmltodict", "0.13.0", ("tests",)),
    Library("pathspec", "0.12.1", ("tests",)),
)
"""Tried and left out: bidict, docopt, sortedcontainers, tomli (no tests in the sdist); iso8601 (its tests
need hypothesis, not installed)."""
SKIP_PARTS = ("PKG-INFO", ".egg-info", "__pycache__", ".git")
MAX_FILE_BYTES = 4 * 1024 * 1024


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness-adapters" / "isolation_compat"


def sdist(lib: Library, cache: Path) -> Path:
    """The unpacked sdist of ``lib`` in ``cache`` (downloaded and unpacked on first use)."""
    unpacked = cache / "src" / f"{lib.name}-{lib.version}"
    if unpacked.is_dir():
        return unpacked
    downloads = cache / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    found = _archive(downloads, lib)
    if found is None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(downloads),
                f"{lib.name}=={lib.version}",
            ],
            check=True,
        )
        found = _archive(downloads, lib)
    if found is None:
        raise RuntimeError(f"no sdist of {lib.name}=={lib.version} in {downloads}")
    work = Path(tempfile.mkdtemp(dir=cache))
    with tarfile.open(found) as archive:
        archive.extractall(work, filter="data")
    (top,) = list(work.iterdir())
    unpacked.parent.mkdir(parents=True, exist_ok=True)
    top.rename(unpacked)
    shutil.rmtree(work)
    return unpacked


def _archive(folder: Path, lib: Library) -> Path | None:
    for stem in {lib.name, lib.name.replace("-", "_"), lib.name.replace("-", ".")}:
        for suffix in (".tar.gz", ".tgz"):
            path = folder / f"{stem}-{lib.version}{suffix}"
            if path.is_file():
                return path
    return None


def make_task(lib: Library, root: Path, judge: str, timeout_s: float) -> Task:
    """The library as a repair task: its code is the workspace, its tests (``lib.tests``) the hidden
    files; a ``src/`` layout is flattened so the package sits at the root, as a task's workspace would."""
    workspace: dict[str, bytes] = {}
    hidden: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or path.is_symlink() or any(part in rel for part in SKIP_PARTS):
            continue
        if rel in lib.drop or path.stat().st_size > MAX_FILE_BYTES:
            continue
        if rel.startswith("src/"):
            rel = rel.removeprefix("src/")
        is_test = any(rel == t or rel.startswith(t.rstrip("/") + "/") for t in lib.tests)
        (hidden if is_test else workspace)[rel] = path.read_bytes()
    command = " ".join(["python -m pytest -q", *lib.args, *lib.tests])
    return Task(
        id=f"compat-{lib.name}-{judge}".lower(),
        source=Source.REPO,
        kind=Kind.REPAIR,
        instruction=f"Keep {lib.name}'s tests passing.\n",
        workspace=workspace,
        hidden=hidden,
        oracle=CommandOracle(command),
        reference=Reference(files=dict(list(workspace.items())[:1])),  # the library as it is
        limits=Limits(agent_timeout_s=timeout_s, verify_timeout_s=timeout_s, memory_mb=4096),
        judge=judge,
    )


class _KeptKeys:
    """Stands in for ``secrets`` in the oracle module: the same functions, but the in-process report's seal
    key is kept so the benchmark can unseal it (``verify`` itself unseals it only when the run exits 0)."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []

    def token_hex(self, n: int | None = None) -> str:
        return secrets.token_hex(n)

    def token_bytes(self, n: int | None = None) -> bytes:
        key = secrets.token_bytes(n)
        self.keys.append(key)
        return key


def run_once(lib: Library, root: Path, judge: str, scratch: Path, timeout_s: float) -> dict:
    task = make_task(lib, root, judge, timeout_s)
    produced = write_start(task, scratch / "produced")
    shim = _KeptKeys()
    saved = oracle_module.secrets
    oracle_module.secrets = shim
    try:
        started = time.monotonic()
        run = verify(task, produced, scratch / "verify", SubprocessRunner())
        wall = time.monotonic() - started
    finally:
        oracle_module.secrets = saved
    outcomes: dict[str, str] | None = None
    why = ""
    if judge == "in-process":
        sealed = list((scratch / "verify").glob(".verdict-*/report.seal"))
        raw = sealed[0].read_text() if sealed else None
        final, why = unseal_report(raw, shim.keys[-1]) if shim.keys else (None, "no key")
        outcomes = dict(final["outcomes"]) if final else None
    else:
        reports = list((scratch / "verify").glob(".verdict-*/report.json"))
        if reports:
            data = json.loads(reports[0].read_text())
            outcomes = dict(data.get("outcomes") or {})
            why = str(data.get("solution_gone") or "")
    return {
        "verdict": str(run.verdict),
        "reason": run.reason,
        "wall_s": wall,
        "outcomes": outcomes,
        "why": why,
        "tail": run.result.output_tail if run.result else "",
    }


def compare(inproc: dict[str, str], isolated: dict[str, str]) -> tuple[int, int, list[dict]]:
    """Tests counted, identical, and the differing ones. A parametrized test whose id holds an index
    (``expected4``) may be numbered differently in the two runs when its cases come from a set (hash
    order changes between interpreters): ids missing from the isolated run are then matched by outcome
    among the other cases of the same test function."""
    counted = {n: o for n, o in inproc.items() if o in COUNTED}
    unmatched = {n: o for n, o in counted.items() if n not in isolated}
    spare: dict[str, list[str]] = {}
    for name, outcome in isolated.items():
        if name not in counted and "[" in name:
            spare.setdefault(name.split("[", 1)[0], []).append(outcome)
    renumbered = set()
    for name, outcome in sorted(unmatched.items()):
        pool = spare.get(name.split("[", 1)[0], [])
        if "[" in name and outcome in pool:
            pool.remove(outcome)
            renumbered.add(name)
    differ = [
        {"test": n, "in_process": o, "isolated": isolated.get(n, "missing")}
        for n, o in sorted(counted.items())
        if isolated.get(n) != o and n not in renumbered
    ]
    return len(counted), len(counted) - len(differ), differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=default_cache(), help="sdists and unpacked sources")
    parser.add_argument("--only", nargs="*", default=None, help="library names to run (default: all)")
    parser.add_argument("--keep", type=Path, default=None, help="keep each run's trees under this folder")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="verify timeout per run")
    parser.add_argument("--out", type=Path, default=DATA, help="per-library figures (JSON)")
    options = parser.parse_args()
    chosen = [lib for lib in LIBRARIES if options.only is None or lib.name in options.only]
    rows = []
    for lib in chosen:
        root = sdist(lib, options.cache)
        base = options.keep / lib.name if options.keep else Path(tempfile.mkdtemp(prefix="isocompat-"))
        if base.exists():
            shutil.rmtree(base)
        runs = {}
        for judge in ("in-process", "isolated"):
            runs[judge] = run_once(lib, root, judge, base / judge, options.timeout_s)
        if options.keep is None:
            shutil.rmtree(base, ignore_errors=True)
        inproc, isolated = runs["in-process"], runs["isolated"]
        if inproc["outcomes"] is None:
            why = inproc["why"] or inproc["reason"]
            print(f"{lib.name}: no in-process outcomes ({why})\n{inproc['tail']}")
            continue
        tests, same, differ = compare(inproc["outcomes"], isolated["outcomes"] or {})
        row = {
            "library": f"{lib.name}=={lib.version}",
            "tests": tests,
            "identical": same,
            "share": round(same / tests, 4) if tests else None,
            "in_process_passed": sum(o == "passed" for o in inproc["outcomes"].values()),
            "isolated_passed": sum(o == "passed" for o in (isolated["outcomes"] or {}).values()),
            "in_process_verify_s": round(inproc["wall_s"], 2),
            "isolated_verify_s": round(isolated["wall_s"], 2),
            "isolated_note": isolated["why"] or (isolated["reason"] if isolated["outcomes"] is None else ""),
            "differing": len(differ),
            "examples": differ[:8],
        }
        rows.append(row)
        print(
            f"{lib.name:16} tests {tests:5d}  identical {same:5d}  share {row['share']}  "
            f"verify in-process {row['in_process_verify_s']:.1f}s isolated {row['isolated_verify_s']:.1f}s"
            + (f"  ({row['isolated_note'][:120]})" if row["isolated_note"] else ""),
            flush=True,
        )
        for example in differ[:5]:
            print(f"    {example['test']}: {example['in_process']} -> {example['isolated']}")
    compared = sum(r["tests"] for r in rows)
    identical = sum(r["identical"] for r in rows)
    iso = [r["isolated_verify_s"] for r in rows]
    inp = [r["in_process_verify_s"] for r in rows]
    ratios = [a / b for a, b in zip(iso, inp, strict=True)]
    summary = {
        "libraries": len(rows),
        "tests_compared": compared,
        "tests_identical": identical,
        "identical_share": round(identical / compared, 4) if compared else None,
        "worst_library_share": min((r["share"] for r in rows if r["share"] is not None), default=None),
        "isolated_verify_median_s": round(percentile(iso, 0.5), 2) if iso else None,
        "in_process_verify_median_s": round(percentile(inp, 0.5), 2) if inp else None,
        "isolated_to_in_process_ratio_median": round(percentile(ratios, 0.5), 2) if ratios else None,
    }
    if options.only is None:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(json.dumps({"summary": summary, "libraries": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
