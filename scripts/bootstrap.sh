#!/usr/bin/env bash
# Creates .venv with Python >= 3.11 and installs the project into it. Sourced by the other scripts.
set -euo pipefail
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[${AISLE_EXTRAS:-test}]"
