"""`simdb.ray.dedup` in Ray's local mode: time and peak memory per stage, and
whether it finds what `simdb ingest` finds.

    # N generated fingerprint rows (no text: the fingerprinting is measured
    # by tools/fingerprint_bench.py), 10M by default
    python tools/engine_dedup.py generated [--docs 10000000] [--work DIR] [--keep] [--driver-place]
        [--index store|join [--store]]

    # real texts: `simdb ingest` (the CLI) and `python -m simdb.ray dedup
    # --text` of the same file, compared
    python tools/engine_dedup.py corpus --simdb target/release/simdb CORPUS.jsonl ... [--index join [--store]]

    # the store of a join run's export (WORK/export of a `generated
    # --index join --store --keep` run): `simdb import` on one machine
    # beside the build by key range on Ray's workers, both with the frozen
    # index, timed; both stores' documents and clusters compared
    python tools/engine_dedup.py build EXPORT --work DIR [--ranges N]

Run it with the Ray venv's Python (tools/ray.sh makes it). The generated rows
are what a dedup store receives: 80% distinct documents, 15% near copies of
an earlier one (1 to 3 fingerprint bits and 1 to 8 sketch bins changed, the
length within 10%), 5% exact copies (one text 10,000 times among them); the
fingerprints, sketches and weak bits are uniform random, as `scale
--sketches` makes them. Peak memory is the largest sum of the resident sets
of this process and its descendants (Ray's raylet, object store and
workers), sampled every 0.2 s during each stage. Prints one JSON line per
stage, then a table.

The corpus mode writes each corpus's texts, round robin, to a JSONL file in
a temporary directory (deleted at the end), ingests it with the CLI and
dedups it with the engine, and compares: each document's nearest earlier
near-copy (the ingest report against the engine's checks), and the clusters
(representative and members).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def tree_rss(root: int) -> tuple[int, int, int]:
    """Bytes resident in `root` and its descendants (from /proc): all of
    them, `root` alone (the driver), and the largest other process (a
    worker, or Ray's object store)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/statm") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        pid = int(name)
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    largest = 0
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        if p != root:
            largest = max(largest, rss.get(p, 0))
        todo.extend(children.get(p, ()))
    return total, rss.get(root, 0), largest


class Sampler:
    """Peak resident memory of this process tree, per stage."""

    def __init__(self) -> None:
        self.stage = "start"
        self.peak: dict[str, int] = {}
        self.driver: dict[str, int] = {}
        self.worker: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.2):
            r, d, w = tree_rss(me)
            self.peak[self.stage] = max(self.peak.get(self.stage, 0), r)
            self.driver[self.stage] = max(self.driver.get(self.stage, 0), d)
            self.worker[self.stage] = max(self.worker.get(self.stage, 0), w)

    def enter(self, stage: str) -> None:
        self.stage = stage
        self.started[stage] = time.perf_counter()
        print(f"engine_dedup: stage {stage}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def generate(path: str, n: int, seed: int) -> dict:
    """`n` fingerprint rows (the engine's columns) in Parquet parts under
    `path`; returns what was planted."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    os.makedirs(path, exist_ok=True)
    part = 1_000_000
    planted = {"distinct": 0, "near": 0, "exact": 0}
    fps = np.empty(n, dtype=np.uint64)
    sketches = np.empty((n, 32), dtype=np.uint8)
    lengths = np.empty(n, dtype=np.uint64)
    hashes = np.empty(n, dtype=np.uint64)
    weak = np.empty((n, 24), dtype=np.uint8)
    hot = None
    for lo in range(0, n, part):
        hi = min(n, lo + part)
        m = hi - lo
        kind = rng.random(m)
        f = rng.integers(0, 2**64, size=m, dtype=np.uint64)
        s = rng.integers(0, 256, size=(m, 32), dtype=np.uint8)
        ln = rng.integers(300, 6000, size=m).astype(np.uint64)
        h = rng.integers(0, 2**64, size=m, dtype=np.uint64)
        w = np.argsort(rng.random((m, 64)), axis=1)[:, :24].astype(np.uint8)
        for i in range(m):
            j = lo + i
            if j > 0 and kind[i] >= 0.80:
                if kind[i] >= 0.95:
                    # An exact copy: of the hot text half the time.
                    if hot is None:
                        hot = j - 1
                    src = hot if kind[i] >= 0.975 and planted["exact"] < 10_000 else int(rng.integers(0, j))
                    f[i], s[i], ln[i], h[i], w[i] = fps[src], sketches[src], lengths[src], hashes[src], weak[src]
                    planted["exact"] += 1
                else:
                    src = int(rng.integers(0, j))
                    bits = rng.choice(64, size=int(rng.integers(1, 4)), replace=False)
                    x = fps[src]
                    for b in bits:
                        x ^= np.uint64(1) << np.uint64(b)
                    f[i] = x
                    s[i] = sketches[src]
                    for b in rng.choice(32, size=int(rng.integers(1, 9)), replace=False):
                        s[i, b] ^= np.uint8(1 << int(rng.integers(0, 8)))
                    ln[i] = np.uint64(int(lengths[src]) * rng.uniform(0.9, 1.1))
                    w[i] = weak[src]
                    planted["near"] += 1
            else:
                planted["distinct"] += 1
            fps[j], sketches[j], lengths[j], hashes[j], weak[j] = f[i], s[i], ln[i], h[i], w[i]
        t = pa.table(
            {
                "id": pa.array([f"g{j:09}" for j in range(lo, hi)], pa.string()),
                "fingerprint": pa.array(fps[lo:hi], pa.uint64()),
                "sketch": pa.array([bytes(x) for x in sketches[lo:hi]], pa.binary(32)),
                "length": pa.array(lengths[lo:hi], pa.uint64()),
                "terms": pa.array(np.full(m, 200, dtype=np.uint32), pa.uint32()),
                "weak_bits": pa.array([bytes(x) for x in weak[lo:hi]], pa.binary()),
                "content_hash": pa.array(hashes[lo:hi], pa.uint64()),
                # No parts (generated rows have no text to cut).
                "parts": pa.array([b""] * m, pa.binary()),
            }
        )
        pq.write_table(t, os.path.join(path, f"part-{lo // part:05}.parquet"))
        print(f"engine_dedup: generated {hi} rows", file=sys.stderr, flush=True)
    return planted


def generated(a: argparse.Namespace) -> None:
    import ray

    import simdb.ray

    work = a.work or tempfile.mkdtemp(prefix="engine-dedup-")
    rows = os.path.join(work, "rows")
    t = time.perf_counter()
    if not os.path.isdir(rows):
        planted = generate(rows, a.docs, a.seed)
    else:
        planted = {"reused": rows}
    gen_s = time.perf_counter() - t
    print(json.dumps({"stage": "generate", "docs": a.docs, "seconds": round(gen_s, 1), **planted}))
    ray.init(num_cpus=a.cores, include_dashboard=False, log_to_driver=False)
    sampler = Sampler()
    try:
        fps = ray.data.read_parquet(rows)
        r = simdb.ray.dedup(
            fps, os.path.join(work, f"dedup-{a.index}"), keep="first", num_cpus=a.cores,
            on_stage=sampler.enter, index=a.index,
            store=os.path.join(work, "served.db") if a.store else None,
        )
        sampler.enter("outputs")
        t = time.perf_counter()
        pairs = r.pairs.count()
        members = r.clusters.count()
        out_s = time.perf_counter() - t
        stages = ["input", "import", "checks", "place", "outputs"] if a.index == "store" else [
            "checks", "place", "outputs"] + (["store"] if a.store else [])
        seconds = dict(r.report["seconds"], outputs=round(out_s, 3))
        if a.driver_place:
            # The placement on the driver (the store's rebuild from the
            # same lists), timed, and its clusters against the workers'.
            import pyarrow.parquet as pq

            if a.index != "store":
                raise SystemExit("--driver-place needs --index store")
            d = os.path.join(work, "dedup-store")
            workers = pq.read_table(os.path.join(d, "clusters")).select(["cluster", "rank", "id"])
            os.remove(os.path.join(d, "placed.json"))
            sampler.enter("driver-place")
            t = time.perf_counter()
            simdb.ray.place(d, "first")
            seconds["driver-place"] = round(time.perf_counter() - t, 3)
            rebuilt = simdb.ray.clusters_table(os.path.join(d, "store")).select(["cluster", "rank", "id"])
            same = sorted(workers.to_pylist(), key=lambda x: (x["cluster"], x["rank"])) == sorted(
                rebuilt.to_pylist(), key=lambda x: (x["cluster"], x["rank"])
            )
            print(json.dumps({"driver_place_equal": same, "members": rebuilt.num_rows}))
            stages.append("driver-place")
    finally:
        sampler.close()
        ray.shutdown()
    # The longest task of each stage: what more workers cannot divide (the
    # input and the import are one task each, on the driver's machine).
    longest = {
        "input": seconds.get("input"),
        "import": seconds.get("import"),
        "checks": r.report["checks"].get("longest_task_seconds"),
        "place": r.report["placed"].get("longest_task_seconds"),
        "outputs": seconds.get("outputs"),
        "store": (r.report.get("stored") or {}).get("export", {}).get("longest_task_seconds"),
    }
    for stage in stages:
        print(
            json.dumps(
                {
                    "stage": stage,
                    "seconds": seconds.get(stage),
                    "longest_task_seconds": longest.get(stage),
                    "peak_rss_mib": round(sampler.peak.get(stage, 0) / 2**20),
                    "driver_rss_mib": round(sampler.driver.get(stage, 0) / 2**20),
                    "largest_other_rss_mib": round(sampler.worker.get(stage, 0) / 2**20),
                }
            )
        )
    print(json.dumps({"placed": r.report["placed"]}))
    if a.store:
        # The export on the workers, the import on the driver's machine.
        print(json.dumps({"stored": r.report["stored"]}))
    if a.index == "join":
        # The join's own stages: the longest task of each, and the
        # seconds of all its tasks (the work, whatever the cores).
        j = r.report["join"]
        print(json.dumps({"join_longest_task_seconds": j["longest_task_seconds"],
                          "join_task_seconds": j.get("task_seconds"),
                          "buckets": j["buckets"], "blocks": j["blocks"]}))
    documents = (r.report.get("store") or r.report.get("join"))["documents"]
    print(f"\n{a.docs:,} generated documents, Ray local mode on {a.cores} cores, index {a.index}; "
          f"{documents:,} documents, {pairs:,} pairs, "
          f"{r.report['placed']['clusters']:,} clusters ({members:,} documents in them)")
    print(f"{'stage':<13} {'seconds':>9} {'longest task':>13} {'docs/s':>10} {'peak RSS MiB':>13} "
          f"{'driver MiB':>11} {'largest other':>14}")
    for stage in stages:
        s = seconds.get(stage) or 0.0
        rate = a.docs / s if s else 0.0
        mib = lambda m: m.get(stage, 0) / 2**20  # noqa: E731
        lt = longest.get(stage)
        lt = f"{lt:>13.1f}" if lt is not None else f"{'':>13}"
        print(f"{stage:<13} {s:>9.1f} {lt} {rate:>10,.0f} {mib(sampler.peak):>13,.0f} "
              f"{mib(sampler.driver):>11,.0f} {mib(sampler.worker):>14,.0f}")
    print(f"(of place: put_clusters into the one store, on the driver's machine: "
          f"{r.report['placed'].get('put_clusters_seconds', 0.0):.1f} s)")
    total = sum(v for k, v in seconds.items() if v and k != "driver-place")
    print(f"{'total':<13} {total:>9.1f} {a.docs / total:>10,.0f}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


def corpus(a: argparse.Namespace) -> None:
    import pyarrow.parquet as pq

    import simdb

    tmp = tempfile.mkdtemp(prefix="engine-dedup-")
    try:
        src = os.path.join(tmp, "docs.jsonl")
        texts = []
        for path in a.corpora:
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
            texts.append([(f"{name}/{r['id']}", r["text"]) for r in rows[: a.limit or None]])
        n = 0
        with open(src, "w", encoding="utf-8") as f:
            for i in range(max(len(t) for t in texts)):
                for t in texts:
                    if i < len(t):
                        f.write(json.dumps({"id": t[i][0], "text": t[i][1]}, ensure_ascii=False) + "\n")
                        n += 1
        store = os.path.join(tmp, "ingest.db")
        report = os.path.join(tmp, "report.jsonl")
        t = time.perf_counter()
        subprocess.run([a.simdb, "init", store], check=True, capture_output=True)
        subprocess.run([a.simdb, "ingest", store, src, "--report", report, "--json"],
                       check=True, capture_output=True)
        ingest_s = time.perf_counter() - t
        nearest = {}
        with open(report) as f:
            for line in f:
                r = json.loads(line)
                nearest[r["id"]] = r["duplicate_of"]
        with simdb.Db.open(store, read_only=True) as db:
            want = sorted((c["representative"], sorted(m["id"] for m in c["members"]))
                          for c in db.clusters(max_members=2**31))
        out = os.path.join(tmp, "out")
        t = time.perf_counter()
        served = os.path.join(tmp, "served.db")
        p = subprocess.run([sys.executable, "-m", "simdb.ray", "dedup", src, out, "--text", "text",
                            "--index", a.index] + (["--store", served] if a.store else []),
                           capture_output=True, text=True)
        engine_s = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        checks = pq.read_table(os.path.join(out, "_work", "checks")).to_pylist()
        got_nearest = {r["id"]: r["near"][0] for r in checks}
        by: dict = {}
        for m in pq.read_table(os.path.join(out, "clusters")).to_pylist():
            by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
        got = sorted((rep, sorted(ids)) for (_, rep), ids in by.items())
        same_nearest = got_nearest == nearest
        same_clusters = got == want
        if a.store:
            # The store of the result: clean, and its clusters ingest's.
            def clusters_of(db):
                # (representative, members): a store's cluster ids are
                # ords, which count the rows without a fingerprint in the
                # engine's store and not in ingest's.
                out = subprocess.run([a.simdb, "clusters", db, "--json"], check=True,
                                     capture_output=True, text=True).stdout
                return sorted((c["representative"], sorted(m["id"] for m in c["members"]))
                              for c in map(json.loads, out.splitlines()))

            v = subprocess.run([a.simdb, "verify", served], capture_output=True, text=True)
            same_store = v.returncode == 0 and clusters_of(served) == clusters_of(store)
            stored = json.load(open(os.path.join(out, "report.json")))["stored"]
            print(json.dumps({"store_verified": v.returncode == 0, "store_clusters_equal": same_store,
                              "stored": stored}))
            same_clusters = same_clusters and same_store
        print(json.dumps({"index": a.index, "documents": n, "reported": len(nearest), "clusters": len(want),
                          "same_nearest": same_nearest, "same_clusters": same_clusters,
                          "ingest_seconds": round(ingest_s, 1),
                          "engine_seconds": round(engine_s, 1)}))
        if not (same_nearest and same_clusters):
            diff = [k for k in set(nearest) | set(got_nearest) if nearest.get(k) != got_nearest.get(k)]
            print(f"differ: {len(diff)} nearest, e.g. {diff[:5]}", file=sys.stderr)
            raise SystemExit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build(a: argparse.Namespace) -> None:
    """One machine's `simdb import` of an export beside the build by key
    range (`simdb._rayjoin.build_by_range`), in one run."""
    import ray

    import simdb
    from simdb import _rayjoin

    os.makedirs(a.work, exist_ok=True)
    one, ranged = os.path.join(a.work, "imported.db"), os.path.join(a.work, "by-range.db")
    for d in (one, ranged):
        shutil.rmtree(d, ignore_errors=True)
    sampler = Sampler()
    rows = []
    sampler.enter("import")
    t0 = time.perf_counter()
    s = simdb.import_parquet(one, [a.export])
    rows.append(("import (one machine)", time.perf_counter() - t0, time.perf_counter() - t0, s["documents"]))
    ray.init(num_cpus=a.cores, include_dashboard=False, log_to_driver=False)
    sampler.enter("by range")
    t0 = time.perf_counter()
    r = _rayjoin.build_by_range(a.export, ranged, os.path.join(a.work, "ranges"), ranges=a.ranges,
                                shares=a.shares)
    took = time.perf_counter() - t0
    rows.append(("by range (Ray tasks)", took, max(r["longest_task_seconds"].values()), r["documents"]))
    sampler.close()
    ray.shutdown()
    print(json.dumps({"import": s, "by_range": r}))
    with simdb.Db.open(one, read_only=True) as x, simdb.Db.open(ranged, read_only=True) as y:
        same = (len(x), x.stats()["clusters"]) == (len(y), y.stats()["clusters"])
    print(f"\n{rows[0][3]:,} documents, {r['shares']} shares, {r['ranges']} ranges, "
          f"Ray local mode on {a.cores} cores; "
          f"documents and clusters equal: {same}")
    print(f"{'build':<22}{'seconds':>9}{'longest task':>14}{'peak RSS MiB':>14}{'driver MiB':>12}")
    for (name, secs, longest, _), stage in zip(rows, ("import", "by range")):
        print(f"{name:<22}{secs:>9.1f}{longest:>14.1f}{sampler.peak[stage] >> 20:>14,}"
              f"{sampler.driver[stage] >> 20:>12,}")
    print("by range, longest task per step: " + ", ".join(
        f"{k} {v:.1f} s" for k, v in r["longest_task_seconds"].items())
        + f"; the assembly (files moved in, frozen index written) {r['assemble_seconds']:.1f} s")
    if not same:
        sys.exit(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    g = sub.add_parser("generated")
    g.add_argument("--docs", type=int, default=10_000_000)
    g.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--work", help="work directory (default: a temporary one); rows are reused")
    g.add_argument("--keep", action="store_true", help="keep the work directory")
    g.add_argument("--store", action="store_true",
                   help="--index join: make the store of the result (export and import), timed")
    g.add_argument("--driver-place", action="store_true",
                   help="then place the clusters on the driver too (the store's rebuild from the "
                        "same lists): its time, and whether its clusters equal the workers'")
    c = sub.add_parser("corpus")
    c.add_argument("corpora", nargs="+")
    c.add_argument("--simdb", required=True, help="the simdb binary")
    c.add_argument("--limit", type=int, help="documents per corpus")
    c.add_argument("--store", action="store_true",
                   help="--index join: make the store of the result, verify it and compare its clusters")
    for x in (g, c):
        x.add_argument("--index", choices=["store", "join"], default="store",
                       help="dedup's index: the one store (default), or the join with no store")
    b = sub.add_parser("build")
    b.add_argument("export", help="a join run's WORK/export")
    b.add_argument("--work", required=True, help="where the two stores are made (replaced)")
    b.add_argument("--ranges", type=int, help="ranges of the build (default: two per part)")
    b.add_argument("--shares", type=int, help="map tasks of the build (default: one per part, at most 256)")
    b.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    a = p.parse_args()
    {"generated": generated, "corpus": corpus, "build": build}[a.mode](a)


if __name__ == "__main__":
    main()
