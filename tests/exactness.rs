//! The index returns exactly what a brute-force scan returns, for every
//! supported k (0..=11: one bucket per family up to 3, multi-probe above),
//! with planted neighbours at every distance 1..=13 (so exactly k and k+1), identical
//! fingerprints under different ids, and differing bits spread over blocks;
//! before and after close and reopen.

use crate::common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::Rng;
use simdb::db::{Copies, PairsItem, Probe, Query};
use simdb::fingerprint::MAX_EXACT_K as MAX_K;
use simdb::index::{brute_force, brute_force_plan, MemIndex, ProbePlan};
use simdb::{Content, Db, Fingerprint, Recipe};

/// Flips the given bit positions.
fn flip(fp: Fingerprint, bits: &[u32]) -> Fingerprint {
    Fingerprint(bits.iter().fold(fp.0, |v, b| v ^ (1u64 << b)))
}

/// `d` distinct bit positions, spread over as many blocks as possible
/// (`spread`) or packed into one block.
fn bits(rng: &mut impl Rng, d: usize, spread: bool) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let first_block = rng.random_range(0..4u32);
    while out.len() < d {
        let block = if spread {
            (first_block + out.len() as u32) % 4
        } else {
            first_block
        };
        let b = block * 16 + rng.random_range(0..16);
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

struct Planted {
    entries: BTreeMap<String, Fingerprint>,
    queries: Vec<Fingerprint>,
}

fn plant(seed: u64, random: usize, queries: usize) -> Planted {
    let mut rng = common::rng(seed);
    let mut entries = BTreeMap::new();
    for n in 0..random {
        entries.insert(format!("rand-{n:06}"), Fingerprint(rng.random()));
    }
    let mut qs = Vec::new();
    for q in 0..queries {
        let base = Fingerprint(rng.random());
        qs.push(base);
        // Identical fingerprints under different ids.
        entries.insert(format!("q{q}-same-a"), base);
        entries.insert(format!("q{q}-same-b"), base);
        for d in 1..=13usize {
            for spread in [true, false] {
                for copy in 0..2 {
                    let b = bits(&mut rng, d, spread);
                    entries.insert(
                        format!(
                            "q{q}-d{d}-{}-{copy}",
                            if spread { "spread" } else { "packed" }
                        ),
                        flip(base, &b),
                    );
                }
            }
        }
        // Bits spread over exactly three blocks, one block untouched.
        let skip = rng.random_range(0..4u32);
        let three: Vec<u32> = (0..4u32)
            .filter(|b| *b != skip)
            .map(|b| b * 16 + rng.random_range(0..16))
            .collect();
        entries.insert(format!("q{q}-three-blocks"), flip(base, &three));
    }
    // Queries that are not stored themselves: a near neighbour of a planted one.
    let extra: Vec<Fingerprint> = qs.iter().map(|q| flip(*q, &[0, 17])).collect();
    qs.extend(extra);
    Planted {
        entries,
        queries: qs,
    }
}

fn check_db(db: &Db, p: &Planted, when: &str) {
    let mut found_at = [0usize; MAX_K as usize + 1];
    for q in &p.queries {
        for k in 0..=MAX_K {
            let want = brute_force(p.entries.iter().map(|(id, fp)| (id.as_str(), *fp)), *q, k);
            let got = db.query(*q, k, None).unwrap();
            assert_eq!(got, want, "{when}: query {q} at k={k}");
            found_at[k as usize] += got.len();
            // A limit returns a prefix of the full answer.
            let lim = db.query(*q, k, Some(3)).unwrap();
            assert_eq!(lim[..], want[..want.len().min(3)], "{when}: limit");
        }
    }
    // The planted neighbours are really there: more hits for larger k.
    assert!(found_at.windows(2).all(|w| w[0] < w[1]), "{found_at:?}");
    // Confidence-ranked plans equal the brute force of their own rule, for
    // several budgets and weak orders (some weak sets packed into one
    // block, some spread), alone and with an exact radius.
    let mut ranked_hits = 0;
    for (n, q) in p.queries.iter().enumerate() {
        for (budget, k) in [(4, 0), (16, 0), (64, 3), (256, 0), (64, 7)] {
            let plan_q = Query {
                probe: Some(Probe {
                    weak_bits: weak_order(n as u64),
                    budget,
                    bands: true,
                }),
                min_similarity: 0.0,
                ..Query::new(*q).exact(k)
            };
            let plan = plan_q.plan();
            assert!(plan.buckets() <= budget + ProbePlan::exact(*q, k).buckets());
            let want = brute_force_plan(
                p.entries.iter().map(|(id, fp)| (id.as_str(), *fp)),
                *q,
                &plan,
            );
            let got = db.search(&plan_q).unwrap();
            assert_eq!(got, want, "{when}: ranked query {q} budget {budget} k {k}");
            ranked_hits += got.len();
            assert_eq!(
                db.find_many(std::slice::from_ref(&plan_q)).unwrap()[0].hits,
                want
            );
        }
    }
    assert!(ranked_hits > 0);
    // A batch answers as the queries one by one, in order; the batch holds
    // each query twice and queries sharing blocks.
    let mut batch: Vec<Fingerprint> = p.queries.clone();
    batch.extend(p.queries.iter().rev());
    batch.extend(p.queries.iter().map(|q| flip(*q, &[63])));
    for k in 0..=MAX_K {
        let qs: Vec<simdb::Query> = batch
            .iter()
            .map(|&q| simdb::Query::new(q).exact(k))
            .collect();
        let many: Vec<_> = db
            .find_many(&qs)
            .unwrap()
            .into_iter()
            .map(|f| f.hits)
            .collect();
        assert_eq!(many.len(), batch.len());
        for (q, got) in batch.iter().zip(&many) {
            let want = brute_force(p.entries.iter().map(|(id, fp)| (id.as_str(), *fp)), *q, k);
            assert_eq!(*got, want, "{when}: batch query {q} at k={k}");
        }
    }
}

/// A weak-bit order: a permutation of the 64 bits, packed into few blocks
/// for even `n`, spread for odd.
fn weak_order(n: u64) -> Vec<u8> {
    let mut rng = common::rng(1000 + n);
    let mut bits: Vec<u8> = (0..64).collect();
    if n.is_multiple_of(2) {
        // Whole blocks in a random order, bits in order inside them.
        let start = rng.random_range(0..4u8);
        bits.sort_by_key(|b| ((b / 16 + 4 - start) % 4, *b));
    } else {
        for i in (1..bits.len()).rev() {
            bits.swap(i, rng.random_range(0..=i));
        }
    }
    bits
}

#[test]
fn store_matches_brute_force_before_and_after_reopen() {
    for seed in [1u64, 2, 3] {
        let t = common::TempDb::new();
        let p = plant(seed, 3000, 12);
        {
            let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
            let mut w = db.writer().unwrap();
            for (i, (id, fp)) in p.entries.iter().enumerate() {
                w.put(id, *fp, &Content::Text(id.to_string()), "test")
                    .unwrap();
                if i % 1000 == 999 {
                    w.commit().unwrap();
                }
            }
            w.commit().unwrap();
            check_db(&db, &p, "open");
            assert_eq!(db.len().unwrap(), p.entries.len() as u64);
        }
        let db = Db::options().open(t.path()).unwrap();
        check_db(&db, &p, "reopened");
        let ro = {
            drop(db);
            Db::options().read_only().open(t.path()).unwrap()
        };
        check_db(&ro, &p, "read-only");
        assert!(ro.admin().verify().unwrap().is_clean());
    }
}

#[test]
fn writer_sees_its_own_pending_writes_exactly() {
    let t = common::TempDb::new();
    let p = plant(9, 500, 4);
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut w = db.writer().unwrap();
    let mut all = BTreeMap::new();
    for (i, (id, fp)) in p.entries.iter().enumerate() {
        w.put(id, *fp, &Content::Text(id.clone()), "t").unwrap();
        all.insert(id.clone(), *fp);
        // Half committed, half pending.
        if i == p.entries.len() / 2 {
            w.commit().unwrap();
        }
    }
    for (n, q) in p.queries.iter().enumerate() {
        for k in 0..=MAX_K {
            let want = brute_force(all.iter().map(|(i, f)| (i.as_str(), *f)), *q, k);
            assert_eq!(w.query(*q, k, None).unwrap(), want);
        }
        // Ranked: the store's and the batch's candidates by the same rule.
        let rq = Query {
            probe: Some(Probe {
                weak_bits: weak_order(n as u64),
                budget: 64,
                bands: true,
            }),
            ..Query::new(*q)
        };
        let want = brute_force_plan(all.iter().map(|(i, f)| (i.as_str(), *f)), *q, &rq.plan());
        assert_eq!(w.search(&rq).unwrap(), want);
    }
}

#[test]
fn k_above_eleven_is_refused() {
    let t = common::TempDb::new();
    let db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let err = db.query(Fingerprint(0), 12, None).unwrap_err();
    assert!(
        matches!(err, simdb::Error::UnsupportedDistance { k: 12, max: 11 }),
        "{err}"
    );
}

/// Seeded property test of the pure in-memory index against brute force.
#[test]
fn mem_index_property() {
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[42; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        any::<u64>(),
        proptest::collection::vec(any::<u64>(), 0..200),
        proptest::collection::vec(proptest::collection::vec(0u32..64, 0..14), 0..40),
    );
    runner
        .run(&strategy, |(base, randoms, flips)| {
            let q = Fingerprint(base);
            let mut idx = MemIndex::new();
            let mut entries = BTreeMap::new();
            for (i, r) in randoms.iter().enumerate() {
                entries.insert(format!("r{i}"), Fingerprint(*r));
            }
            for (i, f) in flips.iter().enumerate() {
                entries.insert(format!("f{i}"), flip(q, f));
            }
            for (id, fp) in &entries {
                idx.insert(id, *fp);
            }
            for k in 0..=MAX_K {
                let want = brute_force(entries.iter().map(|(i, f)| (i.as_str(), *f)), q, k);
                prop_assert_eq!(idx.query(q, k), want);
            }
            // Ranked plans: weak sets from the flips themselves (the bits a
            // near-copy changed), at several budgets.
            let weak: Vec<u8> = flips.iter().flatten().map(|&b| b as u8).collect();
            for budget in [4usize, 20, 64, 300] {
                let plan = ProbePlan::ranked(q, 0, &weak, budget);
                prop_assert!(plan.buckets() <= budget);
                let want =
                    brute_force_plan(entries.iter().map(|(i, f)| (i.as_str(), *f)), q, &plan);
                prop_assert_eq!(idx.query_plan(q, &plan), want);
            }
            Ok(())
        })
        .unwrap();
}

/// Seeded property test of the band buckets (a ranked plan plus a band
/// probe) against brute force of the rule: entries at distance exactly the
/// band bound and one more, sharing one band or none, identical
/// fingerprints whose documents have different sketches (the first
/// document's sketch names the bands), and removals that change which
/// document is first.
#[test]
fn band_probe_property() {
    use simdb::fingerprint::{Sketch, SKETCH_BYTES};
    use simdb::index::bands::{band_values, brute_force_banded, BandProbe, BANDS};
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        any::<u64>(),
        any::<[u8; SKETCH_BYTES]>(),
        0u32..20,
        proptest::collection::vec(any::<u64>(), 0..120),
        proptest::collection::vec(
            (
                proptest::collection::vec(0u32..64, 0..24),
                0usize..BANDS + 1,
                any::<u64>(),
            ),
            0..60,
        ),
        proptest::collection::vec(0usize..200, 0..20),
        0usize..24,
    );
    runner
        .run(
            &strategy,
            |(base, qsketch, bound, randoms, near, removals, cap)| {
                let q = Fingerprint(base);
                let qs = Sketch(qsketch);
                // A sketch sharing band `share` with the query's (BANDS: none),
                // the other bytes from `salt`.
                let sketch_for = |share: usize, salt: u64| {
                    let mut s = [0u8; SKETCH_BYTES];
                    let mut x = salt;
                    for (i, b) in s.iter_mut().enumerate() {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        *b = (x >> 56) as u8;
                        if i / 2 == share {
                            *b = qsketch[i];
                        } else if qsketch[i] == *b && i % 2 == 0 {
                            // Make sure no other band matches by chance.
                            *b ^= 1;
                        }
                    }
                    Sketch(s)
                };
                let mut idx = MemIndex::new();
                let mut entries: BTreeMap<String, (Fingerprint, Option<Sketch>)> = BTreeMap::new();
                for (i, r) in randoms.iter().enumerate() {
                    entries.insert(
                        format!("r{i:03}"),
                        (Fingerprint(*r), Some(sketch_for(BANDS, *r))),
                    );
                }
                for (i, (f, share, salt)) in near.iter().enumerate() {
                    let fp = flip(q, f);
                    entries.insert(format!("n{i:03}"), (fp, Some(sketch_for(*share, *salt))));
                    // The same fingerprint, another text: sharing no band, and
                    // first or second by id.
                    if salt % 3 == 0 {
                        entries.insert(format!("m{i:03}"), (fp, Some(sketch_for(BANDS, *salt))));
                    }
                    if salt % 5 == 0 {
                        entries.insert(format!("a{i:03}"), (fp, None));
                    }
                }
                for (id, (fp, s)) in &entries {
                    idx.insert_sketched(id, *fp, *s);
                }
                let ids: Vec<String> = entries.keys().cloned().collect();
                for r in removals {
                    if let Some(id) = ids.get(r) {
                        if entries.remove(id).is_some() {
                            prop_assert!(idx.remove(id).is_some());
                        }
                    }
                }
                // The oracle's first-document rule, computed from the entries.
                let bands_of = |fp: Fingerprint| {
                    entries
                        .iter()
                        .find(|(_, (f, _))| *f == fp)
                        .and_then(|(_, (_, s))| s.as_ref().map(band_values))
                };
                // The cap on band-only fingerprints: binding or not.
                let probe = BandProbe {
                    max_candidates: cap,
                    ..BandProbe::new(&qs, bound)
                };
                let weak: Vec<u8> = near
                    .iter()
                    .flat_map(|n| n.0.iter())
                    .map(|&b| b as u8)
                    .collect();
                for plan in [ProbePlan::exact(q, 0), ProbePlan::ranked(q, 0, &weak, 32)] {
                    let want = brute_force_banded(
                        entries.iter().map(|(i, (f, _))| (i.as_str(), *f)),
                        bands_of,
                        q,
                        &plan,
                        &probe,
                    );
                    prop_assert_eq!(idx.query_banded(q, &plan, Some(&probe)), want);
                    // Without the probe: the plan alone, as before.
                    let alone = brute_force_plan(
                        entries.iter().map(|(i, (f, _))| (i.as_str(), *f)),
                        q,
                        &plan,
                    );
                    prop_assert_eq!(idx.query_banded(q, &plan, None), alone);
                }
                Ok(())
            },
        )
        .unwrap();
}

/// The in-memory index with a part probe (and a band probe) equals
/// `parts::brute_force_parted`: parts drawn from a small universe, so that
/// buckets fill to the cap and past it; identical fingerprints whose first
/// document has other parts or none; removals that change the first
/// document; plans that accept nothing and plans that accept some.
#[test]
fn part_probe_property() {
    use simdb::fingerprint::{Sketch, SKETCH_BYTES};
    use simdb::index::bands::{band_values, BandProbe};
    use simdb::index::parts::{brute_force_parted, PartProbe};
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[9; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        any::<u64>(),
        any::<[u8; SKETCH_BYTES]>(),
        proptest::collection::vec(
            (
                proptest::collection::vec(0u32..64, 0..40),
                proptest::collection::vec(0u64..24, 0..7),
                0u8..8,
            ),
            0..80,
        ),
        proptest::collection::vec(0usize..120, 0..25),
        proptest::collection::vec(0u64..24, 0..13),
        0usize..12,
    );
    runner
        .run(&strategy, |(base, qsketch, docs, removals, qparts, cap)| {
            let q = Fingerprint(base);
            let mut idx = MemIndex::new();
            type Entry = (Fingerprint, Option<Sketch>, Vec<u64>);
            let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
            for (i, (bits, parts, kind)) in docs.iter().enumerate() {
                let kind = *kind;
                let fp = flip(q, bits);
                let mut parts = parts.clone();
                parts.sort_unstable();
                parts.dedup();
                // Some share a band with the query; some share an
                // earlier document's fingerprint (other parts, or none,
                // first or second by id); some have no parts.
                let sketch = (kind % 2 == 0).then(|| {
                    let mut s = [0u8; SKETCH_BYTES];
                    s[0] = qsketch[0];
                    s[1] = qsketch[1];
                    s[2] = qsketch[2] ^ u8::from(kind % 4 == 0);
                    Sketch(s)
                });
                let fp = match (kind, i.checked_sub(1)) {
                    (3 | 5, Some(j)) => flip(q, &docs[j].0),
                    _ => fp,
                };
                let parts = if kind == 7 { Vec::new() } else { parts };
                let id = if kind == 5 {
                    format!("a{i:03}")
                } else {
                    format!("d{i:03}")
                };
                entries.insert(id, (fp, sketch, parts));
            }
            for (id, (fp, s, p)) in &entries {
                idx.insert_parted(id, *fp, *s, p);
            }
            let ids: Vec<String> = entries.keys().cloned().collect();
            for r in removals {
                if let Some(id) = ids.get(r) {
                    if entries.remove(id).is_some() {
                        prop_assert!(idx.remove(id).is_some());
                    }
                }
            }
            // The oracle's first-document rule, from the entries.
            let first = |fp: Fingerprint| entries.values().find(|(f, _, _)| *f == fp);
            let bands_of = |fp| first(fp).and_then(|e| e.1.as_ref().map(band_values));
            let parts_of = |fp| first(fp).map(|e| e.2.clone()).unwrap_or_default();
            for (fp, _, _) in entries.values() {
                prop_assert_eq!(idx.part_hashes(*fp).to_vec(), parts_of(*fp));
            }
            let mut qparts = qparts;
            qparts.sort_unstable();
            qparts.dedup();
            let probe = PartProbe {
                parts: qparts,
                max_fingerprints: cap,
            };
            let bands = BandProbe::new(&Sketch(qsketch), 14);
            let weak: Vec<u8> = (0..64).collect();
            for plan in [ProbePlan::exact(q, 0), ProbePlan::ranked(q, 0, &weak, 32)] {
                for band in [None, Some(&bands)] {
                    let want = brute_force_parted(
                        entries.iter().map(|(i, e)| (i.as_str(), e.0)),
                        bands_of,
                        parts_of,
                        q,
                        &plan,
                        band,
                        &probe,
                    );
                    prop_assert_eq!(idx.query_parted(q, &plan, band, Some(&probe)), want);
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Band probes at distance exactly the bound and one more, and identical
/// fingerprints whose first document changes (planted, not random).
#[test]
fn band_probe_bound_and_first_document() {
    use simdb::fingerprint::Sketch;
    use simdb::index::bands::{BandProbe, BANDS};
    let mut rng = common::rng(11);
    let q = Fingerprint(rng.random());
    let qs = Sketch(rng.random());
    let mut other = qs;
    for b in other.0.iter_mut() {
        *b = !*b;
    }
    // Shares only band 5 with the query.
    let mut one = other;
    one.0[10] = qs.0[10];
    one.0[11] = qs.0[11];
    let probe = BandProbe::new(&qs, 14);
    let mut idx = MemIndex::new();
    let at = |d: usize, spread| flip(q, &bits(&mut common::rng(d as u64), d, spread));
    let (d14, d15) = (at(14, true), at(15, false));
    idx.insert_sketched("at-bound", d14, Some(one));
    idx.insert_sketched("past-bound", d15, Some(one));
    idx.insert_sketched("no-band", at(6, true), Some(other));
    let found = |idx: &MemIndex| -> Vec<String> {
        idx.query_banded(q, &ProbePlan::exact(q, 3), Some(&probe))
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    assert_eq!(found(&idx), ["at-bound"]);
    // A document with the same fingerprint and no shared band, first by id:
    // the fingerprint leaves the band; deleting it brings it back.
    idx.insert_sketched("a-first", d14, Some(other));
    assert!(found(&idx).is_empty());
    idx.remove("a-first");
    assert_eq!(found(&idx), ["at-bound"]);
    // Second by id: the first still names the bands; both documents are
    // candidates (each is then checked by its own sketch).
    idx.insert_sketched("z-second", d14, Some(other));
    assert_eq!(found(&idx), ["at-bound", "z-second"]);
    idx.remove("at-bound");
    assert!(found(&idx).is_empty(), "z-second names no shared band");
    assert_eq!(BANDS, 16);
    // The last document with a sketch leaves; one without a sketch is
    // first now, so the fingerprint is in no band.
    let mut idx = MemIndex::new();
    idx.insert_sketched("a", d14, Some(one));
    idx.insert("b", d14);
    assert_eq!(found(&idx), ["a", "b"]);
    idx.remove("a");
    assert!(found(&idx).is_empty() && idx.band_values(d14).is_none());
}

/// Every pair of documents within k, by brute force: (a, b, distance), a < b.
fn brute_force_doc_pairs(
    entries: &BTreeMap<String, Fingerprint>,
    k: u32,
) -> Vec<(String, String, u32)> {
    let v: Vec<(&String, &Fingerprint)> = entries.iter().collect();
    let mut out = Vec::new();
    for (n, (a, fa)) in v.iter().enumerate() {
        for (b, fb) in &v[n + 1..] {
            let d = fa.distance(**fb);
            if d <= k {
                out.push(((*a).clone(), (*b).clone(), d));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn pairs_match_brute_force() {
    let t = common::TempDb::new();
    // Planted neighbours at every distance 1..=13 (spread and packed),
    // identical fingerprints under different ids, random others.
    let p = plant(9, 1500, 6);
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    {
        let mut w = db.writer().unwrap();
        for (id, fp) in &p.entries {
            w.put(id, *fp, &Content::Text(id.to_string()), "test")
                .unwrap();
        }
        // Deleted documents leave no pair behind.
        w.commit().unwrap();
        w.delete("q0-d1-spread-0").unwrap();
        w.commit().unwrap();
    }
    let mut entries = p.entries.clone();
    entries.remove("q0-d1-spread-0");
    for k in [0, 1, 2, 3, 4, 5, 7, 8, 11] {
        let mut got = Vec::new();
        let rep = db
            .clusters()
            .pairs(k, 0.0, |pair| {
                assert!(pair.a < pair.b);
                got.push((pair.a.clone(), pair.b.clone(), pair.distance));
                Ok(())
            })
            .unwrap();
        let n = got.len();
        got.sort();
        got.dedup();
        assert_eq!(got.len(), n, "k={k}: a pair reported twice");
        assert_eq!(got, brute_force_doc_pairs(&entries, k), "k={k}");
        assert_eq!(rep.pairs, n as u64);
        // Fingerprints without texts' sketches: every pair is unconfirmed.
        assert_eq!(rep.unconfirmed, n as u64);
        assert!(n > 0);
        // Grouped (`simdb pairs`' default): each group of copies once, its
        // first id standing for it in pairs; expanded, the same pairs.
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut grouped = Vec::new();
        let rep = db
            .clusters()
            .pairs_with(k, 0.0, Copies::Grouped, |item| {
                match item {
                    PairsItem::Copies(g) => {
                        assert_eq!(g.distance, 0);
                        assert!(g.copies.windows(2).all(|w| w[0] < w[1]));
                        // Before any pair naming it.
                        assert!(grouped
                            .iter()
                            .all(|(a, b, _)| *a != g.copies[0] && *b != g.copies[0]));
                        groups.insert(g.copies[0].clone(), g.copies.clone());
                    }
                    PairsItem::Pair(p) => grouped.push((p.a.clone(), p.b.clone(), p.distance)),
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(rep.copy_groups, groups.len() as u64);
        assert!(!groups.is_empty());
        let members = |id: &String| groups.get(id).cloned().unwrap_or_else(|| vec![id.clone()]);
        let mut expanded = Vec::new();
        for g in groups.values() {
            for (i, a) in g.iter().enumerate() {
                for b in &g[i + 1..] {
                    expanded.push((a.clone(), b.clone(), 0));
                }
            }
        }
        for (a, b, d) in &grouped {
            for x in members(a) {
                for y in members(b) {
                    let (x, y) = if x < y { (&x, &y) } else { (&y, &x) };
                    expanded.push((x.clone(), y.clone(), *d));
                }
            }
        }
        expanded.sort();
        assert_eq!(expanded, got, "k={k}: grouped, expanded");
        assert!(grouped.len() < got.len(), "k={k}");
    }
}

/// A group of copies in `simdb pairs` is what the store cannot tell apart,
/// as its clusters see it: the fingerprint, the sketch and the length (the
/// containment rule weighs the length, and a longer text takes a cluster
/// over under `longest`). Two texts of one fingerprint and different
/// lengths are a pair, not a group.
#[test]
fn pairs_group_only_copies_of_one_length() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let fp = Fingerprint(0x0123_4567_89ab_cdef);
    {
        let mut w = db.writer().unwrap();
        for (id, text) in [
            ("a1", "xxxx"),
            ("a2", "yyyy"),
            ("b1", "xxxxxxxx"),
            ("b2", "zzzzzzzz"),
        ] {
            w.put(id, fp, &Content::Text(text.to_string()), "test")
                .unwrap();
        }
        w.commit().unwrap();
    }
    let mut groups = Vec::new();
    let mut pairs = Vec::new();
    db.clusters()
        .pairs_with(3, 0.0, Copies::Grouped, |item| {
            match item {
                PairsItem::Copies(g) => groups.push(g.copies.clone()),
                PairsItem::Pair(p) => pairs.push((p.a.clone(), p.b.clone(), p.distance)),
            }
            Ok(())
        })
        .unwrap();
    groups.sort();
    assert_eq!(groups, vec![vec!["a1", "a2"], vec!["b1", "b2"]]);
    assert_eq!(pairs, vec![("a1".to_string(), "b1".to_string(), 0)]);
}

/// The frozen index (`simdb freeze`) changes no answer: queries read the
/// buckets no write has touched since from it and the others from
/// RocksDB. Planted neighbours at every distance are written after a
/// freeze, some planted ones deleted or replaced, and every query still
/// equals brute force: at once, after reopening (the changed buckets are
/// remembered in the store), read-only, and after a second freeze.
#[test]
fn frozen_index_answers_as_brute_force_through_writes_after_it() {
    let t = common::TempDb::new();
    let all = plant(4, 3000, 10);
    let mut current = Planted {
        entries: BTreeMap::new(),
        queries: all.queries.clone(),
    };
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let write = |db: &mut Db, entries: &[(&String, &Fingerprint)]| {
        let mut w = db.writer().unwrap();
        for (id, fp) in entries {
            w.put(id, **fp, &Content::Text(id.to_string()), "t")
                .unwrap();
        }
        w.commit().unwrap();
    };
    // Half before the freeze: the random ones and the even queries' plants.
    let (before, after): (Vec<_>, Vec<_>) = all.entries.iter().partition(|(id, _)| {
        id.starts_with("rand-") && id.as_str() < "rand-002000"
            || id.starts_with('q') && id[1..2].parse::<u32>().is_ok_and(|q| q % 2 == 0)
    });
    write(&mut db, &before);
    current
        .entries
        .extend(before.iter().map(|(i, f)| ((*i).clone(), **f)));
    let r = db.maintenance().freeze().unwrap();
    assert_eq!(r.generation, 1);
    let clean = |db: &Db| {
        let f = db.admin().stats().unwrap().frozen.expect("a frozen index");
        (f.clean_buckets, f.buckets)
    };
    assert_eq!(clean(&db).0, clean(&db).1);
    check_db(&db, &current, "frozen");
    // The rest after it, then deletes and replacements of planted ones.
    write(&mut db, &after);
    current
        .entries
        .extend(after.iter().map(|(i, f)| ((*i).clone(), **f)));
    let gone: Vec<String> = current
        .entries
        .keys()
        .filter(|id| id.contains("-d2-") || id.ends_with("same-a"))
        .cloned()
        .collect();
    assert_eq!(db.delete(&gone).unwrap(), gone.len());
    for id in &gone {
        current.entries.remove(id);
    }
    let moved: Vec<(String, Fingerprint)> = current
        .entries
        .iter()
        .filter(|(id, _)| id.contains("-d3-"))
        .map(|(id, fp)| (id.clone(), flip(*fp, &[5, 40])))
        .collect();
    let moved_refs: Vec<(&String, &Fingerprint)> = moved.iter().map(|(i, f)| (i, f)).collect();
    write(&mut db, &moved_refs);
    current.entries.extend(moved.iter().cloned());
    let (c, n) = clean(&db);
    assert!(0 < c && c < n, "{c} of {n} buckets clean");
    check_db(&db, &current, "written after the freeze");
    drop(db);
    let db = Db::options().open(t.path()).unwrap();
    assert_eq!(clean(&db).0, c, "the changed buckets are remembered");
    check_db(&db, &current, "reopened");
    let report = db.admin().verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    drop(db);
    check_db(
        &Db::options().read_only().open(t.path()).unwrap(),
        &current,
        "read-only",
    );
    let mut db = Db::options().open(t.path()).unwrap();
    assert_eq!(db.maintenance().freeze().unwrap().generation, 2);
    check_db(&db, &current, "frozen again");
    assert!(db.admin().verify().unwrap().is_clean());
}

/// A freeze while writes go on (the service's `POST /freeze`): the file
/// is written from a snapshot and the buckets written meanwhile are
/// marked when it is committed, so every answer still equals brute force,
/// after the freeze, after reopening, and `verify` finds the file equal
/// to the store in every bucket it does not mark.
#[test]
fn a_freeze_while_writes_go_on_changes_no_answer() {
    let t = common::TempDb::new();
    let all = plant(5, 3000, 8);
    let entries: Vec<(&String, &Fingerprint)> = all.entries.iter().collect();
    let (first, rest) = entries.split_at(entries.len() / 3);
    let db = Db::options().create(t.path(), Recipe::default()).unwrap();
    {
        let mut w = db.shared_writer().unwrap();
        for (id, fp) in first {
            w.put(id, **fp, &Content::Text(id.to_string()), "t")
                .unwrap();
        }
        w.commit().unwrap();
    }
    db.admin().freeze().unwrap();
    let generations = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            // Small batches, so that many commit during the freezes.
            for chunk in rest.chunks(20) {
                let mut w = db.shared_writer().unwrap();
                for (id, fp) in chunk {
                    w.put(id, **fp, &Content::Text(id.to_string()), "t")
                        .unwrap();
                }
                w.commit().unwrap();
            }
        });
        let mut generations = Vec::new();
        while !writer.is_finished() {
            generations.push(db.admin().freeze().unwrap().generation);
        }
        writer.join().unwrap();
        generations
    });
    assert!(!generations.is_empty());
    check_db(&db, &all, "frozen while written");
    let report = db.admin().verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    drop(db);
    let db = Db::options().open(t.path()).unwrap();
    check_db(&db, &all, "reopened");
    assert!(db.admin().verify().unwrap().is_clean());
}
