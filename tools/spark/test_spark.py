"""The Spark job against simdb and a brute force, in local mode.

Two generated stores (seeded; no network, no ../shared):
- text: Chinese articles with edited copies, copies of copies (chains),
  exact copies, word-shuffled copies (same fingerprint, sketch below the
  threshold) and priorities, ingested with `-k 3` (exact duplicate search,
  so simdb's clusters are the components of its verified pairs);
- fingerprints: imported fingerprints with planted neighbours at distances
  0..7, the differing bits spread over the blocks of both designs or packed
  into one block, and fingerprints shared by several documents.

For each, the job's pairs must equal `simdb pairs --copies pairs` (every
pair; the job does not group copies) and a brute force over
the export (every pair compared, the sketch estimate computed bin by bin),
for the card and Manku designs and others; its clusters must equal
`simdb clusters`.

Run by tools/spark.sh (which installs PySpark and a JDK); skipped, with the
reason, when either is missing.
"""

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

import simdb_spark  # noqa: E402

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed (tools/spark.sh installs it)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (tools/spark.sh installs OpenJDK 17)", allow_module_level=True)
pa_parquet = pytest.importorskip("pyarrow.parquet")
np = pytest.importorskip("numpy")
simdb_wheel = pytest.importorskip(
    "simdb", reason="the simdb package is not installed (tools/python.sh builds it)")

ROOT = os.path.dirname(os.path.dirname(HERE))
SIMDB = os.environ.get("SIMDB_BIN") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "simdb"
)

WORDS = (
    "国务院 总理 今天 北京 主持 召开 常务 会议 研究 部署 就业 消费 政策 措施 经济 发展 "
    "改革 开放 创新 科技 企业 市场 投资 项目 建设 城市 农村 教育 医疗 卫生 文化 旅游 "
    "交通 能源 环境 保护 生态 安全 生产 质量 服务 管理 制度 法律 社会 人民 群众 生活 "
    "水平 提高 推进 加强 完善 实施 支持 促进 扩大 稳定 增长 合作 国际 地区 国家 领导 "
    "主席 会见 代表团 访问 友好 关系 双方 表示 愿意 共同 努力 推动 成果 重要 讲话 精神 "
    "学习 贯彻 落实 工作 部门 单位 组织 开展 活动 举行 仪式 庆祝 纪念 周年 历史 未来 "
    "青年 学生 学校 大学 老师 科学 研究所 专家 学者 技术 数据 网络 信息 平台 系统 产品"
).split()
FILLER = "的一是在不了有和人这中大为上个国我以要他时来用们"


def simdb(*args: str, ok=(0, 1)) -> str:
    p = subprocess.run([SIMDB, *args], capture_output=True, text=True)
    assert p.returncode in ok, f"simdb {' '.join(args)}: exit {p.returncode}\n{p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def spark():
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built (cargo build --release)")
    s = simdb_spark.session("local[2]", "1g", 4)
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


# ---------------------------------------------------------------- data


def article(rng: random.Random, words: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(words)]


def render(words: list[str]) -> str:
    out = []
    for i, w in enumerate(words):
        out.append(w)
        if i % 9 == 8:
            out.append("，" if i % 27 else "。")
    return "".join(out)


def edit(rng: random.Random, text: str, fraction: float) -> str:
    chars = list(text)
    for _ in range(max(1, int(len(chars) * fraction))):
        chars[rng.randrange(len(chars))] = rng.choice(FILLER)
    return "".join(chars)


def text_docs(seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for f in range(120):
        words = article(rng, rng.choice([30, 80, 150, 300]))
        base = render(words)
        fam = [base]
        docs.append({"id": f"f{f:03}/0", "text": base})
        for v in range(rng.randrange(0, 5)):
            kind = rng.random()
            if kind < 0.45:
                # An edit of any earlier member: copies of copies make chains.
                text = edit(rng, rng.choice(fam), rng.choice([0.005, 0.01, 0.02, 0.03, 0.05]))
            elif kind < 0.6:
                text = rng.choice(fam)
            elif kind < 0.8:
                # Some words moved: the same terms (a close fingerprint), fewer
                # shared n-grams (a similarity on either side of the threshold).
                w = list(words)
                for _ in range(int(len(w) * rng.choice([0.05, 0.15, 0.3, 1.0]))):
                    i, j = rng.randrange(len(w)), rng.randrange(len(w))
                    w[i], w[j] = w[j], w[i]
                text = render(w)
            else:
                text = edit(rng, base, 0.15)
            fam.append(text)
            d = {"id": f"f{f:03}/{v + 1}", "text": text}
            if rng.random() < 0.3:
                d["priority"] = rng.choice([1, 2, 5])
            docs.append(d)
    # "Read more" reposts: an article followed by its words again in another
    # order (the same terms, so the same fingerprint; new n-grams across
    # words), and its first half alone: a similarity near 0.5, confirmed by
    # containment where the half comes later (the input is shuffled).
    r2 = random.Random(seed + 1)
    for f in range(24):
        words = article(r2, r2.choice([60, 120]))
        again = list(words)
        r2.shuffle(again)
        docs.append({"id": f"r{f:03}/0", "text": render(words + again)})
        docs.append({"id": f"r{f:03}/1", "text": render(words)})
    rng.shuffle(docs)
    # Ids whose order is not the ingest order.
    return docs


def flip(fp: int, bits) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def spread_bits(rng: random.Random, d: int, blocks: int) -> list[int]:
    """d distinct bits, one per block as far as they go."""
    spans = simdb_spark.Design(blocks, 1).spans()
    order = list(range(blocks))
    rng.shuffle(order)
    bits: set[int] = set()
    i = 0
    while len(bits) < d:
        shift, width = spans[order[i % blocks]]
        bits.add(shift + rng.randrange(width))
        i += 1
    return sorted(bits)


def fingerprint_docs(seed: int = 11) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    out: list[tuple[str, int]] = []
    for i in range(3000):
        out.append((f"r{i:05}", rng.getrandbits(64)))
    for i in range(500):
        base = rng.getrandbits(64)
        out.append((f"p{i:04}/0", base))
        for v in range(rng.randrange(1, 4)):
            d = rng.randrange(0, 8)
            how = rng.randrange(4)
            if how == 0:
                bits = rng.sample(range(64), d)
            elif how == 1:
                bits = spread_bits(rng, d, 4)
            elif how == 2:
                bits = spread_bits(rng, d, 5)
            else:
                # Packed into one 16-bit block (or two when d > 16 can't be).
                lo = 16 * rng.randrange(4)
                bits = rng.sample(range(lo, lo + 16), d)
            out.append((f"p{i:04}/{v + 1}", flip(base, bits)))
    for i in range(40):
        fp = rng.getrandbits(64)
        for c in range(rng.randrange(2, 5)):
            out.append((f"s{i:03}/{c}", fp))
    # The extremes of the i64 range and around them.
    for i, fp in enumerate([0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64 - 2, 2**63 + 1]):
        out.append((f"e{i}", fp))
    rng.shuffle(out)
    return out


def ingested(d, docs: list[dict], *init: str) -> tuple[str, str]:
    """A store of `docs` in directory `d` (`simdb init DB *init`, ingested
    with -k 3) and its Parquet export: (store, export)."""
    src = d / "docs.jsonl"
    with open(src, "w") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    db = str(d / "db")
    simdb("init", db, *init)
    simdb("ingest", db, str(src), "-k", "3")
    export = str(d / "export")
    simdb("export", db, "--parquet", export)
    return db, export


@pytest.fixture(scope="module")
def text_store(tmp_path_factory):
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built")
    return ingested(tmp_path_factory.mktemp("text"), text_docs())


def copies_docs(seed: int = 13) -> list[dict]:
    """The text documents, and many copies of some of them under new ids:
    an article (150 copies), and of eight reposts the first half (15 each)
    and the whole (8 each), all shuffled together: copies of a half come
    before and after copies of its whole, so whether the containment rule
    confirms such a pair depends on which of the two came first."""
    docs = text_docs()
    by_id = {d["id"]: d for d in docs}
    rng = random.Random(seed)
    copies = [("cpA", "f000/0", 150)]
    for f in range(8):
        copies += [(f"cpH{f}", f"r{f:03}/1", 15), (f"cpF{f}", f"r{f:03}/0", 8)]
    for prefix, src, n in copies:
        for i in range(n):
            docs.append({"id": f"{prefix}/{i:03}", "text": by_id[src]["text"]})
    rng.shuffle(docs)
    return docs


@pytest.fixture(scope="module")
def copies_store(tmp_path_factory):
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built")
    return ingested(tmp_path_factory.mktemp("copies"), copies_docs())


@pytest.fixture(scope="module")
def fp_store(tmp_path_factory):
    if not os.path.exists(SIMDB):
        pytest.skip(f"{SIMDB} not built")
    d = tmp_path_factory.mktemp("fps")
    src = d / "fps.jsonl"
    with open(src, "w") as f:
        for id_, fp in fingerprint_docs():
            f.write(json.dumps({"id": id_, "fingerprint": f"{fp:016x}"}) + "\n")
    db = str(d / "db")
    simdb("import", db, str(src))
    simdb("export", db, "--parquet", str(d / "export"))
    return db, str(d / "export")


# ---------------------------------------------------------------- oracles


def read_export(path: str):
    t = pa_parquet.read_table(path, columns=["id", "fingerprint", "sketch", "ord", "priority",
                                             "length", "fine"])
    return t.to_pydict()


def sketch_similarity(a: bytes, b: bytes) -> float:
    """The README's definition, bin by bin (bin j is bits 2j..2j+2): 128
    bins, or 512 given a sketch and its fine sketch one after the other."""
    bins = 4 * len(a)
    matches = sum(
        ((a[j // 4] >> (2 * (j % 4))) & 3) == ((b[j // 4] >> (2 * (j % 4))) & 3) for j in range(bins)
    )
    p = matches / bins
    return min(1.0, max(0.0, (p - 0.25) / 0.75))


def estimate(e, i: int, j: int, min_similarity: float):
    """(similarity, refined) of documents i and j of an export, from the
    definitions: a sketch estimate at least 0.33 and under the threshold
    is taken again over both sketches and both fine sketches."""
    sa, sb = e["sketch"][i], e["sketch"][j]
    if sa is None or sb is None:
        return None, False
    sim = sketch_similarity(sa, sb)
    fa, fb = e["fine"][i], e["fine"][j]
    if fa is not None and fb is not None and 0.33 <= sim < min_similarity:
        return sketch_similarity(sa + fa, sb + fb), True
    return sim, False


def contained(sim: float, later: int, earlier: int, min_similarity: float,
              refined: bool = False) -> bool:
    """The README's containment rule, from its definition: the shorter of
    the two contained in the longer, whichever came first (the floor 0.45
    for a refined estimate)."""
    short, long = min(later, earlier), max(later, earlier)
    if sim < (0.45 if refined else 0.5) or short == 0:
        return False
    c = min(1.0, sim * (1.0 + long / short) / (1.0 + sim))
    return c >= max(0.75, min_similarity)


def brute_pairs(export: str, k: int, min_similarity: float) -> set:
    e = read_export(export)
    fps = np.array(e["fingerprint"], dtype=np.int64).view(np.uint64)
    out = set()
    for i in range(len(fps)):
        x = np.bitwise_count(fps[i + 1:] ^ fps[i])
        for j in np.nonzero(x <= k)[0] + i + 1:
            sim, refined = estimate(e, i, j, min_similarity)
            later, earlier = (i, j) if e["ord"][i] > e["ord"][j] else (j, i)
            if (sim is not None and sim < min_similarity
                    and not contained(sim, e["length"][later], e["length"][earlier],
                                      min_similarity, refined)):
                continue
            a, b = sorted((e["id"][i], e["id"][j]))
            out.add((a, b, int(x[j - i - 1]), sim))
    return out


def simdb_pairs(db: str, k: int, min_similarity: float) -> set:
    out = set()
    for line in simdb("pairs", db, "-k", str(k), "--min-similarity", str(min_similarity),
                      "--copies", "pairs").splitlines():
        p = json.loads(line)
        out.add((p["a"], p["b"], p["distance"], p.get("similarity")))
    return out


def spark_pairs(out: str) -> set:
    t = pa_parquet.read_table(os.path.join(out, "pairs")).to_pydict()
    return set(zip(t["a"], t["b"], t["distance"], t["similarity"]))


def spark_clusters(out: str) -> dict:
    t = pa_parquet.read_table(os.path.join(out, "clusters")).to_pylist()
    by: dict = {}
    for r in t:
        by.setdefault(r["cluster"], []).append(r)
    res = {}
    for cid, rows in by.items():
        rows.sort(key=lambda r: r["rank"])
        assert [r["rank"] for r in rows] == list(range(len(rows)))
        assert all(r["size"] == len(rows) and r["representative"] == rows[0]["id"] for r in rows)
        res[cid] = (len(rows), rows[0]["id"], [(r["id"], r["distance"]) for r in rows])
    return res


def simdb_clusters(db: str) -> dict:
    res = {}
    for line in simdb("clusters", db, "--json").splitlines():
        c = json.loads(line)
        res[c["id"]] = (c["size"], c["representative"], [(m["id"], m["distance"]) for m in c["members"]])
    return res


# ---------------------------------------------------------------- tests


def _placed(docs, pairs, keep, tmp, name, k=3):
    """`simdb.place_groups` of `docs` ((ord, id, analysis index, group)) and
    group pairs, as the job's workers call it: the clusters as sorted
    rows."""
    cols = list(zip(*docs))
    out = simdb_wheel.place_groups(
        str(tmp / name), [d[1] for d in docs], list(cols[0]),
        [_A["fingerprint"][d[2]] - (1 << 64) if _A["fingerprint"][d[2]] >= 1 << 63
         else _A["fingerprint"][d[2]] for d in docs],
        [_A["sketch"][d[2]] for d in docs], [_A["fine"][d[2]] for d in docs],
        [_A["length"][d[2]] for d in docs], [None] * len(docs), [None] * len(docs),
        [None] * len(docs), [d[3] for d in docs], [p[0] for p in pairs], [p[1] for p in pairs],
        k=k, keep=keep)
    return sorted(zip(out["cluster"], out["size"], out["representative"], out["id"],
                      out["rank"], out["distance"]))


_A: dict = {}


def test_copies_reach_the_worker_as_one_group(tmp_path):
    """Review 2026-11-b, finding 11: a component of n exact copies brought
    its n(n-1)/2 pairs to the worker. The copies are one group (the same
    fingerprint, sketch and length) and no pair is listed for them: each
    document's nearest earlier copies come from the 16 smallest ids of its
    group placed so far (`simdb.place_groups`, the wheel's). Two texts of
    3,000 copies each (an article and its first two thirds: the shorter
    contained), interleaved: placed as two groups, the first 200 documents
    cluster as they do placed one group per document with every pair
    listed (the oracle), and all 6,000 form the clusters of two groups."""
    rng = random.Random(11)
    words = [rng.choice(WORDS) for _ in range(300)]
    long_text = "".join(words)
    short_text = "".join(words[:200])
    a = simdb_wheel.Analyzer().analyze_many([long_text, short_text])
    _A.clear()
    _A.update(a)
    assert a["fingerprint"][0] != a["fingerprint"][1]
    d = bin(a["fingerprint"][0] ^ a["fingerprint"][1]).count("1")
    k = max(3, d)
    n = 3000
    docs = [(o, f"c{o:05}", o % 2, o % 2) for o in range(2 * n)]
    for keep in ("first", "longest"):
        got = _placed(docs, [(0, 1)], keep, tmp_path, f"g-{keep}", k=k)
        assert sum(1 for r in got if r[4] == 0) >= 1, keep
        assert len(got) == 2 * n, (keep, len(got))
        small = docs[:200]
        one_each = [(o, i, x, o) for o, i, x, _ in small]
        pairs = [(x, y) for x in range(200) for y in range(x + 1, 200)]
        want = _placed(one_each, pairs, keep, tmp_path, f"o-{keep}", k=k)
        assert _placed(small, [(0, 1)], keep, tmp_path, f"s-{keep}", k=k) == want, keep


def test_an_export_of_another_rule_is_refused():
    """An export states the rule its store's answers follow; the job,
    which decides by this wheel's rule, refuses one written under another
    (and takes exports from before exports stated it)."""
    import simdb

    recipe = simdb.rule()["recipe"]
    ours = f"{simdb.rule()['digest']:016x}"
    simdb_spark.refuse_other_rule({"recipe": recipe, "rule_digest": ours})
    simdb_spark.refuse_other_rule({"recipe": recipe})
    with pytest.raises(ValueError, match="another rule .digest 00000000000000ab"):
        simdb_spark.refuse_other_rule({"recipe": recipe, "rule_digest": "00000000000000ab"})
    assert simdb_spark.max_k() == simdb.rule()["constants"]["max_exact_k"]
    with pytest.raises(ValueError, match=f"between 0 and {simdb_spark.max_k()}"):
        simdb_spark.Design.parse("20:2").check(simdb_spark.max_k() + 1)


def test_designs():
    d = simdb_spark.Design.parse("card")
    assert d.spans() == [(48, 16), (32, 16), (16, 16), (0, 16)] and len(d.tables()) == 4
    m = simdb_spark.Design.parse("manku")
    assert [w for _, w in m.spans()] == [13, 13, 13, 13, 12] and len(m.tables()) == 10
    assert m.key_bits() == (25, 26)
    for s in ["card", "manku", "6:2", "7:2"]:
        simdb_spark.Design.parse(s).check(simdb_spark.Design.parse(s).blocks - simdb_spark.Design.parse(s).choose)
    with pytest.raises(ValueError, match="exact only for k <= 3"):
        simdb_spark.Design.parse("card").check(4)
    with pytest.raises(ValueError, match="B:m"):
        simdb_spark.Design.parse("five")
    with pytest.raises(ValueError):
        simdb_spark.Design.parse("4:4")


def test_text_store_pairs_and_clusters(spark, text_store, tmp_path):
    db, export = text_store
    expected = brute_pairs(export, 3, 0.6)
    # The data covers what matters: rejected and confirmed pairs, identical
    # fingerprints, several distances.
    assert len(expected) > 60
    assert {p[2] for p in expected} >= {0, 1, 2, 3}
    assert len(brute_pairs(export, 3, 0.0)) > len(expected) + 20
    assert expected == simdb_pairs(db, 3, 0.6)
    # Some pairs are confirmed by containment only (the reposts).
    e = read_export(export)
    length = dict(zip(e["id"], e["length"]))
    ord_ = dict(zip(e["id"], e["ord"]))
    by_containment = {p for p in expected if p[3] is not None and p[3] < 0.6}
    assert len(by_containment) >= 3, by_containment
    index = {d: i for i, d in enumerate(e["id"])}
    for a, b, _, sim in by_containment:
        later, earlier = (a, b) if ord_[a] > ord_[b] else (b, a)
        s, refined = estimate(e, index[a], index[b], 0.6)
        assert s == sim and contained(sim, length[later], length[earlier], 0.6, refined)
    want_clusters = simdb_clusters(db)
    assert len(want_clusters) > 50 and max(c[0] for c in want_clusters.values()) >= 4
    for design in ["card", "manku"]:
        out = str(tmp_path / design)
        rep = simdb_spark.run(spark, export, out, k=3, design=design, stats=True, copies="pairs")
        assert spark_pairs(out) == expected, design
        assert rep["pairs"] == len(expected)
        assert rep["rejected"] == len(brute_pairs(export, 3, 0.0)) - len(expected)
        assert spark_clusters(out) == want_clusters, design
        assert rep["clusters"] == len(want_clusters)
        assert rep["candidate_pairs"] >= rep["group_pairs_within_k"]
        assert rep["groups"] < rep["documents"]


@pytest.mark.parametrize("keep", ["priority", "longest", "newest"])
def test_clusters_follow_the_keep_policy(spark, keep, tmp_path):
    """The same documents in a store of each other keep policy: the job's
    clusters still equal simdb's (representatives taking over, members
    leaving)."""
    db, export = ingested(tmp_path, text_docs(), "--keep", keep)
    want = simdb_clusters(db)
    assert len(want) > 50
    out = str(tmp_path / "out")
    rep = simdb_spark.run(spark, export, out, k=3, design="card")
    assert rep["keep_policy"] == keep
    assert spark_clusters(out) == want, keep


@pytest.mark.parametrize("keep", ["first", "newest"])
def test_clusters_obey_the_stores_decisions(spark, keep, tmp_path):
    """"Not a copy" and "keep this one" decisions (simdb decide): a store
    that has them before its documents are ingested, and the job given its
    export (whose _decisions.jsonl it reads), make the same clusters;
    without the decisions the clusters differ."""
    (tmp_path / "one").mkdir()
    db1, _ = ingested(tmp_path / "one", text_docs(), "--keep", keep)
    before = simdb_clusters(db1)
    pairs = [(c[1], c[2][-1][0]) for c in list(before.values())[::2]]
    assert len(pairs) > 10
    for a, b in pairs:
        simdb("decide", db1, "not-a-copy", a, b)
    simdb("decide", db1, "undo", "1")
    # "Keep this one": the last member of other clusters (the first kept,
    # then undone).
    kept = [c[2][-1][0] for c in list(before.values())[1::2]][:12]
    assert len(kept) > 5
    for i in kept:
        simdb("decide", db1, "keep", i)
    simdb("decide", db1, "undo", str(len(pairs) + 2))
    log = tmp_path / "log.jsonl"
    log.write_text(simdb("decisions", db1, "--json"))
    # The same documents into a store that has the decisions first.
    (tmp_path / "two").mkdir()
    d = tmp_path / "two"
    src = d / "docs.jsonl"
    with open(src, "w") as f:
        for doc in text_docs():
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    db2 = str(d / "db")
    simdb("init", db2, "--keep", keep)
    simdb("decide", db2, "replay", str(log))
    simdb("ingest", db2, str(src), "-k", "3")
    export = str(d / "export")
    simdb("export", db2, "--parquet", export)
    want = simdb_clusters(db2)
    assert want != before
    out = str(tmp_path / "out")
    rep = simdb_spark.run(spark, export, out, k=3, design="card")
    # Every decision of the log, undos included, went to the placement.
    assert rep["decisions"] == len(pairs) + 1 + len(kept) + 1
    assert spark_clusters(out) == want, keep
    # A kept document in a cluster represents it.
    reps = {c[1] for c in want.values()}
    placed = {m for c in want.values() for m, _ in c[2]} & set(kept[1:])
    assert placed and placed <= reps
    # Given no decisions, the job makes the clusters without them.
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    out = str(tmp_path / "out-none")
    simdb_spark.run(spark, export, out, k=3, design="card", decisions=str(empty))
    assert spark_clusters(out) == before, keep


def test_text_store_thresholds(spark, text_store, tmp_path):
    db, export = text_store
    for i, (k, s) in enumerate([(0, 0.6), (2, 0.0), (3, 0.9), (3, 1.0)]):
        out = str(tmp_path / f"t{i}")
        simdb_spark.run(spark, export, out, k=k, design="manku", min_similarity=s, clusters=False,
                        copies="pairs")
        got = spark_pairs(out)
        assert got == brute_pairs(export, k, s) == simdb_pairs(db, k, s), (k, s)


def test_fingerprint_store_every_distance(spark, fp_store, tmp_path):
    db, export = fp_store
    e = read_export(export)
    assert all(s is None for s in e["sketch"])
    assert any(f < 0 for f in e["fingerprint"])
    for k, design in [(3, "card"), (3, "manku"), (0, "card"), (1, "manku"), (5, "7:2"), (7, "9:2")]:
        out = str(tmp_path / f"k{k}-{design.replace(':', 'c')}")
        rep = simdb_spark.run(spark, export, out, k=k, design=design, clusters=False,
                              copies="pairs")
        expected = brute_pairs(export, k, 0.6)
        assert {p[2] for p in expected} == set(range(k + 1)), (k, design)
        assert spark_pairs(out) == expected, (k, design)
        assert expected == simdb_pairs(db, k, 0.6), (k, design)
        assert rep["unconfirmed"] == rep["pairs"] == len(expected)


def test_command_line(text_store, tmp_path):
    _, export = text_store
    job = os.path.join(HERE, "simdb_spark.py")
    out = str(tmp_path / "cli")
    p = subprocess.run([sys.executable, job, export, out, "--design", "manku", "--driver-memory", "1g",
                        "--partitions", "4", "--copies", "pairs"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout.strip().splitlines()[-1])
    with open(os.path.join(out, "report.json")) as f:
        assert json.load(f) == rep
    assert rep["pairs"] == len(brute_pairs(export, 3, 0.6))
    # Refusals, before Spark starts: an inexact design, an existing output.
    p = subprocess.run([sys.executable, job, export, str(tmp_path / "x"), "--k", "4"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "exact only for k <= 3" in p.stderr
    p = subprocess.run([sys.executable, job, export, out], capture_output=True, text=True)
    assert p.returncode == 2 and "already exists" in p.stderr


def test_export_metadata_states_recipe_and_threshold(text_store, tmp_path):
    """Issue 24: an export names the store's recipe and threshold; the job
    takes the threshold from it when none is given."""
    db, export = text_store
    meta = simdb_spark.export_metadata(export)
    stats = json.loads(simdb("stats", db, "--json"))
    assert meta["recipe"] == stats["recipe"]
    assert meta["keep_policy"] == stats["keep"]
    assert 0.0 < meta["min_similarity"] < 1.0


def test_an_export_that_lost_a_part_is_refused(fp_store, tmp_path):
    """Issue 37 (review 2026-11-b, finding 5): the job reads the manifest
    `_SUCCESS` as `simdb import` does: a copy that lost, changed or gained
    a part is refused before Spark starts, naming it; --partial reads it."""
    db, _ = fp_store
    export = str(tmp_path / "export")
    simdb("export", db, "--parquet", export, "--file-rows", "40")
    parts = sorted(f for f in os.listdir(export) if f.endswith(".parquet"))
    assert len(parts) >= 3
    assert simdb_spark.check_export(export) == []
    assert simdb_spark.check_export(export, checksums=True) == []
    lost = str(tmp_path / "lost")
    shutil.copytree(export, lost)
    os.remove(os.path.join(lost, parts[1]))
    problems = simdb_spark.check_export(lost)
    assert problems == [f"{parts[1]} is missing (40 rows)"], problems
    assert simdb_spark.check_export(lost, partial=True) == []
    changed = str(tmp_path / "changed")
    shutil.copytree(export, changed)
    path = os.path.join(changed, parts[0])
    with open(path, "r+b") as f:
        f.seek(8)  # in the first page: the footer (sizes, rows) stays
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x55]))
    assert simdb_spark.check_export(changed) == []  # same size and rows
    assert "CRC-32" in simdb_spark.check_export(changed, checksums=True)[0]
    shutil.copy(os.path.join(export, parts[0]), os.path.join(lost, "part-extra.parquet"))
    assert "part-extra.parquet is not a part of the export" in simdb_spark.check_export(lost)
    job = os.path.join(HERE, "simdb_spark.py")
    p = subprocess.run([sys.executable, job, lost, str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and parts[1] in p.stderr and "--partial" in p.stderr, p.stderr


def simdb_grouped(db: str, k: int, min_similarity: float) -> tuple[set, set]:
    """`simdb pairs`' default output: its groups of copies and its pairs."""
    groups, pairs = set(), set()
    for line in simdb("pairs", db, "-k", str(k), "--min-similarity", str(min_similarity)).splitlines():
        p = json.loads(line)
        if "copies" in p:
            groups.add((tuple(p["copies"]), p["distance"], p.get("similarity")))
        else:
            pairs.add((p["a"], p["b"], p["distance"], p.get("similarity")))
    return groups, pairs


def test_copies_are_one_group(spark, copies_store, tmp_path):
    """Review 2026-11-b, finding 11: n copies of a text brought n(n-1)/2
    rows to the candidate join and to the worker that places their
    component. The job now joins one row per group of copies (the same
    fingerprint, sketch and length). Its answers stay simdb's: every pair
    with --copies pairs (against a brute force and `simdb pairs --copies
    pairs`, including containment pairs of a half and its whole),
    the groups and their pairs by default (against `simdb pairs`), and the
    clusters."""
    db, export = copies_store
    expected = brute_pairs(export, 3, 0.6)
    assert len(expected) > 150 * 149 // 2 + 8 * (15 * 14 // 2 + 8 * 7 // 2)
    assert expected == simdb_pairs(db, 3, 0.6)
    # Copies of a repost's half and of its whole: confirmed by containment
    # whichever came first (for the reposts whose two texts are near at
    # all), in both orders where copies of each came first.
    e = read_export(export)
    ord_ = dict(zip(e["id"], e["ord"]))
    found = {(a, b) for a, b, _, _ in expected}
    both_ways = 0
    for f in range(8):
        half = [i for i in e["id"] if i.startswith(f"cpH{f}/")]
        whole = [i for i in e["id"] if i.startswith(f"cpF{f}/")]
        later = sum(1 for h in half for w in whole if ord_[h] > ord_[w])
        hw = sum(1 for h in half for w in whole if (min(h, w), max(h, w)) in found)
        assert hw in (0, len(half) * len(whole)), (f, hw, later)
        both_ways += hw > 0 and 0 < later < len(half) * len(whole)
    assert both_ways >= 2, both_ways
    want_clusters = simdb_clusters(db)

    out = str(tmp_path / "pairs")
    rep = simdb_spark.run(spark, export, out, k=3, design="card", copies="pairs", stats=True)
    assert spark_pairs(out) == expected
    assert rep["pairs"] == len(expected)
    assert spark_clusters(out) == want_clusters
    assert rep["groups"] <= rep["documents"] - 149 - 8 * (14 + 7)
    assert rep["candidate_pairs"] < len(expected) // 10

    out = str(tmp_path / "groups")
    rep = simdb_spark.run(spark, export, out, k=3, design="manku")
    want_groups, want_pairs = simdb_grouped(db, 3, 0.6)
    got_groups = {(tuple(r["copies"]), r["distance"], r["similarity"])
                  for r in pa_parquet.read_table(os.path.join(out, "copies")).to_pylist()}
    assert got_groups == want_groups
    assert max(len(g[0]) for g in want_groups) >= 150 + 1
    assert sum(len(g[0]) >= 8 + 1 for g in want_groups) >= 1 + 2 * 8
    assert spark_pairs(out) == want_pairs
    assert rep["pairs"] == len(want_pairs) and rep["copy_groups"] == len(want_groups)
    assert spark_clusters(out) == want_clusters
