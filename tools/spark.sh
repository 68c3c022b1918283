#!/usr/bin/env bash
# The Spark job (tools/spark/simdb_spark.py): installs what it needs, then
# runs its tests or the job itself in local mode.
#
#   bash tools/spark.sh                   the job's tests (pytest tools/spark)
#   bash tools/spark.sh run EXPORT OUT [--k 3] [--design card|manku|B:m] ...
#   bash tools/spark.sh bench corpus|synthetic WORK ...   figures (tools/spark/bench.py)
#
# Needs: a Java 17+ runtime (Debian's openjdk-17-jre-headless is installed
# when java is missing), PySpark from PyPI in the tools' venv
# (tools/venv.sh) and the simdb package built into it (tools/python.sh). When either cannot be installed (no network, no apt),
# the tests are skipped with the reason and this exits 0; `run` fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-test}"
[ "$#" -gt 0 ] && shift
PYSPARK="pyspark==4.3.0"

skip() {
    echo "spark: SKIPPED: $*" >&2
    [ "$mode" = test ] && exit 0
    exit 1
}

java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
    echo "spark: installing openjdk-17-jre-headless" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y openjdk-17-jre-headless >/dev/null 2>&1 || {
        $SUDO apt-get update >/dev/null 2>&1 || true
        $SUDO apt-get install -y openjdk-17-jre-headless >/dev/null 2>&1
    } || skip "no Java 17 runtime, and apt-get could not install openjdk-17-jre-headless"
    hash -r
    [ "$(java_major)" -ge 17 ] || skip "java is older than 17 after installing openjdk-17"
fi

venv="$(bash tools/venv.sh "$PYSPARK" "pyarrow>=14" "numpy>=2.0" "pytest>=7")" \
    || skip "could not install $PYSPARK, pyarrow, numpy and pytest from PyPI"
py="$venv/bin/python"
# Spark's workers are started with this interpreter.
export PYSPARK_PYTHON="$py"
# The jobs decide pairs and place clusters with the simdb package (the
# library's rule): built into the same venv, so a stale one is never used.
if [ "$mode" = test ] || ! "$py" -c "import simdb; simdb.place_groups" >/dev/null 2>&1; then
    bash tools/python.sh build >/dev/null \
        || skip "could not build the simdb package into $venv (tools/python.sh build)"
fi

case "$mode" in
    test)
        target="${CARGO_TARGET_DIR:-$PWD/target}"
        # The binary of this tree: built (a no-op when it is up to date)
        # unless the caller names one, so a stale build is never tested.
        if [ -z "${SIMDB_BIN:-}" ]; then
            cargo build --release --locked --bin simdb
            export SIMDB_BIN="$target/release/simdb"
        fi
        "$py" -m pytest -q -p no:cacheprovider \
            -W "ignore:PySpark does not yet fully support pandas:FutureWarning" tools/spark
        ;;
    run)
        exec "$py" tools/spark/simdb_spark.py "$@"
        ;;
    bench)
        target="${CARGO_TARGET_DIR:-$PWD/target}"
        export SIMDB_BIN="${SIMDB_BIN:-$target/release/simdb}"
        exec "$py" tools/spark/bench.py "$@"
        ;;
    *)
        echo "usage: bash tools/spark.sh [test | run EXPORT OUT [options] | bench MODE WORK ...]" >&2
        exit 2
        ;;
esac
