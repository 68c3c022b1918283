"""Corpus-wide near-duplicate pairs and clusters of a `simdb export --parquet`
on Spark: the candidates by Spark SQL (tables, a shuffle, a join), each
pair decided and each component placed by the simdb library itself (the
wheel, on the executors), so no rule of simdb's is written here.

    python tools/spark/simdb_spark.py EXPORT/ OUT/ [--k 3] [--design card|manku|B:m]
    spark-submit --py-files tools/spark/simdb_spark.py tools/spark/simdb_spark.py EXPORT/ OUT/ ...

Needs PySpark, and the simdb Python package (the wheel: tools/wheel.sh) on
the driver and every executor.

The method (the README's "Beyond one machine" has the whole story):

0. Copies. Documents of one fingerprint, sketch, fine sketch and length (a
   text stored under several ids) are one group, named by its smallest
   ord; every rule treats them alike, so the tables, the join and the
   verification run over one row per group: n copies of one text cost one
   row, not n(n-1)/2 pairs.
1. Tables. The 64 bits are cut into B blocks (the first 64 mod B blocks one
   bit wider, the first block the most significant); each of the C(B, m)
   tables keys a document by m of its blocks. If two fingerprints differ
   in at most k <= B - m bits, at least B - k >= m blocks are identical,
   so the pair shares the key of at least one table: the join is exact.
   `card` is B=4, m=1 (simdb's own index, 16-bit keys, 4 tables);
   `manku` is B=5, m=2 (Manku et al. 2007: 25- and 26-bit keys, 10
   tables, about 2.5x the rows and far fewer candidates per key).
2. Candidates. Each document becomes C(B, m) rows (table, key, ord,
   fingerprint); a shuffle on (table, key) and an equi-join give every
   pair that shares a key; `bit_count(a ^ b) <= k` keeps those within k.
   A pair found by several tables is kept only by the first (its m
   lowest identical blocks), so no distinct() shuffle is needed.
3. Verification, by simdb's rule: each pair of groups goes, with both
   sketches, fine sketches and lengths, through `simdb.pair_verdicts` on
   the executors (`mapInArrow`): the similarity (refined by the fine
   sketches where the store refines it), and whether the pair is a copy at
   the threshold (--min-similarity; by default the store's, which the
   export's key-value metadata states), by similarity, by containment, or
   unconfirmed (a document without a sketch), exactly as the store decides.
4. Clusters. The connected components of the confirmed pairs (min-label
   propagation with pointer jumping, in Spark SQL) bound where a cluster
   can reach. Each component's documents and pairs of groups go to one
   executor, which places them with `simdb.place_groups`: each document's
   16 nearest confirmed earlier copies (its group's and its neighbouring
   groups' 16 smallest ids placed so far, so a group of n copies costs
   about 16n), then the store's own placement in a scratch store of the
   executor's (the keep policy the export states, the decision log),
   anchored within k. simdb's clusters equal these for a store ingested
   with `-k` at the job's k (exact checks, no confidence-ranked probing),
   without deletes.

Output (Parquet, Snappy):
    OUT/pairs/     a, b (ids, a < b), distance (int), similarity (double, null: unconfirmed),
                   containment (double, set when the pair was confirmed by containment).
                   With --copies groups (the default, as `simdb pairs`): pairs of groups,
                   each named and decided by its first (smallest) id; with --copies pairs
                   every pair of documents (`simdb pairs --copies pairs`)
    OUT/copies/    (--copies groups) copies (the ids of a group of two or more,
                   ascending), distance (0), similarity (1.0; null without sketches)
    OUT/clusters/  cluster (long), size (long), representative (string), id (string),
                   rank (int, 0 = the representative), distance (int, bits from the
                   representative)
    OUT/report.json  counts and stage timings
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass

DESIGNS = {"card": (4, 1), "manku": (5, 2)}
# Documents per placement bucket (one scratch store each), and at most
# this many buckets.
PLACE_BUCKET_DOCS = 100_000
PLACE_BUCKETS_MAX = 4096


@dataclass(frozen=True)
class Design:
    """B blocks over the 64 bits; each table keys on m of them."""

    blocks: int
    choose: int

    @staticmethod
    def parse(s: str) -> "Design":
        if s in DESIGNS:
            return Design(*DESIGNS[s])
        try:
            b, m = (int(x) for x in s.split(":"))
        except ValueError:
            raise ValueError(f"design {s!r}: expected card, manku or B:m (e.g. 6:2)") from None
        if not 1 <= m < b <= 64:
            raise ValueError(f"design {s!r}: need 1 <= m < B <= 64")
        return Design(b, m)

    def check(self, k: int) -> None:
        """Refuses a design that could miss a pair within k."""
        most = max_k()
        if not 0 <= k <= most:
            raise ValueError(f"k {k} is not between 0 and {most}")
        if k > self.blocks - self.choose:
            raise ValueError(
                f"design {self.blocks}:{self.choose} is exact only for k <= "
                f"{self.blocks - self.choose}, not {k}: use B:m with B - m >= {k} "
                f"(e.g. {k + 2}:2)"
            )

    def spans(self) -> list[tuple[int, int]]:
        """(shift, width) of each block, most significant first."""
        base, extra = divmod(64, self.blocks)
        out, top = [], 64
        for i in range(self.blocks):
            w = base + (1 if i < extra else 0)
            top -= w
            out.append((top, w))
        return out

    def tables(self) -> list[tuple[int, ...]]:
        """The tables' blocks, in lexicographic order."""
        return list(itertools.combinations(range(self.blocks), self.choose))

    def key_bits(self) -> tuple[int, int]:
        """The narrowest and widest key of a table, in bits."""
        w = [sum(self.spans()[i][1] for i in t) for t in self.tables()]
        return min(w), max(w)


def max_k() -> int:
    """The largest exact k, the library's (`simdb.rule()`)."""
    import simdb

    return simdb.rule()["constants"]["max_exact_k"]


def block(F, fp, shift: int, width: int):
    """Block (shift, width) of the long column fp, as a non-negative long."""
    return F.shiftrightunsigned(fp, shift).bitwiseAND(F.lit((1 << width) - 1))


def explode_tables(F, docs, design: Design):
    """(table, key, ord, fp): one row per document and table."""
    spans = design.spans()
    rows = []
    for t, blocks in enumerate(design.tables()):
        key, offset = None, 0
        for i in reversed(blocks):
            shift, width = spans[i]
            part = F.shiftleft(block(F, F.col("fp"), shift, width), offset)
            key = part if key is None else key.bitwiseOR(part)
            offset += width
        rows.append(F.struct(F.lit(t).alias("table"), key.alias("key")))
    return docs.select(F.explode(F.array(*rows)).alias("e"), "ord", "fp").select(
        "e.table", "e.key", "ord", "fp"
    )


def first_table_rule(F, design: Design, xor):
    """True when the row's table is the first (in lexicographic order) whose
    blocks are all identical in the pair: its blocks are the m lowest
    identical ones. `xor` is a ^ b."""
    spans = design.spans()
    equal = None
    for i, (shift, width) in enumerate(spans):
        bit = F.when(block(F, xor, shift, width) == 0, F.lit(1 << i)).otherwise(F.lit(0))
        equal = bit if equal is None else equal.bitwiseOR(bit)
    own, upto = [], []
    for blocks in design.tables():
        own.append(F.lit(sum(1 << i for i in blocks)))
        upto.append(F.lit((1 << (max(blocks) + 1)) - 1))
    t = F.col("table") + 1
    return equal.bitwiseAND(F.element_at(F.array(*upto), t)) == F.element_at(F.array(*own), t)


def components(F, edges, checkpoint):
    """(v, label): the smallest vertex of each vertex's connected component,
    for the vertices of `edges` (u, v). Returns the frame and the rounds."""
    both = edges.select("u", "v").union(edges.select(F.col("v").alias("u"), F.col("u").alias("v")))
    both = checkpoint(both)
    labels = checkpoint(
        both.groupBy("u").agg(F.least(F.col("u"), F.min("v")).alias("label")).withColumnRenamed("u", "v")
    )
    rounds = 0
    while True:
        rounds += 1
        # The smallest label among the neighbours...
        hop = (
            both.join(labels.withColumnRenamed("v", "u").withColumnRenamed("label", "nl"), "u")
            .groupBy("v")
            .agg(F.min("nl").alias("nl"))
        )
        step = labels.join(hop, "v").select("v", F.least("label", "nl").alias("label"))
        # ...then the label of the label (pointer jumping halves chains).
        jump = step.alias("s").join(
            step.select(F.col("v").alias("w"), F.col("label").alias("ll")).alias("j"),
            F.col("s.label") == F.col("j.w"),
        )
        new = checkpoint(jump.select("v", F.least("label", "ll").alias("label")))
        changed = new.join(labels.withColumnRenamed("label", "old"), "v").where("label < old").count()
        labels = new
        if changed == 0:
            return labels, rounds


def verdict_schema():
    """The columns `pair_verdicts` adds to a pair's row."""
    from pyspark.sql.types import BooleanType, DoubleType, StructField

    return [StructField("similarity", DoubleType()), StructField("confirmed", BooleanType()),
            StructField("containment", DoubleType())]


def with_verdicts(df, min_similarity: float):
    """`df` (pairs of groups with each side's `xs`/`ys` sketch, `xf`/`yf`
    fine sketch and `lx`/`ly` length) with how simdb's rule decides each
    pair: `similarity` (null without two sketches), `confirmed` and
    `containment` (set when containment confirmed it), computed on the
    executors by the simdb wheel (`simdb.pair_verdicts`: the rule is the
    library's, written nowhere else)."""
    from pyspark.sql.types import StructType

    schema = StructType(list(df.schema.fields) + verdict_schema())

    def batches(it):
        import pyarrow as pa
        import simdb

        for b in it:
            col = b.column
            v = simdb.pair_verdicts(
                col("xs").to_pylist(), col("xf").to_pylist(), col("lx").to_pylist(),
                col("ys").to_pylist(), col("yf").to_pylist(), col("ly").to_pylist(),
                min_similarity=min_similarity)
            yield pa.RecordBatch.from_arrays(
                list(b.columns) + [pa.array(v["similarity"], pa.float64()),
                                   pa.array(v["confirmed"], pa.bool_()),
                                   pa.array(v["containment"], pa.float64())],
                schema=b.schema.append(pa.field("similarity", pa.float64()))
                .append(pa.field("confirmed", pa.bool_()))
                .append(pa.field("containment", pa.float64())))

    return df.mapInArrow(batches, schema)


def place_bucket(rows, keep: str, k: int, min_similarity: float, recipe, decisions):
    """The clusters of one component (its documents, `("d", (ord, id, fp,
    sketch, fine, length, priority, dated, ingested_at, group))`, and its
    pairs of groups within k, `("p", (x, y))`), placed by simdb's rule in
    a scratch store of the executor's own (`simdb.place_groups`: each
    document's nearest confirmed earlier copies, then the store's placement
    under `keep`, obeying the decision log): rows (cluster, size,
    representative, id, rank, distance)."""
    import shutil
    import tempfile

    import simdb

    docs, px, py = [], [], []
    for kind, v in rows:
        if kind == "d":
            docs.append(v)
        else:
            px.append(v[0])
            py.append(v[1])
    cols = list(zip(*docs))
    tmp = tempfile.mkdtemp(prefix="simdb-place-")
    try:
        out = simdb.place_groups(
            os.path.join(tmp, "scratch"), list(cols[1]), list(cols[0]), list(cols[2]),
            list(cols[3]), list(cols[4]), list(cols[5]), list(cols[6]), list(cols[7]),
            list(cols[8]), list(cols[9]), px, py, k=k, min_similarity=min_similarity,
            recipe=recipe, keep=keep, decisions=decisions)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return zip(out["cluster"], out["size"], out["representative"], out["id"], out["rank"],
               out["distance"])


def default_min_similarity(recipe) -> float:
    """The threshold a store of `recipe` (None: simdb's default) confirms
    at, as the simdb wheel states it."""
    import simdb

    return simdb.pair_verdicts([], [], [], [], [], [], recipe=recipe)["min_similarity"]


MANIFEST_FORMAT = "simdb-export-manifest 1"


def check_export(export: str, partial: bool = False, checksums: bool = False) -> list[str]:
    """What is wrong with a `simdb export --parquet` directory, as `simdb
    import` reads it: no `_SUCCESS` (an export that did not finish), or
    parts that differ from the manifest `_SUCCESS` holds (missing, not
    listed, another size or row count; with `checksums`, another CRC-32,
    which reads every part); an empty `_SUCCESS` (a simdb before
    manifests, or a copy cut while writing it) cannot be checked. Empty
    when it is the export, and always with `partial`. A single file is not
    checked."""
    if partial or not os.path.isdir(export):
        return []
    marker = os.path.join(export, "_SUCCESS")
    parts = sorted(f for f in os.listdir(export)
                   if f.endswith(".parquet") and not f.startswith((".", "_")))
    if not os.path.exists(marker):
        return [f"no _SUCCESS: the export that wrote these {len(parts)} part files did not finish"]
    with open(marker, "rb") as f:
        raw = f.read()
    import pyarrow.parquet as pq

    if not raw:
        # An export (its parts state a recipe): one before manifests, or a
        # copy cut while writing the marker. Other parts: Hadoop's marker.
        meta = pq.read_metadata(os.path.join(export, parts[0])).metadata or {} if parts else {}
        if b"simdb.recipe" not in meta:
            return []
        return [f"_SUCCESS is empty, so the {len(parts)} part files of this export cannot be "
                "checked against it (an export of a simdb before 2026-11-26, or a copy cut "
                "while writing the marker)"]
    try:
        m = json.loads(raw)
    except ValueError as e:
        return [f"_SUCCESS is not an export manifest: {e}"]
    if m.get("format") != MANIFEST_FORMAT:
        return [f"_SUCCESS has manifest format {m.get('format')!r}; this job reads {MANIFEST_FORMAT!r}"]
    import zlib

    problems = []
    listed = set()
    for p in m["parts"]:
        listed.add(p["file"])
        path = os.path.join(export, p["file"])
        if not os.path.exists(path):
            problems.append(f"{p['file']} is missing ({p['rows']} rows)")
            continue
        size = os.path.getsize(path)
        if size != p["bytes"]:
            problems.append(f"{p['file']} has {size} bytes, the export wrote {p['bytes']}")
            continue
        if checksums:
            crc = 0
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    crc = zlib.crc32(block, crc)
            if f"{crc:08x}" != p["crc32"]:
                problems.append(f"{p['file']} has CRC-32 {crc:08x}, the export wrote {p['crc32']}")
                continue
        try:
            rows = pq.read_metadata(path).num_rows
        except OSError as e:
            problems.append(f"{p['file']} is not a Parquet file the export wrote: {e}")
            continue
        if rows != p["rows"]:
            problems.append(f"{p['file']} has {rows} rows, the export wrote {p['rows']}")
    d = m.get("decisions")
    if d:
        path = os.path.join(export, d["file"])
        if not os.path.exists(path):
            problems.append(f"{d['file']} is missing ({d['rows']} decisions)")
        elif os.path.getsize(path) != d["bytes"]:
            problems.append(f"{d['file']} has {os.path.getsize(path)} bytes, the export wrote "
                            f"{d['bytes']}")
    problems += [f"{f} is not a part of the export" for f in parts if f not in listed]
    return problems


def export_metadata(export: str) -> dict:
    """What `simdb export` states in its files' key-value metadata: the
    store's recipe ("simdb.recipe", JSON) and default verification threshold
    ("simdb.min_similarity"). Empty for Parquet that simdb did not write
    (or wrote before it stated them)."""
    import pyarrow.parquet as pq

    files = [export] if os.path.isfile(export) else sorted(
        os.path.join(export, f) for f in os.listdir(export)
        if f.endswith(".parquet") and not f.startswith((".", "_")))
    if not files:
        return {}
    kv = pq.read_metadata(files[0]).metadata or {}
    out: dict = {}
    if b"simdb.recipe" in kv:
        out["recipe"] = json.loads(kv[b"simdb.recipe"])
    if b"simdb.min_similarity" in kv:
        out["min_similarity"] = float(kv[b"simdb.min_similarity"])
    if b"simdb.rule_digest" in kv:
        out["rule_digest"] = kv[b"simdb.rule_digest"].decode()
    # Exports of stores before format 6 name no policy: they ranked by priority.
    out["keep_policy"] = kv.get(b"simdb.keep_policy", b"priority").decode()
    return out


def refuse_other_rule(meta: dict) -> None:
    """Refuses an export whose rule (`simdb.rule_digest`: its recipe with
    the constants of the build that wrote it) is not this wheel's rule of
    the same recipe: the job decides pairs and places clusters by the
    wheel's rule, which would not be the one the store's answers follow.
    Exports from before exports stated their rule are taken as they are."""
    import simdb

    if "rule_digest" not in meta or "recipe" not in meta:
        return
    ours = f"{simdb.rule(meta['recipe'])['digest']:016x}"
    if meta["rule_digest"] != ours:
        raise ValueError(
            f"the export was written under another rule (digest {meta['rule_digest']}; "
            f"this simdb's of the same recipe is {ours}): export the store again with "
            "this build (simdb export --parquet), or run the job with the wheel of the "
            "build that wrote it")


def run(spark, export: str, out: str, k: int = 3, design: str = "card",
        min_similarity: float | None = None, clusters: bool = True,
        stats: bool = False, partial: bool = False, copies: str = "groups",
        decisions: str | None = None) -> dict:
    """Runs the job; returns the report (also written to OUT/report.json).
    Without min_similarity, the threshold the export states (the store's),
    else the default of the export's recipe. An export directory must be
    what its `_SUCCESS` lists (`check_export`), unless `partial`. The
    clusters obey the decision log `decisions` (`simdb decisions --json`),
    else the export's own (its _decisions.jsonl), if any. Needs the simdb
    wheel on the driver and the executors (the rule is the library's)."""
    from pyspark.sql import functions as F

    d = Design.parse(design)
    d.check(k)
    if copies not in ("groups", "pairs"):
        raise ValueError(f"copies {copies!r} is not groups or pairs")
    problems = check_export(export, partial)
    if problems:
        raise ValueError(f"{export}: not the finished export: {'; '.join(problems)} "
                         "(copy it again, or run with --partial)")
    meta = export_metadata(export)
    recipe = meta.get("recipe")
    refuse_other_rule(meta)
    source = "option"
    if min_similarity is None:
        min_similarity, source = ((meta["min_similarity"], "export") if "min_similarity" in meta
                                  else (default_min_similarity(recipe), "default"))
    if not 0.0 <= min_similarity <= 1.0:
        raise ValueError(f"min_similarity {min_similarity} is not between 0 and 1")
    timings: dict[str, float] = {}
    report: dict = {"k": k, "design": f"{d.blocks}:{d.choose}", "tables": len(d.tables()),
                    "key_bits": list(d.key_bits()), "min_similarity": min_similarity,
                    "min_similarity_from": source, "recipe": recipe}
    persisted = []

    def checkpoint(df):
        df = df.localCheckpoint(eager=True)
        persisted.append(df)
        return df

    t0 = time.perf_counter()
    raw = spark.read.parquet(export)
    missing = {"id", "fingerprint", "ord"} - set(raw.columns)
    if missing:
        raise ValueError(f"{export}: not a simdb export (no column {', '.join(sorted(missing))})")
    has = set(raw.columns)

    def column(name, kind):
        return F.col(name).cast(kind) if name in has else F.lit(None).cast(kind)

    # Exports before format 14 have no fine sketches: no pair is refined.
    docs = raw.select(
        F.col("ord").cast("long").alias("ord"),
        F.col("id").alias("id"),
        F.col("fingerprint").cast("long").alias("fp"),
        column("priority", "double").alias("priority"),
        F.coalesce(column("length", "long"), F.lit(0).cast("long")).alias("length"),
        column("sketch", "binary").alias("sketch"),
        column("fine", "binary").alias("fine"),
        column("dated", "long").alias("dated"),
        column("ingested_at", "long").alias("ingested_at"),
    )
    docs = docs.persist()
    persisted.append(docs)
    report["documents"] = docs.count()
    timings["read"] = time.perf_counter() - t0

    # Copy groups: the documents of one fingerprint, sketch and length, which
    # every rule treats alike. A group is named by its smallest ord (g); the
    # candidate join runs over one row per group, so n copies of one text
    # cost one row, not n(n-1)/2 pairs. (A window, not a join: its
    # partitions group null sketches too.)
    from pyspark.sql import Window
    w = Window.partitionBy("fp", "length", "sketch", "fine")
    first = F.min(F.struct(F.col("id"), F.col("ord"))).over(w)
    docs = docs.select(
        "*", F.min("ord").over(w).alias("g"), F.max("ord").over(w).alias("gmax"),
        F.count(F.lit(1)).over(w).alias("gsize"),
        first["id"].alias("gfirst"), first["ord"].alias("gfirst_ord"),
    )
    docs = checkpoint(docs)
    groups = docs.where(F.col("ord") == F.col("g")).drop("ord", "id", "priority")
    groups = checkpoint(groups)
    report["groups"] = groups.count()

    # Candidates: a shuffle on (table, key), an equi-join, the distance filter
    # and the first-table rule, over the groups.
    t0 = time.perf_counter()
    rows = explode_tables(F, groups.select(F.col("g").alias("ord"), "fp"), d)
    if stats:
        sizes = rows.groupBy("table", "key").count()
        agg = sizes.agg(F.sum(F.col("count") * (F.col("count") - 1) / 2).alias("c"),
                        F.max("count").alias("m")).first()
        report["candidate_pairs"] = int(agg["c"] or 0)
        report["largest_bucket"] = int(agg["m"] or 0)
        n = max(report["groups"], 1)
        report["candidates_per_group"] = 2 * report["candidate_pairs"] / n
        timings["stats"] = time.perf_counter() - t0
        t0 = time.perf_counter()
    l, r = rows.alias("l"), rows.alias("r")
    joined = l.join(r, (F.col("l.table") == F.col("r.table")) & (F.col("l.key") == F.col("r.key"))
                    & (F.col("l.ord") < F.col("r.ord")))
    xor = F.col("l.fp").bitwiseXOR(F.col("r.fp"))
    within = joined.where(F.bit_count(xor) <= k).select(
        F.col("l.table").alias("table"), F.col("l.ord").alias("x"), F.col("r.ord").alias("y"),
        F.bit_count(xor).alias("distance"), xor.alias("xor"),
    ).where(first_table_rule(F, d, F.col("xor"))).select("x", "y", "distance")

    # Each pair of groups decided once, by simdb's rule on the executors.
    def side(c):
        return groups.select(F.col("g").alias(c), F.col("length").alias(f"l{c}"),
                             F.col("gmax").alias(f"m{c}"), F.col("gfirst").alias(f"f{c}"),
                             F.col("gfirst_ord").alias(f"o{c}"),
                             F.col("sketch").alias(f"{c}s"), F.col("fine").alias(f"{c}f"))
    gpairs = with_verdicts(within.join(side("x"), "x").join(side("y"), "y"), min_similarity) \
        .drop("xs", "ys", "xf", "yf")
    gpairs = checkpoint(gpairs)
    report["group_pairs_within_k"] = gpairs.count()

    if copies == "pairs":
        # Every pair of documents: each pair of groups expanded into its
        # members' pairs, and the pairs inside each group (distance 0, the
        # sketch's estimate of itself, 1: n(n-1)/2 for a text stored n
        # times, as simdb pairs --copies pairs).
        mx = docs.select(F.col("g").alias("x"), F.col("id").alias("ia"))
        my = docs.select(F.col("g").alias("y"), F.col("id").alias("ib"))
        cross = gpairs.join(mx, "x").join(my, "y").select(
            "ia", "ib", "distance", "similarity", "containment", "confirmed")
        l2, r2 = docs.alias("l"), docs.alias("r")
        inside = l2.join(r2, (F.col("l.g") == F.col("r.g")) & (F.col("l.ord") < F.col("r.ord"))) \
            .select(F.col("l.id").alias("ia"), F.col("r.id").alias("ib"), F.lit(0).alias("distance"),
                    F.when(F.col("l.sketch").isNotNull(), F.lit(1.0)).alias("similarity"),
                    F.lit(None).cast("double").alias("containment"),
                    F.lit(True).alias("confirmed"))
        scored = checkpoint(cross.unionByName(inside))
    else:
        # Each group once (OUT/copies), and each pair of groups once, named
        # by the groups' first ids (as simdb pairs' default).
        copies_df = docs.where(F.col("gsize") > 1).groupBy("g").agg(
            F.sort_array(F.collect_list("id")).alias("copies"),
            F.first(F.when(F.col("sketch").isNotNull(), F.lit(1.0))).alias("similarity"),
        ).select("copies", F.lit(0).alias("distance"), "similarity")
        copies_df = checkpoint(copies_df)
        cg = copies_df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.size("copies")).alias("docs")).first()
        report["copy_groups"] = int(cg["n"])
        report["in_copy_groups"] = int(cg["docs"] or 0)
        copies_df.write.mode("errorifexists").parquet(os.path.join(out, "copies"))
        scored = gpairs.select(F.col("fx").alias("ia"), F.col("fy").alias("ib"), "distance",
                               "similarity", "containment", "confirmed")
    below = ~F.col("confirmed")
    counts = scored.agg(
        F.count(F.lit(1)).alias("within"),
        F.sum(F.when(F.col("similarity").isNull(), 1).otherwise(0)).alias("unconfirmed"),
        F.sum(F.when(below, 1).otherwise(0)).alias("rejected"),
    ).first()
    report["pairs_within_k"] = int(counts["within"])
    report["unconfirmed"] = int(counts["unconfirmed"] or 0)
    report["rejected"] = int(counts["rejected"] or 0)
    report["pairs"] = report["pairs_within_k"] - report["rejected"]
    a_first = F.col("ia") < F.col("ib")
    scored.where(~below).select(
        F.when(a_first, F.col("ia")).otherwise(F.col("ib")).alias("a"),
        F.when(a_first, F.col("ib")).otherwise(F.col("ia")).alias("b"),
        "distance", "similarity", "containment",
    ).write.mode("errorifexists").parquet(os.path.join(out, "pairs"))
    timings["pairs"] = time.perf_counter() - t0

    if clusters:
        t0 = time.perf_counter()
        # The components of the groups: a pair of groups the rule confirms
        # is an edge; a group of copies is a component of its own.
        edges = gpairs.where(F.col("confirmed")).select(F.col("x").alias("u"), F.col("y").alias("v")) \
            .unionByName(groups.where(F.col("gsize") > 1)
                         .select(F.col("g").alias("u"), F.col("g").alias("v")))
        labels, rounds = components(F, edges, checkpoint)
        # The workers run place_bucket from this file, with the wheel.
        spark.sparkContext.addPyFile(os.path.abspath(__file__))
        keep = meta.get("keep_policy", "first")
        report["keep_policy"] = keep
        if decisions is None and os.path.isdir(export) \
                and os.path.exists(os.path.join(export, "_decisions.jsonl")):
            decisions = os.path.join(export, "_decisions.jsonl")
        log_name = None
        report["decisions"] = 0
        if decisions:
            # Each executor reads its own copy of the log (no shared file
            # system), named by its content: Spark keeps one file per name.
            import hashlib
            import tempfile

            with open(decisions, "rb") as f:
                body = f.read()
            report["decisions"] = sum(1 for line in body.splitlines() if line.strip())
            log_name = f"simdb-decisions-{hashlib.sha256(body).hexdigest()[:16]}.jsonl"
            copy = os.path.join(tempfile.mkdtemp(prefix="simdb-spark-"), log_name)
            with open(copy, "wb") as f:
                f.write(body)
            spark.sparkContext.addFile(copy)
        lab = labels.select(F.col("v").alias("g"), "label")
        # The components in buckets of about PLACE_BUCKET_DOCS documents,
        # each bucket placed in one scratch store (a store per component
        # would cost a RocksDB open per pair of copies).
        clustered = lab.join(docs.select("g"), "g").count()
        buckets = max(2, min(PLACE_BUCKETS_MAX, -(-clustered // PLACE_BUCKET_DOCS)))
        report["placement_buckets"] = buckets

        def bucket(label):
            return (((label * 0x9E3779B97F4A7C15) % (1 << 64)) >> 32) % buckets

        doc_rows = lab.join(docs, "g").rdd.map(
            lambda r: (bucket(r["label"]), ("d", (r["ord"], r["id"], r["fp"], r["sketch"], r["fine"],
                                          r["length"], r["priority"], r["dated"],
                                          r["ingested_at"], r["g"]))))
        # The component's pairs of groups the rule confirmed (both within
        # it; the placement decides them again, by the same rule).
        pair_rows = gpairs.where(F.col("confirmed")).select("x", "y").join(lab.withColumnRenamed("g", "x"), "x").rdd.map(
            lambda r: (bucket(r["label"]), ("p", (r["x"], r["y"]))))

        def place(kv):
            from pyspark import SparkFiles

            log = SparkFiles.get(log_name) if log_name else None
            return place_bucket(kv[1], keep, k, min_similarity, recipe, log)

        placed = doc_rows.union(pair_rows).groupByKey().flatMap(place)
        result = checkpoint(spark.createDataFrame(
            placed, "cluster long, size long, representative string, id string, rank int, "
                    "distance int"))
        result.write.mode("errorifexists").parquet(os.path.join(out, "clusters"))
        c = result.agg(F.countDistinct("cluster").alias("n"), F.count(F.lit(1)).alias("docs")).first()
        report["clusters"] = int(c["n"])
        report["documents_in_clusters"] = int(c["docs"])
        report["propagation_rounds"] = rounds
        timings["clusters"] = time.perf_counter() - t0

    report["seconds"] = {s: round(v, 3) for s, v in timings.items()}
    for df in persisted:
        df.unpersist()
    # report.json via the driver's file system when OUT is local; on a
    # cluster file system, as a one-line JSON dataset.
    if "://" in out and not out.startswith("file://"):
        spark.createDataFrame([(json.dumps(report),)], "value string").coalesce(1) \
            .write.mode("overwrite").text(os.path.join(out, "report"))
    else:
        path = out[len("file://"):] if out.startswith("file://") else out
        with open(os.path.join(path, "report.json"), "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return report


def session(master: str | None, driver_memory: str, partitions: int | None):
    """A SparkSession: spark-submit's when there is one, else local mode."""
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("simdb-spark")
    if master:
        b = b.master(master)
    elif not os.environ.get("SPARK_ENV_LOADED"):
        b = b.master("local[*]")
    b = b.config("spark.driver.memory", driver_memory).config("spark.ui.enabled", "false")
    if partitions:
        b = b.config("spark.sql.shuffle.partitions", str(partitions))
    return b.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", help="a `simdb export --parquet` directory (or any Parquet with "
                   "id, fingerprint, ord and optionally sketch, priority)")
    p.add_argument("out", help="output directory (must not exist)")
    p.add_argument("--k", type=int, default=3, help="Hamming distance (0..11, default 3)")
    p.add_argument("--design", default="card",
                   help="card (4 blocks, 4 tables), manku (5 blocks choose 2, 10 tables) or "
                        "B:m (exact for k <= B - m); default card")
    p.add_argument("--min-similarity", type=float, default=None,
                   help="sketch similarity that confirms a pair (0..1; default: the store's, "
                        "as the export's metadata states it, else the default of its recipe)")
    p.add_argument("--no-clusters", action="store_true", help="pairs only")
    p.add_argument("--copies", choices=["groups", "pairs"], default="groups",
                   help="documents stored more than once (the same fingerprint, sketch and "
                        "length): groups (default) writes each set once to OUT/copies/ and "
                        "pairs name its first id; pairs writes every pair of them (n(n-1)/2 "
                        "for a text stored n times), as simdb pairs --copies")
    p.add_argument("--partial", action="store_true",
                   help="read an export directory without _SUCCESS, or that differs from the "
                        "parts _SUCCESS lists (as simdb import --partial)")
    p.add_argument("--decisions", help="a decision log (simdb decisions --json) the clusters "
                   "obey; default: the export's _decisions.jsonl, if any")
    p.add_argument("--stats", action="store_true",
                   help="also count the candidate pairs the tables produce (one more pass)")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--driver-memory", default="4g", help="local mode's memory (default 4g)")
    p.add_argument("--partitions", type=int, help="spark.sql.shuffle.partitions")
    a = p.parse_args(argv)
    try:
        Design.parse(a.design).check(a.k)
    except ValueError as e:
        print(f"simdb-spark: {e}", file=sys.stderr)
        return 2
    if os.path.exists(a.out):
        print(f"simdb-spark: {a.out}: already exists", file=sys.stderr)
        return 2
    problems = check_export(a.export, a.partial)
    if problems:
        print(f"simdb-spark: {a.export}: not the finished export: {'; '.join(problems)} "
              "(copy it again, or run with --partial)", file=sys.stderr)
        return 2
    spark = session(a.master, a.driver_memory, a.partitions)
    spark.sparkContext.setLogLevel("WARN")
    try:
        rep = run(spark, a.export, a.out, a.k, a.design, a.min_similarity,
                  clusters=not a.no_clusters, stats=a.stats, partial=a.partial, copies=a.copies,
                  decisions=a.decisions)
    finally:
        spark.stop()
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
