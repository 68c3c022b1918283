"""Fingerprinting per core, on one machine, in one run: the same texts
through `simdb fingerprint` and `simdb ingest` (the single-machine tools),
the wheel's `simdb.Analyzer` alone, and Ray Data (`simdb.ray.fingerprint`)
and/or Spark (`tools/spark/simdb_fingerprint.py`, local mode).

    python tools/fingerprint_bench.py --engines ray,spark,wheel [--cores 2]
        [--docs 20000] CORPUS.jsonl ...

Each engine runs in the Python it is started with (Ray's and Spark's venvs
differ: tools/ray.sh and tools/spark.sh make them); the single-machine
figures are measured in every run, so the ratios are of one run. The
engines' figures exclude their start-up (`ray.init`, the Spark session)
and the texts' load into the engine, and include everything after:
scheduling, Arrow conversion, the analysis and materialising the result
(Ray: `materialize()`; Spark: a `noop` write). Prints one JSON line per
measurement, then a table of docs/s and docs/s per core. Corpus text is
read where it is; nothing is written but a temporary store.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def simdb_bin() -> str:
    return os.environ.get("SIMDB_BIN") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "simdb"
    )


def load(paths: list[str], n: int) -> list[dict]:
    """Up to `n` documents, round robin over the corpora."""
    per = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            per.append([json.loads(line) for line in f if line.strip()])
    out, i = [], 0
    while len(out) < n and any(i < len(c) for c in per):
        for c in per:
            if i < len(c) and len(out) < n:
                d = c[i]
                out.append({"id": str(d["id"]), "text": d["text"]})
        i += 1
    return out


def timed(label: str, cores: int, docs: int, seconds: float, rows: list) -> None:
    r = {
        "what": label,
        "cores": cores,
        "docs": docs,
        "seconds": round(seconds, 3),
        "docs_per_s": round(docs / seconds, 1),
        "docs_per_s_per_core": round(docs / seconds / cores, 1),
    }
    print(json.dumps(r), flush=True)
    rows.append(r)


def taskset(cores: int) -> list[str]:
    """Pins a child to the first `cores` CPUs, as the engines are limited."""
    return ["taskset", "-c", f"0-{cores - 1}"] if cores < (os.cpu_count() or 1) else []


def single_machine(docs: list[dict], cores: int, rows: list) -> None:
    exe = simdb_bin()
    payload = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()
    t = time.perf_counter()
    subprocess.run(
        taskset(cores) + [exe, "fingerprint", "--json"], input=payload,
        stdout=subprocess.DEVNULL, check=True,
    )
    timed("simdb fingerprint", cores, len(docs), time.perf_counter() - t, rows)
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "s.db")
        src = os.path.join(tmp, "docs.jsonl")
        with open(src, "wb") as f:
            f.write(payload)
        subprocess.run([exe, "init", store], stdout=subprocess.DEVNULL, check=True)
        t = time.perf_counter()
        subprocess.run(
            taskset(cores) + [exe, "ingest", store, src, "--threads", str(cores)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
        )
        timed("simdb ingest (empty store)", cores, len(docs), time.perf_counter() - t, rows)


def wheel(docs: list[dict], cores: int, rows: list) -> None:
    import simdb

    a = simdb.Analyzer()
    texts = [d["text"] for d in docs]
    a.analyze_many(texts[:100])
    t = time.perf_counter()
    a.analyze_many(texts)
    timed("simdb.Analyzer.analyze_many (the wheel)", cores, len(docs), time.perf_counter() - t, rows)


def ray_engine(docs: list[dict], cores: int, rows: list) -> None:
    import pyarrow as pa
    import ray
    import simdb.ray

    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    try:
        ds = ray.data.from_arrow(pa.Table.from_pylist(docs)).materialize()
        t = time.perf_counter()
        out = simdb.ray.fingerprint(ds, num_cpus=float(cores)).materialize()
        seconds = time.perf_counter() - t
        assert out.count() == len(docs)
        timed("Ray Data simdb.ray.fingerprint (1 actor)", cores, len(docs), seconds, rows)
    finally:
        ray.shutdown()


def spark_engine(docs: list[dict], cores: int, rows: list) -> None:
    import pyarrow as pa

    sys.path.insert(0, os.path.join(HERE, "spark"))
    import simdb_fingerprint
    import simdb_spark

    spark = simdb_spark.session(f"local[{cores}]", "4g", None)
    try:
        df = spark.createDataFrame(pa.Table.from_pylist(docs).to_pandas()).repartition(cores)
        df = df.cache()
        df.count()
        t = time.perf_counter()
        simdb_fingerprint.fingerprint(df).write.format("noop").mode("overwrite").save()
        timed("Spark simdb_fingerprint (mapInArrow)", cores, len(docs), time.perf_counter() - t, rows)
    finally:
        spark.stop()


def use_repo_package() -> None:
    """Makes `import simdb` find the package built in place
    (`maturin develop` or tools/python.sh) when the venv has none; Spark's
    and Ray's workers inherit PYTHONPATH."""
    try:
        import simdb  # noqa: F401
    except ImportError:
        path = os.path.join(ROOT, "python")
        sys.path.insert(0, path)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            x for x in (path, os.environ.get("PYTHONPATH")) if x
        )


def main(argv: list[str] | None = None) -> int:
    use_repo_package()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpora", nargs="+", help="JSONL corpora ({\"id\", \"text\"} per line)")
    p.add_argument("--engines", default="wheel", help="comma list of wheel, ray, spark")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    p.add_argument("--docs", type=int, default=20000)
    a = p.parse_args(argv)
    docs = load(a.corpora, a.docs)
    rows: list = []
    single_machine(docs, a.cores, rows)
    engines = {"wheel": wheel, "ray": ray_engine, "spark": spark_engine}
    for e in a.engines.split(","):
        if e not in engines:
            p.error(f"unknown engine {e!r} (wheel, ray, spark)")
        engines[e](docs, a.cores, rows)
    base = next(r for r in rows if r["what"] == "simdb fingerprint")["docs_per_s"]
    print(f"\n{'':44} {'docs/s':>9} {'per core':>9} {'vs simdb fingerprint':>21}")
    for r in rows:
        print(f"{r['what']:44} {r['docs_per_s']:>9.0f} {r['docs_per_s_per_core']:>9.0f} "
              f"{r['docs_per_s'] / base:>21.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
