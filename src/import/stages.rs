//! The build of a new store: the sorted passes, the families written as table files, the restored clusters.

use super::*;

use crate::index::frozen::FrozenWriter;

/// Where a build's temporary and table files go, and its memory budget.
pub(super) struct Build<'a> {
    pub(super) tmp: PathBuf,
    pub(super) sst: PathBuf,
    pub(super) budget: usize,
    pub(super) opts: &'a Options,
}

/// Builds the store of `inputs` in `staging`, in five steps, each one
/// sorted pass over files (never the whole input in memory), and renames it
/// into place.
pub(super) fn build(
    staging: store::Staging,
    inputs: &[PathBuf],
    opts: &Options,
    restore: Option<KeepPolicy>,
    on_event: &mut impl FnMut(Event),
) -> Result<Summary> {
    let b = Build {
        tmp: staging.subdir("tmp")?,
        sst: staging.subdir("sst")?,
        budget: opts.memory_bytes,
        opts,
    };
    // What the decision log (a restored export's) leaves standing; a bad
    // log stops the import before any work.
    let standing = crate::db::decisions::standing(&opts.decisions)?;
    let mut summary = Summary::default();
    let mut step = Instant::now();
    let mut lap = |summary: &mut Summary, name: &str| {
        summary
            .step_seconds
            .push((name.to_string(), step.elapsed().as_secs_f64()));
        step = Instant::now();
    };
    on_event(Event::Step("read"));
    let by_id = b.read_by_id(inputs, restore.is_some(), &mut summary, on_event)?;
    lap(&mut summary, "read and sort by id");
    on_event(Event::Step("dedup"));
    let (uniq_path, by_fp) = b.keep_last(by_id, &mut summary)?;
    lap(&mut summary, "keep last of each id, sort by fingerprint");
    on_event(Event::Step("refs"));
    let (fps_path, bands_path, refs_files, part_files) = b.write_refs(by_fp, &mut summary)?;
    lap(&mut summary, "write refs and the distinct fingerprints");
    on_event(Event::Step("docs"));
    let now = crate::db::now();
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    // The frozen index, written as the posting families are (blocks, then
    // bands: its family order).
    let frozen_path = b.tmp.join("frozen.idx");
    let mut frozen = if opts.freeze {
        let f = File::create(&frozen_path).map_err(io_err(&b.tmp))?;
        let w = BufWriter::with_capacity(1 << 20, f);
        Some(FrozenWriter::new(w, store::POSTING_FAMILIES, 1).map_err(io_err(&b.tmp))?)
    } else {
        None
    };
    let (docs, blocks) = rayon::join(
        || b.write_docs(&uniq_path, &names, now, restore, &standing.kept),
        || b.write_blocks(&fps_path, frozen.as_mut()),
    );
    let (docs_files, order_files, mut restoration) = docs?;
    let block_files = blocks?;
    lap(
        &mut summary,
        "write docs, the ingest order and the four block families",
    );
    let band_files = b.write_bands(&bands_path, frozen.as_mut())?;
    if let Some(w) = frozen {
        let (bw, _) = w.finish().map_err(io_err(&b.tmp))?;
        bw.into_inner()
            .map_err(|e| Error::io(&b.tmp, e.into_error()))?;
    }
    lap(&mut summary, "write the sixteen band families");

    // Step 5: a fresh store in the staging directory, then one rename.
    on_event(Event::Step("ingest"));
    let mut families = vec![
        (store::REFS, refs_files),
        (store::DOCS, docs_files),
        (store::CLUSTERS, order_files),
    ];
    for (i, files) in block_files.into_iter().enumerate() {
        families.push((store::BLOCK_FAMILIES[i], files));
    }
    for (j, files) in band_files.into_iter().enumerate() {
        families.push((store::BAND_FAMILIES[j], files));
    }
    families.push((store::PARTS, part_files));
    families.push((store::TEXTS, std::mem::take(&mut restoration.texts)));
    families.push((
        store::DECISIONS,
        decision_ssts_in(&b.sst, opts.sst_file_bytes, &opts.decisions, &standing)?,
    ));
    let count = store::schema::MetaU64::DocCount.owned_entry(summary.documents);
    // Positions count records from 1; the documents are stamped `now`
    // (restored ones keep their ords and times).
    let (next_ord, clock) = match restore {
        Some(_) => (restoration.next_ord.max(1), restoration.clock),
        None => (summary.records + 1, now),
    };
    let next_ord = store::schema::MetaU64::NextOrd.owned_entry(next_ord);
    let clock = store::schema::MetaU64::Clock.owned_entry(clock);
    let short = store::schema::MetaU64::ShortCount.owned_entry(restoration.short);
    // A restored store keeps the policy its clusters were ranked by.
    let (k, v) = store::schema::keep_policy_entry(restore.unwrap_or_default());
    let keep = (k.to_vec(), v.to_vec());
    let mut meta = vec![count, next_ord, clock, short, keep];
    if opts.keep_texts {
        meta.push((store::KEEP_TEXTS_KEY.to_vec(), b"1".to_vec()));
    }
    staging.finish(
        &opts.recipe,
        opts.tuning,
        &families,
        &meta,
        opts.freeze.then_some(frozen_path.as_path()),
    )?;
    summary.clusters = restoration.clusters;
    summary.restored = restore.is_some();
    lap(&mut summary, "ingest and rename");
    Ok(summary)
}

impl Build<'_> {
    /// Step 1: reads every input and sorts its records by (id, position).
    pub(super) fn read_by_id(
        &self,
        inputs: &[PathBuf],
        restore: bool,
        summary: &mut Summary,
        on_event: &mut impl FnMut(Event),
    ) -> Result<Sorted<ById>> {
        let tmp = &self.tmp;
        let mut by_id = Sorter::<ById>::new(tmp, "by-id", self.budget);
        let mut pos = 0u64;
        let rule = crate::db::rule::Rule::of(&self.opts.recipe).digest();
        for (input, path) in inputs.iter().enumerate() {
            summary.no_fingerprint += read_input(path, restore, rule, |p| {
                pos += 1;
                if pos.is_multiple_of(1 << 20) {
                    on_event(Event::Read(pos));
                }
                by_id
                    .push(ById {
                        id: p.id,
                        pos,
                        fp: p.fp.value(),
                        input: input as u32,
                        line: p.line,
                        sketch: p.sketch,
                        extra: p.restored.map(|r| r.encode()).unwrap_or_default(),
                        analysed: p.analysed,
                        stated: p.stated,
                    })
                    .map_err(io_err(tmp))
            })?;
        }
        summary.records = pos;
        by_id.finish().map_err(io_err(tmp))
    }

    /// Step 2: keeps the last record of each id, writing the kept records in id
    /// order to a file (for step 4) and sorting them by (fingerprint, id).
    pub(super) fn keep_last(
        &self,
        by_id: Sorted<ById>,
        summary: &mut Summary,
    ) -> Result<(PathBuf, Sorted<ByFp>)> {
        let tmp = &self.tmp;
        let uniq_path = tmp.join("uniq.bin");
        let mut uniq =
            BufWriter::with_capacity(1 << 20, File::create(&uniq_path).map_err(io_err(tmp))?);
        let mut by_fp = Sorter::<ByFp>::new(tmp, "by-fp", self.budget);
        let mut pending: Option<ById> = None;
        let mut keep = |r: ById, by_fp: &mut Sorter<ByFp>| -> io::Result<()> {
            r.write_to(&mut uniq)?;
            let (sketch, parts) = match r.extra.is_empty() {
                true => (
                    r.sketch,
                    r.analysed
                        .as_ref()
                        .map(|a| a.parts.clone())
                        .unwrap_or_default(),
                ),
                false => {
                    let (sketch, parts, _) =
                        Restored::refs_of(&r.extra).map_err(io::Error::other)?;
                    (sketch, parts)
                }
            };
            by_fp.push(ByFp {
                fp: r.fp,
                id: r.id,
                sketch,
                parts,
            })
        };
        for r in by_id {
            let r = r.map_err(io_err(tmp))?;
            if let Some(p) = pending.take() {
                if p.id == r.id {
                    summary.replaced += 1;
                } else {
                    keep(p, &mut by_fp).map_err(io_err(tmp))?;
                }
            }
            pending = Some(r);
        }
        if let Some(p) = pending.take() {
            keep(p, &mut by_fp).map_err(io_err(tmp))?;
        }
        uniq.into_inner()
            .map_err(|e| e.into_error())
            .map_err(io_err(tmp))?;
        Ok((uniq_path, by_fp.finish().map_err(io_err(tmp))?))
    }

    /// Step 3: numbers documents sharing a fingerprint; writes `refs` (in
    /// fingerprint order, a chunk of table files at a time), the file of
    /// distinct fingerprints for the block families, and the `parts` keys
    /// of each fingerprint's first document (restored records' parts).
    pub(super) fn write_refs(
        &self,
        by_fp: Sorted<ByFp>,
        summary: &mut Summary,
    ) -> Result<(PathBuf, PathBuf, Vec<PathBuf>, Vec<PathBuf>)> {
        let tmp = &self.tmp;
        let fps_path = tmp.join("fps.bin");
        let mut fps =
            BufWriter::with_capacity(1 << 20, File::create(&fps_path).map_err(io_err(tmp))?);
        // Each distinct fingerprint whose first document (smallest id)
        // has a sketch, with that sketch: its band buckets.
        let bands_path = tmp.join("bands.bin");
        let mut bands =
            BufWriter::with_capacity(1 << 20, File::create(&bands_path).map_err(io_err(tmp))?);
        let mut refs_entries: Vec<RefsEntry> = Vec::new();
        let mut refs_files = Vec::new();
        let mut last: Option<u64> = None;
        let flush_chunk =
            |entries: &mut Vec<RefsEntry>, refs_files: &mut Vec<PathBuf>| -> Result<()> {
                if entries.is_empty() {
                    return Ok(());
                }
                let n = refs_files.len();
                let chunk = std::mem::take(entries);
                refs_files.extend(store::write_ssts(
                    &self.sst,
                    &format!("{}-{n:05}", store::REFS),
                    store::REFS,
                    u64::MAX,
                    chunk
                        .iter()
                        .map(|(fp, id, v)| Ok(store::schema::refs_entry(*fp, id, v))),
                )?);
                Ok(())
            };
        // The input is in (fingerprint, id) order, the order of refs keys.
        let chunk_docs = (self.opts.sst_file_bytes / 128).max(1024) as usize;
        let mut part_keys = Sorter::<u128>::new(tmp, "parts", self.budget / 2);
        for r in by_fp {
            let r = r.map_err(io_err(tmp))?;
            let value = r.refs_value();
            let ByFp { fp, id, sketch, .. } = r;
            summary.documents += 1;
            if last == Some(fp) {
                summary.shared_fingerprints += 1;
            } else {
                fps.write_all(&fp.to_be_bytes()).map_err(io_err(tmp))?;
                if let Some(s) = &sketch {
                    bands.write_all(&fp.to_be_bytes()).map_err(io_err(tmp))?;
                    bands.write_all(s).map_err(io_err(tmp))?;
                }
                for p in value.parts.as_slice() {
                    part_keys
                        .push(u128::from(*p) << 64 | u128::from(fp))
                        .map_err(io_err(tmp))?;
                }
                last = Some(fp);
            }
            refs_entries.push((Fingerprint(fp), id, value));
            if refs_entries.len() >= chunk_docs {
                flush_chunk(&mut refs_entries, &mut refs_files)?;
            }
        }
        flush_chunk(&mut refs_entries, &mut refs_files)?;
        for w in [fps, bands] {
            w.into_inner()
                .map_err(|e| e.into_error())
                .map_err(io_err(tmp))?;
        }
        let part_files = self.write_part_keys(part_keys)?;
        Ok((fps_path, bands_path, refs_files, part_files))
    }

    /// The `parts` family's table files from its keys (part ‖
    /// fingerprint as a u128), sorted here.
    fn write_part_keys(&self, keys: Sorter<u128>) -> Result<Vec<PathBuf>> {
        let tmp = &self.tmp;
        let sorted = keys.finish().map_err(io_err(tmp))?;
        store::write_ssts(
            &self.sst,
            store::PARTS,
            store::PARTS,
            self.opts.sst_file_bytes,
            sorted.map(|k| {
                k.map(|k| {
                    let key = store::schema::part_key((k >> 64) as u64, Fingerprint(k as u64));
                    (key.to_vec(), Vec::new())
                })
                .map_err(|e| Error::io(tmp, e))
            }),
        )
    }

    /// Step 4a: `docs` in id order from the kept records, the ingest order
    /// index and (restoring) the clusters: their table files, and what the
    /// restore found.
    pub(super) fn write_docs(
        &self,
        uniq_path: &Path,
        names: &[String],
        now: u64,
        restore: Option<KeepPolicy>,
        kept: &std::collections::BTreeMap<String, u64>,
    ) -> Result<(Vec<PathBuf>, Vec<PathBuf>, Restoration)> {
        let (tmp, sst, opts) = (&self.tmp, &self.sst, self.opts);
        let mut r = BufReader::with_capacity(1 << 20, File::open(uniq_path).map_err(io_err(tmp))?);
        // The ingest order index, sorted by ord (the input position, or the
        // restored record's).
        let mut order = Sorter::<ByOrd>::new(tmp, "order", self.budget / 4);
        // Restore: every member by (cluster, rank).
        let mut clusters = Sorter::<ByCluster>::new(tmp, "clusters", self.budget / 4);
        // Restore: the time index (documents with their own time).
        let mut times = Sorter::<ByTime>::new(tmp, "times", self.budget / 8);
        let mut done = Restoration::default();
        // Restore: the kept texts, in id order as the records come.
        let mut texts = TextsFile::create(tmp, opts.keep_texts)?;
        let entries = std::iter::from_fn(|| match ById::read_from(&mut r) {
            Err(e) => Some(Err(Error::io(uniq_path, e))),
            Ok(None) => None,
            Ok(Some(d)) => {
                // A document the log keeps is kept (it ranks first).
                let kept = kept.get(&d.id).copied();
                let rec = if d.extra.is_empty() {
                    Record {
                        kept,
                        ..imported_record(&d, &names[d.input as usize], now)
                    }
                } else {
                    let mut restored = match Restored::decode(&d.extra) {
                        Ok(x) => x,
                        Err(e) => return Some(Err(Error::Input(e))),
                    };
                    restored.rec.kept = kept;
                    let keep = restore.unwrap_or_default();
                    let sorters = (&mut clusters, &mut times, &mut texts);
                    match done.note(restored, &d.id, keep, sorters) {
                        Ok(rec) => rec,
                        Err(e) => return Some(Err(Error::io(tmp, e))),
                    }
                };
                if let Err(e) = order.push(ByOrd {
                    ord: rec.ord,
                    id: d.id.clone(),
                }) {
                    return Some(Err(Error::io(tmp, e)));
                }
                Some(Ok(store::schema::docs_entry(&d.id, &rec)))
            }
        });
        let docs = store::write_ssts(sst, store::DOCS, store::DOCS, opts.sst_file_bytes, entries)?;
        done.texts = texts.finish(tmp, sst, opts)?;
        let sorted = order.finish().map_err(io_err(tmp))?;
        let mut cluster_files = order_index(tmp, sst, opts, sorted)?;
        if restore.is_some() {
            let sorted = clusters.finish().map_err(io_err(tmp))?;
            cluster_files.extend(restored_clusters(tmp, sst, opts, sorted, &mut done)?);
            // `t` keys sort after the `d`, `m` and `s` keys.
            let sorted = times.finish().map_err(io_err(tmp))?;
            cluster_files.extend(time_index(tmp, sst, opts, sorted)?);
        }
        Ok((docs, cluster_files, done))
    }

    /// Step 4b: the four block families from the file of distinct fingerprints
    /// (block 0 in its order, blocks 1..3 each from its own sort).
    pub(super) fn write_blocks(
        &self,
        fps_path: &Path,
        mut frozen: Option<&mut Frozen>,
    ) -> Result<Vec<Vec<PathBuf>>> {
        let tmp = &self.tmp;
        let mut out = Vec::new();
        for i in 0..crate::fingerprint::BLOCKS {
            // Fingerprints in (block i, fingerprint) order: the file is
            // already in fingerprint order, which is block 0's.
            let mut r =
                BufReader::with_capacity(1 << 20, File::open(fps_path).map_err(io_err(tmp))?);
            let mut read_fp = move || -> io::Result<Option<Fingerprint>> {
                Ok(read_array::<8>(&mut r)?.map(|b| {
                    let mut f = [0u8; 8];
                    f.copy_from_slice(&b[..8]);
                    Fingerprint(u64::from_be_bytes(f))
                }))
            };
            let sorted: Box<dyn Iterator<Item = io::Result<Fingerprint>>> = if i == 0 {
                Box::new(std::iter::from_fn(move || read_fp().transpose()))
            } else {
                let mut sorter = Sorter::<u128>::new(tmp, &format!("block{i}"), self.budget / 2);
                while let Some(fp) = read_fp().map_err(io_err(tmp))? {
                    sorter
                        .push((fp.block(i) as u128) << 64 | fp.value() as u128)
                        .map_err(io_err(tmp))?;
                }
                let sorted = sorter.finish().map_err(io_err(tmp))?;
                Box::new(sorted.map(|k| k.map(|k| Fingerprint(k as u64))))
            };
            let name = store::BLOCK_FAMILIES[i];
            let mut tee = FrozenTee::begin(frozen.as_deref_mut(), tmp);
            out.push(store::write_ssts(
                &self.sst,
                name,
                name,
                self.opts.sst_file_bytes,
                postings(
                    i,
                    sorted.map(|r| r.map_err(|e| Error::io(tmp, e))),
                    &mut |b, fps| tee.bucket(b, fps),
                ),
            )?);
            tee.end()?;
        }
        Ok(out)
    }
}

impl Build<'_> {
    /// Step 4c: the sixteen band families from the file of (fingerprint,
    /// first document's sketch), each from its own sort by (band value,
    /// fingerprint). Nothing to do (and no sort) when no document has a
    /// sketch.
    pub(super) fn write_bands(
        &self,
        bands_path: &Path,
        mut frozen: Option<&mut Frozen>,
    ) -> Result<Vec<Vec<PathBuf>>> {
        let tmp = &self.tmp;
        let empty = std::fs::metadata(bands_path).map_err(io_err(tmp))?.len() == 0;
        let mut out = Vec::new();
        for j in 0..BANDS {
            let mut tee = FrozenTee::begin(frozen.as_deref_mut(), tmp);
            if empty {
                out.push(Vec::new());
                tee.end()?;
                continue;
            }
            let mut r =
                BufReader::with_capacity(1 << 20, File::open(bands_path).map_err(io_err(tmp))?);
            let mut sorter = Sorter::<u128>::new(tmp, &format!("band{j}"), self.budget / 2);
            while let Some(fp) = read_array::<8>(&mut r).map_err(io_err(tmp))? {
                let s = read_array::<SKETCH_BYTES>(&mut r)
                    .map_err(io_err(tmp))?
                    .ok_or_else(|| Error::io(tmp, io::Error::other("bands file truncated")))?;
                let value = band_value(&crate::fingerprint::Sketch(s), j);
                sorter
                    .push((value as u128) << 64 | u64::from_be_bytes(fp) as u128)
                    .map_err(io_err(tmp))?;
            }
            let sorted = sorter.finish().map_err(io_err(tmp))?;
            let name = store::BAND_FAMILIES[j];
            out.push(store::write_ssts(
                &self.sst,
                name,
                name,
                self.opts.sst_file_bytes,
                postings_by(
                    sorted.map(|k| {
                        k.map(|k| ((k >> 64) as u16, Fingerprint(k as u64)))
                            .map_err(|e| Error::io(tmp, e))
                    }),
                    &mut |b, fps| tee.bucket(b, fps),
                ),
            )?);
            tee.end()?;
        }
        Ok(out)
    }
}

/// The record of an imported fingerprint (not a restored export): stamped
/// `now`, its ord the input position (the earliest read is the earliest
/// ingested, as ingest would number them), its source `input:line`.
pub(super) fn imported_record(d: &ById, input: &str, now: u64) -> Record {
    let fp = Fingerprint(d.fp);
    let content = Content::Fingerprint(fp);
    let a = d.analysed.as_ref();
    Record {
        fingerprint: fp,
        content_hash: a
            .and_then(|a| a.content_hash)
            .unwrap_or_else(|| content.hash()),
        length: a.map_or(content.len(), |a| a.length),
        ingested_at: now,
        source: format!("{input}:{}", d.line),
        terms: a.map_or(0, |a| a.terms),
        sketch: d.sketch.map(crate::fingerprint::Sketch),
        top_terms: Vec::new(),
        weak_bits: a.map(|a| a.weak_bits.clone()).unwrap_or_default(),
        ord: d.pos,
        priority: d.stated.priority,
        dated: d.stated.dated,
        // An engine's analysis of the text (only beside a sketch, as the
        // `refs` value keeps them).
        parts: match (a, d.sketch) {
            (Some(a), Some(_)) => a.parts.clone(),
            _ => Vec::new(),
        },
        kept: None,
        fine: match (a, d.sketch) {
            (Some(a), Some(_)) => a.fine,
            _ => None,
        },
    }
}

/// What a restore found besides the records.
#[derive(Default)]
pub(super) struct Restoration {
    pub(super) next_ord: u64,
    pub(super) clock: u64,
    pub(super) short: u64,
    pub(super) clusters: u64,
    /// The `texts` family's table files (an export of a store that keeps
    /// texts).
    pub(super) texts: Vec<PathBuf>,
}

/// The `decisions` family's table files of decision log `log` (oldest
/// first): its entries, and the "keep this one" documents and "not a
/// copy" pairs that stand at its end (`standing`).
pub(super) fn decision_ssts_in(
    sst: &Path,
    file_bytes: u64,
    log: &[store::codec::Decision],
    standing: &crate::db::decisions::Standing,
) -> Result<Vec<PathBuf>> {
    let mut pairs: std::collections::BTreeMap<Vec<u8>, u64> = Default::default();
    for ((x, y), seq) in &standing.pairs {
        pairs.insert(store::schema::veto_key(x, y), *seq);
        pairs.insert(store::schema::veto_key(y, x), *seq);
    }
    // In key order: `k` < `l` < `n`.
    let kept = standing
        .kept
        .iter()
        .map(|(id, seq)| (store::schema::keep_key(id), seq.to_be_bytes().to_vec()));
    let entries = log.iter().map(|d| {
        (
            store::schema::decision_log_key(d.seq).to_vec(),
            store::codec::encode_decision(d),
        )
    });
    let pairs = pairs
        .into_iter()
        .map(|(k, s)| (k, s.to_be_bytes().to_vec()));
    store::write_ssts(
        sst,
        "decisions",
        store::DECISIONS,
        file_bytes,
        kept.chain(entries).chain(pairs).map(Ok),
    )
}

/// The restore's file of kept texts, in id order: for each, the id
/// ([`write_str`]), the text's length (u32 BE) and its bytes. Texts are
/// kept only when the new store keeps them.
pub(super) struct TextsFile {
    path: PathBuf,
    w: BufWriter<File>,
    keep: bool,
}

impl TextsFile {
    fn create(tmp: &Path, keep: bool) -> Result<TextsFile> {
        let path = tmp.join("texts");
        let f = File::create(&path).map_err(io_err(tmp))?;
        Ok(TextsFile {
            path,
            w: BufWriter::with_capacity(1 << 20, f),
            keep,
        })
    }

    fn put(&mut self, id: &str, text: &str) -> io::Result<()> {
        if !self.keep {
            return Ok(());
        }
        write_str(&mut self.w, id)?;
        let n = u32::try_from(text.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a text of 4 GiB or more"))?;
        self.w.write_all(&n.to_be_bytes())?;
        self.w.write_all(text.as_bytes())
    }

    /// The `texts` family's table files.
    fn finish(mut self, tmp: &Path, sst: &Path, opts: &Options) -> Result<Vec<PathBuf>> {
        self.w.flush().map_err(io_err(tmp))?;
        drop(self.w);
        let path = self.path;
        let mut r = BufReader::with_capacity(1 << 20, File::open(&path).map_err(io_err(tmp))?);
        let mut next = move || -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
            if r.fill_buf()?.is_empty() {
                return Ok(None);
            }
            let id = read_str(&mut r)?;
            let mut n = [0u8; 4];
            r.read_exact(&mut n)?;
            let mut text = vec![0u8; u32::from_be_bytes(n) as usize];
            r.read_exact(&mut text)?;
            Ok(Some((id.into_bytes(), text)))
        };
        let entries = std::iter::from_fn(|| next().map_err(|e| Error::io(&path, e)).transpose());
        store::write_ssts(sst, "texts", store::TEXTS, opts.sst_file_bytes, entries)
    }
}

impl Restoration {
    /// Notes a restored record (what it sets of the store's counters, its
    /// place in its cluster and in the time index) and returns it.
    fn note(
        &mut self,
        restored: Restored,
        id: &str,
        keep: KeepPolicy,
        (clusters, times, texts): (&mut Sorter<ByCluster>, &mut Sorter<ByTime>, &mut TextsFile),
    ) -> io::Result<Record> {
        if let Some(t) = &restored.text {
            texts.put(id, t)?;
        }
        let rec = restored.rec;
        self.next_ord = self.next_ord.max(rec.ord + 1);
        self.clock = self.clock.max(rec.ingested_at);
        self.short += u64::from(rec.is_short());
        if let Some(time) = rec.dated {
            times.push(ByTime {
                time,
                ord: rec.ord,
                id: id.to_string(),
            })?;
        }
        clusters.push(ByCluster {
            cid: restored.cluster,
            rank: store::schema::Rank::of(&rec, keep).to_bytes(),
            id: id.to_string(),
        })?;
        Ok(rec)
    }
}

/// The `clusters` family's `o` entries, from the documents in ord order,
/// as SST files; two documents of one ord (inputs that are not the export
/// of one store) are an error.
fn order_index(
    tmp: &Path,
    sst: &Path,
    opts: &Options,
    sorted: impl Iterator<Item = io::Result<ByOrd>>,
) -> Result<Vec<PathBuf>> {
    let mut last_ord: Option<u64> = None;
    store::write_ssts(
        sst,
        "order",
        store::CLUSTERS,
        opts.sst_file_bytes,
        sorted.map(|o| {
            let o = o.map_err(|e| Error::io(tmp, e))?;
            // Restored ords come from one store: each once.
            if last_ord == Some(o.ord) {
                return Err(Error::Input(format!(
                    "two documents have ord {} (the second is {:?}): the inputs are not \
                     the export of one store",
                    o.ord, o.id
                )));
            }
            last_ord = Some(o.ord);
            let (k, v) = store::schema::order_entry(o.ord, &o.id);
            Ok((k.to_vec(), v))
        }),
    )
}

/// The `clusters` family's `t` entries of the restored documents with
/// their own time, from them in (time, ord) order, as SST files.
fn time_index(
    tmp: &Path,
    sst: &Path,
    opts: &Options,
    sorted: impl Iterator<Item = io::Result<ByTime>>,
) -> Result<Vec<PathBuf>> {
    store::write_ssts(
        sst,
        "times",
        store::CLUSTERS,
        opts.sst_file_bytes,
        sorted.map(|t| {
            let t = t.map_err(|e| Error::io(tmp, e))?;
            let (k, v) = store::schema::time_entry(t.time, t.ord, &t.id);
            Ok((k.to_vec(), v))
        }),
    )
}

/// The `clusters` family's `m`, `s` and `d` entries of restored clusters
/// of two or more members, from the members in (cluster, rank) order, as
/// SST files (in key order: `d` < `m` < `s`, each its own files).
pub(super) fn restored_clusters(
    tmp: &Path,
    sst: &Path,
    opts: &Options,
    sorted: impl Iterator<Item = io::Result<ByCluster>>,
    done: &mut Restoration,
) -> Result<Vec<PathBuf>> {
    use store::schema::{member_entry, membership_entry, size_entry, Rank};
    let budget = opts.memory_bytes;
    let sizes_path = tmp.join("sizes.bin");
    let mut sizes =
        BufWriter::with_capacity(1 << 20, File::create(&sizes_path).map_err(io_err(tmp))?);
    let mut member_of = Sorter::<Membership>::new(tmp, "membership", budget / 4);
    let mut sorted = sorted.peekable();
    let mut ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
    let mut failed: Option<Error> = None;
    let members = std::iter::from_fn(|| loop {
        if let Some(e) = ready.pop_front() {
            return Some(Ok(e));
        }
        if let Some(e) = failed.take() {
            return Some(Err(e));
        }
        let first = match sorted.next()? {
            Ok(m) => m,
            Err(e) => return Some(Err(Error::io(tmp, e))),
        };
        let mut group = vec![first];
        while let Some(Ok(next)) = sorted.peek() {
            if next.cid != group[0].cid {
                break;
            }
            match sorted.next() {
                Some(Ok(m)) => group.push(m),
                _ => break,
            }
        }
        if group.len() < 2 {
            continue;
        }
        let cid = group[0].cid;
        let n = group.len() as u64;
        done.clusters += 1;
        let wrote = sizes
            .write_all(&cid.to_be_bytes())
            .and_then(|()| sizes.write_all(&n.to_be_bytes()));
        if let Err(e) = wrote {
            return Some(Err(Error::io(tmp, e)));
        }
        for m in group {
            let rank = Rank {
                priority_key: u64::from_be_bytes(m.rank[..8].try_into().unwrap_or([0; 8])),
                ord: u64::from_be_bytes(m.rank[8..].try_into().unwrap_or([0; 8])),
            };
            if let Err(e) = member_of.push(Membership {
                id: m.id.clone(),
                cid,
            }) {
                failed = Some(Error::io(tmp, e));
            }
            let (k, v) = member_entry(cid, rank, &m.id);
            ready.push_back((k.to_vec(), v));
        }
    });
    let mut files = store::write_ssts(
        sst,
        "members",
        store::CLUSTERS,
        opts.sst_file_bytes,
        members,
    )?;
    sizes
        .into_inner()
        .map_err(|e| e.into_error())
        .map_err(io_err(tmp))?;
    let mut r = BufReader::with_capacity(1 << 20, File::open(&sizes_path).map_err(io_err(tmp))?);
    let size_entries = std::iter::from_fn(move || {
        let cid = match read_array::<8>(&mut r) {
            Ok(Some(b)) => u64::from_be_bytes(b),
            Ok(None) => return None,
            Err(e) => return Some(Err(Error::io(tmp, e))),
        };
        match read_array::<8>(&mut r) {
            Ok(Some(n)) => {
                let (k, v) = size_entry(cid, u64::from_be_bytes(n));
                Some(Ok((k.to_vec(), v.to_vec())))
            }
            Ok(None) => Some(Err(Error::io(tmp, io::ErrorKind::UnexpectedEof.into()))),
            Err(e) => Some(Err(Error::io(tmp, e))),
        }
    });
    files.extend(store::write_ssts(
        sst,
        "sizes",
        store::CLUSTERS,
        opts.sst_file_bytes,
        size_entries,
    )?);
    let sorted = member_of.finish().map_err(io_err(tmp))?;
    files.extend(store::write_ssts(
        sst,
        "membership",
        store::CLUSTERS,
        opts.sst_file_bytes,
        sorted.map(|m| {
            let m = m.map_err(|e| Error::io(tmp, e))?;
            let (k, v) = membership_entry(&m.id, m.cid);
            Ok((k, v.to_vec()))
        }),
    )?);
    Ok(files)
}

/// The (key, value) entries of block family `i` from distinct
/// fingerprints in (block i, fingerprint) order: per bucket, its head and,
/// beyond [`index::SEGMENT_ENTRIES`] fingerprints, sealed segments of that
/// many each (the head keeps the rest and their number).
pub(super) fn postings<'a>(
    i: usize,
    sorted: impl Iterator<Item = Result<Fingerprint>> + 'a,
    tee: &'a mut Tee<'a>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 'a {
    postings_by(sorted.map(move |r| r.map(|fp| (fp.block(i), fp))), tee)
}

/// What [`postings_by`] calls with each bucket it groups.
pub(super) type Tee<'a> = dyn FnMut(u16, &[Fingerprint]) -> Result<()> + 'a;

/// The frozen index an import writes, if it writes one.
pub(super) type Frozen = FrozenWriter<BufWriter<File>>;

/// One family of the frozen index, written bucket by bucket as
/// [`postings_by`] groups them (nothing without a frozen index).
pub(super) struct FrozenTee<'f> {
    w: Option<&'f mut Frozen>,
    tmp: &'f Path,
}

impl<'f> FrozenTee<'f> {
    pub(super) fn begin(w: Option<&'f mut Frozen>, tmp: &'f Path) -> FrozenTee<'f> {
        let mut t = FrozenTee { w, tmp };
        if let Some(w) = t.w.as_deref_mut() {
            w.begin_family();
        }
        t
    }

    pub(super) fn bucket(&mut self, b: u16, fps: &[Fingerprint]) -> Result<()> {
        match self.w.as_deref_mut() {
            Some(w) => w.bucket(b, fps).map_err(io_err(self.tmp)),
            None => Ok(()),
        }
    }

    pub(super) fn end(self) -> Result<()> {
        match self.w {
            Some(w) => w.end_family().map_err(io_err(self.tmp)),
            None => Ok(()),
        }
    }
}

/// [`postings`] of (bucket, fingerprint) pairs in that order (a band
/// family's bucket is not a block of the fingerprint).
pub(super) fn postings_by<'a>(
    sorted: impl Iterator<Item = Result<(u16, Fingerprint)>> + 'a,
    tee: &'a mut Tee<'a>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 'a {
    let mut sorted = sorted.peekable();
    let mut ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
    std::iter::from_fn(move || {
        if let Some(e) = ready.pop_front() {
            return Some(Ok(e));
        }
        let (block, first) = match sorted.next()? {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        let mut group = vec![first];
        while let Some(Ok((b, fp))) = sorted.peek() {
            if *b != block {
                break;
            }
            // Block 1..3 come from a sort of every document's
            // fingerprint: shared ones repeat.
            if group.last() != Some(fp) {
                group.push(*fp);
            }
            sorted.next();
        }
        if let Err(e) = tee(block, &group) {
            return Some(Err(e));
        }
        let sealed = group.len() / index::SEGMENT_ENTRIES;
        let (full, rest) = group.split_at(sealed * index::SEGMENT_ENTRIES);
        ready.push_back((
            index::bucket_key(block).to_vec(),
            index::encode_head(rest, sealed as u32),
        ));
        for (n, seg) in full.chunks(index::SEGMENT_ENTRIES).enumerate() {
            ready.push_back((
                index::segment_key(block, n as u32 + 1).to_vec(),
                index::encode_posting(seg),
            ));
        }
        ready.pop_front().map(Ok)
    })
}
