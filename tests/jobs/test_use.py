"""``python -m jobs.use`` with each real harness: after it runs, the harness started as a person starts it
(``pi -p``, ``opencode run``, ``hermes -z``, nothing but a home folder) gets its answer from the adapter,
as the serving log shows, and ``--undo`` puts the person's config back byte for byte.

Everything runs inside one fresh network namespace (bubblewrap ``--unshare-net``, the host's files
otherwise): the server, ``jobs.use`` and the harness reach each other on loopback and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.environments.harnesses.conftest import harnesses_missing

pytestmark = [pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROMPT = "Say hello in one word."
EXISTING = {  # a setting of the person's own in each harness's config, which must survive
    "pi": (".pi/agent/settings.json", '{"theme": "dark"}\n'),
    "opencode": (".config/opencode/opencode.json", '{ "theme": "tokyonight" }\n'),
    "hermes": (".hermes/config.yaml", "display:\n  skin: mono\n"),
}
SCRIPT = r"""
set -u
"$PY" -m jobs.use --harness "$H" --adapter "$A" --work-dir "$W" > "$USE_LOG" 2>&1 &
use=$!
for _ in $(seq 1 1200); do
  grep -q '\[use\] ready' "$USE_LOG" && break
  kill -0 "$use" 2>/dev/null || exit 3
  sleep 0.5
done
grep -q '\[use\] ready' "$USE_LOG" || exit 4
case "$H" in
  pi) "$BIN" -p "$PROMPT" ;;
  opencode) printf '%s\n' "$PROMPT" | "$BIN" run ;;
  hermes) "$BIN" -z "$PROMPT" ;;
esac > "$OUT" 2>&1
echo "harness exit $?" >> "$OUT"
kill -TERM "$use"
wait "$use"
"$PY" -m jobs.use --harness "$H" --undo >> "$USE_LOG" 2>&1
"""


@pytest.fixture(scope="module")
def adapter(tiny_agent: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from environments.tiny_model import random_lora_adapter

    return random_lora_adapter(tiny_agent, tmp_path_factory.mktemp("use") / "adapter", rank=8, seed=7)


@pytest.mark.parametrize("harness", ["pi", "opencode", "hermes"])
def test_the_harness_started_as_usual_gets_answers_from_the_adapter(
    harness: str, adapter: Path, tmp_path: Path
):
    from environments.harnesses.registry import harness_spec

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    home = tmp_path / "home"
    relative, content = EXISTING[harness]
    (home / relative).parent.mkdir(parents=True)
    (home / relative).write_text(content)
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "HARNESS_ADAPTERS_CACHE": os.environ["HARNESS_ADAPTERS_CACHE"],
        "HF_HUB_OFFLINE": "1",
        "PY": sys.executable,
        "H": harness,
        "A": str(adapter),
        "W": str(tmp_path / "serving"),
        "USE_LOG": str(tmp_path / "use.log"),
        "OUT": str(tmp_path / "harness.out"),
        "BIN": str(harness_spec(harness).launcher().binary),
        "PROMPT": PROMPT,
        # what a person might well have set; nothing could leave the namespace anyway
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "npm_config_offline": "true",
    }
    argv = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "bash", "-c", SCRIPT]
    run = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    use_log = (tmp_path / "use.log").read_text()
    harness_out = (tmp_path / "harness.out").read_text() if (tmp_path / "harness.out").exists() else ""
    assert run.returncode == 0, f"{run.stderr}\n--- jobs.use:\n{use_log[-4000:]}\n--- harness:\n{harness_out}"
    assert "[use] wrote" in use_log and "--undo" in use_log
    served = "".join(p.read_text(errors="replace") for p in (tmp_path / "serving").glob("vllm-*.log"))
    assert f"lora_name='{harness}-adapter'" in served, (
        f"no request reached the adapter:\n{harness_out[-3000:]}"
    )
    after = {p: p.read_bytes() for p in home.rglob("*") if p.is_file() and p in before}
    assert after == before, "undo did not restore the person's config"
    assert not (home / ".pi/agent/models.json").exists(), "a file jobs.use created was left behind"
