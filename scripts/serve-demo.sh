#!/usr/bin/env bash
# Install Aisle, load the demo organisation and site, and serve on the embedded default
# (SQLite config store and lake under ./data, hot state in process).
set -euo pipefail
cd "$(dirname "$0")/.."
AISLE_EXTRAS=test scripts/bootstrap.sh
HOST=${AISLE_HOST:-127.0.0.1}
PORT=${AISLE_PORT:-8000}
export AISLE_DATA_DIR=${AISLE_DATA_DIR:-data}
echo "Demo login (also the JSON below): URL http://$HOST:$PORT/api/v1  docs http://$HOST:$PORT/api/v1/docs"
.venv/bin/aisle demo
exec .venv/bin/aisle serve --host "$HOST" --port "$PORT"
