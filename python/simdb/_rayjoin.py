"""The checks of :func:`simdb.ray.dedup` with ``index="join"``: the
duplicate check as a join on Ray tasks (the stage functions of
:mod:`simdb.engine`), with no store of the run and no row through the
driver. Each stage is ``buckets`` tasks (stage 0: one per block of the
input); a task returns its output split by the next stage's bucket, so
every table stays in Ray's object store and the driver holds references,
row counts and each task's seconds.

A worker writes only under the work directory: ``WORK/records/`` (the
run's documents, which a later night's run reads) and ``WORK/checks/``
(the check rows the placement takes). Its scratch store is a temporary
directory of its own. The work directory is a
:class:`~simdb._location.Location`: a local path, or a URI of a file
system every worker reaches (an object store), which is all the workers
and the driver share.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time as _time
import zlib
from time import perf_counter
from typing import Any, Optional

from ._location import Location

#: The stages of the join, in order (the keys of the report's
#: ``longest_task_seconds``).
STAGES = ("records", "entries", "probes", "keys", "matched", "sent", "checks")


def _rows(t: Any) -> int:
    return int(t.num_rows)


def _records_task(block: Any, first_ord: int, buckets: int, path: Location, cols: dict) -> tuple:
    """Stage 0 on one block of the input: its documents at their ords,
    written to ``path`` (a later night's earlier documents), split by
    fingerprint and by ord; then the rows without a fingerprint, and the
    seconds."""
    from . import engine

    t0 = perf_counter()
    docs, none = engine.doc_records(block, first_ord, **cols)
    path.write_table(docs.drop_columns(["new"]))
    by_fp, by_ord = engine.split_docs(docs, buckets)
    ids = engine.split_ids(docs, buckets)
    return tuple(by_fp) + tuple(by_ord) + tuple(ids) + (none, perf_counter() - t0)


def _earlier_task(path: Location, buckets: int) -> tuple:
    """An earlier night's documents (its ``records/`` part), split by
    fingerprint: looked at, not checked."""
    import pyarrow as pa

    from . import engine

    t0 = perf_counter()
    t = path.read_table()
    t = t.append_column("new", pa.array([False] * t.num_rows, pa.bool_())).cast(engine.doc_schema())
    by_fp = engine.split_docs(t, buckets)[0]
    return tuple(by_fp) + tuple(engine.split_ids(t, buckets)) + (perf_counter() - t0,)


def _ids_task(*pieces: Any) -> tuple:
    """One share of the ids: how many come twice, and some of them."""
    from . import engine

    return engine.repeated_ids(engine.concat(pieces))


def _entries_task(buckets: int, *docs: Any) -> tuple:
    from . import engine

    t0 = perf_counter()
    out = engine.stage_entries(engine.concat(docs), buckets)
    return tuple(out) + (perf_counter() - t0,)


def _probes_task(recipe: Any, buckets: int, *docs: Any) -> tuple:
    from . import engine

    t0 = perf_counter()
    with engine.checker(recipe) as c:
        out = engine.stage_probes(c, engine.concat(docs), buckets)
    return tuple(out) + (perf_counter() - t0,)


def _keys_task(buckets: int, n_entries: int, *pieces: Any) -> tuple:
    from . import engine

    t0 = perf_counter()
    matched, boiler = engine.stage_keys(
        engine.concat(pieces[:n_entries]), engine.concat(pieces[n_entries:]), buckets
    )
    return tuple(matched) + tuple(boiler) + (perf_counter() - t0,)


def _matched_task(buckets: int, n_docs: int, *pieces: Any) -> tuple:
    from . import engine

    t0 = perf_counter()
    out = engine.stage_matched(engine.concat(pieces[:n_docs]), engine.concat(pieces[n_docs:]), buckets)
    return tuple(out) + (perf_counter() - t0,)


def _sent_task(recipe: Any, buckets: int, n_docs: int, *pieces: Any) -> tuple:
    from . import engine

    t0 = perf_counter()
    with engine.checker(recipe) as c:
        out = engine.stage_sent(c, engine.concat(pieces[:n_docs]), engine.concat(pieces[n_docs:]), buckets)
    return tuple(out) + (perf_counter() - t0,)


def _checks_task(recipe: Any, path: Location, n_docs: int, n_sent: int, *pieces: Any) -> dict:
    """Stage 5 on one share by ord: its checks written to ``path`` whole
    or not at all; returns the counts and seconds."""
    from . import engine

    t0 = perf_counter()
    docs = engine.concat(pieces[:n_docs])
    sent = engine.concat(pieces[n_docs : n_docs + n_sent])
    boiler = engine.concat(pieces[n_docs + n_sent :])
    with engine.checker(recipe) as c:
        t = engine.stage_checks(c, docs, sent, boiler)
    path.write_table(t)
    return {"checked": int(t.schema.metadata[b"checked"]), "rows": t.num_rows,
            "seconds": perf_counter() - t0}


def _remote(fn: Any, returns: int, num_cpus: Optional[float]) -> Any:
    import ray

    opts: dict[str, Any] = {} if num_cpus is None else {"num_cpus": min(1.0, num_cpus)}
    return ray.remote(fn).options(num_returns=returns, **opts)


def earlier_of(incremental: Any) -> dict:
    """What a join run continues from the earlier run ``incremental`` (its
    work directory, a path or a :class:`Location`): the record and check
    parts of every night so far (locations on its file system), the next
    ord and the recipe; nothing without one."""
    from .ray import read_mark

    if incremental is None:
        return {"records": [], "checks": [], "next_ord": 1, "recipe": None}
    old = Location.of(incremental)
    marker = old.join("join.json")
    if not marker.exists():
        raise ValueError(
            f"{old}: not the work directory of a dedup run with index=\"join\" "
            "(an incremental join run continues one)"
        )
    m = read_mark(marker)
    # A mark names its parts by their paths on its run's file system.
    return {"records": [Location(old.fs, p) for p in m["records"]],
            "checks": [Location(old.fs, p) for p in m["checks"]],
            "next_ord": m["next_ord"], "recipe": m.get("recipe")}


def join_checks(
    fps: Any,
    work: Location,
    *,
    recipe: Any = None,
    incremental: Optional[str] = None,
    buckets: Optional[int] = None,
    num_cpus: Optional[float] = None,
    id: str = "id",
    priority: str = "priority",
    time: str = "time",
) -> dict:
    """The checks of ``fps`` (a Ray Dataset of fingerprint rows, in the
    order the documents count in) as a join on Ray tasks, against each
    other and, with ``incremental``, every earlier night's documents.
    Writes ``WORK/records/`` and ``WORK/checks/``; marked by
    ``WORK/join.json`` (what it returns: counts, chains of parts, the
    recipe, the write time the placement takes, and per stage its longest
    task's seconds and all its tasks' seconds summed). A run without the marker does the stage again from the
    start (its outputs are the same)."""
    import ray

    from .ray import _done, in_order, read_mark, write_mark

    marker = work.join("join.json")
    if _done(marker):
        return read_mark(marker)
    earlier = earlier_of(incremental)
    if recipe is None:
        recipe = earlier["recipe"]
    records_dir, checks_dir = work.join("records"), work.join("checks")
    for d in (records_dir, checks_dir):
        d.rmtree()
        d.makedirs()
    with in_order(fps):
        blocks = fps.to_arrow_refs()
    counts = ray.get([ray.remote(_rows).remote(b) for b in blocks])
    rows = sum(counts)
    if buckets is None:
        # One share per 100,000 documents looked at, from 2 to 256.
        looked = rows + 100_000 * len(earlier["records"])
        buckets = max(2, min(256, -(-looked // 100_000)))
    b = buckets
    seconds: dict[str, list] = {s: [] for s in STAGES}
    # 0. Records, at ords from the blocks' counts.
    first = earlier["next_ord"]
    rec = _remote(_records_task, 3 * b + 2, num_cpus)
    from ._simdb import rule as rule_of

    cols = {"id": id, "priority": priority, "time": time, "rule": rule_of(recipe)["digest"]}
    by_fp, by_ord, by_id, none_refs = [], [], [], []
    mine = []
    at = first
    for i, (block, n) in enumerate(zip(blocks, counts)):
        path = records_dir.join(f"part-{i:05}.parquet")
        out = rec.remote(block, at, b, path, cols)
        by_fp.append(out[:b])
        by_ord.append(out[b : 2 * b])
        by_id.append(out[2 * b : 3 * b])
        none_refs.append(out[3 * b])
        seconds["records"].append(out[3 * b + 1])
        mine.append(path)
        at += n
    early = _remote(_earlier_task, 2 * b + 1, num_cpus)
    for path in earlier["records"]:
        out = early.remote(path, b)
        by_fp.append(out[:b])
        by_id.append(out[b : 2 * b])
        seconds["records"].append(out[2 * b])
    # Each id once, over every night: refused before the join's work.
    twice = ray.get([_remote(_ids_task, 1, num_cpus).remote(*[d[s] for d in by_id]) for s in range(b)])
    repeated = sum(t[0] for t in twice)
    if repeated:
        some = sorted(x for t in twice for x in t[1])[:3]
        records_dir.rmtree()
        raise ValueError(
            "ids given more than once in this run's rows"
            + (" or in the earlier runs'" if earlier["records"] else "")
            + f": {repeated} (e.g. {', '.join(some)}); dedup takes each document once"
        )
    # 1. Entries (by fingerprint) and probes (by ord), each split by key.
    ent = _remote(_entries_task, b + 1, num_cpus)
    pro = _remote(_probes_task, b + 1, num_cpus)
    entries = [ent.remote(b, *[d[f] for d in by_fp]) for f in range(b)]
    probes = [pro.remote(recipe, b, *[d[o] for d in by_ord]) for o in range(b)]
    seconds["entries"] = [e[b] for e in entries]
    seconds["probes"] = [p[b] for p in probes]
    # 2. By key: matches and boilerplate parts, split by ord.
    key = _remote(_keys_task, 2 * b + 1, num_cpus)
    keys = [key.remote(b, len(entries), *[e[k] for e in entries], *[p[k] for p in probes]) for k in range(b)]
    seconds["keys"] = [k[2 * b] for k in keys]
    # 3. By ord: each match with its probe's record, split by fingerprint.
    mat = _remote(_matched_task, b + 1, num_cpus)
    matched = [mat.remote(b, len(by_ord), *[d[o] for d in by_ord], *[k[o] for k in keys]) for o in range(b)]
    seconds["matched"] = [m[b] for m in matched]
    # 4. By fingerprint: what each check can look at, split by ord.
    snd = _remote(_sent_task, b + 1, num_cpus)
    sent = [
        snd.remote(recipe, b, len(by_fp), *[d[f] for d in by_fp], *[m[f] for m in matched]) for f in range(b)
    ]
    seconds["sent"] = [s[b] for s in sent]
    # 5. By ord: the checks, each share's written by its task.
    chk = _remote(_checks_task, 1, num_cpus)
    done = ray.get([
        chk.remote(
            recipe,
            checks_dir.join(f"part-{o:05}.parquet"),
            len(by_ord),
            len(sent),
            *[d[o] for d in by_ord],
            *[s[o] for s in sent],
            *[k[b + o] for k in keys],
        )
        for o in range(b)
    ])
    seconds["checks"] = [d["seconds"] for d in done]
    none = sum(ray.get(none_refs))
    took = {s: ray.get(v) if s != "checks" else v for s, v in seconds.items()}
    longest = {s: round(max(v, default=0.0), 3) for s, v in took.items()}
    what = {
        "rows": rows,
        "documents": rows - none,
        "no_fingerprint": none,
        "checked": sum(d["checked"] for d in done),
        "first_ord": first,
        "next_ord": first + rows,
        "buckets": b,
        "blocks": len(blocks),
        "recipe": recipe if recipe is None or isinstance(recipe, dict) else os.fspath(recipe),
        "written_at": int(_time.time()),
        "records": [p.path for p in earlier["records"] + mine],
        "checks": [p.path for p in earlier["checks"]] + [checks_dir.path],
        "longest_task_seconds": longest,
        "task_seconds": {s: round(sum(v), 3) for s, v in took.items()},
    }
    write_mark(marker, what)
    return what


def _export_records_task(path: Location, buckets: int) -> tuple:
    """A night's record part (``id``, ``record``), split by id."""
    from . import engine

    return tuple(engine.by_id(path.read_table(columns=["id", "record"]), buckets))


def _export_clusters_task(path: Location, buckets: int) -> tuple:
    """A placement part's ``id`` and ``cluster``, split by id."""
    from . import engine

    return tuple(engine.by_id(path.read_table(columns=["id", "cluster"]), buckets))


def _export_task(
    out: Location, number: int, recipe: Any, keep: str, written_at: int, records: int, *pieces: Any
) -> dict:
    """Part ``number`` of the export: one share of the ids' records and
    cluster rows, written by the library's export writer (in a temporary
    directory of the task's own, then uploaded, when ``out`` is not
    local)."""
    from . import engine

    t0 = perf_counter()
    args = (number, engine.concat(pieces[:records]), engine.concat(pieces[records:]))
    kw = {"recipe": recipe, "keep": keep, "written_at": written_at}
    if out.local:
        entry = engine.export_part(out.path, *args, **kw)
    else:
        with tempfile.TemporaryDirectory(prefix="simdb-export-") as d:
            entry = engine.export_part(d, *args, **kw)
            out.join(entry["file"]).upload(os.path.join(d, entry["file"]))
    return {"entry": entry, "seconds": perf_counter() - t0}


def finish_export(out: Location, entries: list, decisions: Optional[str]) -> dict:
    """The export's manifest (``_SUCCESS``, and its decision log from the
    local file ``decisions``) written in ``out`` from its parts'
    ``entries``, last (:func:`finished_export` takes the export as whole
    once it is there). Returns the manifest."""
    from . import _simdb

    if out.local:
        return _simdb.finish_export(out.path, entries, decisions=decisions)
    with tempfile.TemporaryDirectory(prefix="simdb-export-") as d:
        manifest = _simdb.finish_export(d, entries, decisions=decisions)
        if manifest.get("decisions"):
            name = manifest["decisions"]["file"]
            out.join(name).upload(os.path.join(d, name))
        out.join("_SUCCESS").upload(os.path.join(d, "_SUCCESS"))
    return manifest


def export_join(work: Location, decisions: Optional[str] = None, num_cpus: Optional[float] = None) -> dict:
    """``WORK/export/``: a finished join run's documents (every night's)
    in their clusters, as a ``simdb export --parquet`` of the store the
    run stands for (recipe, keep policy, the decision log it obeyed: a
    file of the driver's), which ``simdb import`` restores. Written on the
    workers, a part per share of the ids (the records and the placement's
    rows meet by a hash of the id); the driver writes the manifest from
    the parts' entries. Marked by its ``_SUCCESS``; done again from the
    start otherwise."""
    import ray

    from .ray import _joined, read_mark

    out = work.join("export")
    done = finished_export(out)
    if done is not None:
        return done
    joined, placed = _joined(work), read_mark(work.join("placed.json"))
    if joined is None:
        raise ValueError(f"{work}: not the work directory of a finished dedup run with index=\"join\"")
    out.rmtree()
    out.makedirs()
    b = max(2, int(placed["buckets"]))
    placed_parts = work.join("clusters").parquet_parts()
    rec = _remote(_export_records_task, b, num_cpus)
    cl = _remote(_export_clusters_task, b, num_cpus)
    records = [rec.remote(Location(work.fs, p), b) for p in joined["records"]]
    clusters = [cl.remote(p, b) for p in placed_parts]
    task = _remote(_export_task, 1, num_cpus)
    done = ray.get([
        task.remote(
            out, s, joined["recipe"], placed["keep"], joined["written_at"], len(records),
            *[r[s] for r in records], *[c[s] for c in clusters],
        )
        for s in range(b)
    ])
    manifest = finish_export(out, [d["entry"] for d in done], decisions)
    return {
        "documents": manifest["documents"],
        "parts": len(manifest["parts"]),
        "longest_task_seconds": round(max(d["seconds"] for d in done), 3),
    }


def _manifest(out: Location) -> Optional[dict]:
    """The manifest (``_SUCCESS``) of the export in ``out`` when it is
    there, else None."""
    marker = out.join("_SUCCESS")
    return marker.read_json() if marker.exists() else None


def finished_export(out: Any) -> Optional[dict]:
    """The counts of the export in ``out`` (a path or a :class:`Location`)
    when its ``_SUCCESS`` says it is whole (:func:`export_join`, the Spark
    job's), else None."""
    m = _manifest(Location.of(out))
    if m is None:
        return None
    return {"documents": m["documents"], "parts": len(m["parts"]), "longest_task_seconds": 0.0}


def stored(work: Any, store: Optional[str]) -> Optional[dict]:
    """What ``WORK/stored.json`` says of the store a finished run made at
    ``store``, if that run made it and it is there; else None."""
    from .ray import read_mark

    mark = Location.of(work).join("stored.json")
    if store is None or not mark.exists() or not os.path.exists(store):
        return None
    what = read_mark(mark)
    return what if what.get("store") == store else None


def refuse_taken(work: Any, store: str) -> None:
    """Refuses ``store`` when something is there that this run's work
    directory ``work`` did not make: the store is made at a new path.
    (``STORE.importing`` is the run's own, from a run killed during its
    import: :func:`import_export` takes it up.)"""
    if os.path.exists(store) and stored(work, store) is None:
        raise ValueError(f"{store}: already exists; the run's store is made at a new path")


def store_of_join(work: Location, store: str, decisions: Optional[str] = None, num_cpus: Optional[float] = None) -> dict:
    """The store a finished join run stands for, at ``store`` (a new
    path on the driver's machine): the run's export (:func:`export_join`,
    on the workers), then the store built from it by key range on the
    workers (:func:`build_by_range`) and assembled here by
    :func:`import_export`. Returns the counts and seconds of both steps
    (what ``WORK/stored.json`` says)."""
    t0 = perf_counter()
    export = export_join(work, decisions, num_cpus)
    export["seconds"] = round(perf_counter() - t0, 3)

    def build(export_dir: Location, target: str) -> dict:
        return build_by_range(export_dir, target, work.join("ranges"), num_cpus=num_cpus)

    return import_export(work, store, {"export": export}, build=build)


#: The steps of a store built by range (the keys of its
#: ``longest_task_seconds``).
RANGE_STEPS = ("map", "split", "reduce", "split2", "reduce2")


def export_parts(export: Any) -> tuple[list, Optional[Location]]:
    """The parts of the export in directory ``export`` (a path or a
    :class:`Location`; refused unless its ``_SUCCESS`` says it is whole),
    each with its manifest entry, and its decision log, if it has one."""
    export = Location.of(export)
    m = _manifest(export)
    if m is None:
        raise ValueError(f"{export}: not a finished export (no _SUCCESS)")
    entries = {p["file"]: p for p in m["parts"]}
    parts = export.parquet_parts()
    listed = sorted(entries)
    if [p.name for p in parts] != listed:
        raise ValueError(
            f"{export}: not the export its _SUCCESS lists ({len(listed)} parts): it holds "
            f"{len(parts)} part files; a copy that lost or added a part (copy it again)"
        )
    log = export.join("_decisions.jsonl")
    return [(p, entries[p.name]) for p in parts], (log if m.get("decisions") else None)


def check_part(path: str, entry: dict) -> None:
    """Refuses the local export part ``path`` unless its size and CRC-32
    are those its manifest ``entry`` states (what ``simdb import`` checks
    of every part; a build by range checks each on the task that reads
    it)."""
    size = os.path.getsize(path)
    if size != entry["bytes"]:
        raise ValueError(f"{entry['file']} has {size} bytes, the export wrote {entry['bytes']}")
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    if f"{crc:08x}" != entry["crc32"]:
        raise ValueError(f"{entry['file']} has CRC-32 {crc:08x}, the export wrote {entry['crc32']}")


#: The most ranges a build by range makes by default: each map cuts its
#: items into one piece per range, so pieces grow as parts times ranges.
MAX_RANGES = 512


def range_count(parts: int, ranges: Optional[int]) -> int:
    """The ranges of a build by range: ``ranges``, or two per part (at
    most :data:`MAX_RANGES`)."""
    if ranges is not None and ranges < 1:
        raise ValueError(f"ranges must be at least 1, not {ranges}")
    return ranges or max(2, min(MAX_RANGES, 2 * parts))


#: Range keys each share (or range) samples per range of the next step.
SAMPLES_PER_RANGE = 16

#: The most map tasks (shares of the parts) a build by range makes by
#: default: the pieces the maps cut for the reduces number shares times
#: ranges (at most 256 × 512), so a 10,000-part export is mapped 40
#: parts to a task.
MAX_SHARES = 256


def shares_of(parts: list, shares: Optional[int] = None) -> list[list]:
    """``parts`` dealt into ``shares`` runs of consecutive parts (default:
    one per part, at most :data:`MAX_SHARES`), as even as they divide:
    each a map task's."""
    if shares is not None and shares < 1:
        raise ValueError(f"shares must be at least 1, not {shares}")
    n = min(len(parts), shares or MAX_SHARES)
    if n == 0:
        return []
    size, extra = divmod(len(parts), n)
    out, at = [], 0
    for i in range(n):
        take = size + (i < extra)
        out.append(parts[at : at + take])
        at += take
    return out


def map_parts(parts: list, log: Optional[Location], samples: int) -> tuple:
    """A build by range's map of export ``parts`` (each a location with
    its manifest entry; read from local copies, each checked against its
    entry) under decision log ``log``: ``simdb.range_map``'s items, sample
    and counts. Ray's tasks and Spark's run it."""
    from . import _simdb

    with contextlib.ExitStack() as stack:
        paths = []
        for loc, entry in parts:
            p = stack.enter_context(loc.local_copy())
            check_part(p, entry)
            paths.append(p)
        lp = None if log is None else stack.enter_context(log.local_copy())
        return _simdb.range_map(paths, decisions=lp, samples=samples)


def reduce_range(scratch: Location, name: str, samples: int, pieces: list) -> dict:
    """A build by range's reduce of one range's ``pieces``
    (``simdb.range_reduce``): its table files written under
    ``scratch/name`` (in a temporary directory of the task's own, then
    uploaded, when ``scratch`` is not local) and named relative to
    ``scratch``; the next round's items and sample, and the counts."""
    from . import _simdb

    if scratch.local:
        done = _simdb.range_reduce(list(pieces), scratch.path, name, samples=samples)
        root = scratch.path
    else:
        with tempfile.TemporaryDirectory(prefix="simdb-range-") as root:
            done = _simdb.range_reduce(list(pieces), root, name, samples=samples)
            for _, paths in done["files"]:
                for p in paths:
                    scratch.join(*os.path.relpath(p, root).split(os.sep)).upload(p)
    done["files"] = [(fam, [os.path.relpath(p, root) for p in paths]) for fam, paths in done["files"]]
    return done


def _range_map_task(parts: list, log: Optional[Location], samples: int) -> tuple:
    t0 = perf_counter()
    items, sample, counts = map_parts(parts, log, samples)
    return items, {"sample": sample, "counts": counts, "seconds": perf_counter() - t0}


def _range_split_task(items: bytes, boundaries: list) -> Any:
    from . import _simdb

    t0 = perf_counter()
    pieces = _simdb.range_split(items, boundaries)
    return (*pieces, perf_counter() - t0)


def _range_reduce_task(out: Location, name: str, samples: int, *pieces: bytes) -> tuple:
    t0 = perf_counter()
    done = reduce_range(out, name, samples, list(pieces))
    items = done.pop("items")
    done["seconds"] = perf_counter() - t0
    return items, done


def build_by_range(
    export: Any,
    target: str,
    scratch: Any,
    ranges: Optional[int] = None,
    num_cpus: Optional[float] = None,
    shares: Optional[int] = None,
) -> dict:
    """The store of the export in directory ``export`` at ``target`` (a
    new path on this machine), built by key range on Ray's workers
    (``simdb::import::ranges``): a map task per share of the part files
    (:func:`shares_of`: one per part, at most :data:`MAX_SHARES`; each
    part checked against the export's manifest there), the items cut by ranges
    sampled from them, a reduce task per range writing its table files
    under ``scratch`` (twice: the band, part and membership keys are a
    second round), then the store assembled here from those files and its
    frozen index written (as ``simdb freeze``). ``export`` and ``scratch``
    are paths or :class:`Location` s (an object store the workers share).
    The driver holds only samples, counts and file names. The same store
    as ``simdb import`` of the export. Returns the counts, the number of
    ranges, each step's longest task and the assembly's seconds."""
    import ray

    from . import _simdb

    export, scratch = Location.of(export), Location.of(scratch)
    parts, log, n = begin_by_range(export, scratch, ranges)
    longest = dict.fromkeys(RANGE_STEPS, 0.0)
    mapped = [
        _remote(_range_map_task, 2, num_cpus).remote(share, log, SAMPLES_PER_RANGE * n)
        for share in shares_of(parts, shares)
    ]
    infos = ray.get([m[1] for m in mapped])
    longest["map"] = max((i["seconds"] for i in infos), default=0.0)
    counts = [i["counts"] for i in infos]
    files: list = []

    def one_round(items: list, samples: list, name: str, next_samples: int) -> tuple:
        bounds = _simdb.range_boundaries(samples, n)
        k = len(bounds) + 1
        split = _remote(_range_split_task, k + 1, num_cpus)
        pieces = [split.remote(i, bounds) for i in items]
        longest["split" if name == "r1" else "split2"] = max(ray.get([p[k] for p in pieces]), default=0.0)
        reduce = _remote(_range_reduce_task, 2, num_cpus)
        reduced = [
            reduce.remote(scratch, f"{name}-{r:05}", next_samples, *[p[r] for p in pieces]) for r in range(k)
        ]
        done = ray.get([r[1] for r in reduced])
        longest["reduce" if name == "r1" else "reduce2"] = max((d["seconds"] for d in done), default=0.0)
        for d in done:
            files.extend(d["files"])
            counts.append(d["counts"])
        return [r[0] for r in reduced], [s for d in done for s in d["sample"]]

    second, samples = one_round([m[0] for m in mapped], [s for i in infos for s in i["sample"]], "r1", SAMPLES_PER_RANGE * n)
    one_round(second, samples, "r2", 0)
    return dict(assemble_by_range(target, export, scratch, files, counts, n, longest), shares=len(mapped))


def begin_by_range(export: Any, scratch: Any, ranges: Optional[int]) -> tuple[list, Optional[Location], int]:
    """The start of a build by range (:func:`build_by_range`, the Spark
    job's): the export's parts with their manifest entries and its
    decision log (:func:`export_parts`), the number of ranges, and
    ``scratch`` made empty for the ranges' table files."""
    parts, log = export_parts(export)
    n = range_count(len(parts), ranges)
    scratch = Location.of(scratch)
    scratch.rmtree()
    scratch.makedirs()
    return parts, log, n


@contextlib.contextmanager
def _local_export(export: Location, near: str) -> Any:
    """A local directory with what the assembly reads of the export: its
    first part (the recipe and keep policy in its metadata; each part was
    checked against the manifest by the map that read it) and its
    decision log. The export itself when it is local; else those two
    files copied to ``near`` for the length of the block."""
    if export.local:
        yield export.path
        return
    os.makedirs(near, exist_ok=True)
    try:
        parts, log = export_parts(export)
        parts[0][0].download(os.path.join(near, parts[0][0].name))
        if log is not None:
            log.download(os.path.join(near, log.name))
        yield near
    finally:
        shutil.rmtree(near, ignore_errors=True)


def assemble_by_range(
    target: str, export: Any, scratch: Any, files: list, counts: list, n: int, longest: dict
) -> dict:
    """The end of a build by range, on the store's machine: the store
    assembled from the ranges' table ``files`` (named relative to
    ``scratch``: copied here first when it is not local) and the shares'
    and ranges' ``counts`` (and its frozen index written), ``scratch``
    removed; what the build reports (``longest``: each step's longest
    task)."""
    from . import _simdb

    t0 = perf_counter()
    export, scratch = Location.of(export), Location.of(scratch)
    staging = target + ".ranges"
    if scratch.local:
        local = [(fam, [os.path.join(scratch.path, p) for p in paths]) for fam, paths in files]
    else:
        local = []
        for fam, paths in files:
            got = []
            for p in paths:
                dest = os.path.join(staging, p)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                scratch.join(*p.split(os.sep)).download(dest)
                got.append(dest)
            local.append((fam, got))
    with _local_export(export, target + ".export") as meta:
        total = _simdb.range_assemble(target, meta, local, counts, checked=True)
    scratch.rmtree()
    shutil.rmtree(staging, ignore_errors=True)
    return {
        "documents": total["documents"],
        "clusters": total["clusters"],
        "restored": True,
        "ranges": n,
        "longest_task_seconds": {k: round(longest[k], 3) for k in RANGE_STEPS},
        "assemble_seconds": round(perf_counter() - t0, 3),
    }


def import_export(work: Location, store: str, mark: Optional[dict] = None, build: Any = None) -> dict:
    """The store of a join run's export (``WORK/export/``) at ``store``
    (a new path on this machine, which holds the store): built by
    ``build(export, target)`` (by range on the workers), or without one
    by ``simdb import`` here (a local work directory only): every record
    restored, the clusters as the workers placed them, the decision log;
    the store serves them (``simdb serve``, ``simdb query``, ``Db.open``).
    Marks it in ``WORK/stored.json`` (``mark`` with the counts and the
    store's path).

    Resumable at every step: the store is made at ``STORE.importing``,
    the mark is written, and only then is that renamed to ``store``. A run
    killed before the rename finds the whole store (writing its frozen
    index if the kill came before that) and renames it; one killed after
    it finds the mark (:func:`stored`)."""
    from . import _simdb
    from .ray import write_mark

    t0 = perf_counter()
    work = Location.of(work)
    whole = store + ".importing"
    if os.path.exists(whole):
        # Made whole by a run killed before the rename; its frozen index
        # written here if that run was killed before it wrote it.
        with _simdb.Db.open(whole) as db:
            stats = db.stats()
            if stats["frozen"] is None:
                db.freeze()
            counts = {"documents": len(db), "clusters": stats["clusters"], "restored": True}
    elif build is not None:
        built = build(work.join("export"), whole)
        counts = {k: built.pop(k) for k in ("documents", "clusters", "restored")}
        mark = dict(mark or {}, by_range=built)
    else:
        if not work.local:
            raise ValueError(f"{work}: simdb import reads a local export; build the store by range")
        s = _simdb.import_parquet(whole, [work.join("export").path])
        counts = {k: s[k] for k in ("documents", "clusters", "restored")}
    what = dict(mark or {}, store=store)
    what["import"] = dict(counts, seconds=round(perf_counter() - t0, 3))
    write_mark(work.join("stored.json"), what)
    os.rename(whole, store)
    return what
