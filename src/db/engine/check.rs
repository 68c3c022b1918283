//! The engines' duplicate check, on their workers (issue 59): a join of
//! each document's probe keys with the index keys of the documents before
//! it gathers what the store's index would show its check, and the one
//! search runs over them in memory ([`Checker`]).
//!
//! The join, in four stages, each a function here that a worker runs on
//! its share (the engines shuffle between them):
//!
//! 1. by fingerprint: [`fingerprint_entries`], the index entries of one
//!    fingerprint's documents over the run (its blocks from its first
//!    document on; its bands and parts, those of its first document by
//!    id, as that changes);
//! 2. by key: [`key_matches`], each probe of a key ([`Checker::probes`])
//!    with the entries it would read in that bucket when its document is
//!    written, by the check's rule for the family; and the part buckets
//!    that name none then (boilerplate);
//! 3. by fingerprint again: [`Checker::fingerprint_docs`], each matched
//!    fingerprint's earlier documents, as many as the check can look at;
//! 4. by document: [`Checker::check`] over what stage 3 sent it.
//!
//! Nothing here reads the run's store: a run with no store (and no file
//! system its workers share) checks as a store would.

use std::collections::HashMap;
use std::path::Path;

use super::{scratch_recipe, scratch_tuning};
use crate::db::limits::{CHECK_CONFIRMED, CHECK_EXAMINED};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Recipe};
use crate::index::Hit;
use crate::index::{parts::PartProbe, ScanRule};
use crate::store::Record;

/// The store's duplicate check on an engine's worker, with no store of
/// the run: a document checked against the earlier documents that a join
/// gathered for it (those that share one of its keys: its fingerprint's
/// blocks, its plan's, its bands, its parts). The answer is what a write
/// of the document finds in a store that holds exactly those earlier
/// documents, under ingest's rule (the rule of a write's check: nearest
/// first, then by id; at most
/// [`limits::CHECK_CONFIRMED`](crate::db::limits::CHECK_CONFIRMED) confirmed
/// and [`limits::CHECK_EXAMINED`](crate::db::limits::CHECK_EXAMINED) looked
/// at), bounds reached included: the same search runs, over an index of
/// the given documents in memory.
///
/// Documents given that are not before the one checked (an ord not below
/// its own, its own id) are left out, so a join may send more than it
/// needs; it must send every earlier document that shares a key, and for
/// each fingerprint it sends, every earlier document of that fingerprint
/// (the first of them, by id, names the fingerprint's band and part
/// buckets, as in the store).
pub struct Checker {
    // Closed before its directory goes (fields drop in order).
    db: Db,
    _dir: OwnedScratch,
}

/// Removes a directory when dropped (owned: a [`Checker`]'s).
struct OwnedScratch(std::path::PathBuf);

impl Drop for OwnedScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Checker {
    /// A checker for a run made under `recipe` (its sketch names the
    /// threshold), with an empty scratch store at `scratch` (a new path,
    /// removed when the checker is dropped).
    pub fn new(scratch: &Path, recipe: &Recipe) -> Result<Checker> {
        if scratch.exists() {
            return Err(Error::Input(format!(
                "check: the scratch directory {} exists; give a new path",
                scratch.display()
            )));
        }
        let dir = OwnedScratch(scratch.to_path_buf());
        let db = Db::options()
            .tuning(scratch_tuning())
            .create(scratch, scratch_recipe(recipe))?;
        Ok(Checker { db, _dir: dir })
    }

    /// What ingest's duplicate check finds for document `id` (its record
    /// `rec`, as the run's store holds it) among `earlier` (see the type).
    /// `boilerplate` are parts of its probe whose buckets held more than a
    /// probe names when it was written ([`key_matches`]): they are not
    /// read, whatever `earlier` holds of them.
    pub fn check(
        &self,
        id: &str,
        rec: &Record,
        earlier: &[(String, Record)],
        boilerplate: &[u64],
    ) -> Result<crate::db::write::Duplicates> {
        use crate::db::search::{Pending, Reads, Rule, Searcher};
        let mut overlay: HashMap<String, Option<Record>> = HashMap::with_capacity(earlier.len());
        let mut mem = crate::index::MemIndex::new();
        for (eid, e) in earlier {
            if e.ord >= rec.ord || eid == id || overlay.contains_key(eid) {
                continue;
            }
            mem.insert_parted(eid, e.fingerprint, e.sketch, indexed_parts(e));
            overlay.insert(eid.clone(), Some(e.clone()));
        }
        let at = self.db.store.snapshot();
        let searcher = Searcher {
            store: &self.db.store,
            at: &at,
            prefetch: None,
            pending: Some(Pending {
                overlay: &overlay,
                mem: &mem,
            }),
            // The scratch store is empty: every earlier document is in
            // the overlay.
            reads: Reads::Overlay,
            before: None,
        };
        let mut q = self.db.record_query(id, rec);
        q.parts.retain(|p| !boilerplate.contains(p));
        let rule = Rule::duplicates(CHECK_CONFIRMED);
        let c = searcher.run(&q, rule, &mut |_| Ok(true))?;
        Ok(crate::db::write::Duplicates {
            hits: c.hits,
            complete: c.complete,
        })
    }

    /// What document `id` (its record `rec`) probes in its duplicate
    /// check, key by key: its plan's block values, its probed band values
    /// and its parts, each with the rule its check applies to the
    /// fingerprints of that bucket (the plan's; the band probe's distance;
    /// any, for a part). Every earlier document the check can look at
    /// shares one of these keys with the document, or is of a fingerprint
    /// whose entry does ([`fingerprint_entries`]).
    pub fn probes(&self, id: &str, rec: &Record) -> Vec<KeyProbe> {
        let q = self.db.record_query(id, rec);
        let fp = rec.fingerprint;
        let ord = rec.ord;
        let mut out: Vec<KeyProbe> = Vec::new();
        let plan = q.plan();
        let rule = plan.rule(fp);
        for (family, values) in (0..).zip(&plan.blocks) {
            out.extend(values.iter().map(|&v| KeyProbe {
                key: JoinKey {
                    family,
                    value: u64::from(v),
                },
                ord,
                rule,
            }));
        }
        if let Some(p) = q.band_probe() {
            let rule = ScanRule {
                q: fp.0,
                k: p.max_distance,
                outside: 0,
                ranked: false,
            };
            out.extend(p.probed().map(|(j, v)| KeyProbe {
                key: JoinKey {
                    family: JoinKey::BANDS + j as u8,
                    value: u64::from(v),
                },
                ord,
                rule,
            }));
        }
        if let Some(p) = q.part_probe() {
            let rule = ScanRule {
                q: fp.0,
                k: 64,
                outside: 0,
                ranked: false,
            };
            out.extend(p.parts.iter().map(|&value| KeyProbe {
                key: JoinKey {
                    family: JoinKey::PARTS,
                    value,
                },
                ord,
                rule,
            }));
        }
        out.sort_unstable_by_key(|p| p.key);
        out.dedup_by_key(|p| p.key);
        out
    }

    /// Stage 3 of the join, for one fingerprint: `docs` are all of its
    /// documents (any order), `probes` the documents whose checks matched
    /// it ([`key_matches`]: their ids and records). For each probe, the
    /// fingerprint's documents before it in the order its check looks at
    /// them (by id), up to the one that makes
    /// [`CHECK_CONFIRMED`] confirmed, at most [`CHECK_EXAMINED`]: no
    /// check looks further. A probe given twice (matched by several
    /// keys) is taken once. Returns (the probe's ord, a document).
    pub fn fingerprint_docs(
        &self,
        docs: &[(String, Record)],
        probes: &[(String, Record)],
    ) -> Result<Vec<(u64, String, Record)>> {
        let mut by_id: Vec<&(String, Record)> = docs.iter().collect();
        by_id.sort_by(|a, b| a.0.cmp(&b.0));
        by_id.dedup_by(|a, b| a.0 == b.0);
        let mut probes: Vec<&(String, Record)> = probes.iter().collect();
        probes.sort_by_key(|p| p.1.ord);
        probes.dedup_by_key(|p| p.1.ord);
        let mut out = Vec::new();
        for (pid, p) in probes {
            let q = self.db.record_query(pid, p);
            let (mut taken, mut confirmed) = (0, 0);
            for (id, d) in &by_id {
                if d.ord >= p.ord || id == pid {
                    continue;
                }
                if taken >= CHECK_EXAMINED || confirmed >= CHECK_CONFIRMED {
                    break;
                }
                taken += 1;
                let mut h = Hit {
                    id: id.clone(),
                    fingerprint: d.fingerprint,
                    distance: d.fingerprint.distance(p.fingerprint),
                    similarity: q.sketch.zip(d.sketch).map(|(a, b)| a.similarity(&b)),
                    containment: None,
                };
                if q.confirm(&mut h, |_| Ok(crate::db::Candidate::of(d)))? {
                    confirmed += 1;
                }
                out.push((p.ord, id.clone(), d.clone()));
            }
        }
        Ok(out)
    }
}
/// A key of the engines' join (see [`Checker`]): one bucket of the
/// store's index. `family` 0..4 are the block families (`value`: a 16-bit
/// block), [`JoinKey::BANDS`].. the band families (a 16-bit band value),
/// [`JoinKey::PARTS`] the part buckets (a 64-bit part hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JoinKey {
    pub family: u8,
    pub value: u64,
}

impl JoinKey {
    /// The first band family's number.
    pub const BANDS: u8 = crate::fingerprint::BLOCKS as u8;
    /// The part buckets' family number.
    pub const PARTS: u8 = Self::BANDS + crate::index::bands::BANDS as u8;
}

/// The parts under which the store's index holds a record: the first
/// [`PARTS`](crate::fingerprint::parts::PARTS) of those it keeps (a
/// record keeps a query's, more).
fn indexed_parts(rec: &Record) -> &[u64] {
    &rec.parts[..rec.parts.len().min(crate::fingerprint::parts::PARTS)]
}

/// The keys under which the store's index holds a document (`rec`): its
/// fingerprint's blocks, its sketch's band values (those a probe reads:
/// not the uniform ones) and its parts. A join sends a document to each
/// document that probes one of them ([`Checker::probes`]).
pub fn index_keys(rec: &Record) -> Vec<JoinKey> {
    use crate::index::bands;
    let mut out: Vec<JoinKey> = (0..)
        .zip(rec.fingerprint.blocks())
        .map(|(family, b)| JoinKey {
            family,
            value: u64::from(b),
        })
        .collect();
    if let Some(s) = &rec.sketch {
        for (j, v) in (0..).zip(bands::band_values(s)) {
            if !bands::is_uniform(v) {
                out.push(JoinKey {
                    family: JoinKey::BANDS + j,
                    value: u64::from(v),
                });
            }
        }
    }
    out.extend(indexed_parts(rec).iter().map(|&value| JoinKey {
        family: JoinKey::PARTS,
        value,
    }));
    out.sort_unstable();
    out.dedup();
    out
}

/// One entry of the index as the join sees it: fingerprint `fp` is in
/// bucket `key` for the checks of the documents whose ord is above
/// `after`, up to `until` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IndexEntry {
    pub key: JoinKey,
    pub fp: Fingerprint,
    pub after: u64,
    pub until: u64,
}

impl IndexEntry {
    /// Whether the check of the document of ord `ord` reads this entry.
    pub fn visible(&self, ord: u64) -> bool {
        self.after < ord && ord <= self.until
    }
}

/// A document's probe of one key in its check: its ord, and the rule it
/// applies to the fingerprints it finds there ([`Checker::probes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyProbe {
    pub key: JoinKey,
    pub ord: u64,
    pub rule: ScanRule,
}

/// Stage 1 of the join, for one fingerprint: the index entries of its
/// documents `docs` (all of them, any order, one fingerprint). Its block
/// entries exist from its first document (by ord) on; its band and part
/// entries are those of its first document by id among the documents
/// written so far, so they change when a document of a smaller id comes
/// (see [`crate::index::bands`]: a flood of copies adds none).
pub fn fingerprint_entries(docs: &[(String, Record)]) -> Result<Vec<IndexEntry>> {
    let mut by_ord: Vec<&(String, Record)> = docs.iter().collect();
    by_ord.sort_by_key(|d| d.1.ord);
    let Some(first) = by_ord.first() else {
        return Ok(Vec::new());
    };
    let fp = first.1.fingerprint;
    if let Some(d) = by_ord.iter().find(|d| d.1.fingerprint != fp) {
        return Err(Error::Input(format!(
            "check: {:?} and {:?} are given as one fingerprint's documents",
            first.0, d.0
        )));
    }
    let mut out: Vec<IndexEntry> = (0..)
        .zip(fp.blocks())
        .map(|(family, b)| IndexEntry {
            key: JoinKey {
                family,
                value: u64::from(b),
            },
            fp,
            after: first.1.ord,
            until: u64::MAX,
        })
        .collect();
    // The epochs of the first document by id: (from the ord of, the
    // document).
    let mut epochs: Vec<(u64, &Record)> = Vec::new();
    let mut least: Option<&str> = None;
    for (id, rec) in &by_ord {
        if least.is_none_or(|l| id.as_str() < l) {
            least = Some(id);
            epochs.push((rec.ord, rec));
        }
    }
    for (i, (after, rec)) in epochs.iter().enumerate() {
        let until = epochs.get(i + 1).map_or(u64::MAX, |e| e.0);
        out.extend(
            index_keys(rec)
                .into_iter()
                .filter(|k| k.family >= JoinKey::BANDS)
                .map(|key| IndexEntry {
                    key,
                    fp,
                    after: *after,
                    until,
                }),
        );
    }
    Ok(out)
}

/// What stage 2 of the join found: for each probe, the fingerprints of
/// its buckets that its check reads (`(ord, fingerprint)`, a fingerprint
/// once per ord), and the parts whose buckets name none (`(ord, part)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyMatches {
    pub matched: Vec<(u64, Fingerprint)>,
    pub boilerplate: Vec<(u64, u64)>,
}

/// Stage 2 of the join, for any set of keys: `entries` and `probes` of
/// those keys (stage 1's and [`Checker::probes`]'s, each key's all of
/// them). Each probe matches the fingerprints visible to it in its
/// bucket that its rule accepts; in a part bucket that then holds more
/// fingerprints than a probe names, none (the part is boilerplate).
///
/// Each bucket's entries are kept in the order they come in (`after`),
/// so a probe reads the prefix of those before it, scanned as the store
/// scans a posting ([`ScanRule::scan`]); a part bucket's count at a
/// probe's time is two binary searches, so a flood of probes of a
/// boilerplate part costs no more than its probes. The probes are taken
/// in the order given (no sort of the many). Entries given twice are
/// taken once; a fingerprint given twice in one bucket over overlapping
/// ords (stage 1 never makes one) is refused.
pub fn key_matches(entries: &[IndexEntry], probes: &[KeyProbe]) -> Result<KeyMatches> {
    let held = Held::of(entries)?;
    let mut out = KeyMatches::default();
    let mut found = Vec::new();
    for p in probes {
        held.probe(p, &mut found, &mut out);
    }
    out.matched.sort_unstable();
    out.matched.dedup();
    out.boilerplate.sort_unstable();
    out.boilerplate.dedup();
    Ok(out)
}

/// The entries of [`key_matches`], bucket by bucket: in each, those open
/// to every later probe (`until` the end) first, then the others (an
/// epoch of a band or part bucket that a smaller id ended), each by
/// `after`; their fingerprints as one posting of big-endian entries.
struct Held {
    buckets: rustc_hash::FxHashMap<JoinKey, Range>,
    afters: Vec<u64>,
    /// Sorted within each bucket (for the count of a part bucket).
    untils: Vec<u64>,
    fps: Vec<u8>,
    entries: Vec<IndexEntry>,
}

/// One bucket's entries in [`Held`]: `start..open` the open ones,
/// `open..end` the others.
#[derive(Clone, Copy)]
struct Range {
    start: usize,
    open: usize,
    end: usize,
}

impl Held {
    fn of(entries: &[IndexEntry]) -> Result<Held> {
        let mut held = entries.to_vec();
        held.sort_unstable_by_key(|e| (e.key, e.fp, e.after, e.until));
        held.dedup();
        if let Some(w) = held
            .windows(2)
            .find(|w| w[0].key == w[1].key && w[0].fp == w[1].fp && w[0].until > w[1].after)
        {
            return Err(Error::Input(format!(
                "check: fingerprint {:016x} is given twice in bucket {:?} over overlapping \
                 ords ({}..={} and {}..={})",
                w[0].fp.0, w[0].key, w[0].after, w[0].until, w[1].after, w[1].until
            )));
        }
        held.sort_unstable_by_key(|e| (e.key, e.until != u64::MAX, e.after));
        let mut buckets = rustc_hash::FxHashMap::default();
        let mut untils: Vec<u64> = held.iter().map(|e| e.until).collect();
        let mut start = 0;
        while start < held.len() {
            let key = held[start].key;
            let end = start + held[start..].partition_point(|e| e.key == key);
            let open = start + held[start..end].partition_point(|e| e.until == u64::MAX);
            untils[start..end].sort_unstable();
            buckets.insert(key, Range { start, open, end });
            start = end;
        }
        Ok(Held {
            buckets,
            afters: held.iter().map(|e| e.after).collect(),
            untils,
            fps: held.iter().flat_map(|e| e.fp.0.to_be_bytes()).collect(),
            entries: held,
        })
    }

    /// Adds what probe `p` reads to `out` (`found`: a buffer).
    fn probe(&self, p: &KeyProbe, found: &mut Vec<Fingerprint>, out: &mut KeyMatches) {
        let Some(&Range { start, open, end }) = self.buckets.get(&p.key) else {
            return;
        };
        let ord = p.ord;
        let before = |r: std::ops::Range<usize>| self.afters[r].partition_point(|&a| a < ord);
        let (open_n, closed_n) = (before(start..open), before(open..end));
        let part = p.key.family == JoinKey::PARTS;
        if part {
            // Visible: came in before `ord` and not gone before it (an
            // entry gone before `ord` came in before it too).
            let gone = self.untils[start..end].partition_point(|&u| u < ord);
            if !PartProbe::new(Vec::new()).names(open_n + closed_n - gone) {
                out.boilerplate.push((ord, p.key.value));
                return;
            }
        }
        found.clear();
        let posting = &self.fps[start * 8..(start + open_n) * 8];
        if part {
            found.extend(crate::index::posting_fingerprints(posting));
        } else {
            p.rule.scan(posting, found);
        }
        found.extend(
            self.entries[open..open + closed_n]
                .iter()
                .filter(|e| e.visible(ord) && (part || p.rule.accepts(e.fp.0)))
                .map(|e| e.fp),
        );
        out.matched.extend(found.iter().map(|&fp| (ord, fp)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn rec(ord: u64, fp: u64, parts: Vec<u64>) -> Record {
        Record {
            fingerprint: Fingerprint(fp),
            content_hash: fp,
            length: 0,
            ingested_at: 1,
            source: String::new(),
            terms: 0,
            sketch: None,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord,
            priority: None,
            dated: None,
            parts,
            kept: None,
            fine: None,
        }
    }

    #[test]
    fn a_fingerprints_bands_and_parts_follow_its_first_document_by_id() {
        let docs = vec![
            ("m".to_string(), rec(5, 7, vec![50])),
            ("z".to_string(), rec(3, 7, vec![30])),
            ("a".to_string(), rec(9, 7, vec![90])),
            ("b".to_string(), rec(12, 7, vec![120])),
        ];
        let e = fingerprint_entries(&docs).unwrap();
        let parts: Vec<(u64, u64, u64)> = e
            .iter()
            .filter(|e| e.key.family == JoinKey::PARTS)
            .map(|e| (e.key.value, e.after, e.until))
            .collect();
        assert_eq!(parts, vec![(30, 3, 5), (50, 5, 9), (90, 9, u64::MAX)]);
        let blocks: Vec<u64> = e
            .iter()
            .filter(|e| e.key.family < JoinKey::BANDS)
            .map(|e| e.after)
            .collect();
        assert_eq!(blocks, vec![3; 4]);
        assert!(e[0].visible(4) && !e[0].visible(3));
        let mixed = vec![docs[0].clone(), ("x".to_string(), rec(1, 8, Vec::new()))];
        assert!(fingerprint_entries(&mixed).is_err());
    }

    #[test]
    fn a_part_bucket_names_its_fingerprints_up_to_the_cap_at_the_probes_time() {
        let part = JoinKey {
            family: JoinKey::PARTS,
            value: 77,
        };
        // Nine fingerprints come into the bucket at ords 1..=9.
        let entries: Vec<IndexEntry> = (1..=9)
            .map(|i| IndexEntry {
                key: part,
                fp: Fingerprint(i),
                after: i,
                until: u64::MAX,
            })
            .collect();
        let any = ScanRule {
            q: 0,
            k: 64,
            outside: 0,
            ranked: false,
        };
        let probe = |ord| KeyProbe {
            key: part,
            ord,
            rule: any,
        };
        let m = key_matches(&entries, &[probe(9), probe(10)]).unwrap();
        // At ord 9, eight are in (named); at 10, nine (boilerplate).
        assert_eq!(m.matched.len(), 8);
        assert!(m.matched.iter().all(|(o, _)| *o == 9));
        assert_eq!(m.boilerplate, vec![(10, 77)]);
        // A block bucket matches by the probe's rule, any number.
        let block = JoinKey {
            family: 0,
            value: 0,
        };
        let entries: Vec<IndexEntry> = entries
            .iter()
            .map(|e| IndexEntry { key: block, ..*e })
            .collect();
        let near = ScanRule { k: 1, ..any };
        let m = key_matches(
            &entries,
            &[KeyProbe {
                key: block,
                ord: 100,
                rule: near,
            }],
        )
        .unwrap();
        assert_eq!(
            m.matched,
            vec![
                (100, Fingerprint(1)),
                (100, Fingerprint(2)),
                (100, Fingerprint(4)),
                (100, Fingerprint(8))
            ]
        );
    }

    /// [`key_matches`] by its definition, one probe and one entry at a
    /// time (the oracle).
    fn key_matches_brute(entries: &[IndexEntry], probes: &[KeyProbe]) -> KeyMatches {
        let cap = PartProbe::new(Vec::new());
        let mut out = KeyMatches::default();
        for p in probes {
            let visible: Vec<&IndexEntry> = entries
                .iter()
                .filter(|e| e.key == p.key && e.visible(p.ord))
                .collect();
            if p.key.family == JoinKey::PARTS {
                let fps: HashSet<Fingerprint> = visible.iter().map(|e| e.fp).collect();
                if !cap.names(fps.len()) {
                    out.boilerplate.push((p.ord, p.key.value));
                    continue;
                }
                out.matched.extend(fps.into_iter().map(|fp| (p.ord, fp)));
            } else {
                out.matched.extend(
                    visible
                        .iter()
                        .filter(|e| p.rule.accepts(e.fp.0))
                        .map(|e| (p.ord, e.fp)),
                );
            }
        }
        out.matched.sort_unstable();
        out.matched.dedup();
        out.boilerplate.sort_unstable();
        out.boilerplate.dedup();
        out
    }

    /// The families of [`join_of_seed`]'s keys: few keys, so buckets are
    /// full (a block, a band and a part family, a handful of values each).
    const FAMILIES: [u8; 3] = [0, JoinKey::BANDS + 3, JoinKey::PARTS];

    /// Entries and probes of a few full buckets (seeded): a block, a band
    /// and a part family, fingerprints near one another, epochs that end,
    /// entries given twice, probes at the edges of entries.
    fn join_of_seed(seed: u64) -> (Vec<IndexEntry>, Vec<KeyProbe>) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let base: u64 = rng.random();
        let mut entries = Vec::new();
        let mut taken = HashSet::new();
        for f in 0..rng.random_range(1..60u64) {
            // Near one base fingerprint: distances 0 to 6, spread.
            let mut fp = base;
            for _ in 0..rng.random_range(0..4) {
                fp ^= 1 << rng.random_range(0..64);
            }
            if f % 7 == 0 {
                fp = rng.random();
            }
            let fp = Fingerprint(fp);
            for _ in 0..rng.random_range(1..4) {
                // Half in two part buckets: about the cap at a time.
                let key = if rng.random_bool(0.5) {
                    JoinKey {
                        family: JoinKey::PARTS,
                        value: rng.random_range(0..2),
                    }
                } else {
                    JoinKey {
                        family: FAMILIES[rng.random_range(0..3)],
                        value: rng.random_range(0..3),
                    }
                };
                // One fingerprint's epochs in a bucket, from one place.
                if !taken.insert((key, fp)) {
                    continue;
                }
                // Epochs of one fingerprint in a bucket: disjoint.
                let mut at = rng.random_range(0..40u64);
                for _ in 0..rng.random_range(1..3) {
                    let until = if rng.random_bool(0.5) {
                        u64::MAX
                    } else {
                        at + rng.random_range(1..20)
                    };
                    entries.push(IndexEntry {
                        key,
                        fp,
                        after: at,
                        until,
                    });
                    if until == u64::MAX {
                        break;
                    }
                    at = until + rng.random_range(0..5);
                }
            }
        }
        // Some given twice.
        let again: Vec<IndexEntry> = entries.iter().step_by(5).copied().collect();
        entries.extend(again);
        let probes = random_probes(&mut rng, &entries, base);
        (entries, probes)
    }

    /// Probes of [`join_of_seed`]'s buckets, near `base`.
    fn random_probes(
        rng: &mut rand_chacha::ChaCha8Rng,
        entries: &[IndexEntry],
        base: u64,
    ) -> Vec<KeyProbe> {
        use rand::Rng;
        (0..rng.random_range(1..80))
            .map(|_| KeyProbe {
                key: JoinKey {
                    family: FAMILIES[rng.random_range(0..3)],
                    value: rng.random_range(0..4),
                },
                // Often at an entry's edge: the ord it comes in at,
                // or the last it is seen at.
                ord: match rng.random_range(0..3) {
                    0 => rng.random_range(0..80),
                    1 => entries[rng.random_range(0..entries.len())].after,
                    _ => entries[rng.random_range(0..entries.len())].until.min(80),
                },
                rule: ScanRule {
                    q: base ^ (1 << rng.random_range(0..64)),
                    k: rng.random_range(0..5),
                    outside: rng.random(),
                    ranked: rng.random_bool(0.5),
                },
            })
            .collect()
    }

    #[test]
    fn key_matches_equal_a_scan_of_every_entry_for_every_probe() {
        for seed in 0..200u64 {
            let (entries, probes) = join_of_seed(seed);
            assert_eq!(
                key_matches(&entries, &probes).unwrap(),
                key_matches_brute(&entries, &probes),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_fingerprint_twice_in_one_bucket_at_once_is_refused() {
        let e = |after, until| IndexEntry {
            key: JoinKey {
                family: JoinKey::PARTS,
                value: 1,
            },
            fp: Fingerprint(5),
            after,
            until,
        };
        let probe = [KeyProbe {
            key: e(0, 0).key,
            ord: 9,
            rule: ScanRule {
                q: 5,
                k: 64,
                outside: 0,
                ranked: false,
            },
        }];
        assert!(key_matches(&[e(1, 4), e(4, u64::MAX)], &probe).is_ok());
        let err = key_matches(&[e(1, 5), e(4, u64::MAX)], &probe).unwrap_err();
        assert!(err.to_string().contains("overlapping"), "{err}");
    }
}
