"""The Spark fingerprint job (simdb_fingerprint.py) against a store: the
fingerprints, sketches, lengths and term counts it computes on the executors
equal what `simdb ingest` stores for the same texts. Needs the simdb Python
package (tools/python.sh installs it into the venv tools/spark.sh uses);
skipped, with the reason, without it."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

pytest.importorskip("pyspark", reason="PySpark is not installed (tools/spark.sh installs it)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (tools/spark.sh installs OpenJDK 17)", allow_module_level=True)
pytest.importorskip("pyarrow.parquet")
pytest.importorskip("simdb", reason="the simdb package is not installed (tools/python.sh)")

import simdb_fingerprint  # noqa: E402
import simdb_spark  # noqa: E402
from test_spark import SIMDB, WORDS, simdb  # noqa: E402


def texts() -> list:
    rng = random.Random(40)
    out = ["".join(rng.choice(WORDS) for _ in range(rng.randrange(5, 150))) for _ in range(30)]
    out += ["the market opened higher today as investors weighed new data on inflation"]
    out += ["國務院總理今天在北京主持召開常務會議，研究部署穩就業促消費的政策措施。"]
    out += ["，。", "ok"]
    return out


@pytest.fixture(scope="module")
def spark():
    s = simdb_spark.session("local[2]", "1g", 4)
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def test_fingerprints_equal_the_store(spark, tmp_path):
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built (cargo build --release)")
    ts = texts()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(ts)))
    store = str(tmp_path / "s.db")
    simdb("init", store, "--latin", "words")
    simdb("ingest", store, str(corpus))
    df = spark.read.json(str(corpus))
    rows = {r["id"]: r for r in simdb_fingerprint.fingerprint(df, db=store).collect()}
    assert len(rows) == len(ts)
    stored = 0
    for i, t in enumerate(ts):
        got = rows[f"d{i}"]
        out = subprocess.run([SIMDB, "get", store, f"d{i}", "--json"], capture_output=True, text=True)
        if out.returncode == 1:
            # Not stored: nothing usable in it.
            assert got["fingerprint"] is None, t
            continue
        rec = json.loads(out.stdout)
        stored += 1
        assert got["fingerprint"] & (2**64 - 1) == int(rec["fingerprint"], 16), t
        assert bytes(got["sketch"]).hex() == rec["sketch"], t
        assert got["length"] == rec["length"] == len(t.encode())
        assert got["terms"] == rec["terms"]
    assert stored >= 32
    # The store's recipe (words for Latin script) was the one used.
    default = simdb_fingerprint.fingerprint(df).collect()
    assert {r["id"]: r["fingerprint"] for r in default}["d30"] != rows["d30"]["fingerprint"]


def test_a_column_of_pages_is_read_as_the_store_reads_pages(spark, tmp_path):
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built (cargo build --release)")
    rng = random.Random(41)
    pages = []
    for i in range(6):
        body = "".join(f"<p>{''.join(rng.choice(WORDS) for _ in range(40))}</p>" for _ in range(6))
        nav = "".join(f"<li><a href='/{j}'>{rng.choice(WORDS)}</a></li>" for j in range(12))
        pages.append(f"<html><head><title>标题{i}</title></head><body><nav><ul>{nav}</ul></nav>"
                     f"<article><h1>标题{i}</h1>{body}</article><footer>版权所有</footer></body></html>")
    corpus = tmp_path / "pages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "html": p}) + "\n" for i, p in enumerate(pages)))
    store = str(tmp_path / "s.db")
    simdb("init", store)
    # `simdb ingest` reads a JSONL "html" field as a page.
    simdb("ingest", store, str(corpus))
    df = spark.read.json(str(corpus))
    rows = {r["id"]: r for r in simdb_fingerprint.fingerprint(df, "html", store, html=True).collect()}
    for i in range(len(pages)):
        out = subprocess.run([SIMDB, "get", store, f"p{i}", "--json"], capture_output=True, text=True)
        rec = json.loads(out.stdout)
        assert rows[f"p{i}"]["fingerprint"] & (2**64 - 1) == int(rec["fingerprint"], 16), i
        assert rows[f"p{i}"]["length"] == rec["length"], i
