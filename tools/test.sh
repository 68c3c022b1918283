#!/usr/bin/env bash
# The test command: installs build prerequisites if missing, then runs the
# whole test suite in the release profile (the same profile as the example,
# so RocksDB's C++ is compiled once), then the Python package's tests
# (tools/python.sh: a venv with maturin, numpy and pytest; SIMDB_SKIP_PYTHON=1
# leaves them out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo test --release --locked "$@"
if [ -z "${SIMDB_SKIP_PYTHON:-}" ]; then
    bash tools/python.sh
fi
