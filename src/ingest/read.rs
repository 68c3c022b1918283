//! Input readers: JSONL, plain text (one document per line) and directories
//! of text files. Each yields documents or problems, never panics, and reads
//! with bounded memory (a line longer than the limit is refused and skipped).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

pub use crate::db::input::{
    doc_from_value, parse_features, parse_json_doc, parse_json_line, parse_time, BadField, Given,
};
use crate::db::write::Doc;
use crate::fingerprint::Content;

/// The longest line (or file, for directories) accepted by default: 64 MiB.
pub const DEFAULT_MAX_DOC_BYTES: usize = 64 << 20;

/// The format of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"id": string|integer, "text": string}` per line, or
    /// `{"id": …, "features": {"name": weight, …}}`; other fields ignored.
    Jsonl,
    /// One document per line; the id is `NAME:LINE` (1-based). Blank lines are skipped.
    Lines,
    /// Every regular file under a directory, recursively, in path order; the
    /// id is the path relative to the directory, with `/` separators.
    Dir,
    /// Web pages: a file (its id the path as given) or every regular file
    /// under a directory (as [`Format::Dir`]), each decoded and extracted
    /// to its main content ([`crate::web`]).
    Html,
    /// WARC files (`.warc`, `.warc.gz`; a directory: every such file
    /// under it, in path order): each HTML response a page, its id the
    /// `WARC-Target-URI` ([`crate::web::warc`]); other records skipped.
    Warc,
}

/// One input of an ingest run.
#[derive(Debug, Clone)]
pub struct Input {
    /// A path, or `-` for standard input.
    pub path: PathBuf,
    pub format: Format,
    /// Keep each document's line as read ([`Doc::line`]), for a caller
    /// that writes lines back out unchanged (`simdb dedup`).
    pub keep_lines: bool,
    /// What names a WARC record's page.
    pub warc_id: WarcId,
}

/// What names the page of a WARC record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WarcId {
    /// Its `WARC-Target-URI`: a later fetch of a URI replaces the page.
    #[default]
    Uri,
    /// Its `WARC-Record-ID`: every fetch is a page of its own (the `newest`
    /// keep policy then makes the latest fetch of a page represent it).
    Record,
}

impl Input {
    /// `path` with its format guessed: a directory is [`Format::Dir`], a
    /// `.txt` file is [`Format::Lines`], an `.html` or `.htm` file is
    /// [`Format::Html`], a `.warc` or `.warc.gz` file is [`Format::Warc`],
    /// anything else (stdin included) is JSONL.
    pub fn guess(path: impl Into<PathBuf>) -> Input {
        let path = path.into();
        let format = if path.is_dir() {
            Format::Dir
        } else if path.extension().is_some_and(|e| e == "txt") {
            Format::Lines
        } else if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
        {
            Format::Html
        } else if is_warc(&path) {
            Format::Warc
        } else {
            Format::Jsonl
        };
        Input {
            path,
            format,
            keep_lines: false,
            warc_id: WarcId::Uri,
        }
    }

    /// Whether the input is of web pages.
    pub fn is_pages(&self) -> bool {
        matches!(self.format, Format::Html | Format::Warc)
    }

    /// The name used in messages and `Lines` ids.
    pub fn name(&self) -> String {
        if self.path.as_os_str() == "-" {
            "-".to_string()
        } else {
            self.path.display().to_string()
        }
    }
}

/// Something wrong with one line or file of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `name:line`, or a path.
    pub location: String,
    pub reason: String,
    /// Not a problem but a record of an input that is not a document (a
    /// WARC record that is not an HTML response): counted apart, not
    /// reported, never a reason to stop.
    pub skipped: bool,
}

impl Problem {
    /// A problem at `location`.
    pub fn new(location: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            location: location.into(),
            reason: reason.into(),
            skipped: false,
        }
    }

    /// The problem of a document that could not be analysed.
    pub fn of(doc: &Doc, e: &crate::Error) -> Problem {
        Problem::new(doc.source.clone(), e.to_string())
    }

    /// The error that ends a `--strict` run at this problem.
    pub fn stopped(&self) -> crate::Error {
        crate::Error::Input(format!("{self} (stopped: --strict)"))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.reason)
    }
}

/// What a reader yields.
pub type Item = Result<Doc, Problem>;

/// Past this many bytes a line's buffer grows to the limit at once (see
/// [`read_line_bounded`]).
const LONG_LINE: usize = 8 << 20;

/// Reads one line into `buf` (without the newline), at most `max` bytes.
/// Returns `Ok(None)` at end of input, `Ok(Some(true))` for a line,
/// `Ok(Some(false))` for a line that was too long (its bytes are skipped).
fn read_line_bounded(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut any = false;
    let mut too_long = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        any = true;
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], Some(i + 1)),
            None => (avail, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                // A long line grows the buffer to the limit in one step
                // once it passes 8 MiB, not by doubling: each doubling
                // frees a block the allocator may keep resident a while
                // (a 1 GiB line peaked at 250-450 MiB by doubling).
                let need = buf.len() + chunk.len();
                if need > buf.capacity() && buf.capacity() >= LONG_LINE {
                    buf.reserve_exact(max - buf.len());
                }
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(avail.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(!too_long))
}

/// Opens an input and returns an iterator of its items.
pub fn read(
    input: &Input,
    max_doc_bytes: usize,
) -> std::io::Result<Box<dyn Iterator<Item = Item> + Send>> {
    let name = input.name();
    match input.format {
        Format::Dir => Ok(Box::new(read_dir(input.path.clone(), max_doc_bytes, false))),
        Format::Html if input.path.is_dir() => {
            Ok(Box::new(read_dir(input.path.clone(), max_doc_bytes, true)))
        }
        Format::Warc if name == "-" => Err(no_stdin("warc")),
        Format::Html if name == "-" => Err(no_stdin("html")),
        Format::Warc => {
            let files: Vec<PathBuf> = if input.path.is_dir() {
                walkdir::WalkDir::new(&input.path)
                    .sort_by_file_name()
                    .into_iter()
                    .filter_map(std::result::Result::ok)
                    .filter(|e| e.file_type().is_file() && is_warc(e.path()))
                    .map(walkdir::DirEntry::into_path)
                    .collect()
            } else {
                vec![input.path.clone()]
            };
            let rule = input.warc_id;
            Ok(Box::new(
                files
                    .into_iter()
                    .flat_map(move |f| read_warc(f, max_doc_bytes, rule)),
            ))
        }
        Format::Html => {
            let root = input.path.parent().unwrap_or(Path::new("")).to_path_buf();
            let item = read_file_doc(&root, &input.path, max_doc_bytes, true).map(|mut d| {
                d.id = name.clone();
                d
            });
            Ok(Box::new(std::iter::once(item)))
        }
        Format::Jsonl | Format::Lines => {
            let reader: Box<dyn BufRead + Send> = if name == "-" {
                Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()))
            } else {
                Box::new(BufReader::with_capacity(1 << 20, File::open(&input.path)?))
            };
            let mut lines = LineReader::new(reader, name, input.format, max_doc_bytes);
            lines.keep = input.keep_lines;
            Ok(Box::new(lines))
        }
    }
}

/// The UTF-8 encoding of U+FEFF, the byte-order mark.
pub const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// The documents of `reader` in `format` (`Jsonl` or `Lines`; `Dir` reads
/// as `Lines`), named `name:line`, lines longer than `max_doc_bytes` refused.
/// A byte-order mark before the first line is dropped.
pub fn read_lines(
    reader: Box<dyn BufRead + Send>,
    name: String,
    format: Format,
    max_doc_bytes: usize,
) -> impl Iterator<Item = Item> + Send {
    LineReader::new(reader, name, format, max_doc_bytes)
}

struct LineReader {
    reader: Box<dyn BufRead + Send>,
    name: String,
    format: Format,
    line: u64,
    buf: Vec<u8>,
    max: usize,
    done: bool,
    /// Keep each document's line ([`Doc::line`]).
    keep: bool,
}

impl LineReader {
    fn new(
        reader: Box<dyn BufRead + Send>,
        name: String,
        format: Format,
        max_doc_bytes: usize,
    ) -> LineReader {
        LineReader {
            reader,
            name,
            format,
            line: 0,
            buf: Vec::new(),
            max: max_doc_bytes,
            done: false,
            keep: false,
        }
    }
}

impl Iterator for LineReader {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            if self.done {
                return None;
            }
            self.line += 1;
            let location = format!("{}:{}", self.name, self.line);
            let problem = |reason: String| Some(Err(Problem::new(location.clone(), reason)));
            match read_line_bounded(&mut self.reader, &mut self.buf, self.max) {
                Err(e) => {
                    self.done = true;
                    return problem(format!("read error: {e}"));
                }
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Ok(Some(false)) => {
                    return problem(format!(
                        "line longer than the limit of {} bytes (raise it with --max-doc-bytes); skipped",
                        self.max
                    ))
                }
                Ok(Some(true)) => {}
            }
            // A UTF-8 byte-order mark before the first line (files saved
            // on Windows often start with one) is not part of the data.
            if self.line == 1 && self.buf.starts_with(UTF8_BOM) {
                self.buf.drain(..UTF8_BOM.len());
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue; // blank lines are not documents
            }
            let line = self.keep.then(|| self.buf.clone());
            return Some(match self.format {
                Format::Jsonl => match parse_json_line(&self.buf) {
                    Ok(g) => Ok(g.into_doc(location, line)),
                    Err(reason) => Err(Problem::new(location, reason)),
                },
                _ => match std::str::from_utf8(&self.buf) {
                    Ok(t) => Ok(Doc {
                        id: location.clone(),
                        content: Content::Text(t.to_string()),
                        source: location,
                        line,
                        priority: None,
                        dated: None,
                    }),
                    Err(e) => Err(Problem::new(
                        location,
                        format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                    )),
                },
            });
        }
    }
}

fn read_dir(root: PathBuf, max: usize, html: bool) -> impl Iterator<Item = Item> + Send {
    walkdir::WalkDir::new(&root)
        .sort_by_file_name()
        .into_iter()
        .filter_map(move |e| {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    return Some(Err(Problem::new(
                        err.path().unwrap_or(&root).display().to_string(),
                        format!("cannot read: {err}"),
                    )))
                }
            };
            if !e.file_type().is_file() {
                return None;
            }
            Some(read_file_doc(&root, e.path(), max, html))
        })
}

/// The error of a format that reads files, given standard input.
fn no_stdin(format: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("--format {format} reads files and directories, not standard input"),
    )
}

/// Whether `path` names a WARC file (`.warc`, `.warc.gz`).
fn is_warc(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".warc") || name.ends_with(".warc.gz")
}

/// The pages of one WARC file (see [`Format::Warc`]); a record that
/// cannot be read ends the file with a problem naming its offset.
fn read_warc(path: PathBuf, max: usize, rule: WarcId) -> Box<dyn Iterator<Item = Item> + Send> {
    let location = path.display().to_string();
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            return Box::new(std::iter::once(Err(Problem::new(
                location,
                format!("cannot open: {e}"),
            ))))
        }
    };
    let gz = location.to_ascii_lowercase().ends_with(".gz");
    let reader: Box<dyn BufRead + Send> = if gz {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(BufReader::new(file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, file))
    };
    let mut n = 0u64;
    Box::new(crate::web::warc::records_within(reader, max).map(move |r| {
        n += 1;
        let at = format!("{location}: record {n}");
        match r {
            Err(d) => Err(Problem::new(at, d.to_string())),
            Ok(crate::web::warc::Record::Skipped { uri, why }) => Err(Problem {
                location: uri.map_or(at, |u| format!("{location}: {u}")),
                reason: why,
                skipped: true,
            }),
            Ok(crate::web::warc::Record::Page(p)) if p.body.len() > max => Err(Problem::new(
                format!("{location}: {}", p.uri),
                format!("page larger than the limit of {max} bytes; skipped"),
            )),
            Ok(crate::web::warc::Record::Page(p)) => Ok(Doc {
                source: format!("{location}: {}", p.uri),
                id: match rule {
                    WarcId::Uri => p.uri,
                    WarcId::Record => p.record_id,
                },
                content: Content::Html(crate::fingerprint::Html {
                    bytes: p.body,
                    charset: p.charset,
                }),
                line: None,
                priority: None,
                // A fetch date past 2106 is damage: the page counts
                // as undated.
                dated: p
                    .fetched
                    .and_then(|t| u64::try_from(t).ok())
                    .filter(|t| *t <= crate::db::input::LATEST_TIME),
            }),
        }
    }))
}

/// One file as a document: its text (UTF-8), or a web page (`html`).
fn read_file_doc(root: &Path, path: &Path, max: usize, html: bool) -> Item {
    let location = path.display().to_string();
    let problem = |reason: String| Err(Problem::new(location.clone(), reason));
    let rel = path.strip_prefix(root).unwrap_or(path);
    let Some(id) = rel
        .to_str()
        .map(|s| s.replace(std::path::MAIN_SEPARATOR, "/"))
    else {
        return problem("file name is not valid UTF-8".into());
    };
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) => return problem(format!("cannot open: {e}")),
    };
    let mut bytes = Vec::new();
    if let Err(e) = f.take(max as u64 + 1).read_to_end(&mut bytes) {
        return problem(format!("read error: {e}"));
    }
    if bytes.len() > max {
        return problem(format!(
            "file larger than the limit of {max} bytes; skipped"
        ));
    }
    if html {
        return Ok(Doc {
            id,
            content: Content::Html(crate::fingerprint::Html {
                bytes,
                charset: None,
            }),
            source: location,
            line: None,
            priority: None,
            dated: None,
        });
    }
    match String::from_utf8(bytes) {
        Ok(t) => Ok(Doc {
            id,
            content: Content::Text(t),
            source: location,
            line: None,
            priority: None,
            dated: None,
        }),
        Err(e) => problem(format!(
            "invalid UTF-8 at byte {}",
            e.utf8_error().valid_up_to()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_docs_good_and_bad() {
        let ok = |s: &str| parse_json_doc(s.as_bytes()).unwrap();
        assert_eq!(ok(r#"{"id":"a","text":"t","x":1}"#).0, "a");
        assert_eq!(ok(r#"{"id":42,"text":"t"}"#).0, "42");
        assert_eq!(
            ok(r#"{"id":"f","features":{"a":1.5}}"#).1,
            Content::Features(vec![("a".into(), 1.5)])
        );
        let err = |s: &str| parse_json_doc(s.as_bytes()).unwrap_err();
        assert!(err(r#"{"id":"a","text":"#).contains("invalid JSON"));
        assert_eq!(err("[1,2]"), "not a JSON object");
        assert_eq!(err(r#"{"text":"t"}"#), "missing \"id\"");
        assert_eq!(
            ok(r#"{"id":"f","fingerprint":"00000000000000ff"}"#).1,
            Content::Fingerprint(crate::Fingerprint(255))
        );
        assert!(err(r#"{"id":"f","fingerprint":"ff"}"#).contains("16 hex digits"));
        assert!(err(r#"{"id":"f","fingerprint":"ff","text":"x"}"#).contains("not several"));
        assert_eq!(err(r#"{"id":"","text":"t"}"#), "empty \"id\"");
        assert!(err(r#"{"id":1.5,"text":"t"}"#).contains("string or an integer"));
        assert!(err(r#"{"id":"a","text":5}"#).contains("must be a string"));
        assert_eq!(err(r#"{"id":"a"}"#), "missing \"text\"");
        assert!(parse_json_doc(b"{\"id\":\"a\",\"text\":\"\xff\"}").is_err());
    }

    #[test]
    fn bounded_lines() {
        let data = b"short\nthis line is long\r\nend";
        let mut r = &data[..];
        let mut buf = Vec::new();
        assert_eq!(read_line_bounded(&mut r, &mut buf, 8).unwrap(), Some(true));
        assert_eq!(buf, b"short");
        assert_eq!(read_line_bounded(&mut r, &mut buf, 8).unwrap(), Some(false));
        assert_eq!(read_line_bounded(&mut r, &mut buf, 8).unwrap(), Some(true));
        assert_eq!(buf, b"end");
        assert_eq!(read_line_bounded(&mut r, &mut buf, 8).unwrap(), None);
    }
}
