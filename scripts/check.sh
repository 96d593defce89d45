#!/usr/bin/env bash
# The static checks CI runs before the tests: lint, format and types over the packages, with zero
# findings. Run by scripts/test.sh; on its own after scripts/bootstrap.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(aisle api ingest jobs queries warehouse)
.venv/bin/ruff check "${packages[@]}" tests bench
.venv/bin/ruff format --check "${packages[@]}" tests bench
.venv/bin/mypy "${packages[@]}"
