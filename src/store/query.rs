//! Reading the index: buckets by multi-get, postings scanned with XOR +
//! popcount, then the documents of the fingerprints found, nearest first,
//! each checked against its record, for as long as the caller wants more.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rocksdb::{DBRawIteratorWithThreadMode, ReadOptions, SnapshotWithThreadMode, DB};

use std::sync::Arc;

use super::frozen::Frozen;
use super::{codec, posting_family, schema, Prefetch, ReadCounts, Record, Store, DOCS, REFS};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Sketch, BLOCKS};
use crate::index::bands::{BandProbe, BANDS};
use crate::index::{self, Hit, RefKey};

/// The view one query reads at: every read of a query (buckets, `refs`,
/// records) is at one snapshot, so a batch committed meanwhile is seen
/// whole or not at all (a document deleted between reading its bucket and
/// its record would otherwise look like a damaged index).
///
/// It carries the frozen index that goes with that state (see
/// `store::frozen`): both are taken under the frozen index's lock, so a
/// freeze is either wholly before the view or wholly after it.
pub(crate) struct Snapshot<'a> {
    rocks: SnapshotWithThreadMode<'a, DB>,
    frozen: Option<Arc<Frozen>>,
}

impl Snapshot<'_> {
    /// Hands `on(n, entries)` the non-empty buckets of `buckets` (posting
    /// family, bucket) that the frozen index answers at this view, and
    /// returns the places `n` of the others, to be read from RocksDB.
    fn read_frozen(
        &self,
        buckets: impl Iterator<Item = (usize, u16)>,
        mut on: impl FnMut(usize, &[u8]),
    ) -> Vec<usize> {
        let mut rest = Vec::new();
        for (n, (i, b)) in buckets.enumerate() {
            match self.frozen.as_ref().and_then(|f| f.clean_bucket(i, b)) {
                Some(entries) => {
                    if !entries.is_empty() {
                        on(n, entries);
                    }
                }
                None => rest.push(n),
            }
        }
        rest
    }
}

pub(super) fn read_at(at: &Snapshot<'_>) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&at.rocks);
    ro
}

/// [`read_at`] for the hot reads of the posting families (a query's and
/// a write check's buckets), without RocksDB's checksum of each block
/// read. Table files are read through mmap (`Tuning::mmap_reads`), where
/// nothing caches a verified block: every read hashed its whole 16 KiB
/// block again (12% of an ingest into a 50M store). The postings are an
/// index of the records: `verify` reads them with checksums on and
/// compares them with the records, compaction checks every block it
/// rewrites, and a damaged entry could only add a candidate (which the
/// sketch confirms or rejects) or hide one. Records, `refs` and clusters
/// are always read with their checksums.
pub(super) fn posting_read_at(at: &Snapshot<'_>) -> ReadOptions {
    let mut ro = read_at(at);
    ro.set_verify_checksums(false);
    ro
}

/// Whether a walk over the hits goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// The documents of one fingerprint, read from `refs` in id order a few at
/// a time, each with its sketch.
struct Cursor {
    fp: Fingerprint,
    buffered: VecDeque<(String, schema::RefValue)>,
    /// The last id read, where the next read resumes.
    last: Option<String>,
    done: bool,
    /// How many the next read takes (doubling: a fingerprint of one
    /// document costs one read, one of a million a few dozen).
    chunk: usize,
}

/// How many `refs` entries a cursor's first read takes.
pub(super) const FIRST_READ: usize = 2;

/// The first [`FIRST_READ`] `refs` entries of `fp` (id, value), in id
/// order, read with `it` as a walk's first read of it takes them.
pub(super) fn first_refs(
    it: &mut DBRawIteratorWithThreadMode<'_, DB>,
    reads: &ReadCounts,
    fp: Fingerprint,
) -> Result<Vec<(String, schema::RefValue)>> {
    let mut c = Cursor::new(fp);
    c.read(it, reads)?;
    Ok(c.buffered.into())
}

impl Cursor {
    fn new(fp: Fingerprint) -> Cursor {
        Cursor {
            fp,
            buffered: VecDeque::new(),
            last: None,
            done: false,
            chunk: FIRST_READ,
        }
    }

    fn next(
        &mut self,
        it: &mut DBRawIteratorWithThreadMode<'_, DB>,
        reads: &ReadCounts,
        pre: Option<&Prefetch>,
    ) -> Result<Option<(String, schema::RefValue)>> {
        if self.buffered.is_empty() && !self.done {
            // The first read comes from a chunk's prefetch where it made
            // it (the same entries: see [`first_refs`]).
            match pre.and_then(|p| p.first_refs(self.fp).filter(|_| self.last.is_none())) {
                Some(first) => self.buffered.extend(first.iter().cloned()),
                None => self.read(it, reads)?,
            }
            self.done = self.buffered.len() < self.chunk;
            self.chunk = (self.chunk * 2).min(1024);
            self.last = self.buffered.back().map(|b| b.0.clone());
        }
        Ok(self.buffered.pop_front())
    }

    /// Reads the next `chunk` entries after `last` into `buffered`.
    fn read(
        &mut self,
        it: &mut DBRawIteratorWithThreadMode<'_, DB>,
        reads: &ReadCounts,
    ) -> Result<()> {
        let prefix = self.fp.value().to_be_bytes();
        match &self.last {
            Some(last) => it.seek(RefKey::encode(self.fp, last)),
            None => it.seek(prefix),
        }
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) || self.buffered.len() >= self.chunk {
                break;
            }
            let (_, id) = RefKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            if self.last.as_deref() != Some(id) {
                let value = schema::decode_refs_value(v).map_err(|r| Error::corrupt(REFS, k, r))?;
                self.buffered.push_back((id.to_string(), value));
            }
            it.next();
        }
        it.status()?;
        ReadCounts::add(&reads.refs, self.buffered.len() as u64);
        Ok(())
    }
}

impl Store {
    /// A snapshot of the store now, for the reads of one query.
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        let frozen = self.frozen.read();
        Snapshot {
            frozen: frozen.clone(),
            rocks: self.db.snapshot(),
        }
    }

    /// The fingerprints `plan` accepts for `q` (see [`index::ProbePlan`];
    /// [`index::ProbePlan::exact`] is every fingerprint within k), read from
    /// the plan's buckets at `at`: unsorted, and a fingerprint found in
    /// several families is there several times. With `parallel` (and the
    /// store's [`Store::parallel_probe`]), half of the families are read
    /// on the rayon pool meanwhile.
    pub(crate) fn candidates(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        plan: &index::ProbePlan,
        parallel: bool,
    ) -> Result<Vec<Fingerprint>> {
        Ok(self.candidates_banded(at, q, plan, None, parallel)?.0)
    }

    /// [`Store::candidates`], and with a band probe also what it adds
    /// ([`BandProbe::band_only`]: the nearest few the plan does not
    /// accept), read from its 16 band buckets beside the plan's: half of
    /// each on this thread, half on the rayon pool.
    pub(crate) fn candidates_banded(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        plan: &index::ProbePlan,
        probe: Option<&BandProbe>,
        parallel: bool,
    ) -> Result<(Vec<Fingerprint>, Vec<Fingerprint>)> {
        crate::fingerprint::check_k(plan.k)?;
        // The plan's buckets of block families `blocks`, and the probe's of
        // band families `bands`.
        let read = |blocks: std::ops::Range<usize>,
                    bands: std::ops::Range<usize>|
         -> Result<(Vec<Fingerprint>, Vec<Fingerprint>)> {
            let (mut found, mut banded) = (Vec::new(), Vec::new());
            for i in blocks {
                self.scan_buckets(at, i, &plan.blocks[i], q, plan, &mut found)?;
            }
            if let Some(p) = probe {
                banded = self.scan_bands(at, q, plan, p, bands)?;
            }
            Ok((found, banded))
        };
        let buckets = plan.buckets() + probe.map_or(0, |p| p.buckets());
        let (found, mut banded) = if buckets <= 2 * BLOCKS || !self.parallel_probe || !parallel {
            // A few buckets: cheaper on this thread than a wake-up (and
            // always, when requests already keep every core busy).
            read(0..BLOCKS, 0..BANDS)?
        } else {
            // The families are independent: half on this thread, half on
            // the rayon pool meanwhile (one wake-up, this thread keeps
            // working).
            let mut other = Ok(Default::default());
            let mut here = Ok(Default::default());
            rayon::in_place_scope(|scope| {
                let other = &mut other;
                scope.spawn(|_| *other = read(BLOCKS / 2..BLOCKS, BANDS / 2..BANDS));
                here = read(0..BLOCKS / 2, 0..BANDS / 2);
            });
            let ((mut f, mut b), (f2, b2)) = (here?, other?);
            f.extend(f2);
            b.extend(b2);
            (f, b)
        };
        if let Some(p) = probe {
            banded = p.band_only(q, plan, banded);
        }
        Ok((found, banded))
    }

    /// The fingerprints in the part buckets of `parts` at `at`, one list
    /// per part: all of a bucket's, or its first `max + 1` when it holds
    /// more (a probe then names none of them: see
    /// [`crate::index::parts::PartProbe`]). A seek per part in one
    /// iterator; a part no document has costs a bloom filter probe.
    pub(crate) fn part_buckets(
        &self,
        at: &Snapshot<'_>,
        parts: &[u64],
        max: usize,
    ) -> Result<Vec<Vec<Fingerprint>>> {
        ReadCounts::add(&self.reads.buckets, parts.len() as u64);
        let mut ro = posting_read_at(at);
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(super::PARTS), ro);
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            let prefix = p.to_be_bytes();
            it.seek(prefix);
            let mut held = Vec::new();
            while let Some(k) = it.key() {
                if !k.starts_with(&prefix) || held.len() > max {
                    break;
                }
                let (_, fp) =
                    schema::decode_part_key(k).map_err(|r| Error::corrupt(super::PARTS, k, r))?;
                held.push(fp);
                it.next();
            }
            it.status()?;
            out.push(held);
        }
        Ok(out)
    }

    /// What `probe` accepts for `q` in its buckets of the band families
    /// `bands` (one bucket each: [`Store::read_singles`]), cut as they
    /// come to what [`BandProbe::band_only`] may keep beside `plan`
    /// ([`index::bands::BandHits`]: a template's hot buckets).
    fn scan_bands(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        plan: &index::ProbePlan,
        probe: &BandProbe,
        bands: std::ops::Range<usize>,
    ) -> Result<Vec<Fingerprint>> {
        let buckets: Vec<(usize, u16)> = bands
            .filter(|j| probe.probes(*j))
            .map(|j| (BLOCKS + j, probe.values[j]))
            .collect();
        let mut hits = index::bands::BandHits::new(probe, plan, q);
        self.read_singles(at, &buckets, |_, posting| hits.scan(posting))?;
        Ok(hits.found())
    }

    /// Reads one bucket of each of several posting families (`buckets`:
    /// family, bucket) with one multi-get of their heads across the
    /// families (and the sealed segments of a head that names some, after)
    /// and calls `on(n, entries)` with the entries of the head and of each
    /// segment of the `n`-th bucket (absent buckets are skipped).
    pub(super) fn read_singles(
        &self,
        at: &Snapshot<'_>,
        buckets: &[(usize, u16)],
        mut on: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        ReadCounts::add(&self.reads.buckets, buckets.len() as u64);
        // Clean buckets from the frozen index; the others (their place in
        // `buckets` kept) from RocksDB.
        let rest = at.read_frozen(buckets.iter().copied(), &mut on);
        if rest.is_empty() {
            return Ok(());
        }
        let keys: Vec<[u8; index::BUCKET_KEY_LEN]> = rest
            .iter()
            .map(|&n| index::bucket_key(buckets[n].1))
            .collect();
        let values = self.db.multi_get_cf_opt(
            rest.iter()
                .zip(&keys)
                .map(|(&n, k)| (self.cf(posting_family(buckets[n].0)), k)),
            &posting_read_at(at),
        );
        for (r, v) in values.into_iter().enumerate() {
            let Some(v) = v? else { continue };
            let n = rest[r];
            let (i, b) = buckets[n];
            let (entries, segments) = index::split_head(&v)
                .map_err(|e| Error::corrupt(posting_family(i), &keys[r], e))?;
            on(n, entries);
            if segments > 0 {
                self.read_parts(at, i, &[b], |_, e, head| {
                    if head.is_none() {
                        on(n, e)
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Walks the documents of `found` (fingerprints from
    /// [`Store::candidates`]) nearest to `q` first and, among equally near
    /// ones, by id, handing each (with its similarity to `sketch`, when
    /// both have a sketch) to `visit` until it says stop. Ids that `skip`
    /// names are passed over. Returns whether every document was visited.
    ///
    /// The walk reads only what it visits, and only from `refs`, whose
    /// values are the sketches: the documents of a fingerprint come a few
    /// at a time, in id order, so ten hits cost about ten `refs` entries
    /// however many documents share the nearest fingerprint, and a
    /// candidate the sketch rejects costs no record read. Callers check
    /// the records of what they return with [`Store::checked_record`].
    ///
    /// `found` comes from the index: a fingerprint in it without a
    /// document is damage. [`Store::resolve_prefetched`] with no `found`
    /// walks the documents of `q` itself without reading any bucket.
    pub(crate) fn resolve(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        found: Vec<Fingerprint>,
        sketch: Option<&Sketch>,
        skip: &dyn Fn(&str) -> bool,
        visit: impl FnMut(Hit) -> Result<Flow>,
    ) -> Result<bool> {
        self.walk(at, q, found, true, sketch, skip, None, visit)
    }

    /// [`Store::resolve`] whose first `refs` reads come from a chunk's
    /// prefetch where it made them; with no `found`, of the documents
    /// whose fingerprint is `q` (distance 0: the first of any answer),
    /// found from `refs` alone.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn resolve_prefetched(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        found: Option<Vec<Fingerprint>>,
        sketch: Option<&Sketch>,
        skip: &dyn Fn(&str) -> bool,
        pre: Option<&Prefetch>,
        visit: impl FnMut(Hit) -> Result<Flow>,
    ) -> Result<bool> {
        match found {
            Some(found) => self.walk(at, q, found, true, sketch, skip, pre, visit),
            None => self.walk(at, q, vec![q], false, sketch, skip, pre, visit),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        at: &Snapshot<'_>,
        q: Fingerprint,
        found: Vec<Fingerprint>,
        from_index: bool,
        sketch: Option<&Sketch>,
        skip: &dyn Fn(&str) -> bool,
        pre: Option<&Prefetch>,
        mut visit: impl FnMut(Hit) -> Result<Flow>,
    ) -> Result<bool> {
        let mut levels: Vec<Vec<Fingerprint>> = vec![Vec::new(); 65];
        for fp in found {
            levels[fp.distance(q) as usize].push(fp);
        }
        let mut ro = read_at(at);
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        for (distance, mut fps) in levels.into_iter().enumerate() {
            if fps.is_empty() {
                continue;
            }
            fps.sort_unstable();
            fps.dedup();
            // The level's documents in id order: a merge of its
            // fingerprints' documents, each already in id order.
            let mut cursors: Vec<Cursor> = fps.into_iter().map(Cursor::new).collect();
            // Each cursor's next document is in the heap; its sketch here.
            let mut sketches: Vec<Option<Sketch>> = vec![None; cursors.len()];
            let mut heap = BinaryHeap::with_capacity(cursors.len());
            for (c, cur) in cursors.iter_mut().enumerate() {
                match cur.next(&mut it, &self.reads, pre)? {
                    Some((id, v)) => {
                        sketches[c] = v.sketch;
                        heap.push(Reverse((id, c)));
                    }
                    None if !from_index => {}
                    None => {
                        let fp = cur.fp;
                        return Err(Error::corrupt(
                            REFS,
                            &fp.value().to_be_bytes(),
                            format!("a bucket holds fingerprint {fp}, but no document has it"),
                        ));
                    }
                }
            }
            while let Some(Reverse((id, c))) = heap.pop() {
                let fp = cursors[c].fp;
                let theirs = sketches[c];
                if let Some((next, v)) = cursors[c].next(&mut it, &self.reads, pre)? {
                    sketches[c] = v.sketch;
                    heap.push(Reverse((next, c)));
                }
                if skip(&id) {
                    continue;
                }
                let hit = Hit {
                    similarity: sketch.zip(theirs).map(|(a, b)| a.similarity(&b)),
                    id,
                    fingerprint: fp,
                    distance: distance as u32,
                    containment: None,
                };
                if visit(hit)? == Flow::Stop {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The record of document `id`, which `refs` names with fingerprint
    /// `fp`: it must exist, decode and have `fp`, so a damaged record,
    /// `refs` entry or posting is an error naming the family and key, never
    /// a wrong answer.
    pub(crate) fn checked_record(
        &self,
        at: &Snapshot<'_>,
        fp: Fingerprint,
        id: &str,
    ) -> Result<Record> {
        ReadCounts::add(&self.reads.records, 1);
        let v = self
            .db
            .get_pinned_cf_opt(self.cf(DOCS), id.as_bytes(), &read_at(at))?;
        let rec = v
            .map(|v| codec::decode_record(&v).map_err(|r| Error::corrupt(DOCS, id.as_bytes(), r)))
            .transpose()?;
        match rec {
            Some(r) if r.fingerprint == fp => Ok(r),
            Some(r) => Err(Error::corrupt(
                DOCS,
                id.as_bytes(),
                format!(
                    "the record has fingerprint {}, the index {fp}",
                    r.fingerprint
                ),
            )),
            None => Err(Error::corrupt(
                REFS,
                &RefKey::encode(fp, id),
                format!("names id {id:?}, which has no record"),
            )),
        }
    }

    /// Every document with fingerprint `fp`, in id order, with its record
    /// (checked as a query checks its hits).
    pub fn documents_with(&self, fp: Fingerprint) -> Result<Vec<(String, Record)>> {
        let at = &self.snapshot();
        let mut ids = Vec::new();
        self.resolve(at, fp, vec![fp], None, &|_| false, |h| {
            ids.push(h.id);
            Ok(Flow::Continue)
        })?;
        ids.into_iter()
            .map(|id| {
                let r = self.checked_record(at, fp, &id)?;
                Ok((id, r))
            })
            .collect()
    }

    /// Adds to `found` the fingerprints `plan` accepts for `q` in the
    /// buckets `blocks` (ascending) of family `i`.
    fn scan_buckets(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        blocks: &[u16],
        q: Fingerprint,
        plan: &index::ProbePlan,
        found: &mut Vec<Fingerprint>,
    ) -> Result<()> {
        // Hot loop: XOR + popcount over each packed posting.
        self.read_buckets(at, i, blocks, |_, posting| {
            plan.scan_posting(q, posting, found)
        })
    }

    /// Reads buckets `blocks` of family `i` with one multi-get of their
    /// heads (and one of the sealed segments the heads name, if any) and
    /// calls `on(n, entries)` with the whole 8-byte entries of the head
    /// and of each segment of the `n`-th bucket (absent buckets are
    /// skipped).
    fn read_buckets(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        blocks: &[u16],
        mut on: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        self.read_parts(at, i, blocks, |n, entries, _| on(n, entries))
    }

    /// [`Store::read_buckets`], telling apart a head (`Some(its number of
    /// segments)`) and a segment (`None`).
    pub(super) fn read_parts(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        blocks: &[u16],
        mut on: impl FnMut(usize, &[u8], Option<u32>),
    ) -> Result<()> {
        let name = posting_family(i);
        let cf = self.cf(name);
        ReadCounts::add(&self.reads.buckets, blocks.len() as u64);
        // Clean buckets from the frozen index (all of a bucket, as a head
        // without segments); the others from RocksDB.
        let rest = at.read_frozen(blocks.iter().map(|&b| (i, b)), |n, e| on(n, e, Some(0)));
        if rest.is_empty() {
            return Ok(());
        }
        let keys: Vec<[u8; index::BUCKET_KEY_LEN]> =
            rest.iter().map(|&n| index::bucket_key(blocks[n])).collect();
        let values = self
            .db
            .batched_multi_get_cf_opt(cf, &keys, true, &posting_read_at(at));
        // (bucket, segment key) of the heads that name segments.
        let mut segments: Vec<(usize, [u8; index::SEGMENT_KEY_LEN])> = Vec::new();
        for (r, v) in values.into_iter().enumerate() {
            let Some(v) = v? else { continue };
            let n = rest[r];
            let (entries, count) =
                index::split_head(&v).map_err(|e| Error::corrupt(name, &keys[r], e))?;
            on(n, entries, Some(count));
            segments.extend((1..=count).map(|s| (n, index::segment_key(blocks[n], s))));
        }
        if segments.is_empty() {
            return Ok(());
        }
        let seg_keys: Vec<&[u8; index::SEGMENT_KEY_LEN]> = segments.iter().map(|s| &s.1).collect();
        ReadCounts::add(&self.reads.buckets, seg_keys.len() as u64);
        let values = self
            .db
            .batched_multi_get_cf_opt(cf, &seg_keys, false, &posting_read_at(at));
        for ((n, key), v) in segments.iter().zip(values) {
            let Some(v) = v? else { continue };
            if !v.len().is_multiple_of(index::ENTRY_LEN) {
                return Err(Error::corrupt(
                    name,
                    key,
                    "segment is not a whole number of entries",
                ));
            }
            on(*n, &v, None);
        }
        Ok(())
    }

    /// The buckets `lo..=hi` of posting family `i`, in order:
    /// `visit(block, fingerprints)` with each bucket's fingerprints (head
    /// and segments together, ascending); empty buckets are skipped.
    pub fn for_each_bucket_in(
        &self,
        i: usize,
        lo: u16,
        hi: u16,
        visit: impl FnMut(u16, &[Fingerprint]) -> Result<()>,
    ) -> Result<()> {
        self.for_each_bucket_at(None, i, lo, hi, visit)
    }

    /// [`Store::for_each_bucket_in`] at snapshot `at` (`None`: the latest
    /// state).
    pub(super) fn for_each_bucket_at(
        &self,
        at: Option<&SnapshotWithThreadMode<'_, DB>>,
        i: usize,
        lo: u16,
        hi: u16,
        mut visit: impl FnMut(u16, &[Fingerprint]) -> Result<()>,
    ) -> Result<()> {
        let name = posting_family(i);
        let mut ro = ReadOptions::default();
        if let Some(at) = at {
            ro.set_snapshot(at);
        }
        ro.fill_cache(false);
        ro.set_total_order_seek(true);
        if hi < u16::MAX {
            ro.set_iterate_upper_bound(index::bucket_key(hi + 1).to_vec());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
        it.seek(index::bucket_key(lo));
        let mut current: Option<(u16, Vec<Fingerprint>, bool)> = None;
        let mut flush = |cur: &mut Option<(u16, Vec<Fingerprint>, bool)>| -> Result<()> {
            if let Some((block, mut fps, segmented)) = cur.take() {
                if segmented {
                    fps.sort_unstable();
                }
                if !fps.is_empty() {
                    visit(block, &fps)?;
                }
            }
            Ok(())
        };
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let (block, segment) =
                index::decode_block_key(k).map_err(|r| Error::corrupt(name, k, r))?;
            let entries = if segment == 0 {
                index::split_head(v)
                    .map_err(|r| Error::corrupt(name, k, r))?
                    .0
            } else if v.len().is_multiple_of(index::ENTRY_LEN) {
                v
            } else {
                return Err(Error::corrupt(
                    name,
                    k,
                    "segment is not a whole number of entries",
                ));
            };
            if current.as_ref().map(|c| c.0) != Some(block) {
                flush(&mut current)?;
                current = Some((block, Vec::new(), false));
            }
            if let Some(c) = current.as_mut() {
                c.1.extend(index::posting_entries(entries).into_iter().flatten());
                c.2 |= segment > 0;
            }
            it.next();
        }
        it.status()?;
        flush(&mut current)
    }

    /// The fingerprints of bucket `block` of family `i` (head and
    /// segments), ascending; empty if the bucket is.
    pub fn bucket(&self, i: usize, block: u16) -> Result<Vec<Fingerprint>> {
        let mut out = Vec::new();
        let mut segmented = false;
        self.read_buckets(&self.snapshot(), i, &[block], |_, p| {
            segmented |= !out.is_empty();
            out.extend(index::posting_entries(p).into_iter().flatten());
        })?;
        if segmented {
            out.sort_unstable();
        }
        Ok(out)
    }

    /// About `n` documents drawn at random: for each of `n` uniform 64-bit
    /// points, the first `refs` entry at or after it (wrapping around).
    /// Documents after wide gaps between fingerprints are likelier; for
    /// calibration that bias is negligible. Duplicates are removed.
    pub fn sample(&self, n: usize, seed: u64) -> Result<Vec<(Fingerprint, String)>> {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        let mut state = seed;
        let mut out = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let point = crate::index::splitmix64(&mut state);
            it.seek(point.to_be_bytes());
            if !it.valid() {
                it.status()?;
                it.seek_to_first();
            }
            let Some(k) = it.key() else {
                it.status()?;
                return Ok(Vec::new()); // empty store
            };
            let (fp, id) = RefKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            out.push((fp, id.to_string()));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl Store {
    /// Calls `visit` with every fingerprint that more than one document
    /// has, in order: one pass over the keys of `refs`.
    pub fn for_each_shared_fingerprint(
        &self,
        mut visit: impl FnMut(Fingerprint) -> Result<()>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        ro.set_total_order_seek(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        it.seek_to_first();
        // The previous key's fingerprint and whether it was visited.
        let mut last: Option<(Fingerprint, bool)> = None;
        while let Some(k) = it.key() {
            let (fp, _) = RefKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            match last {
                Some((prev, false)) if prev == fp => {
                    visit(fp)?;
                    last = Some((fp, true));
                }
                Some((prev, true)) if prev == fp => {}
                _ => last = Some((fp, false)),
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }
}
