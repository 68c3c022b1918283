#!/usr/bin/env bash
# The test command: installs build prerequisites if missing, then runs the
# whole test suite in the release profile (the same profile as the example,
# so RocksDB's C++ is compiled once).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo test --release --locked "$@"
