#!/usr/bin/env bash
# Install what the tests need (redis-server and PostgreSQL from Debian when missing, the Python
# packages into .venv), run the static checks (scripts/check.sh) and the whole suite. Extra arguments
# go to pytest; `--fast` runs
# only the tests not marked slow: the tier to run before every commit.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "Installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

AISLE_EXTRAS=test scripts/bootstrap.sh
# Lint, format and types first, with zero findings: a red check stops the run before the tests.
scripts/check.sh
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then args+=(-m "not slow"); else args+=("$arg"); fi
done
# Two workers by default, one a core of the machine this runs on (tests start their own servers on free
# loopback ports, so workers never share one); AISLE_TEST_WORKERS=0 runs the suite in one process.
exec .venv/bin/python -m pytest -n "${AISLE_TEST_WORKERS:-2}" ${args[@]+"${args[@]}"}
