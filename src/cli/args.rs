//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// simdb: a persistent near-duplicate detection database for text.
///
/// Exit codes: 0 = something found (or done), 1 = nothing found, 2 = error.
#[derive(Debug, Parser)]
#[command(name = "simdb", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  simdb init news.db
  simdb ingest news.db nightly.jsonl --report dups.jsonl      # {\"id\", \"text\"} per line
  simdb query news.db --text \"国务院常务会议部署扩大内需\"
  simdb query news.db --id xwlb/20240312/03 --json
  simdb query news.db --batch queries.jsonl > answers.jsonl
  simdb query news.db --fingerprint 3fa9c2d1e07b4c88 -k 7     # exact: all within 7 bits
  simdb stats news.db

See `simdb <command> --help` and the README for what each option does.";

const INGEST_EXAMPLES: &str = "\
Examples:
  simdb ingest news.db day1.jsonl day2.jsonl --report dups.jsonl
  cat docs.jsonl | simdb ingest news.db - --skip-duplicates
  simdb ingest news.db articles/ --format dir                 # one document per file
  simdb ingest news.db big.jsonl --acks --sync                # durable acknowledgements";

const QUERY_EXAMPLES: &str = "\
Examples:
  simdb query news.db --text \"some text\"                     # confidence-ranked, verified
  simdb query news.db --file article.txt --explain            # why each hit matched
  simdb query news.db --id doc-42 --limit 5 --json
  simdb query news.db --text \"some text\" -k 7                # exact: every document within 7 bits
  simdb query news.db --batch queries.jsonl      # JSONL: {\"id\", \"text\"} or {\"fingerprint\"}";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new, empty store with a fingerprint recipe.
    Init(InitArgs),
    /// Add or replace documents from JSONL, text files or directories.
    #[command(after_help = INGEST_EXAMPLES)]
    Ingest(IngestArgs),
    /// Bulk-load precomputed fingerprints into a new store (sorted SST files).
    Import(ImportArgs),
    /// Find stored near-duplicates of a text, file, fingerprint or stored id.
    #[command(after_help = QUERY_EXAMPLES)]
    Query(QueryArgs),
    /// Print fingerprints of texts (needs no store).
    Fingerprint(FingerprintArgs),
    /// Show the stored record of a document.
    Get(GetArgs),
    /// Delete documents by id.
    Delete(DeleteArgs),
    /// Counts, bucket sizes per block family, size on disk and recipe.
    Stats(StatsArgs),
    /// Check that records decode and index keys agree with records.
    Verify(VerifyArgs),
    /// Make a consistent copy of a store, also while it is being written to.
    Backup(BackupArgs),
    /// Write the frozen index: every bucket in one file read in place, so
    /// queries and duplicate checks skip RocksDB for buckets no write has
    /// changed since (run after an import or a night's ingest).
    #[command(after_help = FREEZE_EXAMPLES)]
    Freeze(FreezeArgs),
    /// Write every document as Parquet (id, fingerprint, sketch, cluster,
    /// ingested_at, source) for tools beyond one machine (README, "Inputs and outputs").
    Export(ExportArgs),
    /// Sample the store and show how distances spread: nearest neighbours
    /// (confirmed near-copies vs rejected) and random pairs, with a plot.
    Calibrate(CalibrateArgs),
    /// Convert a store made by an older simdb (formats 2 to 13) to this
    /// build's format, in place (what changed is rebuilt from the stored
    /// records), or change its keep policy (--keep).
    Migrate(MigrateArgs),
    /// Delete the documents older than a date (retention): by their own
    /// time (a crawl's fetch date, a JSONL "time"), else when they were
    /// written; their clusters are updated.
    #[command(after_help = EXPIRE_EXAMPLES)]
    Expire(ExpireArgs),
    /// List clusters of near-duplicates: representative, members, size,
    /// largest distance.
    #[command(after_help = CLUSTERS_EXAMPLES)]
    Clusters(ClustersArgs),
    /// Keep the input lines whose document has no near-copy earlier in the
    /// input (or in --db): a clean corpus on standard output.
    #[command(after_help = DEDUP_EXAMPLES)]
    Dedup(DedupArgs),
    /// Every near-duplicate pair in the store, once each, as JSONL.
    #[command(after_help = PAIRS_EXAMPLES)]
    Pairs(PairsArgs),
    /// Decide that two documents are not copies of each other, or which
    /// document of a cluster to keep (the store obeys it from now on:
    /// ingest, re-checks, rebuilds), undo a decision, or replay another
    /// store's decision log.
    #[command(after_help = DECIDE_EXAMPLES)]
    Decide(DecideArgs),
    /// The store's decision log: who decided what, and when.
    Decisions(DecisionsArgs),
    /// Serve the store over HTTP: writes, checks, queries, deletes, stats
    /// and Prometheus metrics (README, "Service").
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Print a shell completion script.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
}

const SERVE_EXAMPLES: &str = "\
Examples:
  simdb serve news.db                                   # http://127.0.0.1:7420
  curl -s localhost:7420/query --json '{\"text\": \"国务院常务会议部署扩大内需\"}'
  simdb serve news.db --addr 0.0.0.0:7420 --token-file /etc/simdb/token
  simdb serve news.db --read-only --addr 127.0.0.1:7421       # a replica beside the writer";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The store (created with `simdb init`).
    pub db: PathBuf,
    /// Address to listen on. Anything but a loopback address needs
    /// --token-file. Port 0 picks a free port (printed at start).
    #[arg(long, default_value = simdb::server::DEFAULT_ADDR, value_name = "HOST:PORT")]
    pub addr: std::net::SocketAddr,
    /// A file of bearer tokens, one a line: every request must carry one
    /// (`Authorization: Bearer TOKEN`; at least 16 characters). A line may
    /// name its token (`NAME TOKEN`): the decision log records the name as
    /// who decided (else `api`). Blank lines and `#` lines are skipped.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Largest request body in MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub max_body_mb: usize,
    /// Seconds a client may take to send its request body.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub body_timeout: u64,
    /// Most documents or queries in one request.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub max_batch: usize,
    /// Most hits one request may answer (the sum of its queries' limits,
    /// or its documents times the duplicates each lists); a request that
    /// could answer more is refused with 400 before any work.
    #[arg(long, default_value_t = simdb::db::limits::DEFAULT_MAX_REQUEST_HITS, value_name = "N")]
    pub max_hits: usize,
    /// Block cache size in MiB: decompressed blocks of the records, `refs` and clusters (the
    /// index's buckets are read in place through mmap from the OS page cache).
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub cache_mb: usize,
    /// Most connections at once (fewer if the limit on open files
    /// demands it: see docs/service.md); a client beyond gets 503.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's head, and may
    /// stay idle between requests, before it is closed.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub header_timeout: u64,
    /// Seconds a stop (SIGTERM, SIGINT) waits for requests in flight
    /// before it closes the connections left.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub shutdown_grace: u64,
    /// MiB of request bodies held at once (a request that cannot get its
    /// share within --body-timeout gets 503).
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub max_inflight_mb: usize,
    /// Long reads served at once (calibrations, pages of clusters by size
    /// or distance, diffs, page queries, query batches of more than one
    /// step); one more waits 5 s for its turn, then gets 503 with
    /// Retry-After. Default: one per two --threads, at least one.
    #[arg(long, value_name = "N")]
    pub max_long_reads: Option<usize>,
    /// Seconds a calibration or a page of clusters by size or distance
    /// may run before it is stopped (503).
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub long_read_timeout: u64,
    /// A host name clients may address the service by without a token
    /// (besides localhost and loopback addresses), and whose pages may
    /// call it from a browser. Repeat for several.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Serve as a read-only replica: no writer lock, writes refused with
    /// 405, and the store opened again whenever another process (the
    /// service or ingest that holds the writer) committed, so new
    /// documents are answered within --refresh seconds. Run as many as
    /// the machine's cores and memory allow beside one writer.
    #[arg(long)]
    pub read_only: bool,
    /// Seconds between a replica's looks for the writer's new commits.
    #[arg(long, default_value_t = 2, value_name = "SECS", requires = "read_only")]
    pub refresh: u64,
}

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  simdb completions bash > ~/.local/share/bash-completion/completions/simdb
  simdb completions zsh > \"${fpath[1]}/_simdb\"
  simdb completions fish > ~/.config/fish/completions/simdb.fish";

const EXPIRE_EXAMPLES: &str = "\
Examples:
  simdb expire news.db --before 2024-01-01                 # midnight UTC
  simdb expire news.db --before 2024-06-30T18:00:00+08:00
  simdb expire news.db --before @1704067200 --dry-run";

#[derive(Debug, Args)]
pub struct ExpireArgs {
    /// The store (opened for writing).
    pub db: PathBuf,
    /// Delete documents older than this time (their own time, a crawl's
    /// fetch date or a JSONL "time", else when they were written):
    /// YYYY-MM-DD (midnight UTC), an RFC 3339 time, or @UNIX_SECONDS.
    #[arg(long, value_name = "TIME")]
    pub before: String,
    /// Count what would be deleted, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

const CLUSTERS_EXAMPLES: &str = "\
Examples:
  simdb clusters news.db                      # every cluster of 2 or more
  simdb clusters news.db --min-size 10 --json | head";

const DECIDE_EXAMPLES: &str = "\
Examples:
  simdb decide news.db not-a-copy a17 b42     # b42 leaves a17's cluster, for good
  simdb decide news.db keep b42               # b42 represents its cluster from now on
  simdb decide news.db undo 3                 # decision 3 no longer holds
  simdb decisions old.db --json > log.jsonl && simdb decide new.db replay log.jsonl";

const DEDUP_EXAMPLES: &str = "\
Examples:
  simdb dedup corpus.jsonl > unique.jsonl
  simdb dedup day1.jsonl day2.jsonl --dropped dropped.jsonl > unique.jsonl
  simdb dedup tonight.jsonl --db news.db > new.jsonl          # also drop what news.db holds
  cat docs.txt | simdb dedup - --format lines > unique.txt";

#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Inputs: files, directories, or - for standard input. Kept JSONL and
    /// text lines are written unchanged; for a directory, the kept files'
    /// paths.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// What names a WARC record's page: its URI (a later fetch replaces
    /// it), or its record id (every fetch kept; each page's time is its
    /// fetch date either way).
    #[arg(long, value_enum, default_value_t = WarcIdArg::Uri, value_name = "RULE")]
    pub warc_id: WarcIdArg,
    /// Also drop documents with a near-copy in this store (read-only; its
    /// recipe and IDF fingerprint the input). Its "not a copy" decisions
    /// hold: a document is not dropped as a copy of one, stored or earlier
    /// in the input, whose id it was decided not to be a copy of.
    #[arg(long, value_name = "DB")]
    pub db: Option<PathBuf>,
    /// Write each dropped document here as JSONL: {"id", "source",
    /// "duplicate_of", "duplicate_of_source", "in_db", "distance",
    /// "similarity", "containment"}.
    #[arg(long, value_name = "FILE")]
    pub dropped: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchFlags,
    /// Where the index of kept documents lives while the run lasts (a
    /// temporary directory inside it, removed at the end).
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Stop at the first bad line (bad lines are otherwise reported on
    /// standard error and left out of the output).
    #[arg(long)]
    pub strict: bool,
    /// Longest accepted line (or file) in bytes.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_doc_bytes: usize,
    /// Which copy of a cluster to keep: `first` (default; one pass), or
    /// `priority`, `longest`, `newest` (two passes over the inputs, which
    /// must be files). With --db, the store's keep policy by default.
    #[arg(long, value_name = "POLICY")]
    pub keep: Option<simdb::db::KeepPolicy>,
    /// Print the summary (on standard error) as JSON.
    #[arg(long)]
    pub json: bool,
}

const PAIRS_EXAMPLES: &str = "\
Examples:
  simdb pairs news.db > pairs.jsonl               # {\"a\", \"b\", \"distance\", \"similarity\"} per line
  simdb pairs news.db -k 5 --min-similarity 0     # every pair within 5 bits, unverified
  simdb pairs news.db --copies pairs              # a text stored n times as n(n-1)/2 pairs";

#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The store.
    pub db: PathBuf,
    /// Largest distance of a pair (0..=11; above 3 each bucket is also
    /// joined with its 16 neighbours, above 7 with 136).
    #[arg(short = 'k', long = "k", default_value_t = 3)]
    pub k: u32,
    /// Report a pair only if the two documents' verification sketches agree
    /// at least this much (0..1; default 0.6, 0 reports every pair within
    /// k). Pairs where a document has no sketch are reported without a
    /// similarity.
    #[arg(long)]
    pub min_similarity: Option<f64>,
    /// Documents stored more than once (the same fingerprint, sketch and length):
    /// `groups` (default) writes each set once, as {"copies": [ids],
    /// "distance": 0, "similarity": 1}, before any pair, and pairs name its
    /// first id only; `pairs` writes every pair of them (a text stored n
    /// times gives n(n-1)/2 lines).
    #[arg(long, value_enum, default_value_t = CopiesArg::Groups)]
    pub copies: CopiesArg,
    /// Block cache size in MiB: decompressed blocks of the records, `refs` and clusters (the
    /// index's buckets are read in place through mmap from the OS page cache).
    #[arg(long, default_value_t = 256)]
    pub cache_mb: usize,
}

/// `pairs --copies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CopiesArg {
    Groups,
    Pairs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store (nothing else may have it open).
    pub db: PathBuf,
    /// Change the store's keep policy (who represents a cluster: first,
    /// priority, longest or newest) and rebuild the clusters under it.
    /// Without it, the store keeps its policy (a store before format 6:
    /// priority, the rule it ranked by).
    #[arg(long, value_name = "POLICY")]
    pub keep: Option<simdb::db::KeepPolicy>,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The store.
    pub db: PathBuf,
    /// Documents to sample.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub sample: usize,
    /// Seed of the sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sketch similarity that confirms a near-copy.
    #[arg(long, value_name = "S")]
    pub min_similarity: Option<f64>,
    /// Look for each sampled document's nearest neighbour up to this
    /// distance (0..=11; on very large stores 7 is much faster: 17 instead
    /// of 137 buckets per family).
    #[arg(short = 'k', long, default_value_t = 11, value_name = "K")]
    pub max_k: u32,
    /// Write the histograms as an SVG plot here.
    #[arg(long, value_name = "FILE", default_value = "simdb-calibrate.svg")]
    pub plot: PathBuf,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

/// The configurable parts of the fingerprint recipe.
#[derive(Debug, Clone, Args)]
pub struct RecipeArgs {
    /// Keep the K heaviest TF-IDF features; 0 keeps all (the default, see README).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub top_k: u32,
    /// Add word n-gram shingles of this size as features (1 = words only,
    /// the default; 2 keeps distinct same-topic texts further apart when
    /// queries cannot be verified, e.g. stores queried by fingerprint).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub shingle: u32,
    /// Let jieba's HMM find words missing from its dictionary.
    #[arg(long)]
    pub hmm: bool,
    /// Term-frequency weighting: raw counts, or 1 + ln(count) (repeated
    /// boilerplate weighs less).
    #[arg(long, value_enum, default_value_t = TfArg::Raw)]
    pub tf: TfArg,
    /// Keep stop words as terms (by default a fixed Chinese and English
    /// list is dropped).
    #[arg(long)]
    pub keep_stop_words: bool,
    /// Features of words outside the CJK ideographs (Latin, Cyrillic,
    /// ...): `char-3-grams` (the default: a typo touches three of a word's
    /// n-grams instead of replacing the word), `char-N-grams` (N in 2..=8),
    /// or `words` (stores made before this option: the word itself).
    /// Numbers stay whole.
    #[arg(long, value_name = "FEATURES", default_value = "char-3-grams",
          value_parser = parse_latin)]
    pub latin: simdb::fingerprint::LatinFeatures,
    /// Fold traditional Chinese characters to simplified, and Taiwan
    /// vocabulary to mainland (軟體 -> 软件), before segmentation (`t2s`,
    /// the default: a copy converted between scripts gets the same
    /// fingerprint), or not (`none`, stores made before this option).
    #[arg(long, value_enum, default_value_t = ScriptArg::T2s)]
    pub script: ScriptArg,
}

fn parse_latin(s: &str) -> std::result::Result<simdb::fingerprint::LatinFeatures, String> {
    simdb::fingerprint::LatinFeatures::parse(s)
        .ok_or_else(|| format!("{s:?} is not `words` or `char-N-grams` with N in 2..=8"))
}

/// `--script`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScriptArg {
    T2s,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TfArg {
    Raw,
    Log,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Directory of the new store (must not exist, or be empty).
    pub db: PathBuf,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Learn the IDF table from these inputs (JSONL, text lines or a
    /// directory, as for ingest) instead of using jieba's: terms common in
    /// your corpus (templates, footers) weigh less. The table is kept in
    /// the store and named in its recipe.
    #[arg(long, value_name = "INPUT", num_args = 1..)]
    pub learn_idf: Vec<PathBuf>,
    /// Who represents a cluster, and is kept by `dedup`: `first` ingested
    /// (default), highest `priority` (JSONL input), `longest` text, or
    /// `newest` (by the document's own time, a WARC fetch date or a JSONL
    /// "time", else when written). Stored with the store; `simdb migrate
    /// --keep` changes it.
    #[arg(long, value_name = "POLICY", default_value = "first")]
    pub keep: simdb::db::KeepPolicy,
    /// Keep every document's text (a web page's: the text extracted from
    /// it) in the store, for review: `get` shows it and the service's
    /// review page diffs a cluster's members against their representative.
    /// Costs the texts' size (LZ4) on disk; chosen once, here.
    #[arg(long)]
    pub keep_texts: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Directory of the new store (must not exist; it appears only when complete).
    pub db: PathBuf,
    /// Inputs: JSONL {"id", "fingerprint": "16 hex digits"} per line (an
    /// optional "priority" and "time" kept, as ingest keeps them), the
    /// binary form (recognised by its magic "SIMDBFP1"; see README), or
    /// Parquet with id and fingerprint columns (recognised by its magic; a
    /// directory stands for its part files, as `simdb export --parquet`
    /// writes them).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Every input must be Parquet (a file, or a directory of part files).
    #[arg(long)]
    pub parquet: bool,
    /// Import a directory of part files without `_SUCCESS` (an export
    /// that did not finish, so perhaps only part of the store), or one
    /// whose parts differ from those its `_SUCCESS` lists (a copy that
    /// lost or changed a part).
    #[arg(long)]
    pub partial: bool,
    /// The recipe the fingerprints were made with (stored for --text queries).
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Memory for sorting, in MiB, before spilling to temporary files.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub memory_mb: usize,
    /// Do not write the frozen index (`simdb freeze` writes it later): the
    /// store is smaller by the posting families' size, and queries read
    /// every bucket through RocksDB.
    #[arg(long)]
    pub no_freeze: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WarcIdArg {
    /// WARC-Target-URI: a later fetch of a URI replaces its page.
    Uri,
    /// WARC-Record-ID: every fetch is a page of its own (with `--keep
    /// newest`, the latest fetch represents the page's cluster).
    Record,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// Directory -> dir, *.txt -> lines, *.html/*.htm -> html, *.warc and
    /// *.warc.gz -> warc, anything else (and -) -> jsonl.
    Auto,
    /// {"id": string|integer, "text": string} (or "features") per line.
    Jsonl,
    /// One document per line; id = FILE:LINE.
    Lines,
    /// Every file under a directory; id = relative path.
    Dir,
    /// Web pages (a file, or every file under a directory): charset by the
    /// WHATWG rules, main content extracted (Readability); id = path.
    Html,
    /// WARC files (.warc, .warc.gz; a directory: every one under it): each
    /// HTML response a page, id = its WARC-Target-URI; other records skipped.
    Warc,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The store.
    pub db: PathBuf,
    /// Inputs: files, directories, or - for standard input.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// What names a WARC record's page: its URI (a later fetch replaces
    /// it), or its record id (every fetch kept; each page's time is its
    /// fetch date either way).
    #[arg(long, value_enum, default_value_t = WarcIdArg::Uri, value_name = "RULE")]
    pub warc_id: WarcIdArg,
    /// Write a JSONL duplicate report here: {"id","duplicate_of","distance"}.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Do not index documents that have a near-duplicate (they are still
    /// reported), unless the store's keep policy would keep them: they
    /// would represent their cluster (never under `first`, the default).
    #[arg(long)]
    pub skip_duplicates: bool,
    #[command(flatten)]
    pub search: SearchFlags,
    /// Stop at the first bad line (documents before it are kept).
    #[arg(long)]
    pub strict: bool,
    /// Documents per atomic write batch (and per chunk whose duplicate
    /// checks read the store together).
    #[arg(long, default_value_t = simdb::ingest::DEFAULT_BATCH_SIZE, value_name = "N")]
    pub batch_size: usize,
    /// fsync every batch (slower; a batch then survives a power loss once written).
    #[arg(long)]
    pub sync: bool,
    /// Longest accepted line (or file) in bytes.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_doc_bytes: usize,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// After each committed batch, print `{"acknowledged": N}` on standard
    /// output: the first N documents of the input are in the store (durable
    /// against a crash of the process; with --sync also against power loss).
    #[arg(long)]
    pub acks: bool,
    /// Number of fingerprinting threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// When the ingest is done, write the store's frozen index again
    /// (`simdb freeze`), so queries read every bucket in place again: the
    /// last step of a night's ingest.
    #[arg(long)]
    pub freeze: bool,
}

#[derive(Debug, Args)]
#[group(id = "what", required = true, multiple = false)]
pub struct QueryWhat {
    /// Query with this text.
    #[arg(long, group = "what")]
    pub text: Option<String>,
    /// Query with the text of this file (- for stdin).
    #[arg(long, group = "what", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Query with this fingerprint (16 hex digits).
    #[arg(long, group = "what", value_name = "HEX")]
    pub fingerprint: Option<String>,
    /// Query with the fingerprint of this stored document (itself excluded).
    #[arg(long, group = "what")]
    pub id: Option<String>,
    /// JSONL queries, one per line: {"text": ...}, {"html": ...} or
    /// {"fingerprint": ...}, with an optional "id" to label the answer; one
    /// JSON answer per line.
    #[arg(long, group = "what", value_name = "FILE")]
    pub batch: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The store.
    pub db: PathBuf,
    #[command(flatten)]
    pub what: QueryWhat,
    /// Read --file as a web page: its charset by the WHATWG rules, its
    /// title and main content extracted (as `ingest --format html` does).
    #[arg(long, requires = "file")]
    pub html: bool,
    #[command(flatten)]
    pub search: SearchFlags,
    /// At most this many results per query, nearest first (default 10, at
    /// most 10,000).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    /// Block cache size in MiB: decompressed blocks of the records, `refs` and clusters (the
    /// index's buckets are read in place through mmap from the OS page cache).
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub cache_mb: usize,
    /// For each hit, show the distance, the similarity and the weighted
    /// terms the query and the document share and do not share.
    #[arg(long, conflicts_with = "batch")]
    pub explain: bool,
}

#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// Fingerprint this text.
    #[arg(long, conflicts_with = "file")]
    pub text: Option<String>,
    /// Fingerprint the text of this file. Without --text or --file, standard
    /// input is read as JSONL ({"id", "text"} or {"id", "features"} per line).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Read --file as a web page: its charset by the WHATWG rules, its
    /// title and main content extracted (as `ingest --format html` does);
    /// with --json, also what was extracted.
    #[arg(long, requires = "file")]
    pub html: bool,
    /// Use this store's recipe instead of the options below.
    #[arg(long, value_name = "DB")]
    pub db: Option<PathBuf>,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Also print the weighted features, heaviest first.
    #[arg(long)]
    pub explain: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The store.
    pub db: PathBuf,
    /// Document id.
    pub id: String,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The store.
    pub db: PathBuf,
    /// Document ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The store.
    pub db: PathBuf,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The store (opened read-only: an ingest may run meanwhile).
    pub db: PathBuf,
    /// Directory to write `part-NNNNN.parquet` files into (created; must be
    /// empty if it exists).
    #[arg(long, value_name = "DIR")]
    pub parquet: PathBuf,
    /// Rows per row group.
    #[arg(long, default_value_t = 131_072, value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group_rows: u64,
    /// Rows per file.
    #[arg(long, default_value_t = 8_388_608, value_parser = clap::value_parser!(u64).range(1..))]
    pub file_rows: u64,
}

const FREEZE_EXAMPLES: &str = "\
Examples:
  simdb freeze news.db          # after tonight's ingest
  simdb stats news.db           # 'frozen' shows the share of buckets still read from it";

#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// The store (opened for writing: no other writer meanwhile).
    pub db: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The store.
    pub db: PathBuf,
    /// Directory of the copy (must not exist).
    pub dest: PathBuf,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The store.
    pub db: PathBuf,
    /// Rebuild the refs and index families from the records (the source of
    /// truth), reset the document count, then verify. Needs the store free
    /// of other writers.
    #[arg(long)]
    pub repair: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The store.
    pub db: PathBuf,
    #[command(subcommand)]
    pub what: Decide,
    /// Print the decisions written as JSON lines (as `decisions --json`).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Decide {
    /// Documents A and B (both stored) are not copies of each other:
    /// neither is ever placed in a cluster the other represents. When one
    /// represents the cluster the other is in, the other leaves it now.
    NotACopy { a: String, b: String },
    /// Document ID (stored) is the one to keep: it represents its cluster
    /// from now on (before every member not kept; among kept documents,
    /// the latest decision first), and the members are re-checked against
    /// it.
    Keep { id: String },
    /// Undo decision SEQ (a "not a copy" or a "keep"): a pair may be
    /// placed together again by later writes and rebuilds (`verify
    /// --repair`); a kept document ranks by the keep policy again.
    Undo { seq: u64 },
    /// Write the decisions of a log (`simdb decisions --json`) into this
    /// store, in order, whether or not their documents are stored here.
    Replay { log: PathBuf },
}

#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// The store.
    pub db: PathBuf,
    /// Only the decisions after this sequence.
    #[arg(long, default_value_t = 0, value_name = "SEQ")]
    pub after: u64,
    /// One JSON object per decision per line: {"seq", "kind" (not_a_copy,
    /// keep or undo), "a", "b", "who", "at", "undoes"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ClustersArgs {
    /// The store.
    pub db: PathBuf,
    /// List only clusters of at least this many documents (>= 2).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub min_size: u64,
    /// One JSON object per cluster per line: {"id", "size",
    /// "representative", "max_distance", "members": [{"id", "distance",
    /// "priority", "ingested_at"}]}.
    #[arg(long)]
    pub json: bool,
}

/// How candidates are found and confirmed: the flags of `query`, `ingest`
/// and `dedup`, declared once (the library's `QueryOptions` and
/// `WriteOptions` carry the same three, and apply the same defaults).
#[derive(Debug, Clone, Copy, Args)]
pub struct SearchFlags {
    /// Exact mode: every document within K bits (0..=11; above 3 each
    /// family reads 17 buckets, above 7 137), as a brute-force scan would
    /// find. Without -k, a text (and a stored document's --id) is probed
    /// by confidence: every document within 3 bits and, beyond, those
    /// differing mostly in its least-confident bits (see --probe-budget);
    /// a bare fingerprint is exact at 3.
    #[arg(short, long, value_name = "K")]
    pub k: Option<u32>,
    /// Buckets read by confidence-ranked probing over the four blocks
    /// (default 112, and the 16 band buckets of a text's sketch; 0 = exact
    /// at k only, no bands). With -k, probing adds to the exact radius.
    #[arg(long, value_name = "N")]
    pub probe_budget: Option<usize>,
    /// A candidate counts only if the two texts' verification sketches
    /// agree at least this much (estimated Jaccard of their character
    /// 4-grams, or word 3-shingles for stores made before simdb 0.2; 0..1,
    /// default 0.6; 0 turns verification off, and a query then reports
    /// every candidate with its similarity). Fingerprints, and documents
    /// imported without text, have no sketch and are not checked.
    #[arg(long, value_name = "S")]
    pub min_similarity: Option<f64>,
}

impl SearchFlags {
    /// The write options of these flags (`sync` as given).
    pub fn write_options(&self, sync: bool) -> simdb::WriteOptions {
        simdb::WriteOptions {
            k: self.k,
            probe_budget: self.probe_budget,
            min_similarity: self.min_similarity,
            sync,
            max_duplicates: None,
        }
    }
}
