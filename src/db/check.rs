//! Checking and rebuilding a store: verify, repair, migrate.

use std::collections::HashMap;

use crate::error::hex;

use super::Db;
use crate::error::Result;
use crate::fingerprint::{self, Fingerprint};
use crate::index;
use crate::store;
use crate::store::schema::KeepPolicy;

/// What [`migrate`](super::migrate) did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MigrateReport {
    /// Format version found.
    pub from: u32,
    /// Format version now.
    pub to: u32,
    /// Records whose `refs` entry and postings were written again.
    pub indexed: u64,
    /// Records given their place in the ingest order (from formats 2, 3).
    pub ordered: u64,
    /// Fingerprints placed in the band families (from formats 5, 6; from
    /// older ones the repair places them, counted in `indexed`).
    pub banded: u64,
    /// Member keys moved to format 13's ranks (from formats 10 to 12
    /// under `first`; see `KEPT_KEYS`, 2^32).
    pub reranked: u64,
    /// Clusters of two or more documents built.
    pub clusters: u64,
    /// Records that do not decode (left in place; `verify` reports them).
    pub unreadable: u64,
    /// The keep policy before (a store before format 6 ranked by
    /// priority) and now.
    pub keep_from: KeepPolicy,
    pub keep: KeepPolicy,
    /// Clusters of two or more, and the documents in them, before and
    /// after (the rule of format 6 anchors members at the representative:
    /// chains through drifting copies split).
    pub clusters_before: (u64, u64),
    pub clusters_after: (u64, u64),
    /// The largest cluster before and after.
    pub largest_before: u64,
    pub largest_after: u64,
    /// What this build's `init` would make differently from the store's
    /// recipe (see [`crate::Recipe::behind`]): a recipe does not change in
    /// place, since fingerprints are made from texts the store does not
    /// keep. Empty when the store's recipe is this build's default for its
    /// settings.
    pub recipe_behind: Vec<String>,
}

/// What [`Maintenance::repair`](super::Maintenance::repair) did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RepairReport {
    /// Records whose `refs` entry and index keys were rewritten.
    pub reindexed: u64,
    /// Records that do not decode (checksum or format): left in place and
    /// not indexed; `verify` keeps reporting them. Family, key, reason.
    pub unreadable: Vec<String>,
    /// Records given a new ord because another record had the same.
    pub reordered: u64,
    /// Clusters of two or more documents rebuilt.
    pub clusters: u64,
}

/// What [`Admin::verify`](super::Admin::verify) found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VerifyReport {
    pub documents: u64,
    pub refs: u64,
    pub index_keys: [u64; 4],
    /// Entries in the sixteen band families, together.
    pub band_keys: u64,
    /// Keys in the `parts` family (format 10 on).
    pub part_keys: u64,
    /// Kept texts (format 11 on, in a store that keeps them).
    pub texts: u64,
    /// Each problem: family, key in hex, what is wrong.
    pub problems: Vec<String>,
}

/// Per fingerprint, the first record of it a repair batch writes (id,
/// `refs` value).
type FirstWritten = HashMap<Fingerprint, (String, store::schema::RefValue)>;

/// Per fingerprint, the sum of digests ([`band_digest`]s of the band
/// buckets, or [`part_digest`]s of the part keys) of the entries it must
/// have, less those it is found with (0 when they agree).
type Digests = HashMap<Fingerprint, u64>;

/// A 64-bit digest of bucket `value` of band `j`.
fn band_digest(j: usize, value: u16) -> u64 {
    let mut x = ((j as u64) << 16 | u64::from(value)) ^ 0x62616e64_73696d64;
    index::splitmix64(&mut x)
}

/// A 64-bit digest of fingerprint `fp`'s key for part `part`.
fn part_digest(part: u64, fp: Fingerprint) -> u64 {
    let mut x = part ^ fp.value().rotate_left(29) ^ 0x7061_7274_7373_696d;
    index::splitmix64(&mut x)
}

/// The hash under which verify remembers a document id.
pub(super) fn id_hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Db {
    /// Rebuilds the `refs` family and the four index families from the
    /// records, which are the source of truth, and resets the document
    /// count. Needs the store open for writing. Records that do not decode
    /// are reported and left alone.
    pub(crate) fn repair(&mut self) -> Result<RepairReport> {
        let mut rep = RepairReport::default();
        // The marker goes with the clearing and leaves with the last batch
        // of the rebuild: a repair killed in between leaves a store that
        // open refuses (Error::RepairInProgress), never one that silently
        // misses documents.
        let mut b = store::Batch::default();
        self.store.clear_index(&mut b);
        self.store
            .put_meta_in(&mut b, store::REPAIR_MARKER_KEY, b"1");
        self.store.write(b, true)?;
        let mut batch = store::Batch::default();
        // Fingerprints of the records in the batch, each with its first
        // document in it (records come in id order) and that one's sketch:
        // at each write, those that no earlier batch gave a document enter
        // their buckets, and their band buckets are their first document's.
        let mut fps: FirstWritten = Default::default();
        let mut in_batch = 0usize;
        let mut count = 0u64;
        let mut short = 0u64;
        let (mut next_ord, mut clock) = self.store.ord_state()?;
        let mut ords: Vec<u64> = Vec::new();
        let store = &self.store;
        let write = |batch: &mut store::Batch, fps: &mut FirstWritten| -> Result<()> {
            let changes = store.posting_changes(
                fps.iter()
                    .map(|(fp, (id, v))| (*fp, Some((id.as_str(), *v)))),
                &|_| false,
                None,
            )?;
            fps.clear();
            store.write_postings(batch, &changes)?;
            store.write(std::mem::take(batch), false)
        };
        store.for_each_raw(store::DOCS, |k, v| {
            // The count is of records, readable or not (as verify counts).
            count += 1;
            let mut rec = match crate::store::codec::decode_record(v) {
                Ok(r) => r,
                Err(e) => {
                    rep.unreadable
                        .push(format!("{}: key {}: {e}", store::DOCS, hex(k)));
                    return Ok(());
                }
            };
            let Ok(id) = std::str::from_utf8(k) else {
                rep.unreadable
                    .push(format!("{}: key {}: id is not UTF-8", store::DOCS, hex(k)));
                return Ok(());
            };
            // Whether it is kept is the decisions' to say.
            rec.kept = store.kept(id)?;
            fps.entry(rec.fingerprint)
                .or_insert_with(|| (id.to_string(), store::schema::RefValue::of(&rec)));
            short += u64::from(rec.is_short());
            next_ord = next_ord.max(rec.ord + 1);
            clock = clock.max(rec.ingested_at);
            ords.push(rec.ord);
            store.put_doc(&mut batch, id, &rec);
            rep.reindexed += 1;
            in_batch += 1;
            if in_batch >= 10_000 {
                write(&mut batch, &mut fps)?;
                in_batch = 0;
            }
            Ok(())
        })?;
        write(&mut batch, &mut fps)?;
        store.sync_wal()?;
        // Two records with one ord (a record copied by hand, a bug): the
        // first in id order keeps it, the others take new ones.
        ords.sort_unstable();
        let twice: std::collections::HashSet<u64> = ords
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        drop(ords);
        let mut batch = store::Batch::default();
        if !twice.is_empty() {
            let mut kept: HashMap<u64, (String, Option<u64>)> = HashMap::new();
            store.for_each_raw(store::DOCS, |k, v| {
                let (Ok(id), Ok(mut rec)) = (
                    std::str::from_utf8(k),
                    crate::store::codec::decode_record(v),
                ) else {
                    return Ok(());
                };
                if twice.contains(&rec.ord) {
                    match kept.entry(rec.ord) {
                        std::collections::hash_map::Entry::Occupied(_) => {
                            if let Some(t) = rec.dated {
                                store.delete_time(&mut batch, t, rec.ord);
                            }
                            rec.ord = next_ord;
                            next_ord += 1;
                            store.put_record(&mut batch, id, &rec);
                            store.put_order(&mut batch, rec.ord, id);
                            if let Some(t) = rec.dated {
                                store.put_time(&mut batch, t, rec.ord, id);
                            }
                            rep.reordered += 1;
                        }
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert((id.to_string(), rec.dated));
                        }
                    }
                }
                Ok(())
            })?;
            // The ord's entries name the record that kept it.
            for (ord, (id, dated)) in &kept {
                store.put_order(&mut batch, *ord, id);
                if let Some(t) = dated {
                    store.put_time(&mut batch, *t, *ord, id);
                }
            }
        }
        store.put_doc_count(&mut batch, count);
        store.put_short_count(&mut batch, short);
        store.put_ord_state(&mut batch, next_ord, clock);
        store.write(batch, true)?;
        // The clusters, from the records and the rebuilt index; the marker
        // leaves with the last of them.
        rep.clusters = self.rebuild_clusters(self.store.keep_policy()?)?;
        let mut b = store::Batch::default();
        self.store.delete_meta_in(&mut b, store::REPAIR_MARKER_KEY);
        self.store.write(b, true)?;
        Ok(rep)
    }

    /// Checks that every record decodes, every record has exactly its `refs`
    /// entry and four index keys, every index key and `refs` entry points to
    /// a record with the same fingerprint and id, and the document and
    /// short-document counts match. Holds one small entry per document in
    /// memory.
    pub(crate) fn verify(&self) -> Result<VerifyReport> {
        let mut rep = VerifyReport::default();
        let mut scan = self.verify_records(&mut rep)?;
        let (mut bands, mut parts) = self.verify_refs(&mut rep, &mut scan.docs)?;
        self.verify_postings(&mut rep, &scan.docs, &mut bands)?;
        self.verify_parts(&mut rep, &mut parts)?;
        self.verify_texts(&mut rep, &scan.hashes)?;
        let mut missing: Vec<_> = scan.docs.iter().filter(|(_, (seen, _))| !*seen).collect();
        missing.sort();
        for ((fp, _), _) in missing {
            rep.problems.push(format!(
                "{}: a record with fingerprint {fp} has no entry",
                store::REFS,
            ));
        }
        self.verify_meta(&mut rep, &mut scan)?;
        scan.dated.sort_unstable();
        self.verify_clusters(&mut rep.problems, &scan.ords, &scan.dated)?;
        self.verify_decisions(&mut rep.problems)?;
        rep.problems.extend(self.store.check_frozen()?);
        Ok(rep)
    }

    /// Decodes every record, noting what the other checks compare with.
    fn verify_records(&self, rep: &mut VerifyReport) -> Result<RecordScan> {
        let mut scan = RecordScan::default();
        self.store.for_each_raw(store::DOCS, |k, v| {
            rep.documents += 1;
            match crate::store::codec::decode_record(v) {
                Ok(r) => {
                    if let Some(seq) = r.kept {
                        let id = String::from_utf8_lossy(k);
                        if self.store.kept(&id)? != Some(seq) {
                            rep.problems.push(format!(
                                "{}: key {}: kept by decision {seq}, which the decisions do \
                                 not hold as standing",
                                store::DOCS,
                                hex(k)
                            ));
                        }
                    }
                    if r.fine.is_some() && r.sketch.is_none() {
                        // The fine sketch refines the sketch's estimate.
                        rep.problems.push(format!(
                            "{}: key {}: a fine sketch without a sketch",
                            store::DOCS,
                            hex(k)
                        ));
                    }
                    scan.short += u64::from(r.is_short());
                    scan.ords.push((r.ord, id_hash(k)));
                    if let Some(t) = r.dated {
                        scan.dated.push((t, r.ord, id_hash(k)));
                    }
                    scan.latest = scan.latest.max(r.ingested_at);
                    if self.store.keeps_texts() {
                        scan.hashes.insert(id_hash(k), r.content_hash);
                    }
                    // What its `refs` value must be: the sketch and parts.
                    let v = store::schema::refs_entry(
                        r.fingerprint,
                        "",
                        &store::schema::RefValue::of(&r),
                    )
                    .1;
                    scan.docs
                        .insert((r.fingerprint, id_hash(k)), (false, sketch_crc(&v)));
                }
                Err(e) => rep
                    .problems
                    .push(format!("{}: key {}: {e}", store::DOCS, hex(k))),
            }
            Ok(())
        })?;
        Ok(scan)
    }

    /// Every `refs` entry names a record with its fingerprint and holds
    /// its sketch and parts; marks the records whose entry was seen.
    /// Returns, per fingerprint whose first document has a sketch, the
    /// digest of the band buckets it must be in ([`band_digest`]), and per
    /// fingerprint whose first document has parts, the digest of its part
    /// keys ([`part_digest`]).
    fn verify_refs(
        &self,
        rep: &mut VerifyReport,
        docs: &mut DocsSeen,
    ) -> Result<(Digests, Digests)> {
        let mut bands = Digests::new();
        let mut parts = Digests::new();
        let mut last: Option<Fingerprint> = None;
        self.store.for_each_raw(store::REFS, |k, v| {
            rep.refs += 1;
            let (fp, id) = match index::RefKey::decode(k) {
                Ok(e) => e,
                Err(e) => {
                    rep.problems
                        .push(format!("{}: key {}: {e}", store::REFS, hex(k)));
                    return Ok(());
                }
            };
            let sketch = store::schema::decode_refs_value(v);
            match docs.get_mut(&(fp, id_hash(id.as_bytes()))) {
                Some((seen, crc)) => {
                    *seen = true;
                    if let Err(e) = &sketch {
                        rep.problems
                            .push(format!("{}: key {}: {e}", store::REFS, hex(k)));
                    } else if sketch_crc(v) != *crc {
                        rep.problems.push(format!(
                            "{}: key {}: the sketch or parts differ from the record's",
                            store::REFS,
                            hex(k)
                        ));
                    }
                }
                None => rep.problems.push(format!(
                    "{}: key {}: orphan entry (no record of id {id:?} has fingerprint {fp})",
                    store::REFS,
                    hex(k)
                )),
            }
            // The first entry of each fingerprint names its band buckets.
            if last != Some(fp) {
                last = Some(fp);
                if let Ok(Some(s)) = sketch.as_ref().map(|v| v.sketch) {
                    let d = index::bands::band_values(&s)
                        .iter()
                        .enumerate()
                        .fold(0u64, |d, (j, v)| d.wrapping_add(band_digest(j, *v)));
                    bands.insert(fp, d);
                }
                if let Ok(v) = &sketch {
                    if !v.parts.is_empty() {
                        let d = v
                            .parts
                            .as_slice()
                            .iter()
                            .fold(0u64, |d, p| d.wrapping_add(part_digest(*p, fp)));
                        parts.insert(fp, d);
                    }
                }
            }
            Ok(())
        })?;
        Ok((bands, parts))
    }

    /// Every kept text is UTF-8 and belongs to a record whose content hash
    /// is its hash; a store that keeps no texts has none. (A record without
    /// a text is no problem: it was written from features or a
    /// fingerprint.)
    fn verify_texts(&self, rep: &mut VerifyReport, hashes: &HashMap<u64, u64>) -> Result<()> {
        let keeps = self.store.keeps_texts();
        self.store.for_each_raw(store::TEXTS, |k, v| {
            rep.texts += 1;
            let problem = if !keeps {
                Some("a text in a store that keeps none".to_string())
            } else if let Ok(t) = std::str::from_utf8(v) {
                match hashes.get(&id_hash(k)) {
                    None => Some("orphan text (no record has this id)".to_string()),
                    Some(h) if *h != fingerprint::text_hash(t) => {
                        Some("the text's hash is not the record's content hash".to_string())
                    }
                    Some(_) => None,
                }
            } else {
                Some("the text is not UTF-8".to_string())
            };
            if let Some(p) = problem {
                rep.problems
                    .push(format!("{}: key {}: {p}", store::TEXTS, hex(k)));
            }
            Ok(())
        })
    }

    /// Every `parts` key decodes and names a fingerprint whose first
    /// document has that part, and each such fingerprint has a key for
    /// every part of its first document (`parts`: their digests, from
    /// [`Db::verify_refs`]).
    fn verify_parts(&self, rep: &mut VerifyReport, parts: &mut Digests) -> Result<()> {
        let mut stray: Vec<Fingerprint> = Vec::new();
        self.store.for_each_raw(store::PARTS, |k, _| {
            rep.part_keys += 1;
            match store::schema::decode_part_key(k) {
                Ok((p, fp)) => match parts.get_mut(&fp) {
                    Some(d) => *d = d.wrapping_sub(part_digest(p, fp)),
                    None => stray.push(fp),
                },
                Err(e) => rep
                    .problems
                    .push(format!("{}: key {}: {e}", store::PARTS, hex(k))),
            }
            Ok(())
        })?;
        stray.sort_unstable();
        stray.dedup();
        for fp in stray {
            rep.problems.push(format!(
                "{}: fingerprint {fp} has part keys, but its first document has no parts (or no record has it)",
                store::PARTS
            ));
        }
        let mut astray: Vec<Fingerprint> = parts
            .iter()
            .filter(|(_, d)| **d != 0)
            .map(|e| *e.0)
            .collect();
        astray.sort_unstable();
        for fp in astray {
            rep.problems.push(format!(
                "{}: fingerprint {fp}'s keys are not the parts of its first document (missing, moved or repeated keys)",
                store::PARTS
            ));
        }
        Ok(())
    }

    /// Every posting decodes, each segment is named by its head, and each
    /// fingerprint has one entry in every family's buckets if a record has
    /// it, none otherwise.
    fn verify_postings(
        &self,
        rep: &mut VerifyReport,
        docs: &DocsSeen,
        bands: &mut Digests,
    ) -> Result<()> {
        // Per fingerprint: records that have it, then its entries in each
        // family's buckets.
        let mut per_fp: HashMap<Fingerprint, [u32; 1 + fingerprint::BLOCKS]> = HashMap::new();
        for (fp, _) in docs.keys() {
            per_fp.entry(*fp).or_default()[0] += 1;
        }
        for i in 0..store::POSTING_FAMILIES {
            let name = store::posting_family(i);
            // The number of segments the last head read names: a segment
            // beyond it would hold fingerprints no query reads.
            let mut head: Option<(u16, u32)> = None;
            self.store.for_each_posting(i, |k, v| {
                match index::decode_posting(i, k, v) {
                    Err(e) => rep.problems.push(format!("{name}: key {}: {e}", hex(k))),
                    Ok((fps, segments)) => {
                        if let Ok((block, s)) = index::decode_block_key(k) {
                            if s == 0 {
                                head = Some((block, segments));
                            } else if !head.is_some_and(|(b, n)| b == block && s <= n) {
                                rep.problems.push(format!(
                                    "{name}: key {}: segment {s} of bucket {block:04x}, which its head does not name",
                                    hex(k)
                                ));
                            }
                        }
                        if i >= fingerprint::BLOCKS {
                            // A band entry takes its bucket's digest off
                            // the fingerprint's: what is left must be 0.
                            rep.band_keys += fps.len() as u64;
                            if let Ok((value, _)) = index::decode_block_key(k) {
                                let d = band_digest(i - fingerprint::BLOCKS, value);
                                for fp in fps {
                                    let e = bands.entry(fp).or_default();
                                    *e = e.wrapping_sub(d);
                                }
                            }
                            return Ok(());
                        }
                        rep.index_keys[i] += fps.len() as u64;
                        for fp in fps {
                            per_fp.entry(fp).or_default()[1 + i] += 1;
                        }
                    }
                }
                Ok(())
            })?;
        }
        let mut astray: Vec<_> = bands
            .iter()
            .filter(|(_, d)| **d != 0)
            .map(|e| *e.0)
            .collect();
        astray.sort();
        for fp in astray {
            rep.problems.push(format!(
                "band families: fingerprint {fp}'s entries are not the band buckets of its first document's sketch ({})",
                if per_fp.get(&fp).is_some_and(|c| c[0] > 0) { "missing, moved or repeated entries" } else { "no record has it" }
            ));
        }
        let mut wrong: Vec<_> = per_fp
            .iter()
            .filter(|(_, c)| c[1..].iter().any(|n| *n != u32::from(c[0] > 0)))
            .collect();
        wrong.sort();
        for (fp, c) in wrong {
            for (i, name) in store::BLOCK_FAMILIES.iter().enumerate() {
                let (want, got) = (u32::from(c[0] > 0), c[1 + i]);
                if got != want {
                    rep.problems.push(format!(
                        "{name}: key {}: {got} entries of fingerprint {fp}, but {} records have it ({})",
                        hex(&index::bucket_key(fp.block(i))),
                        c[0],
                        if got > want { "orphan or repeated entries" } else { "a missing entry" }
                    ));
                }
            }
        }
        Ok(())
    }

    /// The counts, and the ingest order: every ord once, below the next
    /// one; the clock not behind any record. Sorts `scan.ords`.
    fn verify_meta(&self, rep: &mut VerifyReport, scan: &mut RecordScan) -> Result<()> {
        let count = self.store.doc_count()?;
        if count != rep.documents {
            rep.problems.push(format!(
                "{}: key {}: document count {count} but {} records",
                store::META,
                hex(store::DOC_COUNT_KEY),
                rep.documents
            ));
        }
        let short_count = self.store.short_count()?;
        if short_count != scan.short {
            rep.problems.push(format!(
                "{}: key {}: short-document count {short_count} but {} short records",
                store::META,
                hex(store::SHORT_COUNT_KEY),
                scan.short
            ));
        }
        let ords = &mut scan.ords;
        ords.sort_unstable();
        if let Some(w) = ords.windows(2).find(|w| w[0].0 == w[1].0) {
            rep.problems
                .push(format!("{}: two records have ord {}", store::DOCS, w[0].0));
        }
        let (next_ord, clock) = self.store.ord_state()?;
        if let Some(&(max, _)) = ords.last() {
            if max >= next_ord {
                rep.problems.push(format!(
                    "{}: key {}: next ord {next_ord}, but a record has ord {max}",
                    store::META,
                    hex(store::NEXT_ORD_KEY)
                ));
            }
        }
        if scan.latest > clock {
            rep.problems.push(format!(
                "{}: key {}: clock {clock}, but a record was written at {}",
                store::META,
                hex(store::CLOCK_KEY),
                scan.latest
            ));
        }
        Ok(())
    }
}

/// (fingerprint, xxh3 of the id) of each readable record -> whether its
/// `refs` entry was seen, and the crc32 of the sketch bytes that entry must
/// hold (of no bytes, for a record without a sketch).
type DocsSeen = HashMap<(Fingerprint, u64), (bool, u32)>;

/// What [`Db::verify`] notes of the records for its other checks.
#[derive(Default)]
struct RecordScan {
    docs: DocsSeen,
    short: u64,
    /// (ord, id hash) of every readable record.
    ords: Vec<(u64, u64)>,
    /// (time, ord, id hash) of every readable record with its own time.
    dated: Vec<(u64, u64, u64)>,
    /// The latest write time of a record.
    latest: u64,
    /// id hash → content hash of every readable record, in a store that
    /// keeps texts (what each kept text must hash to).
    hashes: HashMap<u64, u64>,
}

fn sketch_crc(s: &[u8]) -> u32 {
    crc32fast::hash(s)
}
