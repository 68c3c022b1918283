"""simdb on Ray Data: the fingerprints of a dataset's texts, computed on the
workers, equal to what ``simdb ingest`` stores for the same texts.

>>> import ray, simdb.ray  # doctest: +SKIP
>>> ds = ray.data.read_parquet("s3://bucket/corpus/")  # doctest: +SKIP
>>> fps = simdb.ray.fingerprint(ds, text="text", db="news.db")  # doctest: +SKIP
>>> fps.write_parquet("s3://bucket/fingerprints/")  # doctest: +SKIP

Each worker makes one :class:`simdb.Analyzer` (the dictionary is loaded
once) and analyses its batches in Rust with the GIL released, on all the
cores it is given. The columns added are :data:`COLUMNS`, then
:data:`RULE` (the digest of the rule the rows were made under, which
:func:`dedup` checks against its own).

>>> r = simdb.ray.dedup(fps, "work/", keep="first")  # doctest: +SKIP
>>> r.pairs.write_parquet("s3://bucket/pairs/")  # doctest: +SKIP
>>> kept = simdb.ray.drop_duplicates(ds, r.clusters)  # doctest: +SKIP

:func:`dedup` finds the pairs and clusters ``simdb ingest`` of the same
documents in the same order finds: the fingerprint rows are imported into a
store (the index), each document's duplicate check against those before it
runs on the workers (the store's own search, read-only), and the clusters
are placed on the workers too, each connected component of the near-copy
graph by the store's rule in a scratch store of a worker's own. ``python -m simdb.ray dedup`` runs it from
files, resumably.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any, Optional, Union

from ._location import Location
from ._simdb import Analyzer, rule
from .engine import refuse_other_rule

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

#: The columns added to each row, with their Arrow types: ``fingerprint``
#: (uint64; null where the text has no usable features), ``sketch`` (32
#: bytes), ``length`` (the text's UTF-8 bytes), ``terms``, ``weak_bits``,
#: ``content_hash`` (uint64), ``parts`` (the part hashes a store keeps,
#: u64 big-endian each) and ``fine`` (the 96-byte fine sketch that settles
#: pairs near the threshold). ``simdb import --parquet`` of these rows (with
#: an ``id``, those with a fingerprint) keeps them all in its records.
COLUMNS = ("fingerprint", "sketch", "length", "terms", "weak_bits", "content_hash", "parts", "fine")

#: What a row may state of its document besides its text, as a JSON line
#: states it to ``simdb ingest``: ``priority`` (a finite number; the
#: highest represents its cluster under ``keep="priority"``) and ``time``
#: (its own time, as Unix seconds, an Arrow timestamp or date, or an RFC
#: 3339 string; what ``newest`` and ``expire`` go by). :func:`dedup`
#: carries them into the store when the rows have them.
STATED = ("priority", "time")

#: The column :func:`fingerprint` adds after :data:`COLUMNS`: the digest
#: (u64) of the rule each row was made under, its recipe with this
#: build's constants (:func:`simdb.rule`). :func:`dedup` refuses rows
#: stamped with another rule than its own (their pairs would not be the
#: store's); rows without the column (made before rows were stamped, or
#: by hand) are taken as made under the run's.
RULE = "rule"


def _types() -> dict[str, Any]:
    import pyarrow as pa

    return {
        "fingerprint": pa.uint64(),
        "sketch": pa.binary(32),
        "length": pa.uint64(),
        "terms": pa.uint32(),
        "weak_bits": pa.binary(),
        "content_hash": pa.uint64(),
        "parts": pa.binary(),
        "fine": pa.binary(96),
    }


def fingerprint_table(
    table: "pyarrow.Table", analyzer: Analyzer, text: str = "text", *, html: bool = False
) -> "pyarrow.Table":
    """``table`` with :data:`COLUMNS` (and :data:`RULE`) appended, computed from its ``text``
    column by ``analyzer``; with ``html``, that column holds web pages
    (string or binary), whose extracted text is analysed (see
    :func:`simdb.page`). A column of one of those names already in the
    table is refused (``ValueError``), not overwritten."""
    import pyarrow as pa

    if text not in table.column_names:
        raise ValueError(f"no column {text!r} (columns: {table.column_names})")
    taken = [c for c in COLUMNS + (RULE,) if c in table.column_names]
    if taken:
        raise ValueError(f"the table already has the column(s) {taken}")
    cols = analyzer.analyze_many(table.column(text).to_pylist(), html=html)
    types = _types()
    for name in COLUMNS:
        table = table.append_column(name, pa.array(cols[name], type=types[name]))
    stamp = pa.array([analyzer.rule] * table.num_rows, type=pa.uint64())
    return table.append_column(RULE, stamp)


def export_recipe(path: Union[str, "os.PathLike[str]"]) -> dict[str, Any]:
    """The recipe a ``simdb export --parquet`` states in its key-value
    metadata (``simdb.recipe``), from a part file or the export's
    directory (its first part), local or any URI ``pyarrow.fs`` reads
    (``s3://…``). Raises ``ValueError`` when there is none."""
    import json

    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    path = os.fspath(path)
    if "://" in path:
        fs, p = pafs.FileSystem.from_uri(path)
    else:
        fs, p = pafs.LocalFileSystem(), os.path.abspath(path)
    if fs.get_file_info(p).type == pafs.FileType.Directory:
        parts = sorted(
            i.path
            for i in fs.get_file_info(pafs.FileSelector(p))
            if i.path.endswith(".parquet") and not os.path.basename(i.path).startswith(("_", "."))
        )
        if not parts:
            raise ValueError(f"{path}: no .parquet part files")
        p = parts[0]
    with fs.open_input_file(p) as f:
        meta = pq.read_metadata(f).metadata or {}
    raw = meta.get(b"simdb.recipe")
    if raw is None:
        raise ValueError(
            f"{path}: no simdb.recipe in its metadata (not a simdb export, or one "
            "from before exports stated their recipe)"
        )
    return json.loads(raw)


class _Fingerprint:
    """The stateful worker of :func:`fingerprint`: one analyzer per actor."""

    def __init__(
        self,
        text: str,
        db: Optional[str],
        recipe: Optional[dict[str, Any]],
        options: dict[str, Any],
        html: bool = False,
    ) -> None:
        self.text = text
        self.html = html
        self.analyzer = Analyzer(db=db, recipe=recipe, **options)

    def __call__(self, batch: "pyarrow.Table") -> "pyarrow.Table":
        return fingerprint_table(batch, self.analyzer, self.text, html=self.html)


def fingerprint(
    ds: Any,
    *,
    text: str = "text",
    html: bool = False,
    db: Optional[Union[str, "os.PathLike[str]"]] = None,
    export: Optional[Union[str, "os.PathLike[str]"]] = None,
    batch_size: int = 4096,
    concurrency: int = 1,
    num_cpus: Optional[float] = None,
    **options: Any,
) -> Any:
    """A Ray Dataset with :data:`COLUMNS` added to each row, from its
    ``text`` column (with ``html``: web pages, whose title and main content
    are fingerprinted, as ``simdb ingest --format html`` extracts them).

    The recipe is that of the store ``db`` (its path; the store is read
    once per worker and closed) when given, or the one an export states
    (``export``: see :func:`export_recipe`), so the fingerprints match the
    store they will meet; otherwise the keyword arguments of
    :func:`simdb.fingerprint` (a new store's recipe by default).
    ``concurrency`` workers (Ray actors) each use ``num_cpus`` CPUs (all of
    a machine's but one by default, which the tasks that read the input
    need: the analysis is parallel inside a worker), so run one worker per
    machine. The rows come out in the input's order (materialized or
    written too): the order :func:`dedup` counts them in."""
    if db is not None:
        db = os.fspath(db)
    if db is not None and export is not None:
        raise ValueError("give db or export, not both")
    # A recipe given as a keyword (``recipe=``, as Analyzer takes one).
    recipe = export_recipe(export) if export is not None else options.pop("recipe", None)
    if num_cpus is None:
        # All of a machine's CPUs but one: the reading tasks that feed the
        # worker need one, or the two wait for each other.
        num_cpus = float(max(1, (os.cpu_count() or 1) - 1))
    # Fail here, on the driver, rather than in every worker.
    Analyzer(db=db, recipe=recipe, **options)
    out = ds.map_batches(
        _Fingerprint,
        fn_constructor_kwargs={
            "text": text, "db": db, "recipe": recipe, "options": options, "html": html,
        },
        batch_format="pyarrow",
        batch_size=batch_size,
        concurrency=concurrency,
        num_cpus=num_cpus,
    )
    # In the input's order, materialized or written too: the order
    # :func:`dedup` counts the documents in.
    out.context.execution_options.preserve_order = True
    return out


def _inputs(paths: list[str]) -> list[str]:
    """The input files: each path, or the ``*.parquet`` / ``*.jsonl`` files
    of a directory, in name order."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(
                os.path.join(p, f)
                for f in os.listdir(p)
                if f.endswith((".parquet", ".jsonl", ".json")) and not f.startswith((".", "_"))
            )
        else:
            out.append(p)
    return out


def fingerprint_files(
    inputs: list[str],
    out: str,
    *,
    text: str = "text",
    html: bool = False,
    db: Optional[str] = None,
    export: Optional[str] = None,
    num_cpus: Optional[float] = None,
    log: Any = None,
    **options: Any,
) -> dict[str, int]:
    """The fingerprints of each input file (Parquet, or JSON lines), one
    output directory of Parquet parts per input under ``out``, resumable:
    each is written under a temporary name and renamed into place when
    whole (with an empty ``_SUCCESS``, so ``simdb import --parquet`` takes
    it), so a run that is killed and run again skips the inputs already
    done and redoes the one it was writing. Returns the counts of inputs
    done now, skipped (done before) and rows written. With ``html``, the
    ``text`` column holds web pages (see :func:`fingerprint`). Needs
    ``ray.init`` (or lets Ray start a local instance)."""
    import shutil

    import pyarrow.parquet as pq
    import ray

    os.makedirs(out, exist_ok=True)
    counts = {"done": 0, "skipped": 0, "rows": 0}
    for path in _inputs(inputs):
        name = os.path.splitext(os.path.basename(path))[0]
        final = os.path.join(out, name)
        if os.path.isdir(final):
            counts["skipped"] += 1
            continue
        tmp = os.path.join(out, f".{name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if path.endswith(".parquet"):
            ds = _read_parquet(path)
        else:
            ds = ray.data.read_json(path, lines=True)
        fps = fingerprint(
            ds, text=text, html=html, db=db, export=export, num_cpus=num_cpus, **options
        )
        fps.write_parquet(tmp)
        rows = sum(
            pq.read_metadata(os.path.join(tmp, f)).num_rows
            for f in os.listdir(tmp)
            if f.endswith(".parquet")
        )
        # Whole: marked as Spark and simdb export mark a finished output
        # (`simdb import OUT/NAME` takes the directory), then in place.
        open(os.path.join(tmp, "_SUCCESS"), "wb").close()
        os.rename(tmp, final)
        counts["done"] += 1
        counts["rows"] += rows
        if log is not None:
            log(f"{path}: {rows} rows -> {final}")
    return counts


# ---------------------------------------------------------------- dedup

#: Documents per Parquet part of the ordered input (stage 1 of :func:`dedup`).
INPUT_PART_ROWS = 1_000_000

#: The Arrow schema of the pairs :func:`dedup` writes (as the Spark job's).
PAIR_COLUMNS = ("a", "b", "distance", "similarity", "containment")

#: The Arrow schema of the clusters :func:`dedup` writes (as the Spark job's).
CLUSTER_COLUMNS = ("cluster", "size", "representative", "id", "rank", "distance")

_IMPORT_COLUMNS = ("id",) + COLUMNS


def _read_parquet(paths: Any, filesystem: Any = None) -> Any:
    """``ray.data.read_parquet(paths)``, with fsspec's HTTP module
    imported first: Ray 2.60 resolves paths on several threads, each
    importing it, and a thread that finds it half imported fails with an
    ImportError (seen with fsspec 2026.9). Imported once here, it is
    whole for them; without aiohttp (which it needs, and tools/ray.sh
    installs) it cannot be, and the race stays possible."""
    import ray

    try:
        import fsspec.implementations.http  # noqa: F401
    except ImportError:
        pass
    return ray.data.read_parquet(paths, filesystem=filesystem)


@contextmanager
def in_order(ds: Any) -> Any:
    """``ds`` executed in its rows' order inside the block. A Dataset runs
    under its own copy of the context (taken when it was made), so the
    order is asked of it, not of the global context (which the dataset no
    longer reads: runs made so were in Ray's order, not always the rows')."""
    opts = ds.context.execution_options
    before = opts.preserve_order
    opts.preserve_order = True
    try:
        yield ds
    finally:
        opts.preserve_order = before


def _write_atomically(table: "pyarrow.Table", path: Any) -> None:
    """``table`` as Parquet at ``path`` (a path or a
    :class:`~simdb._location.Location`), whole or not at all."""
    Location.of(path).write_table(table)


def _done(path: Any) -> bool:
    return Location.of(path).exists()


def write_mark(path: Any, what: dict) -> None:
    """Marks a finished stage: ``what`` as JSON at ``path`` (a path or a
    :class:`~simdb._location.Location`), whole or not at all (the
    engines' dedup stages; see :func:`dedup`)."""
    Location.of(path).write_json(what)


def read_mark(path: Any) -> dict:
    """What :func:`write_mark` wrote at ``path``."""
    return Location.of(path).read_json()


def order_input(
    batches: Any, work: str, *, id: str = "id", priority: str = "priority", time: str = "time",
    rule: Optional[int] = None,
) -> dict:
    """Stage 1 of :func:`dedup`: the fingerprint rows (an iterable of
    Arrow tables or record batches, in the order the documents count in:
    the first of near copies is the one kept under ``keep="first"``)
    written to ``WORK/input/`` as numbered Parquet parts of the columns
    ``simdb import`` takes, with the columns ``priority`` and ``time`` name
    (:data:`STATED`) where the rows have them. Rows stamped with a rule
    other than ``rule`` (the run's digest) are refused. Marked by
    ``WORK/input.json`` when whole; done again from the start otherwise."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    out = os.path.join(work, "input")
    marker = os.path.join(work, "input.json")
    if _done(marker):
        return read_mark(marker)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    parts, rows, pending, held = 0, 0, [], 0

    def flush() -> None:
        nonlocal parts, pending, held
        if pending:
            # Blocks of JSON lines without a "priority" get nulls; integer
            # and float priorities, one number type.
            t = pa.concat_tables(pending, promote_options="permissive")
            pq.write_table(t, os.path.join(out, f"part-{parts:05}.parquet"))
            parts += 1
            pending, held = [], 0

    for b in batches:
        t = b if isinstance(b, pa.Table) else pa.Table.from_batches([b])
        if "fine" not in t.column_names and "fingerprint" in t.column_names:
            # Rows fingerprinted before the fine sketch (format 14): their
            # pairs are confirmed by the 32-byte sketch alone, as a store's
            # records from before are.
            t = t.append_column("fine", pa.nulls(t.num_rows, pa.binary(96)))
        missing = [c for c in _IMPORT_COLUMNS if c != "id" and c not in t.column_names]
        if id not in t.column_names or missing:
            raise ValueError(
                f"the rows have no column(s) {([id] if id not in t.column_names else []) + missing}: "
                "give dedup the output of simdb.ray.fingerprint"
            )
        refuse_other_rule(t, rule)
        stated = [(c, name) for c, name in zip((priority, time), STATED) if c in t.column_names]
        t = t.select([id] + list(COLUMNS) + [c for c, _ in stated])
        t = t.rename_columns(["id"] + list(COLUMNS) + [name for _, name in stated])
        t = t.set_column(0, "id", pa.compute.cast(t.column(0), pa.string()))
        pending.append(t)
        held += t.num_rows
        rows += t.num_rows
        if held >= INPUT_PART_ROWS:
            flush()
    flush()
    # Whole: `simdb import` takes a directory with a `_SUCCESS`.
    open(os.path.join(out, "_SUCCESS"), "wb").close()
    what = {"rows": rows, "parts": parts}
    write_mark(marker, what)
    return what


def import_input(
    work: str, recipe: Optional[dict[str, Any]] = None, incremental: Optional[str] = None
) -> dict:
    """Stage 2 of :func:`dedup`: ``simdb import`` of ``WORK/input/`` into
    the store ``WORK/store`` (with its frozen index); with ``incremental``
    (an earlier run's work directory), of that run's input first and then
    this one's, so the earlier documents keep their ords. An import
    appears whole or not at all; a store already there is this stage
    done. Returns the counts, and ``first_ord``: the ord of this run's
    first document."""
    import pyarrow.parquet as pq

    from . import _simdb

    store = os.path.join(work, "store")
    marker = os.path.join(work, "store.json")
    if _done(marker) and os.path.isdir(store):
        return read_mark(marker)
    inputs = [os.path.join(work, "input")]
    checks = [os.path.join(work, "checks")]
    if incremental is not None:
        # Every night's input so far, in order: an incremental run's own
        # input holds its night only.
        earlier = read_mark(os.path.join(incremental, "store.json"))
        inputs = earlier.get("inputs", [os.path.join(incremental, "input")]) + inputs
        checks = earlier.get("checks", [os.path.join(incremental, "checks")]) + checks
    if not os.path.isdir(store):
        s = _simdb.import_parquet(store, inputs, recipe=recipe)
    else:
        s = {"documents": len(_simdb.Db.open(store, read_only=True))}
    if s.get("replaced"):
        import shutil

        shutil.rmtree(store)
        raise ValueError(
            f"{s['replaced']} ids of this run's rows are already in {incremental} (or given "
            "twice): incremental dedup takes new documents, each once"
        )
    # The first document of this run's input with a fingerprint.
    first = None
    for f in sorted(os.listdir(inputs[-1])):
        if f.endswith(".parquet"):
            t = pq.read_table(os.path.join(inputs[-1], f), columns=["id", "fingerprint"])
            t = t.filter(t.column("fingerprint").is_valid())
            if t.num_rows:
                first = t.column("id")[0].as_py()
                break
    first_ord = None
    if first is not None:
        with _simdb.Db.open(store, read_only=True) as db:
            first_ord = db.get(first)["ord"]
    what = {
        "documents": s["documents"],
        "records": s.get("records", s["documents"]),
        "no_fingerprint": s.get("no_fingerprint", 0),
        "first_ord": first_ord,
        "inputs": [os.path.abspath(i) for i in inputs],
        "checks": [os.path.abspath(c) for c in checks],
    }
    write_mark(marker, what)
    return what


def check_range(store: str, start: int, end: int) -> "pyarrow.Table":
    """Each document of the store whose ord is in ``start..end`` that has
    confirmed near-copies among the documents before it (the store's
    duplicate check, see ``Db.earlier_copies``): columns ``ord``, ``id``,
    ``near``, ``distance``, ``similarity``, ``containment`` (lists, nearest
    first), and what the placement on the workers needs of the store:
    ``record`` (the document's record, as the store's codec writes it),
    ``near_ord`` and ``near_record`` (its near copies'). The table's
    metadata holds ``checked``."""
    import pyarrow as pa

    from ._simdb import Db

    with Db.open(store, read_only=True) as db:
        c = db.earlier_copies(start, end)
        wanted = sorted(set(c["id"]).union(*[set(n) for n in c["near"]]) if c["id"] else set())
        got = db.records(wanted)
    of = dict(zip(wanted, zip(got["ord"], got["record"])))
    t = pa.table(
        {
            "ord": pa.array(c["ord"], pa.uint64()),
            "id": pa.array(c["id"], pa.string()),
            "near": pa.array(c["near"], pa.list_(pa.string())),
            "distance": pa.array(c["distance"], pa.list_(pa.uint32())),
            "similarity": pa.array(c["similarity"], pa.list_(pa.float64())),
            "containment": pa.array(c["containment"], pa.list_(pa.float64())),
            "record": pa.array([of[i][1] for i in c["id"]], pa.binary()),
            "near_ord": pa.array([[of[n][0] for n in near] for near in c["near"]], pa.list_(pa.uint64())),
            "near_record": pa.array([[of[n][1] for n in near] for near in c["near"]], pa.list_(pa.binary())),
        }
    )
    return t.replace_schema_metadata({"checked": str(c["checked"])})


def check_ranges(
    documents: int, parts: int, first_ord: int = 1
) -> list[tuple[int, int, int]]:
    """Stage 3's work: (part, start, end) ranges of ords covering the
    ``documents`` imported from ``first_ord`` on (to the end)."""
    parts = max(1, min(parts, documents))
    step = max(1, -(-documents // parts))
    out = []
    for i in range(parts):
        lo = first_ord + i * step
        hi = first_ord + (i + 1) * step if i + 1 < parts else 2**63 - 1
        out.append((i, lo, hi))
    return out


def plan_checks(
    rows: int, store: dict, parts: Optional[int] = None
) -> list[tuple[int, int, int]]:
    """Stage 3's ranges for this run's ``rows``: from the import's
    ``first_ord`` on, in ``parts`` ranges (by default one per 200,000
    documents, at most 256)."""
    if parts is None:
        parts = max(1, min(256, -(-rows // 200_000)))
    first_ord = store["first_ord"] or 2**63 - 2
    return check_ranges(rows, parts, first_ord)


def check_part(work: str, part: int, start: int, end: int) -> dict:
    """One part of stage 3: :func:`check_range` written to
    ``WORK/checks/part-NNNNN.parquet`` (whole or not at all), or nothing
    if that file is there from an earlier run. Returns its counts."""
    import pyarrow.parquet as pq

    out = os.path.join(work, "checks")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"part-{part:05}.parquet")
    t0 = perf_counter()
    if _done(path):
        meta = pq.read_schema(path).metadata or {}
        return {"part": part, "checked": int(meta.get(b"checked", 0)), "skipped": 1,
                "seconds": round(perf_counter() - t0, 3)}
    t = check_range(os.path.join(work, "store"), start, end)
    _write_atomically(t, path)
    return {"part": part, "checked": int(t.schema.metadata[b"checked"]), "skipped": 0,
            "seconds": round(perf_counter() - t0, 3)}


def place(work: str, keep: Optional[str] = None, decisions: Optional[str] = None) -> dict:
    """Stage 4 of :func:`dedup` on one machine (what :func:`dedup` did
    before :func:`place_on_workers`; kept to compare with it,
    ``tools/engine_dedup.py --driver-place``): the store's clusters rebuilt from the
    near-copy lists of stage 3 (``simdb.rebuild_clusters``), as ingest
    would have built them under ``keep`` (default: the store's policy,
    ``first`` for an import); after an incremental run, the earlier runs'
    lists first (their checks directories, as the import's marker names
    them). With ``decisions`` (a log of ``simdb decisions --json``), the
    store takes them first and the clusters obey them ("not a copy"
    pairs are never representative and member). Marked by
    ``WORK/placed.json``."""
    from . import _simdb

    marker = os.path.join(work, "placed.json")
    if _done(marker):
        return read_mark(marker)

    chain = read_mark(os.path.join(work, "store.json")).get("checks", [os.path.join(work, "checks")])

    def lists():
        for path in [p for d in chain for p in Location.of(d).parquet_parts()]:
            t = path.read_table(columns=["ord", "near"])
            yield from zip(t.column("ord").to_pylist(), t.column("near").to_pylist())

    store = os.path.join(work, "store")
    if decisions is not None:
        with _simdb.Db.open(store) as db:
            # Once: a run stopped after this step finds them there.
            if not db.decisions(limit=1)["decisions"]:
                db.replay_decisions(os.fspath(decisions))
    n = _simdb.rebuild_clusters(store, lists(), keep=keep)
    what = {"clusters": n, "keep": keep or "store"}
    write_mark(marker, what)
    return what


def _joined(work: Any) -> Optional[dict]:
    """The marker of a join run's checks (``index="join"``), or None for
    a run with a store."""
    path = Location.of(work).join("join.json")
    return read_mark(path) if path.exists() else None


def _check_chain(work: Any) -> list[Location]:
    """The check part files of every night so far, oldest first (on the
    work directory's file system)."""
    work = Location.of(work)
    mark = _joined(work) or read_mark(work.join("store.json"))
    chain = mark.get("checks", [work.join("checks").path])
    return [p for d in chain for p in Location(work.fs, d).parquet_parts()]


def _place_bucket(
    t: "pyarrow.Table",
    out: Any,
    recipe: Optional[dict[str, Any]],
    keep: Optional[str],
    decisions: Union[str, bytes, None],
    written_at: Optional[int] = None,
) -> "pyarrow.Table":
    """One group of the placement on the workers: the components whose
    label falls in one bucket, placed (``simdb.engine.place_partition``,
    obeying ``decisions``: a local log file, or the log's bytes) and
    written to ``OUT/part-BUCKET.parquet`` whole or not at all; a bucket
    whose file is there from an earlier run is not placed again. Returns
    its counts."""
    import pyarrow as pa

    from . import engine

    b = int(t.column("bucket")[0].as_py())
    path = Location.of(out).join(f"part-{b:05}.parquet")
    if path.exists():
        placed, skipped = path.read_table(columns=["cluster"]), 1
    else:
        with _log_file(decisions) as log:
            placed = engine.place_partition(t, recipe=recipe, keep=keep, decisions=log, written_at=written_at)
        path.write_table(placed)
        skipped = 0
    clusters = len(pa.compute.unique(placed.column("cluster"))) if placed.num_rows else 0
    return pa.table({"bucket": [b], "members": [placed.num_rows], "skipped": [skipped],
                     "clusters": [clusters]})


@contextmanager
def _log_file(decisions: Union[str, bytes, None]) -> Any:
    """A local path of decision log ``decisions`` (a path, kept; or the
    log's bytes, written to a temporary file of the task's own)."""
    if not isinstance(decisions, bytes):
        yield decisions
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="simdb-log-") as d:
        path = os.path.join(d, "decisions.jsonl")
        with open(path, "wb") as f:
            f.write(decisions)
        yield path


def place_on_workers(
    work: Any,
    keep: Optional[str] = None,
    decisions: Optional[str] = None,
    *,
    buckets: Optional[int] = None,
    num_cpus: Optional[float] = None,
) -> dict:
    """Stage 4 of :func:`dedup`, on the workers: the components of the
    near-copy graph of every night's checks (large-star / small-star,
    ``simdb.engine``: each step ``buckets`` Ray tasks whose outputs are
    routed by bucket to the next step's, the driver seeing only the count
    of edges that moved), each vertex joined with its component, and the
    components placed in ``buckets`` groups (one per 100,000 documents,
    from 2 to 256), each on a worker in a scratch store of its own
    (``simdb.place_components``:
    the store's rule under ``keep``, obeying ``decisions``), written to
    ``WORK/clusters/part-NNNNN.parquet``. Then the store takes the
    clusters (``simdb.put_clusters``, after the decisions), so it serves
    them; a join run (``index="join"``) has no store, and its clusters
    are the files. Marked by ``WORK/placed.json``; a killed run redoes the steps
    and skips the buckets already written (the components, and so the
    buckets, are the same)."""
    from . import _simdb

    work = Location.of(work)
    marker = work.join("placed.json")
    if _done(marker):
        return read_mark(marker)
    store = work.join("store").path
    joined = _joined(work)
    parts = _check_chain(work)
    if joined is None:
        with _simdb.Db.open(store, read_only=True) as db:
            recipe = db.recipe
            keep = keep or db.keep_policy
            documents = len(db)
        written_at = _written_at(store, parts)
    else:
        # A join run has no store: what the placement takes of one is in
        # its marker (every night's documents are taken as written then).
        recipe, keep = joined["recipe"], keep or "first"
        documents = joined["next_ord"] - 1
        written_at = joined["written_at"]
    if buckets is None:
        buckets = max(2, min(256, -(-documents // 100_000)))
    out = work.join("clusters")
    out.makedirs()
    what: dict[str, Any] = {"keep": keep, "buckets": buckets, "rounds": 0}
    pairs = sum(p.num_rows() for p in parts)
    if pairs:
        # The log goes to the workers as its bytes: a file of the driver's.
        log = None if decisions is None else open(decisions, "rb").read()
        done = _place_tasks(parts, out, buckets, recipe, keep, log, written_at, what, num_cpus)
        what["members"] = sum(r["members"] for r in done)
        what["skipped"] = sum(r["skipped"] for r in done)
        # The longest placement task: what more workers cannot divide.
        what["longest_task_seconds"] = max((r["seconds"] for r in done), default=0.0)
    else:
        what["members"] = what["skipped"] = 0
        what["longest_task_seconds"] = 0.0
        write_empty_clusters(out)
    out.join("_SUCCESS").write_bytes(b"")
    if joined is not None:
        what["clusters"] = sum(r.get("clusters", 0) for r in done) if pairs else 0
        write_mark(marker, what)
        return what
    # The store serves them: the decisions first (its records' kept
    # marks), then the clusters as the workers placed them.
    if decisions is not None:
        with _simdb.Db.open(store) as db:
            if not db.decisions(limit=1)["decisions"]:
                db.replay_decisions(os.fspath(decisions))
    t0 = perf_counter()
    what["clusters"] = _simdb.put_clusters(store, _cluster_chunks(out.path), keep=keep)
    # On the driver's machine, into the one store.
    what["put_clusters_seconds"] = round(perf_counter() - t0, 3)
    write_mark(marker, what)
    return what


def cluster_schema() -> "pyarrow.Schema":
    """The columns of a cluster row, with their types."""
    import pyarrow as pa

    from .engine import CLUSTER_COLUMNS

    types = [pa.int64(), pa.int64(), pa.string(), pa.string(), pa.int32(), pa.int32()]
    return pa.schema(list(zip(CLUSTER_COLUMNS, types)))


def write_empty_clusters(out: Any) -> None:
    """A placement with no pairs: one empty part, so that readers of
    ``out`` find the columns."""
    Location.of(out).join("part-00000.parquet").write_table(cluster_schema().empty_table())


def _written_at(store: str, parts: list[str]) -> Optional[int]:
    """The time the store's import wrote its records at (one for all):
    what the placement takes every record as written at, so that
    ``newest`` ranks as the store does although the checks of earlier
    nights carry their own nights' times. None when there are no checks."""
    from ._simdb import Db

    for p in parts:
        t = Location.of(p).read_table(columns=["id"])
        if t.num_rows:
            with Db.open(store, read_only=True) as db:
                return int(db.get(t.column("id")[0].as_py())["ingested_at"])
    return None


def _read_part_task(path: Location, buckets: int) -> tuple:
    """A check part's edges (both ways, split by the bucket of ``u``) and
    vertices (split by the bucket of their ord): 2 × ``buckets`` tables."""
    from . import engine

    cols = ["ord", "id", "near", "record", "near_ord", "near_record"]
    t = path.read_table(columns=cols)
    edges = engine.split(engine.both_ways(engine.edges(t), buckets), "u", buckets)
    vertices = engine.split(engine.vertices(t), "ord", buckets)
    return tuple(edges) + tuple(vertices)


def _star_task(step: str, buckets: int, *tables: Any) -> tuple:
    """One large-star or small-star step over the edges of one bucket of
    nodes (``tables``: the pieces routed to it): the new edges, both ways,
    split by the bucket of ``u`` for the next step, and the count of edges
    that moved."""
    import pyarrow.compute as pc

    from . import engine

    out = getattr(engine, step)(engine.concat(tables))
    changed = int(pc.sum(out.column("changed")).as_py() or 0)
    return tuple(engine.split(engine.both_ways(out, buckets), "u", buckets)) + (changed,)


def _label_task(buckets: int, edge_pieces: int, *tables: Any) -> tuple:
    """The nodes of one bucket labelled with their component, joined with
    their vertices (``tables``: the bucket's converged edges, then its
    vertex pieces), split by the bucket of the label."""
    from . import engine

    lab = engine.label_rows(engine.labels(engine.concat(tables[:edge_pieces])))
    ver = engine.concat(tables[edge_pieces:])
    joined = engine.label_vertices(engine.concat([lab, ver]), buckets)
    return tuple(engine.split(joined, "label", buckets))


def _place_task(out: Location, recipe: Any, keep: Any, decisions: Any, written_at: Any, *tables: Any) -> dict:
    """One bucket of components placed and written (:func:`_place_bucket`)."""
    from . import engine

    t0 = perf_counter()
    t = engine.concat(tables)
    if t.num_rows == 0:
        return {"members": 0, "skipped": 0, "seconds": round(perf_counter() - t0, 3)}
    r = _place_bucket(t, out, recipe, keep, decisions, written_at).to_pylist()[0]
    return dict(r, seconds=round(perf_counter() - t0, 3))


def _place_tasks(
    parts: list[Location],
    out: Location,
    buckets: int,
    recipe: Any,
    keep: Any,
    decisions: Any,
    written_at: Any,
    what: dict,
    num_cpus: Optional[float],
) -> list[dict]:
    """Stage 4's shuffles on Ray tasks: each step is ``buckets`` tasks,
    each returning its output split by the next step's bucket, so every
    table stays in the object store and the driver holds references and
    counts (what goes through ``ray.get``: the counts of moved edges and
    each bucket's placement counts)."""
    import ray

    opts: dict[str, Any] = {} if num_cpus is None else {"num_cpus": min(1.0, num_cpus)}
    read = ray.remote(_read_part_task).options(num_returns=2 * buckets, **opts)
    star = ray.remote(_star_task).options(num_returns=buckets + 1, **opts)
    label = ray.remote(_label_task).options(num_returns=buckets, **opts)
    place = ray.remote(_place_task).options(**opts)
    got = [read.remote(p, buckets) for p in parts]
    # edges[i][b]: piece i of bucket b (pieces from every producer).
    edges = [g[:buckets] for g in got]
    vertices = [g[buckets:] for g in got]
    while True:
        changed = 0
        for step in ("large_star", "small_star"):
            outs = [star.remote(step, buckets, *[e[b] for e in edges]) for b in range(buckets)]
            edges = [o[:buckets] for o in outs]
            changed += sum(ray.get([o[buckets] for o in outs]))
        what["rounds"] += 1
        if changed == 0:
            break
    n = len(edges)
    labelled = [
        label.remote(buckets, n, *[e[b] for e in edges], *[v[b] for v in vertices]) for b in range(buckets)
    ]
    return ray.get(
        [place.remote(out, recipe, keep, decisions, written_at, *[x[b] for x in labelled]) for b in range(buckets)]
    )


def _cluster_chunks(out: str, rows: int = 65536) -> Any:
    """The cluster rows of the placement's part files as (clusters, ranks,
    ids) chunks, each file's rows in its order (a cluster's together)."""
    import pyarrow.parquet as pq

    for f in sorted(os.listdir(out)):
        if not (f.startswith("part-") and f.endswith(".parquet")):
            continue
        pf = pq.ParquetFile(os.path.join(out, f))
        for b in pf.iter_batches(batch_size=rows, columns=["cluster", "rank", "id"]):
            yield (b.column(0).to_pylist(), b.column(1).to_pylist(), b.column(2).to_pylist())


def pairs_table(checks: "pyarrow.Table") -> "pyarrow.Table":
    """The pairs of stage 3's rows: each document with each of its
    confirmed earlier near-copies, named ``a < b`` by id, with the
    pair's distance, similarity and containment (the Spark job's
    columns)."""
    import pyarrow as pa

    a, b, d, s, c = [], [], [], [], []
    for row in checks.to_pylist():
        for near, dist, sim, cont in zip(row["near"], row["distance"], row["similarity"], row["containment"]):
            x, y = sorted((row["id"], near))
            a.append(x)
            b.append(y)
            d.append(dist)
            s.append(sim)
            c.append(cont)
    return pa.table(
        {
            "a": pa.array(a, pa.string()),
            "b": pa.array(b, pa.string()),
            "distance": pa.array(d, pa.int32()),
            "similarity": pa.array(s, pa.float64()),
            "containment": pa.array(c, pa.float64()),
        }
    )


def clusters_table(store: str) -> "pyarrow.Table":
    """The store's clusters of two or more, one row per member: cluster
    (its id), size, representative, id, rank (0: the representative) and
    distance (bits from the representative), as the Spark job writes
    them."""
    import pyarrow as pa

    from ._simdb import Db

    cols: dict[str, list] = {c: [] for c in CLUSTER_COLUMNS}
    with Db.open(store, read_only=True) as db:
        for c in db.clusters(min_size=2, max_members=2**31):
            # Members come in rank order, the representative first.
            for rank, m in enumerate(c["members"]):
                cols["cluster"].append(c["id"])
                cols["size"].append(c["size"])
                cols["representative"].append(c["representative"])
                cols["id"].append(m["id"])
                cols["rank"].append(rank)
                cols["distance"].append(m["distance"])
    types = {
        "cluster": pa.int64(),
        "size": pa.int64(),
        "representative": pa.string(),
        "id": pa.string(),
        "rank": pa.int32(),
        "distance": pa.int32(),
    }
    return pa.table({c: pa.array(v, types[c]) for c, v in cols.items()})


class _Checker:
    """The stateful worker of stage 3: checks parts of the store's ords."""

    def __init__(self, work: str) -> None:
        self.work = work

    def __call__(self, batch: dict) -> dict:
        out: dict[str, list] = {"part": [], "checked": [], "skipped": [], "seconds": []}
        for part, lo, hi in zip(batch["part"], batch["start"], batch["end"]):
            r = check_part(self.work, int(part), int(lo), int(hi))
            for k in out:
                out[k].append(r[k])
        return out


class Dedup:
    """What :func:`dedup` found: ``pairs`` and ``clusters`` (Ray Datasets
    of :data:`PAIR_COLUMNS` and :data:`CLUSTER_COLUMNS`), ``report`` (the
    counts and seconds per stage) and ``store`` (the path of the store
    that holds the documents and clusters: it serves them; for a run with
    ``index="join"``, the ``store`` it was given, else None)."""

    def __init__(self, pairs: Any, clusters: Any, report: dict, store: Optional[str]) -> None:
        self.pairs = pairs
        self.clusters = clusters
        self.report = report
        self.store = store

    def __repr__(self) -> str:
        return f"Dedup(store={self.store!r}, report={self.report!r})"


def dedup(
    fps: Any,
    work: Union[str, "os.PathLike[str]"],
    *,
    keep: str = "first",
    id: str = "id",
    recipe: Optional[dict[str, Any]] = None,
    parts: Optional[int] = None,
    concurrency: int = 1,
    num_cpus: Optional[float] = None,
    incremental: Optional[Union[str, "os.PathLike[str]"]] = None,
    on_stage: Any = None,
    decisions: Optional[Union[str, "os.PathLike[str]"]] = None,
    priority: str = "priority",
    time: str = "time",
    index: str = "store",
    buckets: Optional[int] = None,
    store: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Dedup:
    """Near-duplicate pairs and clusters of ``fps`` (the output of
    :func:`fingerprint`, in the order the documents count in), found as
    ``simdb ingest`` of the same documents in that order finds them, and
    clustered as it clusters them under ``keep`` (first, newest, longest,
    priority). The columns ``priority`` and ``time`` name, where ``fps``
    has them, are each document's priority and own time (see
    :data:`STATED`), as a JSON line's ``"priority"`` and ``"time"`` are to
    ``simdb ingest``.

    Stages, each resumable in the work directory ``work`` (a stage that
    finished is not done again; a part of stage 3 that finished is
    skipped):

    1. the rows, in order, to ``WORK/input/`` (streamed through the driver);
    2. ``simdb import`` of them into ``WORK/store`` (one machine; the
       index the checks share, with its frozen index);
    3. each document's duplicate check against the documents before it
       (the store's own search: the exact-k buckets, the ranked plan and
       the 16 band buckets with their nearest-16 cap, confirmed by the
       sketch), over ``parts`` ranges of ords on ``concurrency`` Ray
       workers, each opening the store read-only (on one machine, or on a
       file system they share);
    4. the clusters placed on the workers (:func:`place_on_workers`):
       the components of the near-copy graph, each bucket of them placed
       by the store's rule in a scratch store of a worker's own (obeying
       ``decisions``, a log of ``simdb decisions --json``, if given), then
       written into the store (which takes the decisions first, as
       ``Db.replay_decisions``), so that it serves them.

    **No store** (``index="join"``): stages 1 to 3 are replaced by the
    check as a join on Ray tasks (``simdb.engine``'s stages, each over
    ``buckets`` shares: by default one per 100,000 documents, from 2 to
    256): each block of ``fps`` becomes its documents' records on a
    worker, at ords from the blocks' row counts, and the index entries
    and probes meet by key in the object store, so no row passes through
    the driver and no worker reads a path another wrote. The checks and
    the placement find what ingest finds, as the store's path does; the
    run has no store to serve them (``Dedup.store`` is None) unless
    ``store`` names a new path for one: the run's documents in their
    clusters are then written on the workers as the export of the store
    the run stands for (``WORK/export/``, as ``simdb export --parquet``
    writes one, with the decision log it obeyed), and the workers build
    that store from it by key range, assembled on the driver's machine
    (every record, the clusters as placed), for ``simdb serve`` and
    ``simdb query``. An incremental run continues a join run's work
    directory. ``WORK/records/`` holds the run's documents for the next
    night. A join run's ``work`` may be a URI of a file system pyarrow
    opens (``s3://bucket/path``, with its options in the query), so that
    the driver and the workers share no file system: every file a task
    writes and another reads is an object there (docs/python.md, "No
    shared file system"); ``store`` is a path of the driver's machine.

    The recipe is the one the fingerprints were made with (``recipe``:
    ``Analyzer.recipe``; default: a new store's, or with ``incremental``
    the earlier run's). ``on_stage``, if given, is called with each
    stage's name (input, import, checks, place; store) as it starts.

    **Incremental** (``incremental``: the work directory of an earlier,
    finished run, which is read, not changed): tonight's rows are imported
    after that run's (which keep their ords), only tonight's documents are
    checked (against everything before them: the earlier documents and
    tonight's), the earlier runs' checks are reused (read from their work
    directories, which must stay), and the clusters are placed again over
    all of them. ``pairs`` are tonight's, as ingesting tonight's
    documents into the earlier run's store would report them; ``clusters``
    are the whole store's after tonight. The work directory of this run can
    be the ``incremental`` of the next night's."""
    import ray

    if index not in ("store", "join"):
        raise ValueError(f"index must be \"store\" or \"join\", not {index!r}")
    where = Location.of(work)
    if not where.local and index != "join":
        raise ValueError(
            f'{where}: index="store" keeps the store its workers open in the work directory, '
            'a local path (on a file system they share); index="join" takes a URI'
        )
    if store is not None:
        if index != "join":
            raise ValueError('store= is for index="join" (index="store" builds WORK/store)')
        from ._rayjoin import refuse_taken

        store = os.path.abspath(os.fspath(store))
        refuse_taken(where, store)
    where.makedirs()
    work = where.path
    report: dict[str, Any] = {"keep": keep, "index": index, "seconds": {}}
    old = before = None
    if incremental is not None:
        before = Location.of(incremental)
        if before == where:
            raise ValueError("the incremental run's work directory must be a new one")
        if (before.local, before.fs.type_name) != (where.local, where.fs.type_name):
            raise ValueError(f"{before} and {where}: an incremental run's work directory is on the earlier run's file system")
        finished = before.join("placed.json").exists()
        if index == "join":
            if not (finished and before.join("join.json").exists()):
                raise ValueError(
                    f"{before}: not the work directory of a finished dedup run with index=\"join\""
                )
        elif not (finished and os.path.isdir(before.join("input").path)):
            raise ValueError(f"{before}: not the work directory of a finished dedup run")
        elif recipe is None:
            from ._simdb import Db

            with Db.open(before.join("store").path, read_only=True) as db:
                recipe = db.recipe
        old = before.path
        report["incremental"] = str(before)

    def stage(name: str) -> float:
        if on_stage is not None:
            on_stage(name)
        return perf_counter()

    if num_cpus is None and index == "join":
        num_cpus = float(os.cpu_count() or 1)
    if index == "join":
        from ._rayjoin import join_checks

        t = stage("checks")
        report["join"] = join_checks(
            fps, where, recipe=recipe, incremental=before, buckets=buckets, num_cpus=num_cpus,
            id=id, priority=priority, time=time,
        )
        report["checks"] = {
            "checked": report["join"]["checked"],
            "longest_task_seconds": max(report["join"]["longest_task_seconds"].values()),
        }
        report["seconds"]["checks"] = round(perf_counter() - t, 3)
        r = _placed(report, where, keep, decisions, num_cpus, stage, store=None)
        if store is not None:
            r.store = _store_of_join(report, where, store, decisions, num_cpus, stage)
        return r

    t = stage("input")
    with in_order(fps):
        report["input"] = order_input(
            fps.iter_batches(batch_format="pyarrow", batch_size=65536), work, id=id,
            priority=priority, time=time, rule=rule(recipe)["digest"],
        )
    report["seconds"]["input"] = round(perf_counter() - t, 3)
    t = stage("import")
    report["store"] = import_input(work, recipe, old)
    report["seconds"]["import"] = round(perf_counter() - t, 3)
    t = stage("checks")
    ranges = plan_checks(report["input"]["rows"], report["store"], parts)
    if num_cpus is None:
        num_cpus = float(os.cpu_count() or 1)
    done = (
        ray.data.from_items([{"part": p, "start": lo, "end": hi} for p, lo, hi in ranges])
        .map_batches(
            _Checker,
            fn_constructor_kwargs={"work": work},
            batch_size=1,
            concurrency=concurrency,
            num_cpus=num_cpus,
        )
        .take_all()
    )
    report["checks"] = {
        "parts": len(ranges),
        "skipped": sum(r["skipped"] for r in done),
        "checked": sum(r["checked"] for r in done),
        # The longest range's check: what more workers cannot divide.
        "longest_task_seconds": max((r["seconds"] for r in done), default=0.0),
    }
    report["seconds"]["checks"] = round(perf_counter() - t, 3)
    return _placed(report, work, keep, decisions, num_cpus, stage, store=os.path.join(work, "store"))


def _placed(
    report: dict, work: Any, keep: str, decisions: Any, num_cpus: Any, stage: Any, store: Optional[str]
) -> Dedup:
    """:func:`dedup`'s last stage (the placement on the workers) and its
    outputs: tonight's pairs and the clusters."""
    t = stage("place")
    report["placed"] = place_on_workers(
        work,
        keep,
        None if decisions is None else os.fspath(decisions),
        num_cpus=num_cpus,
    )
    report["seconds"]["place"] = round(perf_counter() - t, 3)
    # Tonight's pairs: the parts of this run's checks.
    work = Location.of(work)
    checks = _read_parquet(work.join("checks").path, work.reader_fs()).select_columns(
        ["id", "near", "distance", "similarity", "containment"]
    )
    pairs = checks.map_batches(pairs_table, batch_format="pyarrow")
    clusters = _read_clusters(work.join("clusters"))
    return Dedup(pairs, clusters, report, store)


def _store_of_join(
    report: dict, work: Location, store: str, decisions: Any, num_cpus: Any, stage: Any
) -> str:
    """:func:`dedup`'s store of a join run at ``store``: the export on the
    workers, the import on the driver's machine (``report["stored"]``,
    ``report["seconds"]["store"]``); marked by ``WORK/stored.json``."""
    from ._rayjoin import store_of_join, stored

    t = stage("store")
    report["stored"] = stored(work, store)
    if report["stored"] is None:
        log = None if decisions is None else os.path.abspath(os.fspath(decisions))
        report["stored"] = store_of_join(work, store, log, num_cpus)
    report["seconds"]["store"] = round(perf_counter() - t, 3)
    return store


def _read_clusters(out: Location) -> Any:
    """The placement's cluster rows as a Ray Dataset (read on the
    workers; an empty one when there are none)."""
    import ray

    files = out.parquet_parts()
    if not files:
        return ray.data.from_arrow(cluster_schema().empty_table())
    return _read_parquet([f.path for f in files], out.reader_fs())


def drop_duplicates(ds: Any, clusters: Any, *, id: str = "id") -> Any:
    """The rows of ``ds`` that :func:`dedup` keeps: every document except
    the members of a cluster that do not represent it (rank > 0). The
    ids dropped are gathered on the driver (one per near copy)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import ray

    dropped = set()
    for b in clusters.filter(lambda r: r["rank"] > 0).iter_batches(batch_format="pyarrow"):
        dropped.update(b.column("id").to_pylist())
    ref = ray.put(pa.array(sorted(dropped), pa.string()))

    def keep(batch: "pyarrow.Table") -> "pyarrow.Table":
        gone = ray.get(ref)
        ids = pc.cast(batch.column(id), pa.string())
        return batch.filter(pc.invert(pc.is_in(ids, value_set=gone)))

    return ds.map_batches(keep, batch_format="pyarrow")


def dedup_files(
    inputs: list[str],
    out: str,
    *,
    work: Optional[str] = None,
    keep: str = "first",
    text: Optional[str] = None,
    html: bool = False,
    db: Optional[str] = None,
    export: Optional[str] = None,
    parts: Optional[int] = None,
    num_cpus: Optional[float] = None,
    incremental: Optional[str] = None,
    log: Any = None,
    decisions: Optional[str] = None,
    priority: str = "priority",
    time: str = "time",
    index: str = "store",
    buckets: Optional[int] = None,
    store: Optional[str] = None,
) -> dict:
    """``python -m simdb.ray dedup``: :func:`dedup` of the fingerprint
    rows of ``inputs`` (Parquet parts of :func:`fingerprint` output, in
    name order), or, with ``text``, of texts fingerprinted first (Parquet
    or JSON lines; with ``html``, that column holds web pages, see
    :func:`fingerprint`). Writes ``OUT/pairs/``, ``OUT/clusters/`` (Parquet) and
    ``OUT/report.json``; the work directory (default ``OUT/_work``) keeps
    the stages, so a killed run, run again, goes on where it stopped.
    ``decisions``: a decision log (``simdb decisions --json``) the clusters
    obey; ``priority`` and ``time``: the inputs' columns of the documents'
    priorities and times, where they have them (see :func:`dedup`);
    ``store``: with ``index="join"``, a new path where the store of the
    result is made (see :func:`dedup`)."""
    import json

    import ray

    where = Location.of(out)
    where.makedirs()
    work = work or where.join("_work")
    missing = [p for p in inputs if not os.path.exists(p)]
    if missing:
        raise ValueError(f"no input files: {', '.join(missing)} not found")
    files = _inputs(inputs)
    if not files:
        raise ValueError(f"no input files in {', '.join(inputs)}")
    recipe_given = None
    if incremental is not None:
        # The earlier run's work directory: OUT/_work of its OUT.
        before = Location.of(incremental)
        if before.join("_work").is_dir():
            incremental = before.join("_work")
        if index == "join" and db is None and export is None:
            from ._rayjoin import earlier_of

            # Tonight's texts fingerprinted as the earlier run's were.
            recipe_given = earlier_of(incremental)["recipe"]
        elif db is None and export is None:
            # Tonight's texts fingerprinted as the earlier run's were.
            db = os.path.join(incremental, "store")
    if html and text is None:
        raise ValueError("html names no column: give the column of pages with text")
    recipe = None
    if text is not None:
        if any(f.endswith(".parquet") for f in files):
            ds = _read_parquet(files)
        else:
            ds = ray.data.read_json(files, lines=True)
        given = export_recipe(export) if export else recipe_given
        recipe = Analyzer(db=db, recipe=given).recipe
        earlier = {} if export or recipe_given is None else {"recipe": recipe_given}
        fps = fingerprint(ds, text=text, html=html, db=db, export=export, num_cpus=num_cpus, **earlier)
    else:
        fps = _read_parquet(files)
        if db is not None:
            recipe = Analyzer(db=db).recipe
        elif export is not None:
            recipe = export_recipe(export)
        elif recipe_given is not None:
            recipe = recipe_given
    r = dedup(fps, work, keep=keep, recipe=recipe, parts=parts, num_cpus=num_cpus,
              incremental=incremental, decisions=decisions, priority=priority, time=time,
              index=index, buckets=buckets, store=store)
    for name, ds in (("pairs", r.pairs), ("clusters", r.clusters)):
        # Written by the workers (no row through the driver), then marked
        # whole by its _SUCCESS, which a run again finds and skips.
        final = where.join(name)
        if final.join("_SUCCESS").exists():
            continue
        final.rmtree()
        ds.write_parquet(final.path, filesystem=where.reader_fs())
        final.join("_SUCCESS").write_bytes(b"")
    report = dict(r.report)
    report["pairs"] = r.pairs.count()
    report["documents_in_clusters"] = r.clusters.count()
    report["store_path"] = r.store
    where.join("report.json").write_bytes((json.dumps(report, indent=1) + "\n").encode())
    if log is not None:
        documents = (report.get("store") or report.get("join") or {}).get("documents", 0)
        log(f"{documents} documents, {report['pairs']} pairs, "
            f"{report['placed']['clusters']} clusters -> {out}")
    return report


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m simdb.ray fingerprint IN... OUT`` (see
    :func:`fingerprint_files`) and ``python -m simdb.ray dedup IN... OUT``
    (see :func:`dedup_files`)."""
    import argparse
    import json
    import sys

    p = argparse.ArgumentParser(
        prog="python -m simdb.ray",
        description="simdb on Ray Data: fingerprint files of texts and dedup them, resumably.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser(
        "fingerprint",
        help="fingerprint Parquet or JSON-lines files; one Parquet directory per input",
    )
    f.add_argument("inputs", nargs="+", help="files, or directories of *.parquet / *.jsonl")
    f.add_argument("out", help="output directory (inputs already done there are skipped)")
    f.add_argument("--text", default="text", help="the text column (default text)")
    f.add_argument("--html", action="store_true",
                   help="the text column holds web pages: their title and main content are "
                   "fingerprinted, as simdb ingest --format html extracts them")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--db", help="take the recipe (and learned IDF) of this store")
    g.add_argument("--export", help="take the recipe a simdb export states")
    f.add_argument("--address", help="Ray cluster address (default: start a local one)")
    f.add_argument("--num-cpus", type=float, help="CPUs per worker (default: all of a machine's but one, which reading needs)")
    d = sub.add_parser(
        "dedup",
        help="near-duplicate pairs and clusters of fingerprint rows (or texts), as simdb ingest "
        "finds them; writes OUT/pairs/, OUT/clusters/, OUT/report.json",
    )
    d.add_argument(
        "inputs",
        nargs="+",
        help="Parquet of `fingerprint` output (files or directories, in name order: the order "
        "the documents count in), or texts with --text",
    )
    d.add_argument("out", help="output directory; a killed run, run again, resumes there")
    d.add_argument("--keep", default="first", choices=["first", "priority", "newest", "longest"],
                   help="which copy represents a cluster (default first)")
    d.add_argument("--priority", default="priority", metavar="COL",
                   help="the column of the documents' priorities, where the inputs have it "
                   "(default priority; the highest represents under --keep priority)")
    d.add_argument("--time", default="time", metavar="COL",
                   help="the column of the documents' own times (Unix seconds, timestamps or "
                   "RFC 3339), where the inputs have it (default time; what --keep newest "
                   "goes by)")
    d.add_argument("--text", help="the inputs are texts in this column: fingerprint them first")
    d.add_argument("--html", action="store_true",
                   help="the --text column holds web pages: their title and main content are "
                   "fingerprinted, as simdb ingest --format html extracts them")
    g = d.add_mutually_exclusive_group()
    g.add_argument("--db", help="the recipe (and learned IDF) of this store")
    g.add_argument("--export", help="the recipe a simdb export states")
    d.add_argument("--work", help="work directory (default OUT/_work)")
    d.add_argument("--incremental", metavar="OLD",
                   help="an earlier run's OUT (or work directory): tonight's documents are "
                   "checked against its documents and each other; pairs are tonight's, "
                   "clusters the whole store's")
    d.add_argument("--decisions", metavar="LOG",
                   help="a decision log (simdb decisions --json): no \"not a copy\" pair ends "
                   "up as a cluster's representative and member")
    d.add_argument("--parts", type=int, help="ranges of documents the checks are split into")
    d.add_argument("--index", choices=["store", "join"], default="store",
                   help="store: import into one store the checks read (default); join: no store, "
                   "the checks as a join on Ray tasks (no row through the driver)")
    d.add_argument("--buckets", type=int,
                   help="--index join: shares of each stage (default one per 100,000 documents)")
    d.add_argument("--store", metavar="DB",
                   help="--index join: make the store of the result at DB (a new path), which "
                   "simdb serve and simdb query open: the export written on the workers, "
                   "imported on this machine")
    d.add_argument("--address", help="Ray cluster address (default: start a local one)")
    d.add_argument("--num-cpus", type=float, help="CPUs per worker (default: fingerprinting all of a machine's but one, checks all)")
    a = p.parse_args(argv)
    import ray

    ray.init(address=a.address, include_dashboard=False, log_to_driver=False)
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    try:
        if a.command == "fingerprint":
            result = fingerprint_files(
                a.inputs, a.out, text=a.text, html=a.html, db=a.db, export=a.export,
                num_cpus=a.num_cpus, log=log,
            )
        else:
            result = dedup_files(
                a.inputs, a.out, work=a.work, keep=a.keep, text=a.text, html=a.html, db=a.db,
                export=a.export, parts=a.parts, num_cpus=a.num_cpus,
                incremental=a.incremental, log=log, decisions=a.decisions,
                priority=a.priority, time=a.time, index=a.index, buckets=a.buckets,
                store=a.store,
            )
    except ValueError as e:
        print(f"simdb.ray: {e}", file=sys.stderr)
        return 2
    finally:
        ray.shutdown()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
