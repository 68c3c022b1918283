"""Stage functions of the engines' placement, shared by the Ray driver
(:func:`simdb.ray.dedup`) and the Spark job (``tools/spark/simdb_dedup.py``):
each takes and returns Arrow tables, so an engine runs it on its workers
over the groups of a shuffle and the driver sees only counts.

The placement of a run's clusters needs no store of the run. Every cluster
lies within one connected component of the graph whose edges are the
near-copy lists of the checks (a document joins the cluster of one of its
near copies; a take-over re-checks only the cluster's members), so:

1. :func:`vertices` and :func:`edges` turn the checks' rows into the
   graph: each document with its record (the bytes of the store's codec)
   and its near-copy list, and an edge per near copy, between ords;
2. the components, by large-star / small-star (Kiveris et al., "Connected
   Components in MapReduce and Beyond", SoCC 2014): :func:`large_star`
   and :func:`small_star` are one step each over the edges of a group of
   nodes (each edge given in both directions, grouped by ``u``); the
   steps alternate until neither changes an edge, and :func:`labels`
   names each node's component by its smallest ord;
3. :func:`label_vertices` joins each vertex with its label, and
   :func:`place_partition` places the components of one group in a
   scratch store of the worker's own (``simdb.place_components``: the
   store's rule, the code ingest uses, with keep policies and decisions).

No rule of the placement is written here: it is the library's.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

#: The columns of a cluster row (what ``clusters/`` holds).
CLUSTER_COLUMNS = ("cluster", "size", "representative", "id", "rank", "distance")

_MIX = 0x9E3779B97F4A7C15


def bucket(values: Any, buckets: int) -> Any:
    """The bucket (0..buckets) of each uint64 ``values`` (a numpy array):
    a multiplicative hash's high bits, so consecutive ords spread."""
    import numpy as np

    v = np.asarray(values, dtype=np.uint64)
    with np.errstate(over="ignore"):
        mixed = (v * np.uint64(_MIX)) >> np.uint64(32)
    return (mixed % np.uint64(max(1, buckets))).astype(np.int64)


def _schema_edges() -> Any:
    import pyarrow as pa

    return pa.schema([("u", pa.uint64()), ("v", pa.uint64()), ("changed", pa.int64())])


def _edges_table(u: Any, v: Any, changed: Any = None) -> "Any":
    import numpy as np
    import pyarrow as pa

    u = np.asarray(u, dtype=np.uint64)
    v = np.asarray(v, dtype=np.uint64)
    if changed is None:
        changed = np.zeros(len(u), dtype=np.int64)
    return pa.table(
        {"u": pa.array(u, pa.uint64()), "v": pa.array(v, pa.uint64()), "changed": pa.array(changed, pa.int64())},
        schema=_schema_edges(),
    )


def edges(checks: Any) -> Any:
    """The graph's edges of stage 3's rows (``ord``, ``near_ord``): one
    row (u, v) per near copy, u the document's ord, v its near copy's."""
    import numpy as np
    import pyarrow.compute as pc

    lens = pc.list_value_length(checks.column("near_ord")).to_numpy(zero_copy_only=False)
    u = np.repeat(checks.column("ord").to_numpy(zero_copy_only=False).astype(np.uint64), lens)
    v = pc.list_flatten(checks.column("near_ord")).to_numpy(zero_copy_only=False).astype(np.uint64)
    return _edges_table(u, v)


def both_ways(t: Any, buckets: int) -> Any:
    """Each edge of ``t`` in both directions, with the ``bucket`` of its
    ``u`` (the key the next step's groups are made by)."""
    import numpy as np
    import pyarrow as pa

    u = t.column("u").to_numpy(zero_copy_only=False)
    v = t.column("v").to_numpy(zero_copy_only=False)
    out = _edges_table(np.concatenate([u, v]), np.concatenate([v, u]))
    return out.append_column("bucket", pa.array(bucket(out.column("u").to_numpy(), buckets)))


def _adjacency(t: Any) -> tuple[Any, Any, Any, Any]:
    """The distinct edges (u, v), u != v, of ``t``, sorted by (u, v); with
    the start of each u's run and the u's."""
    import numpy as np

    u = t.column("u").to_numpy(zero_copy_only=False).astype(np.uint64)
    v = t.column("v").to_numpy(zero_copy_only=False).astype(np.uint64)
    keep = u != v
    u, v = u[keep], v[keep]
    if len(u) == 0:
        return u, v, np.zeros(0, dtype=np.int64), u
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    distinct = np.ones(len(u), dtype=bool)
    distinct[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    u, v = u[distinct], v[distinct]
    starts = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    return u, v, starts, u[starts]


def large_star(t: Any) -> Any:
    """One large-star step over the edges of a group of nodes (each edge of
    theirs in both directions): every neighbour v > u of a node u is linked
    to the smallest of u and its neighbours, m(u). Returns the new edges
    (u, v) and ``changed`` (1 where an edge moved: m(u) < u)."""
    import numpy as np

    u, v, starts, nodes = _adjacency(t)
    if len(u) == 0:
        return _edges_table(u, v)
    # The neighbours are sorted within each run: its first is the least.
    m = np.minimum(nodes, v[starts])
    per = np.diff(np.append(starts, len(u)))
    m_of = np.repeat(m, per)
    larger = v > u
    changed = (m_of[larger] < u[larger]).astype(np.int64)
    return _edges_table(v[larger], m_of[larger], changed)


def small_star(t: Any) -> Any:
    """One small-star step over the edges of a group of nodes (each edge of
    theirs in both directions): a node u and its neighbours v <= u are all
    linked to the smallest of them. Returns the new edges and ``changed``
    (1 for each edge of a node with two or more smaller neighbours)."""
    import numpy as np

    u, v, _, _ = _adjacency(t)
    small = v < u
    u, v = u[small], v[small]
    if len(u) == 0:
        return _edges_table(u, v)
    starts = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    per = np.diff(np.append(starts, len(u)))
    nodes = u[starts]
    m = v[starts]
    m_of = np.repeat(m, per)
    many = np.repeat(per >= 2, per)
    # v -> m for every smaller neighbour but m itself, and u -> m.
    others = v != m_of
    out_u = np.concatenate([v[others], nodes])
    out_v = np.concatenate([m_of[others], m])
    changed = np.concatenate([many[others].astype(np.int64), np.zeros(len(nodes), dtype=np.int64)])
    return _edges_table(out_u, out_v, changed)


def labels(t: Any) -> Any:
    """Each node of a group of converged edges (each in both directions)
    with its component's label, the smallest ord: columns ``ord`` and
    ``label``."""
    import numpy as np
    import pyarrow as pa

    u, v, starts, nodes = _adjacency(t)
    if len(u) == 0:
        return pa.table({"ord": pa.array([], pa.uint64()), "label": pa.array([], pa.uint64())})
    m = np.minimum(nodes, v[starts])
    return pa.table({"ord": pa.array(nodes, pa.uint64()), "label": pa.array(m, pa.uint64())})


def vertex_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("ord", pa.uint64()),
            ("id", pa.string()),
            ("record", pa.binary()),
            ("near", pa.list_(pa.string())),
            ("label", pa.uint64()),
        ]
    )


def vertices(checks: Any) -> Any:
    """The graph's nodes of stage 3's rows: each checked document with its
    record and near-copy list, and each near copy with its record (``near``
    null: its own list, if any, is its own row). A document named by many
    rows comes many times; :func:`place_partition` takes it once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = checks.num_rows
    lens = pc.list_value_length(checks.column("near")).to_numpy(zero_copy_only=False)
    flat = int(lens.sum()) if n else 0
    ords = pa.concat_arrays(
        [
            checks.column("ord").combine_chunks().cast(pa.uint64()),
            pc.list_flatten(checks.column("near_ord")).combine_chunks().cast(pa.uint64()),
        ]
    )
    ids = pa.concat_arrays(
        [checks.column("id").combine_chunks(), pc.list_flatten(checks.column("near")).combine_chunks()]
    )
    records = pa.concat_arrays(
        [
            checks.column("record").combine_chunks().cast(pa.binary()),
            pc.list_flatten(checks.column("near_record")).combine_chunks().cast(pa.binary()),
        ]
    )
    near = pa.concat_arrays(
        [checks.column("near").combine_chunks(), pa.nulls(flat, pa.list_(pa.string()))]
    )
    return pa.table(
        {
            "ord": ords,
            "id": ids,
            "record": records,
            "near": near,
            "label": pa.nulls(n + flat, pa.uint64()),
        },
        schema=vertex_schema(),
    )


def label_vertices(t: Any, buckets: int) -> Any:
    """Joins a group's vertex rows (``label`` null) with its label rows
    (``ord``, ``label``; the other columns null), by ord: each vertex once
    (its own list's row first), with its label and the ``bucket`` of the
    label (the key of the placement's groups). A vertex without a label
    row is an error: every vertex is in an edge."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if "bucket" in t.column_names:
        t = t.drop_columns(["bucket"])
    is_label = pc.is_null(t.column("id")).to_numpy(zero_copy_only=False)
    lab = t.filter(pa.array(is_label))
    ver = t.filter(pa.array(~is_label))
    label_of = dict(zip(lab.column("ord").to_pylist(), lab.column("label").to_pylist()))
    ver = _distinct_vertices(ver)
    ords = ver.column("ord").to_pylist()
    missing = [o for o in ords if o not in label_of]
    if missing:
        raise ValueError(f"placement: ord {missing[0]} is in no edge (its checks are incomplete)")
    lbl = np.array([label_of[o] for o in ords], dtype=np.uint64)
    ver = ver.set_column(ver.schema.get_field_index("label"), "label", pa.array(lbl, pa.uint64()))
    return ver.append_column("bucket", pa.array(bucket(lbl, buckets)))


def _distinct_vertices(t: Any) -> Any:
    """Each ord of vertex rows once: its row with a near-copy list, if any."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if t.num_rows == 0:
        return t
    ords = t.column("ord").to_numpy(zero_copy_only=False).astype(np.uint64)
    listless = pc.is_null(t.column("near")).to_numpy(zero_copy_only=False).astype(np.int8)
    order = np.lexsort((listless, ords))
    ords = ords[order]
    first = np.concatenate([[True], ords[1:] != ords[:-1]])
    return t.take(pa.array(order[first]))


def place_partition(
    t: Any,
    *,
    recipe: Optional[dict[str, Any]] = None,
    keep: Optional[str] = None,
    decisions: Optional[str] = None,
    written_at: Optional[int] = None,
    scratch: Optional[str] = None,
) -> Any:
    """The clusters of the components in ``t`` (labelled vertex rows of
    whole components, any order, a vertex maybe more than once), placed
    in a scratch store made under ``scratch`` (default: the system's
    temporary directory) and removed afterwards: the rows of
    :data:`CLUSTER_COLUMNS`, each cluster's together in rank order.
    ``written_at``: the run's store's write time, which every record is
    taken as written at (see ``simdb.place_components``)."""
    import pyarrow as pa

    from ._simdb import place_components

    t = _distinct_vertices(t.select(["ord", "id", "record", "near"]))
    has = t.filter(t.column("near").is_valid())
    base = tempfile.mkdtemp(prefix="simdb-place-", dir=scratch)
    try:
        got = place_components(
            os.path.join(base, "store"),
            t.column("id").to_pylist(),
            t.column("record").to_pylist(),
            has.column("ord").to_pylist(),
            has.column("near").to_pylist(),
            recipe=recipe,
            keep=keep,
            decisions=decisions,
            written_at=written_at,
        )
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return pa.table(
        {
            "cluster": pa.array(got["cluster"], pa.int64()),
            "size": pa.array(got["size"], pa.int64()),
            "representative": pa.array(got["representative"], pa.string()),
            "id": pa.array(got["id"], pa.string()),
            "rank": pa.array(got["rank"], pa.int32()),
            "distance": pa.array(got["distance"], pa.int32()),
        }
    )


def split(t: Any, column: str, buckets: int) -> list:
    """``t``'s rows in ``buckets`` tables by the bucket of ``column``'s
    values (uint64), each table with ``t``'s schema (empty ones too)."""
    if t.num_rows == 0:
        return [t] * buckets
    return split_by(t, t.column(column).to_numpy(zero_copy_only=False), buckets)


def concat(tables: Any) -> Any:
    """The tables as one (their schemas are one)."""
    import pyarrow as pa

    tables = list(tables)
    full = [x for x in tables if x.num_rows]
    if not full:
        return tables[0]
    return pa.concat_tables(full) if len(full) > 1 else full[0]


def label_rows(t: Any) -> Any:
    """:func:`labels`' rows (ord, label) as vertex rows with no document
    (``id`` null), to be joined by :func:`label_vertices`."""
    import pyarrow as pa

    n = t.num_rows
    return pa.table(
        {
            "ord": t.column("ord").cast(pa.uint64()),
            "id": pa.nulls(n, pa.string()),
            "record": pa.nulls(n, pa.binary()),
            "near": pa.nulls(n, pa.list_(pa.string())),
            "label": t.column("label").cast(pa.uint64()),
        },
        schema=vertex_schema(),
    )


def components_local(e: Any) -> Any:
    """The components of the edges ``e`` on one machine, by the same steps
    (for tests and small runs): (ord, label) rows."""
    import pyarrow as pa

    while True:
        changed = 0
        for step in (large_star, small_star):
            e = step(both_ways(e, 1))
            changed += int(pa.compute.sum(e.column("changed")).as_py() or 0)
        if changed == 0:
            return labels(both_ways(e, 1))


# ------------------------------------------------------- the check as a join
#
# The duplicate check with no store of the run (``simdb::db::engine::check``):
# the stages an engine runs on its workers, each a function of the tables a
# shuffle routed to one share, returning its output split by the next
# stage's bucket. :func:`check_by_join` runs them one after the other in
# this process; ``simdb.ray.dedup(..., index="join")`` runs each share as a
# Ray task. Every rule is the library's: these functions only move columns.
#
# 0. :func:`doc_records`: a block of fingerprint rows as documents (ord,
#    id, fingerprint, record), split by fingerprint and by ord;
# 1. by fingerprint, :func:`stage_entries`: the index entries, by key;
#    by ord, :func:`stage_probes`: the probes of the new documents, by key;
# 2. by key, :func:`stage_keys`: each key's probes matched with its
#    entries, the matches and the boilerplate parts by ord;
# 3. by ord, :func:`stage_matched`: each match with its probe's record, by
#    fingerprint;
# 4. by fingerprint, :func:`stage_sent`: each probe's earlier documents of
#    the fingerprints it matched (the check's bounds), by ord;
# 5. by ord, :func:`stage_checks`: the checks, as the rows of
#    ``simdb.ray.check_range`` (what the placement takes).


def doc_schema() -> Any:
    """The columns of a document of the join: ``new`` marks one this run
    checks (an earlier night's are only looked at)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("ord", pa.uint64()),
            ("id", pa.string()),
            ("fingerprint", pa.int64()),
            ("record", pa.binary()),
            ("new", pa.bool_()),
        ]
    )


def _signed(values: Any) -> Any:
    """uint64 values (a numpy array) as the int64 of their bits."""
    import numpy as np

    return np.asarray(values, dtype=np.uint64).view(np.int64)


def _unsigned(values: Any) -> Any:
    import numpy as np

    return np.asarray(values, dtype=np.int64).view(np.uint64)


def _seconds(c: Any) -> list:
    """A ``time`` column as Python values ``simdb.document_times`` takes:
    integers (Unix seconds; timestamps and dates converted from their
    unit), strings (RFC 3339), None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = c.type
    if pa.types.is_timestamp(t):
        c = pc.divide(c.cast(pa.timestamp(t.unit, None)).cast(pa.int64()),
                      {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit])
    elif pa.types.is_date32(t):
        c = pc.multiply(c.cast(pa.int32()).cast(pa.int64()), 86_400)
    elif pa.types.is_date64(t):
        c = pc.divide(c.cast(pa.int64()), 1_000)
    elif not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
              or pa.types.is_null(t)):
        raise ValueError(
            f"time: Unix seconds (integers), timestamps, dates or RFC 3339 strings, not {t}"
        )
    return c.to_pylist()


def refuse_other_rule(t: Any, rule: Optional[int], column: str = "rule") -> None:
    """Raises ``ValueError`` when a row of ``t`` (an Arrow table) is
    stamped, in its ``column``, with a rule other than ``rule`` (a digest,
    :func:`simdb.rule`'s; signed on Spark, the same 64 bits): its
    fingerprint, sketch or the constants its pairs follow are not the
    run's. Rows without the column, or with a null in it, are taken as
    made under the run's rule (rows from before rows were stamped)."""
    if rule is None or column not in t.column_names:
        return
    import pyarrow.compute as pc

    mask = 0xFFFF_FFFF_FFFF_FFFF
    stamped = {v & mask for v in pc.unique(t.column(column)).to_pylist() if v is not None}
    other = sorted(stamped - {rule & mask})
    if other:
        raise ValueError(
            f"rows made under another rule (digest {other[0]:016x}; this run's is "
            f"{rule & mask:016x}: its recipe with this build's constants, simdb.rule): "
            "fingerprint them again with the run's recipe, or give the run the recipe "
            "they were made with"
        )


def doc_records(
    t: Any,
    first_ord: int,
    *,
    id: str = "id",
    priority: Optional[str] = "priority",
    time: Optional[str] = "time",
    rule: Optional[int] = None,
) -> tuple[Any, int]:
    """Stage 0: a block of fingerprint rows (``simdb.ray.fingerprint``'s
    columns, an ``id``, and the ``priority`` and ``time`` columns named,
    where the rows have them) as documents of the join: the rows with a
    fingerprint, the ``i``-th row of the block at ord ``first_ord + i``,
    with its record (``simdb.engine_records``). Returns them and the
    number of rows without a fingerprint (not checked, as ingest does).
    Rows stamped with a rule other than ``rule`` (the run's digest) are
    refused (:func:`refuse_other_rule`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._simdb import document_times, engine_records

    if id not in t.column_names or "fingerprint" not in t.column_names:
        raise ValueError(
            f"the rows have no column {id if id not in t.column_names else 'fingerprint'}: "
            "give dedup the output of simdb.ray.fingerprint"
        )
    refuse_other_rule(t, rule)
    n = t.num_rows
    ords = np.arange(first_ord, first_ord + n, dtype=np.uint64)
    has = pc.is_valid(t.column("fingerprint"))
    t = t.filter(has)
    ords = ords[has.to_numpy(zero_copy_only=False)]

    def col(name: Optional[str]) -> list:
        if name is None or name not in t.column_names:
            return [None] * t.num_rows
        return t.column(name).to_pylist()

    pri = col(priority)
    if any(p is not None and not isinstance(p, (int, float)) for p in pri):
        raise ValueError("priority: must be a number column")
    dated = (
        document_times(_seconds(t.column(time).combine_chunks()))
        if time is not None and time in t.column_names
        else [None] * t.num_rows
    )
    fps = _signed(t.column("fingerprint").to_numpy(zero_copy_only=False))
    records = engine_records(
        ords.tolist(),
        fps.tolist(),
        col("sketch"),
        col("fine"),
        col("length"),
        col("weak_bits"),
        col("parts"),
        [None if p is None else float(p) for p in pri],
        dated,
        # Signed on Spark (the bits of the u64), unsigned on Ray.
        content_hashes=[None if h is None else h & 0xFFFF_FFFF_FFFF_FFFF for h in col("content_hash")],
        terms=col("terms"),
    )
    docs = pa.table(
        {
            "ord": pa.array(ords, pa.uint64()),
            "id": pc.cast(t.column(id), pa.string()),
            "fingerprint": pa.array(fps, pa.int64()),
            "record": pa.array(records, pa.binary()),
            "new": pa.array(np.ones(t.num_rows, dtype=bool)),
        },
        schema=doc_schema(),
    )
    return docs, n - t.num_rows


def _lists(t: Any, names: tuple) -> list:
    """The columns ``names`` of ``t`` as Python lists."""
    return [t.column(c).to_pylist() for c in names]


def _arrays(t: Any, schema: Any) -> list:
    """The columns of ``schema`` in ``t`` as numpy arrays of their types
    (what the wheel takes of the many-rowed stages)."""
    import numpy as np

    return [
        np.ascontiguousarray(t.column(f.name).to_numpy(zero_copy_only=False)).astype(
            f.type.to_pandas_dtype(), copy=False
        )
        for f in schema
    ]


def _by_fingerprint(t: Any, buckets: int) -> list:
    return split_by(t, _unsigned(t.column("fingerprint").to_numpy(zero_copy_only=False)), buckets)


def _by_ord(t: Any, buckets: int) -> list:
    return split(t, "ord", buckets)


def _by_key(t: Any, buckets: int) -> list:
    import numpy as np

    fam = t.column("family").to_numpy(zero_copy_only=False).astype(np.uint64)
    val = t.column("value").to_numpy(zero_copy_only=False).astype(np.uint64)
    return split_by(t, val ^ (fam << np.uint64(56)), buckets)


def split_by(t: Any, keys: Any, buckets: int) -> list:
    """``t``'s rows in ``buckets`` tables by the bucket of ``keys`` (one
    uint64 per row), each with ``t``'s schema."""
    import numpy as np

    if t.num_rows == 0:
        return [t] * buckets
    b = bucket(keys, buckets)
    order = np.argsort(b, kind="stable")
    t = t.take(order)
    ends = np.cumsum(np.bincount(b, minlength=buckets))
    starts = np.concatenate([[0], ends[:-1]])
    return [t.slice(int(a), int(e - a)) for a, e in zip(starts, ends)]


def split_docs(docs: Any, buckets: int) -> tuple[list, list]:
    """Stage 0's documents split by fingerprint (all of them) and by ord
    (the new ones: those the run checks)."""
    return _by_fingerprint(docs, buckets), _by_ord(docs.filter(docs.column("new")), buckets)


def split_ids(docs: Any, buckets: int) -> list:
    """The documents' ids (one column, ``id``) split by a hash of the id:
    each id's rows, of every night, meet in one share."""
    return by_id(docs.select(["id"]), buckets)


def by_id(t: Any, buckets: int) -> list:
    """``t``'s rows split by a hash of their ``id`` (CRC-32 of its UTF-8):
    each id's rows, of any table, meet in one share."""
    import zlib

    import numpy as np

    keys = np.array([zlib.crc32(i.encode("utf-8")) for i in t.column("id").to_pylist()], dtype=np.uint64)
    return split_by(t, keys, buckets)


def export_part(
    out: str,
    number: int,
    records: Any,
    clusters: Any,
    *,
    recipe: Any = None,
    keep: Optional[str] = None,
    written_at: Optional[int] = None,
) -> dict:
    """Part ``number`` of a join run's export in ``out``: the documents of
    ``records`` (``id``, ``record``), each in its cluster of ``clusters``
    (the placement's rows: ``id``, ``cluster``; a document not there is
    alone), in id order, by the library's export writer
    (``simdb.export_part``). Returns the part's manifest entry."""
    import pyarrow.compute as pc

    from . import _simdb

    records = records.sort_by("id")
    at = pc.index_in(records.column("id"), value_set=clusters.column("id"))
    cluster = pc.take(clusters.column("cluster"), at)
    return _simdb.export_part(
        out, number, records.column("id").to_pylist(), records.column("record").to_pylist(),
        cluster.to_pylist(), recipe=recipe, keep=keep, written_at=written_at,
    )


def repeated_ids(ids: Any, limit: int = 3) -> tuple[int, list]:
    """How many of one share's ids (all of each id's rows) come more than
    once, and up to ``limit`` of them."""
    import collections

    counts = collections.Counter(ids.column("id").to_pylist())
    twice = sorted(i for i, n in counts.items() if n > 1)
    return len(twice), twice[:limit]


def entry_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("family", pa.uint8()),
            ("value", pa.uint64()),
            ("fingerprint", pa.int64()),
            ("after", pa.uint64()),
            ("until", pa.uint64()),
        ]
    )


def probe_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("family", pa.uint8()),
            ("value", pa.uint64()),
            ("ord", pa.uint64()),
            ("q", pa.int64()),
            ("k", pa.uint32()),
            ("outside", pa.int64()),
            ("ranked", pa.bool_()),
        ]
    )


def _table(got: dict, schema: Any) -> Any:
    import pyarrow as pa

    return pa.table({f.name: pa.array(got[f.name], f.type) for f in schema}, schema=schema)


def stage_entries(docs: Any, buckets: int) -> list:
    """Stage 1 on a share by fingerprint (each fingerprint's documents all
    of them, earlier nights' too): the index entries, split by key."""
    from ._simdb import index_entries

    e = index_entries(*_lists(docs, ("id", "record")))
    return _by_key(_table(e, entry_schema()), buckets)


def stage_probes(checker: Any, docs: Any, buckets: int) -> list:
    """Stage 1 on a share by ord (new documents): each key their checks
    read, with its rule, split by key."""
    p = checker.probes(*_lists(docs, ("id", "record")))
    return _by_key(_table(p, probe_schema()), buckets)


def stage_keys(entries: Any, probes: Any, buckets: int) -> tuple[list, list]:
    """Stage 2 on a share by key (each key's entries and probes): the
    matches (``ord``, ``fingerprint``: a probe with a fingerprint its
    check reads) and the boilerplate parts (``ord``, ``part``), each split
    by ord."""
    from ._simdb import key_matches

    got = key_matches(*_arrays(entries, entry_schema()), *_arrays(probes, probe_schema()))
    matched = _table({"ord": got["matched_ord"], "fingerprint": got["matched_fingerprint"]}, matched_schema())
    boiler = _table({"ord": got["boilerplate_ord"], "part": got["boilerplate_part"]}, boilerplate_schema())
    return _by_ord(matched, buckets), _by_ord(boiler, buckets)


def stage_matched(docs: Any, matched: Any, buckets: int) -> list:
    """Stage 3 on a share by ord: each distinct match (a probe and a
    fingerprint) with the probe's id and record, split by fingerprint."""
    import numpy as np
    import pyarrow as pa

    ords = matched.column("ord").to_numpy(zero_copy_only=False).astype(np.uint64)
    fps = matched.column("fingerprint").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(ords):
        # Each pair once (several keys' shares may match it), by ord: a
        # sort of the two columns, not np.unique(axis=0), whose row
        # compares took most of the stage.
        order = np.lexsort((fps, ords))
        ords, fps = ords[order], fps[order]
        first = np.ones(len(ords), dtype=bool)
        first[1:] = (ords[1:] != ords[:-1]) | (fps[1:] != fps[:-1])
        ords, fps = ords[first], fps[first]
    doc_ords = docs.column("ord").to_numpy(zero_copy_only=False).astype(np.uint64)
    order = np.argsort(doc_ords)
    at = np.searchsorted(doc_ords[order], ords)
    if len(ords) and (at.max() >= len(order) or not np.array_equal(doc_ords[order][at], ords)):
        raise ValueError("the join: a match names an ord that is not among its share's documents")
    rows = docs.take(pa.array(order[at]))
    t = pa.table(
        {"fingerprint": pa.array(fps, pa.int64()), "id": rows.column("id"), "record": rows.column("record")},
        schema=probe_doc_schema(),
    )
    return _by_fingerprint(t, buckets)


def stage_sent(checker: Any, docs: Any, probes: Any, buckets: int) -> list:
    """Stage 4 on a share by fingerprint: each probe's earlier documents
    of the fingerprints it matched, as many as its check can look at
    (``ord``: the probe's; ``id``, ``record``), split by ord."""
    got = checker.fingerprint_docs(
        *_lists(docs, ("id", "record")),
        *_lists(probes, ("id", "record")),
        probes.column("fingerprint").to_pylist(),
    )
    return _by_ord(_table(got, sent_schema()), buckets)


def check_schema() -> Any:
    """The columns of a check row (``simdb.ray.check_range``'s)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("ord", pa.uint64()),
            ("id", pa.string()),
            ("near", pa.list_(pa.string())),
            ("distance", pa.list_(pa.uint32())),
            ("similarity", pa.list_(pa.float64())),
            ("containment", pa.list_(pa.float64())),
            ("record", pa.binary()),
            ("near_ord", pa.list_(pa.uint64())),
            ("near_record", pa.list_(pa.binary())),
        ]
    )


def stage_checks(checker: Any, docs: Any, sent: Any, boilerplate: Any) -> Any:
    """Stage 5 on a share by ord: the checks of the share's new documents
    over what stage 4 sent them, as check rows (those with near copies,
    in ord order); the table's metadata holds ``checked``."""
    import pyarrow as pa

    docs = docs.sort_by("ord")
    got = checker.check(
        *_lists(docs, ("id", "record")),
        *_lists(sent, ("ord", "id", "record")),
        *_lists(boilerplate, ("ord", "part")),
    )
    record_of = dict(zip(docs.column("ord").to_pylist(), docs.column("record").to_pylist()))
    got["record"] = [record_of[o] for o in got["ord"]]
    t = _table(got, check_schema())
    return t.replace_schema_metadata({"checked": str(got["checked"])})


class _Scratch:
    """A ``JoinChecker`` over a scratch directory of its own, removed when
    the ``with`` block ends."""

    def __init__(self, recipe: Any, scratch: Optional[str] = None) -> None:
        self.recipe, self.scratch = recipe, scratch

    def __enter__(self) -> Any:
        from ._simdb import JoinChecker

        self.dir = tempfile.mkdtemp(prefix="simdb-join-", dir=self.scratch)
        self.checker = JoinChecker(os.path.join(self.dir, "checker"), recipe=self.recipe)
        return self.checker

    def __exit__(self, *exc: Any) -> None:
        import shutil

        del self.checker
        shutil.rmtree(self.dir, ignore_errors=True)


def checker(recipe: Any = None, scratch: Optional[str] = None) -> _Scratch:
    """``with checker(recipe) as c:`` a ``JoinChecker`` of the run's
    ``recipe`` in a scratch directory (under ``scratch``, default the
    system's temporary directory) removed afterwards."""
    return _Scratch(recipe, scratch)


def join_local(docs: Any, *, recipe: Any = None, buckets: int = 4, scratch: Optional[str] = None) -> Any:
    """The check rows of ``docs`` (:func:`doc_schema`'s table: the new
    documents and any earlier ones), by the join's stages over
    ``buckets`` shares each, one after the other in this process: what an
    engine's workers find (for tests and small runs)."""
    b = max(1, buckets)
    by_fp, by_ord = split_docs(docs, b)
    with checker(recipe, scratch) as c:
        entries = [stage_entries(x, b) for x in by_fp]
        probes = [stage_probes(c, x, b) for x in by_ord]
        keys = [stage_keys(concat([e[k] for e in entries]), concat([p[k] for p in probes]), b) for k in range(b)]
        matched = [stage_matched(by_ord[o], concat([m[o] for m, _ in keys]), b) for o in range(b)]
        sent = [stage_sent(c, by_fp[f], concat([m[f] for m in matched]), b) for f in range(b)]
        checks = [
            stage_checks(c, by_ord[o], concat([s[o] for s in sent]), concat([x[o] for _, x in keys]))
            for o in range(b)
        ]
    checked = sum(int(t.schema.metadata[b"checked"]) for t in checks)
    out = concat([t.replace_schema_metadata(None) for t in checks]).sort_by("ord")
    return out.replace_schema_metadata({"checked": str(checked)})


def check_by_join(
    ids: list[str],
    ords: list[int],
    fingerprints: list[int],
    records: list[bytes],
    *,
    recipe: Any = None,
    buckets: int = 4,
    scratch: Optional[str] = None,
) -> dict[str, Any]:
    """Each document's confirmed earlier near-copies (the columns of
    ``Db.earlier_copies``, by ord), found as a join with no store of the
    run (:func:`join_local`: the stages an engine runs on its workers,
    each over ``buckets`` shares, here in this process). ``records`` are
    the documents' record bytes (``Db.records``,
    :func:`simdb.engine_records`), ``ords`` and ``fingerprints`` (signed
    or not) theirs; ``recipe`` the run's. The answer is what ingest's own check
    found for each document, bounds reached included
    (``simdb::db::engine::check``)."""
    import pyarrow as pa

    if not (len(ids) == len(ords) == len(fingerprints) == len(records)):
        raise ValueError("ids, ords, fingerprints and records must be of one length")
    docs = pa.table(
        {
            "ord": pa.array(ords, pa.uint64()),
            "id": pa.array(ids, pa.string()),
            # Signed or not: the bits are what count.
            "fingerprint": pa.array([f - (1 << 64) if f >= 1 << 63 else f for f in fingerprints], pa.int64()),
            "record": pa.array(records, pa.binary()),
            "new": pa.array([True] * len(ids), pa.bool_()),
        },
        schema=doc_schema(),
    )
    t = join_local(docs, recipe=recipe, buckets=buckets, scratch=scratch)
    result: dict[str, Any] = {c: t.column(c).to_pylist() for c in _FOUND}
    result["checked"] = int(t.schema.metadata[b"checked"])
    return result


_FOUND = ("ord", "id", "near", "distance", "similarity", "containment")


# ------------------------------------------------- for engines that shuffle


def tagged(pieces: list) -> Any:
    """A stage's split output as one table, each row with the ``bucket``
    of its piece (the key an engine's next ``groupBy`` groups by)."""
    import numpy as np
    import pyarrow as pa

    sizes = [p.num_rows for p in pieces]
    t = concat(pieces)
    return t.append_column("bucket", pa.array(np.repeat(np.arange(len(pieces), dtype=np.int64), sizes)))


def to_signed(t: Any) -> Any:
    """``t`` in the types of an engine with no unsigned integers (Spark):
    uint64 columns as the int64 of their bits (hashes and values may pass
    2^63), smaller unsigned ones widened. :func:`from_signed` undoes it."""
    import pyarrow as pa

    for i, f in enumerate(t.schema):
        if f.type == pa.uint64():
            # An unsafe cast keeps the bits (and the nulls).
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64(), safe=False))
        elif pa.types.is_unsigned_integer(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
    return t


def from_signed(t: Any, schema: Any) -> Any:
    """``t`` (as :func:`to_signed` made it, perhaps with more columns) in
    ``schema``'s columns and types."""
    import pyarrow as pa

    cols = []
    for f in schema:
        c = t.column(f.name)
        cols.append(c.cast(f.type, safe=not (f.type == pa.uint64() and c.type == pa.int64())))
    return pa.table(cols, schema=schema)


def matched_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("ord", pa.uint64()), ("fingerprint", pa.int64())])


def boilerplate_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("ord", pa.uint64()), ("part", pa.uint64())])


def probe_doc_schema() -> Any:
    """Stage 3's rows: a match with its probe's id and record."""
    import pyarrow as pa

    return pa.schema([("fingerprint", pa.int64()), ("id", pa.string()), ("record", pa.binary())])


def sent_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("ord", pa.uint64()), ("id", pa.string()), ("record", pa.binary())])
