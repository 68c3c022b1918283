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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An HTML response of a WARC file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `WARC-Target-URI`.
    pub uri: String,
    /// `WARC-Record-ID` (`urn:uuid:…`, without its angle brackets).
    pub record_id: String,
    /// `WARC-Date`, Unix seconds: when the page was fetched.
    pub fetched: i64,
    /// The HTML, transfer and content encodings undone.
    pub body: Vec<u8>,
    /// The charset its `Content-Type` declared, if any.
    pub charset: Option<String>,
}

/// One record of a WARC file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Page(Response),
    /// Not an HTML page: its URI (if any) and why.
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
pub struct Records<R: BufRead> {
    records: warc::RecordIter<Counted<R>>,
    at: Arc<AtomicU64>,
    done: bool,
}

/// The records of `r`.
pub fn records<R: BufRead>(r: R) -> Records<R> {
    let at = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: r,
        at: at.clone(),
    };
    Records {
        records: warc::WarcReader::new(counted).iter_records(),
        at,
        done: false,
    }
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = Result<Record, Damaged>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let offset = self.at.load(Ordering::Relaxed);
        let Some(next) = self.records.next() else {
            // The reader ends a file cut inside a record's headers as if
            // the file had ended: the bytes it consumed tell.
            self.done = true;
            return (self.at.load(Ordering::Relaxed) > offset).then(|| {
                Err(Damaged {
                    offset,
                    reason: "the file ends inside its headers".into(),
                })
            });
        };
        match next {
            Ok(r) => Some(Ok(record(&r))),
            Err(e) => {
                self.done = true;
                Some(Err(Damaged {
                    offset,
                    reason: e.to_string(),
                }))
            }
        }
    }
}

fn record(r: &warc::Record<warc::BufferedBody>) -> Record {
    let uri = r
        .header(warc::WarcHeader::TargetURI)
        .map(|u| u.trim().trim_matches(['<', '>']).to_string());
    let skip = |why: String| Record::Skipped {
        uri: uri.clone(),
        why,
    };
    let Some(uri_s) = uri.clone() else {
        return skip("no WARC-Target-URI".into());
    };
    let (content_type, body) = match r.warc_type() {
        warc::RecordType::Response => {
            let declared = r.header(warc::WarcHeader::ContentType).unwrap_or_default();
            if !declared
                .to_ascii_lowercase()
                .starts_with("application/http")
            {
                return skip(format!("a response of {declared:?}, not HTTP"));
            }
            match http_response(r.body()) {
                Ok(x) => x,
                Err(why) => return skip(why),
            }
        }
        warc::RecordType::Resource => (
            r.header(warc::WarcHeader::ContentType)
                .map(|c| c.into_owned()),
            r.body().to_vec(),
        ),
        t => return skip(format!("a {t} record")),
    };
    if !is_html(content_type.as_deref(), &body) {
        return skip(format!(
            "not HTML ({})",
            content_type.as_deref().unwrap_or("no Content-Type")
        ));
    }
    Record::Page(Response {
        record_id: r.warc_id().trim().trim_matches(['<', '>']).to_string(),
        uri: uri_s,
        fetched: r.date().timestamp(),
        charset: content_type.as_deref().and_then(charset_of),
        body,
    })
}

/// The `Content-Type` and the decoded body of an HTTP response.
fn http_response(block: &[u8]) -> Result<(Option<String>, Vec<u8>), String> {
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
        Some("gzip" | "x-gzip") => body = inflate(flate2::read::MultiGzDecoder::new(&body[..]))?,
        Some("deflate") => {
            body = inflate(flate2::read::ZlibDecoder::new(&body[..]))
                .or_else(|_| inflate(flate2::read::DeflateDecoder::new(&body[..])))?
        }
        Some(other) => return Err(format!("content encoding {other:?} is not read")),
    }
    Ok((content_type, body))
}

fn inflate(mut r: impl Read) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map_err(|e| format!("compressed body: {e}"))?;
    Ok(out)
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

/// A reader that counts the bytes its user consumed.
struct Counted<R> {
    inner: R,
    at: Arc<AtomicU64>,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.at.fetch_add(amt as u64, Ordering::Relaxed);
        self.inner.consume(amt);
    }
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
        let (ct, body) = http_response(&resp).unwrap();
        assert_eq!(body, "<p>新闻</p>".as_bytes());
        assert_eq!(charset_of(&ct.unwrap()).as_deref(), Some("GBK"));
        assert!(http_response(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(http_response(b"HTTP/1.1 200 OK\r\nContent-Type: te").is_err());
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
