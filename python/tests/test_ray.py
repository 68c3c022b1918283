"""The engine's fingerprints (simdb.Analyzer, simdb.ray) equal what the store
keeps for the same texts: Chinese, English, short, traditional script, and
texts with nothing usable. The Analyzer needs nothing else; the batch
function needs pyarrow; the Ray test needs Ray (tools/ray.sh installs it)."""

import os
import random
import shutil

import pytest

import simdb
import simdb.ray
from test_simdb import ENGLISH, article


def corpus() -> list:
    rng = random.Random(39)
    texts = [article(rng) for _ in range(20)]
    texts += [" ".join(rng.choice(ENGLISH) for _ in range(80)) for _ in range(10)]
    # Short texts, texts with nothing usable, traditional script, a missing one.
    texts += ["北京欢迎你", "ok then", "，。", ""]
    texts += ["國務院總理今天在北京主持召開常務會議，研究部署穩就業促消費的政策措施。"]
    texts.append(None)
    return texts


def stored(path: str, texts: list) -> dict:
    """What a store made with its defaults keeps of each text: id -> record."""
    with simdb.Db.create(path) as db:
        for i, t in enumerate(texts):
            if t is not None:
                db.add(f"d{i}", t)
        return {f"d{i}": db.get(f"d{i}") for i in range(len(texts))}


def check_equal(cols: dict, records: dict, texts: list, default: bool = True) -> None:
    n = len(texts)
    assert all(len(cols[c]) == n for c in simdb.ray.COLUMNS)
    for i, t in enumerate(texts):
        rec = records[f"d{i}"]
        if rec is None:
            # Not stored: nothing usable (or no text at all).
            assert cols["fingerprint"][i] is None, (i, t)
            assert cols["sketch"][i] is None
            continue
        assert cols["fingerprint"][i] == rec["fingerprint"], (i, t)
        assert cols["sketch"][i].hex() == rec["sketch"], (i, t)
        assert cols["length"][i] == rec["length"] == len(t.encode())
        assert cols["terms"][i] == rec["terms"]
        assert cols["content_hash"][i] == int(rec["content_hash"], 16)
        assert cols["parts"][i].hex() == "".join(rec.get("parts", [])), (i, t)
        if default:
            assert cols["fingerprint"][i] == simdb.fingerprint(t)


def test_analyzer_equals_the_store(tmp_path):
    texts = corpus()
    records = stored(str(tmp_path / "s.db"), texts)
    stored_ids = [k for k, v in records.items() if v is not None]
    assert len(stored_ids) >= 32, stored_ids
    a = simdb.Analyzer()
    check_equal(a.analyze_many(texts), records, texts)
    # The recipe of a store is taken from it (here: the default one).
    b = simdb.Analyzer(db=str(tmp_path / "s.db"))
    assert b.recipe == a.recipe
    check_equal(b.analyze_many(texts), records, texts)


def words_store(tmp_path, texts: list) -> tuple:
    """A store of another recipe than the default (word features, 2-word
    shingles) holding `texts`: its path, records by id and recipe."""
    path = str(tmp_path / "words.db")
    with simdb.Db.create(path, latin="words", shingle=2) as db:
        for i, t in enumerate(texts):
            db.add(f"d{i}", t)
        return path, {f"d{i}": db.get(f"d{i}") for i in range(len(texts))}, db.recipe


def test_analyzer_takes_a_stores_own_recipe(tmp_path):
    texts = corpus()[:25]
    path, recs, recipe = words_store(tmp_path, texts)
    a = simdb.Analyzer(db=path)
    assert a.recipe == recipe
    check_equal(a.analyze_many(texts), recs, texts, default=False)
    # The default recipe gives other fingerprints for the English texts.
    default = simdb.Analyzer().analyze_many(texts)
    assert default["fingerprint"][20:25] != a.analyze_many(texts)["fingerprint"][20:25]


def test_analyzer_takes_an_exports_recipe(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import json

    import pyarrow.parquet as pq

    texts = corpus()[:25]
    _, recs, recipe = words_store(tmp_path, texts)
    # An export's part states the recipe in its key-value metadata.
    out = tmp_path / "export"
    out.mkdir()
    table = pa.table({"id": ["d0"]}).replace_schema_metadata({"simdb.recipe": json.dumps(recipe)})
    pq.write_table(table, out / "part-00000.parquet")
    got = simdb.ray.export_recipe(out)
    assert got == recipe
    for r in (got, json.dumps(recipe)):
        a = simdb.Analyzer(recipe=r)
        assert a.recipe == recipe
        check_equal(a.analyze_many(texts), recs, texts, default=False)
    with pytest.raises(ValueError, match="not more than one"):
        simdb.Analyzer(recipe=recipe, shingle=3)
    with pytest.raises(ValueError, match="not a simdb recipe"):
        simdb.Analyzer(recipe={"shingle": "x"})
    pq.write_table(pa.table({"id": ["d0"]}), tmp_path / "plain.parquet")
    with pytest.raises(ValueError, match="no simdb.recipe"):
        simdb.ray.export_recipe(tmp_path / "plain.parquet")


def test_analyzer_errors():
    with pytest.raises(TypeError):
        simdb.Analyzer().analyze_many([1, 2])
    with pytest.raises(simdb.NoSuchStore):
        simdb.Analyzer(db="/nonexistent/store")


def test_fingerprint_table(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from simdb.ray import COLUMNS, RULE, fingerprint_table

    texts = corpus()
    records = stored(str(tmp_path / "s.db"), texts)
    table = pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    out = fingerprint_table(table, simdb.Analyzer())
    assert out.column_names == ["id", "text", *COLUMNS, RULE]
    assert set(out.column(RULE).to_pylist()) == {simdb.rule()["digest"]}
    assert str(out.schema.field("fingerprint").type) == "uint64"
    assert str(out.schema.field("sketch").type) == "fixed_size_binary[32]"
    check_equal(out.to_pydict(), records, texts)
    with pytest.raises(ValueError, match="already has"):
        fingerprint_table(out, simdb.Analyzer())
    with pytest.raises(ValueError, match="no column"):
        fingerprint_table(table, simdb.Analyzer(), text="body")


def test_rows_without_fine_sketches_are_taken(tmp_path):
    """Rows fingerprinted before the fine sketch (format 14) have no
    `fine` column: dedup's first stage takes them, with a null one."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from simdb.ray import fingerprint_table, order_input

    texts = corpus()
    table = pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    out = fingerprint_table(table, simdb.Analyzer())
    assert out.column("fine").null_count < out.num_rows
    old = out.drop_columns(["fine"])
    mark = order_input([old], str(tmp_path / "work"))
    assert mark["rows"] == len(texts)
    written = pq.read_table(str(tmp_path / "work" / "input"))
    assert written.column("fine").null_count == written.num_rows
    with pytest.raises(ValueError, match="no column"):
        order_input([old.drop_columns(["sketch"])], str(tmp_path / "again"))


def test_ray_fingerprint(tmp_path):
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    texts = corpus()
    path = str(tmp_path / "s.db")
    records = stored(path, texts)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        ds = ray.data.from_items(
            [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)], override_num_blocks=3
        )
        out = simdb.ray.fingerprint(ds, db=path, batch_size=7, num_cpus=1)
        rows = sorted(out.take_all(), key=lambda r: int(r["id"][1:]))
        # A column of web pages: what the store keeps of the same pages.
        from test_simdb import site_page

        rng = random.Random(42)
        pages = [site_page(rng, i % 2, f"标题{i}", article(rng, 200)) for i in range(5)]
        ds = ray.data.from_items([{"id": f"p{i}", "page": p} for i, p in enumerate(pages)])
        got = simdb.ray.fingerprint(ds, text="page", html=True, db=path, num_cpus=1).take_all()
        with simdb.Db.open(path) as db:
            for r in got:
                db.add(r["id"], html=pages[int(r["id"][1:])])
                assert r["fingerprint"] == db.get(r["id"])["fingerprint"], r["id"]
                assert r["length"] == db.get(r["id"])["length"]
    finally:
        ray.shutdown()
    cols = {c: [r[c] for r in rows] for c in simdb.ray.COLUMNS}
    check_equal(cols, records, texts)


def test_ray_fingerprint_files_resume(tmp_path):
    """`python -m simdb.ray fingerprint`: one output per input, each renamed
    into place when whole; a run killed while writing one input is run
    again and redoes only that one."""
    ray = pytest.importorskip("ray")
    pa = pytest.importorskip("pyarrow")
    import json
    import subprocess
    import sys

    import pyarrow.parquet as pq
    import simdb.ray

    texts = corpus()
    records = stored(str(tmp_path / "s.db"), texts)
    inputs = tmp_path / "in"
    inputs.mkdir()
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    half = len(rows) // 2
    pq.write_table(pa.Table.from_pylist(rows[:half]), inputs / "a.parquet")
    with open(inputs / "b.jsonl", "w", encoding="utf-8") as f:
        for r in rows[half:]:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    out = tmp_path / "out"
    # A run that was killed while writing b: its temporary output is left.
    (out / ".b.tmp").mkdir(parents=True)
    (out / ".b.tmp" / "junk.parquet").write_bytes(b"half a file")
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        first = simdb.ray.fingerprint_files([str(inputs)], str(out), num_cpus=1)
        again = simdb.ray.fingerprint_files([str(inputs)], str(out), num_cpus=1)
    finally:
        ray.shutdown()
    assert first == {"done": 2, "skipped": 0, "rows": len(rows)}
    assert again == {"done": 0, "skipped": 2, "rows": 0}
    assert sorted(os.listdir(out)) == ["a", "b"]
    assert (out / "a" / "_SUCCESS").exists()
    got = pa.concat_tables(
        [pq.read_table(out / d) for d in ("a", "b")], promote_options="permissive"
    ).to_pylist()
    got.sort(key=lambda r: int(r["id"][1:]))
    cols = {c: [r[c] for r in got] for c in simdb.ray.COLUMNS}
    check_equal(cols, records, texts)
    # The command line: everything done, nothing to redo.
    p = subprocess.run(
        [sys.executable, "-m", "simdb.ray", "fingerprint", str(inputs), str(out), "--num-cpus", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"done": 0, "skipped": 2, "rows": 0}


def dedup_corpus(seed: int = 7) -> list:
    """Documents as a dedup store receives them: originals, character-edited
    copies (1-8%), exact copies (one text 30 times), wrapped and truncated
    copies (far fingerprints that the band buckets find), English and short
    texts."""
    from test_simdb import edit

    rng = random.Random(seed)
    originals = [article(rng, rng.choice((80, 150, 300))) for _ in range(40)]
    originals += [" ".join(rng.choice(ENGLISH) for _ in range(rng.choice((40, 90)))) for _ in range(8)]
    docs = []
    for i, t in enumerate(originals):
        docs.append(t)
        if i % 2 == 0:
            docs.append(edit(rng, t, rng.choice((0.01, 0.03, 0.05, 0.08))))
        if i % 5 == 0:
            docs.append(article(rng, 40) + t + article(rng, 40))
        if i % 7 == 0:
            docs.append(t[: len(t) * 3 // 4])
    docs += [originals[3]] * 30 + ["北京欢迎你", "ok then", "，。"]
    rng.shuffle(docs)
    return [{"id": f"d{i:03}", "text": t} for i, t in enumerate(docs)]


def written_into(path: str, rows: list) -> tuple:
    """What the store at `path` finds for `rows` written into it in order:
    the pairs (each document with every confirmed earlier near-copy its
    check found), the clusters after it as (representative, sorted
    members), and how many documents were written (not no_features)."""
    pairs, written = set(), 0
    given = ("id", "text", "priority", "time")
    with simdb.Db.open(path) as db:
        docs = [{k: x[k] for k in given if k in x} for x in rows]
        for r in db.add_many(docs, max_duplicates=16):
            written += r.outcome != "no_features"
            for h in r.duplicates:
                pairs.add((min(r.id, h.id), max(r.id, h.id), h.distance))
        clusters = sorted(
            (c["representative"], sorted(m["id"] for m in c["members"]))
            for c in db.clusters(max_members=10_000)
        )
    return pairs, clusters, written


def ingested(path: str, rows: list, keep: str) -> tuple:
    """`written_into` a new store of keep policy `keep`: (pairs, clusters)."""
    simdb.Db.create(path, keep=keep).close()
    pairs, clusters, _ = written_into(path, rows)
    return pairs, clusters


def kill_during_checks(out, part: int) -> None:
    """What a run killed while writing check part `part` leaves in its
    output directory `out`: that part half written (under its temporary
    name), no placement, no outputs."""
    work = out / "_work"
    os.remove(work / "checks" / f"part-{part:05}.parquet")
    (work / "checks" / f".part-{part:05}.parquet.tmp").write_bytes(b"half a file")
    os.remove(work / "placed.json")
    shutil.rmtree(work / "clusters", ignore_errors=True)
    for d in ("pairs", "clusters"):
        shutil.rmtree(out / d)
    if (out / "report.json").exists():
        os.remove(out / "report.json")


def assert_same_store(got_path: str, want_path: str, rows: list) -> None:
    """The store at `got_path` holds what the one at `want_path` holds for
    `rows`: the documents' records (but when and from where they were
    written, and their top terms, which engine rows do not carry; their
    ords, and so cluster ids, may start elsewhere, in the same order), the
    decisions, the clusters with their representatives and members in
    rank order, and the same answers to queries."""
    ords, founders = {}, []
    with simdb.Db.open(want_path) as want, simdb.Db.open(got_path) as got:
        assert len(got) == len(want)
        assert got.keep_policy == want.keep_policy
        assert got.decisions()["decisions"] == want.decisions()["decisions"]
        for c in want.clusters(max_members=10_000):
            other = got.cluster(c["representative"])
            assert other["representative"] == c["representative"]
            assert [m["id"] for m in other["members"]] == [m["id"] for m in c["members"]]
        assert sum(1 for _ in got.clusters()) == sum(1 for _ in want.clusters())
        for x in rows:
            a, b = want.get(x["id"]), got.get(x["id"])
            assert (a is None) == (b is None), x["id"]
            if a is not None:
                ords[a.pop("ord")] = b.pop("ord")
                if a.get("cluster"):
                    founders.append((a["cluster"].pop("id"), b["cluster"].pop("id")))
                for k in ("ingested_at", "source", "top_terms"):
                    a.pop(k, None), b.pop(k, None)
                assert a == b, x["id"]
        # The same order of ords; a cluster's id is its founder's ord.
        assert [ords[k] for k in sorted(ords)] == sorted(ords.values())
        assert all(ords[a] == b for a, b in founders)
        for x in rows[::7]:
            try:
                hits = [(h.id, h.distance, h.similarity) for h in want.query(x["text"])]
            except simdb.NoFeatures:
                continue
            assert [(h.id, h.distance, h.similarity) for h in got.query(x["text"])] == hits, x["id"]


def fingerprinted(ray, rows: list):
    """`rows` as a Ray Dataset of two blocks, fingerprinted on the workers."""
    return simdb.ray.fingerprint(ray.data.from_items(rows, override_num_blocks=2), batch_size=16, num_cpus=1)


def run_nights(ray, nights: list, ingest: str, work_of, store_of, **kw) -> tuple:
    """Each night of `nights` written into the store at `ingest`, and run
    by dedup (index="join", incremental on the night before, work
    directory `work_of(n)`, store of the result `store_of(n)`): its
    clusters are ingest's, and its store was built by key range on the
    workers. Returns the last night's fingerprints and work directory."""
    previous = None
    for n, night in enumerate(nights):
        _, clusters, _ = written_into(ingest, night)
        fps, work, served = fingerprinted(ray, night), work_of(n), store_of(n)
        r = simdb.ray.dedup(fps, work, index="join", buckets=2, num_cpus=1, incremental=previous,
                            store=served, **kw)
        assert r.store == str(served)
        assert engine_result(r)[1] == clusters, n
        assert r.report["stored"]["import"]["restored"]
        assert r.report["stored"]["import"]["clusters"] == len(clusters)
        # Built by key range on the workers: every step a task.
        by_range = r.report["stored"]["by_range"]
        assert by_range["ranges"] == 4 and set(by_range["longest_task_seconds"]) == set(simdb._rayjoin.RANGE_STEPS)
        previous = work
    return fps, work


def engine_result(r) -> tuple:
    pairs = {(p["a"], p["b"], p["distance"]) for p in r.pairs.take_all()}
    by = {}
    for m in r.clusters.take_all():
        by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
    clusters = sorted((rep, sorted(ids)) for (_, rep), ids in by.items())
    return pairs, clusters


def test_ray_dedup_equals_ingest(tmp_path):
    """simdb.ray.dedup at the defaults finds the pairs (band-found ones
    included) and builds the clusters that writing the same documents in
    the same order into a store finds and builds, under each keep policy;
    drop_duplicates keeps the representatives and the documents alone."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    rows = dedup_corpus()
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        ds = ray.data.from_items(rows, override_num_blocks=4)
        fps = simdb.ray.fingerprint(ds, batch_size=16, num_cpus=1).materialize()
        for keep in ("first", "newest", "longest"):
            want_pairs, want_clusters = ingested(str(tmp_path / f"ingest-{keep}.db"), rows, keep)
            r = simdb.ray.dedup(fps, tmp_path / f"work-{keep}", keep=keep, parts=3, num_cpus=1)
            pairs, clusters = engine_result(r)
            assert pairs == want_pairs, keep
            assert clusters == want_clusters, keep
            assert any(len(m) >= 10 for _, m in clusters)
            # Pairs beyond the exact k = 3 buckets: the ranked plan's and the bands'.
            assert max(d for _, _, d in pairs) > 8, sorted(d for _, _, d in pairs)
            assert r.report["checks"]["checked"] == r.report["store"]["documents"]
            # The engine's store serves: it answers as the ingested one.
            with simdb.Db.open(r.store, read_only=True) as mine, simdb.Db.open(
                str(tmp_path / f"ingest-{keep}.db"), read_only=True
            ) as theirs:
                assert len(mine) == len(theirs)
                for x in rows[::9]:
                    a = [(h.id, h.distance, h.similarity) for h in mine.query(x["text"], limit=50)]
                    b = [(h.id, h.distance, h.similarity) for h in theirs.query(x["text"], limit=50)]
                    assert a == b, x["id"]
                    if theirs.cluster(x["id"]) is not None:
                        c, d = mine.cluster(x["id"]), theirs.cluster(x["id"])
                        assert (c["representative"], c["size"]) == (d["representative"], d["size"])
            kept = simdb.ray.drop_duplicates(ds, r.clusters).take_all()
            members = {m for _, ms in clusters for m in ms}
            reps = {rep for rep, _ in clusters}
            assert sorted(x["id"] for x in kept) == sorted(
                x["id"] for x in rows if x["id"] not in members or x["id"] in reps
            )
        # Rows that state priorities and times, as JSON lines do to ingest:
        # keep="priority" and "newest" go by them.
        rng = random.Random(11)
        stated = [
            dict(x, priority=rng.choice((None, 1, 2, 3)), time=rng.choice((None, 1_550_000_000 + rng.randrange(10**8))))
            for x in rows
        ]
        sfps = simdb.ray.fingerprint(ray.data.from_items(stated, override_num_blocks=4), batch_size=16,
                                     num_cpus=1).materialize()
        for keep in ("priority", "newest"):
            want_pairs, want_clusters = ingested(str(tmp_path / f"stated-{keep}.db"), stated, keep)
            r = simdb.ray.dedup(sfps, tmp_path / f"stated-{keep}", keep=keep, parts=2, num_cpus=1)
            pairs, clusters = engine_result(r)
            assert pairs == want_pairs, keep
            assert clusters == want_clusters, keep
            # Not the clusters of first: the stated values chose.
            assert clusters != engine_result(simdb.ray.dedup(
                fps, tmp_path / f"unstated-{keep}", keep=keep, parts=2, num_cpus=1))[1], keep
            with simdb.Db.open(r.store, read_only=True) as mine:
                for x in stated[::7]:
                    got = mine.get(x["id"])
                    if got is not None:
                        assert (got.get("priority"), got.get("dated")) == (x["priority"], x["time"]), x["id"]
        # The comparison can fail: without one part's checks, the
        # clusters placed are not ingest's.
        work = tmp_path / "work-longest"
        os.remove(work / "checks" / "part-00001.parquet")
        os.remove(work / "placed.json")
        shutil.rmtree(work / "clusters")
        simdb.ray.place_on_workers(str(work), "longest", num_cpus=1)
        by = {}
        for m in simdb.ray.clusters_table(str(work / "store")).to_pylist():
            by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
        assert sorted((rep, sorted(ids)) for (_, rep), ids in by.items()) != want_clusters
    finally:
        ray.shutdown()


def test_ray_dedup_obeys_decisions(tmp_path):
    """Given a decision log, simdb.ray.dedup builds the clusters that a
    store which has the decisions builds when the same documents are
    written into it in order; without the log, others."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import json

    import simdb.ray

    rows = dedup_corpus()
    _, plain = ingested(str(tmp_path / "plain.db"), rows, "newest")
    # "Not a copy": each other cluster's representative and a member.
    pairs = [(rep, next(m for m in ms if m != rep)) for rep, ms in plain[::2]]
    assert len(pairs) >= 4
    # "Keep this one": a member of each of the other clusters.
    kept = [next(m for m in ms if m != rep) for rep, ms in plain[1::2]]
    assert len(kept) >= 3
    log = tmp_path / "log.jsonl"
    with open(log, "w") as f:
        for i, (a, b) in enumerate(pairs):
            f.write(json.dumps({"seq": i + 1, "kind": "not_a_copy", "a": a, "b": b,
                                "who": "test", "at": 1, "undoes": 0}) + "\n")
        for i, a in enumerate(kept):
            f.write(json.dumps({"seq": len(pairs) + i + 1, "kind": "keep", "a": a, "b": "",
                                "who": "test", "at": 1, "undoes": 0}) + "\n")
    n = len(pairs) + len(kept)
    path = str(tmp_path / "decided.db")
    with simdb.Db.create(path, keep="newest") as db:
        assert db.replay_decisions(log) == list(range(1, n + 1))
    _, want, _ = written_into(path, rows)
    assert want != plain
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        fps = simdb.ray.fingerprint(ray.data.from_items(rows, override_num_blocks=4),
                                    batch_size=16, num_cpus=1).materialize()
        r = simdb.ray.dedup(fps, tmp_path / "work", keep="newest", parts=3, num_cpus=1,
                            decisions=log)
        assert engine_result(r)[1] == want
        with simdb.Db.open(r.store, read_only=True) as db:
            assert len(db.decisions()["decisions"]) == n
            # A kept document in a cluster represents it.
            placed = [c for c in map(db.cluster, kept) if c["size"] > 1]
            assert placed and all(c["representative"] in kept for c in placed)
    finally:
        ray.shutdown()


def test_ray_dedup_cli_resumes(tmp_path):
    """`python -m simdb.ray dedup IN OUT --text text`: texts in, pairs/,
    clusters/ and report.json out, equal to ingest's; a run killed during
    the checks (a part half written, later stages missing) is run again
    and redoes only what was missing, to the same output."""
    pytest.importorskip("ray")
    pa = pytest.importorskip("pyarrow")
    import json
    import shutil
    import subprocess
    import sys

    import pyarrow.parquet as pq

    rows = dedup_corpus(11)
    want_pairs, want_clusters = ingested(str(tmp_path / "ingest.db"), rows, "newest")
    src = tmp_path / "in.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "simdb.ray", "dedup", str(src), str(out), "--text", "text",
           "--keep", "newest", "--parts", "3", "--num-cpus", "1"]

    def run() -> dict:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    def result() -> tuple:
        pairs = {(r["a"], r["b"], r["distance"]) for r in pq.read_table(out / "pairs").to_pylist()}
        by = {}
        for m in pq.read_table(out / "clusters").to_pylist():
            by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
        return pairs, sorted((rep, sorted(ids)) for (_, rep), ids in by.items())

    first = run()
    longest = first["checks"].pop("longest_task_seconds")
    assert first["checks"] == {"parts": 3, "skipped": 0, "checked": len(rows) - 1}
    # The longest of the three ranges' checks, each timed on its worker.
    assert 0 <= longest <= first["seconds"]["checks"]
    assert first["store"]["no_fingerprint"] == 1
    assert result() == (want_pairs, want_clusters)
    assert (out / "pairs" / "_SUCCESS").exists()
    # Killed while writing the third part of the checks.
    kill_during_checks(out, 2)
    again = run()
    assert again["checks"]["skipped"] == 2
    assert again["checks"]["checked"] == first["checks"]["checked"]
    assert result() == (want_pairs, want_clusters)
    assert json.loads((out / "report.json").read_text())["pairs"] == len(want_pairs)
    # --index join: no store, the same output; tonight's texts, incremental
    # on it, fingerprinted by its recipe.
    out = tmp_path / "join"
    cmd = cmd[:5] + [str(out)] + cmd[6:] + ["--index", "join", "--buckets", "2"]
    joined = run()
    assert joined["store_path"] is None and joined["join"]["checked"] == len(rows) - 1
    assert result() == (want_pairs, want_clusters)
    # Bad input: a clear error, exit 2.
    p = subprocess.run([sys.executable, "-m", "simdb.ray", "dedup", str(tmp_path / "none"),
                        str(tmp_path / "o2")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "no input files" in p.stderr, p.stderr


def test_ray_dedup_incremental_equals_ingest(tmp_path):
    """Three nights: each night's incremental dedup, against the earlier
    night's run, reports the pairs that ingesting that night's documents
    into the store reports, and leaves the clusters the store has after
    it; the earlier nights' documents are not checked again."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    rows = dedup_corpus(23)
    nights = [rows[:50], rows[50:90], rows[90:]]
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        path = str(tmp_path / "ingest.db")
        simdb.Db.create(path, keep="newest").close()
        previous = None
        for n, night in enumerate(nights):
            pairs, clusters, written = written_into(path, night)
            ds = ray.data.from_items(night, override_num_blocks=2)
            fps = simdb.ray.fingerprint(ds, batch_size=16, num_cpus=1)
            work = tmp_path / f"night{n}"
            r = simdb.ray.dedup(fps, work, keep="newest", parts=2, num_cpus=1, incremental=previous)
            got_pairs, got_clusters = engine_result(r)
            assert got_pairs == pairs, n
            assert got_clusters == clusters, n
            assert r.report["checks"]["checked"] == written, n
            assert r.report["checks"]["parts"] == 2
            previous = work
        assert any(a < "d050" <= b for a, b, _ in pairs), "a pair across nights"
        # Tonight's ids already in the earlier run: refused.
        ds = ray.data.from_items(nights[1][:5])
        with pytest.raises(ValueError, match="already in"):
            simdb.ray.dedup(simdb.ray.fingerprint(ds, num_cpus=1), tmp_path / "again",
                            incremental=previous, num_cpus=1)
    finally:
        ray.shutdown()


def test_ray_dedup_as_a_join_equals_ingest(tmp_path):
    """simdb.ray.dedup with index="join" (no store: the checks as a join on
    Ray tasks) finds ingest's pairs and clusters under each keep policy,
    stated priorities and times included, and obeys decisions; a run
    killed during the join (its marker and a check part gone) and run
    again gives the same output. No store, no input copy: the workers
    write only the run's records and checks."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import json

    import simdb.ray

    from simdb._rayjoin import STAGES

    rng = random.Random(11)
    rows = [
        dict(x, priority=rng.choice((None, 1, 2, 3)), time=rng.choice((None, 1_550_000_000 + rng.randrange(10**8))))
        for x in dedup_corpus()
    ]
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        fps = simdb.ray.fingerprint(ray.data.from_items(rows, override_num_blocks=4), batch_size=16,
                                    num_cpus=1).materialize()
        for keep in ("first", "newest", "longest", "priority"):
            want_pairs, want_clusters = ingested(str(tmp_path / f"ingest-{keep}.db"), rows, keep)
            work = tmp_path / f"join-{keep}"
            r = simdb.ray.dedup(fps, work, keep=keep, index="join", buckets=3, num_cpus=1)
            assert engine_result(r) == (want_pairs, want_clusters), keep
            assert r.store is None
            assert sorted(os.listdir(work)) == ["checks", "clusters", "join.json", "placed.json", "records"]
            assert r.report["join"]["checked"] == len(rows) - 1
            assert r.report["join"]["no_fingerprint"] == 1
            assert set(r.report["join"]["longest_task_seconds"]) == set(STAGES)
        assert any(len(m) >= 16 for _, m in want_clusters), "checks that reach their bound"
        # Killed during the join: done again, the same output.
        work = tmp_path / "join-longest"
        for f in ("join.json", "placed.json"):
            os.remove(work / f)
        os.remove(work / "checks" / "part-00001.parquet")
        shutil.rmtree(work / "clusters")
        r = simdb.ray.dedup(fps, work, keep="longest", index="join", buckets=3, num_cpus=1)
        assert engine_result(r) == ingested(str(tmp_path / "again.db"), rows, "longest")
        # Decisions: each other cluster's representative and a member are
        # not copies.
        _, plain = ingested(str(tmp_path / "plain.db"), rows, "newest")
        pairs = [(rep, next(m for m in ms if m != rep)) for rep, ms in plain[::2]]
        log = tmp_path / "log.jsonl"
        with open(log, "w") as f:
            for i, (a, b) in enumerate(pairs):
                f.write(json.dumps({"seq": i + 1, "kind": "not_a_copy", "a": a, "b": b,
                                    "who": "test", "at": 1, "undoes": 0}) + "\n")
        path = str(tmp_path / "decided.db")
        with simdb.Db.create(path, keep="newest") as db:
            db.replay_decisions(log)
        _, want, _ = written_into(path, rows)
        assert want != plain
        r = simdb.ray.dedup(fps, tmp_path / "join-decided", keep="newest", index="join", num_cpus=1,
                            decisions=log)
        assert engine_result(r)[1] == want
        with pytest.raises(ValueError, match="index must be"):
            simdb.ray.dedup(fps, tmp_path / "bad", index="files")
    finally:
        ray.shutdown()


def test_ray_dedup_as_a_join_makes_the_store_it_stands_for(tmp_path):
    """index="join" with store=: the run's export (written on the workers)
    built into a new store by key range on the workers, which holds what ingesting the same rows
    holds: the records, the clusters under a keep policy with decisions
    (a "not a copy" pair and a "keep this one"), and answers queries as
    it does; over two nights (incremental), and again after a kill during
    the export."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import json

    import simdb.ray

    rng = random.Random(5)
    rows = [
        dict(x, priority=rng.choice((None, 1, 2)), time=rng.choice((None, 1_600_000_000 + rng.randrange(10**7))))
        for x in dedup_corpus(13)
    ]
    nights = [rows[:70], rows[70:]]
    # The decisions: the representative and a member of the first
    # cluster ingest builds are not copies; a member of the second is kept.
    _, plain = ingested(str(tmp_path / "plain.db"), rows, "newest")
    (rep, ms), (_, ms2) = plain[0], plain[1]
    log = tmp_path / "log.jsonl"
    with open(log, "w") as f:
        f.write(json.dumps({"seq": 1, "kind": "not_a_copy", "a": rep, "b": next(m for m in ms if m != rep),
                            "who": "test", "at": 1, "undoes": 0}) + "\n")
        f.write(json.dumps({"seq": 2, "kind": "keep", "a": ms2[-1], "b": "", "who": "test", "at": 2,
                            "undoes": 0}) + "\n")
    ingest = str(tmp_path / "ingest.db")
    with simdb.Db.create(ingest, keep="newest") as db:
        db.replay_decisions(log)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        fps, work = run_nights(ray, nights, ingest, lambda n: tmp_path / f"night{n}",
                               lambda n: tmp_path / f"served{n}.db", keep="newest", decisions=log)
        served = tmp_path / "served1.db"
        assert sorted(os.listdir(work / "export")) == ["_SUCCESS", "_decisions.jsonl", "part-00000.parquet",
                                                        "part-00001.parquet"]
        # Killed during the export (a part and the marker gone): done again.
        os.remove(work / "export" / "_SUCCESS")
        os.remove(work / "export" / "part-00001.parquet")
        os.remove(work / "stored.json")
        shutil.rmtree(served)
        # ...and a build by range killed with a range's files half written.
        os.makedirs(work / "ranges")
        (work / "ranges" / "r1-00000-docs-00000.sst").write_bytes(b"half")
        r = simdb.ray.dedup(fps, work, keep="newest", index="join", buckets=2, num_cpus=1,
                            incremental=tmp_path / "night0", decisions=log, store=served)
        # Run again, finished: the same store, not made again.
        again = simdb.ray.dedup(fps, work, keep="newest", index="join", buckets=2, num_cpus=1,
                                incremental=tmp_path / "night0", decisions=log, store=served)
        assert again.report["stored"] == r.report["stored"]
        # Killed once the import was whole but before it took the store's
        # name (before the mark was written, or after): the import is
        # renamed into place, not made again.
        whole = str(served) + ".importing"
        for marked in (False, True):
            os.rename(served, whole)
            if not marked:
                # ...and before the frozen index was written.
                os.remove(work / "stored.json")
                for f in os.listdir(whole):
                    if f.startswith("frozen-"):
                        os.remove(os.path.join(whole, f))
            r = simdb.ray.dedup(fps, work, keep="newest", index="join", buckets=2, num_cpus=1,
                                incremental=tmp_path / "night0", decisions=log, store=served)
            assert os.path.isdir(served) and not os.path.exists(whole)
            with simdb.Db.open(str(served), read_only=True) as db:
                assert db.stats()["frozen"] is not None
            got = {k: v for k, v in r.report["stored"]["import"].items() if k != "seconds"}
            assert got == {k: v for k, v in again.report["stored"]["import"].items() if k != "seconds"}
        # The export's two parts mapped by one task: the same store.
        one = simdb._rayjoin.build_by_range(work / "export", str(tmp_path / "one-share.db"),
                                            tmp_path / "scratch", shares=1)
        assert one["shares"] == 1 and one["documents"] == r.report["stored"]["import"]["documents"]
        # A part changed after the export was written (a byte flipped): the
        # map that reads it checks it against the manifest and refuses it.
        part = work / "export" / "part-00001.parquet"
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 1
        part.write_bytes(bytes(data))
        with pytest.raises(Exception, match="part-00001.parquet has CRC-32 [0-9a-f]{8}, the export wrote"):
            simdb.ray.dedup(fps, work, keep="newest", index="join", buckets=2, num_cpus=1,
                            incremental=tmp_path / "night0", decisions=log, store=tmp_path / "other.db")
        assert not os.path.exists(tmp_path / "other.db")
    finally:
        ray.shutdown()
    assert_same_store(str(served), ingest, rows)
    assert_same_store(str(tmp_path / "one-share.db"), ingest, rows)
    # A path that holds something is refused before the run; store= is
    # for join runs.
    with pytest.raises(ValueError, match="already exists"):
        simdb.ray.dedup(None, tmp_path / "w", index="join", store=ingest)
    with pytest.raises(ValueError, match="store= is for index"):
        simdb.ray.dedup(None, tmp_path / "w", store=tmp_path / "new.db")

@pytest.fixture
def object_store():
    """An S3 endpoint on this machine (moto's server, which tools/ray.sh
    installs): a file system the driver and the workers reach only by
    URI. Yields a function that makes a bucket and returns its URI (with
    the endpoint and keys in it, as a user passes them) and the
    pyarrow file system that reads it."""
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    import logging

    import pyarrow.fs as pafs

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()

    def bucket(name: str) -> tuple:
        uri = f"s3://key:secret@{name}?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
        fs = pafs.FileSystem.from_uri(uri + "&allow_bucket_creation=true")[0]
        fs.create_dir(name)
        return uri, fs

    try:
        yield bucket
    finally:
        server.stop()


def test_ray_dedup_as_a_join_with_its_work_in_an_object_store(tmp_path, object_store):
    """No shared file system: the work directory is an S3 bucket (a URI),
    so every file a worker writes and another reads (records, checks,
    placement, export, the build's table files, the marks) goes through
    the object store, and each worker's scratch is a temporary directory
    of its own. Over two nights (the second incremental, also in the
    bucket) with decisions, the clusters are ingest's and the store built
    on this machine is the one ingest builds; on this machine the run
    writes only that store."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import json

    import pyarrow.fs as pafs

    import simdb.ray

    rows = dedup_corpus(17)
    nights = [rows[:60], rows[60:]]
    _, plain = ingested(str(tmp_path / "plain.db"), rows, "first")
    rep, ms = plain[0]
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"seq": 1, "kind": "not_a_copy", "a": rep, "b": next(m for m in ms if m != rep),
                               "who": "test", "at": 1, "undoes": 0}) + "\n")
    ingest = str(tmp_path / "ingest.db")
    with simdb.Db.create(ingest, keep="first") as db:
        db.replay_decisions(log)
    uri, fs = object_store("runs")
    local = set(os.listdir(tmp_path))
    cwd = set(os.listdir("."))
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        fps, work = run_nights(ray, nights, ingest, lambda n: uri.replace("@runs", f"@runs/night{n}"),
                               lambda n: tmp_path / f"served{n}.db", keep="first", decisions=log)
        served = tmp_path / "served1.db"
        # Run again, finished: read from the bucket, nothing done again.
        stored = json.loads(fs.open_input_stream("runs/night1/stored.json").read())
        again = simdb.ray.dedup(fps, work, keep="first", index="join", buckets=2, num_cpus=1,
                                incremental=uri.replace("@runs", "@runs/night0"), decisions=log, store=served)
        assert again.report["stored"] == stored
    finally:
        ray.shutdown()
    assert_same_store(str(served), ingest, rows)
    # In the bucket: each night's stages, its export whole, its build's
    # table files gone once moved into the store.
    names = {i.path[len("runs/night1/"):] for i in fs.get_file_info(pafs.FileSelector("runs/night1", recursive=True))
             if i.type == pafs.FileType.File}
    for want in ("join.json", "placed.json", "stored.json", "export/_SUCCESS", "export/_decisions.jsonl",
                 "records/part-00000.parquet", "checks/part-00000.parquet", "clusters/part-00000.parquet"):
        assert want in names, want
    assert not any(n.startswith("ranges/") for n in names)
    # On this machine: the two stores and nothing else (no work
    # directory, no copy of one left behind).
    assert set(os.listdir(tmp_path)) - local == {"served0.db", "served1.db"}
    assert set(os.listdir(".")) == cwd
    # A store run needs its store on a path the workers share: refused.
    with pytest.raises(ValueError, match='index="store" keeps the store'):
        simdb.ray.dedup(None, uri, index="store")


def test_ray_dedup_takes_the_rows_in_their_order(tmp_path):
    """Blocks that finish out of order: dedup counts the documents in the
    rows' order (the first block, held back, is still first), in both
    paths; the order is asked of the dataset, whose context is its own."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    def late_first_block(batch):
        # Holds back the block with the first document, so that a run
        # which does not ask for the rows' order gets it after the others.
        # (Defined here: Ray's workers pickle it by value, not by module.)
        import time

        if "d000" in batch.column("id").to_pylist():
            time.sleep(3)
        return batch

    rows = sorted(dedup_corpus(5), key=lambda r: r["id"])
    want = ingested(str(tmp_path / "ingest.db"), rows, "newest")
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        for index in ("store", "join"):
            fps = simdb.ray.fingerprint(ray.data.from_items(rows, override_num_blocks=6), batch_size=8,
                                        num_cpus=1)
            assert fps.context.execution_options.preserve_order
            # A dataset made from it that was not asked for the order.
            late = fps.map_batches(late_first_block, batch_format="pyarrow")
            late.context.execution_options.preserve_order = False
            r = simdb.ray.dedup(late, tmp_path / index, keep="newest", index=index, num_cpus=1)
            assert engine_result(r) == want, index
            assert not late.context.execution_options.preserve_order
    finally:
        ray.shutdown()


def test_ray_dedup_refuses_rows_made_under_another_rule(tmp_path):
    """Rows fingerprinted with another recipe than the run's: both paths
    refuse them (on the driver as the store path orders them, on a worker
    as the join makes their records) and say which rule each is."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    rows = dedup_corpus(3)[:40]
    theirs = simdb.Analyzer(shingle=2).rule
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        for index in ("store", "join"):
            fps = simdb.ray.fingerprint(ray.data.from_items(rows, override_num_blocks=2), batch_size=8,
                                        num_cpus=1, shingle=2)
            with pytest.raises(ValueError, match=f"another rule .digest {theirs:016x}"):
                simdb.ray.dedup(fps, tmp_path / index, index=index, num_cpus=1)
            # Given the recipe they were made with, the run takes them.
            r = simdb.ray.dedup(fps, tmp_path / f"{index}-2", index=index, num_cpus=1,
                                recipe=simdb.Analyzer(shingle=2).recipe)
            assert r.report["checks"]["checked"] >= len(rows) - 3, index
    finally:
        ray.shutdown()


def test_ray_dedup_as_a_join_incremental_equals_ingest(tmp_path):
    """Three nights with index="join": each night checks only its own
    documents, against the earlier nights' records, and reports ingest's
    pairs of that night and the store's clusters after it."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    rows = dedup_corpus(23)
    nights = [rows[:50], rows[50:90], rows[90:]]
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        path = str(tmp_path / "ingest.db")
        simdb.Db.create(path, keep="newest").close()
        previous, earlier = None, []
        for n, night in enumerate(nights):
            pairs, clusters, written = written_into(path, night)
            fps = simdb.ray.fingerprint(ray.data.from_items(night, override_num_blocks=2), batch_size=16,
                                        num_cpus=1)
            work = tmp_path / f"night{n}"
            r = simdb.ray.dedup(fps, work, keep="newest", index="join", buckets=2, num_cpus=1,
                                incremental=previous)
            assert engine_result(r) == (pairs, clusters), n
            assert r.report["join"]["checked"] == written, n
            chain = r.report["join"]["records"]
            assert len(chain) == len(set(chain)) > (0 if n == 0 else len(earlier))
            earlier = chain
            previous = work
        assert any(a < "d050" <= b for a, b, _ in pairs), "a pair across nights"
        # Tonight's ids already in an earlier night, or twice: refused.
        with pytest.raises(ValueError, match="more than once in this run's rows or in the earlier runs': 2 "):
            simdb.ray.dedup(simdb.ray.fingerprint(ray.data.from_items(nights[1][:2]), num_cpus=1),
                            tmp_path / "again", index="join", incremental=previous, num_cpus=1)
        with pytest.raises(ValueError, match="more than once in this run's rows: 1 \\(e.g. d000\\)"):
            simdb.ray.dedup(simdb.ray.fingerprint(ray.data.from_items(nights[0][:3] + nights[0][:1]),
                                                  num_cpus=1), tmp_path / "twice", index="join", num_cpus=1)
        # A store run's work directory is not a join run's.
        fps = simdb.ray.fingerprint(ray.data.from_items(nights[0]), num_cpus=1)
        simdb.ray.dedup(fps, tmp_path / "store-run", num_cpus=1)
        with pytest.raises(ValueError, match="index=.join"):
            simdb.ray.dedup(fps, tmp_path / "next", index="join", incremental=tmp_path / "store-run")
    finally:
        ray.shutdown()


def test_analyzer_reads_pages_as_the_store_does(tmp_path):
    from test_simdb import site_page

    rng = random.Random(41)
    pages = [site_page(rng, i % 2, f"标题{i}", article(rng, 200)) for i in range(6)]
    pages.append(pages[0].encode("utf-8"))
    pages.append(None)
    cols = simdb.Analyzer().analyze_many(pages, html=True)
    with simdb.Db.create(str(tmp_path / "p.db")) as db:
        for i, p in enumerate(pages):
            if p is None:
                assert cols["fingerprint"][i] is None
                continue
            db.add(f"d{i}", html=p)
            rec = db.get(f"d{i}")
            assert cols["fingerprint"][i] == rec["fingerprint"], i
            assert cols["sketch"][i].hex() == rec["sketch"], i
            assert cols["length"][i] == rec["length"], i
            assert cols["content_hash"][i] == int(rec["content_hash"], 16), i
    # Without html=True the tags are text: another fingerprint.
    assert simdb.Analyzer().analyze_many(pages[:1])["fingerprint"] != cols["fingerprint"][:1]
    pa = pytest.importorskip("pyarrow")
    t = simdb.ray.fingerprint_table(pa.table({"page": pages[:6]}), simdb.Analyzer(), "page", html=True)
    assert t.column("fingerprint").to_pylist() == cols["fingerprint"][:6]


def union_find_labels(edges: list, nodes: set) -> dict:
    parent = {n: n for n in nodes}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)
    # The smallest node of each component names it.
    smallest = {}
    for n in nodes:
        r = root(n)
        smallest[r] = min(smallest.get(r, n), n)
    return {n: smallest[root(n)] for n in nodes}


def test_components_steps_equal_union_find():
    """Large-star / small-star (simdb.engine) label every node with its
    component's smallest ord, as a union-find does, on chains (the worst
    case for label propagation), stars, a clique, duplicate and self
    edges, and random sparse graphs; the bucketed steps, run over any
    split of the nodes into groups, converge to the same labels."""
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("numpy")
    from simdb import engine

    rng = random.Random(59)
    graphs = [
        [(i + 1, i) for i in range(1, 300)],  # a chain, near copies of the one before
        [(i, 1) for i in range(2, 200)] + [(i, 500) for i in range(501, 600)],  # stars
        [(a, b) for a in range(1, 30) for b in range(1, a)],  # a clique
        [(5, 3), (5, 3), (3, 5), (7, 7), (9, 8)],  # duplicates, a self edge
    ]
    for _ in range(20):
        n = rng.choice((20, 200, 2000))
        graphs.append([(rng.randrange(1, n), rng.randrange(1, n)) for _ in range(rng.randrange(1, n))])
    # A long chain in a shuffled order of ords (copies of copies).
    perm = list(range(1, 1001))
    rng.shuffle(perm)
    graphs.append([(perm[i], perm[i + 1]) for i in range(999)])
    for g in graphs:
        nodes = {x for e in g for x in e}
        t = pa.table({"u": pa.array([a for a, _ in g], pa.uint64()), "v": pa.array([b for _, b in g], pa.uint64())})
        got = engine.components_local(engine._edges_table(t.column("u"), t.column("v")))
        labels = dict(zip(got.column("ord").to_pylist(), got.column("label").to_pylist()))
        want = union_find_labels(g, nodes)
        # A node only in a self edge is in no edge after the first step.
        want = {k: v for k, v in want.items() if not all(a == b for a, b in g if k in (a, b))}
        assert labels == want
        # The same steps over groups (buckets), as an engine runs them.
        for buckets in (3, 7):
            e = engine._edges_table(t.column("u"), t.column("v"))
            while True:
                changed = 0
                for step in (engine.large_star, engine.small_star):
                    both = engine.both_ways(e, buckets)
                    parts = [
                        step(both.filter(pa.compute.equal(both.column("bucket"), b)))
                        for b in range(buckets)
                    ]
                    e = pa.concat_tables(parts)
                    changed += int(pa.compute.sum(e.column("changed")).as_py() or 0)
                if changed == 0:
                    break
            both = engine.both_ways(e, buckets)
            lab = pa.concat_tables(
                [engine.labels(both.filter(pa.compute.equal(both.column("bucket"), b))) for b in range(buckets)]
            )
            assert dict(zip(lab.column("ord").to_pylist(), lab.column("label").to_pylist())) == want


def test_ray_dedup_placement_resumes_and_needs_whole_components(tmp_path):
    """A run killed while placing (one bucket's file written, the others
    not) places the rest when run again, with the same clusters; a
    placement given part of a component is refused, naming what is
    missing."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    import simdb.ray

    rows = dedup_corpus(11)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        fps = simdb.ray.fingerprint(ray.data.from_items(rows), batch_size=16, num_cpus=1).materialize()
        work = tmp_path / "work"
        r = simdb.ray.dedup(fps, work, keep="newest", parts=2, num_cpus=1)
        _, first = engine_result(r)
        assert any(len(m) >= 10 for _, m in first)
        files = sorted(f for f in os.listdir(work / "clusters") if f.endswith(".parquet"))
        assert len(files) >= 2, files
        # Killed after the first bucket: the others, and the store's clusters, to do.
        for f in files[1:]:
            os.remove(work / "clusters" / f)
        (work / "clusters" / ".part-99999.parquet.tmp").write_bytes(b"half")
        os.remove(work / "placed.json")
        placed = simdb.ray.place_on_workers(str(work), "newest", num_cpus=1)
        assert placed["skipped"] == 1
        by = {}
        for m in simdb.ray.clusters_table(str(work / "store")).to_pylist():
            by.setdefault((m["cluster"], m["representative"]), []).append(m["id"])
        assert sorted((rep, sorted(ids)) for (_, rep), ids in by.items()) == first
    finally:
        ray.shutdown()
    # Part of a component: the near copy's record is not given.
    import pyarrow.parquet as pq

    t = pq.read_table(str(work / "checks"))
    row = t.slice(0, 1).to_pylist()[0]
    with pytest.raises(simdb.InvalidInput, match="whole components"):
        simdb.place_components(
            str(tmp_path / "scratch"), [row["id"]], [row["record"]], [row["ord"]], [row["near"]]
        )
    assert not (tmp_path / "scratch").exists()
