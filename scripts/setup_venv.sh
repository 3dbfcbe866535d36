#!/usr/bin/env bash
# Creates .venv (if missing) and installs Stereoscope with the extras given ("test", "local", ...).
# pip runs only when pyproject.toml, requirements.lock or the compiled scanner (stereoscope/stats/_textscan.c) changed, or an extra is asked for that is not installed yet:
# the stamp .venv/.stereoscope-install holds the two files' hash and the extras installed with them
# (delete it, or set STEREOSCOPE_REINSTALL=1, to make pip run anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.stereoscope-install
want=$(cat pyproject.toml requirements.lock stereoscope/stats/_textscan.c | sha256sum | cut -c1-32)
have="" installed=""
[ -f "$stamp" ] && [ -z "${STEREOSCOPE_REINSTALL:-}" ] && read -r have installed < "$stamp" || true
missing=""
for extra in ${extras//,/ }; do
  case ",${installed}," in *",${extra},"*) ;; *) missing="${missing},${extra}" ;; esac
done
if [ "$have" = "$want" ] && [ -z "$missing" ]; then
  exit 0
fi
[ "$have" = "$want" ] || installed=""
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
.venv/bin/pip install -q -c requirements.lock -e "$spec"
all=$(echo "${installed},${extras}" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
echo "$want ${all}" > "$stamp"
