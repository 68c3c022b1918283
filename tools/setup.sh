#!/usr/bin/env bash
# Installs what building simdb needs on a fresh Debian/Ubuntu machine:
# libclang (bindgen, for librocksdb-sys) and a C++ compiler. Idempotent.
set -euo pipefail

# bindgen (clang-sys) loads libclang.so, libclang-N.so or libclang.so.N.
# libclang-cpp.so.N is a different library (the C++ API) that images often
# carry without libclang itself: it must not count.
have_libclang() {
    local f
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        for f in "$LIBCLANG_PATH"/libclang.so* "$LIBCLANG_PATH"/libclang-[0-9]*.so*; do
            [ -e "$f" ] && return 0
        done
    fi
    ldconfig -p 2>/dev/null | grep -Eq '[[:space:]]libclang(-[0-9.]+)?\.so' && return 0
    for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
             /usr/lib/*-linux-gnu/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so*; do
        [ -e "$f" ] && return 0
    done
    return 1
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
