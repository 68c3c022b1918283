"""simdb on Ray Data: the fingerprints of a dataset's texts, computed on the
workers, equal to what ``simdb ingest`` stores for the same texts.

>>> import ray, simdb.ray  # doctest: +SKIP
>>> ds = ray.data.read_parquet("s3://bucket/corpus/")  # doctest: +SKIP
>>> fps = simdb.ray.fingerprint(ds, text="text", db="news.db")  # doctest: +SKIP
>>> fps.write_parquet("s3://bucket/fingerprints/")  # doctest: +SKIP

Each worker makes one :class:`simdb.Analyzer` (the dictionary is loaded
once) and analyses its batches in Rust with the GIL released, on all the
cores it is given. The columns added are :data:`COLUMNS`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Union

from ._simdb import Analyzer

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

#: The columns added to each row, with their Arrow types: ``fingerprint``
#: (uint64; null where the text has no usable features), ``sketch`` (32
#: bytes), ``length`` (the text's UTF-8 bytes), ``terms``, ``weak_bits`` and
#: ``content_hash`` (uint64). ``simdb import --parquet`` of these rows (with
#: an ``id``, those with a fingerprint) keeps them all in its records.
COLUMNS = ("fingerprint", "sketch", "length", "terms", "weak_bits", "content_hash")


def _types() -> dict[str, Any]:
    import pyarrow as pa

    return {
        "fingerprint": pa.uint64(),
        "sketch": pa.binary(32),
        "length": pa.uint64(),
        "terms": pa.uint32(),
        "weak_bits": pa.binary(),
        "content_hash": pa.uint64(),
    }


def fingerprint_table(
    table: "pyarrow.Table", analyzer: Analyzer, text: str = "text"
) -> "pyarrow.Table":
    """``table`` with :data:`COLUMNS` appended, computed from its ``text``
    column by ``analyzer``. A column of one of those names already in the
    table is refused (``ValueError``), not overwritten."""
    import pyarrow as pa

    if text not in table.column_names:
        raise ValueError(f"no column {text!r} (columns: {table.column_names})")
    taken = [c for c in COLUMNS if c in table.column_names]
    if taken:
        raise ValueError(f"the table already has the column(s) {taken}")
    cols = analyzer.analyze_many(table.column(text).to_pylist())
    types = _types()
    for name in COLUMNS:
        table = table.append_column(name, pa.array(cols[name], type=types[name]))
    return table


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
    ) -> None:
        self.text = text
        self.analyzer = Analyzer(db=db, recipe=recipe, **options)

    def __call__(self, batch: "pyarrow.Table") -> "pyarrow.Table":
        return fingerprint_table(batch, self.analyzer, self.text)


def fingerprint(
    ds: Any,
    *,
    text: str = "text",
    db: Optional[Union[str, "os.PathLike[str]"]] = None,
    export: Optional[Union[str, "os.PathLike[str]"]] = None,
    batch_size: int = 4096,
    concurrency: int = 1,
    num_cpus: Optional[float] = None,
    **options: Any,
) -> Any:
    """A Ray Dataset with :data:`COLUMNS` added to each row, from its
    ``text`` column.

    The recipe is that of the store ``db`` (its path; the store is read
    once per worker and closed) when given, or the one an export states
    (``export``: see :func:`export_recipe`), so the fingerprints match the
    store they will meet; otherwise the keyword arguments of
    :func:`simdb.fingerprint` (a new store's recipe by default).
    ``concurrency`` workers (Ray actors) each use ``num_cpus`` CPUs (all of
    a machine's by default: the analysis is parallel inside a worker), so
    run one worker per machine."""
    if db is not None:
        db = os.fspath(db)
    if db is not None and export is not None:
        raise ValueError("give db or export, not both")
    recipe = export_recipe(export) if export is not None else None
    if num_cpus is None:
        num_cpus = float(os.cpu_count() or 1)
    # Fail here, on the driver, rather than in every worker.
    Analyzer(db=db, recipe=recipe, **options)
    return ds.map_batches(
        _Fingerprint,
        fn_constructor_kwargs={"text": text, "db": db, "recipe": recipe, "options": options},
        batch_format="pyarrow",
        batch_size=batch_size,
        concurrency=concurrency,
        num_cpus=num_cpus,
    )


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
    done now, skipped (done before) and rows written. Needs ``ray.init``
    (or lets Ray start a local instance)."""
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
            ds = ray.data.read_parquet(path)
        else:
            ds = ray.data.read_json(path, lines=True)
        fps = fingerprint(ds, text=text, db=db, export=export, num_cpus=num_cpus, **options)
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


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m simdb.ray fingerprint IN... OUT``: see
    :func:`fingerprint_files`."""
    import argparse
    import json
    import sys

    p = argparse.ArgumentParser(
        prog="python -m simdb.ray",
        description="simdb on Ray Data: fingerprint files of texts, resumably.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser(
        "fingerprint",
        help="fingerprint Parquet or JSON-lines files; one Parquet directory per input",
    )
    f.add_argument("inputs", nargs="+", help="files, or directories of *.parquet / *.jsonl")
    f.add_argument("out", help="output directory (inputs already done there are skipped)")
    f.add_argument("--text", default="text", help="the text column (default text)")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--db", help="take the recipe (and learned IDF) of this store")
    g.add_argument("--export", help="take the recipe a simdb export states")
    f.add_argument("--address", help="Ray cluster address (default: start a local one)")
    f.add_argument("--num-cpus", type=float, help="CPUs per worker (default: all of a machine's)")
    a = p.parse_args(argv)
    import ray

    ray.init(address=a.address, include_dashboard=False, log_to_driver=False)
    try:
        counts = fingerprint_files(
            a.inputs,
            a.out,
            text=a.text,
            db=a.db,
            export=a.export,
            num_cpus=a.num_cpus,
            log=lambda m: print(m, file=sys.stderr),
        )
    finally:
        ray.shutdown()
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
