//! The in-memory index: the writer's overlay of a pending batch, and the tests' model.

use super::*;

/// An in-memory 4-block index, used to see documents of the current ingest
/// run that are not yet in the store, and in tests. Laid out as the store
/// is: buckets of distinct fingerprints, and the ids of each fingerprint
/// in order, so that [`MemIndex::ordered`] costs what it returns, not the
/// number of copies.
#[derive(Debug, Default, Clone)]
pub struct MemIndex {
    by_id: HashMap<String, Fingerprint>,
    by_fp: HashMap<Fingerprint, BTreeSet<String>>,
    /// Distinct fingerprints per bucket, unordered.
    buckets: [HashMap<u16, Vec<Fingerprint>>; BLOCKS],
    /// Sketches of the entries inserted with one.
    sketches: HashMap<String, crate::fingerprint::Sketch>,
    /// The band buckets (see [`bands`]): each fingerprint in those of its
    /// first entry's sketch.
    bands: bands::BandBuckets,
    /// Part hashes of the entries inserted with some.
    parts_of: HashMap<String, Vec<u64>>,
    /// The part buckets (see [`parts`]): each fingerprint in those of its
    /// first entry's parts.
    parts: parts::PartBuckets,
}

impl MemIndex {
    pub fn new() -> MemIndex {
        MemIndex::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Inserts or replaces `id` (without a sketch: it names no band).
    pub fn insert(&mut self, id: &str, fp: Fingerprint) {
        self.insert_sketched(id, fp, None);
    }

    /// Inserts or replaces `id`, with its verification sketch (which names
    /// its fingerprint's band buckets when `id` is the fingerprint's first
    /// entry; see [`bands`]).
    pub fn insert_sketched(
        &mut self,
        id: &str,
        fp: Fingerprint,
        sketch: Option<crate::fingerprint::Sketch>,
    ) {
        self.insert_parted(id, fp, sketch, &[]);
    }

    /// Inserts or replaces `id`, with its sketch and its part hashes
    /// (which name its fingerprint's part buckets when `id` is the
    /// fingerprint's first entry; see [`parts`]).
    pub fn insert_parted(
        &mut self,
        id: &str,
        fp: Fingerprint,
        sketch: Option<crate::fingerprint::Sketch>,
        part_hashes: &[u64],
    ) {
        self.remove(id);
        self.by_id.insert(id.to_string(), fp);
        if let Some(s) = sketch {
            self.sketches.insert(id.to_string(), s);
        }
        if !part_hashes.is_empty() {
            self.parts_of.insert(id.to_string(), part_hashes.to_vec());
        }
        let ids = self.by_fp.entry(fp).or_default();
        if ids.is_empty() {
            for (i, b) in fp.blocks().into_iter().enumerate() {
                self.buckets[i].entry(b).or_default().push(fp);
            }
        }
        ids.insert(id.to_string());
        self.place_bands(fp);
    }

    /// Puts `fp` in the band buckets of its first entry's sketch and the
    /// part buckets of its first entry's parts (none when it has no
    /// entry, or the first has no sketch, no parts).
    pub(super) fn place_bands(&mut self, fp: Fingerprint) {
        if self.sketches.is_empty()
            && self.bands.is_empty()
            && self.parts_of.is_empty()
            && self.parts.is_empty()
        {
            // No entry has a sketch or parts, none is in a bucket of
            // either: the writer's index (ids and fingerprints only) pays
            // nothing here.
            return;
        }
        let first = self.by_fp.get(&fp).and_then(|ids| ids.first());
        let values = first
            .and_then(|first| self.sketches.get(first))
            .map(bands::band_values);
        let parts = first
            .and_then(|first| self.parts_of.get(first))
            .cloned()
            .unwrap_or_default();
        self.bands.set(fp, values);
        self.parts.set(fp, &parts);
    }

    /// The fingerprints in `probe`'s band buckets that it accepts for `q`
    /// (repeats allowed, not capped: see [`bands::BandProbe::band_only`]).
    pub fn band_candidates(&self, q: Fingerprint, probe: &bands::BandProbe) -> Vec<Fingerprint> {
        let mut out = Vec::new();
        self.bands.candidates(q, probe, &mut out);
        out
    }

    /// Whether an entry has fingerprint `fp`.
    pub fn holds_fp(&self, fp: Fingerprint) -> bool {
        self.by_fp.get(&fp).is_some_and(|ids| !ids.is_empty())
    }

    /// The fingerprints in the part bucket of `part` (unordered).
    pub fn part_bucket(&self, part: u64) -> impl Iterator<Item = Fingerprint> + '_ {
        self.parts.bucket(part)
    }

    /// How many fingerprints the part bucket of `part` holds.
    pub fn part_bucket_len(&self, part: u64) -> usize {
        self.parts.bucket_len(part)
    }

    /// The parts of `fp`'s entry (by the first-entry rule; empty: none).
    pub fn part_hashes(&self, fp: Fingerprint) -> &[u64] {
        self.parts.parts(fp)
    }

    /// The band values of `fp`'s entry (by the first-entry rule), if any.
    pub fn band_values(&self, fp: Fingerprint) -> Option<bands::BandValues> {
        self.bands.values(fp)
    }

    /// Removes `id`; returns its fingerprint if it was there.
    pub fn remove(&mut self, id: &str) -> Option<Fingerprint> {
        let fp = self.by_id.remove(id)?;
        self.sketches.remove(id);
        self.parts_of.remove(id);
        self.unlink(fp, id);
        Some(fp)
    }

    pub(super) fn unlink(&mut self, fp: Fingerprint, id: &str) {
        if let Some(ids) = self.by_fp.get_mut(&fp) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_fp.remove(&fp);
                for (i, b) in fp.blocks().into_iter().enumerate() {
                    if let Some(set) = self.buckets[i].get_mut(&b) {
                        if let Some(at) = set.iter().position(|f| *f == fp) {
                            set.swap_remove(at);
                        }
                        if set.is_empty() {
                            self.buckets[i].remove(&b);
                        }
                    }
                }
            }
        }
        self.place_bands(fp);
    }

    /// Whether `id` is present, and its fingerprint.
    pub fn get(&self, id: &str) -> Option<Fingerprint> {
        self.by_id.get(id).copied()
    }

    /// Every entry within `k` (k <= [`MAX_EXACT_K`](crate::fingerprint::MAX_EXACT_K))
    /// of `q`, sorted by distance then id.
    pub fn query(&self, q: Fingerprint, k: u32) -> Vec<Hit> {
        debug_assert!(k <= crate::fingerprint::MAX_EXACT_K);
        self.query_plan(q, &ProbePlan::exact(q, k))
    }

    /// Every entry `plan` accepts for `q`, found by reading the plan's
    /// buckets; sorted by distance then id.
    pub fn query_plan(&self, q: Fingerprint, plan: &ProbePlan) -> Vec<Hit> {
        self.query_banded(q, plan, None)
    }

    /// Every entry `plan` or band probe `probe` accepts for `q` (see
    /// [`bands`]), found by reading their buckets; sorted by distance then
    /// id. Equal to [`bands::brute_force_banded`].
    pub fn query_banded(
        &self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
    ) -> Vec<Hit> {
        self.query_parted(q, plan, probe, None)
    }

    /// Every entry `plan`, band probe `probe` or part probe `part_probe`
    /// accepts for `q` (see [`parts`]), found by reading their buckets;
    /// sorted by distance then id. Equal to [`parts::brute_force_parted`].
    pub fn query_parted(
        &self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
        part_probe: Option<&parts::PartProbe>,
    ) -> Vec<Hit> {
        self.ordered_parted(q, plan, probe, part_probe)
            .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
            .collect()
    }

    /// The entries `plan` accepts for `q`, read from the plan's buckets,
    /// nearest first and by id among equally near ones, one at a time:
    /// taking the first few costs about as much as they are, however many
    /// entries share a fingerprint.
    pub fn ordered<'a>(
        &'a self,
        q: Fingerprint,
        plan: &ProbePlan,
    ) -> impl Iterator<Item = (&'a str, Fingerprint)> + 'a {
        self.ordered_banded(q, plan, None)
    }

    /// [`MemIndex::ordered`] of what `plan` or band probe `probe` accepts.
    pub fn ordered_banded<'a>(
        &'a self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
    ) -> impl Iterator<Item = (&'a str, Fingerprint)> + 'a {
        self.ordered_parted(q, plan, probe, None)
    }

    /// [`MemIndex::ordered`] of what `plan`, band probe `probe` or part
    /// probe `part_probe` accepts.
    pub fn ordered_parted<'a>(
        &'a self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
        part_probe: Option<&parts::PartProbe>,
    ) -> impl Iterator<Item = (&'a str, Fingerprint)> + 'a {
        // Accepted fingerprints by distance; each level is sorted (and
        // repeats dropped) when the walk reaches it.
        let mut levels: Vec<Vec<Fingerprint>> = vec![Vec::new(); 65];
        if let Some(p) = part_probe {
            let mut named = Vec::new();
            self.parts.candidates(p, &mut named);
            for fp in named {
                levels[fp.distance(q) as usize].push(fp);
            }
        }
        if let Some(p) = probe {
            for fp in p.band_only(q, plan, self.band_candidates(q, p)) {
                levels[fp.distance(q) as usize].push(fp);
            }
        }
        for (i, bs) in plan.blocks.iter().enumerate() {
            for b in bs {
                if let Some(set) = self.buckets[i].get(b) {
                    for fp in set {
                        if plan.accepts(q, *fp) {
                            levels[fp.distance(q) as usize].push(*fp);
                        }
                    }
                }
            }
        }
        let mut levels = levels.into_iter().filter(|l| !l.is_empty());
        // The current distance level: a merge of its fingerprints' ids.
        let mut level: std::collections::BinaryHeap<std::cmp::Reverse<(&'a str, usize)>> =
            Default::default();
        let mut iters: Vec<(Fingerprint, std::collections::btree_set::Iter<'a, String>)> =
            Vec::new();
        std::iter::from_fn(move || loop {
            if let Some(std::cmp::Reverse((id, n))) = level.pop() {
                let (fp, it) = &mut iters[n];
                let fp = *fp;
                if let Some(next) = it.next() {
                    level.push(std::cmp::Reverse((next.as_str(), n)));
                }
                return Some((id, fp));
            }
            let mut fps = levels.next()?;
            fps.sort_unstable();
            fps.dedup();
            iters.clear();
            for fp in fps {
                if let Some(ids) = self.by_fp.get(&fp) {
                    let mut it = ids.iter();
                    if let Some(first) = it.next() {
                        level.push(std::cmp::Reverse((first.as_str(), iters.len())));
                        iters.push((fp, it));
                    }
                }
            }
        })
    }

    /// The entries with fingerprint `fp`, in id order.
    pub fn exact(&self, fp: Fingerprint) -> impl Iterator<Item = (&str, Fingerprint)> {
        self.by_fp
            .get(&fp)
            .into_iter()
            .flatten()
            .map(move |id| (id.as_str(), fp))
    }

    /// Entries, in fingerprint then id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Fingerprint)> {
        let mut fps: Vec<&Fingerprint> = self.by_fp.keys().collect();
        fps.sort_unstable();
        fps.into_iter()
            .flat_map(move |fp| self.by_fp[fp].iter().map(move |id| (id.as_str(), *fp)))
    }
}
