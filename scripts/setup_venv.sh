#!/usr/bin/env bash
# Creates .venv (if missing) and installs Stereoscope with the extras given ("test", "local", ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
.venv/bin/pip install -q -c requirements.lock -e "$spec"
