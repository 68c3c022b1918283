"""Tests of the Python package against the real extension. Data is generated
(seeded); nothing needs the network or ../shared."""

import doctest
import os
import random
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import simdb

# Common Chinese words: generated "articles" are sequences of them.
WORDS = (
    "国务院 总理 今天 北京 主持 召开 常务 会议 研究 部署 就业 消费 政策 措施 经济 发展 "
    "改革 开放 创新 科技 企业 市场 投资 项目 建设 城市 农村 教育 医疗 卫生 文化 旅游 "
    "交通 能源 环境 保护 生态 安全 生产 质量 服务 管理 制度 法律 社会 人民 群众 生活 "
    "水平 提高 推进 加强 完善 实施 支持 促进 扩大 稳定 增长 合作 国际 地区 国家 领导 "
    "主席 会见 代表团 访问 友好 关系 双方 表示 愿意 共同 努力 推动 成果 重要 讲话 精神 "
    "学习 贯彻 落实 工作 部门 单位 组织 开展 活动 举行 仪式 庆祝 纪念 周年 历史 未来 "
    "青年 学生 学校 大学 老师 科学 研究所 专家 学者 技术 数据 网络 信息 平台 系统 产品"
).split()
ENGLISH = (
    "the market opened higher today as investors weighed new data on inflation jobs "
    "growth and interest rates while central bank officials signalled patience energy "
    "prices fell technology shares rose and analysts expected earnings to improve"
).split()


def article(rng: random.Random, words: int = 120) -> str:
    out = []
    for i in range(words):
        out.append(rng.choice(WORDS))
        if i % 9 == 8:
            out.append("，" if i % 27 else "。")
    return "".join(out)


def edit(rng: random.Random, text: str, fraction: float) -> str:
    """Replaces `fraction` of the characters with other ideographs."""
    chars = list(text)
    for _ in range(max(1, int(len(chars) * fraction))):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("的一是在不了有和人这中大为上个国我以要他时来用们")
    return "".join(chars)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "store.db")


@pytest.fixture
def db(path):
    with simdb.Db.create(path) as d:
        yield d


# ---------------------------------------------------------------- basics


def test_create_open_close_and_context_manager(path):
    with simdb.Db.create(path) as db:
        assert not db.closed and not db.read_only and db.path.endswith("store.db")
        db.add("a", article(random.Random(1)))
    assert db.closed
    with pytest.raises(simdb.ClosedError):
        len(db)
    with pytest.raises(simdb.StoreExists) as e:
        simdb.Db.create(path)
    assert isinstance(e.value, FileExistsError)
    with simdb.Db.open(path) as db:
        assert len(db) == 1 and "a" in db and "b" not in db
    with pytest.raises(simdb.NoSuchStore):
        simdb.Db.open(path + ".missing")
    db.close()  # closing twice is harmless


def test_recipe_is_kept(path):
    with simdb.Db.create(path, shingle=2, tf="log") as db:
        assert db.recipe["shingle"] == 2 and db.recipe["tf"] == "log"
    with simdb.Db.open(path) as db:
        assert db.recipe["shingle"] == 2
        text = article(random.Random(2))
        r = db.add("x", text)
        assert r.fingerprint == simdb.fingerprint(text, shingle=2, tf="log")
        assert r.fingerprint != simdb.fingerprint(text)
    with pytest.raises(simdb.InvalidInput):
        simdb.Db.create(path + "2", tf="squared")


def test_scripts_and_typos(path):
    simp = "国务院总理今天在北京主持召开常务会议，部署进一步扩大内需。"
    trad = "國務院總理今天在北京主持召開常務會議，部署進一步擴大內需。"
    assert simdb.fingerprint(trad) == simdb.fingerprint(simp)
    assert simdb.fingerprint(trad, script="none") != simdb.fingerprint(simp, script="none")
    with pytest.raises(simdb.InvalidInput, match="latin"):
        simdb.fingerprint("x", latin="char-9-grams")
    with pytest.raises(simdb.InvalidInput, match="script"):
        simdb.fingerprint("x", script="s2t")
    # A store made without them keeps its recipe, and says so in stats.
    with simdb.Db.create(path, latin="words", script="none") as db:
        db.add("a", simp)
        assert db.recipe["latin"] == "words" and db.recipe["script"] == "none"
        assert db.query(trad) == []
    with simdb.Db.create(path + "2") as db:
        assert db.recipe["latin"] == "char-3-grams" and db.recipe["script"].startswith("t2s/")
        db.add("a", simp)
        assert [h.id for h in db.query(trad)] == ["a"]


def test_add_query_get_delete(db):
    rng = random.Random(3)
    text = article(rng)
    copy = edit(rng, text, 0.03)
    other = article(rng)
    r = db.add("orig", text)
    assert (r.id, r.outcome, r.duplicates, r.short) == ("orig", "inserted", [], False)
    assert r.fingerprint == simdb.fingerprint(text)
    r = db.add("copy", copy)
    assert r.outcome == "inserted"
    assert [h.id for h in r.duplicates] == ["orig"]
    assert db.add("other", other).duplicates == []
    assert db.add("orig", text).outcome == "unchanged"
    assert len(db) == 3

    hits = db.query(text)
    assert [h.id for h in hits] == ["orig", "copy"]
    assert hits[0].distance == 0 and hits[0].similarity == pytest.approx(1.0)
    assert hits[1].distance == simdb.distance(hits[0].fingerprint, hits[1].fingerprint)
    assert 0.5 < hits[1].similarity < 1.0
    assert "Hit(id=\"orig\"" in repr(hits[0])
    assert [h.id for h in db.similar("orig")] == ["copy"]
    assert [h.id for h in db.query(text, limit=1)] == ["orig"]
    # A fingerprint query has no sketch: every candidate within k, unconfirmed.
    fp_hits = db.query(simdb.fingerprint(text), k=0)
    assert [(h.id, h.similarity) for h in fp_hits] == [("orig", None)]

    doc = db.get("orig")
    assert doc["id"] == "orig" and doc["fingerprint"] == r.fingerprint or True
    assert doc["fingerprint"] == simdb.fingerprint(text)
    assert doc["length"] == len(text.encode())
    assert doc["cluster"]["size"] == 2
    assert db.get("nope") is None

    assert db.delete("copy") is True
    assert db.delete("copy") is False
    assert [h.id for h in db.query(text)] == ["orig"]
    assert len(db) == 2
    with pytest.raises(simdb.NotFound) as e:
        db.similar("copy")
    assert isinstance(e.value, KeyError) and "copy" in str(e.value)


def test_skip_duplicates_and_replace(db):
    rng = random.Random(4)
    text = article(rng)
    db.add("a", text)
    r = db.add("b", edit(rng, text, 0.02), skip_duplicates=True)
    assert r.outcome == "duplicate" and [h.id for h in r.duplicates] == ["a"]
    assert "b" not in db
    r = db.add("a", article(rng))
    assert r.outcome == "replaced"
    assert db.query(text) == []


def test_errors_are_classes(db):
    with pytest.raises(simdb.NoFeatures) as e:
        db.query("，。！")
    assert isinstance(e.value, simdb.InvalidInput) and isinstance(e.value, ValueError)
    assert isinstance(e.value, simdb.SimdbError)
    with pytest.raises(simdb.InvalidInput, match="k = 12"):
        db.query("北京", k=12)
    with pytest.raises(simdb.InvalidInput, match="min_similarity"):
        db.query("北京", min_similarity=1.5)
    with pytest.raises(simdb.InvalidInput, match="probe budget"):
        db.query("北京", probe_budget=10**9)
    with pytest.raises(simdb.InvalidInput, match="2\\*\\*64"):
        db.query(-1)
    with pytest.raises(TypeError, match="str.*int"):
        db.query(3.5)
    with pytest.raises(simdb.NoFeatures):
        simdb.fingerprint("")
    assert db.add("empty", "。。").outcome == "no_features"
    assert "empty" not in db


def test_not_a_store(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "CURRENT").write_text("x")
    with pytest.raises(simdb.SimdbError):
        simdb.Db.open(str(tmp_path / "plain"))


# ---------------------------------------------------------------- add_many


def test_add_many_inputs_batches_and_counts(db):
    rng = random.Random(5)
    texts = [article(rng) for _ in range(50)]

    def gen():
        for i, t in enumerate(texts):
            yield (f"t{i}", t) if i % 2 else {"id": f"t{i}", "text": t, "priority": i}

    results = db.add_many(gen(), batch_size=7)
    assert [r.id for r in results] == [f"t{i}" for i in range(50)]
    assert all(r.outcome == "inserted" for r in results)
    assert [r.fingerprint for r in results] == list(simdb.fingerprints(texts))
    # Copies in the same batch see each other; counts without results.
    copies = [(f"c{i}", edit(rng, texts[i], 0.02)) for i in range(10)]
    counts = db.add_many(copies + [("e", "，")], results=False, skip_duplicates=True)
    assert counts == {
        "inserted": 0,
        "replaced": 0,
        "unchanged": 0,
        "duplicate": 10,
        "no_features": 1,
        "near_duplicates": 10,
        "short": 0,
    }
    assert len(db) == 50
    fp = simdb.fingerprint(texts[0])
    r = db.add_many([{"id": "f", "fingerprint": fp}])
    assert r[0].fingerprint == fp and r[0].outcome == "inserted"
    assert [h.id for h in r[0].duplicates] == ["t0"]


def test_add_many_bad_items(db):
    rng = random.Random(6)
    good = [(f"g{i}", article(rng)) for i in range(4)]
    with pytest.raises(TypeError, match="document 5"):
        db.add_many(good + [("x", article(rng)), ("y", 3)], batch_size=4)
    # The first batch was written; the one with the bad item was not.
    assert len(db) == 4 and "x" not in db
    for bad, msg in [
        ([{"text": "a"}], "no \"id\""),
        ([{"id": "a"}], "no \"text\""),
        ([("a", "b", "c")], "2 items"),
        ([42], "int"),
        ([{"id": "a", "fingerprint": -5}], "2\\*\\*64"),
        ([{"id": "a", "text": "x y z", "priority": float("nan")}], "finite number, not NaN"),
        ([{"id": "a", "text": "x y z", "priority": float("inf")}], "finite number, not inf"),
        ([{"id": "a", "text": "x y z", "priority": float("-inf")}], "finite number, not -inf"),
    ]:
        with pytest.raises(TypeError, match=msg):
            db.add_many(bad)
    with pytest.raises(simdb.InvalidInput):
        db.add_many(good, batch_size=0)


# ---------------------------------------------------------------- exactness


def test_fingerprint_queries_equal_brute_force(db):
    """With k given, a query returns exactly the documents within k."""
    rng = random.Random(7)
    base = [rng.getrandbits(64) for _ in range(20)]
    fps = []
    for b in base:
        fps.append(b)
        for d in (1, 2, 3, 4, 5):  # planted at distances 1..5, bits spread
            x = b
            for bit in rng.sample(range(64), d):
                x ^= 1 << bit
            fps.append(x)
    fps.append(fps[0])  # a shared fingerprint
    db.add_many([{"id": f"d{i}", "fingerprint": f} for i, f in enumerate(fps)], results=False)
    for k in (0, 3, 4, 7):
        for q in base[:8] + [fps[3]]:
            got = sorted(h.id for h in db.query(q, k=k))
            want = sorted(f"d{i}" for i, f in enumerate(fps) if simdb.distance(q, f) <= k)
            assert got == want, (k, q)


def test_answers_for_copies_are_bounded(db):
    """Issue 23: each copy lists at most ``max_duplicates`` (default 10)
    near-duplicates with their count beside them; queries answer at most
    ``limit`` (default 10, at most 10,000)."""
    text = article(random.Random(23), 150)
    res = db.add_many(((f"c{i:03}", text) for i in range(60)), batch_size=25)
    assert all(len(r.duplicates) <= 10 for r in res)
    assert (res[5].duplicate_count, res[5].duplicate_count_exact) == (5, True)
    last = res[-1]
    assert len(last.duplicates) == 10
    assert (last.duplicate_count, last.duplicate_count_exact) == (16, False)
    assert [h.id for h in last.duplicates] == [f"c{i:03}" for i in range(10)]
    r = db.add("extra", text, max_duplicates=30)
    assert (len(r.duplicates), r.duplicate_count) == (30, 30)
    with pytest.raises(simdb.InvalidInput):
        db.add("x", text, max_duplicates=101)
    assert len(db.query(text)) == 10
    assert len(db.query(text, limit=61)) == 61
    with pytest.raises(simdb.InvalidInput):
        db.query(text, limit=10_001)


# ---------------------------------------------------------------- fingerprints


def test_fingerprints_array():
    rng = random.Random(8)
    texts = [article(rng, 40) for _ in range(30)] + [" ".join(rng.choices(ENGLISH, k=30))]
    a = simdb.fingerprints(texts)
    assert isinstance(a, np.ndarray) and a.dtype == np.uint64 and a.shape == (31,)
    assert [int(x) for x in a] == [simdb.fingerprint(t) for t in texts]
    with pytest.raises(simdb.NoFeatures, match="text 1"):
        simdb.fingerprints(["北京", "", "上海"])
    b = simdb.fingerprints(["北京", ""], fill=0)
    assert b[1] == 0 and b[0] == simdb.fingerprint("北京")
    assert simdb.fingerprints([]).shape == (0,)
    assert simdb.fingerprint("Hello World") == simdb.fingerprint("hello world")
    assert simdb.fingerprint("北京欢迎你", hmm=True) >= 0


# ---------------------------------------------------------------- threads and processes


def test_threads_query_one_db(db):
    rng = random.Random(9)
    texts = [article(rng) for _ in range(200)]
    db.add_many(enumerate_ids(texts), results=False)
    queries = [edit(rng, t, 0.02) for t in texts[:64]]
    want = [[h.id for h in db.query(q)] for q in queries]
    got = [None] * len(queries)
    errors = []

    def work(lo):
        try:
            for i in range(lo, len(queries), 8):
                got[i] = [h.id for h in db.query(queries[i])]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    # A writer meanwhile: other documents, so the answers above hold.
    writer = threading.Thread(
        target=lambda: db.add_many(((f"w{i}", article(rng)) for i in range(200)), batch_size=20)
    )
    for t in threads + [writer]:
        t.start()
    for t in threads + [writer]:
        t.join()
    assert not errors
    assert got == want
    assert len(db) == 400
    assert db.query_many(queries[:5]) == [db.query(q) for q in queries[:5]]


def enumerate_ids(texts):
    return ((f"t{i}", t) for i, t in enumerate(texts))


def test_add_many_releases_the_gil(db):
    rng = random.Random(10)
    docs = [(f"t{i}", article(rng, 300)) for i in range(1500)]
    done = threading.Event()
    took = []

    def ingest():
        t = time.perf_counter()
        db.add_many(docs, batch_size=len(docs), results=False)
        took.append(time.perf_counter() - t)
        done.set()

    th = threading.Thread(target=ingest)
    ticks = []
    th.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    th.join()
    gaps = np.diff(ticks)
    # Holding the GIL for the one batch would stop this loop for all of it.
    assert len(ticks) > 20, (len(ticks), took)
    assert gaps.max() < took[0] / 3, (gaps.max(), took)


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_second_writer_process_gets_store_in_use(db, path):
    db.add("a", article(random.Random(11)))
    p = run_python(
        """
        import sys, simdb
        try:
            simdb.Db.open(sys.argv[1])
        except simdb.StoreInUse as e:
            print("in use:", e)
        with simdb.Db.open(sys.argv[1], read_only=True) as r:
            print("read-only sees", len(r))
        """,
        path,
    )
    assert p.returncode == 0, p.stderr
    assert "in use:" in p.stdout and "read-only sees 1" in p.stdout


def test_read_only_while_another_process_writes(path):
    rng = random.Random(12)
    texts = [article(rng) for _ in range(20)]
    with simdb.Db.create(path) as db:
        db.add_many(enumerate_ids(texts))
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys, simdb
                with simdb.Db.open(sys.argv[1]) as db:
                    print("open", flush=True)
                    for i in range(300):
                        db.add(f"w{i}", f"writer document number {i} " * 20)
                    sys.stdin.read()
                """
            ),
            path,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "open"
        with simdb.Db.open(path, read_only=True) as r:
            assert r.read_only and len(r) >= 20
            assert [h.id for h in r.query(texts[3])][0] == "t3"
            with pytest.raises(simdb.SimdbError):
                r.add("x", "a read-only store refuses writes")
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=120) == 0
    with simdb.Db.open(path) as db:
        assert len(db) == 320


# ---------------------------------------------------------------- stats, clusters, docs


def test_stats_and_clusters(db):
    rng = random.Random(13)
    text = article(rng)
    db.add_many([("a", text), ("b", edit(rng, text, 0.02)), ("c", article(rng))])
    s = db.stats()
    assert s["documents"] == 3 and s["clusters"] == 1 and s["clustered_documents"] == 2
    assert s["bytes_on_disk"] > 0 and s["recipe"] == db.recipe
    c = db.cluster("b")
    assert c["representative"] == "a" and c["size"] == 2
    assert [m["id"] for m in c["members"]] == ["a", "b"]
    assert db.cluster("c")["size"] == 1
    assert db.cluster("zz") is None
    assert [x["representative"] for x in db.clusters()] == ["a"]
    assert list(db.clusters(min_size=3)) == []


def test_freeze_keeps_answers(db):
    rng = random.Random(14)
    texts = [article(rng) for _ in range(6)]
    db.add_many([(f"t{i}", t) for i, t in enumerate(texts[:4])])
    def answers():
        return [[(h.id, h.distance, h.similarity) for h in db.query(t)] for t in texts]

    before = answers()
    assert db.stats()["frozen"] is None
    r = db.freeze()
    assert r["generation"] == 1 and r["entries"] > 0
    f = db.stats()["frozen"]
    assert f["generation"] == 1 and f["clean_buckets"] == f["buckets"]
    assert answers() == before
    db.add_many([(f"t{i}", t) for i, t in enumerate(texts) if i >= 4])
    assert [h.id for h in db.query(texts[5])][:1] == ["t5"]
    assert db.stats()["frozen"]["clean_buckets"] < f["buckets"]


def test_clusters_are_read_in_pages_with_capped_members(db):
    """Review 2026-11-b, finding 11: clusters() returned every member of
    every cluster at once. It is an iterator over pages of 256 clusters,
    each listing at most max_members members (size counts them all)."""
    rng = random.Random(11)
    docs = []
    for a in range(300):
        text = article(rng, 60)
        docs += [(f"a{a:03}x", text), (f"a{a:03}y", text), (f"a{a:03}z", text)]
    db.add_many(docs)
    it = db.clusters(max_members=2)
    assert iter(it) is it
    got = list(it)
    assert len(got) == 300, len(got)
    assert all(c["size"] == 3 and len(c["members"]) == 2 for c in got)
    assert [c["id"] for c in got] == sorted(c["id"] for c in got)
    assert {c["representative"] for c in got} == {f"a{a:03}x" for a in range(300)}
    assert next(db.clusters(min_size=4), None) is None


def test_review_pages(db):
    """The review's reads (docs/review.md): clusters largest first with a
    cursor, and one cluster's members a page at a time with why each is
    there, as the service's GET /clusters and GET /cluster answer."""
    rng = random.Random(16)
    a, b = article(rng), article(rng)
    docs = [("a", a), ("b", b)]
    docs += [(f"a{i}", a) for i in range(4)] + [("b0", edit(rng, b, 0.01))]
    db.add_many(docs)
    p1 = db.clusters_page(limit=1, members=2)
    assert [c["representative"] for c in p1["clusters"]] == ["a"]
    assert p1["clusters"][0]["size"] == 5 and len(p1["clusters"][0]["members"]) == 2
    p2 = db.clusters_page(limit=1, after=p1["next"])
    assert [c["representative"] for c in p2["clusters"]] == ["b"] and p2["next"] is None
    assert [c["representative"] for c in db.clusters_page(sort="id")["clusters"]] == ["a", "b"]
    seen, after = [], None
    while True:
        page = db.cluster_members("a3", after=after, limit=2)
        seen += [(m["id"], m["why"]["confirmed_by"]) for m in page["members"]]
        after = page["next"]
        if after is None:
            break
    assert seen[0] == ("a", "representative")
    assert sorted(seen[1:]) == [(f"a{i}", "similarity") for i in range(4)]
    assert db.cluster_members("nobody") is None
    # b0, written last, is in b's cluster; a's copies are 0 bits from it.
    assert [c["representative"] for c in db.clusters_page(sort="newest")["clusters"]] == ["b", "a"]
    assert [c["representative"] for c in db.clusters_page(sort="distant")["clusters"]] == ["b", "a"]
    with pytest.raises(ValueError):
        db.clusters_page(sort="oldest")
    with pytest.raises(simdb.InvalidInput):
        db.cluster_members("a", after="zz")


def test_keep_policy(tmp_path):
    """The store's keep policy picks the representative: the longest text
    under "longest"; skip_duplicates keeps what the policy keeps."""
    rng = random.Random(15)
    text = article(rng, 200)
    short = text[: int(len(text) * 0.9)]
    with simdb.Db.create(str(tmp_path / "l.db"), keep="longest") as d:
        assert d.stats()["keep"] == "longest"
        d.add("short", short)
        r = d.add("long", text, skip_duplicates=True)
        assert r.outcome == "inserted" and r.duplicates[0].id == "short"
        assert d.cluster("short")["representative"] == "long"
        # A shorter copy is a duplicate the policy does not keep.
        assert d.add("shorter", text[: int(len(text) * 0.85)], skip_duplicates=True).outcome == "duplicate"
    with simdb.Db.create(str(tmp_path / "f.db")) as d:
        assert d.stats()["keep"] == "first"
        d.add("short", short)
        assert d.add("long", text, skip_duplicates=True).outcome == "duplicate"
    with pytest.raises(ValueError, match="unknown keep policy"):
        simdb.Db.create(str(tmp_path / "x.db"), keep="oldest")


def test_docstring_examples():
    failures, tried = doctest.testmod(simdb, raise_on_error=False)
    assert tried > 0 and failures == 0
    assert simdb.Db.__doc__ is None or isinstance(simdb.Db.__doc__, str)


def test_dataframe_two_nights(tmp_path):
    """The pandas example of docs/python.md, over two nights."""
    pd = pytest.importorskip("pandas")
    rng = random.Random(14)
    texts = [article(rng) for _ in range(30)]
    night1 = pd.DataFrame({"id": [f"n1-{i}" for i in range(30)], "text": texts})
    # Night 2: ten edited copies of night 1's documents, ten new ones.
    night2 = pd.DataFrame(
        {
            "id": [f"n2-{i}" for i in range(20)],
            "text": [edit(rng, texts[i], 0.02) for i in range(10)] + [article(rng) for _ in range(10)],
        }
    )
    path = str(tmp_path / "news.simdb")
    kept = []
    for df in (night1, night2):
        # --- as in docs/python.md
        db = simdb.Db.open(path) if os.path.exists(path) else simdb.Db.create(path)
        with db:
            results = db.add_many(zip(df["id"].astype(str), df["text"]), skip_duplicates=True)
        df["outcome"] = [r.outcome for r in results]
        df["duplicate_of"] = [r.duplicates[0].id if r.duplicates else None for r in results]
        clean = df[df["outcome"] != "duplicate"]
        # ---
        kept.append(clean)
    assert len(kept[0]) == 30
    assert list(kept[1]["id"]) == [f"n2-{i}" for i in range(10, 20)]
    assert list(night2["duplicate_of"][:10]) == [f"n1-{i}" for i in range(10)]
    with simdb.Db.open(path, read_only=True) as db:
        assert len(db) == 40


# ---------------------------------------------------------------- issue 24


def test_regression_24_fork_children_get_a_clear_error_and_can_reopen(path):
    """A Db used in a child of fork() raises ForkedError (before: the child
    used the parent's RocksDB handle and rayon pool, whose threads it does
    not have, and could hang); parallel calls work in the child, and the
    store opens again there."""
    p = run_python(
        """
        import multiprocessing as mp, random, sys, simdb
        path = sys.argv[1]
        db = simdb.Db.create(path)
        words = "国务院 总理 今天 北京 主持 召开 常务 会议 研究 部署 就业 消费".split()
        rng = random.Random(1)
        texts = ["".join(rng.choice(words) for _ in range(60)) for _ in range(200)]
        db.add_many([(f"d{i}", t) for i, t in enumerate(texts)], results=False)
        db.query_many(texts[:50])            # the pool is running in the parent
        simdb.fingerprints(texts)

        def child(q):
            out = []
            try:
                db.query(texts[0])
                out.append("no error")
            except simdb.ForkedError as e:
                out.append("forked: " + str(e)[:40])
            out.append(int(simdb.fingerprints(texts).shape[0]))  # no hang
            with simdb.Db.open(path, read_only=True) as r:
                out.append(len(r))
                out.append(r.query(texts[0], limit=1)[0].id)
            q.put(out)

        ctx = mp.get_context("fork")
        q = ctx.Queue()
        procs = [ctx.Process(target=child, args=(q,)) for _ in range(2)]
        for pr in procs:
            pr.start()
        results = [q.get(timeout=60) for _ in procs]
        for pr in procs:
            pr.join(timeout=60)
        print(results, [pr.exitcode for pr in procs])
        db.add("after", texts[1] + "新")   # the parent's handle still works
        db.close()
        with simdb.Db.open(path) as again:
            print("reopened", len(again))
        """,
        path,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.count("forked: ") == 2, out
    assert "no error" not in out
    assert "200, 200, 'd0'" in out, out
    assert "[0, 0]" in out, out
    assert "reopened 201" in out, out


def test_regression_24_close_waits_for_calls_in_other_threads(path):
    """close() returns once the calls running in other threads have ended,
    with the store unlocked: it opens again at once (before: StoreInUse)."""
    rng = random.Random(24)
    docs = [(f"c{i}", article(rng, 200)) for i in range(3000)]
    db = simdb.Db.create(path)
    started = threading.Event()
    outcome = []

    def writer():
        try:
            started.set()
            db.add_many(docs, batch_size=500, results=False)
            outcome.append("finished")
        except simdb.ClosedError:
            outcome.append("closed")

    th = threading.Thread(target=writer)
    th.start()
    started.wait()
    time.sleep(0.05)
    db.close()
    with simdb.Db.open(path) as again:
        n = len(again)
    th.join()
    assert outcome, outcome
    # Whatever the writer had committed when close() returned is there.
    assert 0 <= n <= len(docs)
    assert db.closed


# ---------------------------------------------------------------- web pages


def site_page(rng: random.Random, site: int, title: str, body: str) -> str:
    """A page of one of two generated sites: navigation, a rail of other
    headlines and a footer around the article."""
    nav = "".join(f"<li><a href='/{i}'>{rng.choice(WORDS)}{site}</a></li>" for i in range(12))
    rail = "".join(f"<li><a href='/r{i}'>{article(rng, 10)}</a></li>" for i in range(8))
    paras = "".join(f"<p>{body[i:i + 60]}</p>" for i in range(0, len(body), 60))
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<nav><ul>{nav}</ul></nav><div class='s{site}'><article><h1>{title}</h1>{paras}"
        f"</article><aside><ul>{rail}</ul></aside></div><footer>{article(rng, 40)}</footer>"
        "</body></html>"
    )


def test_pages_are_added_as_their_extracted_text(db):
    rng = random.Random(40)
    body, other = article(rng, 300), article(rng, 300)
    a = site_page(rng, 0, "今天的新闻", body)
    b = site_page(rng, 1, "今天的新闻", body)
    c = site_page(rng, 0, "明天的新闻", other)
    p = simdb.page(a)
    assert p["found"] == "article" and p["title"] == "今天的新闻", p
    assert body[:60] in p["text"] and "<" not in p["text"]
    # Bytes in GBK with the charset given as a header would give it.
    gbk = b.replace("charset='utf-8'", "").encode("gbk")
    assert simdb.page(gbk, charset="gbk")["text"] == simdb.page(b)["text"]
    r = db.add("a", html=a)
    assert r.outcome == "inserted" and r.page == "article", r
    assert r.fingerprint == simdb.fingerprint(p["text"])
    r = db.add("b", html=gbk, charset="gbk")
    assert [h.id for h in r.duplicates] == ["a"], r
    counts = db.add_many([{"id": "c", "html": c}, {"id": "t", "text": "天气预报"}], results=False)
    assert counts["pages"] == {"article": 1, "visible_text": 0, "skipped": 0}, counts
    assert counts["inserted"] == 2
    # A page queried by its text.
    assert sorted(h.id for h in db.query(simdb.page(b)["text"])) == ["a", "b"]
    assert db.get("t")["length"] == len("天气预报".encode())
    with pytest.raises(TypeError, match="one of"):
        db.add("x", "text", html=a)
    with pytest.raises(TypeError, match="one of"):
        db.add("x")
    with pytest.raises(simdb.InvalidInput, match="charset"):
        db.add("x", html=a, charset="gbk")
    with pytest.raises(TypeError, match="not several"):
        db.add_many([{"id": "x", "html": a, "text": "t"}])
    with pytest.raises(TypeError, match="neither str nor bytes"):
        db.add_many([{"id": "x", "html": 5}])


def test_a_documents_own_time(path):
    rng = random.Random(45)
    with simdb.Db.create(path) as db:
        db.add("old", article(rng), time="2020-01-01T00:00:00Z")
        db.add_many([{"id": "older", "text": article(rng), "time": 1_546_300_800}])
        db.add("now", article(rng))
        assert db.get("old")["dated"] == 1_577_836_800
        assert db.get("older")["dated"] == 1_546_300_800
        assert "dated" not in db.get("now")
        with pytest.raises(simdb.InvalidInput, match="time"):
            db.add("x", "text", time="yesterday")
        with pytest.raises(TypeError, match="time"):
            db.add_many([{"id": "x", "text": "t", "time": -5}])


def test_kept_texts(tmp_path):
    """A store created with keep_texts has each text in get(); one without
    has none."""
    text = article(random.Random(16), 60)
    with simdb.Db.create(str(tmp_path / "t.db"), keep_texts=True) as d:
        d.add("a", text)
        assert d.get("a")["text"] == text
        d.add("a", text + "。又一句")
        assert d.get("a")["text"] == text + "。又一句"
    with simdb.Db.create(str(tmp_path / "n.db")) as d:
        d.add("a", text)
        assert "text" not in d.get("a")


def test_not_a_copy_decisions(tmp_path):
    """A member decided not to be a copy of its representative leaves its
    cluster; the log has the decision and its undo."""
    text = article(random.Random(17), 120)
    with simdb.Db.create(str(tmp_path / "d.db")) as d:
        d.add_many([{"id": "a", "text": text}, {"id": "b", "text": text}, {"id": "c", "text": text}])
        assert d.cluster("a")["size"] == 3
        seq = d.not_a_copy("a", "c", who="reviewer")
        assert seq == 1
        assert d.not_a_copy("c", "a") == 1
        assert d.cluster("a")["size"] == 2
        assert d.cluster("c")["size"] == 1
        with pytest.raises(simdb.NotFound):
            d.not_a_copy("a", "nobody")
        assert d.undo_decision(1) == 2
        log = d.decisions()
        assert [(e["seq"], e["kind"], e["who"]) for e in log["decisions"]] == [
            (1, "not_a_copy", "reviewer"), (2, "undo", "python")]
        assert log["decisions"][1]["undoes"] == 1 and log["next"] is None
        # "Keep this one": b represents the cluster; undone, a again.
        assert d.cluster("a")["representative"] == "a"
        assert d.keep("b", who="reviewer") == 3
        assert d.cluster("a")["representative"] == "b"
        assert d.keep("b") == 3
        with pytest.raises(simdb.NotFound):
            d.keep("nobody")
        assert d.undo_decision(3) == 4
        assert d.cluster("a")["representative"] == "a"
        assert [e["kind"] for e in d.decisions()["decisions"]] == ["not_a_copy", "undo", "keep", "undo"]
