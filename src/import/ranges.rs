//! A store built by key range, on many machines: the import of a simdb
//! export cut into steps an engine (Ray, Spark) runs on its workers, with
//! its own shuffles between them, so that no row passes through one
//! machine. The store it builds is the one [`super::run`] builds from the
//! same export, family by family and byte for byte (the frozen index
//! aside: [`assemble`] leaves it to `simdb freeze`, which the engines run
//! after it).
//!
//! # Steps
//!
//! 1. **Map** ([`map_share`], per share of the export's part files): each
//!    record becomes [`Item`]s, each a (tag, group, key, value): its `docs`
//!    entry, its `refs` entry, its place in the ingest order, the time
//!    index and its cluster, its four block keys, and a bid to be its
//!    fingerprint's first document. A [`sample`] of their range keys
//!    ([`range_key`]: tag, then group) goes to the driver, which cuts the
//!    range keys into ranges ([`boundaries`]); each share's items are cut
//!    by them ([`split`], [`split_ipc`]).
//! 2. **Reduce, round 1** ([`reduce`], [`reduce_ipc`], per range, with
//!    every share's piece of it): its items sorted by (tag, group, key,
//!    value), it writes the table files of its range of each family, and
//!    the items of round 2 (a cluster's members by id, the band and part
//!    keys of each fingerprint's first document).
//! 3. **Reduce, round 2**: the same over round 2's items, sampled and cut
//!    by ranges of their own: their table files.
//! 4. **Assemble** ([`assemble`], where the store is to be): every range's
//!    table files are ingested into a new store (moved, not copied), with
//!    the counts the maps and reduces summed, and the store is renamed
//!    into place.
//!
//! A group never spans two ranges, and every family's keys follow its
//! items' (group, key) order, so the table files of different ranges never
//! overlap and the store is read without compaction, as an import's.
//! Items travel between the engine's tasks as Arrow IPC streams
//! ([`to_ipc`]; columns `tag`, `group`, `key`, `value`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::read::read_input;
use super::{expand_inputs, export_metadata, ExportMeta};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, Sketch, SKETCH_BYTES};
use crate::index::bands::{band_value, BANDS};
use crate::store::schema::{self, MetaU64, Rank};
use crate::store::{self, codec::Decision, Tuning};

/// What an item is (its first sort key). Tags of round 1 are below
/// [`ROUND_TWO`], of round 2 from it.
pub mod tag {
    /// A `docs` entry: group the id, value the record's bytes.
    pub const DOC: u8 = 0;
    /// A kept text: group the id, value the text.
    pub const TEXT: u8 = 1;
    /// A `refs` entry: group its key (fingerprint ‖ id), value its value.
    pub const REF: u8 = 2;
    /// The ingest order: group the ord (u64 BE), value the id.
    pub const ORDER: u8 = 3;
    /// The time index: group its key, value the id.
    pub const TIME: u8 = 4;
    /// A member of a cluster: group the cluster id (u64 BE), key the
    /// member's rank, value its id.
    pub const MEMBER: u8 = 5;
    /// A bid to be a fingerprint's first document: group the fingerprint
    /// (u64 BE), key the id, value the sketch (a flag byte, then its 32
    /// bytes when 1) and the parts (u64 BE each).
    pub const FIRST: u8 = 6;
    /// Block family `i`'s key `BLOCK + i`: group the block (u16 BE), key
    /// the fingerprint (u64 BE).
    pub const BLOCK: u8 = 7;
    /// A clustered document's `d` entry: group the id, value the cluster
    /// id.
    pub const MEMBERSHIP: u8 = super::ROUND_TWO;
    /// Band family `j`'s key `BAND + j`: group the band value (u16 BE),
    /// key the fingerprint.
    pub const BAND: u8 = MEMBERSHIP + 1;
    /// A `parts` key: group the key (part ‖ fingerprint).
    pub const PART: u8 = BAND + crate::index::bands::BANDS as u8;
}

/// The first tag of round 2's items.
pub const ROUND_TWO: u8 = 16;

/// One unit of the shuffle: the engine moves it to the range of its
/// (tag, group) and sorts a range's items by all four fields.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Item {
    pub tag: u8,
    pub group: Vec<u8>,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// An item borrowed (from an [`Item`], or from the columns of an Arrow
/// record batch: [`reduce_ipc`]); ordered as items are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ItemRef<'a> {
    pub tag: u8,
    pub group: &'a [u8],
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl Item {
    /// The item borrowed.
    pub fn borrowed(&self) -> ItemRef<'_> {
        ItemRef {
            tag: self.tag,
            group: &self.group,
            key: &self.key,
            value: &self.value,
        }
    }

    fn new(tag: u8, group: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Item {
        Item {
            tag,
            group: group.into(),
            key: Vec::new(),
            value: value.into(),
        }
    }
}

/// What one share's map found besides its items; [`Counts::add`] sums
/// them over the shares for [`assemble`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Documents.
    pub documents: u64,
    /// Short documents (the store's short count).
    pub short: u64,
    /// One past the largest ord.
    pub next_ord: u64,
    /// The latest write time.
    pub clock: u64,
    /// Clusters of two or more (counted by the reduces of round 1).
    pub clusters: u64,
    /// Documents sharing their exact fingerprint with an earlier one
    /// (counted by the reduces of round 1).
    pub shared_fingerprints: u64,
}

impl Counts {
    /// Adds another share's or range's counts.
    pub fn add(&mut self, o: &Counts) {
        self.documents += o.documents;
        self.short += o.short;
        self.next_ord = self.next_ord.max(o.next_ord);
        self.clock = self.clock.max(o.clock);
        self.clusters += o.clusters;
        self.shared_fingerprints += o.shared_fingerprints;
    }
}

/// The export metadata every part of `inputs` states, the same for all
/// (recipe, keep policy, kept texts); an input that is not a simdb export,
/// or a store whose recipe learned its IDF, is refused as
/// [`super::run`] refuses it.
pub fn export_of(inputs: &[PathBuf]) -> Result<ExportMeta> {
    let mut found: Option<(ExportMeta, &Path)> = None;
    for p in inputs {
        let Some(m) = export_metadata(p)? else {
            return Err(Error::Input(format!(
                "{}: not a simdb export (a store is built by range only from an export's parts)",
                p.display()
            )));
        };
        match &found {
            Some((f, first))
                if (&f.recipe, f.keep, f.keep_texts) != (&m.recipe, m.keep, m.keep_texts) =>
            {
                return Err(Error::Input(format!(
                    "{} and {} are exports of stores with different recipes or keep policies",
                    first.display(),
                    p.display()
                )))
            }
            Some(_) => {}
            None => found = Some((m, p)),
        }
    }
    let Some((meta, first)) = found else {
        return Err(Error::Input("no export parts to build a store from".into()));
    };
    if meta.recipe.uses_learned_idf() {
        return Err(Error::Input(format!(
            "{}: the store used an IDF table learned at init, which an export does not carry; \
             copy the store with `simdb backup` instead",
            first.display()
        )));
    }
    Ok(meta)
}

/// Step 1: the items of the export part files `parts` (a share of the
/// export: every record in exactly one share), under decision log
/// `decisions` (the export's, the same for every share), and its counts.
pub fn map_share(parts: &[PathBuf], decisions: &[Decision]) -> Result<(Vec<Item>, Counts)> {
    let parts = expand_inputs(parts, true)?;
    let meta = export_of(&parts)?;
    let standing = crate::db::decisions::standing(decisions)?;
    let rule = crate::db::rule::Rule::of(&meta.recipe).digest();
    let mut items = Vec::new();
    let mut counts = Counts::default();
    for path in &parts {
        read_input(path, true, rule, |p| {
            let Some(restored) = p.restored else {
                return Err(Error::Input(format!(
                    "{}:{}: a row without its exported record",
                    path.display(),
                    p.line
                )));
            };
            map_record(
                &p.id,
                restored,
                &meta,
                &standing.kept,
                &mut items,
                &mut counts,
            );
            Ok(())
        })?;
    }
    Ok((items, counts))
}

/// The items of one restored record (see [`tag`]).
fn map_record(
    id: &str,
    restored: super::items::Restored,
    meta: &ExportMeta,
    kept: &BTreeMap<String, u64>,
    items: &mut Vec<Item>,
    counts: &mut Counts,
) {
    let mut rec = restored.rec;
    // A document the log keeps is kept (it ranks first).
    rec.kept = kept.get(id).copied();
    counts.documents += 1;
    counts.next_ord = counts.next_ord.max(rec.ord + 1);
    counts.clock = counts.clock.max(rec.ingested_at);
    counts.short += u64::from(rec.is_short());
    if let (Some(t), true) = (restored.text, meta.keep_texts) {
        items.push(Item::new(tag::TEXT, id.as_bytes(), t.into_bytes()));
    }
    if let Some(time) = rec.dated {
        let (k, v) = schema::time_entry(time, rec.ord, id);
        items.push(Item::new(tag::TIME, k.to_vec(), v));
    }
    items.push(Item {
        tag: tag::MEMBER,
        group: restored.cluster.to_be_bytes().to_vec(),
        key: Rank::of(&rec, meta.keep).to_bytes().to_vec(),
        value: id.as_bytes().to_vec(),
    });
    items.push(Item::new(
        tag::ORDER,
        rec.ord.to_be_bytes().to_vec(),
        id.as_bytes(),
    ));
    let fp = rec.fingerprint;
    let refs = schema::RefValue {
        sketch: rec.sketch,
        parts: match rec.sketch {
            Some(_) => schema::Parts::new(&rec.parts),
            None => schema::Parts::default(),
        },
    };
    let mut bid = Vec::with_capacity(1 + SKETCH_BYTES + 8 * refs.parts.as_slice().len());
    match &rec.sketch {
        Some(s) => {
            bid.push(1);
            bid.extend_from_slice(&s.0);
        }
        None => bid.push(0),
    }
    for p in refs.parts.as_slice() {
        bid.extend_from_slice(&p.to_be_bytes());
    }
    items.push(Item {
        tag: tag::FIRST,
        group: fp.value().to_be_bytes().to_vec(),
        key: id.as_bytes().to_vec(),
        value: bid,
    });
    let (k, v) = schema::refs_entry(fp, id, &refs);
    items.push(Item::new(tag::REF, k, v));
    for i in 0..crate::fingerprint::BLOCKS {
        items.push(Item {
            tag: tag::BLOCK + i as u8,
            group: fp.block(i).to_be_bytes().to_vec(),
            key: fp.value().to_be_bytes().to_vec(),
            value: Vec::new(),
        });
    }
    let (k, v) = schema::docs_entry(id, &rec);
    items.push(Item::new(tag::DOC, k, v));
}

/// What a range's reduce wrote: each family's table files (in key
/// order), the items of round 2 (none from round 2) and the clusters and
/// shared fingerprints it counted.
#[derive(Debug, Default)]
pub struct RangeOutput {
    pub files: Vec<(String, Vec<PathBuf>)>,
    pub items: Vec<Item>,
    pub counts: Counts,
}

/// Steps 2 and 3: writes the table files of one key range's items
/// (every item of each of their groups, in any order: they are sorted
/// here) under `dir`, with file names starting `name` (unique among the
/// ranges that share `dir`).
pub fn reduce(items: Vec<Item>, dir: &Path, name: &str, file_bytes: u64) -> Result<RangeOutput> {
    reduce_refs(
        items.iter().map(Item::borrowed).collect(),
        dir,
        name,
        file_bytes,
    )
}

/// [`reduce`] of borrowed items.
pub fn reduce_refs(
    mut items: Vec<ItemRef<'_>>,
    dir: &Path,
    name: &str,
    file_bytes: u64,
) -> Result<RangeOutput> {
    items.sort_unstable();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut out = RangeOutput::default();
    let mut rest = items.as_slice();
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|i| i.tag == first.tag).count();
        let (run, after) = rest.split_at(n);
        rest = after;
        let write = |family: &'static str, kind: &str, entries: Vec<(Vec<u8>, Vec<u8>)>| {
            let prefix = format!("{name}-{kind}");
            let files = store::write_ssts(
                dir,
                &prefix,
                family,
                file_bytes,
                entries.into_iter().map(Ok),
            )?;
            Ok::<_, Error>((family.to_string(), files))
        };
        let t = first.tag;
        let (family, kind, entries) = match t {
            tag::DOC => (store::DOCS, "docs", unique(run, "id")?),
            tag::TEXT => (store::TEXTS, "texts", unique(run, "text of id")?),
            tag::REF => (store::REFS, "refs", unique(run, "refs key")?),
            tag::ORDER => (store::CLUSTERS, "order", order_entries(run)?),
            tag::TIME => (store::CLUSTERS, "times", unique(run, "time key")?),
            tag::MEMBER => {
                let (members, sizes) = clusters(run, &mut out)?;
                out.files.push(write(store::CLUSTERS, "sizes", sizes)?);
                (store::CLUSTERS, "members", members)
            }
            tag::FIRST => {
                firsts(run, &mut out)?;
                continue;
            }
            tag::MEMBERSHIP => (store::CLUSTERS, "membership", unique(run, "member id")?),
            tag::PART => (store::PARTS, "parts", unique(run, "parts key")?),
            t if (tag::BLOCK..tag::BLOCK + crate::fingerprint::BLOCKS as u8).contains(&t) => {
                let family = store::BLOCK_FAMILIES[(t - tag::BLOCK) as usize];
                (family, family, posting_entries(run)?)
            }
            t if (tag::BAND..tag::BAND + BANDS as u8).contains(&t) => {
                let family = store::BAND_FAMILIES[(t - tag::BAND) as usize];
                (family, family, posting_entries(run)?)
            }
            t => return Err(Error::Input(format!("an item of unknown tag {t}"))),
        };
        out.files.push(write(family, kind, entries)?);
    }
    Ok(out)
}

/// The entries of items whose groups are their keys, each once.
fn unique(run: &[ItemRef<'_>], what: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if let Some(w) = run.windows(2).find(|w| w[0].group == w[1].group) {
        return Err(Error::Input(format!(
            "{what} {:?} comes twice: the shares are not the parts of one export, each once",
            String::from_utf8_lossy(w[0].group)
        )));
    }
    Ok(run
        .iter()
        .map(|i| (i.group.to_vec(), i.value.to_vec()))
        .collect())
}

/// The `o` entries of the ingest order.
fn order_entries(run: &[ItemRef<'_>]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::with_capacity(run.len());
    for (n, i) in run.iter().enumerate() {
        let ord = u64_of(i.group)?;
        if n > 0 && run[n - 1].group == i.group {
            return Err(Error::Input(format!(
                "two documents have ord {ord} (the second is {:?}): the inputs are not the \
                 export of one store",
                String::from_utf8_lossy(i.value)
            )));
        }
        let (k, v) = schema::order_entry(ord, &String::from_utf8_lossy(i.value));
        out.push((k.to_vec(), v));
    }
    Ok(out)
}

fn u64_of(b: &[u8]) -> Result<u64> {
    b.try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| Error::Input(format!("an item's group of {} bytes, not 8", b.len())))
}

fn u16_of(b: &[u8]) -> Result<u16> {
    b.try_into()
        .map(u16::from_be_bytes)
        .map_err(|_| Error::Input(format!("an item's group of {} bytes, not 2", b.len())))
}

/// Each cluster of two or more members: its `m` entries and `s` entry,
/// and its members' `d` entries as items of round 2.
#[allow(clippy::type_complexity)]
fn clusters(
    run: &[ItemRef<'_>],
    out: &mut RangeOutput,
) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, Vec<(Vec<u8>, Vec<u8>)>)> {
    let (mut members, mut sizes) = (Vec::new(), Vec::new());
    for group in run.chunk_by(|a, b| a.group == b.group) {
        if group.len() < 2 {
            continue;
        }
        let cid = u64_of(group[0].group)?;
        out.counts.clusters += 1;
        let (k, v) = schema::size_entry(cid, group.len() as u64);
        sizes.push((k.to_vec(), v.to_vec()));
        for m in group {
            let rank: [u8; 16] = m.key.try_into().map_err(|_| {
                Error::Input(format!("a member's rank of {} bytes, not 16", m.key.len()))
            })?;
            let rank = Rank {
                priority_key: u64::from_be_bytes(rank[..8].try_into().unwrap_or([0; 8])),
                ord: u64::from_be_bytes(rank[8..].try_into().unwrap_or([0; 8])),
            };
            let id = String::from_utf8_lossy(m.value);
            let (k, v) = schema::member_entry(cid, rank, &id);
            members.push((k.to_vec(), v));
            let (k, v) = schema::membership_entry(&id, cid);
            out.items.push(Item::new(tag::MEMBERSHIP, k, v.to_vec()));
        }
    }
    Ok((members, sizes))
}

/// Each fingerprint's first document (smallest id): its band keys and
/// parts keys as items of round 2.
fn firsts(run: &[ItemRef<'_>], out: &mut RangeOutput) -> Result<()> {
    for group in run.chunk_by(|a, b| a.group == b.group) {
        let fp = Fingerprint(u64_of(group[0].group)?);
        out.counts.shared_fingerprints += group.len() as u64 - 1;
        let bid = group[0].value;
        let truncated = || Error::Input("a first-document item is truncated".into());
        let (sketch, parts) = match bid.split_first() {
            Some((0, parts)) => (None, parts),
            Some((1, rest)) if rest.len() >= SKETCH_BYTES => {
                let (s, parts) = rest.split_at(SKETCH_BYTES);
                (Some(Sketch(s.try_into().map_err(|_| truncated())?)), parts)
            }
            _ => return Err(truncated()),
        };
        if parts.len() % 8 != 0 {
            return Err(truncated());
        }
        if let Some(s) = &sketch {
            for j in 0..BANDS {
                out.items.push(Item {
                    tag: tag::BAND + j as u8,
                    group: band_value(s, j).to_be_bytes().to_vec(),
                    key: fp.value().to_be_bytes().to_vec(),
                    value: Vec::new(),
                });
            }
        }
        for p in parts.chunks(8) {
            let part = u64_of(p)?;
            out.items.push(Item::new(
                tag::PART,
                schema::part_key(part, fp).to_vec(),
                Vec::new(),
            ));
        }
    }
    Ok(())
}

/// A posting family's entries from its (bucket, fingerprint) items: per
/// bucket its head and sealed segments, as an import writes them.
fn posting_entries(run: &[ItemRef<'_>]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut pairs = Vec::with_capacity(run.len());
    for i in run {
        pairs.push(Ok((u16_of(i.group)?, Fingerprint(u64_of(i.key)?))));
    }
    let mut tee = |_: u16, _: &[Fingerprint]| Ok(());
    super::stages::postings_by(pairs.into_iter(), &mut tee).collect()
}

/// Step 4: the store at `target` (which must not exist) from every
/// range's table files (both rounds), the export's `meta`, its decision
/// log and the counts summed over the shares and ranges. The table files
/// are moved into the store.
pub fn assemble(
    target: &Path,
    meta: &ExportMeta,
    decisions: &[Decision],
    ranges: &[RangeOutput],
    counts: &Counts,
    tuning: Tuning,
) -> Result<()> {
    let standing = crate::db::decisions::standing(decisions)?;
    let mut families: Vec<(&str, Vec<PathBuf>)> = Vec::new();
    for (family, files) in ranges.iter().flat_map(|r| r.files.iter()) {
        // The families a range writes (never `meta` or `decisions`).
        let Some(name) = store::ALL_FAMILIES
            .iter()
            .find(|f| **f == family && ![store::META, store::DECISIONS].contains(*f))
        else {
            return Err(Error::Input(format!(
                "a range's table files for {family:?}, not a family a range writes"
            )));
        };
        match families.iter_mut().find(|(f, _)| f == name) {
            Some((_, all)) => all.extend(files.iter().cloned()),
            None => families.push((name, files.clone())),
        }
    }
    let staging = store::Staging::begin(target)?;
    let sst = staging.subdir("sst")?;
    families.push((
        store::DECISIONS,
        super::stages::decision_ssts_in(&sst, 256 << 20, decisions, &standing)?,
    ));
    let mut m = vec![
        MetaU64::DocCount.owned_entry(counts.documents),
        MetaU64::NextOrd.owned_entry(counts.next_ord.max(1)),
        MetaU64::Clock.owned_entry(counts.clock),
        MetaU64::ShortCount.owned_entry(counts.short),
    ];
    let (k, v) = schema::keep_policy_entry(meta.keep);
    m.push((k.to_vec(), v.to_vec()));
    if meta.keep_texts {
        m.push((store::KEEP_TEXTS_KEY.to_vec(), b"1".to_vec()));
    }
    staging.finish(&meta.recipe, tuning, &families, &m, None)
}

// --- the engines' transport -------------------------------------------------

/// An item's place in the order of ranges: its tag, then its group (so
/// that bytes compare as (tag, group) does). Every item of a group has
/// the same.
pub fn range_key(item: &Item) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + item.group.len());
    k.push(item.tag);
    k.extend_from_slice(&item.group);
    k
}

/// `n` range keys spread evenly over `items` (every `len / n`-th, in
/// the order given: a map's or reduce's items come in the order they
/// were made, every tag in its proportion): a sample for the boundaries
/// of the ranges.
pub fn sample(items: &[Item], n: usize) -> Vec<Vec<u8>> {
    if items.is_empty() || n == 0 {
        return Vec::new();
    }
    let n = n.min(items.len());
    (0..n)
        .map(|i| range_key(&items[i * items.len() / n]))
        .collect()
}

/// The `ranges - 1` boundaries of `ranges` ranges from the samples of
/// every share: range `r` holds the range keys from boundary `r - 1`
/// (included) to boundary `r` (excluded). Fewer when the samples have
/// fewer distinct keys.
pub fn boundaries(mut samples: Vec<Vec<u8>>, ranges: usize) -> Vec<Vec<u8>> {
    samples.sort_unstable();
    samples.dedup();
    let mut out: Vec<Vec<u8>> = (1..ranges.max(1))
        .filter_map(|r| samples.get(r * samples.len() / ranges))
        .cloned()
        .collect();
    out.dedup();
    out
}

/// `items` cut into one list per range of `boundaries` (`boundaries.len()
/// + 1` of them): a group is never cut.
pub fn split(items: Vec<Item>, boundaries: &[Vec<u8>]) -> Vec<Vec<Item>> {
    let mut out: Vec<Vec<Item>> = (0..=boundaries.len()).map(|_| Vec::new()).collect();
    for it in items {
        let k = range_key(&it);
        let r = boundaries.partition_point(|b| b.as_slice() <= k.as_slice());
        out[r].push(it);
    }
    out
}

#[cfg(feature = "parquet")]
fn schema() -> std::sync::Arc<arrow_schema::Schema> {
    use arrow_schema::{DataType, Field, Schema};
    std::sync::Arc::new(Schema::new(vec![
        Field::new("tag", DataType::UInt8, false),
        Field::new("group", DataType::Binary, false),
        Field::new("key", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
    ]))
}

/// `items` as an Arrow IPC stream of one record batch of columns `tag`
/// (uint8), `group`, `key` and `value` (binary): what the engines move
/// between their tasks (a Ray object, Spark rows).
#[cfg(feature = "parquet")]
pub fn to_ipc(items: &[Item]) -> Result<Vec<u8>> {
    use arrow_array::{BinaryArray, RecordBatch, UInt8Array};
    let col = |f: fn(&Item) -> &[u8]| BinaryArray::from_iter_values(items.iter().map(f));
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            std::sync::Arc::new(UInt8Array::from_iter_values(items.iter().map(|i| i.tag))),
            std::sync::Arc::new(col(|i| &i.group)),
            std::sync::Arc::new(col(|i| &i.key)),
            std::sync::Arc::new(col(|i| &i.value)),
        ],
    )
    .map_err(|e| Error::Input(format!("items as Arrow: {e}")))?;
    let ipc = |e: arrow_schema::ArrowError| Error::Input(format!("items as Arrow IPC: {e}"));
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).map_err(ipc)?;
    w.write(&batch).map_err(ipc)?;
    w.finish().map_err(ipc)?;
    drop(w);
    Ok(out)
}

/// An Arrow IPC stream of items (as [`to_ipc`] writes them) cut into
/// one stream per range of `boundaries`, as [`split`] cuts items, but
/// row by row in Arrow's columns (no item is made).
#[cfg(feature = "parquet")]
pub fn split_ipc(bytes: &[u8], boundaries: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt8Type;
    use arrow_array::{Array, UInt32Array};
    use arrow_schema::DataType;
    let bad = ipc_error;
    let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)
        .map_err(|e| bad(&e))?;
    let schema = r.schema();
    let mut out: Vec<Vec<u8>> = (0..=boundaries.len()).map(|_| Vec::new()).collect();
    let mut writers = out
        .iter_mut()
        .map(|o| arrow_ipc::writer::StreamWriter::try_new(o, &schema))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    for batch in r {
        let batch = batch.map_err(|e| bad(&e))?;
        let (Some(tags), Some(groups)) =
            (batch.column_by_name("tag"), batch.column_by_name("group"))
        else {
            return Err(bad(&"no tag or group column"));
        };
        let tags = tags
            .as_primitive_opt::<UInt8Type>()
            .ok_or_else(|| bad(&"the tag column is not uint8"))?;
        let rows = match groups.data_type() {
            DataType::Binary => rows_by_range(tags.values(), groups.as_binary::<i32>(), boundaries),
            DataType::LargeBinary => {
                rows_by_range(tags.values(), groups.as_binary::<i64>(), boundaries)
            }
            t => return Err(bad(&format!("the group column is {t}, not binary"))),
        };
        for (w, rows) in writers.iter_mut().zip(rows) {
            if !rows.is_empty() {
                let piece = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(rows))
                    .map_err(|e| bad(&e))?;
                w.write(&piece).map_err(|e| bad(&e))?;
            }
        }
    }
    for mut w in writers {
        w.finish().map_err(|e| bad(&e))?;
    }
    Ok(out)
}

/// The rows of each range of `boundaries`, from the tag and group
/// columns.
#[cfg(feature = "parquet")]
fn rows_by_range<O: arrow_array::OffsetSizeTrait>(
    tags: &[u8],
    groups: &arrow_array::GenericBinaryArray<O>,
    boundaries: &[Vec<u8>],
) -> Vec<Vec<u32>> {
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); boundaries.len() + 1];
    for (i, tag) in tags.iter().enumerate() {
        let g = groups.value(i);
        let r = boundaries.partition_point(|b| match b.split_first() {
            Some((bt, bg)) => (*bt, bg) <= (*tag, g),
            None => true,
        });
        rows[r].push(i as u32);
    }
    rows
}

/// The record batches of an Arrow IPC stream of items.
#[cfg(feature = "parquet")]
fn batches_of(bytes: &[u8]) -> Result<Vec<arrow_array::RecordBatch>> {
    arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)
        .and_then(|r| r.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| ipc_error(&e))
}

#[cfg(feature = "parquet")]
fn ipc_error(e: &dyn std::fmt::Display) -> Error {
    Error::Input(format!("items from Arrow IPC: {e}"))
}

/// The items of a record batch of items, borrowed from its columns.
#[cfg(feature = "parquet")]
fn refs_of(batch: &arrow_array::RecordBatch) -> Result<Vec<ItemRef<'_>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt8Type;
    use arrow_array::Array;
    use arrow_schema::DataType;
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| ipc_error(&format!("no column {name:?}")))
    };
    let tags = column("tag")?
        .as_primitive_opt::<UInt8Type>()
        .ok_or_else(|| ipc_error(&"the tag column is not uint8"))?;
    let binary = |name: &str| -> Result<Vec<&[u8]>> {
        let c = column(name)?;
        if c.null_count() > 0 {
            return Err(ipc_error(&format!("the {name} column has nulls")));
        }
        Ok(match c.data_type() {
            DataType::Binary => c.as_binary::<i32>().iter().flatten().collect(),
            DataType::LargeBinary => c.as_binary::<i64>().iter().flatten().collect(),
            t => return Err(ipc_error(&format!("the {name} column is {t}, not binary"))),
        })
    };
    let (groups, keys, values) = (binary("group")?, binary("key")?, binary("value")?);
    Ok(tags
        .values()
        .iter()
        .zip(groups)
        .zip(keys)
        .zip(values)
        .map(|(((tag, group), key), value)| ItemRef {
            tag: *tag,
            group,
            key,
            value,
        })
        .collect())
}

/// The items of Arrow IPC streams (as [`to_ipc`] writes them, or any
/// stream of record batches with those four columns, whatever their
/// binary type), appended to `items`.
#[cfg(feature = "parquet")]
pub fn from_ipc(bytes: &[u8], items: &mut Vec<Item>) -> Result<()> {
    for batch in batches_of(bytes)? {
        items.extend(refs_of(&batch)?.into_iter().map(|i| Item {
            tag: i.tag,
            group: i.group.to_vec(),
            key: i.key.to_vec(),
            value: i.value.to_vec(),
        }));
    }
    Ok(())
}

/// [`reduce`] of the items of Arrow IPC streams, read in place.
#[cfg(feature = "parquet")]
pub fn reduce_ipc(
    streams: &[impl AsRef<[u8]>],
    dir: &Path,
    name: &str,
    file_bytes: u64,
) -> Result<RangeOutput> {
    let mut batches = Vec::new();
    for s in streams {
        batches.extend(batches_of(s.as_ref())?);
    }
    let mut items = Vec::new();
    for b in &batches {
        items.extend(refs_of(b)?);
    }
    reduce_refs(items, dir, name, file_bytes)
}
