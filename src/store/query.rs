//! Reading the index: buckets by multi-get, postings scanned with XOR +
//! popcount, hits resolved through `refs` and checked against their
//! records.

use rocksdb::{ReadOptions, SnapshotWithThreadMode, DB};

use super::{codec, Record, Store, BLOCK_FAMILIES, DOCS, REFS};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Sketch, BLOCKS};
use crate::index::{self, DocKey, Hit};

/// The view one query reads at: every read of a query (buckets, `refs`,
/// records) is at one snapshot, so a batch committed meanwhile is seen
/// whole or not at all (a document deleted between reading its bucket and
/// its record would otherwise look like a damaged index).
type Snapshot<'a> = SnapshotWithThreadMode<'a, DB>;

fn read_at(at: &Snapshot<'_>) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_snapshot(at);
    ro
}

impl Store {
    /// Every stored document that `plan` accepts for `q` (see
    /// [`index::ProbePlan`]; [`index::ProbePlan::exact`] is every document
    /// within k), unsorted. Candidates are decided from the index keys
    /// alone; only hits are looked up (`refs`, then the record, which is
    /// checked).
    ///
    /// With `sketch`, each hit whose record has a sketch carries the
    /// estimated similarity of the two.
    pub fn probe(
        &self,
        q: Fingerprint,
        plan: &index::ProbePlan,
        sketch: Option<&Sketch>,
        mut visit: impl FnMut(Hit),
    ) -> Result<()> {
        crate::fingerprint::check_k(plan.k)?;
        let at = &self.db.snapshot();
        // The families are independent: two on this thread, two on the
        // rayon pool meanwhile (one wake-up, this thread keeps working).
        let (mine, theirs) = plan.blocks.split_at(2);
        let mut found: Vec<Fingerprint> = Vec::new();
        let mut other: Result<Vec<Fingerprint>> = Ok(Vec::new());
        let mut here: Result<()> = Ok(());
        if plan.buckets() <= 2 * BLOCKS || !self.parallel_probe {
            // A few buckets: cheaper on this thread than a wake-up (and
            // always, when requests already keep every core busy).
            here =
                plan.blocks.iter().enumerate().try_for_each(|(i, blocks)| {
                    self.scan_buckets(at, i, blocks, q, plan, &mut found)
                });
        } else {
            rayon::in_place_scope(|scope| {
                let other = &mut other;
                scope.spawn(move |_| {
                    let mut v = Vec::new();
                    *other = theirs
                        .iter()
                        .enumerate()
                        .try_for_each(|(j, blocks)| {
                            self.scan_buckets(at, j + 2, blocks, q, plan, &mut v)
                        })
                        .map(|()| v);
                });
                here = mine.iter().enumerate().try_for_each(|(i, blocks)| {
                    self.scan_buckets(at, i, blocks, q, plan, &mut found)
                });
            });
        }
        here?;
        found.extend(other?);
        found.sort_unstable();
        found.dedup();
        for fp in found {
            self.hits_of(at, fp, q, sketch, &mut visit)?;
        }
        Ok(())
    }

    /// The documents with fingerprint `fp`: their `refs` entries, document
    /// key and id. A fingerprint the index holds has at least one.
    fn docs_with(&self, at: &Snapshot<'_>, fp: Fingerprint) -> Result<Vec<(DocKey, String)>> {
        let prefix = fp.value().to_be_bytes();
        let mut ro = read_at(at);
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        it.seek(prefix);
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) {
                break;
            }
            let doc = DocKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(REFS, k, "document id is not UTF-8"))?;
            out.push((doc, id.to_string()));
            it.next();
        }
        it.status()?;
        if out.is_empty() {
            return Err(Error::corrupt(
                REFS,
                &prefix,
                format!("a bucket holds fingerprint {fp}, but no document has it"),
            ));
        }
        Ok(out)
    }

    /// The record of document `id`, which `refs` names `doc`: it must
    /// exist, decode and name `doc`, so a damaged record, `refs` entry or
    /// index key is an error naming the family and key, never a wrong
    /// answer.
    fn checked_record(&self, at: &Snapshot<'_>, doc: DocKey, id: &str) -> Result<Record> {
        let v = self
            .db
            .get_pinned_cf_opt(self.cf(DOCS), id.as_bytes(), &read_at(at))?;
        let rec = v
            .map(|v| codec::decode_record(&v).map_err(|r| Error::corrupt(DOCS, id.as_bytes(), r)))
            .transpose()?;
        match rec {
            Some(r) if r.doc_key() == doc => Ok(r),
            Some(r) => Err(Error::corrupt(
                DOCS,
                id.as_bytes(),
                format!(
                    "the record has fingerprint {} and sequence number {}, the index {} and {}",
                    r.fingerprint, r.seq, doc.fingerprint, doc.seq
                ),
            )),
            None => Err(Error::corrupt(
                REFS,
                &doc.encode(),
                format!("names id {id:?}, which has no record"),
            )),
        }
    }

    /// The hits of fingerprint `fp` for query `q`: every document with it,
    /// checked against its record, with its similarity to `sketch`.
    fn hits_of(
        &self,
        at: &Snapshot<'_>,
        fp: Fingerprint,
        q: Fingerprint,
        sketch: Option<&Sketch>,
        mut visit: impl FnMut(Hit),
    ) -> Result<()> {
        for (doc, id) in self.docs_with(at, fp)? {
            let r = self.checked_record(at, doc, &id)?;
            visit(Hit {
                similarity: sketch.zip(r.sketch).map(|(a, b)| a.similarity(&b)),
                id,
                fingerprint: doc.fingerprint,
                distance: doc.fingerprint.distance(q),
            });
        }
        Ok(())
    }

    /// Every document with fingerprint `fp`, id and record (checked as a
    /// query checks its hits).
    pub fn documents_with(&self, fp: Fingerprint) -> Result<Vec<(String, Record)>> {
        let at = &self.db.snapshot();
        self.docs_with(at, fp)?
            .into_iter()
            .map(|(doc, id)| {
                let r = self.checked_record(at, doc, &id)?;
                Ok((id, r))
            })
            .collect()
    }

    /// Answers many queries with one pass per family: the queries are sorted
    /// by their block, each bucket that any query needs is scanned once and
    /// every key in it is checked against all queries of that bucket. The
    /// four families are scanned in parallel. Returns, per query, its hits
    /// (unsorted). Pays off when many queries share buckets (large batches:
    /// there are 65,536 buckets per family).
    ///
    /// `sketches`, if given, holds one optional sketch per query: hits of a
    /// query with a sketch carry their similarity (as in [`Store::probe`]).
    pub fn probe_many(
        &self,
        qs: &[(Fingerprint, index::ProbePlan)],
        sketches: Option<&[Option<Sketch>]>,
    ) -> Result<Vec<Vec<Hit>>> {
        for (_, plan) in qs {
            crate::fingerprint::check_k(plan.k)?;
        }
        use rayon::prelude::*;
        let at = &self.db.snapshot();
        // (query index, fingerprint) per family
        let per_family: Vec<Result<Vec<(usize, Fingerprint)>>> = (0..BLOCKS)
            .into_par_iter()
            .map(|i| self.scan_buckets_for(at, i, qs))
            .collect();
        let mut found: Vec<(usize, Fingerprint)> = Vec::new();
        for f in per_family {
            found.extend(f?);
        }
        found.sort_unstable();
        found.dedup();
        let mut out: Vec<Vec<Hit>> = vec![Vec::new(); qs.len()];
        for (qi, fp) in found {
            let sketch = sketches.and_then(|s| s.get(qi)).and_then(Option::as_ref);
            let hits = &mut out[qi];
            self.hits_of(at, fp, qs[qi].0, sketch, |h| hits.push(h))?;
        }
        Ok(out)
    }

    /// One sorted pass over family `i` for all of `qs`: each bucket any
    /// query needs is read once and checked against all of its queries.
    fn scan_buckets_for(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        qs: &[(Fingerprint, index::ProbePlan)],
    ) -> Result<Vec<(usize, Fingerprint)>> {
        let mut order: Vec<(u16, usize)> = qs
            .iter()
            .enumerate()
            .flat_map(|(j, (_, plan))| plan.blocks[i].iter().map(move |&b| (b, j)))
            .collect();
        order.sort_unstable();
        let mut found = Vec::new();
        // Distinct buckets, read a chunk at a time with one multi-get.
        let mut groups: Vec<(u16, std::ops::Range<usize>)> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let block = order[start].0;
            let end = start
                + order[start..]
                    .iter()
                    .take_while(|(b, _)| *b == block)
                    .count();
            groups.push((block, start..end));
            start = end;
        }
        for chunk in groups.chunks(4096) {
            let blocks: Vec<u16> = chunk.iter().map(|g| g.0).collect();
            let mut hits = Vec::new();
            self.read_buckets(at, i, &blocks, |n, posting| {
                for &(_, j) in &order[chunk[n].1.clone()] {
                    hits.clear();
                    qs[j].1.scan_posting(qs[j].0, posting, &mut hits);
                    found.extend(hits.iter().map(|&fp| (j, fp)));
                }
            })?;
        }
        Ok(found)
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

    /// Reads buckets `blocks` (ascending) of family `i` with one multi-get
    /// and calls `on(n, posting)` with the posting of the `n`-th bucket
    /// (whole 8-byte entries, checked; absent buckets are skipped).
    fn read_buckets(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        blocks: &[u16],
        mut on: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        let name = BLOCK_FAMILIES[i];
        let keys: Vec<[u8; index::BUCKET_KEY_LEN]> =
            blocks.iter().map(|&b| index::bucket_key(b)).collect();
        let values = self
            .db
            .batched_multi_get_cf_opt(self.cf(name), &keys, true, &read_at(at));
        for (n, v) in values.into_iter().enumerate() {
            let Some(v) = v? else { continue };
            if !v.len().is_multiple_of(index::ENTRY_LEN) {
                return Err(Error::corrupt(
                    name,
                    &keys[n],
                    "posting is not a whole number of entries",
                ));
            }
            on(n, &v);
        }
        Ok(())
    }

    /// The postings of buckets `lo..=hi` of block family `i`, in order:
    /// `visit(block, posting)` with whole 8-byte entries (checked); buckets
    /// left empty by deletes are skipped.
    pub fn for_each_posting_in(
        &self,
        i: usize,
        lo: u16,
        hi: u16,
        mut visit: impl FnMut(u16, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let name = BLOCK_FAMILIES[i];
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        ro.set_total_order_seek(true);
        if hi < u16::MAX {
            ro.set_iterate_upper_bound(index::bucket_key(hi + 1).to_vec());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
        it.seek(index::bucket_key(lo));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let block = index::decode_bucket_key(k).map_err(|r| Error::corrupt(name, k, r))?;
            if !v.is_empty() {
                if !v.len().is_multiple_of(index::ENTRY_LEN) {
                    return Err(Error::corrupt(
                        name,
                        k,
                        "posting is not a whole number of entries",
                    ));
                }
                visit(block, v)?;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// The posting of bucket `block` of family `i` (whole 8-byte entries,
    /// checked), or `None` if the bucket is empty.
    pub fn posting(&self, i: usize, block: u16) -> Result<Option<Vec<u8>>> {
        let mut out = None;
        self.read_buckets(&self.db.snapshot(), i, &[block], |_, p| {
            out = Some(p.to_vec())
        })?;
        Ok(out.filter(|p| !p.is_empty()))
    }

    /// About `n` documents drawn at random: for each of `n` uniform 64-bit
    /// points, the first `refs` entry at or after it (wrapping around).
    /// Documents after wide gaps between fingerprints are likelier; for
    /// calibration that bias is negligible. Duplicates are removed.
    pub fn sample(&self, n: usize, seed: u64) -> Result<Vec<(DocKey, String)>> {
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
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                it.status()?;
                return Ok(Vec::new()); // empty store
            };
            let doc = DocKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(REFS, k, "document id is not UTF-8"))?;
            out.push((doc, id.to_string()));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The smallest sequence number above every stored document with
    /// fingerprint `fp` (0 if there is none).
    pub fn next_seq(&self, fp: Fingerprint) -> Result<u32> {
        let prefix = fp.value().to_be_bytes();
        let mut last = prefix.to_vec();
        last.extend_from_slice(&u32::MAX.to_be_bytes());
        let mut ro = ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        // Not seek_to_last under an upper bound: that seeks to the bound,
        // whose prefix the bloom filter rightly says is absent.
        it.seek_for_prev(&last);
        let next = match it.key() {
            Some(k) if k.starts_with(&prefix) => {
                let doc = DocKey::decode(k).map_err(|r| Error::corrupt(REFS, k, r))?;
                index::seq_after(fp, doc.seq)?
            }
            _ => 0,
        };
        it.status()?;
        Ok(next)
    }
}
