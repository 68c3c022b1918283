"""Figures for the README's "Beyond one machine": the Spark job in local mode
beside `simdb pairs --copies pairs` / `simdb clusters` on the same store, in one run.

    # real documents: ingest (exact duplicate search, -k 3), export, both designs;
    # the job's pairs and clusters must equal simdb's
    tools/spark.sh bench corpus WORK/ ../shared/corpora/zh_news_xwlb.jsonl ...

    # N uniform random fingerprints, a share of them with planted neighbours
    # (distance 0..3): import, export, both designs with candidate counts
    tools/spark.sh bench synthetic WORK/ --n 1000000

WORK must not exist. Prints one JSON line per measurement and a summary
table. Corpus text stays where it is: only the store and its export are
written under WORK.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import simdb_spark  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))


def simdb_bin() -> str:
    return os.environ.get("SIMDB_BIN") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "simdb")


def sh(*args: str, stdout=subprocess.DEVNULL) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=stdout)
    return time.perf_counter() - t0


def simdb_pairs(db: str, path: str) -> tuple[float, set]:
    with open(path, "w") as f:
        t = sh(simdb_bin(), "pairs", db, "-k", "3", "--copies", "pairs", stdout=f)
    with open(path) as f:
        pairs = {(p["a"], p["b"], p["distance"], p.get("similarity"))
                 for p in map(json.loads, f)}
    return t, pairs


def simdb_clusters(db: str) -> dict:
    out = subprocess.run([simdb_bin(), "clusters", db, "--json"], check=True,
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        c = json.loads(line)
        res[c["id"]] = (c["representative"], tuple((m["id"], m["distance"]) for m in c["members"]))
    return res


def job_pairs(out: str) -> set:
    import pyarrow.parquet as pq

    t = pq.read_table(os.path.join(out, "pairs")).to_pydict()
    return set(zip(t["a"], t["b"], t["distance"], t["similarity"]))


def job_clusters(out: str) -> dict:
    import pyarrow.parquet as pq

    by: dict = {}
    for r in pq.read_table(os.path.join(out, "clusters")).to_pylist():
        by.setdefault(r["cluster"], []).append(r)
    return {c: (rows[0]["representative"],
                tuple((r["id"], r["distance"]) for r in sorted(rows, key=lambda r: r["rank"])))
            for c, rows in by.items()}


def run_designs(export: str, work: str, check=None, partitions=None,
                driver_memory="8g") -> list[dict]:
    rows = []
    for design in ["card", "manku"]:
        spark = simdb_spark.session(None, driver_memory, partitions)
        spark.sparkContext.setLogLevel("ERROR")
        out = os.path.join(work, f"spark-{design}")
        t0 = time.perf_counter()
        try:
            # The candidate count is its own pass, timed apart.
            rep = simdb_spark.run(spark, export, out, k=3, design=design, stats=True,
                                  copies="pairs")
        finally:
            spark.stop()
        rep["wall"] = round(time.perf_counter() - t0, 1)
        rep["job_seconds"] = round(rep["wall"] - rep["seconds"].get("stats", 0), 1)
        if check:
            pairs, clusters = check
            rep["pairs_equal_simdb"] = job_pairs(out) == pairs
            rep["clusters_equal_simdb"] = job_clusters(out) == clusters
        print(json.dumps(rep), flush=True)
        rows.append(rep)
    return rows


def summary(rows: list[dict], simdb_seconds: float) -> None:
    print(f"\n{'design':8} {'tables':>6} {'docs':>11} {'groups':>11} {'cand/group':>10} {'largest':>8} "
          f"{'pairs':>9} {'job s':>7} {'(stats s)':>9}  simdb pairs: {simdb_seconds:.1f} s")
    for r in rows:
        print(f"{r['design']:8} {r['tables']:>6} {r['documents']:>11,} {r['groups']:>11,} "
              f"{r['candidates_per_group']:>10.1f} {r['largest_bucket']:>8} {r['pairs']:>9,} "
              f"{r['job_seconds']:>7.1f} {r['seconds'].get('stats', 0):>9.1f}")


def corpus(a) -> None:
    os.makedirs(a.work)
    db = os.path.join(a.work, "db")
    sh(simdb_bin(), "init", db)
    t_ingest = sh(simdb_bin(), "ingest", db, "-k", "3", *a.files)
    export = os.path.join(a.work, "export")
    t_export = sh(simdb_bin(), "export", db, "--parquet", export)
    t_pairs, pairs = simdb_pairs(db, os.path.join(a.work, "simdb-pairs.jsonl"))
    clusters = simdb_clusters(db)
    print(json.dumps({"ingest_s": round(t_ingest, 1), "export_s": round(t_export, 2),
                      "simdb_pairs_s": round(t_pairs, 2), "simdb_pairs": len(pairs),
                      "simdb_clusters": len(clusters)}), flush=True)
    rows = run_designs(export, a.work, (pairs, clusters), a.partitions, a.driver_memory)
    summary(rows, t_pairs)
    bad = [r["design"] for r in rows if not (r["pairs_equal_simdb"] and r["clusters_equal_simdb"])]
    if bad:
        sys.exit(f"bench: the job disagrees with simdb ({', '.join(bad)})")


def synthetic(a) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(a.work)
    rng = np.random.default_rng(a.seed)
    n = a.n
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    # A share of the documents are near copies of the one before: 0..3 bits flipped.
    planted = np.nonzero(rng.random(n) < a.planted)[0]
    planted = planted[planted > 0]
    for d in range(4):
        sel = planted[rng.integers(0, 4, size=len(planted)) == d]
        v = fps[sel - 1]
        for _ in range(d):
            v = v ^ (np.uint64(1) << rng.integers(0, 64, size=len(sel)).astype(np.uint64))
        fps[sel] = v
    src = os.path.join(a.work, "fingerprints.parquet")
    ids = pa.array([f"doc{i:010}" for i in range(n)])
    pq.write_table(pa.table({"id": ids, "fingerprint": pa.array(fps.view(np.int64))}), src)
    del ids
    db = os.path.join(a.work, "db")
    t_import = sh(simdb_bin(), "import", db, src)
    export = os.path.join(a.work, "export")
    t_export = sh(simdb_bin(), "export", db, "--parquet", export)
    t_pairs, pairs = simdb_pairs(db, os.path.join(a.work, "simdb-pairs.jsonl"))
    print(json.dumps({"n": n, "import_s": round(t_import, 1), "export_s": round(t_export, 1),
                      "simdb_pairs_s": round(t_pairs, 1), "simdb_pairs": len(pairs)}), flush=True)
    rows = run_designs(export, a.work, None, a.partitions, a.driver_memory)
    for r in rows:
        r["pairs_equal_simdb"] = r["pairs"] == len(pairs)
    summary(rows, t_pairs)
    if not all(r["pairs_equal_simdb"] for r in rows):
        sys.exit("bench: the job's pair count differs from simdb's")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("work")
    c.add_argument("files", nargs="+")
    s = sub.add_parser("synthetic")
    s.add_argument("work")
    s.add_argument("--n", type=int, default=1_000_000)
    s.add_argument("--planted", type=float, default=0.01)
    s.add_argument("--seed", type=int, default=1)
    for x in (c, s):
        x.add_argument("--partitions", type=int)
        x.add_argument("--driver-memory", default="8g")
    a = p.parse_args()
    corpus(a) if a.mode == "corpus" else synthetic(a)


if __name__ == "__main__":
    main()
