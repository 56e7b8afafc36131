"""The preflight's findings: GPUs declared against GPUs seen, and one node's checks run here for real
(harness binaries, the bubblewrap sandbox running each harness, storage), passing and failing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jobs.preflight import Check, gpu_finding, guard_reached, node_checks


@pytest.mark.parametrize(
    ("declared", "visible", "ok", "said"),
    [
        (8, 8, True, "8 GPU(s) visible to torch, driver 580.65"),
        (8, 0, False, "Ray declares 8 GPU(s), torch sees 0"),
        (0, 0, True, "no GPU declared"),
    ],
)
def test_declared_gpus_must_be_the_gpus_torch_sees(declared, visible, ok, said):
    found, detail = gpu_finding(declared, visible, "580.65")
    assert found is ok and said in detail
    if not ok:
        assert "driver 580 or newer" in detail


def test_a_check_is_one_line_with_its_verdict_node_and_finding():
    assert Check("10.0.0.3", "storage", False, "denied").line() == "FAIL 10.0.0.3 storage: denied"
    assert Check("10.0.0.3", "vllm", True, "x").line().startswith("ok   10.0.0.3 vllm")


@pytest.mark.harness
def test_one_nodes_checks_pass_here_and_name_what_is_missing(tmp_path: Path, monkeypatch):
    from tests.environments.harnesses.conftest import harnesses_missing

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.fail(harnesses_missing() or "bubblewrap is not installed")  # CI must have both
    checks = node_checks(("pi", "opencode", "hermes"), "local", str(tmp_path / "bucket"), 0)
    by_name = {c.name: c for c in checks}
    assert all(c.ok for c in checks), [c.line() for c in checks if not c.ok]
    assert set(by_name) == {
        "gpu",
        "vllm",
        "pi binary",
        "opencode binary",
        "hermes binary",
        "sandbox",
        "storage",
    }
    assert "local sandbox runs pi" in by_name["sandbox"].detail and "hermes" in by_name["sandbox"].detail
    assert not list((tmp_path / "bucket").rglob("*.txt"))  # the probe deleted what it wrote

    monkeypatch.setenv("HA_HARNESSES", str(tmp_path / "nothing-installed"))
    (tmp_path / "file").write_text("not a folder")
    missing = node_checks(("pi",), "local", str(tmp_path / "file" / "bucket"), 0)
    failed = {c.name: c.detail for c in missing if not c.ok}
    assert "scripts/harness-deps.sh" in failed["pi binary"]
    assert {"pi binary", "storage"} <= set(failed) and "gpu" not in failed and "vllm" not in failed


def test_an_unreachable_guard_is_a_finding_not_a_crash():
    ok, detail = guard_reached("http://127.0.0.1:9/preflight")
    assert not ok and "unreachable" in detail and "proxy" in detail


@pytest.mark.harness
@pytest.mark.slow
def test_the_preflight_checks_every_node_of_a_running_cluster(ray_cluster, tmp_path: Path, capsys):
    from jobs.preflight import PreflightConfig, run

    figures = run(PreflightConfig(storage=str(tmp_path / "bucket"), timeout_s=300))
    lines = capsys.readouterr().out.splitlines()
    assert figures["nodes"] == 1 and figures["failed"] == [], figures["failed"]
    import re

    names = {m.group(2) for line in lines if (m := re.match(r"^(ok|FAIL)\s+\S+ (.+?): ", line))}
    assert {"gpu", "vllm", "sandbox", "storage", "guard"} <= names
    assert any(line.startswith("ok") and " guard: " in line and "answered 200" in line for line in lines)
