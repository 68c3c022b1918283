"""simdb's Python package beside datasketch, and its own overheads.

    PY=$(bash tools/python.sh build)          # the venv's python, simdb built in
    $PY -m pip install datasketch redis        # the peer (redis only for --redis)
    $PY tools/python_bench.py compare --corpus ../shared/corpora/zh_news_xwlb.jsonl \\
        --corpus ../shared/corpora/en_20newsgroups.jsonl [--copies 300] [--seed 1] [--redis]
    $PY tools/python_bench.py ingest --corpus ../shared/corpora/zh_news_xwlb.jsonl --simdb target/release/simdb
    $PY tools/python_bench.py overhead --corpus ../shared/corpora/zh_news_xwlb.jsonl
    $PY tools/python_bench.py stream --corpus ../shared/corpora/zh_news_xwlb.jsonl [--mb 500] [--simdb target/release/simdb]

compare: for each corpus, every document is stored, then `--copies` documents
of at least 200 characters are copied with 1, 3 and 5% of their characters
edited (substituted, inserted or deleted at random positions; new characters
drawn from the corpus) and each copy is queried. Recall is the share of
copies whose original is reported; "other hits" the mean number of other
documents reported per copy. Each system runs in its own process, so peak
memory (ru_maxrss) is its own: simdb (defaults: the store on disk) and
datasketch MinHashLSH (128 permutations over character 5-grams, threshold 0.5;
its candidates, unverified, as datasketch answers), in memory and, with
--redis, with its Redis storage (a redis-server started on a free port).

ingest: `simdb ingest` of the corpus file (whole process) against
`Db.add_many` of the same lines read and parsed in Python (json.loads), same
batch size, fresh stores, three rounds alternating.

overhead: `db.query(fingerprint)` from Python against the same Rust calls
timed inside the extension, per query.

stream: a JSONL file of about --mb MB (the corpus repeated under new ids,
each repeat lightly edited) is generated in a temp dir and streamed through
`add_many(..., results=False)`; resident memory is sampled every 0.25 s.
"""

import argparse
import json
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def read_corpus(path):
    docs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if isinstance(d.get("text"), str) and d["text"].strip():
                docs.append((str(d["id"]), d["text"]))
    return docs


def edit_chars(rng, text, rate, alphabet):
    chars = list(text)
    for _ in range(max(1, round(len(chars) * rate))):
        op = rng.randrange(3)
        i = rng.randrange(len(chars))
        if op == 0:
            chars[i] = rng.choice(alphabet)
        elif op == 1:
            chars.insert(i, rng.choice(alphabet))
        elif len(chars) > 1:
            del chars[i]
    return "".join(chars)


def planted(docs, copies, seed):
    """(rate, original id, copy text) for each rate; the same in every process."""
    rng = random.Random(seed)
    alphabet = [c for _, t in docs[: min(len(docs), 2000)] for c in t if not c.isspace()]
    pool = [i for i, (_, t) in enumerate(docs) if len(t) >= 200]
    picks = rng.sample(pool, min(copies, len(pool)))
    out = []
    for rate in (0.01, 0.03, 0.05):
        for i in picks:
            out.append((rate, docs[i][0], edit_chars(rng, docs[i][1], rate, alphabet)))
    return out


def shingles(text, n=5):
    t = " ".join(text.lower().split())
    if len(t) <= n:
        return [t.encode()]
    return list({t[i : i + n].encode() for i in range(len(t) - n + 1)})


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


# ---------------------------------------------------------------- one system, in its own process


def run_simdb(corpus, copies, seed, workdir):
    import simdb

    docs = read_corpus(corpus)
    base_mb = peak_mb()
    path = os.path.join(workdir, "simdb.db")
    db = simdb.Db.create(path)
    t = time.perf_counter()
    db.add_many(docs, batch_size=2048, results=False)
    insert_s = time.perf_counter() - t
    lat, found, other = {}, {}, {}
    for rate, orig, text in planted(docs, copies, seed):
        t = time.perf_counter()
        # Every hit (the default limit is 10): "other hits" counts them all.
        hits = db.query(text, limit=10_000)
        lat.setdefault(rate, []).append(time.perf_counter() - t)
        ids = {h.id for h in hits}
        found.setdefault(rate, []).append(orig in ids)
        other.setdefault(rate, []).append(len(ids - {orig}))
    db.close()
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
    return report("simdb (defaults)", docs, insert_s, lat, found, other, base_mb, size)


def run_datasketch(corpus, copies, seed, workdir, redis_port=None):
    from datasketch import MinHash, MinHashLSH

    docs = read_corpus(corpus)
    base_mb = peak_mb()
    cfg = {"type": "dict"}
    name = "datasketch MinHashLSH, in memory"
    if redis_port:
        cfg = {
            "type": "redis",
            "basename": b"bench",
            "redis": {"host": "127.0.0.1", "port": redis_port},
        }
        name = "datasketch MinHashLSH, Redis storage"
    lsh = MinHashLSH(threshold=0.5, num_perm=128, storage_config=cfg)
    t = time.perf_counter()
    with lsh.insertion_session(buffer_size=2048) as s:
        for lo in range(0, len(docs), 2048):
            chunk = docs[lo : lo + 2048]
            mhs = MinHash.bulk([shingles(x) for _, x in chunk], num_perm=128)
            for (i, _), m in zip(chunk, mhs):
                s.insert(i, m, check_duplication=False)
    insert_s = time.perf_counter() - t
    lat, found, other = {}, {}, {}
    for rate, orig, text in planted(docs, copies, seed):
        t = time.perf_counter()
        m = MinHash(num_perm=128)
        m.update_batch(shingles(text))
        ids = set(lsh.query(m))
        lat.setdefault(rate, []).append(time.perf_counter() - t)
        found.setdefault(rate, []).append(orig in ids)
        other.setdefault(rate, []).append(len(ids - {orig}))
    return report(name, docs, insert_s, lat, found, other, base_mb, None)


def report(name, docs, insert_s, lat, found, other, base_mb, disk):
    all_lat = [x for v in lat.values() for x in v]
    return {
        "system": name,
        "documents": len(docs),
        "insert_docs_per_s": len(docs) / insert_s,
        "query_p50_ms": 1000 * statistics.median(all_lat),
        "query_p99_ms": 1000 * pct(all_lat, 99),
        "recall": {f"{int(r * 100)}%": sum(v) / len(v) for r, v in sorted(found.items())},
        "other_hits": statistics.mean(x for v in other.values() for x in v),
        "peak_rss_mb": peak_mb(),
        "rss_before_mb": base_mb,
        "disk_mb": disk / 2**20 if disk is not None else None,
    }


def child(args):
    with tempfile.TemporaryDirectory() as d:
        if args.system == "simdb":
            r = run_simdb(args.corpus, args.copies, args.seed, d)
        else:
            r = run_datasketch(args.corpus, args.copies, args.seed, d, args.redis_port)
    print(json.dumps(r))


def spawn(system, corpus, copies, seed, redis_port=None):
    cmd = [sys.executable, __file__, "_run", system, corpus, str(copies), str(seed)]
    if redis_port:
        cmd.append(str(redis_port))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{system} on {corpus} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis():
    exe = shutil.which("redis-server")
    if not exe:
        print("redis-server not found: the Redis row is left out", file=sys.stderr)
        return None, None
    port = free_port()
    d = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    print("redis-server did not start: the Redis row is left out", file=sys.stderr)
    return None, None


def compare(args):
    print("| corpus | system | insert docs/s | query p50 / p99 ms | recall chars 1/3/5% | other hits / query | peak RSS MB (with the corpus read) | on disk MB |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    redis_proc, port = start_redis() if args.redis else (None, None)
    try:
        for corpus in args.corpus:
            runs = [("simdb", None), ("datasketch", None)]
            if port:
                runs.append(("datasketch", port))
            for system, p in runs:
                r = spawn(system, corpus, args.copies, args.seed, p)
                rec = "/".join(f"{v:.2f}" for v in r["recall"].values())
                disk = f"{r['disk_mb']:.0f}" if r["disk_mb"] is not None else "—"
                print(
                    f"| {os.path.basename(corpus)} ({r['documents']:,}) | {r['system']} "
                    f"| {r['insert_docs_per_s']:,.0f} | {r['query_p50_ms']:.2f} / {r['query_p99_ms']:.2f} "
                    f"| {rec} | {r['other_hits']:.2f} | {r['peak_rss_mb']:.0f} ({r['rss_before_mb']:.0f}) | {disk} |",
                    flush=True,
                )
                if p:
                    info = subprocess.run(
                        ["redis-cli", "-p", str(p), "info", "memory"], capture_output=True, text=True
                    ).stdout
                    rss = next(
                        (int(x.split(":")[1]) for x in info.splitlines() if x.startswith("used_memory_rss:")),
                        0,
                    )
                    print(f"|  | (redis-server's own RSS after the run: {rss / 2**20:.0f} MB) | | | | | | |")
                    subprocess.run(["redis-cli", "-p", str(p), "flushall"], capture_output=True)
    finally:
        if redis_proc:
            redis_proc.kill()


# ---------------------------------------------------------------- ingest, overhead, stream


def ingest(args):
    import simdb

    docs_n = sum(1 for _ in open(args.corpus, encoding="utf-8"))
    cli, py = [], []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            a = os.path.join(d, "cli.db")
            subprocess.run([args.simdb, "init", a], check=True, capture_output=True)
            t = time.perf_counter()
            subprocess.run([args.simdb, "ingest", a, args.corpus], check=True, capture_output=True)
            cli.append(time.perf_counter() - t)
            b = os.path.join(d, "py.db")
            t = time.perf_counter()
            with simdb.Db.create(b) as db:
                with open(args.corpus, encoding="utf-8") as f:
                    db.add_many(
                        ((str(x["id"]), x["text"]) for x in map(json.loads, f)),
                        batch_size=2048,
                        results=False,
                    )
            py.append(time.perf_counter() - t)
        print(
            f"round {round_ + 1}: simdb ingest {docs_n / cli[-1]:,.0f} docs/s, "
            f"add_many {docs_n / py[-1]:,.0f} docs/s ({cli[-1] / py[-1]:.0%})",
            flush=True,
        )
    c, p = statistics.median(cli), statistics.median(py)
    print(
        f"median: simdb ingest {docs_n / c:,.0f} docs/s (whole process), "
        f"Db.add_many {docs_n / p:,.0f} docs/s (open, read, json.loads, write, close): {c / p:.0%} of the CLI"
    )


def overhead(args):
    import simdb

    docs = read_corpus(args.corpus)
    with tempfile.TemporaryDirectory() as d:
        with simdb.Db.create(os.path.join(d, "s.db")) as db:
            db.add_many(docs, results=False)
            fps = [int(x) for x in simdb.fingerprints([t for _, t in docs[:2000]], fill=0)]
            fps = [f for f in fps if f]
            for _ in range(2):  # warm both paths
                db._time_fingerprint_queries(fps)
                for f in fps:
                    db.query(f)
            rust, py = [], []
            for _ in range(args.rounds):
                rust.append(db._time_fingerprint_queries(fps) / len(fps))
                t = time.perf_counter()
                for f in fps:
                    db.query(f)
                py.append((time.perf_counter() - t) / len(fps))
    r, p = statistics.median(rust), statistics.median(py)
    print(
        f"fingerprint query ({len(fps)} queries x {args.rounds} rounds): Rust {r * 1e6:.2f} us, "
        f"from Python {p * 1e6:.2f} us: overhead {(p - r) * 1e6:.2f} us per query"
    )


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def stream(args):
    import simdb

    docs = read_corpus(args.corpus)
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "big.jsonl")
        size, n = 0, 0
        with open(src, "w", encoding="utf-8") as f:
            rep = 0
            while size < args.mb * 2**20:
                for i, t in docs:
                    chars = list(t)
                    for _ in range(3):
                        chars[rng.randrange(len(chars))] = "的"
                    line = json.dumps({"id": f"{rep}/{i}", "text": "".join(chars)}, ensure_ascii=False) + "\n"
                    f.write(line)
                    size += len(line.encode())
                    n += 1
                    if size >= args.mb * 2**20:
                        break
                rep += 1
        print(f"generated {size / 2**20:.0f} MB, {n:,} documents", flush=True)
        samples = []
        done = threading.Event()

        def sample():
            while not done.is_set():
                samples.append(rss_mb())
                time.sleep(0.25)

        start_rss = rss_mb()
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t = time.perf_counter()
        with simdb.Db.create(os.path.join(d, "s.db")) as db:
            with open(src, encoding="utf-8") as f:
                counts = db.add_many(
                    ((x["id"], x["text"]) for x in map(json.loads, f)), batch_size=2048, results=False
                )
        secs = time.perf_counter() - t
        done.set()
        th.join()
        q = [samples[int(len(samples) * k / 4)] for k in range(1, 4)] + [samples[-1]]
        print(
            f"Db.add_many: {n:,} documents in {secs:.0f} s ({n / secs:,.0f}/s), {counts}; RSS before {start_rss:.0f} MB, "
            f"at 25/50/75/100% of the run {' / '.join(f'{x:.0f}' for x in q)} MB, peak {max(samples):.0f} MB",
            flush=True,
        )
        if args.simdb:
            # The CLI on the same file: RocksDB's own share (memtables and
            # block cache, both capped) is the same in both.
            cli_db = os.path.join(d, "cli.db")
            subprocess.run([args.simdb, "init", cli_db], check=True, capture_output=True)
            t = time.perf_counter()
            subprocess.run([args.simdb, "ingest", cli_db, src], check=True, capture_output=True)
            secs = time.perf_counter() - t
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"simdb ingest of the same file: {secs:.0f} s ({n / secs:,.0f}/s), peak RSS {peak:.0f} MB")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_run":
        a = argparse.Namespace(
            system=sys.argv[2],
            corpus=sys.argv[3],
            copies=int(sys.argv[4]),
            seed=int(sys.argv[5]),
            redis_port=int(sys.argv[6]) if len(sys.argv) > 6 else None,
        )
        return child(a)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--corpus", action="append", required=True)
    c.add_argument("--copies", type=int, default=300)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--redis", action="store_true")
    i = sub.add_parser("ingest")
    i.add_argument("--corpus", required=True)
    i.add_argument("--simdb", default=os.path.join(HERE, "..", "target", "release", "simdb"))
    i.add_argument("--rounds", type=int, default=3)
    o = sub.add_parser("overhead")
    o.add_argument("--corpus", required=True)
    o.add_argument("--rounds", type=int, default=5)
    s = sub.add_parser("stream")
    s.add_argument("--corpus", required=True)
    s.add_argument("--mb", type=int, default=500)
    s.add_argument("--simdb", help="also time `simdb ingest` of the same file (its peak RSS)")
    a = ap.parse_args()
    {"compare": compare, "ingest": ingest, "overhead": overhead, "stream": stream}[a.cmd](a)


if __name__ == "__main__":
    main()
