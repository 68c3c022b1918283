"""simdb's dedup on Spark: the near-duplicate pairs and clusters that `simdb
ingest` of the same documents, in the same order, finds and builds, from
the fingerprint rows of `simdb_fingerprint.py` (or from texts, fingerprinted
first). The same stages as `simdb.ray.dedup`, with the same stage functions
of the simdb package:

    python tools/spark/simdb_dedup.py IN... OUT [--text text] [--format json]
        [--keep first|priority|newest|longest] [--priority COL] [--time COL]
        [--decisions LOG] [--db STORE] [--parts N] [--master URL]
        [--index join [--buckets N] [--store DB]]

1. input: the rows, in the order the documents count in (the partitions'
   order, as read), written by Spark to `WORK/input/` (part files in
   partition order);
2. import: `simdb import` of them into `WORK/store` on the driver: the
   index every check reads (with its frozen index);
3. checks: each document's duplicate check against the documents before it
   (the store's own search: the exact-k buckets, the ranked plan and the 16
   band buckets with their nearest-16 cap, confirmed by the sketch), over
   ranges of ords, one Spark task per range, each opening the store
   read-only (local mode, or a file system the executors share);
4. place: the components of the near-copy graph on the executors
   (large-star / small-star), each bucket of components placed by the
   store's rule in a scratch store of the executor's own, and the store
   given the clusters (`simdb.put_clusters`).

Output (Parquet): OUT/pairs/ (a, b, distance, similarity, containment: each
document with each confirmed earlier near-copy its check found, at most 16,
a < b by id), OUT/clusters/ (cluster, size, representative, id, rank,
distance), OUT/report.json. The work directory (default OUT/_work) keeps
each finished stage, and stage 3 each finished range: a killed run, run
again, resumes. With --incremental OLD (an earlier run's OUT), tonight's
documents are imported after the earlier runs' and only they are checked;
pairs are tonight's, clusters the whole store's. With --index join, stages
1 to 3 are a join on the executors (no store, no row through the driver);
--store DB then makes the store of the result: the export written on the
executors (WORK/export/), the store built from it by key range on the
executors, its table files moved into DB by the driver.
`tools/spark/simdb_spark.py` is the other job: exact-k pairs of an export
by SQL joins.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from time import perf_counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def run(spark, inputs: list[str], out: str, *, keep: str = "first", text: str | None = None,
        html: bool = False, fmt: str = "parquet", db: str | None = None, parts: int | None = None,
        work: str | None = None, incremental: str | None = None, decisions: str | None = None,
        priority: str = "priority", time: str = "time", index: str = "store",
        buckets: int | None = None, store: str | None = None) -> dict:
    """Runs the job; returns the report (also written to OUT/report.json).
    ``index="join"``: no store; the checks as a join on the executors
    (`join_on_executors`), as `simdb.ray.dedup`'s ``index="join"``.
    With ``incremental`` (an earlier run's OUT or work directory), as
    `simdb.ray.dedup`'s: tonight's documents checked against the earlier
    runs' and each other, pairs tonight's, clusters the whole store's.
    ``priority`` and ``time`` name the rows' columns of each document's
    priority and own time, where they have them (`simdb.ray.STATED`);
    ``decisions``: a decision log (`simdb decisions --json`) the clusters
    obey. ``store`` (with ``index="join"``): a new path where the store of
    the result is made (`export_on_executors`, then `simdb import` of the
    export on the driver's machine), as `simdb.ray.dedup`'s ``store``."""
    import pyarrow.parquet as pq
    import simdb
    from pyspark.sql import functions as F
    from simdb import ray as stages

    if html and text is None:
        raise ValueError("--html names no column: give the column of pages with --text")
    if index not in ("store", "join"):
        raise ValueError(f"--index must be store or join, not {index!r}")
    if store is not None:
        if index != "join":
            raise ValueError("--store is for --index join (--index store builds OUT/_work/store)")
        store = os.path.abspath(store)
    os.makedirs(out, exist_ok=True)
    work = work or os.path.join(out, "_work")
    os.makedirs(work, exist_ok=True)
    report: dict = {"keep": keep, "index": index, "seconds": {}}
    if store is not None:
        from simdb._rayjoin import refuse_taken

        refuse_taken(work, store)
    recipe = None
    if incremental is not None:
        if os.path.isdir(os.path.join(incremental, "_work")):
            incremental = os.path.join(incremental, "_work")
        incremental = os.path.abspath(incremental)
        if not os.path.exists(os.path.join(incremental, "placed.json")):
            raise ValueError(f"{incremental}: not the work directory of a finished dedup run")
        if index == "join" and db is None:
            from simdb._rayjoin import earlier_of

            # Tonight's texts fingerprinted as the earlier run's were.
            recipe = earlier_of(incremental)["recipe"]
        elif db is None:
            db = os.path.join(incremental, "store")
        report["incremental"] = incremental
    if db:
        recipe = simdb.Analyzer(db=db).recipe

    def rows():
        df = spark.read.format(fmt).load(inputs)
        if text is not None:
            import simdb_fingerprint

            given = {} if recipe is None or db else {"recipe": recipe}
            df = simdb_fingerprint.fingerprint(df, text, db, html=html, **given)
        missing = [c for c in ("id",) + stages.COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"the rows have no column(s) {missing}: give the output of "
                             "simdb_fingerprint.py, or texts with --text")
        cols = [F.col("id").cast("string").alias("id"), *[F.col(c) for c in stages.COLUMNS]]
        cols += [F.col(c).alias(name) for c, name in zip((priority, time), stages.STATED)
                 if c in df.columns]
        if stages.RULE in df.columns:
            cols.append(F.col(stages.RULE))
        return df.select(*cols)

    if index == "join":
        t = perf_counter()
        report["join"] = join_on_executors(spark, rows(), work, recipe=recipe, incremental=incremental,
                                           buckets=buckets)
        report["checks"] = {"checked": report["join"]["checked"]}
        report["seconds"]["checks"] = round(perf_counter() - t, 3)
        return _outputs(spark, report, out, work, keep, decisions, store=store)

    t = perf_counter()
    marker = os.path.join(work, "input.json")
    if os.path.exists(marker):
        report["input"] = stages.read_mark(marker)
    else:
        path = os.path.join(work, "input")
        # Rows stamped with another rule are refused by the import.
        rows().write.mode("overwrite").parquet(path)
        rows = sum(pq.read_metadata(os.path.join(path, f)).num_rows
                   for f in os.listdir(path) if f.endswith(".parquet"))
        report["input"] = {"rows": rows}
        stages.write_mark(marker, report["input"])
    report["seconds"]["input"] = round(perf_counter() - t, 3)

    t = perf_counter()
    report["store"] = stages.import_input(work, recipe, incremental)
    report["seconds"]["import"] = round(perf_counter() - t, 3)

    t = perf_counter()
    ranges = stages.plan_checks(report["input"]["rows"], report["store"], parts)

    def check(it):
        import pandas as pd
        from simdb import ray as stages

        for batch in it:
            rows = [stages.check_part(work, int(p), int(lo), int(hi))
                    for p, lo, hi in zip(batch["part"], batch["start"], batch["end"])]
            yield pd.DataFrame(rows, columns=["part", "checked", "skipped"])

    done = (spark.createDataFrame(ranges, "part int, start long, end long")
            .repartition(len(ranges), "part")
            .mapInPandas(check, "part int, checked long, skipped int")
            .collect())
    report["checks"] = {"parts": len(ranges), "skipped": sum(r["skipped"] for r in done),
                        "checked": sum(r["checked"] for r in done)}
    report["seconds"]["checks"] = round(perf_counter() - t, 3)
    return _outputs(spark, report, out, work, keep, decisions, store=os.path.join(work, "store"))


def _outputs(spark, report: dict, out: str, work: str, keep: str, decisions, store) -> dict:
    """The placement (and with ``store``, for a join run, the store of the
    result), then OUT/pairs/, OUT/clusters/ and OUT/report.json."""
    from pyspark.sql import functions as F
    from simdb import ray as stages

    t = perf_counter()
    report["placed"] = place_on_executors(spark, work, keep, decisions)
    report["seconds"]["place"] = round(perf_counter() - t, 3)
    if store is not None and stages._joined(work) is not None:
        t = perf_counter()
        report["stored"] = store_of_join(spark, work, store, decisions)
        report["seconds"]["store"] = round(perf_counter() - t, 3)

    t = perf_counter()
    final = os.path.join(out, "pairs")
    if not os.path.isdir(final):
        checks = spark.read.parquet(os.path.join(work, "checks"))
        z = checks.select("id", F.explode(F.arrays_zip("near", "distance", "similarity",
                                                       "containment")).alias("h"))
        first = F.col("id") < F.col("h.near")
        pairs = z.select(
            F.when(first, F.col("id")).otherwise(F.col("h.near")).alias("a"),
            F.when(first, F.col("h.near")).otherwise(F.col("id")).alias("b"),
            F.col("h.distance").cast("int").alias("distance"),
            F.col("h.similarity").alias("similarity"),
            F.col("h.containment").alias("containment"),
        )
        tmp = os.path.join(out, ".pairs.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        pairs.write.parquet(tmp)
        os.rename(tmp, final)
    final = os.path.join(out, "clusters")
    if not os.path.isdir(final):
        # The placement's parts, as the executors wrote them.
        tmp = os.path.join(out, ".clusters.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(os.path.join(work, "clusters"), tmp)
        os.rename(tmp, final)
    report["pairs"] = spark.read.parquet(os.path.join(out, "pairs")).count()
    report["documents_in_clusters"] = spark.read.parquet(os.path.join(out, "clusters")).count()
    report["seconds"]["outputs"] = round(perf_counter() - t, 3)
    report["store_path"] = store
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    return report


def task_timer(spark, names) -> tuple:
    """An accumulator per name of the longest of the seconds added, and
    ``timed(name, fn)``: ``fn``, adding the seconds of each call to
    ``name``'s. (Defined here, so that the executors get the class and
    the wrapper by value with the functions that use them.)"""

    class Longest:
        def zero(self, value: float) -> float:
            return 0.0

        def addInPlace(self, a: float, b: float) -> float:
            return max(a, b)

    longest = {s: spark.sparkContext.accumulator(0.0, Longest()) for s in names}

    def timed(name, fn):
        def run(*args):
            t0 = perf_counter()
            got = fn(*args)
            longest[name].add(perf_counter() - t0)
            return got

        return run

    return longest, timed


def store_of_join(spark, work: str, store: str, decisions: str | None = None) -> dict:
    """The store a finished join run stands for, at ``store`` (a new
    path), as `simdb.ray.dedup`'s ``store``: the export on the executors
    (`export_on_executors`), then the store built from it by key range on
    the executors (`build_by_range`) and assembled on the driver's machine
    (`simdb._rayjoin.import_export`); marked by WORK/stored.json."""
    from simdb import _rayjoin

    done = _rayjoin.stored(work, store)
    if done is not None:
        return done
    t = perf_counter()
    export = export_on_executors(spark, work, decisions)
    export["seconds"] = round(perf_counter() - t, 3)

    def build(export_dir: str, target: str) -> dict:
        return build_by_range(spark, export_dir, target, os.path.join(work, "ranges"))

    return _rayjoin.import_export(work, store, {"export": export}, build=build)


def build_by_range(spark, export: str, target: str, scratch: str, ranges: int | None = None) -> dict:
    """The store of the export in directory ``export`` at ``target``,
    built by key range on the executors as `simdb._rayjoin.build_by_range`
    builds it on Ray: a task per share of the part files (one per part, at
    most `_rayjoin.MAX_SHARES`) maps them to items, Spark moves
    each piece to its range (sampled from the items) by a partitioner,
    a task per range writes its table files under ``scratch``, twice;
    the driver holds only samples, counts and file names, and moves the
    files into the store."""
    from pyspark import StorageLevel

    import simdb
    from simdb import _rayjoin

    from simdb._location import Location

    where = Location.of(scratch)
    parts, log, n = _rayjoin.begin_by_range(export, where, ranges)
    samples = _rayjoin.SAMPLES_PER_RANGE * n
    sc = spark.sparkContext
    longest, timed = task_timer(spark, _rayjoin.RANGE_STEPS)

    def map_share(share):
        return _rayjoin.map_parts(share, log, samples)

    shares = _rayjoin.shares_of(parts)
    mapped = sc.parallelize(shares, len(shares)).map(timed("map", map_share)).persist(StorageLevel.MEMORY_AND_DISK)
    infos = mapped.map(lambda m: (m[1], m[2])).collect()
    counts = [c for _, c in infos]
    files: list = []

    def one_round(items, sample: list, step: int, next_samples: int):
        bounds = simdb._simdb.range_boundaries(sample, n)
        k = len(bounds) + 1
        bounds = sc.broadcast(bounds)
        split, reduce = ("split", "reduce") if step == 1 else ("split2", "reduce2")

        def cut(blob):
            from simdb import _simdb

            return list(enumerate(_simdb.range_split(blob, bounds.value)))

        def reduce_range(r, pieces):
            return [_rayjoin.reduce_range(where, f"r{step}-{r:05}", next_samples, [p for _, p in pieces])]

        pieces = items.flatMap(timed(split, cut)).partitionBy(k, lambda r: r)
        reduced = pieces.mapPartitionsWithIndex(timed(reduce, reduce_range), preservesPartitioning=True)
        reduced = reduced.persist(StorageLevel.MEMORY_AND_DISK)
        done = reduced.map(lambda d: {x: d[x] for x in ("files", "sample", "counts")}).collect()
        for d in done:
            files.extend(d["files"])
            counts.append(d["counts"])
        cached.append(reduced)
        return reduced.map(lambda d: d["items"]), [s for d in done for s in d["sample"]]

    cached = [mapped]
    second, sample = one_round(mapped.map(lambda m: m[0]), [s for i, _ in infos for s in i], 1, samples)
    one_round(second, sample, 2, 0)
    for rdd in cached:
        rdd.unpersist()
    seconds = {s: longest[s].value for s in _rayjoin.RANGE_STEPS}
    built = _rayjoin.assemble_by_range(target, export, scratch, files, counts, n, seconds)
    return dict(built, shares=len(shares))


def export_on_executors(spark, work: str, decisions: str | None = None) -> dict:
    """WORK/export/: a finished join run's documents (every night's) in
    their clusters as a `simdb export --parquet` of the store the run
    stands for, as `simdb._rayjoin.export_join` writes it on Ray: the
    record parts and the placement's parts read by the tasks, rows
    grouped by a hash of the id, each group written as a part by the
    library's export writer (`simdb.engine.export_part`); the driver
    writes the manifest from the parts' entries. Marked by its _SUCCESS;
    done again from the start otherwise."""
    import pyarrow.parquet as pq
    import simdb
    from simdb import ray as stages

    from simdb._rayjoin import finished_export

    out = os.path.join(work, "export")
    done = finished_export(out)
    if done is not None:
        return done
    joined, placed = stages._joined(work), stages.read_mark(os.path.join(work, "placed.json"))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    b = max(2, int(placed["buckets"]))

    def files(path):
        if not os.path.isdir(path):
            return [path]
        return sorted(os.path.join(path, f) for f in os.listdir(path)
                      if f.endswith(".parquet") and not f.startswith((".", "_")))

    paths = [(p, "records") for r in joined["records"] for p in files(r)]
    paths += [(p, "clusters") for p in files(os.path.join(work, "clusters"))]
    schema = "id string, record binary, cluster long, bucket long"

    def read(batches):
        import pyarrow as pa
        from simdb import engine

        for batch in batches:
            for p, kind in zip(batch.column("path").to_pylist(), batch.column("kind").to_pylist()):
                if kind == "records":
                    t = pq.read_table(p, columns=["id", "record"])
                    t = t.append_column("cluster", pa.nulls(t.num_rows, pa.int64()))
                else:
                    t = pq.read_table(p, columns=["id", "cluster"])
                    t = pa.table({"id": t.column("id"), "record": pa.nulls(t.num_rows, pa.binary()),
                                  "cluster": t.column("cluster")})
                for share, piece in enumerate(engine.by_id(t, b)):
                    if piece.num_rows:
                        yield from piece.append_column(
                            "bucket", pa.array([share] * piece.num_rows, pa.int64())).to_batches()

    recipe, keep, written_at = joined["recipe"], placed["keep"], joined["written_at"]

    def write(t):
        import pyarrow as pa
        from simdb import engine

        t0 = perf_counter()
        records = t.filter(t.column("record").is_valid()).select(["id", "record"])
        clusters = t.filter(t.column("cluster").is_valid()).select(["id", "cluster"])
        e = engine.export_part(out, int(t.column("bucket")[0].as_py()), records, clusters,
                               recipe=recipe, keep=keep, written_at=written_at)
        return pa.table({"file": [e["file"]], "bytes": [e["bytes"]], "rows": [e["rows"]],
                         "crc32": [e["crc32"]], "seconds": [perf_counter() - t0]})

    done = (spark.createDataFrame(paths, "path string, kind string").repartition(max(1, len(paths)))
            .mapInArrow(read, schema).groupBy("bucket")
            .applyInArrow(write, "file string, bytes long, rows long, crc32 string, seconds double")
            .collect())
    entries = sorted(({k: r[k] for k in ("file", "bytes", "rows", "crc32")} for r in done),
                     key=lambda e: e["file"])
    log = None if decisions is None else os.path.abspath(decisions)
    manifest = simdb.finish_export(out, entries, decisions=log)
    return {"documents": manifest["documents"], "parts": len(manifest["parts"]),
            "longest_task_seconds": round(max((r["seconds"] for r in done), default=0.0), 3)}


def place_on_executors(spark, work: str, keep: str | None = None, decisions: str | None = None,
                       buckets: int | None = None) -> dict:
    """Stage 4 on the executors, as `simdb.ray.place_on_workers` does it on
    Ray, with the same stage functions (`simdb.engine`): each task reads
    its check parts with pyarrow; the components by large-star /
    small-star, each step a `groupBy(bucket).applyInArrow` (the driver
    sees the count of edges that moved); the vertices joined with their
    labels; each bucket of components placed in a scratch store of the
    executor's own and written to WORK/clusters/part-NNNNN.parquet (a
    bucket already there is skipped); then the store takes the clusters."""
    import pyarrow.parquet as pq
    import simdb
    from pyspark.sql import functions as F
    from simdb import engine
    from simdb import ray as stages

    marker = os.path.join(work, "placed.json")
    if os.path.exists(marker):
        return stages.read_mark(marker)
    store = os.path.join(work, "store")
    joined = stages._joined(work)
    parts = [p.path for p in stages._check_chain(work)]
    if joined is None:
        with simdb.Db.open(store, read_only=True) as db:
            recipe, keep, documents = db.recipe, keep or db.keep_policy, len(db)
        written_at = stages._written_at(store, parts)
    else:
        # No store: what the placement takes of one is in the join's marker.
        recipe, keep, documents = joined["recipe"], keep or "first", joined["next_ord"] - 1
        written_at = joined["written_at"]
    buckets = buckets or max(2, min(256, -(-documents // 100_000)))
    out = os.path.join(work, "clusters")
    os.makedirs(out, exist_ok=True)
    what: dict = {"keep": keep, "buckets": buckets, "rounds": 0, "members": 0, "skipped": 0}
    done: list = []
    if sum(pq.read_metadata(p).num_rows for p in parts):
        paths = spark.createDataFrame([(p,) for p in parts], "path string").repartition(
            max(1, len(parts)))
        cols = ["ord", "id", "near", "record", "near_ord", "near_record"]

        def read(fn):
            def go(batches):
                for b in batches:
                    for p in b.column("path").to_pylist():
                        yield from engine.to_signed(fn(pq.read_table(p, columns=cols))).to_batches()
            return go

        edge = "u long, v long, changed long"
        with_bucket = edge + ", bucket long"
        e = paths.mapInArrow(read(engine.edges), edge).localCheckpoint()

        def both(batches):
            import pyarrow as pa
            for b in batches:
                yield from engine.to_signed(engine.both_ways(pa.Table.from_batches([b]), buckets)).to_batches()

        def grouped(step):
            return lambda t: engine.to_signed(step(t))

        while True:
            changed = 0
            for step in (engine.large_star, engine.small_star):
                e = (e.mapInArrow(both, with_bucket).groupBy("bucket")
                     .applyInArrow(grouped(step), edge).localCheckpoint())
                changed += int(e.agg(F.sum("changed")).collect()[0][0] or 0)
            what["rounds"] += 1
            if changed == 0:
                break
        vertex = "ord long, id string, record binary, near array<string>, label long, bucket long"

        def label_rows(t):
            return engine.to_signed(by_ord(engine.label_rows(t)))

        def by_ord(t):
            import pyarrow as pa
            return t.append_column("bucket", pa.array(engine.bucket(
                t.column("ord").to_numpy(zero_copy_only=False), buckets)))

        lab = (e.mapInArrow(both, with_bucket).groupBy("bucket")
               .applyInArrow(lambda t: label_rows(engine.labels(t)), vertex))
        ver = paths.mapInArrow(read(lambda t: by_ord(engine.vertices(t))), vertex)
        log = None if decisions is None else os.path.abspath(decisions)
        done = (ver.unionByName(lab).groupBy("bucket")
                .applyInArrow(lambda t: engine.to_signed(engine.label_vertices(t, buckets)), vertex)
                .groupBy("bucket")
                .applyInArrow(lambda t: stages._place_bucket(t, out, recipe, keep, log, written_at),
                              "bucket long, members long, skipped long, clusters long")
                .collect())
        what["members"] = sum(r["members"] for r in done)
        what["skipped"] = sum(r["skipped"] for r in done)
    else:
        stages.write_empty_clusters(out)
    open(os.path.join(out, "_SUCCESS"), "wb").close()
    if joined is not None:
        what["clusters"] = sum(r["clusters"] for r in done)
        stages.write_mark(marker, what)
        return what
    if decisions is not None:
        with simdb.Db.open(store) as db:
            if not db.decisions(limit=1)["decisions"]:
                db.replay_decisions(os.fspath(decisions))
    what["clusters"] = simdb.put_clusters(store, stages._cluster_chunks(out), keep=keep)
    stages.write_mark(marker, what)
    return what


def join_on_executors(spark, df, work: str, *, recipe=None, incremental: str | None = None,
                      buckets: int | None = None) -> dict:
    """The checks of the rows ``df`` (``id``, the fingerprint columns and
    any of `simdb.ray.STATED`, in the order the documents count in) as a
    join on the executors, with no store: `simdb.engine`'s stages, each a
    `groupBy(bucket)` (two inputs: `cogroup`) whose function returns its
    output tagged with the next stage's bucket. Ords come from the
    partitions' row counts (the driver sees counts only). Writes
    WORK/records/ (this night's documents, for the next) and WORK/checks/
    (one part per share, written by its task); marked by WORK/join.json,
    as `simdb.ray.dedup(index="join")` marks it (a run of one engine
    continues a night of the other)."""
    import time as clock

    import pyarrow as pa
    import simdb
    from pyspark.sql import functions as F
    from simdb import engine
    from simdb import ray as stages
    from simdb._rayjoin import STAGES, earlier_of

    marker = os.path.join(work, "join.json")
    if os.path.exists(marker):
        return stages.read_mark(marker)
    earlier = earlier_of(incremental)
    # The earlier nights' parts, by path (the work directory is a path
    # every executor shares).
    earlier.update({k: [p.path for p in earlier[k]] for k in ("records", "checks")})
    recipe = recipe if recipe is not None else earlier["recipe"]
    records_dir, checks_dir = os.path.join(work, "records"), os.path.join(work, "checks")
    shutil.rmtree(checks_dir, ignore_errors=True)
    os.makedirs(checks_dir)
    df = df.localCheckpoint()
    counts = dict(df.groupBy(F.spark_partition_id().alias("p")).count().collect())
    rows = sum(counts.values())
    offsets, at = {}, earlier["next_ord"]
    for p in range(df.rdd.getNumPartitions()):
        offsets[p], at = at, at + counts.get(p, 0)
    b = buckets or max(2, min(256, -(-(rows + 100_000 * len(earlier["records"])) // 100_000)))
    digest = simdb.rule(recipe)["digest"]
    # Each stage's longest task (seconds), as the Ray driver reports them.
    longest, timed_call = task_timer(spark, STAGES)

    def timed(stage, fn):
        run = timed_call(stage, fn)
        # Spark tells a group's function (one table) from a cogroup's
        # (two) by the number of its arguments.
        if fn.__code__.co_argcount == 1:
            return lambda t: run(t)
        return lambda a, b: run(a, b)

    def records(batches):
        from pyspark import TaskContext

        t0 = perf_counter()
        at = offsets[TaskContext.get().partitionId()]
        for batch in batches:
            docs, _ = engine.doc_records(pa.Table.from_batches([batch]), at, rule=digest)
            at += batch.num_rows
            yield from engine.to_signed(docs.drop_columns(["new"])).to_batches()
        longest["records"].add(perf_counter() - t0)

    doc = "ord long, id string, fingerprint long, record binary"
    df.mapInArrow(records, doc).write.mode("overwrite").parquet(records_dir)
    docs = spark.read.parquet(records_dir).withColumn("new", F.lit(True))
    everyone = docs
    if earlier["records"]:
        everyone = docs.unionByName(spark.read.parquet(*earlier["records"]).withColumn("new", F.lit(False)))
    # Each id once, over every night: refused before the join's work.
    twice = everyone.groupBy("id").count().filter(F.col("count") > 1)
    repeated = twice.count()
    if repeated:
        some = [r["id"] for r in twice.orderBy("id").limit(3).collect()]
        shutil.rmtree(records_dir, ignore_errors=True)
        raise ValueError(
            "ids given more than once in this run's rows"
            + (" or in the earlier runs'" if earlier["records"] else "")
            + f": {repeated} (e.g. {', '.join(some)}); dedup takes each document once"
        )

    def tag(split):
        def go(batches):
            for batch in batches:
                t = engine.from_signed(pa.Table.from_batches([batch]), engine.doc_schema())
                yield from engine.to_signed(engine.tagged(split(t))).to_batches()
        return go

    tagged_doc = doc + ", new boolean, bucket long"
    by_fp = everyone.mapInArrow(tag(lambda t: engine.split_docs(t, b)[0]), tagged_doc).localCheckpoint()
    by_ord = docs.mapInArrow(tag(lambda t: engine.split_docs(t, b)[1]), tagged_doc).localCheckpoint()

    def docs_of(t):
        return engine.from_signed(t, engine.doc_schema())

    def out(pieces):
        return engine.to_signed(engine.tagged(pieces))

    def entries_fn(t):
        return out(engine.stage_entries(docs_of(t), b))

    def probes_fn(t):
        with engine.checker(recipe) as c:
            return out(engine.stage_probes(c, docs_of(t), b))

    key = ", bucket long"
    entries = by_fp.groupBy("bucket").applyInArrow(
        timed("entries", entries_fn), "family long, value long, fingerprint long, after long, until long" + key)
    probes = by_ord.groupBy("bucket").applyInArrow(
        timed("probes", probes_fn),
        "family long, value long, ord long, q long, k long, outside long, ranked boolean" + key)

    def keys_fn(e, p):
        matched, boiler = engine.stage_keys(
            engine.from_signed(e, engine.entry_schema()), engine.from_signed(p, engine.probe_schema()), b)
        m, x = engine.tagged(matched), engine.tagged(boiler)
        m = m.append_column("part", pa.nulls(m.num_rows, pa.uint64())).append_column(
            "boiler", pa.array([False] * m.num_rows))
        x = x.add_column(1, "fingerprint", pa.nulls(x.num_rows, pa.int64())).append_column(
            "boiler", pa.array([True] * x.num_rows))
        return engine.to_signed(engine.concat([m.select(MIXED), x.select(MIXED)]))

    keys = (entries.groupBy("bucket").cogroup(probes.groupBy("bucket"))
            .applyInArrow(timed("keys", keys_fn), "ord long, fingerprint long, bucket long, part long, boiler boolean")
            .localCheckpoint())

    def matched_fn(d, m):
        return out(engine.stage_matched(docs_of(d), engine.from_signed(m, engine.matched_schema()), b))

    matched = by_ord.groupBy("bucket").cogroup(keys.filter(~F.col("boiler")).groupBy("bucket")).applyInArrow(
        timed("matched", matched_fn), "fingerprint long, id string, record binary" + key)

    def sent_fn(d, m):
        with engine.checker(recipe) as c:
            return out(engine.stage_sent(c, docs_of(d), engine.from_signed(m, engine.probe_doc_schema()), b))

    sent = by_fp.groupBy("bucket").cogroup(matched.groupBy("bucket")).applyInArrow(
        timed("sent", sent_fn), "ord long, id string, record binary" + key)
    sent_and_boiler = sent.select("ord", "id", "record", F.lit(None).cast("long").alias("part"), "bucket").unionByName(
        keys.filter(F.col("boiler")).select("ord", F.lit(None).cast("string").alias("id"),
                                           F.lit(None).cast("binary").alias("record"), "part", "bucket"))

    def checks_fn(d, x):
        import pyarrow.compute as pc

        t0 = perf_counter()
        boiler = pc.is_valid(x.column("part"))
        sent = engine.from_signed(x.filter(pc.invert(boiler)), engine.sent_schema())
        parts = engine.from_signed(x.filter(boiler), engine.boilerplate_schema())
        with engine.checker(recipe) as c:
            t = engine.stage_checks(c, docs_of(d), sent, parts)
        share = int((d.column("bucket") if d.num_rows else x.column("bucket"))[0].as_py())
        stages._write_atomically(t, os.path.join(checks_dir, f"part-{share:05}.parquet"))
        return pa.table({"checked": [int(t.schema.metadata[b"checked"])], "seconds": [perf_counter() - t0]})

    done = (by_ord.groupBy("bucket").cogroup(sent_and_boiler.groupBy("bucket"))
            .applyInArrow(timed("checks", checks_fn), "checked long, seconds double").collect())
    what = {
        "rows": rows,
        "documents": docs.count(),
        "checked": sum(r["checked"] for r in done),
        "first_ord": earlier["next_ord"],
        "next_ord": earlier["next_ord"] + rows,
        "buckets": b,
        "blocks": len(offsets),
        "recipe": recipe if recipe is None or isinstance(recipe, dict) else os.fspath(recipe),
        "written_at": int(clock.time()),
        "records": earlier["records"] + [os.path.abspath(records_dir)],
        "checks": earlier["checks"] + [os.path.abspath(checks_dir)],
        # The longest task of each stage (a task that ran twice, its
        # longer run).
        "longest_task_seconds": {s: round(longest[s].value, 3) for s in STAGES},
        "stages": list(STAGES),
    }
    what["no_fingerprint"] = rows - what["documents"]
    stages.write_mark(marker, what)
    return what


#: The columns of the join's stage 2 output on Spark: matches and
#: boilerplate parts in one frame.
MIXED = ["ord", "fingerprint", "bucket", "part", "boiler"]


def main(argv: list[str] | None = None) -> int:
    import simdb_spark

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", help="fingerprint rows (Parquet), or texts with --text")
    p.add_argument("out", help="output directory; a killed run, run again, resumes there")
    p.add_argument("--keep", default="first", choices=["first", "priority", "newest", "longest"],
                   help="which copy represents a cluster (default first)")
    p.add_argument("--priority", default="priority", metavar="COL",
                   help="the column of the documents' priorities, where the inputs have it "
                        "(default priority)")
    p.add_argument("--time", default="time", metavar="COL",
                   help="the column of the documents' own times (Unix seconds, timestamps or "
                        "RFC 3339), where the inputs have it (default time)")
    p.add_argument("--decisions", metavar="LOG",
                   help="a decision log (simdb decisions --json) the clusters obey")
    p.add_argument("--text", help="the inputs are texts in this column: fingerprint them first")
    p.add_argument("--html", action="store_true",
                   help="the --text column holds web pages: fingerprint their title and main content")
    p.add_argument("--format", choices=["parquet", "json"], default="parquet")
    p.add_argument("--db", help="the recipe (and learned IDF) of this store")
    p.add_argument("--parts", type=int, help="ranges of documents the checks are split into")
    p.add_argument("--index", choices=["store", "join"], default="store",
                   help="store: import into one store the checks read (default); join: no "
                        "store, the checks as a join on the executors")
    p.add_argument("--buckets", type=int,
                   help="--index join: shares of each stage (default one per 100,000 documents)")
    p.add_argument("--store", metavar="DB",
                   help="--index join: make the store of the result at DB (a new path), which "
                   "simdb serve and simdb query open: the export written on the executors, "
                   "imported on the driver's machine")
    p.add_argument("--work", help="work directory (default OUT/_work)")
    p.add_argument("--incremental", metavar="OLD",
                   help="an earlier run's OUT (or work directory): tonight's documents are "
                        "checked against its documents and each other")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--driver-memory", default="4g", help="local mode's memory (default 4g)")
    a = p.parse_args(argv)
    missing = [i for i in a.inputs if not os.path.exists(i) and "://" not in i]
    if missing:
        print(f"simdb-dedup: no input files: {', '.join(missing)} not found", file=sys.stderr)
        return 2
    spark = simdb_spark.session(a.master, a.driver_memory, None)
    spark.sparkContext.setLogLevel("WARN")
    try:
        rep = run(spark, a.inputs, a.out, keep=a.keep, text=a.text, html=a.html, fmt=a.format, db=a.db,
                  parts=a.parts, work=a.work, incremental=a.incremental, decisions=a.decisions,
                  priority=a.priority, time=a.time, index=a.index, buckets=a.buckets,
                  store=a.store)
    except ValueError as e:
        print(f"simdb-dedup: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
