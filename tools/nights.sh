#!/usr/bin/env bash
# Three nights of a dedup store on a real corpus: the corpus (JSONL, in
# file order) is split into three consecutive runs, ingested one per
# "night", and after each night the store's clusters are shown: counts,
# the largest clusters with their representatives, and how the night
# changed them. Then the same corpus in one run, to show that the clusters
# and representatives do not depend on how the input was split.
#
#   bash tools/nights.sh ../shared/corpora/zh_news_xwlb.jsonl
set -euo pipefail
CORPUS="$(realpath "${1:?usage: tools/nights.sh CORPUS.jsonl}")"
cd "$(dirname "$0")/.."
cargo build --release --locked --bin simdb >/dev/null
SIMDB="${CARGO_TARGET_DIR:-target}/release/simdb"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
split -n l/3 -d "$CORPUS" "$WORK/night"
"$SIMDB" init "$WORK/db" >/dev/null
for n in 0 1 2; do
  echo "== night $((n + 1)): $(wc -l < "$WORK/night0$n") documents"
  "$SIMDB" ingest "$WORK/db" "$WORK/night0$n" 2>&1 | grep -v "is short" | tail -n 1
  "$SIMDB" clusters "$WORK/db" --min-size 2 2>&1 >/dev/null | sed 's/^simdb: //'
  echo "largest clusters:"
  "$SIMDB" clusters "$WORK/db" --json 2>/dev/null \
    | python3 -c '
import json, sys
cs = [json.loads(l) for l in sys.stdin]
cs.sort(key=lambda c: (-c["size"], c["id"]))
for c in cs[:3]:
    others = [m["id"] for m in c["members"][1:]]
    more = " (+%d more)" % (len(others) - 4) if len(others) > 4 else ""
    print("  cluster %d: %d docs, representative %s, max distance %d; %s%s" % (
        c["id"], c["size"], c["representative"], c["max_distance"], " ".join(others[:4]), more))
'
done
echo "== the same corpus in one run"
"$SIMDB" init "$WORK/one" >/dev/null
"$SIMDB" ingest "$WORK/one" "$CORPUS" 2>&1 | grep -v "is short" | tail -n 1
strip() { python3 -c '
import json, sys
for l in sys.stdin:
    c = json.loads(l)
    print(c["id"], c["representative"], " ".join(m["id"] for m in c["members"]))'; }
if diff <("$SIMDB" clusters "$WORK/db" --json | strip) <("$SIMDB" clusters "$WORK/one" --json | strip) >/dev/null; then
  echo "same clusters, ids and representatives as the three nights: yes"
else
  echo "same clusters, ids and representatives as the three nights: NO"
  exit 1
fi
