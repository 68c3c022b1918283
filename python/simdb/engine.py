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
    import numpy as np

    if t.num_rows == 0:
        return [t] * buckets
    b = bucket(t.column(column).to_numpy(zero_copy_only=False), buckets)
    order = np.argsort(b, kind="stable")
    t = t.take(order)
    ends = np.cumsum(np.bincount(b, minlength=buckets))
    starts = np.concatenate([[0], ends[:-1]])
    return [t.slice(int(a), int(e - a)) for a, e in zip(starts, ends)]


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


def signed(t: Any) -> Any:
    """``t`` with its unsigned 64-bit columns as signed (for engines with
    no unsigned type, as Spark; ords are below 2^63)."""
    import pyarrow as pa

    for i, f in enumerate(t.schema):
        if f.type == pa.uint64():
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
    return t


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


def _split(n_rows: int, keys: Any, buckets: int) -> list[list[int]]:
    """The row indexes of each bucket of ``keys`` (uint64 values)."""
    import numpy as np

    b = bucket(np.asarray(keys, dtype=np.uint64), buckets) if n_rows else []
    out: list[list[int]] = [[] for _ in range(buckets)]
    for i, x in enumerate(b):
        out[int(x)].append(i)
    return out


def _u64(values: list[int]) -> list[int]:
    """Signed 64-bit ints as their unsigned bits (bucket keys)."""
    return [v & 0xFFFFFFFFFFFFFFFF for v in values]


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
    run: the four stages an engine runs on its workers, each over
    ``buckets`` shares (by fingerprint, by key, by fingerprint, by ord),
    here one after the other in this process. ``records`` are the
    documents' record bytes (``Db.records``, :func:`simdb.engine_records`),
    ``ords`` and ``fingerprints`` (signed) theirs; ``recipe`` the run's.
    The answer is what ingest's own check found for each document, bounds
    reached included (``simdb::db::engine::check``)."""
    from ._simdb import JoinChecker

    if not (len(ids) == len(ords) == len(fingerprints) == len(records)):
        raise ValueError("ids, ords, fingerprints and records must be of one length")
    own = scratch or tempfile.mkdtemp(prefix="simdb-join-")
    checker = JoinChecker(os.path.join(own, "checker"), recipe=recipe)
    try:
        return _check_by_join(checker, ids, ords, fingerprints, records, max(1, buckets))
    finally:
        del checker
        if scratch is None:
            import shutil

            shutil.rmtree(own, ignore_errors=True)


def _key_hash(family: list[int], value: list[int]) -> list[int]:
    """A key's bucket key: its value with its family in the top bits."""
    return [(v ^ (f << 56)) & 0xFFFFFFFFFFFFFFFF for f, v in zip(family, value)]


def _pick(columns: dict, names: tuple, rows: list[int]) -> list[list]:
    """The ``rows`` of each of ``names``' columns."""
    return [[columns[c][i] for i in rows] for c in names]


_ENTRY = ("family", "value", "fingerprint", "after", "until")
_PROBE = ("family", "value", "ord", "q", "k", "outside", "ranked")
_FOUND = ("ord", "id", "near", "distance", "similarity", "containment")


def _check_by_join(checker, ids, ords, fingerprints, records, buckets) -> dict:
    from ._simdb import index_entries, key_matches

    docs = {"id": ids, "record": records}
    row_of = {o: i for i, o in enumerate(ords)}
    by_fp = _split(len(ids), _u64(fingerprints), buckets)
    # 1. By fingerprint: the index entries.
    entries: dict[str, list] = {c: [] for c in _ENTRY}
    for share in by_fp:
        e = index_entries(*_pick(docs, ("id", "record"), share))
        for c in _ENTRY:
            entries[c] += e[c]
    # 2. By key: each key's probes with its entries.
    probes: dict[str, list] = {c: [] for c in _PROBE}
    for share in _split(len(ids), ords, buckets):
        p = checker.probes(*_pick(docs, ("id", "record"), share))
        for c in _PROBE:
            probes[c] += p[c]
    e_shares = _split(len(entries["family"]), _key_hash(entries["family"], entries["value"]), buckets)
    p_shares = _split(len(probes["family"]), _key_hash(probes["family"], probes["value"]), buckets)
    m: dict[str, list] = {}
    for es, ps in zip(e_shares, p_shares):
        got = key_matches(*_pick(entries, _ENTRY, es), *_pick(probes, _PROBE, ps))
        for c, v in got.items():
            m.setdefault(c, []).extend(v)
    # 3. By fingerprint again: each matched fingerprint's documents, with
    # the probes (their records) that matched it.
    m_shares = _split(len(m["matched_fingerprint"]), _u64(m["matched_fingerprint"]), buckets)
    sent: dict[str, list] = {"ord": [], "id": [], "record": []}
    for ds, ms in zip(by_fp, m_shares):
        probe_rows = [row_of[m["matched_ord"][j]] for j in ms]
        s = checker.fingerprint_docs(
            *_pick(docs, ("id", "record"), ds),
            *_pick(docs, ("id", "record"), probe_rows),
            [m["matched_fingerprint"][j] for j in ms],
        )
        for c in sent:
            sent[c] += s[c]
    # 4. By ord: the checks.
    o_shares = _split(len(ids), ords, buckets)
    s_shares = _split(len(sent["ord"]), sent["ord"], buckets)
    b_shares = _split(len(m["boilerplate_ord"]), m["boilerplate_ord"], buckets)
    out: dict[str, Any] = {c: [] for c in _FOUND}
    checked = 0
    for os_, ss, bs in zip(o_shares, s_shares, b_shares):
        c = checker.check(
            *_pick(docs, ("id", "record"), os_),
            *_pick(sent, ("ord", "id", "record"), ss),
            *_pick(m, ("boilerplate_ord", "boilerplate_part"), bs),
        )
        checked += c["checked"]
        for col in _FOUND:
            out[col] += c[col]
    order = sorted(range(len(out["ord"])), key=lambda i: out["ord"][i])
    result: dict[str, Any] = {col: [out[col][i] for i in order] for col in _FOUND}
    result["checked"] = checked
    return result
