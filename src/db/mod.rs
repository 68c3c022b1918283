//! The facade: open or create a store, write documents, query, get, delete,
//! stats. The CLI is a thin client of this module.

use std::path::Path;

mod admin;
mod check;
pub mod clusters;
pub mod decisions;
pub mod engine;
#[cfg(feature = "parquet")]
pub mod export;
pub mod input;
pub mod limits;
mod options;
mod pairs;
pub mod request;
pub mod review;
pub mod rule;
mod search;
mod until;
pub mod write;
mod writer;

pub use admin::{backup, migrate, Admin, ExpireReport, Maintenance};
pub use check::{MigrateReport, RepairReport, VerifyReport};
pub use clusters::{Anchor, Cluster, ClusterChanges, Clusters, KeepPolicy, Match, Member};
pub use options::DbOptions;
pub use pairs::{Copies, CopyGroup, Pair, PairsItem, PairsReport};
pub use request::{
    check_min_similarity, check_probe_budget, search_mode, Answer, Explained, FieldError,
    QueryOptions, QueryRequest, Subject, UnknownFields, WriteOptions,
};
pub(crate) use until::GoOn;
pub(crate) use writer::now;
pub use writer::{check_id, Placement, SharedWriter, Stated, Writer};

use crate::error::{Error, Result};
pub use crate::fingerprint::Content;
use crate::fingerprint::{self, FineSketch, Fingerprint, Fingerprinter, Recipe, Sketch};
use crate::index::{self, Hit};
use crate::store::{self, Access, Record, Store, Tuning};

/// The sketch similarity a candidate needs to be reported, when both
/// sides have a sketch: chosen with `tools/evaluate.rs` (docs/recipe.md, "Choosing
/// the defaults").
///
/// For the default character 4-gram sketch: the threshold that kept
/// distinct corpus pairs at 0-0.6% of the flagged pairs on four of the five
/// corpora measured while keeping 0.86-0.88 of copies with 5% of their
/// characters edited (`tools/recall.rs --sweep`, README "Recall at
/// realistic edits").
pub const DEFAULT_MIN_SIMILARITY: f64 = 0.6;

/// A pair below the similarity threshold is still confirmed when the
/// shorter document is contained in the longer, whichever came first: its
/// estimated containment ([`crate::fingerprint::containment`]) reaches
/// this (or the threshold, if higher) and their similarity at least
/// [`CONTAINMENT_FLOOR`]. That is the truncated copy or the excerpt (the
/// "read more" repost of 60-80% of an article, whose similarity to its
/// original is about its share of it), and the copy with other text
/// around it (a page around an article, a reply quoting a whole post).
/// 0.75 since 2026-11-27 (0.85 before): a wrapped copy with 3% of its
/// characters edited holds about 88% of its original's 4-grams, which the
/// estimate's noise put under 0.85 a third of the time (docs/recall.md,
/// "The last copy kinds"). Two documents of about the same length reach
/// it only above the threshold (equal lengths need a similarity of 0.6),
/// so containment confirms nothing new between them.
pub const MIN_CONTAINMENT: f64 = 0.75;

/// The least similarity a pair confirmed by containment has (a copy of
/// less than about half of its original, or a short text inside one more
/// than twice as long, is not taken as a copy). 0.5 since format 10 (0.45
/// before): the part buckets bring candidates at any distance, among them
/// news bulletins that share stock phrases, which 0.45 confirmed
/// (docs/recall.md, "Second round").
pub const CONTAINMENT_FLOOR: f64 = 0.5;

/// The least similarity of a pair confirmed by containment when its
/// similarity was refined by both documents' fine sketches
/// ([`fingerprint::fine`]; format 14): 512 bins estimate about half as
/// noisily as 128, so the floor that held xwlb's bulletins out at 128 bins
/// (0.5) can come down to let 40% excerpts in (docs/recall.md, "The fine
/// sketch").
pub const REFINED_CONTAINMENT_FLOOR: f64 = 0.45;

/// Two documents' estimated similarity, and whether both fine sketches
/// refined it (see [`estimate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub similarity: f64,
    pub refined: bool,
}

/// Two documents' estimated similarity from their sketches (`None`
/// without two): [`Sketch::similarity`], re-estimated from the sketches
/// and the fine sketches together ([`fingerprint::refined_similarity`])
/// when both have a fine sketch and the sketches' estimate is at least
/// [`fingerprint::fine::REFINE_BELOW`] and under `min_similarity`: the
/// pairs a decision hangs on.
pub fn estimate(
    a: (Option<&Sketch>, Option<&FineSketch>),
    b: (Option<&Sketch>, Option<&FineSketch>),
    min_similarity: f64,
) -> Option<Estimate> {
    let (sa, sb) = (a.0?, b.0?);
    let coarse = sa.similarity(sb);
    match (a.1, b.1) {
        (Some(fa), Some(fb))
            if coarse >= fingerprint::fine::REFINE_BELOW && coarse < min_similarity =>
        {
            Some(Estimate {
                similarity: fingerprint::refined_similarity((sa, fa), (sb, fb)),
                refined: true,
            })
        }
        _ => Some(Estimate {
            similarity: coarse,
            refined: false,
        }),
    }
}

/// [`estimate`] of two records.
pub(crate) fn record_estimate(a: &Record, b: &Record, min_similarity: f64) -> Option<Estimate> {
    estimate(
        (a.sketch.as_ref(), a.fine.as_ref()),
        (b.sketch.as_ref(), b.fine.as_ref()),
        min_similarity,
    )
}

/// [`confirmation`] of an [`estimate`]: a refined one's containment floor
/// is [`REFINED_CONTAINMENT_FLOOR`].
pub fn confirm_estimate(
    e: Option<Estimate>,
    min_similarity: f64,
    lengths: impl FnOnce() -> Result<Option<(u64, u64)>>,
) -> Result<Option<Option<f64>>> {
    let floor = match e {
        Some(e) if e.refined => REFINED_CONTAINMENT_FLOOR,
        _ => CONTAINMENT_FLOOR,
    };
    confirmation_at(
        e.map(|e| e.similarity),
        min_similarity,
        MIN_CONTAINMENT,
        floor,
        lengths,
    )
}

/// What [`Query::confirm`] reads of a candidate's record: its content
/// length, ord, sketch and fine sketch.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub length: u64,
    pub ord: u64,
    pub sketch: Option<Sketch>,
    pub fine: Option<FineSketch>,
}

impl Candidate {
    pub fn of(r: &Record) -> Candidate {
        Candidate {
            length: r.length,
            ord: r.ord,
            sketch: r.sketch,
            fine: r.fine,
        }
    }
}

/// How a pair of documents is confirmed at threshold `min_similarity`:
/// `Some(None)` by similarity (or unconfirmed, without two sketches),
/// `Some(Some(c))` by containment `c`, `None` not. `lengths` are the
/// content lengths of the later and the earlier document, when known (read
/// only for a pair whose similarity is between [`CONTAINMENT_FLOOR`] and
/// the threshold); containment is of the shorter in the longer, whichever
/// came first (a copy wrapped in other text contains its original, as an
/// excerpt is contained in its).
pub fn confirmation(
    similarity: Option<f64>,
    min_similarity: f64,
    lengths: impl FnOnce() -> Result<Option<(u64, u64)>>,
) -> Result<Option<Option<f64>>> {
    confirmation_at(
        similarity,
        min_similarity,
        MIN_CONTAINMENT,
        CONTAINMENT_FLOOR,
        lengths,
    )
}

/// [`confirmation`] with another containment than [`MIN_CONTAINMENT`]
/// and another floor than [`CONTAINMENT_FLOOR`] (what `tools/recall.rs`
/// measures).
pub fn confirmation_at(
    similarity: Option<f64>,
    min_similarity: f64,
    min_containment: f64,
    floor: f64,
    lengths: impl FnOnce() -> Result<Option<(u64, u64)>>,
) -> Result<Option<Option<f64>>> {
    match similarity {
        None => Ok(Some(None)),
        Some(s) if s >= min_similarity => Ok(Some(None)),
        Some(s) if s >= floor => {
            // The shorter of the two inside the longer, whichever came
            // first: a copy of less, or a copy with more around it.
            let c = lengths()?.and_then(|(a, b)| crate::fingerprint::containment(s, a, b));
            Ok(c.filter(|c| *c >= min_containment.max(min_similarity))
                .map(Some))
        }
        Some(_) => Ok(None),
    }
}

/// The content lengths of two stored documents, the later one's first (the
/// `lengths` of [`confirmation`]), when both are known (a document stored
/// as a bare fingerprint has none).
pub(crate) fn lengths_later_first(a: &Record, b: &Record) -> Option<(u64, u64)> {
    let (later, earlier) = if a.ord > b.ord { (a, b) } else { (b, a) };
    (a.length > 0 && b.length > 0).then_some((later.length, earlier.length))
}

/// The default threshold of stores whose sketch is of word 3-shingles
/// (made before character sketches): 0.6, from the evaluation of that
/// sketch.
pub const DEFAULT_MIN_SIMILARITY_WORDS3: f64 = 0.6;

/// The default verification threshold for sketches of `kind`.
pub fn default_min_similarity(kind: fingerprint::SketchKind) -> f64 {
    match kind {
        fingerprint::SketchKind::Words3 => DEFAULT_MIN_SIMILARITY_WORDS3,
        fingerprint::SketchKind::Chars(..) => DEFAULT_MIN_SIMILARITY,
    }
}

/// The verification threshold a store of `recipe` confirms at by default:
/// its sketch kind's ([`default_min_similarity`]), or
/// [`DEFAULT_MIN_SIMILARITY`] for a sketch this build does not name.
pub fn recipe_min_similarity(recipe: &Recipe) -> f64 {
    recipe
        .sketch_kind()
        .map(default_min_similarity)
        .unwrap_or(DEFAULT_MIN_SIMILARITY)
}

/// Confidence-ranked probing of a query (see [`index::ProbePlan::ranked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The query's least-confident bits, weakest first
    /// ([`fingerprint::BitSums::weakest`]).
    pub weak_bits: Vec<u8>,
    /// Buckets read over the four families, at most.
    pub budget: usize,
    /// Whether a query with a sketch also reads the 16 band buckets its
    /// sketch names ([`index::bands`]; true by default): copies whose
    /// fingerprint moved farther than the plan reaches (wraps, truncation).
    pub bands: bool,
}

/// A query: a fingerprint, the distance, and optionally a verification
/// sketch that confirms each candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub fingerprint: Fingerprint,
    /// Hamming distance (<= [`fingerprint::MAX_EXACT_K`]): every document
    /// within `k` is a candidate (exactly, as a brute-force scan).
    pub k: u32,
    /// Beyond `k`, confidence-ranked probing: also every document that
    /// differs from the query in at most [`index::PROBE_TOLERANCE`] bits
    /// outside the query's weak set. `None` = exact at `k` only.
    pub probe: Option<Probe>,
    /// The query's sketch; `None` reports every candidate within `k`.
    pub sketch: Option<Sketch>,
    /// With a sketch, a candidate whose record has a sketch is reported
    /// only if their similarity is at least this (0 reports all, with their
    /// similarity).
    pub min_similarity: f64,
    /// At most this many hits.
    pub limit: Option<usize>,
    /// Leave out this id (the query document itself).
    pub exclude: Option<String>,
    /// The query document's content length (bytes), when it has one: a
    /// candidate below the threshold may then be confirmed by containment
    /// ([`MIN_CONTAINMENT`]) if the query is later and shorter.
    pub length: Option<u64>,
    /// The query document's place in the ingest order, if it is stored
    /// (`None`: it is later than every stored document, as a text or a
    /// document being written is).
    pub ord: Option<u64>,
    /// The query's fine sketch ([`fingerprint::fine`]): a candidate whose
    /// sketch estimate is near the threshold and whose record has one too
    /// is re-estimated from both ([`estimate`]). `None`: never.
    pub fine: Option<FineSketch>,
    /// The query text's part hashes (its smallest, ascending; see
    /// [`crate::index::parts`]): a query with a band probe also reads
    /// their buckets, whose documents the sketch then confirms at any
    /// distance. Empty: none.
    pub parts: Vec<u64>,
}

impl Query {
    /// A fingerprint query at k = 3, default threshold, no sketch, no limit.
    pub fn new(fingerprint: Fingerprint) -> Query {
        Query {
            fingerprint,
            k: 3,
            probe: None,
            sketch: None,
            min_similarity: DEFAULT_MIN_SIMILARITY,
            limit: None,
            exclude: None,
            length: None,
            ord: None,
            fine: None,
            parts: Vec::new(),
        }
    }

    /// Exact at `k`: no probing beyond it.
    pub fn exact(mut self, k: u32) -> Query {
        self.k = k;
        self.probe = None;
        self
    }

    /// Confidence-ranked probing of the weakest of `weak_bits` within
    /// `budget` buckets, beyond `k`; no probing when either is empty (no
    /// weak bits known, or a budget of 0).
    pub fn probing(mut self, weak_bits: &[u8], budget: usize) -> Query {
        self.probe = (budget > 0 && !weak_bits.is_empty()).then(|| Probe {
            weak_bits: weak_bits.to_vec(),
            budget,
            bands: true,
        });
        self
    }

    /// The same query with the probing budget set to `budget` (0 = exact
    /// at `k` only); a query without weak bits stays exact.
    pub fn with_budget(mut self, budget: usize) -> Query {
        match (&mut self.probe, budget) {
            (_, 0) => self.probe = None,
            (Some(p), b) => p.budget = b,
            (None, _) => {}
        }
        self
    }

    /// The buckets to read and the rule a candidate must pass.
    pub fn plan(&self) -> index::ProbePlan {
        match &self.probe {
            Some(p) => index::ProbePlan::ranked(self.fingerprint, self.k, &p.weak_bits, p.budget),
            None => index::ProbePlan::exact(self.fingerprint, self.k),
        }
    }

    /// What a chunk's reads beforehand ([`store::Prefetch`]) are keyed by:
    /// the fingerprint, the plan and the band probe.
    pub(crate) fn plan_key(&self) -> store::PlanKey {
        store::PlanKey {
            fp: self.fingerprint,
            plan: self.plan(),
            probe: self.band_probe(),
        }
    }

    /// The band probe of a ranked query with a sketch (none for an exact
    /// one, one without a sketch, or one whose probe has `bands` off).
    pub fn band_probe(&self) -> Option<index::bands::BandProbe> {
        let sketch = self.sketch.as_ref()?;
        self.probe.as_ref().filter(|p| p.bands)?;
        Some(index::bands::BandProbe::new(
            sketch,
            index::bands::DEFAULT_BAND_DISTANCE,
        ))
    }

    /// The part probe of a query with a band probe and parts (see
    /// [`index::parts`]), at the default cap.
    pub fn part_probe(&self) -> Option<index::parts::PartProbe> {
        self.band_probe()?;
        (!self.parts.is_empty()).then(|| index::parts::PartProbe::new(self.parts.clone()))
    }

    /// Whether hit `h` passes verification, by similarity or by
    /// containment ([`confirm_estimate`]); `record` reads the candidate's
    /// record, only when its sketch estimate is under the threshold and
    /// containment or a refinement is to be checked. Sets `h.containment`
    /// when containment confirmed it, and `h.similarity` to the refined
    /// estimate when the fine sketches refined it.
    pub fn confirm(
        &self,
        h: &mut Hit,
        record: impl FnOnce(&Hit) -> Result<Candidate>,
    ) -> Result<bool> {
        let floor = match self.fine {
            Some(_) => fingerprint::fine::REFINE_BELOW,
            None => CONTAINMENT_FLOOR,
        };
        let their = match h.similarity {
            Some(s) if s < self.min_similarity && s >= floor => Some(record(h)?),
            _ => None,
        };
        let e = match &their {
            Some(t) => estimate(
                (self.sketch.as_ref(), self.fine.as_ref()),
                (t.sketch.as_ref(), t.fine.as_ref()),
                self.min_similarity,
            ),
            None => h.similarity.map(|similarity| Estimate {
                similarity,
                refined: false,
            }),
        };
        let lengths = || -> Result<Option<(u64, u64)>> {
            let (Some(own), Some(t)) = (self.length.filter(|n| *n > 0), their) else {
                return Ok(None);
            };
            Ok(Some(match self.ord {
                Some(ord) if ord < t.ord => (t.length, own),
                _ => (own, t.length),
            }))
        };
        Ok(match confirm_estimate(e, self.min_similarity, lengths)? {
            None => false,
            Some(c) => {
                h.similarity = e.map(|e| e.similarity);
                h.containment = c;
                true
            }
        })
    }
}

/// The largest sample [`Admin::calibrate`] takes.
pub const MAX_CALIBRATION_SAMPLE: usize = 10_000_000;

/// How fresh a handle's view of the store is.
/// The answer of a search ([`Db::find`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Confirmed hits, nearest first, then by id; at most the query's
    /// limit.
    pub hits: Vec<Hit>,
    /// Whether every candidate the query's plan names was looked at, or
    /// the limit was reached: false when the search stopped at
    /// [`limits::QUERY_REJECTED`] rejected candidates, so that a farther
    /// hit may be missing.
    pub complete: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct View {
    /// Opened read-only (a fixed view) or for writing (always current).
    pub read_only: bool,
    /// Unix seconds when the handle was opened: a read-only view shows the
    /// store as of then.
    pub opened_at: u64,
    /// RocksDB's last sequence number in the view.
    pub sequence: u64,
    /// Whether another process is writing to the store now (so newer
    /// writes than this view may exist).
    pub writer_active: bool,
}

/// How [`backup`] made its copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum BackupMethod {
    /// A RocksDB checkpoint: hard links to the store's files.
    Checkpoint,
    /// A rewrite of a read-only view (the store was in use by a writer).
    Copy,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new id.
    Inserted,
    /// An existing id with different content: its index keys moved.
    Replaced,
    /// An existing id with identical content: nothing written.
    Unchanged,
}

/// Counts and shape of a store, for `simdb stats`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    pub path: String,
    pub documents: u64,
    /// The oldest and newest document times (Unix seconds: a document's
    /// own, else when it was written); absent when empty.
    pub oldest: Option<u64>,
    pub newest: Option<u64>,
    /// Clusters of two or more documents, and the documents in them.
    pub clusters: u64,
    pub clustered_documents: u64,
    /// Who represents a cluster (see [`clusters::KeepPolicy`]).
    pub keep: KeepPolicy,
    /// Documents with fewer than [`fingerprint::SHORT_TERMS`] terms.
    pub short_documents: u64,
    pub recipe: Recipe,
    pub families: Vec<FamilyStats>,
    pub bytes_on_disk: u64,
    pub view: View,
    /// The frozen index clean buckets are read from (`simdb freeze`), if
    /// the store has one.
    pub frozen: Option<store::FrozenState>,
    /// Why the frozen index the store names is not used (missing or
    /// damaged: every bucket is then read from RocksDB).
    pub frozen_unusable: Option<String>,
    /// The page extraction the store's web pages went through
    /// ([`crate::web::EXTRACTION`]); absent when no page was written.
    pub extraction: Option<String>,
}

/// A stored document as `simdb get --json` and the service show it: its
/// record and its cluster.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Document {
    pub id: String,
    pub fingerprint: Fingerprint,
    /// xxh3-64 of the content, 16 hex digits (see [`Content::hash`]).
    pub content_hash: String,
    pub length: u64,
    pub ingested_at: u64,
    pub source: String,
    pub terms: u32,
    pub short: bool,
    pub top_terms: Vec<String>,
    /// The verification sketch in hex, if the document had text.
    pub sketch: Option<String>,
    pub ord: u64,
    pub priority: Option<f64>,
    /// The document's own time, Unix seconds (a crawl's fetch date, an
    /// input's `"time"`), if it has one: what `expire` and `newest` go by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dated: Option<u64>,
    /// Its part hashes, 16 hex digits each, ascending (see
    /// [`crate::index::parts`]); absent for a document without (no text,
    /// or written before format 10).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The "keep this one" decision that keeps it, if one does (it
    /// represents any cluster it is in; docs/review.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
    pub cluster: ClusterSummary,
    /// The text it was fingerprinted from, in a store that keeps texts
    /// ([`crate::DbOptions::keep_texts`]); absent otherwise, and for a
    /// document written without a text (features, a fingerprint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A document's cluster, in brief.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClusterSummary {
    pub id: u64,
    pub size: u64,
    pub representative: String,
}

/// Bucket sizes of one block family.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FamilyStats {
    pub name: String,
    /// Fingerprints in the family's buckets: distinct ones (documents that
    /// share a fingerprint share its entry).
    pub keys: u64,
    pub buckets: u64,
    pub sst_bytes: u64,
    /// Bucket-size percentiles over non-empty buckets: p50, p90, p99, max.
    pub bucket_p50: u64,
    pub bucket_p90: u64,
    pub bucket_p99: u64,
    pub bucket_max: u64,
}

/// An open simdb store.
pub struct Db {
    store: Store,
    fingerprinter: Fingerprinter,
    opened_at: u64,
    /// Held by each writer of [`Db::shared_writer`]; handed on fairly.
    write_lock: parking_lot::Mutex<()>,
}

impl Db {
    /// Refuses a recipe this build does not reproduce.
    fn check_recipe(path: &Path, recipe: &Recipe) -> Result<()> {
        let current = Recipe::this_build_of(recipe);
        match recipe.difference(&current) {
            Some((field, stored, this)) => Err(Error::RecipeMismatch {
                path: path.to_path_buf(),
                field: field.to_string(),
                stored,
                requested: format!("{this} (fixed in this build)"),
            }),
            None => Ok(()),
        }
    }

    pub(super) fn with_store(path: &Path, store: Store, recipe: Recipe) -> Result<Db> {
        Self::check_recipe(path, &recipe)?;
        let fingerprinter = if recipe.uses_learned_idf() {
            let key = store::IDF_TABLE_KEY;
            let bytes = store.get_meta(key)?.ok_or_else(|| {
                Error::corrupt(store::META, key, "the learned IDF table is missing")
            })?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| Error::corrupt(store::META, key, "not UTF-8"))?;
            let table = fingerprint::LearnedIdf::parse(text)
                .map_err(|r| Error::corrupt(store::META, key, r))?;
            Fingerprinter::with_learned_idf(recipe, table).map_err(|e| {
                Error::corrupt(store::META, key, format!("does not match the recipe: {e}"))
            })?
        } else {
            Fingerprinter::new(recipe)
        };
        Ok(Db::new(store, fingerprinter))
    }

    /// An open store and the fingerprinter of its recipe as a `Db`, opened
    /// now.
    pub(super) fn new(store: Store, fingerprinter: Fingerprinter) -> Db {
        Db {
            store,
            fingerprinter,
            opened_at: now(),
            write_lock: parking_lot::Mutex::new(()),
        }
    }

    /// How fresh this handle's view is. A read-only handle sees the store as
    /// of its opening; if another process is writing, newer documents may
    /// exist (reopen to see them).
    pub(crate) fn view(&self) -> View {
        let read_only = self.store.access() == Access::ReadOnly;
        View {
            read_only,
            opened_at: self.opened_at,
            sequence: self.store.sequence(),
            writer_active: read_only && store::writer_active(self.path()),
        }
    }

    /// The store's recipe.
    pub fn recipe(&self) -> &Recipe {
        self.fingerprinter.recipe()
    }

    /// The fingerprinter of the store's recipe.
    pub fn fingerprinter(&self) -> &Fingerprinter {
        &self.fingerprinter
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Number of documents.
    pub fn len(&self) -> Result<u64> {
        self.store.doc_count()
    }

    /// Whether the store holds no document.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Stored documents within `k` (<= 11) of `q`, sorted by distance then
    /// id, at most `limit` of them: exactly what a brute-force scan finds.
    pub fn query(&self, q: Fingerprint, k: u32, limit: Option<usize>) -> Result<Vec<Hit>> {
        self.search(&Query {
            limit,
            ..Query::new(q).exact(k)
        })
    }

    /// Answers a [`Query`]: documents within `q.k` of `q.fingerprint`,
    /// confirmed by the verification sketch when `q.sketch` is given
    /// (hits whose record has no sketch are kept, unconfirmed), sorted by
    /// distance then id, at most `q.limit`.
    ///
    /// The cost of a limited answer does not grow with the number of
    /// stored copies: documents are read nearest first, in id order among
    /// equally near ones, until `q.limit` are confirmed.
    ///
    /// A search stops once the sketch has rejected
    /// [`limits::QUERY_REJECTED`] candidates: the hits are then the
    /// confirmed ones among the nearest looked at ([`Db::find`] says
    /// whether that happened).
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>> {
        Ok(self.find(q)?.hits)
    }

    /// [`Db::search`], and whether the answer is complete.
    pub fn find(&self, q: &Query) -> Result<Found> {
        let at = self.store.snapshot();
        self.found(&at, None, q)
    }

    /// The nearest confirmed hit of `q`, looked for as a write's duplicate
    /// check looks ([`search::Rule::duplicates`]: the same search, the
    /// store's documents without a pending batch), so that `simdb dedup
    /// --db` drops what `ingest --skip-duplicates` would.
    pub(crate) fn first_duplicate(&self, id: &str, q: &Query) -> Result<Option<Hit>> {
        let at = self.store.snapshot();
        // Not a document decided not to be a copy of `id`.
        let c = self
            .searcher(&at, None)
            .run(q, search::Rule::duplicates(1), &mut |h| {
                Ok(!self.store.vetoed(id, &h.id)?)
            })?;
        Ok(c.hits.into_iter().next())
    }

    /// Whether the store has "not a copy" decisions (else
    /// [`Db::vetoed_with`] is empty for every id, and reads nothing).
    pub(crate) fn has_vetoes(&self) -> bool {
        self.store.has_vetoes()
    }

    /// The documents `id` was decided not to be a copy of (`simdb decide
    /// DB not-a-copy`), stored or not, in id order.
    pub(crate) fn vetoed_with(&self, id: &str) -> Result<Vec<String>> {
        self.store.vetoed_with(id)
    }

    /// Whether `a` and `b` were decided not to be copies of each other.
    pub(crate) fn vetoed(&self, a: &str, b: &str) -> Result<bool> {
        self.store.vetoed(a, b)
    }

    /// The one candidate search ([`search`]) over the store at `at`, with
    /// what `pre` read beforehand.
    fn searcher<'s, 'a>(
        &'s self,
        at: &'s store::Snapshot<'a>,
        pre: Option<&'s store::Prefetch>,
    ) -> search::Searcher<'s, 'a> {
        search::Searcher {
            store: &self.store,
            at,
            prefetch: pre,
            pending: None,
            reads: search::Reads::Query,
            before: None,
        }
    }

    /// What the searches of `qs` read, read beforehand at `at` in sorted
    /// passes on the rayon pool (a write chunk's prefetch, without the
    /// writer's bucket heads).
    fn prefetch_searches(&self, at: &store::Snapshot<'_>, qs: &[Query]) -> Result<store::Prefetch> {
        let keys = qs.iter().map(Query::plan_key).collect();
        self.store.prefetch(at, keys, Vec::new(), false)
    }

    /// The answer to `q` at `at` ([`search::Rule::query`]), its hits
    /// checked against their records.
    fn found(
        &self,
        at: &store::Snapshot<'_>,
        pre: Option<&store::Prefetch>,
        q: &Query,
    ) -> Result<Found> {
        let limit = q.limit.unwrap_or(usize::MAX);
        let c = self
            .searcher(at, pre)
            .run(q, search::Rule::query(limit), &mut |_| Ok(true))?;
        // A limited answer that reached its limit is whole.
        let complete = c.complete || c.hits.len() >= limit;
        self.checked(at, c.hits, complete)
    }

    /// `hits`, each checked against its record: what is answered is never
    /// the trace of a damaged index.
    fn checked(&self, at: &store::Snapshot<'_>, hits: Vec<Hit>, complete: bool) -> Result<Found> {
        for h in &hits {
            self.store.checked_record(at, h.fingerprint, &h.id)?;
        }
        Ok(Found { hits, complete })
    }

    /// Answers of many [`Query`]s, in their order, as [`Db::find`] gives
    /// them, and whether each is complete: one sorted pass per block family
    /// over the whole batch, much faster than one query at a time once the
    /// batch is large (thousands of queries), all at one snapshot. The
    /// batch's buckets and first `refs` entries are read beforehand in
    /// sorted passes over the rayon pool (as a chunk's duplicate checks
    /// read them), then each query is answered from them.
    pub fn find_many(&self, qs: &[Query]) -> Result<Vec<Found>> {
        let at = self.store.snapshot();
        let pre = self.prefetch_searches(&at, qs)?;
        qs.iter().map(|q| self.found(&at, Some(&pre), q)).collect()
    }

    /// The verification threshold this store uses by default (it depends
    /// on the recipe's sketch: see [`recipe_min_similarity`]).
    pub(crate) fn default_min_similarity(&self) -> f64 {
        recipe_min_similarity(self.recipe())
    }

    /// The query for an analysed text or stored document: confidence-ranked
    /// at the default budget when its weak bits are known, exact at k = 3
    /// otherwise, verified at the store's default threshold.
    pub(crate) fn query_for(
        &self,
        fingerprint: Fingerprint,
        sketch: Option<Sketch>,
        weak_bits: &[u8],
    ) -> Query {
        Query {
            sketch,
            min_similarity: self.default_min_similarity(),
            ..Query::new(fingerprint)
        }
        .probing(weak_bits, index::DEFAULT_PROBE_BUDGET)
    }

    /// The default [`Query`] for `text`: confidence-ranked probing at the
    /// default budget, verified at the store's default threshold, no limit.
    pub fn text_query(&self, text: &str) -> Result<Query> {
        let a = self.fingerprinter.analyze(text)?;
        Ok(Query {
            length: Some(text.len() as u64),
            parts: a.parts,
            fine: a.sketch.and(a.fine),
            ..self.query_for(a.fingerprint, a.sketch, &a.weak_bits)
        })
    }

    /// The default [`Query`] for the stored document `id`, whose record is
    /// `rec`, which it excludes: confidence-ranked with the weak bits kept
    /// in its record (exact at k = 3 for records that have none).
    pub(crate) fn record_query(&self, id: &str, rec: &Record) -> Query {
        Query {
            exclude: Some(id.to_string()),
            length: Some(rec.length),
            ord: Some(rec.ord),
            parts: rec.parts.clone(),
            fine: rec.fine,
            ..self.query_for(rec.fingerprint, rec.sketch, &rec.weak_bits)
        }
    }

    /// Explains `hits` of a query: the query's weighted terms are
    /// `query_terms` (heaviest first; see [`Db::text_terms`] and
    /// [`Db::record_terms`]), each document's are its stored top terms.
    pub(crate) fn explain(
        &self,
        query_terms: &[(String, f64)],
        hits: &[Hit],
    ) -> Result<Vec<crate::explain::Explanation>> {
        hits.iter()
            .map(|h| {
                let top = self.get(&h.id)?.map(|r| r.top_terms).unwrap_or_default();
                Ok(crate::explain::explain(
                    &h.id,
                    h.distance,
                    h.similarity,
                    query_terms,
                    &top,
                    fingerprint::TOP_TERMS,
                ))
            })
            .collect()
    }

    /// Every term of `text` with its TF-IDF weight, heaviest first (word
    /// features; shingles left out).
    pub(crate) fn text_terms(&self, text: &str) -> Vec<(String, f64)> {
        self.fingerprinter
            .features(text)
            .into_iter()
            .filter(|f| !f.name.contains(' '))
            .map(|f| (f.name, f.weight))
            .collect()
    }

    /// A stored document's top terms, weighted by IDF alone (its term
    /// frequencies are not stored).
    pub(crate) fn record_terms(&self, rec: &Record) -> Vec<(String, f64)> {
        rec.top_terms
            .iter()
            .map(|t| (t.clone(), self.fingerprinter.idf(t)))
            .collect()
    }

    /// The record of `id`.
    pub fn get(&self, id: &str) -> Result<Option<Record>> {
        self.store.get(id)
    }

    /// Document `id` with its cluster, as `simdb get --json` shows it.
    pub fn document(&self, id: &str) -> Result<Option<Document>> {
        // The record and its cluster at one snapshot.
        let at = self.store.snapshot();
        let Some(r) = self.store.get_at(&at, id)? else {
            return Ok(None);
        };
        let cluster = self.cluster_summary_at(&at, id, &r)?;
        Ok(Some(Document {
            id: id.to_string(),
            fingerprint: r.fingerprint,
            content_hash: format!("{:016x}", r.content_hash),
            length: r.length,
            ingested_at: r.ingested_at,
            source: r.source.clone(),
            terms: r.terms,
            short: r.is_short(),
            top_terms: r.top_terms.clone(),
            sketch: r
                .sketch
                .map(|s| s.0.iter().map(|b| format!("{b:02x}")).collect()),
            ord: r.ord,
            priority: r.priority.map(|p| p.value()),
            dated: r.dated,
            parts: r.parts.iter().map(|p| format!("{p:016x}")).collect(),
            kept: r.kept,
            cluster,
            text: self.store.text_at(&at, id)?,
        }))
    }

    /// The cluster of document `id` (record `r` at `at`) in brief: its id,
    /// size and representative, read from the cluster's size entry and its
    /// first member (a few reads, however large the cluster: review
    /// 2026-11-b, finding 2). Its members' records are not read; a
    /// representative without a record is damage, as in [`Db::cluster`].
    fn cluster_summary_at(
        &self,
        at: &store::Snapshot<'_>,
        id: &str,
        r: &Record,
    ) -> Result<ClusterSummary> {
        let Some(cid) = self.store.cluster_entry_at(at, id)? else {
            return Ok(ClusterSummary {
                id: r.ord,
                size: 1,
                representative: id.to_string(),
            });
        };
        let (size, representative) = self.store.cluster_head_at(at, cid)?.ok_or_else(|| {
            Error::corrupt(
                store::CLUSTERS,
                &store::schema::size_key(cid),
                format!("document {id:?} names cluster {cid}, which has no size or no members"),
            )
        })?;
        if self.store.get_at(at, &representative)?.is_none() {
            return Err(Error::corrupt(
                store::CLUSTERS,
                &store::schema::members_prefix(cid),
                format!("names id {representative:?}, which has no record"),
            ));
        }
        Ok(ClusterSummary {
            id: cid,
            size,
            representative,
        })
    }

    /// Inserts or replaces one document and commits it.
    pub fn put(&mut self, id: &str, content: Content) -> Result<Outcome> {
        if matches!(content, Content::Html(_)) {
            self.accept_pages()?;
        }
        // A page is extracted once, here.
        let (content, _) = content.extracted();
        let a = content.analyze(&self.fingerprinter)?;
        let mut w = self.writer()?;
        let out = w.put(id, a, &content, "api")?;
        w.commit()?;
        drop(w);
        self.settle_clusters()?;
        Ok(out)
    }

    /// Deletes documents by id and commits; returns how many existed.
    /// The clusters whose representative left are re-checked to the end
    /// ([`Clusters::settle`]).
    pub fn delete<S: AsRef<str>>(&mut self, ids: &[S]) -> Result<usize> {
        let mut w = self.writer()?;
        let mut n = 0;
        for id in ids {
            if w.delete(id.as_ref())? {
                n += 1;
            }
        }
        w.commit()?;
        drop(w);
        self.settle_clusters()?;
        Ok(n)
    }

    /// Whether a re-check of clusters whose representative changed is under
    /// way ([`Clusters::settle`] finishes it).
    pub(crate) fn clusters_unsettled(&self) -> Result<bool> {
        Ok(!self.store.stale_clusters(1)?.is_empty())
    }

    /// Runs the re-checks of clusters whose representative changed to the
    /// end ([`Writer::settle_step`]), taking the writer lock for one step
    /// ([`limits::SETTLE_STEP`] members) at a time, so that other writers
    /// of this handle go between the steps. Returns the steps taken.
    pub(crate) fn settle_clusters(&self) -> Result<u64> {
        let mut steps = 0;
        loop {
            let mut w = self.shared_writer()?;
            let more = w.settle_step()?;
            steps += 1;
            drop(w);
            if !more {
                return Ok(steps);
            }
        }
    }

    /// A batch writer. Its writes become visible to its own queries at once
    /// and to the store at [`Writer::commit`].
    ///
    /// It borrows the `Db` mutably: one writer at a time, each keeping the
    /// document count and the sequence numbers it gives out. A second one
    /// while the first lives does not compile:
    ///
    /// ```compile_fail
    /// # fn f(db: &mut simdb::Db) -> simdb::Result<()> {
    /// let a = db.writer()?;
    /// let b = db.writer()?; // error: `*db` is already borrowed mutably
    /// drop((a, b));
    /// # Ok(()) }
    /// ```
    pub fn writer(&mut self) -> Result<Writer<'_>> {
        self.check_writable()?;
        Writer::new(&self.store, self.default_anchor())
    }

    /// A batch writer through a shared `Db` (a service answering queries
    /// on other threads meanwhile): it waits until no other shared writer
    /// lives, so writers still come one at a time, each starting from what
    /// the one before it committed. Queries through `&Db` never wait for
    /// it: each reads one consistent view of the store, which holds a
    /// committed batch whole or not at all.
    pub fn shared_writer(&self) -> Result<SharedWriter<'_>> {
        self.check_writable()?;
        // (A writer that panicked left nothing half-written behind: its
        // batch was never committed. parking_lot's lock is not poisoned.)
        let guard = self.write_lock.lock();
        Ok(SharedWriter::new(
            Writer::new(&self.store, self.default_anchor())?,
            guard,
        ))
    }

    fn check_writable(&self) -> Result<()> {
        if self.store.access() != Access::ReadWrite {
            return Err(Error::Input(format!(
                "{}: store was opened read-only",
                self.path().display()
            )));
        }
        Ok(())
    }

    /// Whether a query with many buckets reads half of its families on
    /// rayon's pool meanwhile ([`DbOptions::parallel_queries`]).
    #[cfg(feature = "server")]
    pub(crate) fn set_parallel_queries(&mut self, on: bool) {
        self.store.parallel_probe = on;
    }

    /// Every (id, record), in id order.
    pub(crate) fn for_each(&self, visit: impl FnMut(&str, Record) -> Result<()>) -> Result<()> {
        self.store.for_each_doc(visit)
    }

    /// What this handle has read since it was opened (`refs` entries,
    /// records, bucket values): the work of its queries and writes,
    /// counted. A write's duplicate check reads about as much for the
    /// millionth copy of a text as for the first.
    pub(crate) fn reads(&self) -> store::Reads {
        self.store.reads()
    }

    /// How the store was opened (for writing, or read-only).
    pub(crate) fn access(&self) -> Access {
        self.store.access()
    }

    /// The memory knobs the store was opened with.
    pub(crate) fn tuning(&self) -> Tuning {
        self.store.tuning()
    }

    /// Write-ahead log syncs since the store was opened (synced commits,
    /// and syncs of commits with nothing to write).
    pub(crate) fn wal_syncs(&self) -> u64 {
        self.store.wal_syncs()
    }

    /// Flushes memtables to disk.
    pub(crate) fn flush(&self) -> Result<()> {
        self.store.flush()
    }
}
