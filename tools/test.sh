#!/usr/bin/env bash
# The test command: installs build prerequisites if missing, then runs the
# whole test suite in the release profile (the same profile as the example,
# so RocksDB's C++ is compiled once), then the Python package's tests
# (tools/python.sh: a venv with maturin, numpy and pytest; then the wheel,
# tools/wheel.sh test; SIMDB_SKIP_PYTHON=1 leaves both out), then the Ray
# tier's (tools/ray.sh; SIMDB_SKIP_RAY=1), the Spark job's (tools/spark.sh;
# SIMDB_SKIP_SPARK=1) and the review page's in a headless Chromium
# (tools/browser.sh; SIMDB_SKIP_BROWSER=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo test --release --locked "$@"
if [ -z "${SIMDB_SKIP_PYTHON:-}" ]; then
    bash tools/python.sh
    # The wheel: built abi3 + manylinux, installed into a fresh venv with
    # no Rust toolchain on PATH, and used there.
    bash tools/wheel.sh test
fi
# The Ray tier (tools/ray.sh: Ray Data from PyPI in its own venv, skipped
# with the reason when it cannot be installed; SIMDB_SKIP_RAY=1).
if [ -z "${SIMDB_SKIP_PYTHON:-}" ] && [ -z "${SIMDB_SKIP_RAY:-}" ]; then
    bash tools/ray.sh
fi
# The Spark job's tests (tools/spark.sh: OpenJDK 17 from apt, PySpark from
# PyPI; skipped with the reason when they cannot be installed;
# SIMDB_SKIP_SPARK=1 leaves them out).
if [ -z "${SIMDB_SKIP_SPARK:-}" ]; then
    bash tools/spark.sh
fi
# The review page in a real headless Chromium (tools/browser.sh: Debian's
# chromium, chromium-driver and fonts-noto-cjk from apt, selenium from PyPI;
# skipped with the reason when they cannot be installed;
# SIMDB_SKIP_BROWSER=1 leaves it out).
if [ -z "${SIMDB_SKIP_BROWSER:-}" ]; then
    bash tools/browser.sh
fi
