#!/usr/bin/env bash
# The project's policy checks, run by CI after the tests (.ci/run):
# formatting, clippy with warnings denied (the crate with every target, the
# library without its default features, the Python crate), and the API
# docs with warnings denied (broken or private intra-doc links), and no
# function in src/ or python/src/ over 80 lines that tools/long_functions.txt
# does not list with its reason. Everything
# runs in the release profile, so it reuses the tests' build of RocksDB.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    echo "lint: installing rustfmt and clippy" >&2
    rustup component add rustfmt clippy
fi
step() { echo "lint: $*" >&2; "$@"; }
step cargo fmt --all -- --check
(cd python && step cargo fmt -- --check)
step cargo clippy --release --locked --all-targets -- -D warnings
step cargo clippy --release --locked --no-default-features --lib -- -D warnings
(cd python && step cargo clippy --release --locked -- -D warnings)
RUSTDOCFLAGS="-D warnings" step cargo doc --release --locked --no-deps
(cd python && RUSTDOCFLAGS="-D warnings" step cargo doc --release --locked --no-deps)
# No function over 80 lines without a listed reason (tools/long_functions.txt).
step python3 tools/long_functions.py
echo "lint: ok" >&2
