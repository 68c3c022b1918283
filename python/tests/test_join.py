"""The duplicate check as a join (issue 59): ``simdb.engine.check_by_join``
runs the four stages an engine runs on its workers (by fingerprint, by key,
by fingerprint, by ord) with no store of the run, and finds for each
document what ingest's own check found, where checks reach their bounds
too (16 confirmed; 256 looked at)."""

import random

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
