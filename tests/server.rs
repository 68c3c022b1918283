//! `simdb serve`: the real binary on a free loopback port, spoken to over
//! HTTP (ureq).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// A running `simdb serve`; killed (SIGKILL) on drop if still running.
struct Server {
    child: Child,
    base: String,
    token: Option<String>,
}

impl Server {
    fn start(db: &Path, extra: &[&str]) -> Server {
        Server::start_limited(db, extra, None)
    }

    /// A server whose limit on open files is `nofile` (soft and hard).
    fn start_limited(db: &Path, extra: &[&str], nofile: Option<u64>) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_simdb"));
        if let Some(n) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .arg("serve")
            .arg(db)
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn simdb serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server {
            child,
            base: format!("http://{addr}"),
            token: None,
        }
    }

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into()
    }

    fn auth<B>(&self, r: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => r.header("Authorization", &format!("Bearer {t}")),
            None => r,
        }
    }

    /// (status, JSON body) of a request with an optional body.
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let agent = Self::agent();
        let url = format!("{}{path}", self.base);
        let resp = match (method, body) {
            ("GET", _) => self.auth(agent.get(&url)).call(),
            ("DELETE", _) => self.auth(agent.delete(&url)).call(),
            ("POST", Some(b)) => self
                .auth(agent.post(&url))
                .header("Content-Type", "application/json")
                .send(b),
            ("PUT", Some(b)) => self
                .auth(agent.put(&url))
                .header("Content-Type", "application/json")
                .send(b),
            _ => unreachable!(),
        };
        let mut resp = resp.expect("HTTP request");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v)
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(&body.to_string()))
    }

    /// SIGTERM, then the exit status and stderr.
    fn stop(mut self) -> (i32, String) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        use std::io::Read;
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), err)
    }
}

impl Server {
    fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    /// A raw request on a new connection: (status, body), or None if the
    /// server closed or did not answer within `wait`.
    fn raw(&self, request: &str, wait: Duration) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(self.addr()).ok()?;
        c.set_read_timeout(Some(wait)).unwrap();
        c.write_all(request.as_bytes()).ok()?;
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).to_string();
        let status = text.get(9..12)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
        Some((status, body))
    }

    /// The server's peak RSS in KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

/// One request on an open connection (keep-alive): the status and body.
fn exchange(c: &mut std::net::TcpStream, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{BufRead, Read, Write};
    write!(
        c,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(c);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut b = vec![0u8; len];
    r.read_exact(&mut b).unwrap();
    (status, String::from_utf8_lossy(&b).to_string())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn init(t: &TempDb) {
    let o = simdb(&[&"init", &t.path()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// `n` generated Chinese articles of 150 words.
fn articles(seed: u64, n: usize) -> Vec<String> {
    let v = vocab();
    let mut r = rng(seed);
    (0..n).map(|_| article(&mut r, &v, 150).concat()).collect()
}

fn verify_clean(db: &Path) {
    let o = simdb(&[&"verify", &db]);
    assert_eq!(code(&o), 0, "verify: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn endpoints_answer_as_the_cli_does() {
    let t = TempDb::new();
    init(&t);
    let texts = articles(1, 6);
    let s = Server::start(&t.path(), &[]);
    // A batch: five articles and a copy of the first.
    let mut docs: Vec<Value> = texts[..5]
        .iter()
        .enumerate()
        .map(|(i, x)| json!({"id": format!("a{i}"), "text": x}))
        .collect();
    docs.push(json!({"id": "copy", "text": texts[0]}));
    // An unknown field is refused (a misspelt field must not pass).
    let (st, v) = s.post("/documents", &json!({"id": "u", "text": "x", "url": "y"}));
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["field"], "url", "{v}");
    let (st, v) = s.post("/documents", &json!(docs));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["inserted"], 6, "{v}");
    assert_eq!(v["near_duplicates"], 1, "{v}");
    // The counts are the library's WriteCounts, by the same names as
    // ingest's summary and Python's add_many.
    let names = serde_json::to_value(simdb::db::write::WriteCounts::default()).unwrap();
    for name in names.as_object().unwrap().keys() {
        assert!(v[name].is_u64(), "the answer lacks {name}: {v}");
    }
    let results = v["results"].as_array().unwrap();
    assert_eq!(results[5]["outcome"], "inserted");
    assert_eq!(results[5]["duplicates"][0]["id"], "a0", "{v}");
    assert_eq!(results[5]["duplicates"][0]["distance"], 0);
    // The same again: unchanged.
    let (_, v) = s.post("/documents", &json!(docs[1]));
    assert_eq!(v["unchanged"], 1, "{v}");
    // A document with no words: reported, not written.
    let (_, v) = s.post("/documents", &json!({"id": "empty", "text": "。，"}));
    assert_eq!(v["results"][0]["outcome"], "no_features", "{v}");
    // Insert-if-new: a copy of a stored text is not written.
    let (st, v) = s.post(
        "/documents/check",
        &json!([{"id": "b0", "text": texts[1]}, {"id": "b1", "text": texts[5]}]),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][0]["outcome"], "duplicate", "{v}");
    assert_eq!(v["results"][0]["duplicates"][0]["id"], "a1");
    assert_eq!(v["results"][1]["outcome"], "inserted", "{v}");
    assert_eq!(s.call("GET", "/documents/b0", None).0, 404);
    // Get, with the cluster.
    let (st, d) = s.call("GET", "/documents/copy", None);
    assert_eq!(st, 200, "{d}");
    assert_eq!(d["cluster"]["size"], 2, "{d}");
    assert_eq!(d["cluster"]["representative"], "a0");
    // Ids with slashes and percent-encoding.
    let (st, v) = s.post(
        "/documents",
        &json!({"id": "dir/x y.txt", "text": texts[2]}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, d2) = s.call("GET", "/documents/dir/x%20y.txt", None);
    assert_eq!((st, d2["id"].as_str()), (200, Some("dir/x y.txt")), "{d2}");
    // Queries: text, fingerprint, id, explain, batch.
    let (st, by_text) = s.post("/query", &json!({"text": texts[0]}));
    assert_eq!(st, 200, "{by_text}");
    let ids: Vec<&str> = by_text["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a0", "copy"]);
    let (_, by_id) = s.post("/query", &json!({"id": "a0", "k": 3}));
    assert_eq!(by_id["hits"][0]["id"], "copy", "{by_id}");
    let fp = by_text["fingerprint"].as_str().unwrap().to_string();
    let (_, by_fp) = s.post("/query", &json!({"fingerprint": fp, "limit": 1}));
    assert_eq!(by_fp["hits"].as_array().unwrap().len(), 1, "{by_fp}");
    let (_, ex) = s.post("/query", &json!({"text": texts[0], "explain": true}));
    assert!(
        ex["query_terms"].as_array().is_some_and(|t| !t.is_empty()),
        "{ex}"
    );
    assert!(ex["hits"][0]["shared"].is_array(), "{ex}");
    let (st, batch) = s.post(
        "/query",
        &json!({"queries": [{"text": texts[0]}, {"id": "nope"}, {"fingerprint": fp}]}),
    );
    assert_eq!(st, 200, "{batch}");
    assert_eq!(batch["results"][0], by_text);
    assert_eq!(batch["results"][1]["status"], 404, "{batch}");
    assert_eq!(batch["results"][2]["hits"][0]["distance"], 0);
    // "id" beside a text names it (as a document line of ingest does): the
    // text is queried, the id echoed.
    let (st, named) = s.post("/query", &json!({"id": "mine", "text": texts[0]}));
    assert_eq!(st, 200, "{named}");
    assert_eq!(named["query"], "mine");
    assert_eq!(named["hits"], by_text["hits"]);
    // Delete.
    let (st, v) = s.call("DELETE", "/documents/a4", None);
    assert_eq!((st, &v["deleted"]), (200, &json!(true)), "{v}");
    assert_eq!(s.call("DELETE", "/documents/a4", None).0, 404);
    assert_eq!(s.call("GET", "/documents/a4", None).0, 404);
    // Health, stats, metrics.
    let (st, h) = s.call("GET", "/health", None);
    assert_eq!((st, &h["documents"]), (200, &json!(7)), "{h}");
    let (_, stats) = s.call("GET", "/stats", None);
    assert_eq!(stats["documents"], 7, "{stats}");
    // Review 2026-11-b, finding 11: not the server's paths.
    assert!(stats.get("path").is_none(), "{stats}");
    let (st, m) = s.call("GET", "/metrics", None);
    let m = m.as_str().unwrap().to_string();
    assert_eq!(st, 200);
    assert!(
        m.contains(r#"simdb_http_requests_total{endpoint="/query",method="POST",status="200"} 6"#),
        "{m}"
    );
    assert!(m.contains("simdb_documents 7"), "{m}");
    assert!(
        m.contains(r#"simdb_documents_written_total{outcome="duplicate"} 1"#),
        "{m}"
    );
    assert!(
        m.contains("simdb_http_request_duration_seconds_bucket"),
        "{m}"
    );

    // Stopped: the same store answers the CLI with the same JSON.
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    let o = simdb(&[&"query", &t.path(), &"--json", &"--text", &texts[0]]);
    let cli: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(cli, by_text);
    let o = simdb(&[&"get", &t.path(), &"copy", &"--json"]);
    let cli: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(cli, d);
    verify_clean(&t.path());
}

#[test]
fn bad_requests_get_a_4xx_naming_the_field_and_write_nothing() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &["--max-body-mb", "1", "--max-batch", "50"]);
    let cases: Vec<(&str, &str, String, u16, Option<&str>)> = vec![
        ("POST", "/documents", "{\"id\":".into(), 400, None),
        ("POST", "/documents", "".into(), 400, None),
        ("POST", "/documents", "[1]".into(), 400, Some("[0]")),
        (
            "POST",
            "/documents",
            r#"[{"id":"ok","text":"正常的文本内容"},{"id":"bad","text":5}]"#.into(),
            400,
            Some("[1].text"),
        ),
        (
            "POST",
            "/documents",
            r#"{"text":"无编号"}"#.into(),
            400,
            Some("id"),
        ),
        (
            "POST",
            "/documents?sync=maybe",
            r#"{"id":"x","text":"文本"}"#.into(),
            400,
            Some("sync"),
        ),
        (
            "POST",
            "/documents?k=12",
            r#"{"id":"x","text":"文本"}"#.into(),
            400,
            Some("k"),
        ),
        (
            "POST",
            "/query",
            r#"{"text":"文本","k":"3"}"#.into(),
            400,
            Some("k"),
        ),
        (
            "POST",
            "/query",
            r#"{"txt":"文本"}"#.into(),
            400,
            Some("txt"),
        ),
        (
            "POST",
            "/query",
            r#"{"id":"missing"}"#.into(),
            404,
            Some("id"),
        ),
        (
            "POST",
            "/query",
            r#"{"text":"。。"}"#.into(),
            422,
            Some("text"),
        ),
        (
            "POST",
            "/query",
            r#"{"fingerprint":"12"}"#.into(),
            400,
            Some("fingerprint"),
        ),
        (
            "POST",
            "/query?x=1",
            r#"{"text":"文本"}"#.into(),
            400,
            Some("x"),
        ),
        (
            "POST",
            "/documents",
            serde_json::to_string(
                &(0..51)
                    .map(|i| json!({"id": i, "text": "文本"}))
                    .collect::<Vec<_>>(),
            )
            .unwrap(),
            400,
            None,
        ),
        ("GET", "/nowhere", String::new(), 404, None),
        ("PUT", "/documents", "{}".into(), 405, None),
    ];
    for (method, path, body, status, field) in cases {
        let (st, v) = s.call(method, path, Some(&body));
        assert_eq!(
            st,
            status,
            "{method} {path} {}: {v}",
            &body[..body.len().min(80)]
        );
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
        assert_eq!(v["field"].as_str(), field, "{method} {path}: {v}");
    }
    // A body over the limit: 413 (or, if the client was still sending
    // when the server answered and closed, a broken connection).
    let big = json!({"id": "big", "text": "字".repeat(400_000)}).to_string();
    match Server::agent()
        .post(&format!("{}/documents", s.base))
        .header("Content-Type", "application/json")
        .send(&big)
    {
        Ok(mut r) => {
            assert_eq!(r.status().as_u16(), 413);
            let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
            assert!(v["error"].as_str().unwrap().contains("larger than"), "{v}");
        }
        Err(ureq::Error::Io(e)) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        ),
        Err(e) => panic!("{e}"),
    }
    // A body announced over the limit is refused before it is sent.
    {
        use std::io::{Read, Write};
        let addr = s.base.trim_start_matches("http://");
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        write!(
            c,
            "POST /documents HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 5000000\r\n\r\n"
        )
        .unwrap();
        let mut buf = [0u8; 512];
        let n = c.read(&mut buf).unwrap();
        let head = String::from_utf8_lossy(&buf[..n]);
        assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    }
    // The batch with a bad document wrote nothing.
    assert_eq!(s.call("GET", "/documents/ok", None).0, 404);
    assert_eq!(s.call("GET", "/health", None).1["documents"], 0);
}

#[test]
fn a_token_is_required_off_loopback_and_checked_on_every_request() {
    let t = TempDb::new();
    init(&t);
    let o = simdb(&[&"serve", &t.path(), &"--addr", &"0.0.0.0:0"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--token-file"), "{}", stderr(&o));
    let short = t.file("short", "abc\n");
    let o = simdb(&[&"serve", &t.path(), &"--token-file", &short]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("at least 16"), "{}", stderr(&o));

    let secret = "0123456789abcdef0123456789abcdef";
    let file = t.file("token", format!("{secret}\n"));
    let mut s = Server::start(&t.path(), &["--token-file", file.to_str().unwrap()]);
    for path in ["/health", "/metrics", "/documents/x"] {
        let (st, v) = s.call("GET", path, None);
        assert_eq!(st, 401, "{path}: {v}");
    }
    s.token = Some("0123456789abcdef0123456789abcdeX".into());
    assert_eq!(s.call("GET", "/health", None).0, 401);
    s.token = Some(secret.into());
    assert_eq!(s.call("GET", "/health", None).0, 200);
    let (st, _) = s.post("/documents", &json!({"id": "x", "text": "有令牌的写入"}));
    assert_eq!(st, 200);
}

/// Many clients send copies of the same documents to /documents/check at
/// once: each document is inserted exactly once.
#[test]
fn check_inserts_each_document_once_under_concurrent_requests() {
    let t = TempDb::new();
    init(&t);
    let s = Arc::new(Server::start(&t.path(), &[]));
    let texts = Arc::new(articles(7, 12));
    let inserted = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..8)
        .map(|c| {
            let (s, texts, inserted) = (s.clone(), texts.clone(), inserted.clone());
            std::thread::spawn(move || {
                for round in 0..3 {
                    // Each client sends every text, in its own order, one
                    // or three per request, under its own ids.
                    let mut order: Vec<usize> = (0..texts.len()).collect();
                    order.rotate_left((c * 5 + round) % texts.len());
                    for chunk in order.chunks(if c % 2 == 0 { 1 } else { 3 }) {
                        let docs: Vec<Value> = chunk
                            .iter()
                            .map(
                                |&i| json!({"id": format!("t{i}-c{c}-r{round}"), "text": texts[i]}),
                            )
                            .collect();
                        let (st, v) = s.post("/documents/check", &json!(docs));
                        assert_eq!(st, 200, "{v}");
                        for r in v["results"].as_array().unwrap() {
                            if r["outcome"] == "inserted" {
                                inserted
                                    .lock()
                                    .unwrap()
                                    .push(r["id"].as_str().unwrap().to_string());
                            } else {
                                assert_eq!(r["outcome"], "duplicate", "{r}");
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let mut per_text = vec![0; texts.len()];
    for id in inserted.lock().unwrap().iter() {
        let i: usize = id[1..id.find('-').unwrap()].parse().unwrap();
        per_text[i] += 1;
    }
    assert_eq!(per_text, vec![1; texts.len()]);
    assert_eq!(s.call("GET", "/health", None).1["documents"], texts.len());
}

/// Queries while batches are written and deleted: every answer is a
/// committed state (a batch's two copies are seen together or not at all)
/// and none fails.
#[test]
fn queries_see_whole_batches_while_writes_go_on() {
    let t = TempDb::new();
    init(&t);
    let s = Arc::new(Server::start(&t.path(), &[]));
    let texts = Arc::new(articles(11, 4));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (s, texts, stop) = (s.clone(), texts.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(3) {
                let i = n % texts.len();
                let pair = json!([{"id": format!("x{i}"), "text": texts[i]}, {"id": format!("y{i}"), "text": texts[i]}]);
                assert_eq!(s.post("/documents", &pair).0, 200);
                assert_eq!(s.call("DELETE", &format!("/documents/x{i}"), None).0, 200);
                assert_eq!(s.call("DELETE", &format!("/documents/y{i}"), None).0, 200);
                n += 1;
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            n
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (s, texts, stop) = (s.clone(), texts.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = [0usize; 3];
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let i = (seen.iter().sum::<usize>() + r) % texts.len();
                    let (st, v) = s.post("/query", &json!({"text": texts[i], "k": 3}));
                    assert_eq!(st, 200, "{v}");
                    let n = v["hits"].as_array().unwrap().len();
                    // Both copies of a committed pair delete one at a time:
                    // 2, 1 (between the deletes) or 0; never a failure.
                    assert!(n <= 2, "{v}");
                    seen[n] += 1;
                }
                seen
            })
        })
        .collect();
    let rounds = writer.join().unwrap();
    assert!(rounds > 5, "only {rounds} write rounds");
    for r in readers {
        r.join().unwrap();
    }
    drop(s);
    verify_clean(&t.path());
}

#[test]
fn sigterm_keeps_every_acknowledged_write() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let texts = articles(21, 40);
    for (i, x) in texts.iter().enumerate() {
        let (st, _) = s.post("/documents", &json!({"id": i, "text": x}));
        assert_eq!(st, 200);
    }
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    assert!(err.contains("stopped"), "{err}");
    let db = simdb::Db::options().read_only().open(t.path()).unwrap();
    assert_eq!(db.len().unwrap(), 40);
    verify_clean(&t.path());
}

/// kill -9 while clients write: after a restart every acknowledged
/// document is there and verify is clean.
#[test]
fn kill_9_loses_no_acknowledged_write() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let pid = s.child.id() as i32;
    let base = Arc::new(s.base.clone());
    let texts = Arc::new(articles(31, 50));
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (base, texts, acked) = (base.clone(), texts.clone(), acked.clone());
            std::thread::spawn(move || {
                let agent = Server::agent();
                for n in 0.. {
                    let docs: Vec<Value> = (0..10)
                        .map(|j| {
                            json!({"id": format!("c{c}-{n}-{j}"), "text": texts[(n * 10 + j + c) % texts.len()]})
                        })
                        .collect();
                    let body = json!(docs).to_string();
                    let sync = if n % 2 == 0 { "?sync=true" } else { "" };
                    match agent
                        .post(&format!("{base}/documents{sync}"))
                        .header("Content-Type", "application/json")
                        .send(&body)
                    {
                        Ok(r) if r.status() == 200 => {
                            let mut a = acked.lock().unwrap();
                            a.extend((0..10).map(|j| format!("c{c}-{n}-{j}")));
                        }
                        Ok(r) => panic!("status {}", r.status()),
                        Err(_) => return n, // the server is gone
                    }
                }
                unreachable!()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    for c in clients {
        c.join().unwrap();
    }
    drop(s);
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 40, "only {} acknowledged", acked.len());
    verify_clean(&t.path());
    // Restart: the service opens the store and has every acknowledged one.
    let s = Server::start(&t.path(), &[]);
    for id in &acked {
        let (st, _) = s.call("GET", &format!("/documents/{id}"), None);
        assert_eq!(st, 200, "{id} was acknowledged and is gone");
    }
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    verify_clean(&t.path());
}

/// Issue 23: copies written in batches answer at most `max_duplicates`
/// duplicates each (default 10), with the count beside them, however many
/// copies are stored (the old answer listed every earlier copy: n² entries).
#[test]
fn regression_23_copies_answer_bounded_duplicates_with_their_count() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let batch = |from: usize| -> Value {
        Value::Array(
            (from..from + 600)
                .map(|i| json!({"id": format!("c{i:05}"), "fingerprint": "0123456789abcdef"}))
                .collect(),
        )
    };
    for round in 0..2 {
        let body = batch(round * 600);
        let (st, v) = s.post("/documents", &body);
        assert_eq!(st, 200, "{v}");
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 600);
        for r in results {
            assert!(r["duplicates"].as_array().unwrap().len() <= 10, "{r}");
        }
        let last = &results[599];
        assert_eq!(last["duplicates"].as_array().unwrap().len(), 10);
        assert_eq!(last["duplicate_count"], 16, "{last}");
        assert_eq!(last["duplicate_count_exact"], false);
        // Bounded: well under a kilobyte per document.
        assert!(
            v.to_string().len() < 600 * 1200,
            "{} bytes",
            v.to_string().len()
        );
    }
    let early = &s
        .post(
            "/documents?max_duplicates=3",
            &json!({"id": "z", "fingerprint": "0123456789abcdef"}),
        )
        .1;
    assert_eq!(
        early["results"][0]["duplicates"].as_array().unwrap().len(),
        3
    );
    assert_eq!(early["results"][0]["duplicates"][0]["id"], "c00000");
    let (st, v) = s.post(
        "/documents?max_duplicates=101",
        &json!({"id": "z2", "fingerprint": "0123456789abcdef"}),
    );
    assert_eq!(
        (st, v["field"].as_str()),
        (400, Some("max_duplicates")),
        "{v}"
    );
    assert_eq!(s.call("GET", "/health", None).1["documents"], 1201);
}

/// Issue 23: a request whose answer could exceed --max-hits is refused
/// with 400 before anything is written or computed; queries have a default
/// limit (10) and a maximum (10,000).
#[test]
fn regression_23_caps_are_checked_before_any_work() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &["--max-hits", "1000"]);
    let docs = |n: usize, tag: &str| -> Value {
        Value::Array(
            (0..n)
                .map(|i| json!({"id": format!("{tag}{i:04}"), "fingerprint": "00000000ffffffff"}))
                .collect(),
        )
    };
    // 200 documents × 10 listed duplicates could answer 2,000 hits.
    let (st, v) = s.post("/documents", &docs(200, "a"));
    assert_eq!(
        (st, v["field"].as_str()),
        (400, Some("max_duplicates")),
        "{v}"
    );
    assert_eq!(
        s.call("GET", "/health", None).1["documents"],
        0,
        "nothing written"
    );
    let (st, v) = s.post("/documents?max_duplicates=5", &docs(200, "a"));
    assert_eq!(st, 200, "{v}");
    // Queries: the default limit, the maximum, and the request's sum.
    let (st, v) = s.post("/query", &json!({"fingerprint": "00000000ffffffff"}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["hits"].as_array().unwrap().len(), 10);
    let (st, v) = s.post(
        "/query",
        &json!({"fingerprint": "00000000ffffffff", "limit": 200}),
    );
    assert_eq!((st, v["hits"].as_array().unwrap().len()), (200, 200));
    let (st, v) = s.post(
        "/query",
        &json!({"fingerprint": "00000000ffffffff", "limit": 10001}),
    );
    assert_eq!(st, 400, "{v}");
    let q = |limit: Option<usize>| -> Value {
        let one = match limit {
            Some(l) => json!({"fingerprint": "00000000ffffffff", "limit": l}),
            None => json!({"fingerprint": "00000000ffffffff"}),
        };
        json!({"queries": vec![one; 150]})
    };
    let (st, v) = s.post("/query", &q(None));
    assert_eq!(
        (st, v["field"].as_str()),
        (400, Some("limit")),
        "150 × 10 > 1000: {v}"
    );
    let (st, v) = s.post("/query", &q(Some(6)));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][149]["hits"].as_array().unwrap().len(), 6);
}

/// Issue 23: a one-document write does not wait for a large batch that
/// another client is writing: the batch commits in chunks and hands the
/// writer on between them (before, the whole batch held it).
#[test]
fn regression_23_a_small_write_does_not_wait_for_a_large_batch() {
    let t = TempDb::new();
    init(&t);
    let s = Arc::new(Server::start(&t.path(), &[]));
    let mut r = rng(3);
    let big = Value::Array(
        (0..10_000)
            .map(|i| json!({"id": format!("big{i:05}"), "fingerprint": format!("{:016x}", rand::Rng::random::<u64>(&mut r))}))
            .collect(),
    );
    let writer = {
        let base = s.base.clone();
        std::thread::spawn(move || {
            // k = 11: each document reads 548 buckets. No client timeout:
            // a busy machine may take minutes over the batch, and what is
            // tested is the order of the answers, not their times.
            let mut resp = ureq::post(&format!("{base}/documents?k=11"))
                .config()
                .http_status_as_error(false)
                .build()
                .send_json(&big)
                .expect("the batch's request");
            let body = resp.body_mut().read_to_string().unwrap();
            assert_eq!(resp.status().as_u16(), 200, "{body}");
        })
    };
    // Once the batch is being written (a first chunk committed), a
    // one-document write is answered while the batch is still unfinished.
    let started = Instant::now();
    while s.call("GET", "/health", None).1["documents"] == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the batch never started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let (st, _) = s.post(
        "/documents",
        &json!({"id": "small", "fingerprint": "0000000000000001"}),
    );
    assert_eq!(st, 200);
    let stored = s.call("GET", "/health", None).1["documents"]
        .as_u64()
        .unwrap();
    writer.join().unwrap();
    assert!(
        stored < 10_001,
        "the one-document write was answered only after the whole batch"
    );
    assert_eq!(
        s.call("GET", "/health", None).1["documents"],
        10_001,
        "the batch and the small write"
    );
    drop(s);
    verify_clean(&t.path());
}

/// Issue 24 (review finding 2): idle half-open connections, which need no
/// token, cannot take the descriptors the store needs: with the limit on
/// open files at 256 and 300 connections held, a client connected before
/// writes 120 MB (flushes included) without an error, a new client gets a
/// quick 503 instead of a timeout, the held connections are closed after
/// the header timeout, and the store takes writes after. Before: the flush
/// failed with "Too many open files" and every later write answered 500.
#[test]
fn regression_24_idle_connections_cannot_starve_the_store() {
    use std::io::Write;
    let t = TempDb::new();
    init(&t);
    let s = Server::start_limited(&t.path(), &["--header-timeout", "3"], Some(256));
    let mut legit = std::net::TcpStream::connect(s.addr()).unwrap();
    let (st, _) = exchange(&mut legit, "GET", "/health", "");
    assert_eq!(st, 200);
    let mut held = Vec::new();
    for _ in 0..300 {
        let Ok(mut c) = std::net::TcpStream::connect(s.addr()) else {
            continue;
        };
        let _ = c.write_all(b"GET /health HTTP/1.1\r\n");
        held.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    // A new client is answered (503) rather than left waiting for a
    // descriptor (the cap is reached).
    let answer = s.raw(
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(60),
    );
    assert!(
        matches!(&answer, Some((503, b)) if b.contains("too many connections")),
        "{answer:?}"
    );
    // The connected client writes enough to flush memtables.
    let mut r = rng(24);
    for b in 0..15 {
        let docs: Vec<Value> = (0..4000)
            .map(|i| json!({"id": format!("{b:03}-{i:05}-{}", "x".repeat(2000)), "fingerprint": format!("{:016x}", rand::Rng::random::<u64>(&mut r))}))
            .collect();
        let (st, v) = exchange(&mut legit, "POST", "/documents", &json!(docs).to_string());
        assert_eq!(st, 200, "batch {b}: {v}");
    }
    // The held connections are closed after the header timeout.
    std::thread::sleep(Duration::from_secs(4));
    let answer = s.raw(
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(matches!(&answer, Some((200, _))), "{answer:?}");
    drop(held);
    let (st, v) = s.post(
        "/documents",
        &json!({"id": "after", "fingerprint": "00000000000000ff"}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, h) = s.call("GET", "/health", None);
    assert_eq!((st, &h["status"]), (200, &json!("ok")), "{h}");
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    verify_clean(&t.path());
}

/// Issue 24 (review finding 3): SIGTERM while a client holds a half-sent
/// request ends within the grace period, exit 0, with every acknowledged
/// write stored. Before: the process waited for the client forever.
#[test]
fn regression_24_sigterm_with_a_straggler_ends_within_the_grace() {
    use std::io::Write;
    let t = TempDb::new();
    init(&t);
    let s = Server::start(
        &t.path(),
        &["--shutdown-grace", "2", "--header-timeout", "60"],
    );
    let (st, _) = s.post(
        "/documents",
        &json!({"id": "kept", "fingerprint": "0123456789abcdef"}),
    );
    assert_eq!(st, 200);
    let mut straggler = std::net::TcpStream::connect(s.addr()).unwrap();
    straggler
        .write_all(b"POST /documents HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n")
        .unwrap();
    let mut slow_body = std::net::TcpStream::connect(s.addr()).unwrap();
    slow_body
        .write_all(
            b"POST /documents HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n[{\"id\"",
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The stop ends at the grace, dropping the two (the header timeout,
    // 60 s, would close them much later; before, the process waited for
    // them forever).
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    assert!(
        err.contains("2 connection(s) still open after the shutdown grace of 2 s: dropped"),
        "{err}"
    );
    drop((straggler, slow_body));
    let o = simdb(&[&"get", &t.path(), &"kept", &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    verify_clean(&t.path());
}

/// Issue 24 (review finding 6): a batch array is counted while it is
/// parsed: a 60 MB body of 30 million items is refused at item 10,001,
/// without building them (before: about 1 GB per request), and parsing
/// does not stall `/health`.
#[test]
fn regression_24_bodies_are_counted_while_parsed() {
    let t = TempDb::new();
    init(&t);
    let s = Arc::new(Server::start(&t.path(), &["--threads", "2"]));
    let zeros = {
        let mut b = String::with_capacity(60_000_002);
        b.push('[');
        for i in 0..30_000_000 {
            if i > 0 {
                b.push(',');
            }
            b.push('0');
        }
        b.push(']');
        b
    };
    let queries = format!("{{\"queries\": [{}{{}}]}}", "{},".repeat(5_000_000));
    let documents = format!("[{}{{}}]", "{},".repeat(5_000_000));
    for (path, body) in [("/documents", &documents), ("/query", &queries)] {
        let (st, v) = s.call("POST", path, Some(body));
        assert_eq!(st, 400, "{v}");
        assert!(
            v["error"].as_str().unwrap().contains("more than 10000"),
            "{v}"
        );
    }
    // Several at once, while /health is polled; and (review 2026-11-b,
    // finding 6) the array inside a document's own field, which was
    // parsed whole (1.07 GB each) and accepted.
    let nested = format!("{{\"id\":\"a\",\"text\":\"x\",\"x\":{zeros}}}");
    let (st, v) = s.call("POST", "/documents", Some(&nested));
    assert_eq!((st, v["field"].as_str()), (400, Some("x")), "{v}");
    let zeros = Arc::new(nested);
    let senders: Vec<_> = (0..3)
        .map(|_| {
            let (s, z) = (s.clone(), zeros.clone());
            std::thread::spawn(move || s.call("POST", "/documents", Some(&z)).0)
        })
        .collect();
    // /health is answered while the bodies are parsed (parsing holds a
    // blocking thread, not the service's own): several answers before the
    // last body's 400.
    let mut answered_meanwhile = 0;
    while senders.iter().any(|h| !h.is_finished()) {
        assert_eq!(s.call("GET", "/health", None).0, 200);
        answered_meanwhile += usize::from(senders.iter().any(|h| !h.is_finished()));
        std::thread::sleep(Duration::from_millis(5));
    }
    for h in senders {
        assert_eq!(h.join().unwrap(), 400);
    }
    let peak = s.peak_kib();
    assert!(peak < 600 << 10, "peak RSS {peak} KiB");
    assert!(
        answered_meanwhile >= 2,
        "/health answered {answered_meanwhile} times meanwhile"
    );
}

/// Issue 24 (review findings 7 and 12): without a token, a request for a
/// foreign Host (DNS rebinding) or from a foreign Origin (a web page) is
/// refused, and a body must be `application/json` (a cross-site "simple"
/// POST is text/plain); the bearer scheme is case-insensitive. Before: a
/// text/plain POST with a foreign Origin and Host wrote a document.
#[test]
fn regression_24_foreign_hosts_origins_and_bodies_are_refused() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &["--allow-host", "simdb.internal"]);
    let doc = r#"{"id":"planted","fingerprint":"0123456789abcdef"}"#;
    let post = |headers: &str| {
        s.raw(
            &format!(
                "POST /documents HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{doc}",
                doc.len()
            ),
            Duration::from_secs(10),
        )
        .unwrap()
    };
    let json_type = "Content-Type: application/json\r\n";
    // The review's request: a foreign page's text/plain POST.
    let (st, _) = post(
        "Host: attacker.example:7420\r\nOrigin: http://attacker.example\r\n\
         Content-Type: text/plain;charset=UTF-8\r\n",
    );
    assert_eq!(st, 403);
    let (st, b) = post("Host: localhost\r\nContent-Type: text/plain\r\n");
    assert_eq!(st, 415, "{b}");
    let (st, b) = post(&format!(
        "Host: localhost\r\nOrigin: http://attacker.example\r\n{json_type}"
    ));
    assert_eq!(st, 403, "{b}");
    let (st, b) = post(&format!("Host: attacker.example\r\n{json_type}"));
    assert_eq!(st, 403, "{b}");
    let (st, b) = s
        .raw(
            "DELETE /documents/x HTTP/1.1\r\nHost: rebound.example:7420\r\nConnection: close\r\n\r\n",
            Duration::from_secs(10),
        )
        .unwrap();
    assert_eq!(st, 403, "{b}");
    assert_eq!(s.call("GET", "/health", None).1["documents"], 0);
    // What is allowed: loopback names and addresses, the allowed host,
    // loopback origins.
    for host in [
        "localhost:7420",
        "127.0.0.1",
        "[::1]:80",
        "simdb.internal",
        "LOCALHOST.",
    ] {
        let (st, b) = post(&format!("Host: {host}\r\n{json_type}"));
        assert_eq!(st, 200, "{host}: {b}");
    }
    let (st, b) = post(&format!(
        "Host: localhost\r\nOrigin: http://localhost:3000\r\n{json_type}"
    ));
    assert_eq!(st, 200, "{b}");
    drop(s);

    // With a token: any Host (the token is the check), the scheme in any case.
    let token = "0123456789abcdef0123";
    let tf = t.file("token", token);
    let s = Server::start(&t.path(), &["--token-file", tf.to_str().unwrap()]);
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let (st, b) = s
            .raw(
                &format!("GET /health HTTP/1.1\r\nHost: simdb.example.com\r\nAuthorization: {scheme} {token}\r\nConnection: close\r\n\r\n"),
                Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(st, 200, "{scheme}: {b}");
    }
}

/// Issue 24 (review finding 10): `/stats` scans the postings at most once
/// a minute; its document count is read at each call.
#[test]
fn regression_24_stats_scans_at_most_once_a_minute() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let (_, a) = s.call("GET", "/stats", None);
    assert_eq!(
        (a["documents"].clone(), a["buckets_age_seconds"].clone()),
        (json!(0), json!(0)),
        "{a}"
    );
    let (st, _) = s.post(
        "/documents",
        &json!({"id": "x", "fingerprint": "0123456789abcdef"}),
    );
    assert_eq!(st, 200);
    let (_, b) = s.call("GET", "/stats", None);
    assert_eq!(b["documents"], 1, "{b}");
    // The bucket figures are the cached ones (one scan a minute).
    assert_eq!(b["families"], a["families"], "{b}");
}

/// Issue 24 (review S2): `sync=true` makes what its answer rests on
/// durable also when nothing is written: a document another client wrote
/// without sync, answered `unchanged` or `duplicate` to a synced request,
/// is fsynced first (before: no fsync at all).
#[test]
fn regression_24_synced_answers_without_writes_sync_the_log() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let syncs = |s: &Server| -> u64 {
        let (_, m) = s.call("GET", "/metrics", None);
        m.as_str()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("simdb_wal_syncs "))
            .and_then(|v| v.trim().parse().ok())
            .expect("simdb_wal_syncs in /metrics")
    };
    let doc = json!({"id": "a", "text": "国务院总理主持召开常务会议，部署扩大内需的政策措施。"});
    assert_eq!(s.post("/documents", &doc).0, 200);
    let before = syncs(&s);
    let (st, v) = s.post("/documents?sync=true", &doc);
    assert_eq!(
        (st, &v["results"][0]["outcome"]),
        (200, &json!("unchanged")),
        "{v}"
    );
    assert_eq!(syncs(&s), before + 1);
    let copy = json!({"id": "b", "text": "国务院总理主持召开常务会议，部署扩大内需的政策措施。"});
    let (st, v) = s.post("/documents/check?sync=true", &copy);
    assert_eq!(
        (st, &v["results"][0]["outcome"]),
        (200, &json!("duplicate")),
        "{v}"
    );
    assert_eq!(syncs(&s), before + 2);
}

/// Issue 24 (review finding 2, the second half): after a storage failure
/// (here the store's directory made immutable, so RocksDB cannot create a
/// file: its flush and its next log fail), writes answer 500 and
/// `/health` 503; once the cause is gone the service reopens the store by
/// itself and writes go on, with every acknowledged document kept
/// (before: 500 for every write until a restart). Needs `chattr` on a
/// file system that supports it (ext4, xfs, btrfs) and root; skipped
/// otherwise.
#[test]
fn regression_24_the_service_recovers_from_a_storage_failure() {
    let t = TempDb::new();
    init(&t);
    let dir = t.path();
    let chattr = |flag: &str| {
        Command::new("chattr")
            .arg(flag)
            .arg(&dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !chattr("+i") {
        eprintln!("skipped: chattr +i is not available here");
        return;
    }
    let probe = std::fs::write(dir.join("probe"), b"x").is_err();
    chattr("-i");
    if !probe {
        eprintln!("skipped: an immutable directory is writable here");
        return;
    }
    let s = Server::start(&dir, &[]);
    let mut acked = 0usize;
    let mut r = rng(31);
    let mut batch = |b: usize| -> Value {
        json!((0..4000)
            .map(|i| json!({"id": format!("{b:03}-{i:05}-{}", "x".repeat(2000)), "fingerprint": format!("{:016x}", rand::Rng::random::<u64>(&mut r))}))
            .collect::<Vec<_>>())
    };
    let (st, _) = s.post("/documents", &batch(0));
    assert_eq!(st, 200);
    acked += 4000;
    /// Makes the directory mutable again however the test ends.
    struct Mutable(std::path::PathBuf);
    impl Drop for Mutable {
        fn drop(&mut self) {
            let _ = Command::new("chattr").arg("-i").arg(&self.0).output();
        }
    }
    assert!(chattr("+i"));
    let mutable = Mutable(dir.clone());
    // Writes until one fails (a memtable switch or flush needs a new file).
    let mut failed = false;
    for b in 1..80 {
        let (st, v) = s.post("/documents", &batch(b));
        match st {
            200 => acked += 4000,
            500 => {
                failed = true;
                break;
            }
            other => panic!("{other}: {v}"),
        }
    }
    assert!(failed, "no write failed with the directory immutable");
    let (st, h) = s.call("GET", "/health", None);
    assert_eq!((st, &h["status"]), (503, &json!("unhealthy")), "{h}");
    drop(mutable);
    // Writes keep failing until the store is reopened (after 5 s of
    // failures); then they go on.
    let started = Instant::now();
    let mut b = 100;
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the service did not recover"
        );
        let (st, _) = s.post("/documents", &batch(b));
        b += 1;
        if st == 200 {
            acked += 4000;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (st, h) = s.call("GET", "/health", None);
    assert_eq!((st, &h["status"]), (200, &json!("ok")), "{h}");
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    assert!(err.contains("reopened the store"), "{err}");
    let o = simdb(&[&"stats", &dir, &"--json"]);
    let stats: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        stats["documents"].as_u64().unwrap() as usize >= acked,
        "{stats}"
    );
    verify_clean(&dir);
}

/// Issue 37 (review 2026-11-b, finding 7): four connections that start
/// chunked bodies and stall each reserved the whole body limit, so they
/// held all of `--max-inflight-mb` and every other client's POST waited
/// for their timeout (29.5 s) while /health said ok. A body's share now
/// grows with the bytes received: stalled clients hold what they sent,
/// others are answered at once, /health shows the bodies held, and a
/// stalled client past `--body-timeout` gets 408 and holds nothing.
#[test]
fn regression_37_stalled_chunked_bodies_hold_only_what_they_sent() {
    use std::io::{Read, Write};
    let t = TempDb::new();
    init(&t);
    let s = Server::start(
        &t.path(),
        &[
            "--max-body-mb",
            "16",
            "--max-inflight-mb",
            "64",
            "--body-timeout",
            "10",
        ],
    );
    let stalled: Vec<std::net::TcpStream> = (0..4)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(s.addr()).unwrap();
            let head = "POST /documents HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            c.write_all(head.as_bytes()).unwrap();
            c.write_all(b"5\r\n[{\"id\r\n").unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (st, v) = s.post(
        "/documents",
        &json!({"id": "polite", "text": "a polite client's text"}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, _) = s.post("/query", &json!({"text": "a polite client's text"}));
    assert_eq!(st, 200);
    // Answered before the stalled bodies' timeout: none of them has its
    // 408 yet (before, the polite client waited for it).
    for c in &stalled {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        let r = (&*c).read(&mut b);
        assert!(
            matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a stalled body was answered before the polite client: {r:?}"
        );
        c.set_nonblocking(false).unwrap();
    }
    let (_, h) = s.call("GET", "/health", None);
    let held = h["bodies_in_flight_bytes"].as_u64().unwrap();
    assert!(held <= 4 * 1024, "{h}");
    assert_eq!(h["bodies_in_flight_limit"], 64 << 20, "{h}");
    // Past --body-timeout: 408, and nothing is held.
    for mut c in stalled {
        c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    }
    let (_, h) = s.call("GET", "/health", None);
    assert_eq!(h["bodies_in_flight_bytes"], 0, "{h}");
}

/// Issue 37 (review 2026-11-b, finding 8): SIGTERM waited for a query
/// batch on the blocking pool whatever `--shutdown-grace` said (exit 33 s
/// after SIGTERM with a grace of 5 s, its client never answered). A batch
/// is answered a few hundred queries at a time and stops at the next step
/// once a stop begins: the client gets 503 and the process exits within
/// the grace.
#[test]
fn regression_37_sigterm_stops_a_long_query_batch() {
    let t = TempDb::new();
    init(&t);
    // A flood of copies that each query's sketch rejects: every query
    // reads up to the rejected-candidate bound (a few milliseconds).
    let text = articles(37, 1).remove(0);
    let lines: String = (0..3000)
        .map(|i| format!("{}\n", json!({"id": format!("c{i}"), "text": text})))
        .collect();
    let input = t.file("copies.jsonl", lines);
    assert_eq!(
        common::code(&common::simdb(&[&"ingest", &t.path(), &input])),
        0
    );
    let s = Server::start(&t.path(), &["--shutdown-grace", "10"]);
    // Every 20th character edited: neither similar enough nor contained
    // (a text with a sentence added holds the copy whole, which the fine
    // sketch's estimate confirms).
    let edited: String = text
        .chars()
        .enumerate()
        .map(|(i, c)| if i % 20 == 19 { '某' } else { c })
        .collect();
    let q = json!({"text": edited, "min_similarity": 0.99});
    let body = json!({"queries": vec![q; 10_000]});
    let base = s.base.clone();
    let client = std::thread::spawn(move || {
        let started = Instant::now();
        let r = ureq::post(&format!("{base}/query"))
            .config()
            .http_status_as_error(false)
            .build()
            .send_json(&body);
        let (status, text) = match r {
            Ok(mut r) => (
                r.status().as_u16(),
                r.body_mut().read_to_string().unwrap_or_default(),
            ),
            Err(e) => (0, e.to_string()),
        };
        (status, text, started.elapsed())
    });
    // Stopped once the batch is under way: the client is answered 503 with
    // how much of the batch was done (before, the process waited for the
    // whole batch and the client got nothing), and no connection is left
    // for the grace to drop.
    std::thread::sleep(Duration::from_millis(3000));
    let (code, err) = s.stop();
    assert_eq!(code, 0, "{err}");
    let (status, body, waited) = client.join().unwrap();
    assert_eq!(status, 503, "the batch's client after {waited:?}: {body}");
    let answered: usize = body
        .split("; ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{body}"));
    assert!(answered < 10_000, "{body}");
    assert!(
        !err.contains("still open after the shutdown grace"),
        "{err}"
    );
}

/// A replica (`serve --read-only`, issue 39): it takes no writer lock, so
/// it runs beside the service that writes; it refuses writes with 405;
/// what the writer commits is answered by the replica within its refresh
/// interval (plus the time to open the store again); and killing the
/// writer (SIGKILL) does not disturb the replica's reads.
#[test]
fn a_replica_follows_the_writer_and_outlives_it() {
    let t = TempDb::new();
    init(&t);
    let texts = articles(39, 8);
    let doc = |i: usize| json!({"id": format!("a{i}"), "text": texts[i]});
    let first_hit = |s: &Server, i: usize| -> Option<String> {
        let (st, v) = s.post("/query", &json!({"text": texts[i], "limit": 1}));
        assert_eq!(st, 200, "{v}");
        v["hits"][0]["id"].as_str().map(String::from)
    };
    let primary = Server::start(&t.path(), &[]);
    let (st, v) = primary.post("/documents", &json!((0..4).map(doc).collect::<Vec<_>>()));
    assert_eq!(st, 200, "{v}");
    let replica = Server::start(&t.path(), &["--read-only", "--refresh", "1"]);
    for i in 0..4 {
        assert_eq!(
            first_hit(&replica, i).as_deref(),
            Some(format!("a{i}").as_str())
        );
    }
    // Writes are refused, with a reason.
    let (st, v) = replica.post("/documents", &doc(5));
    assert_eq!(st, 405, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("read-only replica"),
        "{v}"
    );
    let (st, _) = replica.call("DELETE", "/documents/a0", None);
    assert_eq!(st, 405);
    let (st, v) = replica.call("GET", "/health", None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["replica"]["refresh_seconds"], 1.0, "{v}");
    // New documents on the writer reach the replica within the refresh.
    assert_eq!(first_hit(&replica, 4), None);
    let (st, v) = primary.post("/documents", &json!([doc(4), doc(5)]));
    assert_eq!(st, 200, "{v}");
    let committed = std::time::Instant::now();
    while first_hit(&replica, 5).as_deref() != Some("a5") {
        assert!(
            committed.elapsed() < Duration::from_secs(120),
            "the replica did not see a5 within 120 s of its commit (refresh 1 s)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen_after = committed.elapsed();
    assert_eq!(first_hit(&replica, 4).as_deref(), Some("a4"));
    // The writer dies; the replica answers on, every document it saw.
    let mut primary = primary;
    unsafe {
        libc::kill(primary.child.id() as i32, libc::SIGKILL);
    }
    primary.child.wait().unwrap();
    for _ in 0..3 {
        for i in 0..6 {
            assert_eq!(
                first_hit(&replica, i).as_deref(),
                Some(format!("a{i}").as_str())
            );
        }
        std::thread::sleep(Duration::from_millis(400));
    }
    let (code, err) = replica.stop();
    assert_eq!(code, 0, "{err}");
    eprintln!("replica saw a commit after {seen_after:?} (refresh 1 s)");
}

/// `POST /freeze` writes the frozen index while the service runs: writers
/// wait for it, queries answer the same before and after, writes after it
/// mark what they change, and a replica refuses it.
#[test]
fn freeze_over_the_service_keeps_every_answer() {
    let t = TempDb::new();
    init(&t);
    let texts = articles(40, 10);
    let doc = |i: usize| json!({"id": format!("a{i}"), "text": texts[i]});
    let s = Server::start(&t.path(), &[]);
    let (st, v) = s.post("/documents", &json!((0..6).map(doc).collect::<Vec<_>>()));
    assert_eq!(st, 200, "{v}");
    let answers = |s: &Server| -> Vec<Value> {
        (0..10)
            .map(|i| s.post("/query", &json!({"text": texts[i]})).1["hits"].clone())
            .collect()
    };
    let before = answers(&s);
    let (st, v) = s.post("/freeze", &json!({}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["generation"], 1, "{v}");
    assert_eq!(answers(&s), before);
    let (st, v) = s.post("/documents", &json!((6..10).map(doc).collect::<Vec<_>>()));
    assert_eq!(st, 200, "{v}");
    let after = answers(&s);
    for (i, hits) in after.iter().enumerate() {
        assert_eq!(hits[0]["id"], format!("a{i}"), "{hits}");
    }
    let replica = Server::start(&t.path(), &["--read-only"]);
    let (st, v) = replica.post("/freeze", &json!({}));
    assert_eq!(st, 405, "{v}");
    assert_eq!(answers(&replica), after);
    drop(replica);
    drop(s);
    let db = simdb::Db::options().read_only().open(t.path()).unwrap();
    let f = db.admin().stats().unwrap().frozen.unwrap();
    assert!(f.clean_buckets < f.buckets, "the later writes are marked");
    assert!(db.admin().verify().unwrap().is_clean());
}

#[test]
fn pages_are_written_and_queried_by_their_html() {
    use common::sites::Site;
    use rand::prelude::*;
    let vocab = vocab();
    let words = |rng: &mut rand_chacha::ChaCha8Rng, n: usize| -> String {
        (0..n).map(|_| *vocab.choose(rng).unwrap()).collect()
    };
    let mut r = rng(43);
    let sites: Vec<Site> = (0..2).map(|i| Site::new(&mut r, &words, i)).collect();
    let paras =
        |r: &mut rand_chacha::ChaCha8Rng| -> Vec<String> { (0..8).map(|_| words(r, 40)).collect() };
    let (one, other) = (paras(&mut r), paras(&mut r));
    let a = sites[0].page(&mut r, "今天的新闻", &one);
    let b = sites[1].page(&mut r, "今天的新闻", &one);
    let c = sites[0].page(&mut r, "明天的新闻", &other);
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let (st, v) = s.post(
        "/documents",
        &json!([{"id": "a", "html": a}, {"id": "c", "html": c}, {"id": "t", "text": "天气预报"}]),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["pages"]["article"], 2, "{v}");
    assert_eq!(v["results"][0]["page"], "article", "{v}");
    assert_eq!(
        v["results"][2].get("page"),
        None,
        "a text is not a page: {v}"
    );
    let (st, v) = s.post("/documents", &json!({"id": "b", "html": b}));
    assert_eq!(st, 200, "{v}");
    let dups: Vec<&str> = v["results"][0]["duplicates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(dups, ["a"], "the same article in another template: {v}");
    // A query by a page, and by its text.
    let (st, v) = s.post("/query", &json!({"html": b, "id": "q"}));
    assert_eq!(st, 200, "{v}");
    let mut hits: Vec<&str> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    hits.sort();
    assert_eq!(hits, ["a", "b"], "{v}");
    assert_eq!(v["query"], "q");
    // Misshapen pages are refused, naming the field.
    for (body, field) in [
        (json!({"id": "x", "html": 5}), "html"),
        (
            json!([{"id": "x", "html": "<p>x</p>", "text": "x"}]),
            "[0].text",
        ),
    ] {
        let (st, v) = s.post("/documents", &body);
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["field"], field, "{v}");
    }
    let (st, v) = s.post("/query", &json!({"html": "<p>x</p>", "text": "x"}));
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["field"], "html", "{v}");
    let (code_, err) = s.stop();
    assert_eq!(code_, 0, "{err}");
    let o = simdb(&[&"stats", &t.path()]);
    assert!(stdout(&o).contains("web pages    html/3"), "{}", stdout(&o));
    verify_clean(&t.path());
}

/// The review's endpoints (docs/review.md): `GET /clusters` pages
/// clusters largest first with a cursor, `GET /cluster?id=` pages one
/// cluster's members with why each is there; bad parameters are 400s
/// naming the parameter, an unknown id a 404.
#[test]
fn review_endpoints_page_clusters_and_members() {
    let t = TempDb::new();
    init(&t);
    let texts = articles(7, 3);
    let s = Server::start(&t.path(), &[]);
    // Three originals; the first with three exact copies, the second with one.
    let mut docs: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, x)| json!({"id": format!("o{i}"), "text": x}))
        .collect();
    for (i, n) in [(0, 3), (1, 1)] {
        for c in 0..n {
            docs.push(json!({"id": format!("o{i}-copy{c}"), "text": texts[i]}));
        }
    }
    let (st, v) = s.post("/documents", &json!(docs));
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.call("GET", "/clusters", None);
    assert_eq!(st, 200, "{v}");
    let cs = v["clusters"].as_array().unwrap();
    assert_eq!(cs.len(), 2, "{v}");
    assert_eq!(
        (cs[0]["size"].as_u64(), cs[1]["size"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(cs[0]["representative"], "o0");
    assert_eq!(cs[0]["source"], "http:0", "{v}");
    assert!(v["next"].is_null(), "{v}");
    // One a page: the cursor leads to the second, then to the end.
    let (_, p1) = s.call("GET", "/clusters?limit=1&members=1", None);
    assert_eq!(p1["clusters"][0]["members"].as_array().unwrap().len(), 1);
    let next = p1["next"].as_str().expect("a next page").to_string();
    let (_, p2) = s.call("GET", &format!("/clusters?limit=1&after={next}"), None);
    assert_eq!(p2["clusters"][0]["representative"], "o1", "{p2}");
    assert!(p2["next"].is_null(), "{p2}");
    // A cluster from any member, two members a page.
    let (st, c) = s.call("GET", "/cluster?id=o0-copy2&limit=2", None);
    assert_eq!(st, 200, "{c}");
    assert_eq!(c["size"], 4);
    assert_eq!(c["representative"]["id"], "o0");
    assert_eq!(
        c["members"][0]["why"]["confirmed_by"], "representative",
        "{c}"
    );
    assert_eq!(c["members"][1]["why"]["confirmed_by"], "similarity", "{c}");
    assert_eq!(c["members"][1]["why"]["similarity"], 1.0, "{c}");
    let after = c["next"].as_str().unwrap();
    let (_, c2) = s.call(
        "GET",
        &format!("/cluster?id=o0&limit=2&after={after}"),
        None,
    );
    assert_eq!(c2["members"].as_array().unwrap().len(), 2, "{c2}");
    assert!(c2["next"].is_null());
    // Refused, naming what was wrong.
    for (path, field) in [
        ("/clusters?limit=0", "limit"),
        ("/clusters?limit=101", "limit"),
        ("/clusters?members=1000", "members"),
        ("/clusters?sort=oldest", "sort"),
        ("/clusters?page=2", "page"),
        ("/cluster", "id"),
        ("/cluster?id=o0&limit=5000", "limit"),
    ] {
        let (st, e) = s.call("GET", path, None);
        assert_eq!(st, 400, "{path}: {e}");
        assert_eq!(e["field"], field, "{path}: {e}");
    }
    let (st, e) = s.call("GET", "/cluster?id=o0&after=zz", None);
    assert_eq!(st, 400, "{e}");
    // A size cursor is not a newest-first one.
    let (st, e) = s.call("GET", "/clusters?sort=newest&after=3-4", None);
    assert_eq!(st, 400, "{e}");
    let (st, e) = s.call("GET", "/clusters?sort=newest", None);
    assert_eq!(st, 200, "{e}");
    let (st, e) = s.call("GET", "/cluster?id=nobody", None);
    assert_eq!(st, 404, "{e}");
}

/// `GET /diff?a=&b=` (the review page's side-by-side view): in a store
/// that keeps texts, spans whose `same` and `removed` text is a's and whose
/// `same` and `added` text is b's; `GET /documents/ID` has the text. A
/// store without texts, a document without one, an absent id and missing
/// parameters are refused, each saying which.
#[test]
fn diff_shows_where_two_kept_texts_differ() {
    let t = TempDb::new();
    let o = simdb(&[&"init", &t.path(), &"--keep-texts"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = Server::start(&t.path(), &[]);
    let a = "国务院总理今天主持召开常务会议，研究部署就业政策。The quick brown fox jumps.";
    let b = "国务院总理昨天主持召开常务会议，研究部署就业政策。The quick red fox jumps.";
    let docs = json!([
        {"id": "a", "text": a},
        {"id": "b", "text": b},
        {"id": "f", "features": {"x": 1.0}},
    ]);
    let (st, v) = s.post("/documents", &docs);
    assert_eq!(st, 200, "{v}");
    let (st, d) = s.call("GET", "/diff?a=a&b=b", None);
    assert_eq!(st, 200, "{d}");
    // One side of a diff: its `same` spans and those of kind `keep`.
    let side_of = |d: &Value, keep: &str| -> String {
        d["spans"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["kind"] == "same" || s["kind"] == keep)
            .map(|s| s["text"].as_str().unwrap())
            .collect()
    };
    let side = |keep: &str| side_of(&d, keep);
    assert_eq!(side("removed"), a);
    assert_eq!(side("added"), b);
    let changed = |kind: &str| -> Vec<&str> {
        d["spans"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["kind"] == kind)
            .map(|s| s["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(changed("removed"), ["今", "brown"], "{d}");
    assert_eq!(changed("added"), ["昨", "red"], "{d}");
    assert_eq!(
        (d["a_bytes"].as_u64(), d["b_bytes"].as_u64()),
        (Some(a.len() as u64), Some(b.len() as u64))
    );
    // Texts longer than a diff compares (review-2026-11-c, finding 3):
    // the first MiB of each, cut on a character, and their whole lengths.
    let long_a = format!("{}{}", "甲乙丙丁".repeat(100_000), "结尾一");
    let long_b = format!("{}{}", "甲乙丙戊".repeat(100_000), "结尾二");
    assert!(long_a.len() > simdb::diff::MAX_BYTES);
    let (st, v) = s.post(
        "/documents",
        &json!([{"id": "la", "text": long_a}, {"id": "lb", "text": long_b}]),
    );
    assert_eq!(st, 200, "{v}");
    let (st, d) = s.call("GET", "/diff?a=la&b=lb", None);
    assert_eq!(st, 200, "{}", d.to_string().len());
    let side = |keep: &str| side_of(&d, keep);
    assert_eq!(side("removed"), simdb::diff::head(&long_a));
    assert_eq!(side("added"), simdb::diff::head(&long_b));
    assert!(side("removed").len() < long_a.len());
    assert_eq!(d["a_bytes"].as_u64(), Some(long_a.len() as u64));
    assert_eq!(d["b_bytes"].as_u64(), Some(long_b.len() as u64));
    let (_, g) = s.call("GET", "/documents/b", None);
    assert_eq!(g["text"], b);
    for (path, status, says) in [
        ("/diff?a=a&b=f", 400, "has no kept text"),
        ("/diff?a=a&b=nobody", 404, "nobody"),
        ("/diff?a=a", 400, "a and b"),
        ("/diff?a=a&b=b&c=1", 400, "c"),
    ] {
        let (st, e) = s.call("GET", path, None);
        assert_eq!(st, status, "{path}: {e}");
        assert!(e.to_string().contains(says), "{path}: {e}");
    }
    drop(s);
    // A store made without texts says so.
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let (st, v) = s.post(
        "/documents",
        &json!([{"id": "a", "text": a}, {"id": "b", "text": b}]),
    );
    assert_eq!(st, 200, "{v}");
    let (st, e) = s.call("GET", "/diff?a=a&b=b", None);
    assert_eq!(st, 400, "{e}");
    assert!(e.to_string().contains("keeps no texts"), "{e}");
    let (_, g) = s.call("GET", "/documents/b", None);
    assert!(g.get("text").is_none(), "{g}");
}

/// `POST /decisions` and `GET /decisions`: "not a copy" on a member takes
/// it out of its representative's cluster, the log says who ("api") and
/// when, an undo is logged, "keep" makes a member the representative; bad
/// bodies are 400s naming the field.
#[test]
fn decisions_are_written_and_listed() {
    let t = TempDb::new();
    init(&t);
    let s = Server::start(&t.path(), &[]);
    let text = &articles(11, 1)[0];
    let docs: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| json!({"id": id, "text": text}))
        .collect();
    let (st, v) = s.post("/documents", &json!(docs));
    assert_eq!(st, 200, "{v}");
    let (_, c) = s.call("GET", "/cluster?id=a", None);
    assert_eq!(c["size"], 3, "{c}");
    let (st, d) = s.post("/decisions", &json!({"not_a_copy": ["a", "c"]}));
    assert_eq!(st, 200, "{d}");
    assert_eq!(
        (d["seq"].as_u64(), d["kind"].as_str(), d["who"].as_str()),
        (Some(1), Some("not_a_copy"), Some("api"))
    );
    let (_, c) = s.call("GET", "/cluster?id=a", None);
    assert_eq!(c["size"], 2, "{c}");
    let (_, c) = s.call("GET", "/cluster?id=c", None);
    assert_eq!(c["size"], 1, "{c}");
    let (st, d) = s.post("/decisions", &json!({"undo": 1}));
    assert_eq!(st, 200, "{d}");
    assert_eq!(
        (d["seq"].as_u64(), d["undoes"].as_u64()),
        (Some(2), Some(1))
    );
    let (st, log) = s.call("GET", "/decisions?limit=1", None);
    assert_eq!(st, 200, "{log}");
    assert_eq!(log["decisions"][0]["seq"], 1);
    assert_eq!(log["next"], 1);
    let (_, log) = s.call("GET", "/decisions?after=1", None);
    assert_eq!(log["decisions"][0]["kind"], "undo");
    assert!(log["next"].is_null());
    for (body, status, field) in [
        (json!({"not_a_copy": ["a"]}), 400, "not_a_copy"),
        (json!({"not_a_copy": ["a", 3]}), 400, "not_a_copy"),
        (json!({"undo": 0}), 400, "undo"),
        (json!({"undo": 1, "not_a_copy": ["a", "b"]}), 400, ""),
        (json!({"keep": 3}), 400, "keep"),
        (json!({"keep": "nobody"}), 404, ""),
        (json!({"not_a_copy": ["a", "nobody"]}), 404, ""),
        (json!({"not_a_copy": ["a", "a"]}), 400, ""),
        (json!({"undo": 1}), 400, ""),
    ] {
        let (st, e) = s.post("/decisions", &body);
        assert_eq!(st, status, "{body}: {e}");
        if !field.is_empty() {
            assert_eq!(e["field"], field, "{body}: {e}");
        }
    }
    // A body larger than a decision can be is refused as it arrives,
    // not parsed (review-2026-11-c, finding 6); two of the longest ids,
    // every byte escaped, still fit.
    {
        use std::io::{Read, Write};
        let addr = s.base.trim_start_matches("http://");
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        write!(
            c,
            "POST /decisions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 60000000\r\n\r\n{{\"keep\": [0,0,0"
        )
        .unwrap();
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("at most two ids"), "{answer}");
    }
    let longest = "\\u0001".repeat(4096);
    let body = format!("{{\"not_a_copy\": [\"{longest}\", \"{longest}x\"]}}");
    assert!(body.len() > 48 << 10);
    let (st, e) = s.call("POST", "/decisions", Some(&body));
    assert!(st == 400 || st == 404, "{st}: {e}");
    let (st, e) = s.call("GET", "/decisions?limit=0", None);
    assert_eq!(st, 400, "{e}");
    // "Keep this one": b represents a's cluster at once.
    let (st, d) = s.post("/decisions", &json!({"keep": "b"}));
    assert_eq!(st, 200, "{d}");
    assert_eq!(
        (d["kind"].as_str(), d["a"].as_str(), d["who"].as_str()),
        (Some("keep"), Some("b"), Some("api"))
    );
    let (_, c) = s.call("GET", "/cluster?id=a", None);
    assert_eq!(c["representative"]["id"], "b", "{c}");
    assert_eq!(c["representative"]["kept"], d["seq"], "{c}");
    drop(s);
    verify_clean(&t.path());
}

/// A token file of several tokens, named or not: each is accepted, and
/// the decision log records the name of the token a decision came with
/// (`api` for an unnamed one); a malformed file is refused naming its line.
#[test]
fn each_token_names_who_decided() {
    let t = TempDb::new();
    init(&t);
    let (unnamed, alice) = (
        "0123456789abcdef0123456789abcdef",
        "fedcba9876543210fedcba9876543210",
    );
    let file = t.file(
        "tokens",
        format!("# the service's tokens\n{unnamed}\n\nalice {alice}\n"),
    );
    let mut s = Server::start(&t.path(), &["--token-file", file.to_str().unwrap()]);
    let text = &articles(12, 1)[0];
    s.token = Some(unnamed.into());
    let (st, v) = s.post(
        "/documents",
        &json!([{"id": "a", "text": text}, {"id": "b", "text": text}, {"id": "c", "text": text}]),
    );
    assert_eq!(st, 200, "{v}");
    let (_, d) = s.post("/decisions", &json!({"not_a_copy": ["a", "b"]}));
    assert_eq!(d["who"], "api", "{d}");
    s.token = Some(alice.into());
    let (_, d) = s.post("/decisions", &json!({"not_a_copy": ["a", "c"]}));
    assert_eq!(d["who"], "alice", "{d}");
    s.token = Some("fedcba9876543210fedcba987654321X".into());
    assert_eq!(s.post("/decisions", &json!({"undo": 1})).0, 401);
    drop(s);
    for (body, says) in [
        (
            format!("bob {alice} extra\n"),
            "more than a name and a token",
        ),
        (format!("b/b {alice}\n"), "the name is not"),
        (format!("{alice}\nbob {alice}\n"), "on an earlier line"),
        ("# nothing\n".to_string(), "no token"),
        ("bob short\n".to_string(), "at least 16"),
    ] {
        let f = t.file("bad-tokens", &body);
        let o = simdb(&[&"serve", &t.path(), &"--token-file", &f]);
        assert_eq!(code(&o), 2, "{body}");
        assert!(stderr(&o).contains(says), "{body}: {}", stderr(&o));
    }
}

/// `GET /calibration` (the review page's chart, docs/review.md): `simdb
/// calibrate --json` of the store with the nearest neighbours'
/// similarities in 20 bins, the same answer for the same parameters
/// within a minute; bad parameters are 400s naming them.
#[test]
fn calibration_answers_as_the_cli_does() {
    let t = TempDb::new();
    init(&t);
    let texts = articles(8, 30);
    let s = Server::start(&t.path(), &[]);
    // Each text twice: every document's nearest is its copy, similarity 1.
    let docs: Vec<Value> = texts
        .iter()
        .enumerate()
        .flat_map(|(i, x)| {
            [
                json!({"id": format!("t{i}"), "text": x}),
                json!({"id": format!("t{i}-copy"), "text": x}),
            ]
        })
        .collect();
    let (st, v) = s.post("/documents", &json!(docs));
    assert_eq!(st, 200, "{v}");
    let (st, c) = s.call("GET", "/calibration?sample=100&seed=3", None);
    assert_eq!(st, 200, "{c}");
    let sampled = c["sampled"].as_u64().unwrap();
    assert!((10..=60).contains(&sampled), "{c}");
    let bins = c["nearest_similarity"].as_array().unwrap();
    assert_eq!(bins.len(), 20);
    assert_eq!(bins[19].as_u64(), Some(sampled), "{c}");
    assert_eq!(c["nearest_confirmed"][0].as_u64(), Some(sampled), "{c}");
    assert_eq!(c["threshold"], 0.6);
    let (_, again) = s.call("GET", "/calibration?sample=100&seed=3", None);
    assert_eq!(again["random_pairs"], c["random_pairs"]);
    assert!(again["age_seconds"].is_u64());
    for (path, field) in [
        ("/calibration?sample=0", "sample"),
        ("/calibration?sample=20001", "sample"),
        ("/calibration?k=12", "k"),
        ("/calibration?plot=x", "plot"),
    ] {
        let (st, e) = s.call("GET", path, None);
        assert_eq!(st, 400, "{path}: {e}");
        assert_eq!(e["field"], field, "{path}: {e}");
    }
}

/// The review page (docs/review.md): its files are embedded and served at
/// `/` under a content security policy that allows only this origin's
/// script, style and calls, without the token (they hold no data) while
/// every API call still needs it; its script sets text, never HTML.
#[test]
fn the_page_is_served_with_its_policy_and_the_api_keeps_its_token() {
    let t = TempDb::new();
    init(&t);
    let secret = "0123456789abcdef0123456789abcdef";
    let file = t.file("token", format!("{secret}\n"));
    let s = Server::start(&t.path(), &["--token-file", file.to_str().unwrap()]);
    let agent = Server::agent();
    let get = |path: &str| {
        let mut r = agent.get(&format!("{}{path}", s.base)).call().unwrap();
        let h = |name: &str| {
            r.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let (kind, csp) = (h("content-type"), h("content-security-policy"));
        (
            r.status().as_u16(),
            kind,
            csp,
            r.body_mut().read_to_string().unwrap(),
        )
    };
    let (st, kind, csp, html) = get("/");
    assert_eq!(st, 200);
    assert!(kind.starts_with("text/html"), "{kind}");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    // No inline script or style: every script is a file of the page.
    assert_eq!(
        html.matches("<script").count(),
        html.matches("<script type=\"module\" src=\"/").count()
    );
    assert!(
        !html.contains("style=") && !html.contains("<style"),
        "inline style"
    );
    let (st, kind, _, js) = get("/app.js");
    assert_eq!(st, 200);
    assert!(kind.starts_with("text/javascript"), "{kind}");
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!js.contains(sink), "the page's script uses {sink}");
    }
    let (st, kind, _, _) = get("/app.css");
    assert_eq!((st, kind.starts_with("text/css")), (200, true));
    // The API: still the token.
    assert_eq!(s.call("GET", "/clusters", None).0, 401);
    assert_eq!(s.call("GET", "/health", None).0, 401);
    // Only GET: a POST to the page is not a way past the token.
    assert_eq!(s.call("POST", "/", Some("{}")).0, 401);
}

/// Review 2026-11-c, finding 14: re-checks that a killed service left under
/// way (a representative of a cluster of 3,000 deleted, one step of 1,024
/// committed) were resumed only by the next write; the service now resumes
/// them when it starts, and `/health` says whether any is pending.
#[test]
fn regression_60_a_service_resumes_rechecks_left_under_way() {
    let t = TempDb::new();
    init(&t);
    let lines: String = (0..3000)
        .map(|i| {
            // Near copies (one bit from the first), so that the new
            // representative's re-check has members to read.
            let fp = 0x0123_4567_89ab_cdefu64 ^ if i == 0 { 0 } else { 1 << (i % 64) };
            let fp = format!("{fp:016x}");
            format!("{}\n", json!({"id": format!("c{i:04}"), "fingerprint": fp}))
        })
        .collect();
    let input = t.file("copies.jsonl", lines);
    assert_eq!(code(&simdb(&[&"ingest", &t.path(), &input])), 0);
    {
        let mut db = simdb::Db::options().open(t.path()).unwrap();
        let mut w = db.writer().unwrap();
        assert!(w.delete("c0000").unwrap());
        w.commit().unwrap();
        drop(w);
        assert!(
            db.clusters().unsettled().unwrap(),
            "one step of 1,024 members is done"
        );
    }
    let s = Server::start(&t.path(), &[]);
    let started = Instant::now();
    while s.call("GET", "/health", None).1["rechecks_pending"] != false {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the re-checks were not resumed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (st, v) = s.call("GET", "/documents/c2999", None);
    assert_eq!(st, 200, "{v}");
    drop(s);
    let db = simdb::Db::options().read_only().open(t.path()).unwrap();
    assert!(!db.clusters().unsettled().unwrap());
    assert_eq!(db.len().unwrap(), 2999);
}
