//! The `simdb` command: a thin client of the library. Each command returns
//! whether it found something (exit 0) or not (exit 1); errors exit 2.

pub mod args;

mod backup;
mod calibrate;
mod clusters;
mod decide;
mod dedup;
mod delete;
mod expire;
mod export;
mod fingerprint;
mod freeze;
mod get;
mod import;
mod ingest;
mod init;
mod migrate;
mod pairs;
mod query;
mod serve;
mod stats;
mod verify;

/// What the subcommand files use.
mod prelude {
    pub(super) use std::fs::File;
    pub(super) use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
    pub(super) use std::path::Path;

    pub(super) use anyhow::{bail, Context, Result};
    pub(super) use serde_json::json;
    pub(super) use simdb::ingest::{self, DuplicatePolicy, Event, Format, Input};
    pub(super) use simdb::{Db, Fingerprint, Fingerprinter, Hit, Recipe};

    pub(super) use super::args::*;
    pub(super) use super::{
        format_unix, inputs, mib, note_freshness, open_reader, parse_time, read_text, recipe,
        view_text, write_error,
    };
}

use prelude::*;

fn recipe(a: &RecipeArgs) -> Recipe {
    let mut r = Recipe::with(a.top_k, a.shingle, a.hmm);
    if a.tf == TfArg::Log {
        r = r.with_log_tf();
    }
    if a.keep_stop_words {
        r = r.keeping_stop_words();
    }
    if a.script == ScriptArg::None {
        r = r.without_script_folding();
    }
    r.with_latin(a.latin)
}

pub fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Init(a) => init::init(a),
        Command::Ingest(a) => ingest::ingest_cmd(a),
        Command::Import(a) => import::import_cmd(a),
        Command::Query(a) => query::query(a),
        Command::Fingerprint(a) => fingerprint::fingerprint(a),
        Command::Get(a) => get::get(a),
        Command::Delete(a) => delete::delete(a),
        Command::Stats(a) => stats::stats(a),
        Command::Migrate(a) => migrate::migrate(a),
        Command::Verify(a) => verify::verify(a),
        Command::Backup(a) => backup::backup(a),
        Command::Freeze(a) => freeze::freeze(a),
        Command::Export(a) => export::export(a),
        Command::Calibrate(a) => calibrate::calibrate(a),
        Command::Clusters(a) => clusters::clusters(a),
        Command::Expire(a) => expire::expire(a),
        Command::Dedup(a) => dedup::dedup(a),
        Command::Pairs(a) => pairs::pairs(a),
        Command::Decide(a) => decide::decide(a),
        Command::Decisions(a) => decide::decisions(a),
        Command::Serve(a) => serve::serve(a),
        Command::Completions(a) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(a.shell, &mut cmd, "simdb", &mut io::stdout());
            Ok(true)
        }
    }
}

fn read_text(path: &Path) -> Result<String> {
    let mut s = String::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
    } else {
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut s))
            .with_context(|| format!("{}: cannot read as UTF-8 text", path.display()))?;
    }
    Ok(s)
}

/// The bytes of `path` (`-`: standard input), for a web page.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut b = Vec::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .read_to_end(&mut b)
            .context("reading standard input")?;
    } else {
        b = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    }
    Ok(b)
}

/// `n` MiB in bytes, or an error naming the option when that overflows.
fn mib(option: &str, n: usize) -> Result<usize> {
    n.checked_mul(1 << 20).ok_or_else(|| {
        anyhow::anyhow!(
            "{option} {n} is too large (at most {} MiB)",
            usize::MAX >> 20
        )
    })
}

/// The inputs named on the command line, in `format` (guessed per path
/// with `auto`); every path but `-` must exist.
fn inputs(
    paths: &[std::path::PathBuf],
    format: FormatArg,
    warc_id: args::WarcIdArg,
    keep_lines: bool,
) -> Result<Vec<Input>> {
    let inputs: Vec<Input> = paths
        .iter()
        .map(|p| {
            let mut i = Input::guess(p);
            i.format = match format {
                FormatArg::Auto => i.format,
                FormatArg::Jsonl => Format::Jsonl,
                FormatArg::Lines => Format::Lines,
                FormatArg::Dir => Format::Dir,
                FormatArg::Html => Format::Html,
                FormatArg::Warc => Format::Warc,
            };
            i.keep_lines = keep_lines;
            i.warc_id = match warc_id {
                args::WarcIdArg::Uri => simdb::ingest::read::WarcId::Uri,
                args::WarcIdArg::Record => simdb::ingest::read::WarcId::Record,
            };
            i
        })
        .collect();
    for i in &inputs {
        if i.path.as_os_str() != "-" && !i.path.exists() {
            bail!("{}: no such file or directory", i.path.display());
        }
    }
    Ok(inputs)
}

/// A write error inside a library callback, as the library's I/O error on
/// `path` (`<stdout>` for standard output): it stops the library's run and
/// keeps the `io::Error` in the chain, so a closed pipe is not reported.
fn write_error(path: impl Into<std::path::PathBuf>) -> impl FnOnce(io::Error) -> simdb::Error {
    let path = path.into();
    move |source| simdb::Error::Io { path, source }
}

/// A read-only handle with a block cache of `cache_mb` MiB.
fn open_reader(path: &Path, cache_mb: usize) -> Result<Db> {
    Ok(Db::options()
        .read_only()
        .tuning(simdb::Tuning {
            block_cache_bytes: mib("--cache-mb", cache_mb)?,
            ..Default::default()
        })
        .open(path)?)
}

/// How fresh a view is, in words.
fn view_text(v: &simdb::db::View) -> String {
    let when = format_unix(v.opened_at);
    match (v.read_only, v.writer_active) {
        (false, _) => format!(
            "current (opened for writing at {when}, sequence {})",
            v.sequence
        ),
        (true, false) => format!("as of {when} (sequence {}); no writer active", v.sequence),
        (true, true) => format!(
            "as of {when} (sequence {}); another process is writing now, newer documents may exist",
            v.sequence
        ),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` of Unix seconds.
fn format_unix(secs: u64) -> String {
    match i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
    {
        Some(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        None => format!("@{secs}"),
    }
}

/// A time given on the command line: `YYYY-MM-DD` (midnight UTC), an RFC
/// 3339 timestamp (`2024-03-01T06:00:00Z`, `…+08:00`), or `@SECONDS`.
fn parse_time(s: &str) -> Result<u64> {
    let secs = if let Some(n) = s.strip_prefix('@') {
        n.parse::<i64>()
            .with_context(|| format!("{s:?}: not a number of seconds"))?
    } else if let Ok(t) = s.parse::<jiff::Timestamp>() {
        t.as_second()
    } else {
        let d: jiff::civil::Date = s.parse().with_context(|| {
            format!("{s:?}: not a date (YYYY-MM-DD), an RFC 3339 time or @SECONDS")
        })?;
        d.to_zoned(jiff::tz::TimeZone::UTC)
            .with_context(|| format!("{s:?}: out of range"))?
            .timestamp()
            .as_second()
    };
    u64::try_from(secs).with_context(|| format!("{s:?} is before 1970"))
}

/// On standard error, when another process writes to the store: how fresh
/// this read-only answer is.
fn note_freshness(db: &Db) {
    let v = db.admin().view();
    if v.writer_active {
        eprintln!("simdb: note: {}: {}", db.path().display(), view_text(&v));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unix_seconds_as_utc() {
        assert_eq!(super::format_unix(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::format_unix(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(super::format_unix(951_782_400), "2000-02-29 00:00:00 UTC");
    }
}
