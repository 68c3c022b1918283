#!/usr/bin/env bash
# The example command: installs build prerequisites if missing, builds simdb,
# creates a store, ingests a generated sample, queries it and prints results.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo build --release --locked --bin simdb --example gen_sample
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
SIMDB="$BIN/simdb"

echo "== generate 2000 articles (every tenth also as an edited copy)"
"$BIN/examples/gen_sample" 2000 1 "$WORK/query.txt" > "$WORK/sample.jsonl"
wc -l < "$WORK/sample.jsonl"

echo "== simdb init"
"$SIMDB" init "$WORK/db"

echo "== simdb ingest (near-duplicates found inside the run go to report.jsonl)"
"$SIMDB" ingest "$WORK/db" "$WORK/sample.jsonl" --report "$WORK/report.jsonl"
echo "report: $(wc -l < "$WORK/report.jsonl") near-duplicates; first three:"
head -n 3 "$WORK/report.jsonl"

echo "== simdb query --text (article-00020 with two words changed; not in the store)"
echo "query: $(head -c 90 "$WORK/query.txt")..."
"$SIMDB" query "$WORK/db" --text "$(cat "$WORK/query.txt")"

echo "== simdb query --text --explain (why it matched: distance, similarity, shared terms)"
"$SIMDB" query "$WORK/db" --text "$(cat "$WORK/query.txt")" --explain

# The first reported pair: query the stored original by id (itself excluded).
ORIG="$(head -n 1 "$WORK/report.jsonl" | sed 's/.*"duplicate_of":"\([^"]*\)".*/\1/')"
echo "== simdb query --id $ORIG (its edited copy was reported above)"
"$SIMDB" query "$WORK/db" --id "$ORIG" --json

echo "== simdb clusters (each edited copy joined its original's cluster at ingest; first three)"
"$SIMDB" clusters "$WORK/db" | sed -n 1,9p   # (not head: simdb would get SIGPIPE)

echo "== simdb calibrate (where near-copies and distinct documents separate)"
"$SIMDB" calibrate "$WORK/db" --sample 500 --plot "$WORK/calibrate.svg"

echo "== simdb stats"
"$SIMDB" stats "$WORK/db"
