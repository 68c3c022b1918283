"""Fingerprints of a corpus on Spark: rows with an id and a text in, the same
rows with the columns a simdb store keeps of each text out, computed on the
executors by the simdb Python package (its wheel installed there).

    spark-submit tools/spark/simdb_fingerprint.py IN OUT [--text text] [--html] [--db STORE]
        [--format parquet|json] [--master URL]

IN is Parquet (or JSON lines with --format json); OUT is Parquet with every
input column and `fingerprint` (long: the u64's bits, as `simdb export`
writes it; null where a text has nothing usable), `sketch` (32 bytes),
`length` (the text's UTF-8 bytes), `terms`, `weak_bits`, `content_hash`
(long, the u64's bits), `parts` (the part hashes, 8 bytes each), `fine`
(the fine sketch, 96 bytes) and `rule` (long, the u64's bits: the digest of
the rule the row was made under, its recipe with this build's constants,
`simdb.rule`; `simdb_dedup.py` refuses rows stamped with another).
`simdb import --parquet OUT` keeps them all. Each Arrow batch
is analysed in Rust with the GIL released (`mapInArrow`, no row-by-row
Python). With --db the recipe, and any learned IDF, are that store's (the
path must be readable on every executor), so the fingerprints match the store
they will meet; the values equal `simdb ingest`'s for the same texts
(tools/spark/test_fingerprint.py). With --html the text column holds web pages
(string or binary): their title and main content are fingerprinted, as
`simdb ingest --format html` extracts them.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def fingerprint(df, text: str = "text", db: str | None = None, html: bool = False, **recipe):
    """`df` with the fingerprint columns appended (see the module docs)."""
    import simdb
    from pyspark.sql import types as T

    if text not in df.columns:
        raise ValueError(f"no column {text!r} (columns: {df.columns})")
    # Fail on the driver, not in every task.
    simdb.Analyzer(db=db, **recipe)
    schema = T.StructType(
        df.schema.fields
        + [
            T.StructField("fingerprint", T.LongType()),
            T.StructField("sketch", T.BinaryType()),
            T.StructField("length", T.LongType()),
            T.StructField("terms", T.IntegerType()),
            T.StructField("weak_bits", T.BinaryType()),
            T.StructField("content_hash", T.LongType()),
            T.StructField("parts", T.BinaryType()),
            T.StructField("fine", T.BinaryType()),
            T.StructField("rule", T.LongType()),
        ]
    )

    def batches(it):
        import pyarrow as pa
        import pyarrow.compute as pc
        import simdb
        from simdb.ray import fingerprint_table

        analyzer = simdb.Analyzer(db=db, **recipe)
        for b in it:
            t = fingerprint_table(pa.Table.from_batches([b]), analyzer, text, html=html)
            # Spark has no unsigned or fixed-size binary types: the
            # fingerprint's bits as a signed long, the sketch as binary.
            for name in ("fingerprint", "content_hash", "rule"):
                bits = t.column(name).cast(pa.int64(), safe=False)
                t = t.set_column(t.schema.get_field_index(name), name, bits)
            for name in ("sketch", "fine"):
                i = t.schema.get_field_index(name)
                t = t.set_column(i, name, pc.cast(t.column(name), pa.binary()))
            i = t.schema.get_field_index("terms")
            t = t.set_column(i, "terms", pc.cast(t.column("terms"), pa.int32()))
            i = t.schema.get_field_index("length")
            t = t.set_column(i, "length", pc.cast(t.column("length"), pa.int64()))
            yield from t.to_batches()

    return df.mapInArrow(batches, schema)


def main(argv: list[str] | None = None) -> int:
    import simdb_spark

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", help="Parquet (or JSON lines with --format json) with a text column")
    p.add_argument("out", help="output directory (must not exist)")
    p.add_argument("--text", default="text", help="the text column (default text)")
    p.add_argument("--html", action="store_true",
                   help="the text column holds web pages: fingerprint their title and main content")
    p.add_argument("--db", help="take the recipe (and learned IDF) of this store")
    p.add_argument("--format", choices=["parquet", "json"], default="parquet")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--driver-memory", default="4g", help="local mode's memory (default 4g)")
    a = p.parse_args(argv)
    if os.path.exists(a.out):
        p.error(f"{a.out} exists")
    spark = simdb_spark.session(a.master, a.driver_memory, None)
    df = spark.read.format(a.format).load(a.input)
    fingerprint(df, a.text, a.db, html=a.html).write.parquet(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
