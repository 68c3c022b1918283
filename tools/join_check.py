"""The duplicate check as a join against ingest's own check, on real text.

    python tools/join_check.py [--buckets 4] [--limit N] CORPUS.jsonl ...

Run it with the Python venv's interpreter (`bash tools/python.sh build`
prints it). Reads the corpora's texts round robin (`{"id","text"}` lines;
ids prefixed by the corpus's name), writes them into a new store with
`Db.add_many` (`--batch-size` documents per batch; each document's near-copies as ingest's check finds them,
16 listed), then finds every document's near-copies again two ways, with
no write: `simdb.engine.check_by_join` (the four stages in this process,
no store read) and `Db.earlier_copies` (the read-only store's check the
engines use today). Prints the seconds of each, and for each how many
documents' lists differ from ingest's (ids, in order), as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import simdb  # noqa: E402
from simdb.engine import check_by_join  # noqa: E402


def read(paths: list[str], limit: int) -> list[tuple[str, str]]:
    per = []
    for p in paths:
        name = os.path.basename(p).rsplit(".", 1)[0]
        rows = []
        with open(p, encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                rows.append((f"{name}:{d['id']}", d["text"]))
        per.append(rows)
    out = []
    for i in range(max(len(r) for r in per)):
        for rows in per:
            if i < len(rows):
                out.append(rows[i])
    return out[:limit] if limit else out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=1000, help="add_many's (default 1000)")
    ap.add_argument("--show", action="store_true", help="print the lists that differ (stderr)")
    a = ap.parse_args()
    docs = read(a.corpora, a.limit)
    with tempfile.TemporaryDirectory(prefix="simdb-join-check-") as tmp:
        with simdb.Db.create(os.path.join(tmp, "run")) as db:
            t = time.perf_counter()
            added = db.add_many(docs, max_duplicates=16, batch_size=a.batch_size)
            ingest_s = time.perf_counter() - t
            recipe = db.recipe
            kept = [(d[0], r.fingerprint) for d, r in zip(docs, added) if r.fingerprint is not None]
            ids = [k[0] for k in kept]
            got = db.records(ids)
            ingest = {r.id: [h.id for h in r.duplicates] for r in added if r.duplicates}
            t = time.perf_counter()
            c = db.earlier_copies(0, 2**63 - 1)
            store_s = time.perf_counter() - t
        t = time.perf_counter()
        j = check_by_join(
            ids, got["ord"], [k[1] for k in kept], got["record"], recipe=recipe, buckets=a.buckets
        )
        join_s = time.perf_counter() - t

    def differ(found: dict) -> int:
        ids = sorted(i for i in set(found) | set(ingest) if found.get(i) != ingest.get(i))
        if a.show:
            for i in ids:
                print(json.dumps({"id": i, "ingest": ingest.get(i), "found": found.get(i)}), file=sys.stderr)
        return len(ids)

    print(
        json.dumps(
            {
                "documents": len(docs),
                "with_copies": len(ingest),
                "ingest_seconds": round(ingest_s, 2),
                "join_seconds": round(join_s, 2),
                "join_differ": differ(dict(zip(j["id"], j["near"]))),
                "store_check_seconds": round(store_s, 2),
                "store_check_differ": differ(dict(zip(c["id"], c["near"]))),
                "buckets": a.buckets,
                "batch_size": a.batch_size,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
