"""Corpus-wide near-duplicate pairs and clusters of a `simdb export --parquet`
on Spark, with no Python UDFs: every step is a Spark SQL expression, a
shuffle or a join, so it runs at the JVM's speed on a real cluster.

    python tools/spark/simdb_spark.py EXPORT/ OUT/ [--k 3] [--design card|manku|B:m]
    spark-submit tools/spark/simdb_spark.py EXPORT/ OUT/ ...

The method (the README's "Beyond one machine" has the whole story):

0. Copies. Documents of one fingerprint, sketch and length (a text stored
   under several ids) are one group, named by its smallest ord; every rule
   below treats them alike, so the tables, the join and the verification
   run over one row per group: n copies of one text cost one row, not
   n(n-1)/2 pairs.
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
3. Verification. The 32-byte sketches are read as four longs; two bins
   agree when both of their bits do, which is
   `32 - bit_count((x | x >> 1) & 0x5555555555555555)` per long of
   x = a ^ b; the estimate is `clamp((matches / 128 - 1/4) / (3/4), 0, 1)`
   in doubles, as `Sketch::similarity`. A pair is kept when its
   similarity is at least --min-similarity (by default the store's threshold,
   which the export's key-value metadata states), or when either document
   has no sketch (then unconfirmed, similarity null), or when the shorter
   text is contained in the longer, whichever came first: similarity at
   least 0.5 and the estimated containment `J (1 + long/short) / (1 + J)`
   (the `length` column) at least 0.75, or the threshold if higher: simdb's
   rule. A pair whose estimate is at least 0.33 and under the threshold,
   when both documents have a fine sketch (the export's `fine` column, 96
   bytes: twelve more longs), is estimated again over both sketches, 512
   bins, and its containment floor is then 0.45 (simdb's
   `fingerprint::fine`, `db::REFINED_CONTAINMENT_FLOOR`).
4. Clusters, simdb's anchored rule (simdb's docs/workflows.md, "Clusters").
   The connected components of the kept pairs (min-label propagation with
   pointer jumping: each document's label starts as its ord, takes the
   smallest label of its neighbours, then the label of its label, until
   nothing changes) bound where a cluster can reach. Each component's
   documents and pairs are then grouped on one worker, which places its
   documents in ord order as a simdb write does: a document joins the
   cluster, among those of its confirmed earlier near-copies (the 16
   nearest, as simdb's check lists them), whose representative confirms
   it best (highest similarity, fewest bits, oldest cluster: within k, by
   similarity, or by containment of the shorter in the longer, whichever
   came first); if it outranks the representative under the store's keep
   policy (the export's metadata), it takes over and the members it does
   not confirm leave. A cluster's id is its founder's ord (the smallest ord left when
   its founder leaves). This step is Python on the workers (the rule is
   sequential within a component): each cluster's representative is kept
   as it changes, so a join costs its near-copies, not the cluster's size;
   only a take-over re-checks the members. The worker gets the groups'
   pairs, not the documents': a document's 16 nearest confirmed earlier
   near-copies are among the 16 smallest ids placed so far of its own group
   and of each neighbouring group, so a group of n copies costs about 16n.
   simdb's clusters equal these
   for a store ingested with `-k` at the job's k (exact checks, no
   confidence-ranked probing), without deletes.

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
import bisect
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass

DESIGNS = {"card": (4, 1), "manku": (5, 2)}
MAX_K = 11
SKETCH_BINS = 128
# The low bit of every 2-bit bin of a 64-bit word.
LOW_BITS = 0x5555555555555555
DEFAULT_MIN_SIMILARITY = 0.6
# simdb's containment rule (db::MIN_CONTAINMENT, db::CONTAINMENT_FLOOR).
MIN_CONTAINMENT = 0.75
CONTAINMENT_FLOOR = 0.5
# The fine sketch (fingerprint::fine): 384 more bins, twelve longs; a pair
# whose estimate is at least REFINE_BELOW and under the threshold is
# estimated over 512 bins, with the floor REFINED_CONTAINMENT_FLOOR.
FINE_WORDS = 12
REFINE_BELOW = 0.33
REFINED_CONTAINMENT_FLOOR = 0.45


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
        if not 0 <= k <= MAX_K:
            raise ValueError(f"k {k} is not between 0 and {MAX_K}")
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


def block(F, fp, shift: int, width: int):
    """Block (shift, width) of the long column fp, as a non-negative long."""
    return F.shiftrightunsigned(fp, shift).bitwiseAND(F.lit((1 << width) - 1))


def sketch_words(F, sketch, n: int = 4):
    """The sketch (32 bytes, or the fine sketch's 96 with n = 12) as n
    longs (null when the sketch is)."""
    return [
        F.conv(F.hex(F.substring(sketch, 1 + 8 * i, 8)), 16, -10).cast("long") for i in range(n)
    ]


def similarity(F, a: list, b: list):
    """`Sketch::similarity` of two sketches given as four longs each (or,
    given the sketch's and the fine sketch's sixteen,
    `fingerprint::refined_similarity`: the bins of both)."""
    differ = None
    for x, y in zip(a, b):
        w = x.bitwiseXOR(y)
        d = F.bit_count(w.bitwiseOR(F.shiftright(w, 1)).bitwiseAND(F.lit(LOW_BITS)))
        differ = d if differ is None else differ + d
    bins = 32 * len(a)
    matches = (F.lit(bins) - differ).cast("double")
    p = matches / F.lit(float(bins))
    est = (p - F.lit(0.25)) / F.lit(0.75)
    # greatest and least skip nulls: a missing sketch must stay null.
    return F.when(est.isNotNull(), F.greatest(F.lit(0.0), F.least(F.lit(1.0), est)))


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


def confirmed(sim, later_len: int, earlier_len: int, min_similarity: float,
              refined: bool = False) -> bool:
    """simdb's confirmation of a pair within k, the later document of length
    `later_len`: unconfirmed (no sketch), by similarity, or by containment
    of the shorter in the longer, whichever came first (the same arithmetic
    as the SQL of `run`); `refined`: the fine sketches refined `sim`."""
    if sim is None or sim >= min_similarity:
        return True
    short, long = min(later_len, earlier_len), max(later_len, earlier_len)
    floor = REFINED_CONTAINMENT_FLOOR if refined else CONTAINMENT_FLOOR
    if sim < floor or short <= 0:
        return False
    c = min(1.0, max(0.0, sim * (1.0 + long / short) / (1.0 + sim)))
    return c >= max(MIN_CONTAINMENT, min_similarity)


def standing_decisions(log) -> tuple[dict, dict]:
    """What stands at the end of a decision log (`simdb decisions --json`
    entries, oldest first: each `not_a_copy` decides a pair, each `keep`
    keeps a document (a document kept again stands by its latest), each
    `undo` takes back the one it names): (id -> the set of ids it is not a
    copy of, both ways; kept id -> its decision's sequence)."""
    decided, out, kept, keeps = {}, {}, {}, {}
    for d in log:
        if d["kind"] == "not_a_copy":
            decided[d["seq"]] = (d["a"], d["b"])
            out.setdefault(d["a"], set()).add(d["b"])
            out.setdefault(d["b"], set()).add(d["a"])
        elif d["kind"] == "keep":
            keeps[d["seq"]] = d["a"]
            kept[d["a"]] = d["seq"]
        elif d["kind"] == "undo":
            if d["undoes"] in decided:
                a, b = decided.pop(d["undoes"])
                out[a].discard(b)
                out[b].discard(a)
            elif kept.get(keeps.get(d["undoes"])) == d["undoes"]:
                del kept[keeps[d["undoes"]]]
            else:
                raise ValueError(f"decision {d['seq']} undoes {d['undoes']}, which is neither a "
                                 "\"not a copy\" nor a standing \"keep\" before it")
        else:
            raise ValueError(f"decision {d.get('seq')}: unknown kind {d['kind']!r}")
    return {k: v for k, v in out.items() if v}, kept


def standing_vetoes(log) -> dict:
    """The "not a copy" pairs of `standing_decisions`."""
    return standing_decisions(log)[0]


def read_decisions(path: str) -> tuple[dict, dict]:
    """`standing_decisions` of a decision log file (`simdb decisions
    --json`, or an export's _decisions.jsonl)."""
    with open(path, encoding="utf-8") as f:
        return standing_decisions(json.loads(line) for line in f if line.strip())


def anchored_clusters(items, keep: str, min_similarity: float, work: list | None = None,
                      vetoes: dict | None = None, kept: dict | None = None):
    """simdb's anchored clusters of one component: `items` are ("d", (ord,
    id, fp, priority, length, sketch words, group)) and ("p", (x, y,
    distance, similarity, refined)) for every pair of groups within k, x < y (a
    group is the documents of one fingerprint, sketch and length, named by
    its smallest ord: any two of its documents are a pair at distance 0
    with similarity 1, or none without sketches, and are not listed);
    yields (cluster, size, representative, id, rank, distance) rows.
    `work[0]`, if given, counts the candidates, ranks and confirmations
    computed (the placement's cost, for the tests). `vetoes` (id -> the
    ids it was decided not to be a copy of, `standing_vetoes`) are obeyed
    as simdb obeys them: a document does not join a representative it is
    vetoed with, and one that takes over sends away the members vetoed
    with it. `kept` (id -> its "keep" decision's sequence,
    `standing_decisions`) rank before every other document, the latest
    decision first, as simdb ranks them."""
    vetoes = vetoes or {}
    kept_ids = kept or {}
    docs, within, adj = {}, {}, {}
    for kind, v in items:
        if kind == "d":
            docs[v[0]] = v
        else:
            within[(v[0], v[1])] = (v[3], v[2], v[4])
            adj.setdefault(v[0], []).append((v[1], v[3], v[2], v[4]))
            adj.setdefault(v[1], []).append((v[0], v[3], v[2], v[4]))
    glen, gsim = {}, {}
    for v in docs.values():
        glen[v[6]] = v[4]
        gsim[v[6]] = None if v[5][0] is None else 1.0
    ord_of = {v[1]: v[0] for v in docs.values()} if vetoes else {}

    def vetoed(a, b):
        return docs[b][1] in vetoes.get(docs[a][1], ())

    def vetoed_members(d, ms):
        """The members of `ms` vetoed with `d` (read from d's pairs)."""
        return {ord_of[x] for x in vetoes.get(docs[d][1], ()) if ord_of.get(x) in ms}

    def tally(n=1):
        if work is not None:
            work[0] += n

    def rank(o):
        tally()
        _, i, _, p, length, _, _ = docs[o]
        if i in kept_ids:
            return (0, (-kept_ids[i], o))
        if keep == "priority":
            return (1, ((0, -p) if p is not None else (1, 0.0), o))
        if keep == "longest":
            return (1, (-length, o))
        if keep == "newest":
            return (1, (-o, o))
        return (1, (0, o))

    def pair(m, r):
        """(similarity, distance, refined) of two documents within k, or
        None."""
        gm, gr = docs[m][6], docs[r][6]
        if gm == gr:
            return (gsim[gm], 0, False)
        return within.get((min(gm, gr), max(gm, gr)))

    def anchored(m, rep):
        """(similarity, distance) when member m is confirmed against rep:
        within k, by similarity, or by containment of the shorter of the
        two in the longer (whichever came first)."""
        tally()
        p = pair(m, rep)
        if p is None or not confirmed(p[0], docs[m][4], docs[rep][4], min_similarity, p[2]):
            return None
        return p[:2]

    # The 16 smallest ids (with their ords) of each group's documents placed
    # so far: a document's 16 nearest confirmed earlier near-copies (by
    # distance, then id) are among those of its own group (distance 0) and
    # of the neighbouring groups whose pair confirms it as the later one.
    # So a group of n copies costs n times 16, not n(n-1)/2 pairs.
    seen: dict = {}

    def nearest(d):
        g, ld = docs[d][6], docs[d][4]
        cands = [(0, i, o) for i, o in seen.get(g, ())]
        for h, sim, dist, refined in adj.get(g, ()):
            if h in seen and confirmed(sim, ld, glen[h], min_similarity, refined):
                cands.extend((dist, i, o) for i, o in seen[h])
        tally(len(cands))
        cands.sort()
        return [o for _, _, o in cands[:16]]

    # Each cluster's members (a set) and its representative, kept as they
    # change: a join costs its near-copies, not the cluster's size (only a
    # take-over re-checks the members, as a simdb write does).
    cluster_of: dict = {}
    members: dict = {}
    rep_of: dict = {}
    for d in sorted(docs):
        near = nearest(d)
        s16 = seen.setdefault(docs[d][6], [])
        bisect.insort(s16, (docs[d][1], d))
        del s16[16:]
        best = None
        for n in near:
            cid = cluster_of.get(n)
            rep = n if cid is None else rep_of[cid]
            cid = n if cid is None else cid
            m = anchored(d, rep)
            if m is None or vetoed(d, rep):
                continue
            key = (-(m[0] if m[0] is not None else -1.0), m[1], cid)
            if best is None or key < best[0]:
                best = (key, cid, rep)
        if best is None:
            continue
        _, cid, rep = best
        ms = members.setdefault(cid, {rep})
        rep_of.setdefault(cid, rep)
        cluster_of[rep] = cid
        ms.add(d)
        cluster_of[d] = cid
        same = docs[d][6] == docs[rep][6]
        away = vetoed_members(d, ms) if vetoes and rank(d) < rank(rep) else set()
        if rank(d) < rank(rep) and (not same or away):
            stay = {m for m in ms if m not in away and (m == d or same or anchored(m, d) is not None)}
            gone = ms - stay
            for g in gone:
                cluster_of.pop(g, None)
            del members[cid]
            del rep_of[cid]
            if len(stay) >= 2:
                new = min(stay) if cid in gone else cid
                for m in stay:
                    cluster_of[m] = new
                members[new] = stay
                rep_of[new] = d
            else:
                for m in stay:
                    cluster_of.pop(m, None)
        elif rank(d) < rank(rep_of[cid]):
            rep_of[cid] = d
    for cid, ms in members.items():
        ms = sorted(ms, key=rank)
        rep = docs[ms[0]]
        for i, m in enumerate(ms):
            bits = bin((docs[m][2] ^ rep[2]) & 0xFFFFFFFFFFFFFFFF).count("1")
            yield (cid, len(ms), rep[1], docs[m][1], i, bits)


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
    # Exports of stores before format 6 name no policy: they ranked by priority.
    out["keep_policy"] = kv.get(b"simdb.keep_policy", b"priority").decode()
    return out


def run(spark, export: str, out: str, k: int = 3, design: str = "card",
        min_similarity: float | None = None, clusters: bool = True,
        stats: bool = False, partial: bool = False, copies: str = "groups",
        decisions: str | None = None) -> dict:
    """Runs the job; returns the report (also written to OUT/report.json).
    Without min_similarity, the threshold the export states (the store's),
    else simdb's default. An export directory must be what its `_SUCCESS`
    lists (`check_export`), unless `partial`. The clusters obey the
    decision log `decisions` (`simdb decisions --json`), else the export's
    own (its _decisions.jsonl), if any."""
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
    source = "option"
    if min_similarity is None:
        min_similarity, source = ((meta["min_similarity"], "export") if "min_similarity" in meta
                                  else (DEFAULT_MIN_SIMILARITY, "default"))
    if not 0.0 <= min_similarity <= 1.0:
        raise ValueError(f"min_similarity {min_similarity} is not between 0 and 1")
    timings: dict[str, float] = {}
    report: dict = {"k": k, "design": f"{d.blocks}:{d.choose}", "tables": len(d.tables()),
                    "key_bits": list(d.key_bits()), "min_similarity": min_similarity,
                    "min_similarity_from": source, "recipe": meta.get("recipe")}
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
    sk = F.col("sketch") if "sketch" in has else F.lit(None).cast("binary")
    pr = F.col("priority") if "priority" in has else F.lit(None).cast("double")
    ln = F.col("length") if "length" in has else F.lit(0).cast("long")
    words = sketch_words(F, sk)
    # Exports before format 14 have no fine sketches: no pair is refined.
    fn = F.col("fine") if "fine" in has else F.lit(None).cast("binary")
    fine = sketch_words(F, fn, FINE_WORDS)
    docs = raw.select(
        F.col("ord").cast("long").alias("ord"),
        F.col("id").alias("id"),
        F.col("fingerprint").cast("long").alias("fp"),
        pr.alias("priority"),
        ln.cast("long").alias("length"),
        *[w.alias(f"s{i}") for i, w in enumerate(words)],
        *[w.alias(f"f{i}") for i, w in enumerate(fine)],
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
    w = Window.partitionBy("fp", "length", "s0", "s1", "s2", "s3",
                           *[f"f{i}" for i in range(FINE_WORDS)])
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

    # Verification by the sketches, once per pair of groups.
    def side(c):
        return groups.select(F.col("g").alias(c), F.col("length").alias(f"l{c}"),
                             F.col("gmax").alias(f"m{c}"), F.col("gfirst").alias(f"f{c}"),
                             F.col("gfirst_ord").alias(f"o{c}"),
                             *[F.col(f"s{i}").alias(f"{c}{i}") for i in range(4)],
                             *[F.col(f"f{i}").alias(f"{c}f{i}") for i in range(FINE_WORDS)])
    coarse = similarity(F, [F.col(f"x{i}") for i in range(4)], [F.col(f"y{i}") for i in range(4)])
    both = [F.col(f"x{i}") for i in range(4)] + [F.col(f"xf{i}") for i in range(FINE_WORDS)], \
        [F.col(f"y{i}") for i in range(4)] + [F.col(f"yf{i}") for i in range(FINE_WORDS)]
    refine = (coarse >= REFINE_BELOW) & (coarse < min_similarity) \
        & F.col("xf0").isNotNull() & F.col("yf0").isNotNull()
    gpairs = within.join(side("x"), "x").join(side("y"), "y").select(
        "x", "y", "distance", "lx", "ly", "mx", "fx", "fy", "ox", "oy",
        F.when(refine, similarity(F, *both)).otherwise(coarse).alias("similarity"),
        F.coalesce(refine, F.lit(False)).alias("refined"),
    )
    gpairs = checkpoint(gpairs)
    report["group_pairs_within_k"] = gpairs.count()
    j = F.col("similarity")

    def containment(later_len, earlier_len):
        """simdb's MIN_CONTAINMENT and CONTAINMENT_FLOOR: below the
        threshold, the shorter document's estimated share inside the longer,
        whichever came first; null when that does not confirm the pair."""
        short = F.least(later_len, earlier_len).cast("double")
        long = F.greatest(later_len, earlier_len).cast("double")
        c = F.least(F.lit(1.0), F.greatest(F.lit(0.0), j * (F.lit(1.0) + long / short) / (F.lit(1.0) + j)))
        floor = F.when(F.col("refined"), F.lit(REFINED_CONTAINMENT_FLOOR)) \
            .otherwise(F.lit(CONTAINMENT_FLOOR))
        ok = ((j < min_similarity) & (j >= floor) & (short > 0)
              & (c >= max(MIN_CONTAINMENT, min_similarity)))
        return F.when(ok, c)

    def kept(c):
        return j.isNull() | (j >= min_similarity) | c.isNotNull()

    def decided(x_later):
        """A pair of groups' containment for the member pair in which x's
        member is the later (`x_later`) or y's is."""
        return F.when(x_later, containment(F.col("lx"), F.col("ly"))) \
            .otherwise(containment(F.col("ly"), F.col("lx")))

    if copies == "pairs":
        # Every pair of documents: each pair of groups expanded into its
        # members' pairs (the later of two decides containment), and the
        # pairs inside each group (distance 0, similarity 1: n(n-1)/2 for a
        # text stored n times, as simdb pairs --copies pairs).
        mx = docs.select(F.col("g").alias("x"), F.col("ord").alias("a_ord"), F.col("id").alias("ia"))
        my = docs.select(F.col("g").alias("y"), F.col("ord").alias("b_ord"), F.col("id").alias("ib"))
        cross = gpairs.join(mx, "x").join(my, "y").select(
            "ia", "ib", "distance", "similarity",
            decided(F.col("a_ord") > F.col("b_ord")).alias("containment"))
        l2, r2 = docs.alias("l"), docs.alias("r")
        inside = l2.join(r2, (F.col("l.g") == F.col("r.g")) & (F.col("l.ord") < F.col("r.ord"))) \
            .select(F.col("l.id").alias("ia"), F.col("r.id").alias("ib"), F.lit(0).alias("distance"),
                    similarity(F, [F.col(f"l.s{i}") for i in range(4)],
                               [F.col(f"r.s{i}") for i in range(4)]).alias("similarity"),
                    F.lit(None).cast("double").alias("containment"))
        scored = checkpoint(cross.unionByName(inside))
    else:
        # Each group once (OUT/copies), and each pair of groups once, named
        # and decided by the groups' first ids (as simdb pairs' default).
        copies_df = docs.where(F.col("gsize") > 1).groupBy("g").agg(
            F.sort_array(F.collect_list("id")).alias("copies"),
            F.first(F.when(F.col("s0").isNotNull(), F.lit(1.0))).alias("similarity"),
        ).select("copies", F.lit(0).alias("distance"), "similarity")
        copies_df = checkpoint(copies_df)
        cg = copies_df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.size("copies")).alias("docs")).first()
        report["copy_groups"] = int(cg["n"])
        report["in_copy_groups"] = int(cg["docs"] or 0)
        copies_df.write.mode("errorifexists").parquet(os.path.join(out, "copies"))
        scored = gpairs.select(F.col("fx").alias("ia"), F.col("fy").alias("ib"), "distance",
                               "similarity", decided(F.col("ox") > F.col("oy")).alias("containment"))
    below = ~kept(F.col("containment"))
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
        # The components of the groups: a pair of groups is an edge when it
        # confirms some member pair in its order (x's member earlier, which
        # any pair has, or y's, when y has a member before x's last); a
        # group of copies is a component of its own.
        edge = kept(containment(F.col("ly"), F.col("lx"))) \
            | ((F.col("y") < F.col("mx")) & kept(containment(F.col("lx"), F.col("ly"))))
        edges = gpairs.where(edge).select(F.col("x").alias("u"), F.col("y").alias("v")).unionByName(
            groups.where(F.col("gsize") > 1).select(F.col("g").alias("u"), F.col("g").alias("v")))
        labels, rounds = components(F, edges, checkpoint)
        # The workers run anchored_clusters from this file.
        spark.sparkContext.addPyFile(os.path.abspath(__file__))
        keep = meta.get("keep_policy", "first")
        report["keep_policy"] = keep
        if decisions is None and os.path.isdir(export) \
                and os.path.exists(os.path.join(export, "_decisions.jsonl")):
            decisions = os.path.join(export, "_decisions.jsonl")
        vetoes, kept_ids = read_decisions(decisions) if decisions else ({}, {})
        report["not_a_copy_pairs"] = sum(len(v) for v in vetoes.values()) // 2
        report["kept"] = len(kept_ids)
        # Each component's documents and pairs of groups, on one worker.
        lab = labels.select(F.col("v").alias("g"), "label")
        doc_rows = lab.join(docs, "g").rdd.map(
            lambda r: (r["label"], ("d", (r["ord"], r["id"], r["fp"], r["priority"], r["length"],
                                          (r["s0"], r["s1"], r["s2"], r["s3"]), r["g"]))))
        # Every pair of groups within k of a component, confirmed or not (a
        # member is checked against a representative it may not be paired
        # with the other way round).
        pair_rows = gpairs.select("x", "y", "distance", "similarity", "refined") \
            .join(lab.withColumnRenamed("g", "x"), "x").rdd.map(
            lambda r: (r["label"], ("p", (r["x"], r["y"], r["distance"], r["similarity"],
                                          r["refined"]))))
        placed = doc_rows.union(pair_rows).groupByKey().flatMap(
            lambda kv: anchored_clusters(kv[1], keep, min_similarity, vetoes=vetoes,
                                         kept=kept_ids))
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
                        "as the export's metadata states it, else 0.6, simdb's)")
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
