//! Web pages: generated sites (templates around articles), charsets, the
//! fallback to visible text, and the store's record of the extraction.

use crate::common::{self, sites::Site};

use rand::prelude::*;
use simdb::ingest::{self, read::Format, Event, Input};
use simdb::{Content, Db, Recipe};

fn words<'a>(
    vocab: &'a [&'static str],
) -> impl Fn(&mut rand_chacha::ChaCha8Rng, usize) -> String + 'a {
    move |rng, n| (0..n).map(|_| *vocab.choose(rng).unwrap()).collect()
}

/// An article's paragraphs (40 words each) and title.
fn article(rng: &mut rand_chacha::ChaCha8Rng, vocab: &[&str], n: usize) -> (String, Vec<String>) {
    let w = common::article(rng, vocab, n);
    let title = common::article(rng, vocab, 6).concat();
    (title, w.chunks(40).map(|c| c.concat()).collect())
}

fn pages(dir: &std::path::Path) -> Input {
    Input {
        path: dir.to_path_buf(),
        format: Format::Html,
        keep_lines: false,
        warc_id: Default::default(),
    }
}

/// Ingests the pages under `dir` into a new store: the summary and the
/// reported (id, duplicate of) pairs.
fn ingest_pages(
    t: &common::TempDb,
    dir: &std::path::Path,
) -> (ingest::Summary, Vec<(String, String)>) {
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut pairs = Vec::new();
    let sum = ingest::run(&mut db, &[pages(dir)], &Default::default(), |e| {
        if let Event::Duplicate(r) = e {
            pairs.push((r.id.clone(), r.duplicate_of.clone()));
        }
    })
    .unwrap();
    (sum, pairs)
}

#[test]
fn the_same_article_in_two_templates_is_a_copy_and_articles_of_one_template_are_not() {
    let vocab = common::vocab();
    let words = words(&vocab);
    let mut rng = common::rng(40);
    let sites: Vec<Site> = (0..6).map(|i| Site::new(&mut rng, &words, i)).collect();
    let t = common::TempDb::new();
    let dir = t.dir.path().join("pages");
    let n = 60;
    for j in 0..n {
        // Some articles are shorter than the larger templates' text.
        let (title, paras) = article(&mut rng, &vocab, if j % 4 == 0 { 120 } else { 300 });
        let (a, b) = (j % 6, (j + 1 + j / 6) % 6);
        for (side, s) in [("a", a), ("b", b)] {
            let p = dir.join(side).join(format!("{j:03}.html"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, sites[s].page(&mut rng, &title, &paras)).unwrap();
        }
    }
    let (sum, pairs) = ingest_pages(&t, &dir);
    assert_eq!(sum.read, 2 * n as u64);
    assert!(
        sum.writes.pages.article >= 2 * n as u64 * 95 / 100,
        "{:?}",
        sum.writes.pages
    );
    let article_of = |id: &str| id[2..5].to_string();
    let found = (0..n)
        .filter(|j| {
            let b = format!("b/{j:03}.html");
            pairs
                .iter()
                .any(|(x, y)| *x == b && article_of(y) == format!("{j:03}"))
        })
        .count();
    let false_pairs = pairs
        .iter()
        .filter(|(x, y)| article_of(x) != article_of(y))
        .count();
    // Every page of a site shares its template with 19 others.
    assert!(found * 100 >= n * 95, "found {found} of {n}: {pairs:?}");
    assert!(false_pairs * 100 <= 2 * n, "{false_pairs} false: {pairs:?}");

    // Without extraction (the pages' visible text) the templates win.
    let texts: Vec<(String, String)> = walk(&dir)
        .into_iter()
        .map(|p| {
            let html = std::fs::read_to_string(&p).unwrap();
            let doc = simdb::web::visible_text(&html);
            (p.strip_prefix(&dir).unwrap().display().to_string(), doc)
        })
        .collect();
    let t2 = common::TempDb::new();
    let mut lines = String::new();
    for (id, text) in &texts {
        lines += &serde_json::json!({"id": id, "text": text}).to_string();
        lines.push('\n');
    }
    let input = t2.file("visible.jsonl", lines);
    let mut db = Db::options().create(t2.path(), Recipe::default()).unwrap();
    let (mut stripped_found, mut stripped_false) = (0, 0);
    ingest::run(&mut db, &[Input::guess(&input)], &Default::default(), |e| {
        if let Event::Duplicate(r) = e {
            let same = article_of(&r.id) == article_of(&r.duplicate_of);
            stripped_found += usize::from(same);
            stripped_false += usize::from(!same);
        }
    })
    .unwrap();
    assert!(
        stripped_found < found,
        "tag-stripped text: {stripped_found} found, {stripped_false} false; extracted: {found}, {false_pairs}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn a_gbk_page_and_its_utf8_twin_have_one_fingerprint() {
    let vocab = common::vocab();
    let words = words(&vocab);
    let mut rng = common::rng(41);
    let site = Site::new(&mut rng, &words, 0);
    let (title, paras) = article(&mut rng, &vocab, 300);
    let utf8 = site.page(&mut rng.clone(), &title, &paras);
    let declared = utf8.replace("charset=\"utf-8\"", "charset=\"gbk\"");
    let gbk = encoding_rs::GBK.encode(&declared).0.into_owned();
    let gb18030 = encoding_rs::GB18030
        .encode(&utf8.replace("charset=\"utf-8\"", "charset=\"gb18030\""))
        .0
        .into_owned();
    let undeclared = encoding_rs::GBK
        .encode(&utf8.replace("<meta charset=\"utf-8\">", ""))
        .0
        .into_owned();
    let fp = simdb::Fingerprinter::new(Recipe::default());
    let of = |bytes: Vec<u8>, charset: Option<&str>| {
        let c = Content::Html(simdb::fingerprint::Html {
            bytes,
            charset: charset.map(str::to_string),
        });
        c.fingerprint(&fp).unwrap()
    };
    let want = of(utf8.clone().into_bytes(), None);
    assert_eq!(of(gbk.clone(), None), want, "<meta charset=gbk>");
    assert_eq!(of(gb18030, None), want, "gb18030");
    assert_eq!(of(undeclared.clone(), None), want, "guessed");
    assert_eq!(
        of(undeclared, Some("GBK")),
        want,
        "declared by the transport"
    );
    let page = simdb::web::page(&gbk, None);
    assert_eq!(page.encoding, "GBK");
    assert!(page.text().starts_with(&title), "{}", page.title);
    assert!(page.body.contains(&paras[3]));
    for noise in ["var site", ".nav{", "u25"] {
        assert!(!page.text().contains(noise), "{noise}");
    }
}

#[test]
fn a_page_without_an_article_falls_back_to_its_visible_text_and_is_counted() {
    let t = common::TempDb::new();
    let dir = t.dir.path().join("pages");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("menu.html"),
        "<html><head><title>站点导航</title><script>var x = '不可见';</script></head>\
         <body><ul><li><a href='/a'>新闻联播</a></li><li><a href='/b'>天气预报</a></li>\
         <li><a href='/c'>体育新闻</a></li></ul><style>p{}</style></body></html>",
    )
    .unwrap();
    std::fs::write(dir.join("empty.html"), "").unwrap();
    std::fs::write(
        dir.join("gallery.html"),
        "<html><head><title>图片新闻</title></head><body><img src='a.jpg'><img src='b.jpg'></body></html>",
    )
    .unwrap();
    let page = simdb::web::page(&std::fs::read(dir.join("menu.html")).unwrap(), None);
    assert!(page.text().contains("新闻联播"), "{page:?}");
    assert!(!page.text().contains("不可见"), "{page:?}");
    let page = simdb::web::page(&std::fs::read(dir.join("gallery.html")).unwrap(), None);
    assert_eq!(page.found, simdb::web::Found::Visible, "{page:?}");
    assert_eq!(page.text(), "图片新闻");
    let (sum, _) = ingest_pages(&t, &dir);
    assert_eq!(sum.read, 3);
    assert!(sum.writes.pages.visible_text >= 2, "{:?}", sum.writes.pages);
    assert_eq!(sum.writes.no_features, 1, "the empty page");
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["pages"]["visible_text"], sum.writes.pages.visible_text);
}

#[test]
fn a_store_records_its_extraction_and_refuses_pages_extracted_otherwise() {
    let t = common::TempDb::new();
    let dir = t.dir.path().join("pages");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.html"), "<p>新闻联播今天的主要内容</p>").unwrap();
    let text = t.file("t.jsonl", "{\"id\":\"t\",\"text\":\"天气预报\"}\n");
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        ingest::run(&mut db, &[Input::guess(&text)], &Default::default(), |_| {}).unwrap();
        assert_eq!(
            db.admin().extraction().unwrap(),
            None,
            "text alone records nothing"
        );
        ingest::run(&mut db, &[pages(&dir)], &Default::default(), |_| {}).unwrap();
        assert_eq!(
            db.admin().extraction().unwrap().as_deref(),
            Some(simdb::web::EXTRACTION)
        );
        let stats = db.admin().stats().unwrap();
        assert_eq!(stats.extraction.as_deref(), Some(simdb::web::EXTRACTION));
    }
    // A store whose pages another extraction made.
    {
        let raw = common::raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"extraction", b"html/0: another").unwrap();
    }
    let mut db = Db::options().open(t.path()).unwrap();
    let err = ingest::run(&mut db, &[pages(&dir)], &Default::default(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("html/0: another"), "{err}");
    assert_eq!(db.len().unwrap(), 2, "nothing written");
    ingest::run(&mut db, &[Input::guess(&text)], &Default::default(), |_| {}).unwrap();
}

#[test]
fn the_command_line_ingests_and_fingerprints_pages() {
    let t = common::TempDb::new();
    let dir = t.dir.path().join("site");
    std::fs::create_dir_all(dir.join("news")).unwrap();
    let body = "<html><head><title>今天的新闻</title></head><body><nav>首页 新闻 体育</nav>\
                <article><p>新闻联播今天的主要内容，国务院总理主持召开常务会议，部署进一步做好稳就业工作。</p>\
                <p>会议指出，就业是最大的民生，要把稳就业摆在突出位置。</p></article></body></html>";
    std::fs::write(dir.join("news/a.html"), body).unwrap();
    std::fs::write(dir.join("news/b.htm"), body.replace("体育", "财经")).unwrap();
    let db = t.path();
    let o = common::simdb(&[&"init", &db]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = common::simdb(&[&"ingest", &db, &dir, &"--format", &"html", &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
    assert_eq!(v["read"], 2);
    assert_eq!(v["near_duplicates"], 1, "{v}");
    assert_eq!(
        v["pages"]["article"].as_u64().unwrap() + v["pages"]["visible_text"].as_u64().unwrap(),
        2
    );
    let o = common::simdb(&[&"get", &db, &"news/b.htm", &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    // One file, its format from its name; its id the path as given.
    let one = dir.join("news/a.html");
    let o = common::simdb(&[&"ingest", &db, &one, &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = common::simdb(&[&"get", &db, &one, &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = common::simdb(&[&"stats", &db]);
    assert!(
        common::stdout(&o).contains("web pages    html/3"),
        "{}",
        common::stdout(&o)
    );
    // A query by a page: its text, not its markup.
    let o = common::simdb(&[&"query", &db, &"--file", &one, &"--html", &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
    assert_eq!(v["hits"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["hits"][0]["distance"], 0, "{v}");
    let o = common::simdb(&[&"fingerprint", &"--file", &one, &"--html", &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
    assert_eq!(v["page"]["title"], "今天的新闻");
    assert!(!v["page"]["text"].as_str().unwrap().contains("首页"), "{v}");
    let o = common::simdb(&[&"ingest", &db, &"-", &"--format", &"html"]);
    assert_ne!(common::code(&o), 0);
    assert!(
        common::stderr(&o).contains("not standard input"),
        "{}",
        common::stderr(&o)
    );
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/web")
        .join(name)
}

/// Ingests `inputs` into a new store: the summary, the reported pairs and
/// the bad inputs' messages.
fn ingest_inputs(
    t: &common::TempDb,
    inputs: &[Input],
) -> (ingest::Summary, Vec<(String, String)>, Vec<String>) {
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let (mut pairs, mut bad) = (Vec::new(), Vec::new());
    let sum = ingest::run(&mut db, inputs, &Default::default(), |e| match e {
        Event::Duplicate(r) => pairs.push((r.id.clone(), r.duplicate_of.clone())),
        Event::BadLine(p) => bad.push(p.to_string()),
        _ => {}
    })
    .unwrap();
    (sum, pairs, bad)
}

#[test]
fn warc_files_of_wget_and_warcio_round_trip() {
    // tools/warc_fixtures.sh wrote them: wget fetched two HTML articles
    // (one in GBK), a PNG and a 404 from a local server; warcio wrote a
    // chunked, gzip-compressed response between a request and metadata.
    let inputs = [
        Input::guess(fixture("wget.warc.gz")),
        Input::guess(fixture("warcio.warc.gz")),
    ];
    assert!(inputs.iter().all(|i| i.format == Format::Warc));
    let t = common::TempDb::new();
    let (sum, pairs, bad) = ingest_inputs(&t, &inputs);
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(sum.read, 3);
    assert_eq!(sum.writes.pages.article, 3);
    // wget: warcinfo, 4 requests, the PNG, the 404, its log (resource)
    // and manifest (metadata); warcio: request, metadata.
    assert_eq!(sum.writes.pages.skipped, 11, "{:?}", sum.writes.pages);
    let port = |id: &str| id.split('/').nth(2).unwrap().to_string();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    let (b, a) = &pairs[0];
    assert!(
        b.ends_with("/b.html") && a.ends_with("/a.html") && port(a) == port(b),
        "{pairs:?}"
    );
    let db = Db::options().read_only().open(t.path()).unwrap();
    // Each page's time is its fetch date.
    let z = db.get("http://example.test/z.html").unwrap().unwrap();
    assert_eq!(z.dated, Some(1_795_161_601), "2026-11-20T08:00:01Z");
    assert_eq!(z.time(), 1_795_161_601);
    assert!(db.get(a).unwrap().unwrap().dated.is_some());
    assert!(db.admin().verify().unwrap().is_clean());

    drop(db);
    // Named by record: the same pages, each fetch its own id.
    let t2 = common::TempDb::new();
    let by_record: Vec<Input> = inputs
        .iter()
        .map(|i| Input {
            warc_id: simdb::ingest::read::WarcId::Record,
            ..i.clone()
        })
        .collect();
    let (sum2, pairs2, _) = ingest_inputs(&t2, &by_record);
    assert_eq!((sum2.read, pairs2.len()), (3, 1));
    assert!(pairs2[0].0.starts_with("urn:uuid:"), "{pairs2:?}");
    let db = Db::options().read_only().open(t2.path()).unwrap();
    let d = db.document(&pairs2[0].0).unwrap().unwrap();
    assert!(d.source.ends_with("/b.html"), "{}", d.source);
    assert!(d.dated.is_some());

    // Every response record read, with its URI and fetch date.
    let file = std::fs::File::open(fixture("warcio.warc.gz")).unwrap();
    let gz = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file));
    let records: Vec<_> = simdb::web::warc::records(gz)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records.len(), 3);
    let pages: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            simdb::web::warc::Record::Page(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0].uri, "http://example.test/z.html");
    assert_eq!(
        pages[0].fetched,
        Some(1_795_161_601),
        "2026-11-20T08:00:01Z"
    );
    assert_eq!(pages[0].charset.as_deref(), Some("utf-8"));
    let page = simdb::web::page(&pages[0].body, pages[0].charset.as_deref());
    assert!(page.text().starts_with("压缩的页面\n"), "{page:?}");
    assert!(page.body.contains("第9段"));
}

#[test]
fn a_truncated_warc_keeps_the_pages_before_and_names_the_offset() {
    let mut raw = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(
            std::fs::File::open(fixture("wget.warc.gz")).unwrap(),
        ),
        &mut raw,
    )
    .unwrap();
    // Cut inside the response for b.html, after a.html's.
    let b = raw
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == b"/b.html>")
        .nth(1)
        .unwrap()
        .0;
    let t = common::TempDb::new();
    let cut = t.file("cut.warc", "");
    std::fs::write(&cut, &raw[..b + 200]).unwrap();
    let (sum, _, bad) = ingest_inputs(&t, &[Input::guess(&cut)]);
    // And cut inside a body.
    let t2 = common::TempDb::new();
    let cut2 = t2.file("cut2.warc", "");
    let body = b + raw[b..].windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 300;
    std::fs::write(&cut2, &raw[..body]).unwrap();
    let (sum2, _, bad2) = ingest_inputs(&t2, &[Input::guess(&cut2)]);
    assert_eq!((sum2.read, sum2.bad_lines), (1, 1), "{bad2:?}");
    assert_eq!(sum.read, 1, "a.html");
    assert_eq!(sum.bad_lines, 1);
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0].contains("cannot be read") && bad[0].contains("at byte"),
        "{bad:?}"
    );
    let at: u64 = bad[0]
        .split("at byte ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(at > 0 && at as usize <= b, "{at} {b}");
    assert_eq!(&raw[at as usize..at as usize + 7], b"WARC/1.");
}

/// One WARC record of type `kind` for `uri`, whose block is `block`.
fn warc_record(kind: &str, uri: &str, content_type: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\n\
         WARC-Date: 2026-11-20T08:00:01Z\r\nWARC-Record-ID: <urn:uuid:{kind}-{}>\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        uri.len(),
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

/// An HTTP response of `body` (gzip-compressed with `gzip`).
fn http(body: &[u8], gzip: bool) -> Vec<u8> {
    let body = match gzip {
        false => body.to_vec(),
        true => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            std::io::Write::write_all(&mut gz, body).unwrap();
            gz.finish().unwrap()
        }
    };
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{}Content-Length: {}\r\n\r\n",
        if gzip {
            "Content-Encoding: gzip\r\n"
        } else {
            ""
        },
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(&body);
    r
}

#[test]
fn regression_60_warc_records_are_read_within_the_limit() {
    use simdb::web::warc::{records_within, Record, MAX_HEADER_LINE};
    let page = |n: usize| format!("<html><body><p>{}</p></body></html>", "新闻".repeat(n));
    let good = warc_record(
        "response",
        "http://e.test/good",
        "application/http; msgtype=response",
        &http(page(100).as_bytes(), false),
    );
    let max = 1 << 20;
    let read = |stream: &[u8]| -> Vec<Result<Record, String>> {
        records_within(std::io::BufReader::new(stream), max)
            .map(|r| r.map_err(|d| d.to_string()))
            .collect()
    };
    let skipped = |r: &Result<Record, String>| match r {
        Ok(Record::Skipped { why, .. }) => why.clone(),
        other => panic!("not skipped: {other:?}"),
    };
    let is_good = |r: &Result<Record, String>| matches!(r, Ok(Record::Page(p)) if p.uri == "http://e.test/good" && p.fetched == Some(1_795_161_601));
    // A gzip bomb: 64 MiB of one byte in a body of ~64 KB; then a good page.
    let bomb = vec![b' '; 64 << 20];
    let mut stream = warc_record(
        "response",
        "http://e.test/bomb",
        "application/http; msgtype=response",
        &http(&bomb, true),
    );
    assert!(stream.len() < 200 << 10, "{}", stream.len());
    stream.extend_from_slice(&good);
    let got = read(&stream);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(skipped(&got[0]).contains("compressed body larger than the limit"));
    assert!(is_good(&got[1]), "{:?}", got[1]);
    // A page over the limit, uncompressed: passed over, not kept; the next
    // record is read.
    let mut stream = warc_record(
        "resource",
        "http://e.test/big",
        "text/html",
        page(max).as_bytes(),
    );
    stream.extend_from_slice(&good);
    let got = read(&stream);
    assert!(
        skipped(&got[0]).contains("larger than the limit"),
        "{got:?}"
    );
    assert!(is_good(&got[1]));
    // A request or metadata record of any size is passed over.
    let mut stream = warc_record(
        "request",
        "http://e.test/r",
        "application/http",
        &vec![b'x'; 3 * max],
    );
    stream.extend_from_slice(&good);
    let got = read(&stream);
    assert_eq!(skipped(&got[0]), "a request record");
    assert!(is_good(&got[1]));
    // A header line with no end, or too long, is damage: the pages before
    // it were given, nothing after.
    for bad in [
        [
            b"WARC/1.0\r\nWARC-Type: response\r\nX-Long: ".as_slice(),
            &vec![b'y'; 8 << 20],
        ]
        .concat(),
        vec![b'z'; 8 << 20],
        [
            b"WARC/1.0\r\n".as_slice(),
            &vec![b'h'; MAX_HEADER_LINE + 10],
            b"\r\n\r\n",
        ]
        .concat(),
    ] {
        let stream = [good.as_slice(), &bad, &good].concat();
        let got = read(&stream);
        assert_eq!(got.len(), 2, "{:?}", got.get(1));
        assert!(is_good(&got[0]));
        let e = got[1].as_ref().unwrap_err();
        assert!(e.contains(&format!("at byte {}", good.len())), "{e}");
    }
    // A Content-Length past the end of the file.
    let cut = b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 18446744073709551615\r\n\r\nabc";
    let got = read(&[good.as_slice(), cut].concat());
    assert!(
        got[1]
            .as_ref()
            .unwrap_err()
            .contains("ends inside its block"),
        "{got:?}"
    );
}

#[test]
fn deeply_nested_pages_are_read_as_their_text_not_parsed_for_minutes() {
    // Readability's time grows with the square of the nesting, and so does
    // the parser's: 20,000 nested elements took a minute.
    for n in [600, 3_000, 20_000, 100_000] {
        let html = format!(
            "<html><body>{}<p>新闻联播今天的主要内容</p>{}</body></html>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        let page = simdb::web::page(html.as_bytes(), None);
        assert_eq!(page.found, simdb::web::Found::Visible, "{n}");
        assert_eq!(page.text(), "新闻联播今天的主要内容", "{n}");
    }
}

/// The same article in two templates, and another article in the first.
fn twin_pages(seed: u64) -> (String, String, String, String) {
    let vocab = common::vocab();
    let words = words(&vocab);
    let mut rng = common::rng(seed);
    let sites: Vec<Site> = (0..2).map(|i| Site::new(&mut rng, &words, i)).collect();
    let (title, paras) = article(&mut rng, &vocab, 300);
    let (other_title, other) = article(&mut rng, &vocab, 300);
    let a = sites[0].page(&mut rng, &title, &paras);
    let b = sites[1].page(&mut rng, &title, &paras);
    let c = sites[0].page(&mut rng, &other_title, &other);
    (a, b, c, title)
}

#[test]
fn a_jsonl_html_field_and_db_put_write_pages_extracted_once_as_ingest_does() {
    let (a, b, c, title) = twin_pages(42);
    let t = common::TempDb::new();
    let mut lines = String::new();
    for (id, html) in [("a", &a), ("c", &c), ("b", &b)] {
        lines += &serde_json::json!({"id": id, "html": html}).to_string();
        lines.push('\n');
    }
    lines += "{\"id\":\"t\",\"text\":\"新闻联播今天的主要内容\"}\n";
    // One of several contents per line.
    lines += &serde_json::json!({"id": "x", "html": "<p>x</p>", "text": "x"}).to_string();
    lines.push('\n');
    let input = t.file("pages.jsonl", lines);
    let (sum, pairs, bad) = ingest_inputs(&t, &[Input::guess(&input)]);
    assert_eq!(sum.read, 4);
    assert_eq!(sum.writes.pages.article, 3, "{:?}", sum.writes.pages);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("give one of"), "{bad:?}");
    assert_eq!(pairs, [("b".to_string(), "a".to_string())]);
    let db = Db::options().open(t.path()).unwrap();
    assert_eq!(
        db.admin().extraction().unwrap().as_deref(),
        Some(simdb::web::EXTRACTION)
    );
    // What is stored is the extracted text's: its fingerprint, and the
    // same content hash as the text itself would have.
    let text = simdb::web::page(a.as_bytes(), None).text();
    assert!(text.starts_with(&title));
    let fp = db.fingerprinter().fingerprint(&text).unwrap();
    assert_eq!(db.get("a").unwrap().unwrap().fingerprint, fp);
    drop(db);

    // Db::put of a page: the store takes pages, and the page is its text.
    let t2 = common::TempDb::new();
    let mut db = Db::options().create(t2.path(), Recipe::default()).unwrap();
    let page = |h: &str| {
        Content::Html(simdb::fingerprint::Html {
            bytes: h.as_bytes().to_vec(),
            charset: None,
        })
    };
    db.put("a", page(&a)).unwrap();
    assert_eq!(
        db.admin().extraction().unwrap().as_deref(),
        Some(simdb::web::EXTRACTION)
    );
    assert_eq!(db.get("a").unwrap().unwrap().fingerprint, fp);
    // The same text under the same id: unchanged.
    assert_eq!(
        db.put("a", Content::Text(text)).unwrap(),
        simdb::Outcome::Unchanged
    );
    drop(db);

    // A store whose pages another extraction made refuses them, from a
    // JSONL line as from a page file, and keeps what came before.
    {
        let raw = common::raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"extraction", b"html/0: another").unwrap();
    }
    let mut db = Db::options().open(t.path()).unwrap();
    let more = t.file(
        "more.jsonl",
        format!(
            "{{\"id\":\"t2\",\"text\":\"天气预报\"}}\n{}\n",
            serde_json::json!({"id": "d", "html": c})
        ),
    );
    let err =
        ingest::run(&mut db, &[Input::guess(&more)], &Default::default(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("html/0: another"), "{err}");
    assert!(db.get("d").unwrap().is_none());
    assert!(
        db.get("t2").unwrap().is_some(),
        "the line before it is kept"
    );
    let err = db.put("e", page(&c)).unwrap_err();
    assert!(err.to_string().contains("html/0: another"), "{err}");
}

/// A JSONL document: `time` is its own time (Unix seconds or RFC 3339).
fn dated_line(id: &str, text: &str, time: Option<serde_json::Value>) -> String {
    let mut v = serde_json::json!({"id": id, "text": text});
    if let Some(t) = time {
        v["time"] = t;
    }
    v.to_string()
}

#[test]
fn expire_newest_and_the_age_go_by_a_documents_own_time() {
    use serde_json::json;
    let vocab = common::vocab();
    let mut rng = common::rng(44);
    let story = common::article(&mut rng, &vocab, 200);
    let copy = |rng: &mut rand_chacha::ChaCha8Rng| common::edit(rng, &vocab, &story, 2).concat();
    let other = common::article(&mut rng, &vocab, 200).concat();
    let t = common::TempDb::new();
    std::fs::create_dir_all(t.path()).unwrap();
    let lines = [
        // A crawl of 2020, then an older one of the same page ingested
        // after it, and a later one; a document without a time; another
        // story of 2024.
        dated_line(
            "crawl2020",
            &copy(&mut rng),
            Some(json!("2020-01-01T00:00:00Z")),
        ),
        dated_line("crawl2019", &copy(&mut rng), Some(json!(1_546_300_800))),
        dated_line(
            "crawl2021",
            &copy(&mut rng),
            Some(json!("2021-01-01T08:00:00+08:00")),
        ),
        dated_line(
            "undated",
            &common::article(&mut rng, &vocab, 200).concat(),
            None,
        ),
        dated_line("other2024", &other, Some(json!("2024-06-01T00:00:00Z"))),
    ];
    let input = t.file("crawl.jsonl", lines.join("\n"));
    let db_path = t.path().join("s.db");
    let o = common::simdb(&[&"init", &db_path, &"--keep", &"newest"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    // One line at a time: each a night of its own.
    for (i, line) in lines.iter().enumerate() {
        let one = t.file(&format!("night{i}.jsonl"), line.clone());
        let o = common::simdb(&[&"ingest", &db_path, &one]);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
        if i == 1 {
            // The 2019 crawl joined the 2020 one, which stays newest.
            let o = common::simdb(&[&"get", &db_path, &"crawl2019", &"--json"]);
            let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
            assert_eq!(v["dated"], 1_546_300_800);
            assert_eq!(v["cluster"]["representative"], "crawl2020", "{v}");
        }
    }
    let o = common::simdb(&[&"get", &db_path, &"crawl2019", &"--json"]);
    let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
    assert_eq!(
        v["cluster"]["representative"], "crawl2021",
        "the latest crawl: {v}"
    );
    assert_eq!(v["cluster"]["size"], 3, "{v}");
    let mut db = Db::options().open(&db_path).unwrap();
    let stats = db.admin().stats().unwrap();
    assert_eq!(stats.oldest, Some(1_546_300_800));
    let undated = db.get("undated").unwrap().unwrap();
    assert_eq!(undated.dated, None);
    assert_eq!(stats.newest, Some(undated.ingested_at), "written today");
    assert!(db.admin().verify().unwrap().is_clean());
    // Expire by the documents' times: the 2019 and 2020 crawls go, though
    // they were written today; the undated document was written today.
    let before = 1_590_000_000; // 2020-05-20
    let mut dry = db.admin().expired(before, usize::MAX).unwrap();
    dry.sort();
    assert_eq!(dry, ["crawl2019", "crawl2020"]);
    let r = db.maintenance().expire(before).unwrap();
    assert_eq!(r.deleted, 2);
    for (id, kept) in [
        ("crawl2019", false),
        ("crawl2020", false),
        ("crawl2021", true),
        ("undated", true),
        ("other2024", true),
    ] {
        assert_eq!(db.get(id).unwrap().is_some(), kept, "{id}");
    }
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(
        db.admin().stats().unwrap().oldest,
        Some(1_609_459_200),
        "2021-01-01 00:00 UTC"
    );
    // A repair rebuilds the time index; expire still finds what is older.
    let rep = db.maintenance().repair().unwrap();
    assert_eq!(rep.unreadable.len(), 0);
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(
        db.admin().expired(1_700_000_000, 10).unwrap(),
        ["crawl2021"]
    );
    drop(db);
    // Export -> import keeps the times and their index.
    let out = t.path().join("export");
    let o = common::simdb(&[&"export", &db_path, &"--parquet", &out]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let back = t.path().join("back.db");
    let o = common::simdb(&[&"import", &back, &out, &"--parquet"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let db = Db::options().open(&back).unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(
        db.get("other2024").unwrap().unwrap().dated,
        Some(1_717_200_000)
    );
    assert_eq!(
        db.admin().expired(1_700_000_000, 10).unwrap(),
        ["crawl2021"]
    );
    // A time that is not one is a bad line naming the field.
    let bad = t.file(
        "bad.jsonl",
        dated_line("x", &other, Some(json!("yesterday"))),
    );
    let o = common::simdb(&[&"ingest", &db_path, &bad]);
    assert!(
        common::stderr(&o).contains("\"time\" must be"),
        "{}",
        common::stderr(&o)
    );
    let _ = input;
}
