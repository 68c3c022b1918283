"""The Spark dedup job (simdb_dedup.py) finds what `simdb ingest` finds: on
the documents of the Ray tier's test (originals, character-edited copies, a
text stored 30 times, wrapped and truncated copies that the band buckets
find, English and short texts), its pairs and clusters equal those of
writing the same documents in the same order into a store, under each keep
policy, from texts and from the fingerprint job's rows; a run killed during
its checks resumes to the same output. Needs PySpark, Java and the simdb
Python package; skipped, with the reason, without them."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))

pytest.importorskip("pyspark", reason="PySpark is not installed (tools/spark.sh installs it)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (tools/spark.sh installs OpenJDK 17)", allow_module_level=True)
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("simdb", reason="the simdb package is not installed (tools/python.sh)")

import simdb_dedup  # noqa: E402
import simdb_fingerprint  # noqa: E402
import simdb_spark  # noqa: E402
from test_ray import (  # noqa: E402
    assert_same_store,
    dedup_corpus,
    ingested,
    kill_during_checks,
    written_into,
)


@pytest.fixture(scope="module")
def spark():
    s = simdb_spark.session("local[2]", "1g", 4)
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def result(out) -> tuple:
    pairs = {(r["a"], r["b"], r["distance"]) for r in pq.read_table(out / "pairs").to_pylist()}
    by: dict = {}
    for m in pq.read_table(out / "clusters").to_pylist():
        by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
    return pairs, sorted((rep, sorted(ids)) for (_, rep), ids in by.items())


def write_jsonl(path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def test_spark_dedup_equals_ingest(spark, tmp_path):
    rows = dedup_corpus()
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    # The fingerprint job's rows, as a second kind of input.
    fps = tmp_path / "fps"
    simdb_fingerprint.fingerprint(spark.read.json(str(src)), "text").write.parquet(str(fps))
    for keep in ("first", "newest", "longest"):
        want = ingested(str(tmp_path / f"ingest-{keep}.db"), rows, keep)
        out = tmp_path / f"out-{keep}"
        rep = simdb_dedup.run(spark, [str(src)], str(out), keep=keep, text="text", fmt="json",
                              parts=3)
        assert result(out) == want, keep
        assert rep["checks"] == {"parts": 3, "skipped": 0, "checked": len(rows) - 1}
        assert rep["pairs"] == len(want[0])
        assert max(d for _, _, d in want[0]) > 8
        out2 = tmp_path / f"fps-{keep}"
        simdb_dedup.run(spark, [str(fps)], str(out2), keep=keep, parts=2)
        assert result(out2) == want, keep


def test_spark_dedup_carries_priorities_and_times(spark, tmp_path):
    """Rows that state priorities and times (as JSON lines do to ingest):
    keep="priority" and "newest" go by them, as ingest's do."""
    import random

    rng = random.Random(5)
    rows = [dict(x, priority=rng.choice((None, 1, 2, 3)),
                 time=rng.choice((None, 1_550_000_000 + rng.randrange(10**8))))
            for x in dedup_corpus(3)]
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    for keep in ("priority", "newest"):
        want = ingested(str(tmp_path / f"ingest-{keep}.db"), rows, keep)
        out = tmp_path / f"out-{keep}"
        simdb_dedup.run(spark, [str(src)], str(out), keep=keep, text="text", fmt="json", parts=2)
        assert result(out) == want, keep


def test_spark_dedup_resumes(spark, tmp_path):
    rows = dedup_corpus(11)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    want = ingested(str(tmp_path / "ingest.db"), rows, "first")
    out = tmp_path / "out"
    simdb_dedup.run(spark, [str(src)], str(out), text="text", fmt="json", parts=3)
    assert result(out) == want
    kill_during_checks(out, 1)
    rep = simdb_dedup.run(spark, [str(src)], str(out), text="text", fmt="json", parts=3)
    assert rep["checks"]["skipped"] == 2
    assert result(out) == want
    # Not fingerprint rows, and no --text: a clear error.
    plain = tmp_path / "plain.jsonl"
    write_jsonl(plain, [{"id": "a", "body": "x"}])
    with pytest.raises(ValueError, match="no column"):
        simdb_dedup.run(spark, [str(plain)], str(tmp_path / "o3"), fmt="json")


def test_spark_dedup_incremental_equals_ingest(spark, tmp_path):
    """Two nights: the second night's run, incremental on the first's,
    reports the pairs that ingesting the second night into the store
    reports, and the clusters the store then has."""
    import simdb

    rows = dedup_corpus(23)
    nights = [rows[:60], rows[60:]]
    path = str(tmp_path / "ingest.db")
    simdb.Db.create(path).close()
    previous = None
    for n, night in enumerate(nights):
        pairs, clusters, _ = written_into(path, night)
        src = tmp_path / f"night{n}.jsonl"
        write_jsonl(src, night)
        out = tmp_path / f"out{n}"
        simdb_dedup.run(spark, [str(src)], str(out), text="text", fmt="json", parts=2,
                        incremental=previous)
        assert result(out) == (pairs, clusters), n
        previous = str(out)
    assert any(a < "d060" <= b for a, b, _ in pairs)


def test_spark_dedup_refuses_rows_made_under_another_rule(spark, tmp_path):
    """The fingerprint job's rows stamped with another rule than the run's
    (another recipe) are refused by both paths, and taken when the run is
    given the store whose recipe they were made with."""
    import simdb

    rows = dedup_corpus(3)[:40]
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    fps = tmp_path / "fps"
    simdb_fingerprint.fingerprint(spark.read.json(str(src)), "text", shingle=2).write.parquet(str(fps))
    theirs = f"{simdb.Analyzer(shingle=2).rule:016x}"
    for index in ("store", "join"):
        with pytest.raises(Exception, match=f"another rule .digest {theirs}"):
            simdb_dedup.run(spark, [str(fps)], str(tmp_path / index), index=index, buckets=2)
    with simdb.Db.create(str(tmp_path / "theirs.db"), shingle=2):
        pass
    rep = simdb_dedup.run(spark, [str(fps)], str(tmp_path / "given"), index="join", buckets=2,
                          db=str(tmp_path / "theirs.db"))
    assert rep["join"]["checked"] >= len(rows) - 3


def test_spark_dedup_as_a_join_equals_ingest(spark, tmp_path):
    """--index join (no store: the checks as a join on the executors) finds
    ingest's pairs and clusters, stated priorities and times included,
    from texts and from the fingerprint job's rows; a second night,
    incremental on the first, reports the second night's pairs and the
    clusters after it; a run killed during the join redoes it, to the
    same output."""
    import random

    import simdb

    rng = random.Random(5)
    rows = [dict(x, priority=rng.choice((None, 1, 2, 3)),
                 time=rng.choice((None, 1_550_000_000 + rng.randrange(10**8))))
            for x in dedup_corpus(3)]
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    for keep in ("newest", "priority"):
        want = ingested(str(tmp_path / f"ingest-{keep}.db"), rows, keep)
        out = tmp_path / f"out-{keep}"
        rep = simdb_dedup.run(spark, [str(src)], str(out), keep=keep, text="text", fmt="json",
                              index="join", buckets=3)
        assert result(out) == want, keep
        assert rep["store_path"] is None and not (out / "_work" / "store").exists()
        assert rep["join"]["checked"] == len(rows) - 1
        assert rep["join"]["no_fingerprint"] == 1
        # Each stage's longest task, as the Ray driver reports them.
        longest = rep["join"]["longest_task_seconds"]
        assert list(longest) == list(rep["join"]["stages"]) and all(v > 0 for v in longest.values())
    # Killed during the join: its marker and a check part gone.
    work = out / "_work"
    for f in ("join.json", "placed.json"):
        os.remove(work / f)
    os.remove(sorted((work / "checks").glob("part-*.parquet"))[0])
    for d in ("pairs", "clusters"):
        shutil.rmtree(out / d)
    shutil.rmtree(work / "clusters")
    simdb_dedup.run(spark, [str(src)], str(out), keep="priority", text="text", fmt="json",
                    index="join", buckets=3)
    assert result(out) == want
    # Two nights, each a join run.
    nights = [rows[:60], rows[60:]]
    path = str(tmp_path / "nights.db")
    simdb.Db.create(path).close()
    previous = None
    for n, night in enumerate(nights):
        pairs, clusters, _ = written_into(path, night)
        src = tmp_path / f"night{n}.jsonl"
        write_jsonl(src, night)
        out = tmp_path / f"night-out{n}"
        rep = simdb_dedup.run(spark, [str(src)], str(out), text="text", fmt="json", index="join",
                              incremental=previous, store=str(tmp_path / f"served{n}.db"))
        assert result(out) == (pairs, clusters), n
        # The store of the result (the export on the executors, built by
        # key range on them, assembled here) holds what ingest's holds
        # after the night.
        assert rep["store_path"] == str(tmp_path / f"served{n}.db")
        assert rep["stored"]["import"]["restored"]
        assert rep["stored"]["by_range"]["ranges"] >= 2
        assert_same_store(rep["store_path"], path, rows)
        previous = str(out)
    assert any(a < "d060" <= b for a, b, _ in pairs)
    # Tonight's ids already in an earlier night: refused, naming them.
    src = tmp_path / "again.jsonl"
    write_jsonl(src, nights[1][:2])
    with pytest.raises(ValueError, match="more than once in this run's rows or in the earlier runs': 2 "):
        simdb_dedup.run(spark, [str(src)], str(tmp_path / "again"), text="text", fmt="json",
                        index="join", incremental=previous)
