//! Writing the block families (layout in [`crate::index`]): a fingerprint
//! enters its four buckets when it gains its first document and leaves
//! when it loses its last, and a head that fills up is sealed into a
//! segment in the same batch.
//!
//! The writer keeps, per bucket it has touched, how many fingerprints the
//! head holds, how many sealed segments the bucket has and how many
//! operands it added to the head since it last wrote it whole (read once,
//! then kept up to date), so deciding costs no read. The numbers only
//! decide *when*; every seal, fold and removal from a segmented bucket
//! reads the bucket itself.
//!
//! **Folds.** Every read of a head merges the operands written on it since
//! its last whole value. A hot head would collect thousands of them
//! between compactions (each insert near a hot document adds one), and
//! every duplicate check near it would merge them all again. So after
//! [`FOLD_OPERANDS`] operands the writer writes the head whole instead
//! (RocksDB's `max_successive_merges`, enforced also when the head's
//! value is on disk): a read merges at most that many operands.

use std::collections::{BTreeMap, HashMap};

use rocksdb::ReadOptions;

use super::schema::{Parts, RefValue};
use super::{posting_family, schema, Batch, Store, PARTS, POSTING_FAMILIES, REFS};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, BLOCKS};
use crate::index::bands::{self, BandProbe, BandValues};
use crate::index::{self, RefKey, SEGMENT_ENTRIES};

/// Operands a head takes before the writer writes it whole (a fold).
pub const FOLD_OPERANDS: usize = 32;

/// What the writer knows of one bucket: fingerprints in its head, sealed
/// segments, operands added to the head since its last whole value (0
/// when unknown: a fold then comes at most [`FOLD_OPERANDS`] late).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Head {
    entries: usize,
    segments: u32,
    operands: usize,
}

/// A bucket the writer's checks read again within this many checks is
/// kept in its memory (see [`Heads`]).
pub const HOT_RECENT: u64 = 64;

/// The most fingerprints the writer keeps in memory (64 MiB); past it the
/// kept buckets are dropped and read again as needed.
pub const HOT_CAPACITY: usize = 8 << 20;

/// A hot bucket the writer keeps: its fingerprints, unordered.
#[derive(Debug, Default)]
struct Hot {
    raw: Vec<u8>,
}

impl Hot {
    fn units(&self) -> usize {
        self.raw.len() / index::ENTRY_LEN
    }

    fn add(&mut self, fp: Fingerprint) {
        self.raw.extend_from_slice(&fp.value().to_be_bytes());
    }

    fn remove(&mut self, fp: Fingerprint) {
        let bytes = fp.value().to_be_bytes();
        if let Some(at) = self
            .raw
            .chunks_exact(index::ENTRY_LEN)
            .position(|e| e == bytes)
        {
            let last = self.raw.len() - index::ENTRY_LEN;
            self.raw.copy_within(last.., at * index::ENTRY_LEN);
            self.raw.truncate(last);
        }
    }
}

/// The writer's [`Head`]s, per (family, block), and the *hot* buckets:
/// those its duplicate checks read again within [`HOT_RECENT`] checks,
/// whole (head and segments, unordered), kept in step with what it
/// writes.
///
/// Only the writer writes postings, so what it keeps is the store's latest
/// state: a flood of near copies of one document reads the same buckets
/// for every copy, and gets them from memory instead of merging them from
/// the memtable again each time. Checks of unrelated documents seldom read
/// a bucket twice so soon (at 50M documents, about 3% of buckets within
/// 64 checks), so they keep little. Queries on other threads read their
/// snapshots, never this.
#[derive(Debug, Default)]
pub(crate) struct Heads {
    heads: HashMap<(usize, u16), Head>,
    hot: HashMap<(usize, u16), Hot>,
    hot_entries: usize,
    /// The check that last read each bucket, and how many checks ran.
    seen: HashMap<(usize, u16), u64>,
    checks: u64,
}

impl Heads {
    pub(crate) fn clear(&mut self) {
        *self = Heads::default();
    }
}

/// One fingerprint's posting changes in a batch: whether it enters or
/// leaves its four block buckets, and the band buckets and part keys it
/// is in before and after (those of its first document's sketch and parts;
/// see [`crate::index::bands`] and [`crate::index::parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostingChange {
    pub fp: Fingerprint,
    /// `Some(true)`: enters its block buckets (it gains its first
    /// document); `Some(false)`: leaves them (it lost its last); `None`:
    /// stays.
    pub blocks: Option<bool>,
    /// Its band values before the batch and after it (`None`: in no band).
    pub bands_before: Option<BandValues>,
    pub bands_after: Option<BandValues>,
    /// Its part keys before the batch and after it (empty: none).
    pub parts_before: Parts,
    pub parts_after: Parts,
}

impl PostingChange {
    /// The change of `fp`'s entry in posting family `i` (see
    /// [`super::posting_family`]): (bucket, whether it enters) for each
    /// bucket it leaves or enters.
    fn ops(&self, i: usize) -> impl Iterator<Item = (u16, bool)> {
        let (leave, enter) = if i < BLOCKS {
            let b = self.fp.block(i);
            match self.blocks {
                Some(true) => (None, Some(b)),
                Some(false) => (Some(b), None),
                None => (None, None),
            }
        } else {
            let j = i - BLOCKS;
            let before = self.bands_before.map(|v| v[j]);
            let after = self.bands_after.map(|v| v[j]);
            if before == after {
                (None, None)
            } else {
                (before, after)
            }
        };
        leave
            .map(|b| (b, false))
            .into_iter()
            .chain(enter.map(|b| (b, true)))
    }
}

/// The fingerprints (as `u64`) of a posting's whole 8-byte entries.
fn fingerprint_values(posting: &[u8]) -> Vec<u64> {
    index::posting_fingerprints(posting).map(|f| f.0).collect()
}

/// A fingerprint a batch touched, and the first (smallest id) of the
/// documents the batch writes with it, with that document's `refs` value
/// (`None`: the batch writes none).
pub type Touched<'a> = (Fingerprint, Option<(&'a str, RefValue)>);

/// A fingerprint's first document's `refs` value, and the first one not
/// skipped with its id (see `Store::first_holders`).
type Holders = (Option<RefValue>, Option<(String, RefValue)>);

impl Store {
    /// The first document of `fp` at the latest committed state (its
    /// `refs` value, or `None` when no document has `fp`), and the first of
    /// those `skip` does not name (its id and value).
    pub(crate) fn first_holders(
        &self,
        fp: Fingerprint,
        skip: &dyn Fn(&str) -> bool,
        pre: Option<&super::Prefetch>,
    ) -> Result<Holders> {
        // From a chunk's prefetch (read at the same state) when its first
        // entries answer: one not skipped among them, or all of them.
        if let Some(cached) = pre.and_then(|p| p.first_refs(fp)) {
            let first = cached.first().map(|e| e.1);
            if let Some((id, s)) = cached.iter().find(|e| !skip(&e.0)) {
                return Ok((first, Some((id.clone(), *s))));
            }
            if cached.len() < super::prefetch::FIRST_REFS {
                return Ok((first, None));
            }
        }
        let prefix = fp.value().to_be_bytes();
        let mut ro = ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        it.seek(prefix);
        let mut first = None;
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) {
                break;
            }
            let (_, id) = RefKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            let value = schema::decode_refs_value(v).map_err(|r| Error::corrupt(REFS, k, r))?;
            if first.is_none() {
                first = Some(value);
            }
            if !skip(id) {
                return Ok((first, Some((id.to_string(), value))));
            }
            it.next();
        }
        it.status()?;
        Ok((first, None))
    }

    /// The posting changes of a batch that touched the fingerprints of
    /// `touched` (each with the first document the batch writes with it).
    /// `rewritten` names the stored documents the batch deletes or
    /// replaces. A fingerprint enters its block buckets when it had no
    /// stored document and has one now, and leaves in the opposite case;
    /// its band buckets and part keys follow its first document.
    pub(crate) fn posting_changes<'a>(
        &self,
        touched: impl IntoIterator<Item = Touched<'a>>,
        rewritten: &dyn Fn(&str) -> bool,
        pre: Option<&super::Prefetch>,
    ) -> Result<Vec<PostingChange>> {
        let mut out = Vec::new();
        for (fp, written) in touched {
            let (before, kept) = self.first_holders(fp, rewritten, pre)?;
            let first_after: Option<RefValue> = match (kept, written) {
                (Some((kid, ks)), Some((wid, ws))) => {
                    Some(if kid.as_str() < wid { ks } else { ws })
                }
                (Some((_, ks)), None) => Some(ks),
                (None, Some((_, ws))) => Some(ws),
                (None, None) => None,
            };
            let sketch = |v: Option<RefValue>| v.and_then(|v| v.sketch);
            let change = PostingChange {
                fp,
                blocks: (before.is_some() != first_after.is_some())
                    .then_some(first_after.is_some()),
                bands_before: sketch(before).as_ref().map(bands::band_values),
                bands_after: sketch(first_after).as_ref().map(bands::band_values),
                parts_before: before.map(|v| v.parts).unwrap_or_default(),
                parts_after: first_after.map(|v| v.parts).unwrap_or_default(),
            };
            if change.blocks.is_some()
                || change.bands_before != change.bands_after
                || change.parts_before != change.parts_after
            {
                out.push(change);
            }
        }
        Ok(out)
    }

    /// Adds `changes` to `b`: per bucket, `+`/`-` operands on the head, a
    /// `-` on the segment that holds a fingerprint, and the seal of a head
    /// that reaches [`SEGMENT_ENTRIES`] fingerprints; the part keys a
    /// fingerprint leaves are deleted and those it enters put.
    pub fn write_postings(&self, b: &mut Batch, changes: &[PostingChange]) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        for c in changes {
            let (before, after) = (c.parts_before.as_slice(), c.parts_after.as_slice());
            for p in before.iter().filter(|p| !after.contains(p)) {
                b.0.delete_cf(self.cf(PARTS), schema::part_key(*p, c.fp));
            }
            for p in after.iter().filter(|p| !before.contains(p)) {
                b.0.put_cf(self.cf(PARTS), schema::part_key(*p, c.fp), []);
            }
        }
        let mut heads = self
            .heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for i in 0..POSTING_FAMILIES {
            let name = posting_family(i);
            let mut per_bucket: BTreeMap<u16, Vec<(Fingerprint, bool)>> = BTreeMap::new();
            for c in changes {
                for (blk, add) in c.ops(i) {
                    per_bucket.entry(blk).or_default().push((c.fp, add));
                }
            }
            if per_bucket.is_empty() {
                continue;
            }
            // The heads not known yet, in one multi-get.
            let unknown: Vec<u16> = per_bucket
                .keys()
                .copied()
                .filter(|blk| !heads.heads.contains_key(&(i, *blk)))
                .collect();
            for (blk, v) in unknown.iter().zip(self.read_heads(i, &unknown)?) {
                let (entries, segments) = match v {
                    Some(v) => {
                        let (e, n) = index::split_head(&v)
                            .map_err(|r| Error::corrupt(name, &index::bucket_key(*blk), r))?;
                        (e.len() / index::ENTRY_LEN, n)
                    }
                    None => (0, 0),
                };
                heads.heads.insert(
                    (i, *blk),
                    Head {
                        entries,
                        segments,
                        operands: 0,
                    },
                );
            }
            for (blk, ops) in per_bucket {
                let head = heads.heads.entry((i, blk)).or_default();
                self.mark_dirty(b, i, blk);
                self.write_bucket(b, i, blk, &ops, head)?;
                if let Some(kept) = heads.hot.get_mut(&(i, blk)) {
                    let before = kept.units();
                    for &(fp, add) in &ops {
                        if add {
                            // A fingerprint enters only when absent.
                            kept.add(fp);
                        } else {
                            kept.remove(fp);
                        }
                    }
                    let after = kept.units();
                    heads.hot_entries = (heads.hot_entries + after).saturating_sub(before);
                }
            }
        }
        Ok(())
    }

    /// Writes the band families and the part keys of a store whose block
    /// families and `refs` are whole (a store migrated from format 5 or 6,
    /// or imported): they are emptied, then each fingerprint enters the
    /// band buckets of its first document's sketch and the part keys of
    /// its parts. One pass over `refs`, written in batches; returns the
    /// fingerprints placed in the band buckets.
    pub fn build_bands(&self) -> Result<u64> {
        // From empty band families: a build interrupted and run again
        // starts over.
        let mut b = Batch::default();
        for name in super::BAND_FAMILIES {
            b.0.delete_range_cf(self.cf(name), &[][..], &[0xff; 7][..]);
        }
        b.0.delete_range_cf(self.cf(PARTS), &[][..], &[0xff; 17][..]);
        self.drop_frozen_in(&mut b);
        self.write(b, true)?;
        self.forget_heads();
        let mut changes: Vec<PostingChange> = Vec::new();
        let mut placed = 0u64;
        let mut last: Option<Fingerprint> = None;
        let flush = |changes: &mut Vec<PostingChange>| -> Result<()> {
            let mut b = Batch::default();
            self.write_postings(&mut b, changes)?;
            changes.clear();
            self.write(b, false)
        };
        self.for_each_raw(REFS, |k, v| {
            let (fp, _) = RefKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            if last == Some(fp) {
                return Ok(());
            }
            last = Some(fp);
            let value = schema::decode_refs_value(v).map_err(|r| Error::corrupt(REFS, k, r))?;
            if let Some(s) = value.sketch {
                changes.push(PostingChange {
                    fp,
                    blocks: None,
                    bands_before: None,
                    bands_after: Some(bands::band_values(&s)),
                    parts_before: Parts::default(),
                    parts_after: value.parts,
                });
                placed += 1;
                if changes.len() >= 10_000 {
                    flush(&mut changes)?;
                }
            }
            Ok(())
        })?;
        flush(&mut changes)?;
        self.sync_wal()?;
        Ok(placed)
    }

    /// The raw head values of `blocks` of family `i` (latest state).
    fn read_heads(&self, i: usize, blocks: &[u16]) -> Result<Vec<Option<Vec<u8>>>> {
        let keys: Vec<[u8; index::BUCKET_KEY_LEN]> =
            blocks.iter().map(|&b| index::bucket_key(b)).collect();
        super::ReadCounts::add(&self.reads.buckets, keys.len() as u64);
        self.db
            .batched_multi_get_cf(self.cf(posting_family(i)), &keys, true)
            .into_iter()
            .map(|r| Ok(r?.map(|v| v.to_vec())))
            .collect()
    }

    /// The fingerprints of the head and of each sealed segment of bucket
    /// `blk` of family `i`, and the number of segments (latest state).
    fn read_bucket(&self, i: usize, blk: u16) -> Result<(Vec<u64>, Vec<Vec<u64>>)> {
        let name = posting_family(i);
        let (head, n) = self.read_head(i, blk)?;
        let keys: Vec<[u8; index::SEGMENT_KEY_LEN]> =
            (1..=n).map(|s| index::segment_key(blk, s)).collect();
        super::ReadCounts::add(&self.reads.buckets, keys.len() as u64);
        let mut segments = Vec::with_capacity(keys.len());
        for (s, v) in keys
            .iter()
            .zip(self.db.batched_multi_get_cf(self.cf(name), &keys, true))
        {
            let v = v?;
            let v = v.as_deref().unwrap_or_default();
            if !v.len().is_multiple_of(index::ENTRY_LEN) {
                return Err(Error::corrupt(
                    name,
                    s,
                    "segment is not a whole number of entries",
                ));
            }
            segments.push(fingerprint_values(v));
        }
        Ok((head, segments))
    }

    /// The fingerprints of the head of bucket `blk` of family `i` and the
    /// number of sealed segments it names (latest state).
    fn read_head(&self, i: usize, blk: u16) -> Result<(Vec<u64>, u32)> {
        let name = posting_family(i);
        let key = index::bucket_key(blk);
        super::ReadCounts::add(&self.reads.buckets, 1);
        let raw = self.db.get_cf(self.cf(name), key)?.unwrap_or_default();
        let (entries, n) = index::split_head(&raw).map_err(|r| Error::corrupt(name, &key, r))?;
        Ok((fingerprint_values(entries), n))
    }

    /// The operands (or the seal) of one bucket's `ops`.
    fn write_bucket(
        &self,
        b: &mut Batch,
        i: usize,
        blk: u16,
        ops: &[(Fingerprint, bool)],
        head: &mut Head,
    ) -> Result<()> {
        let cf = self.cf(posting_family(i));
        let key = index::bucket_key(blk);
        // A removal from a bucket with segments: find where the
        // fingerprint is (read once for all of this bucket's removals).
        let mut contents: Option<(Vec<u64>, Vec<Vec<u64>>)> = None;
        let mut head_ops: Vec<(Fingerprint, bool)> = Vec::new();
        for &(fp, add) in ops {
            if add || head.segments == 0 {
                head_ops.push((fp, add));
                continue;
            }
            if contents.is_none() {
                contents = Some(self.read_bucket(i, blk)?);
            }
            let (in_head, segments): (&[u64], &[Vec<u64>]) = match &contents {
                Some((h, s)) => (h, s),
                None => (&[], &[]),
            };
            let holder = (in_head.binary_search(&fp.0).is_err())
                .then(|| segments.iter().position(|s| s.binary_search(&fp.0).is_ok()))
                .flatten();
            match holder {
                Some(s) => {
                    let seg = index::segment_key(blk, s as u32 + 1);
                    b.0.merge_cf(cf, seg, index::posting_operand(false, fp));
                }
                None => head_ops.push((fp, false)),
            }
        }
        let adds = head_ops.iter().filter(|o| o.1).count();
        let fold = head.operands + head_ops.len() >= FOLD_OPERANDS;
        if head.entries + adds < SEGMENT_ENTRIES && !fold {
            for &(fp, add) in &head_ops {
                b.0.merge_cf(cf, key, index::posting_operand(add, fp));
            }
            let removes = head_ops.len() - adds;
            head.entries = (head.entries + adds).saturating_sub(removes);
            head.operands += head_ops.len();
            return Ok(());
        }
        // The head is full (its fingerprints, with this batch's changes,
        // become the next segment, and the head keeps their count) or has
        // taken enough operands (it is written whole).
        let (mut set, segments) = match contents {
            Some((h, s)) => (h, s.len() as u32),
            // A fold or a seal needs the head alone.
            None => self.read_head(i, blk)?,
        };
        let segments = segments.max(head.segments);
        for &(fp, add) in &head_ops {
            match (set.binary_search(&fp.0), add) {
                (Err(at), true) => set.insert(at, fp.0),
                (Ok(at), false) => {
                    set.remove(at);
                }
                _ => {}
            }
        }
        if set.len() < SEGMENT_ENTRIES {
            // A fold (or a count that was high: documents left meanwhile).
            let fps: Vec<Fingerprint> = set.into_iter().map(Fingerprint).collect();
            b.0.put_cf(cf, key, index::encode_head(&fps, segments));
            *head = Head {
                entries: fps.len(),
                segments,
                operands: 0,
            };
            return Ok(());
        }
        // Full segments; what is left stays in the head.
        let fps: Vec<Fingerprint> = set.into_iter().map(Fingerprint).collect();
        let full = fps.len() / SEGMENT_ENTRIES * SEGMENT_ENTRIES;
        let mut n = segments;
        for chunk in fps[..full].chunks(SEGMENT_ENTRIES) {
            n = n
                .checked_add(1)
                .ok_or_else(|| Error::Input(format!("bucket {blk:04x} has 2^32 segments")))?;
            b.0.put_cf(cf, index::segment_key(blk, n), index::encode_posting(chunk));
        }
        let rest = &fps[full..];
        b.0.put_cf(cf, key, index::encode_head(rest, n));
        *head = Head {
            entries: rest.len(),
            segments: n,
            operands: 0,
        };
        Ok(())
    }

    /// [`Store::candidates`] for the writer, on this thread: hot buckets
    /// come from its memory (see [`Heads`]), the others are read at `at`
    /// (which must be the latest state: the writer's own view) and kept if
    /// they are hot. With a band probe, also the fingerprints it finds in
    /// its band buckets (second, unfiltered by the plan: see
    /// [`BandProbe::band_only`]).
    pub(crate) fn writer_candidates(
        &self,
        at: &super::Snapshot<'_>,
        q: Fingerprint,
        plan: &index::ProbePlan,
        probe: Option<&BandProbe>,
    ) -> Result<(Vec<Fingerprint>, Vec<Fingerprint>)> {
        crate::fingerprint::check_k(plan.k)?;
        let mut found = Vec::new();
        // Cut as they come ([`index::bands::BandHits`]); band_only of them
        // is band_only of them all.
        let mut banded = probe.map(|p| index::bands::BandHits::new(p, plan, q));
        // Each band family's bucket, or none when the probe does not read
        // it (a uniform value).
        let bands: Vec<Vec<u16>> = probe
            .map(|p| {
                (0..index::bands::BANDS)
                    .map(|j| p.probes(j).then_some(p.values[j]).into_iter().collect())
                    .collect()
            })
            .unwrap_or_default();
        let families = plan
            .blocks
            .iter()
            .map(Vec::as_slice)
            .chain(bands.iter().map(Vec::as_slice))
            .enumerate();
        self.writer_read(at, families, |i, entries| {
            if i < BLOCKS {
                plan.scan_posting(q, entries, &mut found);
            } else if let Some(hits) = banded.as_mut() {
                hits.scan(entries);
            }
        })?;
        Ok((
            found,
            banded.map_or_else(Vec::new, index::bands::BandHits::found),
        ))
    }

    /// Calls `scan(i, entries)` with the entries of each bucket of each
    /// (posting family `i`, buckets) of `families`, hot ones from the
    /// writer's memory.
    fn writer_read<'b>(
        &self,
        at: &super::Snapshot<'_>,
        families: impl Iterator<Item = (usize, &'b [u16])>,
        mut scan: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        let mut guard = self
            .heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let heads = &mut *guard;
        heads.checks += 1;
        let now = heads.checks;
        if now.is_multiple_of(1 << 16) {
            heads.seen.clear();
        }
        // Buckets to read (family, bucket), in family order, and whether
        // each is hot (read recently).
        let mut missing: Vec<(usize, u16)> = Vec::new();
        let mut hot: Vec<bool> = Vec::new();
        for (i, blocks) in families {
            for b in blocks {
                match heads.hot.get_mut(&(i, *b)) {
                    Some(kept) => scan(i, &kept.raw),
                    None => {
                        let last = heads.seen.insert((i, *b), now);
                        missing.push((i, *b));
                        hot.push(last.is_some_and(|t| now - t <= HOT_RECENT));
                    }
                }
            }
        }
        let mut keep: Vec<Vec<u8>> = vec![Vec::new(); missing.len()];
        let mut on = |n: usize, entries: &[u8]| {
            scan(missing[n].0, entries);
            if hot[n] {
                keep[n].extend_from_slice(entries);
            }
        };
        // A block family's buckets with one multi-get; the band families'
        // (one bucket each) with one over all of them.
        let bands_from = missing.partition_point(|m| m.0 < BLOCKS);
        let mut start = 0;
        for group in missing[..bands_from].chunk_by(|a, b| a.0 == b.0) {
            let blocks: Vec<u16> = group.iter().map(|m| m.1).collect();
            self.read_parts(at, group[0].0, &blocks, |n, e, _| on(start + n, e))?;
            start += group.len();
        }
        self.read_singles(at, &missing[bands_from..], |n, e| on(bands_from + n, e))?;
        for (n, raw) in keep.into_iter().enumerate() {
            if hot[n] {
                heads.hot_entries += raw.len() / index::ENTRY_LEN;
                heads.hot.insert(missing[n], Hot { raw });
            }
        }
        if heads.hot_entries > HOT_CAPACITY {
            heads.hot.clear();
            heads.hot_entries = 0;
        }
        Ok(())
    }

    /// Remembers the heads (entries, segments) of buckets read at the
    /// latest state (a chunk's prefetch), those not known yet: what
    /// [`Store::write_postings`] would read for them.
    pub(super) fn seed_heads(&self, read: Vec<((usize, u16), (usize, u32))>) {
        if read.is_empty() {
            return;
        }
        let mut heads = self
            .heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (key, (entries, segments)) in read {
            heads.heads.entry(key).or_insert(Head {
                entries,
                segments,
                operands: 0,
            });
        }
    }

    /// Forgets what the writer knew of the heads (after a failed write,
    /// or when the index is cleared).
    pub fn forget_heads(&self) {
        self.heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}
