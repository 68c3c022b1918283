//! The service under the requests of the 2026-11 review (findings 1 and
//! 4), against the real `simdb serve`:
//!
//! 1. two requests of 3,000 copies of one document each (fingerprints, as
//!    the review sent; then texts): status, time, answer bytes;
//! 2. one request of 200 queries for that fingerprint (6,000 copies);
//! 3. on a store of 2M imported fingerprints, a 10,000-document batch at
//!    `k=11` (548 buckets per document) while one-document writes are sent
//!    every 20 ms from another client: their latencies, and the batch's;
//! 4. the server's own peak RSS (`VmHWM`) after each part.
//!
//! ```text
//! cargo build --release --bin simdb --example serve_copies
//! target/release/examples/serve_copies [--simdb target/release/simdb] [--dir DIR] [--store-docs 2000000]
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(bin: &Path, db: &Path) -> Server {
        let (child, base) = common::spawn_server(bin, db, &["--threads", "2"], Stdio::null());
        Server { child, base }
    }

    /// (status, body bytes, seconds).
    fn post(&self, path: &str, body: &Value) -> (u16, Vec<u8>, f64) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let t = Instant::now();
        let mut resp = agent
            .post(&format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes())
            .expect("HTTP request");
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(1 << 31)
            .read_to_vec()
            .expect("body");
        (status, bytes, t.elapsed().as_secs_f64())
    }

    /// Peak and current RSS of the server, MiB.
    fn rss(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status");
        let kb = |key: &str| -> f64 {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (kb("VmHWM"), kb("VmRSS"))
    }

    fn stop(mut self) {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

fn main() {
    let mut bin = PathBuf::from("target/release/simdb");
    let mut dir: Option<PathBuf> = None;
    let mut store_docs = 2_000_000usize;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--simdb" => bin = PathBuf::from(v()),
            "--dir" => dir = Some(PathBuf::from(v())),
            "--store-docs" => store_docs = v().replace('_', "").parse().expect("--store-docs"),
            other => panic!("unknown argument {other}"),
        }
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("dir");

    // 1 and 2: copies, then queries for them.
    let db = dir.join("copies.db");
    let _ = std::fs::remove_dir_all(&db);
    common::run_simdb(&bin, &[&"init", &db]);
    let s = Server::start(&bin, &db);
    let text: String = {
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let words: Vec<&str> = simdb::fingerprint::vocabulary()
            .filter(|w| w.chars().count() == 2)
            .take(3000)
            .collect();
        (0..300)
            .map(|_| words[r.random_range(0..words.len())])
            .collect()
    };
    for (kind, doc) in [
        ("fingerprint", json!({"fingerprint": "0123456789abcdef"})),
        ("text", json!({"text": text})),
    ] {
        for round in 0..2 {
            let batch: Vec<Value> = (0..3000)
                .map(|i| {
                    let mut d = doc.clone();
                    d["id"] = json!(format!("{kind}-{round}-{i:04}"));
                    d
                })
                .collect();
            let (st, body, secs) = s.post("/documents", &Value::Array(batch));
            let v: Value = serde_json::from_slice(&body).expect("JSON answer");
            let last = &v["results"][2999];
            println!(
                "POST /documents, 3,000 copies ({kind}, {} stored before): HTTP {st} in {secs:.2} s, answer {:.2} MB; last copy lists {} of {} duplicates{}; server peak RSS {:.0} MiB",
                round * 3000,
                body.len() as f64 / 1e6,
                last["duplicates"].as_array().map_or(0, Vec::len),
                last["duplicate_count"],
                if last["duplicate_count_exact"] == json!(true) { "" } else { "+" },
                s.rss().0
            );
        }
    }
    let queries = json!({"queries": vec![json!({"fingerprint": "0123456789abcdef"}); 200]});
    let (st, body, secs) = s.post("/query", &queries);
    println!(
        "POST /query, 200 queries for a fingerprint held by 6,000 documents: HTTP {st} in {secs:.3} s, answer {:.3} MB; server peak RSS {:.0} MiB",
        body.len() as f64 / 1e6,
        s.rss().0
    );
    let (st, body, _) = s.post(
        "/query",
        &json!({"queries": vec![json!({"fingerprint": "0123456789abcdef", "limit": 1000}); 200]}),
    );
    println!(
        "POST /query, 200 queries with limit 1,000 (over --max-hits): HTTP {st}: {}",
        String::from_utf8_lossy(&body)
    );
    s.stop();

    // 3: a one-document write while a large batch is written.
    let db = dir.join("big.db");
    let input = dir.join("fps.jsonl");
    let _ = std::fs::remove_dir_all(&db);
    {
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut w = std::io::BufWriter::new(std::fs::File::create(&input).expect("input"));
        for i in 0..store_docs {
            writeln!(
                w,
                "{{\"id\":\"d{i}\",\"fingerprint\":\"{:016x}\"}}",
                r.random::<u64>()
            )
            .expect("write");
        }
    }
    common::run_simdb(&bin, &[&"import", &db, &input]);
    let _ = std::fs::remove_file(&input);
    let s = Arc::new(Server::start(&bin, &db));
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let big = Value::Array(
        (0..10_000)
            .map(|i| json!({"id": format!("k11-{i}"), "fingerprint": format!("{:016x}", r.random::<u64>())}))
            .collect(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (s, done) = (s.clone(), done.clone());
        std::thread::spawn(move || {
            let (st, _, secs) = s.post("/documents?k=11", &big);
            done.store(true, Ordering::SeqCst);
            (st, secs)
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let mut lat = Vec::new();
    let mut n = 0;
    while !done.load(Ordering::SeqCst) {
        let (st, _, secs) = s.post(
            "/documents",
            &json!({"id": format!("small-{n}"), "fingerprint": format!("{:016x}", r.random::<u64>())}),
        );
        assert_eq!(st, 200);
        lat.push(secs * 1e3);
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let (st, secs) = writer.join().expect("writer");
    lat.sort_by(|a, b| a.total_cmp(b));
    println!(
        "POST /documents?k=11 of 10,000 documents on a {}-document store: HTTP {st} in {secs:.2} s; meanwhile {} one-document writes: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; server peak RSS {:.0} MiB",
        store_docs,
        lat.len(),
        common::pct(&lat, 0.5),
        common::pct(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0),
        s.rss().0
    );
    if let Ok(s) = Arc::try_unwrap(s) {
        s.stop();
    }
}
