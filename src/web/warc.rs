//! WARC files (ISO 28500, as Heritrix, wget `--warc-file`, warcio and
//! Common Crawl write them): the HTML responses in them, as pages. Pure:
//! reads from any `BufRead` (the caller opens the file and undoes the
//! `.gz`).
//!
//! A `response` record's block is an HTTP response: its headers are
//! parsed (`httparse`), a chunked body is de-chunked and a `gzip` or
//! `deflate` one decompressed, as crawlers store what they received. A
//! `resource` record holds the document itself. A record of another type
//! (`warcinfo`, `request`, `metadata`, `revisit`, …), or whose content is
//! not HTML, is [`Record::Skipped`]. The first record that cannot be read
//! (a truncated file, damaged headers) ends the file with an error naming
//! its offset; the records before it were already given.

use std::io::{BufRead, Read};

/// The longest header line read (a WARC header, with its continuations):
/// a longer one is damage, not a header to buffer whole.
pub const MAX_HEADER_LINE: usize = 64 << 10;

/// The most header lines one record may have.
pub const MAX_HEADER_LINES: usize = 1024;

/// The bytes of HTTP headers a response's block may hold beside its body.
const HTTP_HEADERS: usize = 1 << 20;

/// An HTML response of a WARC file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `WARC-Target-URI`.
    pub uri: String,
    /// `WARC-Record-ID` (`urn:uuid:…`, without its angle brackets).
    pub record_id: String,
    /// `WARC-Date`, Unix seconds: when the page was fetched (none when
    /// the record has no date it can be read as).
    pub fetched: Option<i64>,
    /// The HTML, transfer and content encodings undone.
    pub body: Vec<u8>,
    /// The charset its `Content-Type` declared, if any.
    pub charset: Option<String>,
}

/// One record of a WARC file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Page(Response),
    /// Not an HTML page, or one larger than the limit: its URI (if any)
    /// and why.
    Skipped {
        uri: Option<String>,
        why: String,
    },
}

/// A record that could not be read: the byte offset where it starts (in
/// the decompressed stream of a `.warc.gz`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub offset: u64,
    pub reason: String,
}

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the record at byte {} cannot be read ({}): the file is truncated or damaged there",
            self.offset, self.reason
        )
    }
}

/// The records of a WARC stream, in order; after a [`Damaged`] record,
/// nothing.
///
/// Memory is bounded by the limit, not by the file: a header line longer
/// than [`MAX_HEADER_LINE`] (or more than [`MAX_HEADER_LINES`]) is damage;
/// a block longer than the limit (plus 1 MiB of HTTP headers), and the
/// block of a record that cannot be a page (`request`, `metadata`, …), is
/// passed over without being kept; a compressed body is inflated up to
/// the limit and skipped past it (review-2026-11-c, finding 2: a 3,884-byte
/// `.warc.gz` cost 3.66 GB).
pub struct Records<R: BufRead> {
    r: R,
    /// Bytes consumed so far.
    at: u64,
    max_body: usize,
    done: bool,
}

/// The records of `r`, each page's body at most `max_body` bytes (a larger
/// one is [`Record::Skipped`]).
pub fn records_within<R: BufRead>(r: R, max_body: usize) -> Records<R> {
    Records {
        r,
        at: 0,
        max_body,
        done: false,
    }
}

/// [`records_within`] the limit `simdb ingest` sets by default
/// (`--max-doc-bytes`, 64 MiB).
pub fn records<R: BufRead>(r: R) -> Records<R> {
    records_within(r, crate::ingest::read::DEFAULT_MAX_DOC_BYTES)
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = Result<Record, Damaged>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.read_record();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r.map(|r| r.map_err(|(offset, reason)| Damaged { offset, reason }))
    }
}

/// A record's headers: (name, value), names as written.
type Headers = Vec<(String, String)>;

fn header<'h>(h: &'h Headers, name: &str) -> Option<&'h str> {
    h.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl<R: BufRead> Records<R> {
    /// The next record; `None` at the end of the stream; the offset where
    /// it starts and why when it cannot be read.
    fn read_record(&mut self) -> Option<Result<Record, (u64, String)>> {
        // Blank lines between records are passed over.
        let mut offset = self.at;
        let version = loop {
            match self.line() {
                Err(e) => return Some(Err((offset, e))),
                Ok(None) => return None,
                Ok(Some(l)) if l.is_empty() => offset = self.at,
                Ok(Some(l)) => break l,
            }
        };
        let fail = |why: String| Some(Err((offset, why)));
        if !version.starts_with("WARC/") {
            return fail(format!(
                "not a WARC record (it starts {:?})",
                version.chars().take(40).collect::<String>()
            ));
        }
        let headers = match self.headers() {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        let Some(len) = header(&headers, "Content-Length").and_then(|v| v.parse::<u64>().ok())
        else {
            return fail("no Content-Length, or not a number".into());
        };
        let uri =
            header(&headers, "WARC-Target-URI").map(|u| u.trim_matches(['<', '>']).to_string());
        let kind = header(&headers, "WARC-Type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let page_kind = kind == "response" || kind == "resource";
        let limit = self.max_body.saturating_add(HTTP_HEADERS) as u64;
        let block = match self.block(len, page_kind && len <= limit) {
            Ok(b) => b,
            Err(e) => return fail(e),
        };
        // The block's end: CRLF CRLF (leniently, any line ends up to 4 bytes).
        for _ in 0..4 {
            match self.r.fill_buf() {
                Ok([b'\r' | b'\n', ..]) => {
                    self.r.consume(1);
                    self.at += 1;
                }
                _ => break,
            }
        }
        Some(Ok(match block {
            Some(b) => record(&headers, &kind, uri, &b, self.max_body),
            None if page_kind => Record::Skipped {
                uri,
                why: format!(
                    "a record of {len} bytes, larger than the limit of {} bytes; skipped",
                    self.max_body
                ),
            },
            None => Record::Skipped {
                uri,
                why: match kind.is_empty() {
                    true => "no WARC-Type".into(),
                    false => format!("a {kind} record"),
                },
            },
        }))
    }

    /// A record's header lines, up to the blank line that ends them.
    fn headers(&mut self) -> Result<Headers, String> {
        let mut headers: Headers = Vec::new();
        loop {
            let line = self.line()?.ok_or("the file ends inside its headers")?;
            if line.is_empty() {
                return Ok(headers);
            }
            if headers.len() == MAX_HEADER_LINES {
                return Err(format!("more than {MAX_HEADER_LINES} header lines"));
            }
            match (line.starts_with([' ', '\t']), headers.last_mut()) {
                // A folded line continues the header before it.
                (true, Some((_, v))) if v.len() + line.len() <= MAX_HEADER_LINE => {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                (true, _) => return Err("a header line continues nothing, or is too long".into()),
                (false, _) => match line.split_once(':') {
                    Some((n, v)) => headers.push((n.trim().to_string(), v.trim().to_string())),
                    None => return Err(format!("a header line without a colon: {line:?}")),
                },
            }
        }
    }

    /// A block of `len` bytes: kept (`keep`) or passed over.
    fn block(&mut self, len: u64, keep: bool) -> Result<Option<Vec<u8>>, String> {
        let mut b = Vec::new();
        let read = match keep {
            true => {
                b.reserve_exact(len as usize);
                (&mut self.r)
                    .take(len)
                    .read_to_end(&mut b)
                    .map(|n| n as u64)
            }
            false => std::io::copy(&mut (&mut self.r).take(len), &mut std::io::sink()),
        };
        match read {
            Ok(n) if n == len => {
                self.at += len;
                Ok(keep.then_some(b))
            }
            Ok(_) => Err("the file ends inside its block".into()),
            Err(e) => Err(format!("its block: {e}")),
        }
    }

    /// One line, without its line end (`None` at the end of the stream):
    /// at most [`MAX_HEADER_LINE`] bytes, read as UTF-8 with replacement.
    fn line(&mut self) -> Result<Option<String>, String> {
        let mut buf = Vec::new();
        let n = (&mut self.r)
            .take(MAX_HEADER_LINE as u64 + 2)
            .read_until(b'\n', &mut buf)
            .map_err(|e| e.to_string())?;
        self.at += n as u64;
        if n == 0 {
            return Ok(None);
        }
        if buf.last() != Some(&b'\n') {
            return match n > MAX_HEADER_LINE {
                true => Err(format!("a header line longer than {MAX_HEADER_LINE} bytes")),
                false => Err("the file ends inside its headers".into()),
            };
        }
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
    }
}

/// A `response` or `resource` record (`kind`) of `headers` and `block` as
/// a page, or why it is skipped.
fn record(headers: &Headers, kind: &str, uri: Option<String>, block: &[u8], max: usize) -> Record {
    let skip = |why: String| Record::Skipped {
        uri: uri.clone(),
        why,
    };
    let Some(uri_s) = uri.clone() else {
        return skip("no WARC-Target-URI".into());
    };
    let declared = header(headers, "Content-Type").unwrap_or_default();
    let (content_type, body) = if kind == "response" {
        if !declared
            .to_ascii_lowercase()
            .starts_with("application/http")
        {
            return skip(format!("a response of {declared:?}, not HTTP"));
        }
        match http_response(block, max) {
            Ok(x) => x,
            Err(why) => return skip(why),
        }
    } else {
        (
            (!declared.is_empty()).then(|| declared.to_string()),
            block.to_vec(),
        )
    };
    if !is_html(content_type.as_deref(), &body) {
        return skip(format!(
            "not HTML ({})",
            content_type.as_deref().unwrap_or("no Content-Type")
        ));
    }
    Record::Page(Response {
        record_id: header(headers, "WARC-Record-ID")
            .unwrap_or_default()
            .trim_matches(['<', '>'])
            .to_string(),
        uri: uri_s,
        fetched: header(headers, "WARC-Date")
            .and_then(|d| d.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second()),
        charset: content_type.as_deref().and_then(charset_of),
        body,
    })
}

/// The `Content-Type` and the decoded body of an HTTP response, whose
/// body decodes to at most `max` bytes (else why it is skipped).
fn http_response(block: &[u8], max: usize) -> Result<(Option<String>, Vec<u8>), String> {
    let mut headers = [httparse::EMPTY_HEADER; 256];
    let mut resp = httparse::Response::new(&mut headers);
    let start = match resp.parse(block) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("HTTP headers cut short".into()),
        Err(e) => return Err(format!("HTTP headers: {e}")),
    };
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    if let Some(code) = resp.code.filter(|c| !(200..300).contains(c)) {
        return Err(format!("HTTP status {code}"));
    }
    let content_type = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-type"))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string());
    let mut body = block[start..].to_vec();
    if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        body = dechunk(&body)?;
    }
    match header("content-encoding").as_deref() {
        None | Some("" | "identity") => {}
        Some("gzip" | "x-gzip") => {
            body = inflate(flate2::read::MultiGzDecoder::new(&body[..]), max)?
        }
        Some("deflate") => {
            body = inflate(flate2::read::ZlibDecoder::new(&body[..]), max)
                .or_else(|_| inflate(flate2::read::DeflateDecoder::new(&body[..]), max))?
        }
        Some(other) => return Err(format!("content encoding {other:?} is not read")),
    }
    Ok((content_type, body))
}

/// `r` decompressed, if it is at most `max` bytes.
fn inflate(r: impl Read, max: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    r.take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("compressed body: {e}"))?;
    match out.len() > max {
        true => Err(format!(
            "a compressed body larger than the limit of {max} bytes; skipped"
        )),
        false => Ok(out),
    }
}

/// A chunked body's data (RFC 9112, 7.1); trailers are dropped.
fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(b.len());
    loop {
        let line_end = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunked body cut short")?;
        let size_text = String::from_utf8_lossy(&b[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        b = &b[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = b.get(..size).ok_or("chunked body cut short")?;
        out.extend_from_slice(chunk);
        b = b.get(size..).unwrap_or_default();
        b = b.strip_prefix(b"\r\n").unwrap_or(b);
    }
}

/// Whether a body of `content_type` is HTML: `text/html` or XHTML, or,
/// with no type, markup that starts like HTML.
fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(t) => {
            let t = t.to_ascii_lowercase();
            let mime = t.split(';').next().unwrap_or("").trim().to_string();
            mime == "text/html" || mime == "application/xhtml+xml"
        }
        None => {
            let head: Vec<u8> = body
                .iter()
                .skip_while(|b| b.is_ascii_whitespace())
                .take(15)
                .map(u8::to_ascii_lowercase)
                .collect();
            head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
        }
    }
}

/// The `charset` parameter of a `Content-Type`.
fn charset_of(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']).to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_and_compressed_bodies_are_decoded() {
        assert_eq!(
            dechunk(b"4\r\n<htm\r\n3;x=y\r\nl>a\r\n0\r\nTrailer: z\r\n\r\n").unwrap(),
            b"<html>a"
        );
        assert!(dechunk(b"ff\r\nshort").is_err());
        assert!(dechunk(b"zz\r\n").is_err());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, "<p>新闻</p>".as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=\"GBK\"\r\nContent-Encoding: gzip\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            gz.len()
        )
        .into_bytes();
        resp.extend_from_slice(&gz);
        resp.extend_from_slice(b"\r\n0\r\n\r\n");
        let (ct, body) = http_response(&resp, 1 << 20).unwrap();
        assert_eq!(body, "<p>新闻</p>".as_bytes());
        assert_eq!(charset_of(&ct.unwrap()).as_deref(), Some("GBK"));
        assert!(http_response(b"HTTP/1.1 404 Not Found\r\n\r\n", 1 << 20).is_err());
        assert!(http_response(b"HTTP/1.1 200 OK\r\nContent-Type: te", 1 << 20).is_err());
    }

    #[test]
    fn html_is_told_by_its_type_or_its_start() {
        assert!(is_html(Some("text/html; charset=utf-8"), b""));
        assert!(is_html(Some("application/xhtml+xml"), b""));
        assert!(!is_html(Some("image/jpeg"), b"<html>"));
        assert!(is_html(None, b"\n <!DOCTYPE html><html>"));
        assert!(!is_html(None, b"%PDF-1.4"));
    }
}
