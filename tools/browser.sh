#!/usr/bin/env bash
# The review page's browser tier (docs/review.md): the page of a real
# `simdb serve` driven in headless Chromium through selenium.
#
#   bash tools/browser.sh          the tests (pytest tools/browser)
#   SIMDB_SCREENSHOTS=DIR          also write a screenshot of each view there
#
# Needs Debian's chromium, chromium-driver and fonts-noto-cjk (installed
# when missing) and selenium from PyPI in the tools' venv (tools/venv.sh).
# When they cannot be installed (no network, no apt), the tests are
# skipped with the reason and this exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
    echo "browser: SKIPPED: $*" >&2
    exit 0
}

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
    || ! fc-list 2>/dev/null | grep -qi "noto sans cjk"; then
    echo "browser: installing chromium, chromium-driver and fonts-noto-cjk" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y chromium chromium-driver fonts-noto-cjk >/dev/null 2>&1 || {
        $SUDO apt-get update >/dev/null 2>&1 || true
        $SUDO apt-get install -y chromium chromium-driver fonts-noto-cjk >/dev/null 2>&1
    } || skip "apt-get could not install chromium, chromium-driver and fonts-noto-cjk"
    hash -r
fi
command -v chromedriver >/dev/null 2>&1 || skip "no chromedriver after installing chromium-driver"

venv="$(bash tools/venv.sh "selenium>=4.20,<5" "pytest>=7")" \
    || skip "could not install selenium and pytest from PyPI"
target="${CARGO_TARGET_DIR:-$PWD/target}"
# The binary of this tree: built (a no-op when it is up to date) unless the
# caller names one, so a stale build is never tested.
if [ -z "${SIMDB_BIN:-}" ]; then
    cargo build --release --locked --bin simdb
    export SIMDB_BIN="$target/release/simdb"
fi
"$venv/bin/python" -m pytest -q -p no:cacheprovider tools/browser
