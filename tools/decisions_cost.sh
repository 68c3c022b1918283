#!/usr/bin/env bash
# What "not a copy" and "keep this one" decisions cost an ingest
# (docs/review.md, "Decisions"). CORPUS (JSONL {"id", "text"}) is ingested
# into a new store without decisions and into one that took a decision log
# first: N random pairs of the corpus's ids, plus each cluster's
# representative with one of its members as a first ingest placed them
# (the decisions that change placements); then a keep of each such
# cluster's second member and of N/5 random ids. ROUNDS times, alternating; prints each run's docs/s, and the
# clusters and verify of the last stores.
#
#   bash tools/decisions_cost.sh CORPUS [N] [ROUNDS]
#   SIMDB=path/to/simdb (default: the release build of CARGO_TARGET_DIR or target/)
set -euo pipefail
corpus="${1:?usage: bash tools/decisions_cost.sh CORPUS [N] [ROUNDS]}"
n="${2:-10000}"
rounds="${3:-2}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
simdb="${SIMDB:-$target/release/simdb}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rate() { # STORE -> docs/s of ingesting the corpus into it
    "$simdb" ingest "$1" "$corpus" --json 2>/dev/null \
        | python3 -c 'import json, sys; print(round(json.loads(sys.stdin.read())["docs_per_second"]))'
}

# The log: the first ingest's clusters (representative, a member), then
# random pairs of ids.
"$simdb" init "$work/first" >/dev/null
"$simdb" ingest "$work/first" "$corpus" >/dev/null 2>&1
"$simdb" clusters "$work/first" --json > "$work/clusters.jsonl"
python3 - "$corpus" "$work/clusters.jsonl" "$n" > "$work/log.jsonl" <<'EOF'
import json, random, sys
corpus, clusters, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = [json.loads(l)["id"] for l in open(corpus, encoding="utf-8") if l.strip()]
pairs = []
for line in open(clusters, encoding="utf-8"):
    c = json.loads(line)
    pairs.append((c["representative"], c["members"][-1]["id"]))
rng = random.Random(1)
want = len(pairs) + n
while len(pairs) < want:
    a, b = rng.choice(ids), rng.choice(ids)
    if a != b:
        pairs.append((a, b))
kept = [json.loads(l)["members"][1]["id"] for l in open(clusters, encoding="utf-8")]
kept += rng.sample(ids, n // 5)
for i, (a, b) in enumerate(pairs):
    print(json.dumps({"seq": i + 1, "kind": "not_a_copy", "a": a, "b": b,
                      "who": "bench", "at": 0, "undoes": 0}))
for i, a in enumerate(kept):
    print(json.dumps({"seq": len(pairs) + i + 1, "kind": "keep", "a": a, "b": "",
                      "who": "bench", "at": 0, "undoes": 0}))
EOF
decisions="$(wc -l < "$work/log.jsonl")"
keeps="$(grep -c '"keep"' "$work/log.jsonl" || true)"
echo "corpus $(basename "$corpus"), $decisions decisions ($keeps keeps; $(wc -l < "$work/clusters.jsonl") pairs a cluster's representative and member)"
for r in $(seq 1 "$rounds"); do
    rm -rf "$work/plain" "$work/decided"
    "$simdb" init "$work/plain" >/dev/null
    "$simdb" init "$work/decided" >/dev/null
    "$simdb" decide "$work/decided" replay "$work/log.jsonl" >/dev/null
    echo "round $r: without decisions $(rate "$work/plain") docs/s, with $(rate "$work/decided") docs/s"
done
for s in plain decided; do
    c="$("$simdb" clusters "$work/$s" --json | wc -l)"
    v="$("$simdb" verify "$work/$s" | tail -1)"
    echo "$s: $c clusters; verify: $v"
done
