"""The duplicate check as a join (issue 59): ``simdb.engine.check_by_join``
runs the four stages an engine runs on its workers (by fingerprint, by key,
by fingerprint, by ord) with no store of the run, and finds for each
document what ingest's own check found, where checks reach their bounds
too (16 confirmed; 256 looked at)."""

import random

import pytest

import simdb
from simdb.engine import check_by_join


def words(rng: random.Random, n: int) -> list:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def texts(seed: int) -> list:
    rng = random.Random(seed)
    vocab = words(rng, 3000)
    originals = [[rng.choice(vocab) for _ in range(150)] for _ in range(40)]
    out = []
    for i, o in enumerate(originals):
        out.append((f"a{i:03}", " ".join(o)))
        w = list(o)
        for _ in range(rng.randint(1, 5)):
            w[rng.randrange(len(w))] = rng.choice(vocab)
        out.append((f"e{i:03}", " ".join(w)))
    # A flood of exact copies: a check confirms 16 and stops.
    out += [(f"flood{i:02}", " ".join(originals[0])) for i in range(40)]
    # One bag of words in 300 orders (one fingerprint, sketches the
    # threshold rejects): a check looks at 256 and stops.
    for i in range(300):
        w = list(originals[1])
        rng.shuffle(w)
        out.append((f"shuffle{i:03}", ", ".join(w)))
    # First halves (containment) and texts around one template.
    out += [(f"half{i:02}", " ".join(o[: len(o) // 2])) for i, o in enumerate(originals[2:12])]
    template = " ".join(rng.choice(vocab) for _ in range(100))
    out += [(f"tpl{i:02}", " ".join(rng.choice(vocab) for _ in range(30)) + " " + template) for i in range(30)]
    rng.shuffle(out)
    return out


def test_the_check_as_a_join_finds_what_ingest_found(tmp_path):
    docs = texts(59)
    with simdb.Db.create(str(tmp_path / "run")) as db:
        added = db.add_many(docs, batch_size=29, max_duplicates=16)
        recipe = db.recipe
        got = db.records([d[0] for d in docs])
    ingest = {r.id: [h.id for h in r.duplicates] for r in added if r.duplicates}
    incomplete = [r for r in added if not r.duplicate_count_exact]
    assert sum(1 for r in incomplete if len(r.duplicates) == 16) >= 20
    assert sum(1 for r in incomplete if len(r.duplicates) < 16) >= 20
    ids = [d[0] for d in docs]
    fps = [r.fingerprint for r in added]
    for buckets in (1, 3):
        found = check_by_join(ids, got["ord"], fps, got["record"], recipe=recipe, buckets=buckets)
        assert found["checked"] == len(docs)
        assert found["ord"] == sorted(found["ord"])
        joined = dict(zip(found["id"], found["near"]))
        assert joined == ingest


def test_rows_made_under_another_rule_are_refused():
    """Fingerprint rows carry the digest of the rule they were made under
    (the recipe with this build's constants, ``simdb.rule``); a run
    refuses rows stamped with another, on Ray's and Spark's rows alike."""
    import json

    import pyarrow as pa
    from simdb import engine
    from simdb.ray import RULE, fingerprint_table

    a, b = simdb.Analyzer(), simdb.Analyzer(shingle=2)
    r = simdb.rule()
    assert r["version"] == 1 and r["recipe"] == a.recipe
    assert r["constants"]["check_confirmed"] == 16 and r["constants"]["check_examined"] == 256
    assert r["constants"]["max_exact_k"] == 11 and r["constants"]["k"] == 3
    assert a.rule == r["digest"] == simdb.rule(a.recipe)["digest"]
    assert simdb.rule(json.dumps(b.recipe))["digest"] == b.rule != a.rule
    t = pa.table({"id": ["x", "y", "z"], "text": ["one text of words", "another text", None]})
    mine, theirs = fingerprint_table(t, a), fingerprint_table(t, b)
    assert mine.column(RULE).to_pylist() == [a.rule] * 3
    docs, none = engine.doc_records(mine, 1, rule=a.rule)
    assert (docs.num_rows, none) == (2, 1)
    with pytest.raises(ValueError, match=f"another rule .digest {b.rule:016x}; this run's is {a.rule:016x}"):
        engine.doc_records(theirs, 1, rule=a.rule)
    # Spark's rows: the digest's bits as a signed long.
    i = mine.schema.get_field_index(RULE)
    signed = mine.set_column(i, RULE, mine.column(RULE).cast(pa.int64(), safe=False))
    assert engine.doc_records(signed, 1, rule=a.rule)[0].num_rows == 2
    i = theirs.schema.get_field_index(RULE)
    with pytest.raises(ValueError, match="another rule"):
        engine.doc_records(theirs.set_column(i, RULE, theirs.column(RULE).cast(pa.int64(), safe=False)),
                           1, rule=a.rule)
    # Rows from before rows were stamped are taken as the run's; a table
    # that has a rule column is not stamped over.
    assert engine.doc_records(theirs.drop_columns([RULE]), 1, rule=a.rule)[0].num_rows == 2
    with pytest.raises(ValueError, match="already has the column"):
        fingerprint_table(t.append_column(RULE, pa.array([1, 2, 3], pa.uint64())), a)


def test_a_build_by_range_deals_its_parts_into_shares():
    """A build by range maps runs of consecutive parts, as even as they
    divide, one per part up to MAX_SHARES (the maps' pieces number shares
    times ranges)."""
    from simdb._rayjoin import MAX_SHARES, shares_of

    parts = [f"p{i}" for i in range(10)]
    assert shares_of(parts) == [[p] for p in parts]
    assert shares_of(parts, 3) == [parts[0:4], parts[4:7], parts[7:10]]
    assert shares_of(parts, 1) == [parts]
    assert shares_of(parts, 50) == [[p] for p in parts]
    many = list(range(10_001))
    got = shares_of(many)
    assert len(got) == MAX_SHARES and [x for s in got for x in s] == many
    assert {len(s) for s in got} == {39, 40}
    assert shares_of([]) == []
    with pytest.raises(ValueError, match="shares must be at least 1"):
        shares_of(parts, 0)
