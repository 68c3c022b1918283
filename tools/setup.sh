#!/usr/bin/env bash
# Installs what building simdb needs on a fresh Debian/Ubuntu machine:
# libclang (bindgen, for librocksdb-sys) and a C++ compiler. Idempotent.
set -euo pipefail

have_libclang() {
    ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
    ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1
}

need=()
have_libclang || need+=(libclang-dev)
command -v c++ >/dev/null 2>&1 || need+=(g++)
if [ "${#need[@]}" -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y "${need[@]}" >/dev/null 2>&1 || {
        $SUDO apt-get update >/dev/null
        $SUDO apt-get install -y "${need[@]}"
    }
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found; install Rust (rustup)" >&2; exit 1; }
