#!/usr/bin/env bash
# The tools' Python virtual environment: created if missing (installing
# Debian's python3-venv when ensurepip is absent), then the packages given
# as arguments installed into it from PyPI. Prints the venv's directory.
#
#   bash tools/venv.sh [PACKAGE ...]
#   SIMDB_VENV=dir      where the venv lives (default: target dir/pyenv)
#   PYTHON=python3.x    the interpreter that makes it
set -euo pipefail
cd "$(dirname "$0")/.."
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
        rm -rf "$venv"
        "$py" -m venv "$venv"
    }
fi
if [ "$#" -gt 0 ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
fi
echo "$venv"
