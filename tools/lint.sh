#!/usr/bin/env bash
# The project's policy checks, run by CI after the tests (.ci/run):
# formatting, clippy with warnings denied (the crate with every target, the
# library without its default features, the Python crate), and the API
# docs with warnings denied (broken or private intra-doc links), and no
# function in src/ or python/src/ over 80 lines that tools/long_functions.txt
# does not list with its reason, and one build of RocksDB for the example,
# the tests and the Python package. Everything
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
# RocksDB's C++ is compiled once: a plain build (the README's example, the
# Python package) and the tests' build use the same librocksdb-sys build
# (Cargo.toml's build-dependency on bitflags explains how they can differ).
rocksdb_out() {
    "$@" --message-format json 2>/dev/null |
        grep -o '"package_id":"[^"]*librocksdb-sys[^"]*"[^}]*"out_dir":"[^"]*"' |
        grep -o 'librocksdb-sys-[0-9a-f]*' | sort -u
}
builds="$( (rocksdb_out cargo build --release --locked
    rocksdb_out cargo test --release --locked --no-run
    rocksdb_out cargo build --release --locked -p simdb-python) | sort -u)"
if [ "$(printf '%s\n' "$builds" | grep -c .)" != 1 ]; then
    echo "lint: RocksDB is built more than once: $builds" >&2
    exit 1
fi
echo "lint: one RocksDB build ($builds)" >&2
echo "lint: ok" >&2
