//! Load test of `simdb serve` on loopback (issue 13's figures): requests
//! per second and p50/p99 latency per endpoint, measured by the clients.
//!
//! ```text
//! cargo build --release --bin simdb --example load
//! target/release/examples/load target/release/simdb ../shared/corpora/zh_news_xwlb.jsonl \
//!     [--clients 8] [--seconds 10] [--max-requests 200000] [--crash] [--reopen] [--stalled 8] [--hostile 4]
//! ```
//!
//! Phases, each against the real server in a temp directory:
//!
//! 1. **ingest**: `simdb init` + `simdb ingest` of the corpus (whole
//!    process), the baseline of write throughput.
//! 2. **insert**: a fresh store served; the same documents sent to
//!    `POST /documents` in batches of 100 by 2 clients. With `--reopen`,
//!    the server is then stopped and started again, so the queries below
//!    read table files (as a store that has been running a while does)
//!    rather than the memtables the inserts filled.
//! 3. **text**: `--clients` clients send text queries of the first 400
//!    characters of random documents; **fingerprint**: the same with the
//!    documents' fingerprints. Then both with one client (`text, 1` and
//!    `fp, 1`): the latency of a request that waits for no other (with 8
//!    clients on 2 cores a request mostly waits for the 7 others: a
//!    closed loop's latency is clients / throughput).
//! 4. **mixed**: `--clients` clients, each request drawn at random: 50%
//!    text query, 20% fingerprint query, 10% get, 10% insert of an edited
//!    copy under a new id (batch of 1), 10% insert-if-new of one.
//!
//! 5c. **hostile**: the mix again while `--hostile` (default 4) clients
//!    loop over the long reads (review-2026-11-c, finding 3): a
//!    `/calibration?sample=20000` of a new seed, a `/clusters?sort=distant`
//!    page, a `/diff` of two stored documents (the store keeps texts) and a
//!    query of a 400 KB page of unclosed tags. Prints the p50 of each
//!    polite request kind against the `mixed` phase (within 2x is the
//!    bound: long reads take turns, see docs/service.md "Long reads") and
//!    what the hostile clients were answered.
//!
//! 5. **idle**: the mix again while an attacker without a token holds
//!    `--idle` half-open connections (a request head never finished),
//!    opening a new one for each the server closes (after its header
//!    timeout) or refuses (503 beyond its connection cap). Reports the
//!    mix's latency, the server's open connections and descriptors, and
//!    what became of the attacker's connections.
//!
//! 5b. **stalled**: the mix again while `--stalled` (default 8)
//!    connections start chunked `POST /documents` bodies and send nothing
//!    more (reopened when the server answers 408 at its body timeout).
//!    Prints the p50 of each request kind against the `mixed` phase of the
//!    same run: a body holds the bytes it sent, so the polite clients'
//!    p50 should stay within 2x (review 2026-11-b, finding 7).
//!
//! Each query phase ends after `--seconds` or `--max-requests`. Then every
//! acknowledged document is read back (`GET`), the server is stopped
//! (SIGTERM) and `simdb verify` must be clean.
//!
//! 6. **stop**: a fresh server under the mix, with `--stragglers`
//!    connections that sent half a request head and 10 that sent half a
//!    body, gets SIGTERM: it must exit 0 within its grace period (10 s)
//!    plus a little; after a restart every acknowledged document is there
//!    and verify is clean.
//!
//! With `--replicas`, text queries against one read-only replica (`serve
//! --read-only`) beside the writer, then against two with the clients
//! split between them: both rates and their ratio.
//!
//! With `--crash`, a last mixed phase, with the `--stalled` clients holding
//! their chunked bodies, is ended by kill -9 of the server at a random
//! moment; the server is restarted and every acknowledged document must be
//! there, and verify clean.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// A chunked `POST /documents` that sends its first chunk and stops: what
/// the stalled clients hold (phase 5b, and through `--crash`).
const STALLED_BODY: &[u8] = b"POST /documents HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[{\"id\r\n";

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

struct Opts {
    bin: String,
    corpus: String,
    clients: usize,
    seconds: f64,
    max_requests: u64,
    crash: bool,
    reopen: bool,
    idle: usize,
    stragglers: usize,
    stalled: usize,
    hostile: usize,
    replicas: bool,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!(
            "usage: load SIMDB_BINARY CORPUS.jsonl [--clients N] [--seconds S] [--max-requests N] [--crash] [--reopen] [--replicas] [--idle N] [--stragglers N] [--stalled N] [--hostile N]"
        );
        std::process::exit(2)
    };
    if args.len() < 2 {
        usage();
    }
    let mut o = Opts {
        bin: args[0].clone(),
        corpus: args[1].clone(),
        clients: 8,
        seconds: 10.0,
        max_requests: 200_000,
        crash: false,
        reopen: false,
        idle: 1000,
        stragglers: 100,
        stalled: 8,
        hostile: 4,
        replicas: false,
    };
    let mut i = 2;
    while i < args.len() {
        let val = |i: usize| args.get(i + 1).cloned().unwrap_or_else(|| usage());
        match args[i].as_str() {
            "--clients" => o.clients = val(i).parse().unwrap_or_else(|_| usage()),
            "--seconds" => o.seconds = val(i).parse().unwrap_or_else(|_| usage()),
            "--max-requests" => o.max_requests = val(i).parse().unwrap_or_else(|_| usage()),
            "--idle" => o.idle = val(i).parse().unwrap_or_else(|_| usage()),
            "--stragglers" => o.stragglers = val(i).parse().unwrap_or_else(|_| usage()),
            "--stalled" => o.stalled = val(i).parse().unwrap_or_else(|_| usage()),
            "--hostile" => o.hostile = val(i).parse().unwrap_or_else(|_| usage()),
            "--crash" => {
                o.crash = true;
                i += 1;
                continue;
            }
            "--reopen" => {
                o.reopen = true;
                i += 1;
                continue;
            }
            "--replicas" => {
                o.replicas = true;
                i += 1;
                continue;
            }
            _ => usage(),
        }
        i += 2;
    }
    o
}

/// A running server.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(bin: &str, db: &Path) -> Server {
        Server::start_with(bin, db, &[])
    }

    fn start_with(bin: &str, db: &Path, args: &[&str]) -> Server {
        let (child, base) = common::spawn_server(Path::new(bin), db, args, Stdio::inherit());
        Server { child, base }
    }

    fn stop(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let st = self.child.wait().expect("wait for the server");
        assert!(st.success(), "the server exited with {st}");
    }

    /// SIGTERM; the time until the process ended, and whether it exited 0.
    fn stop_timed(mut self) -> (Duration, bool) {
        let t = Instant::now();
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let st = self.child.wait().expect("wait for the server");
        (t.elapsed(), st.success())
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill9(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// POSTs `body`; the JSON answer, or None if the server is gone.
fn post(agent: &ureq::Agent, url: &str, body: &str) -> Option<Value> {
    let mut r = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body)
        .ok()?;
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().ok()?;
    assert_eq!(status, 200, "{url}: {text}");
    Some(serde_json::from_str(&text).expect("a JSON answer"))
}

fn get_status(agent: &ureq::Agent, url: &str) -> Option<u16> {
    let mut r = agent.get(url).call().ok()?;
    let _ = r.body_mut().read_to_string();
    Some(r.status().as_u16())
}

/// Latencies per endpoint, in µs.
#[derive(Default)]
struct Lat(std::collections::BTreeMap<&'static str, Vec<u64>>);

impl Lat {
    fn add(&mut self, name: &'static str, t: Duration) {
        self.0.entry(name).or_default().push(t.as_micros() as u64);
    }
    fn merge(&mut self, o: Lat) {
        for (k, mut v) in o.0 {
            self.0.entry(k).or_default().append(&mut v);
        }
    }
    /// The median of each request kind, in ms.
    fn p50s(&mut self) -> std::collections::BTreeMap<&'static str, f64> {
        self.0
            .iter_mut()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| {
                v.sort_unstable();
                (*k, v[v.len() / 2] as f64 / 1e3)
            })
            .collect()
    }

    fn print(&mut self, phase: &str, elapsed: f64) {
        for (name, v) in self.0.iter_mut() {
            v.sort_unstable();
            let q = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)] as f64 / 1e3;
            println!(
                "| {phase:<11} | {name:<20} | {:>8} | {:>8.0} | {:>7.2} | {:>7.2} |",
                v.len(),
                v.len() as f64 / elapsed,
                q(0.5),
                q(0.99)
            );
        }
    }
}

/// What every phase shares.
struct World {
    docs: Vec<(String, String)>,
    /// Query texts: the first 400 characters of documents.
    queries: Vec<String>,
    /// Fingerprints of the stored documents.
    fps: Mutex<Vec<String>>,
    /// Ids acknowledged by the server.
    acked: Mutex<Vec<String>>,
    next_id: AtomicU64,
}

#[derive(Clone, Copy, PartialEq)]
enum Mix {
    Text,
    Fingerprint,
    Mixed,
}

/// `clients` clients send `mix` until `seconds` pass, `max` requests are
/// sent, `stop` is set or the server goes away. Returns the latencies and
/// the elapsed seconds.
/// With `--replicas`: text queries against one read-only replica
/// (`serve --read-only`) beside the writer, then against two, the clients
/// split between them; prints both rates and their ratio.
fn replica_phase(o: &Opts, w: &Arc<World>, db: &Path) {
    let one = Server::start_with(&o.bin, db, &["--read-only"]);
    let stop = || Arc::new(AtomicBool::new(false));
    let (mut lat, secs) = run_phase(
        w,
        &one.base,
        Mix::Text,
        o.clients,
        o.seconds,
        o.max_requests,
        stop(),
    );
    let rate1 = lat.0.values().map(Vec::len).sum::<usize>() as f64 / secs;
    lat.print("1 replica", secs);
    let two = Server::start_with(&o.bin, db, &["--read-only"]);
    let half = o.clients.div_ceil(2);
    let (mut total, mut secs2) = (Lat::default(), 0f64);
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            run_phase(
                w,
                &one.base,
                Mix::Text,
                half,
                o.seconds,
                o.max_requests / 2,
                stop(),
            )
        });
        let b = s.spawn(|| {
            run_phase(
                w,
                &two.base,
                Mix::Text,
                o.clients - half,
                o.seconds,
                o.max_requests / 2,
                stop(),
            )
        });
        for h in [a, b] {
            let (l, s) = h.join().expect("a replica's clients");
            total.merge(l);
            secs2 = secs2.max(s);
        }
    });
    let rate2 = total.0.values().map(Vec::len).sum::<usize>() as f64 / secs2;
    total.print("2 replicas", secs2);
    println!(
        "replicas: text queries {rate1:.0} req/s with one, {rate2:.0} req/s with two ({:.2}x; {} clients, {} cores)",
        rate2 / rate1,
        o.clients,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    one.stop();
    two.stop();
}

fn run_phase(
    w: &Arc<World>,
    base: &str,
    mix: Mix,
    clients: usize,
    seconds: f64,
    max: u64,
    stop: Arc<AtomicBool>,
) -> (Lat, f64) {
    let sent = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (w, base, sent, stop) = (w.clone(), base.to_string(), sent.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent = agent();
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64 + 100);
                let mut lat = Lat::default();
                let query_url = format!("{base}/query");
                while start.elapsed().as_secs_f64() < seconds
                    && sent.fetch_add(1, Ordering::Relaxed) < max
                    && !stop.load(Ordering::Relaxed)
                {
                    let roll: f64 = match mix {
                        Mix::Text => 0.0,
                        Mix::Fingerprint => 0.55,
                        Mix::Mixed => rng.random(),
                    };
                    let t = Instant::now();
                    let ok = if roll < 0.5 {
                        let q = w.queries.choose(&mut rng).expect("queries");
                        let body = json!({ "text": q }).to_string();
                        post(&agent, &query_url, &body).map(|_| "POST /query text")
                    } else if roll < 0.7 {
                        let fp = {
                            let fps = w.fps.lock().expect("lock");
                            fps.choose(&mut rng).cloned().expect("fingerprints")
                        };
                        let body = json!({ "fingerprint": fp }).to_string();
                        post(&agent, &query_url, &body).map(|_| "POST /query fp")
                    } else if roll < 0.8 {
                        let id = {
                            let a = w.acked.lock().expect("lock");
                            a.choose(&mut rng).cloned().expect("acked ids")
                        };
                        let url = format!("{base}/documents/{}", encode(&id));
                        get_status(&agent, &url).map(|s| {
                            assert_eq!(s, 200, "GET {id}");
                            "GET /documents/{id}"
                        })
                    } else {
                        let check = roll >= 0.9;
                        let n = w.next_id.fetch_add(1, Ordering::Relaxed);
                        let (_, text) = w.docs.choose(&mut rng).expect("docs");
                        // An edited copy: a few characters replaced.
                        let mut chars: Vec<char> = text.chars().collect();
                        for _ in 0..(chars.len() / 50).max(1) {
                            let i = rng.random_range(0..chars.len());
                            chars[i] = '的';
                        }
                        let id = format!("load-{n}");
                        let body =
                            json!([{"id": id, "text": chars.into_iter().collect::<String>()}])
                                .to_string();
                        let path = if check {
                            "/documents/check"
                        } else {
                            "/documents"
                        };
                        post(&agent, &format!("{base}{path}"), &body).map(|v| {
                            if v["results"][0]["outcome"] == "inserted" {
                                w.acked.lock().expect("lock").push(id);
                            }
                            if check {
                                "POST /documents/check"
                            } else {
                                "POST /documents"
                            }
                        })
                    };
                    match ok {
                        Some(name) => lat.add(name, t.elapsed()),
                        None => break, // the server is gone
                    }
                }
                lat
            })
        })
        .collect();
    let mut lat = Lat::default();
    for t in threads {
        lat.merge(t.join().expect("a client"));
    }
    (lat, start.elapsed().as_secs_f64())
}

/// The mix for a phase beside an attack (5b, 5c), printed as `phase`;
/// each request kind's p50 against the mixed phase's (`mixed_p50`).
fn mix_beside(
    o: &Opts,
    w: &Arc<World>,
    base: &str,
    phase: &str,
    mixed_p50: &std::collections::BTreeMap<&'static str, f64>,
) -> String {
    let (mut lat, secs) = run_phase(
        w,
        base,
        Mix::Mixed,
        o.clients,
        o.seconds,
        o.max_requests,
        Arc::new(AtomicBool::new(false)),
    );
    lat.print(phase, secs);
    let ratios: Vec<String> = lat
        .p50s()
        .into_iter()
        .filter_map(|(k, p)| mixed_p50.get(k).map(|m| format!("{k} {:.2}x", p / m)))
        .collect();
    ratios.join(", ")
}

/// Phase 5c: the mix while `--hostile` clients loop over the long reads;
/// prints the polite kinds' p50 against the mixed phase's, and the
/// hostile clients' answers by status.
fn hostile_phase(
    o: &Opts,
    w: &Arc<World>,
    base: &str,
    mixed_p50: &std::collections::BTreeMap<&'static str, f64>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
    let readers: Vec<_> = (0..o.hostile)
        .map(|c| {
            let (w, base, stop, answered) =
                (w.clone(), base.to_string(), stop.clone(), answered.clone());
            std::thread::spawn(move || {
                let agent = agent();
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64 + 900);
                let page = json!({ "html": "<a".repeat(200_000) }).to_string();
                for round in 0u64.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let (what, status) = match (round + c as u64) % 4 {
                        0 => {
                            let seed = c as u64 * 1_000_000 + round;
                            let url = format!("{base}/calibration?sample=20000&k=11&seed={seed}");
                            ("calibration", get_status(&agent, &url))
                        }
                        1 => {
                            let url = format!("{base}/clusters?sort=distant&limit=100");
                            ("distant page", get_status(&agent, &url))
                        }
                        2 => {
                            let (a, b) = {
                                let ids = w.acked.lock().expect("lock");
                                let mut pick = || ids.choose(&mut rng).cloned().expect("ids");
                                (pick(), pick())
                            };
                            let url = format!("{base}/diff?a={}&b={}", encode(&a), encode(&b));
                            ("diff", get_status(&agent, &url))
                        }
                        _ => {
                            let r = agent
                                .post(&format!("{base}/query"))
                                .header("Content-Type", "application/json")
                                .send(&page);
                            let status = r.ok().map(|mut r| {
                                let _ = r.body_mut().read_to_string();
                                r.status().as_u16()
                            });
                            ("page of unclosed tags", status)
                        }
                    };
                    let Some(status) = status else { break };
                    *answered
                        .lock()
                        .expect("lock")
                        .entry((what, status))
                        .or_insert(0u64) += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let ratios = mix_beside(o, w, base, "hostile", mixed_p50);
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("a hostile client");
    }
    let answers: Vec<String> = answered
        .lock()
        .expect("lock")
        .iter()
        .map(|((what, status), n)| format!("{what} {status}: {n}"))
        .collect();
    println!();
    println!(
        "hostile: {} clients looping over long reads; p50 against the mixed phase: {ratios}; they were answered: {}",
        o.hostile,
        answers.join(", ")
    );
}

/// What became of an attacker's half-open connections.
#[derive(Default, Debug)]
struct Attack {
    opened: u64,
    /// Answered 503 (the connection cap) and closed.
    refused: u64,
    /// Closed by the server without an answer (the header timeout).
    closed: u64,
    /// Connections that could not be opened.
    failed: u64,
}

/// Holds `n` half-open connections to `addr` until `stop`: each sends
/// `head` and nothing more; one the server closes is replaced.
fn hold_half_open(
    addr: String,
    n: usize,
    head: &'static [u8],
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Attack> {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let mut a = Attack::default();
        let mut socks: Vec<std::net::TcpStream> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            while socks.len() < n && !stop.load(Ordering::Relaxed) {
                match std::net::TcpStream::connect(&addr) {
                    Ok(mut c) => {
                        let _ = c.write_all(head);
                        let _ = c.set_nonblocking(true);
                        a.opened += 1;
                        socks.push(c);
                    }
                    Err(_) => {
                        a.failed += 1;
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            let mut buf = [0u8; 256];
            socks.retain_mut(|c| match c.read(&mut buf) {
                Ok(0) => {
                    a.closed += 1;
                    false
                }
                Ok(k) => {
                    if buf[..k].starts_with(b"HTTP/1.1 503") {
                        a.refused += 1;
                    } else {
                        a.closed += 1;
                    }
                    false
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
                Err(_) => {
                    a.closed += 1;
                    false
                }
            });
        }
        a
    })
}

/// The server's open connections (its `/metrics`) and descriptors.
fn server_load(base: &str, pid: u32) -> (String, usize) {
    let conns = agent()
        .get(&format!("{base}/metrics"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("simdb_http_connections ")
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "?".into());
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (conns, fds)
}

/// Percent-encodes an id for a URL path.
fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn simdb(bin: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let mut c = Command::new(bin);
    for a in args {
        c.arg(a.as_ref());
    }
    let o = c.output().unwrap_or_else(|e| panic!("{bin}: {e}"));
    assert!(
        o.status.success(),
        "simdb failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every acknowledged id answers 200.
fn check_acked(w: &World, base: &str) -> usize {
    let agent = agent();
    let acked = w.acked.lock().expect("lock").clone();
    for id in &acked {
        let url = format!("{base}/documents/{}", encode(id));
        assert_eq!(
            get_status(&agent, &url),
            Some(200),
            "acknowledged {id} is missing"
        );
    }
    acked.len()
}

fn main() {
    let o = opts();
    let docs = common::read_corpus(&o.corpus);
    assert!(!docs.is_empty(), "{}: no documents", o.corpus);
    let dir = tempfile::tempdir().expect("a temp dir");
    let queries: Vec<String> = docs
        .iter()
        .filter(|(_, t)| t.chars().count() >= 400)
        .map(|(_, t)| t.chars().take(400).collect())
        .collect();
    println!(
        "corpus {} ({} documents; {} query texts of 400 characters), {} clients, {} s per phase, {} threads on the machine",
        o.corpus,
        docs.len(),
        queries.len(),
        o.clients,
        o.seconds,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // 1. The baseline: simdb ingest of the same documents.
    let ingest_db = dir.path().join("ingest.db");
    simdb(&o.bin, &[&"init", &ingest_db]);
    let t = Instant::now();
    simdb(&o.bin, &[&"ingest", &ingest_db, &o.corpus]);
    let ingest_secs = t.elapsed().as_secs_f64();
    let ingest_rate = docs.len() as f64 / ingest_secs;
    std::fs::remove_dir_all(&ingest_db).expect("remove the baseline store");

    // 2. Inserts over HTTP, batches of 100, two clients.
    let db: PathBuf = dir.path().join("serve.db");
    // Texts kept: the hostile clients' diffs (phase 5c) read them.
    simdb(&o.bin, &[&"init", &db, &"--keep-texts"]);
    let mut server = Server::start(&o.bin, &db);
    let w = Arc::new(World {
        docs,
        queries,
        fps: Mutex::new(Vec::new()),
        acked: Mutex::new(Vec::new()),
        next_id: AtomicU64::new(0),
    });
    let t = Instant::now();
    let batches: Vec<&[(String, String)]> = w.docs.chunks(100).collect();
    let next = AtomicU64::new(0);
    let mut insert_lat = Lat::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let agent = agent();
                    let mut lat = Lat::default();
                    let url = format!("{}/documents", server.base);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(batch) = batches.get(i) else { break };
                        let body = json!(batch
                            .iter()
                            .map(|(id, text)| json!({"id": id, "text": text}))
                            .collect::<Vec<_>>())
                        .to_string();
                        let t = Instant::now();
                        let v = post(&agent, &url, &body).expect("the server answers");
                        lat.add("POST /documents x100", t.elapsed());
                        let mut fps = w.fps.lock().expect("lock");
                        let mut acked = w.acked.lock().expect("lock");
                        for r in v["results"].as_array().expect("results") {
                            if let Some(fp) = r["fingerprint"].as_str() {
                                fps.push(fp.to_string());
                                acked.push(r["id"].as_str().expect("id").to_string());
                            }
                        }
                    }
                    lat
                })
            })
            .collect();
        for h in handles {
            insert_lat.merge(h.join().expect("an insert client"));
        }
    });
    let insert_secs = t.elapsed().as_secs_f64();
    let insert_rate = w.docs.len() as f64 / insert_secs;
    println!();
    println!(
        "writes: simdb ingest {:.0} docs/s ({:.1} s, whole process); POST /documents in batches of 100 from 2 clients {:.0} docs/s ({:.1} s): {:.0}% of ingest",
        ingest_rate,
        ingest_secs,
        insert_rate,
        insert_secs,
        100.0 * insert_rate / ingest_rate
    );
    println!();
    println!("| phase       | request              | count    | req/s    | p50 ms  | p99 ms  |");
    println!("|-------------|----------------------|----------|----------|---------|---------|");
    insert_lat.print("insert", insert_secs);
    if o.reopen {
        server.stop();
        server = Server::start(&o.bin, &db);
    }

    // 3. and 4. Queries, then the mix.
    let mut mixed_p50 = std::collections::BTreeMap::new();
    for (phase, mix, clients) in [
        ("text", Mix::Text, o.clients),
        ("fingerprint", Mix::Fingerprint, o.clients),
        ("text, 1", Mix::Text, 1),
        ("fp, 1", Mix::Fingerprint, 1),
        ("mixed", Mix::Mixed, o.clients),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let (mut lat, secs) = run_phase(
            &w,
            &server.base,
            mix,
            clients,
            o.seconds,
            o.max_requests,
            stop,
        );
        lat.print(phase, secs);
        if phase == "mixed" {
            mixed_p50 = lat.p50s();
        }
    }
    if o.replicas {
        replica_phase(&o, &w, &db);
    }
    // 5b. The mix while clients hold stalled chunked bodies.
    let mut stalled_report = String::new();
    if o.stalled > 0 {
        let stop = Arc::new(AtomicBool::new(false));
        let addr = server.base.trim_start_matches("http://").to_string();
        let attacker = hold_half_open(addr, o.stalled, STALLED_BODY, stop.clone());
        std::thread::sleep(Duration::from_millis(500));
        let ratios = mix_beside(&o, &w, &server.base, "stalled", &mixed_p50);
        stop.store(true, Ordering::Relaxed);
        let a = attacker.join().expect("the stalled clients");
        stalled_report = format!(
            "stalled: {} connections held chunked bodies that never finished ({} opened, {} closed by the server); p50 against the mixed phase: {}",
            o.stalled,
            a.opened,
            a.closed,
            ratios
        );
    }
    if !stalled_report.is_empty() {
        println!();
        println!("{stalled_report}");
    }
    // 5c. The mix while hostile clients loop over the long reads.
    if o.hostile > 0 {
        hostile_phase(&o, &w, &server.base, &mixed_p50);
    }
    // 5. The mix while an attacker holds half-open connections.
    if o.idle > 0 {
        let stop = Arc::new(AtomicBool::new(false));
        let addr = server.base.trim_start_matches("http://").to_string();
        let attacker = hold_half_open(addr, o.idle, b"GET /health HTTP/1.1\r\n", stop.clone());
        std::thread::sleep(Duration::from_secs(1));
        let (conns, fds) = server_load(&server.base, server.pid());
        let (mut lat, secs) = run_phase(
            &w,
            &server.base,
            Mix::Mixed,
            o.clients,
            o.seconds.max(12.0),
            o.max_requests,
            Arc::new(AtomicBool::new(false)),
        );
        stop.store(true, Ordering::Relaxed);
        let a = attacker.join().expect("the attacker");
        lat.print("idle", secs);
        println!();
        println!(
            "idle: {} half-open connections held during the mix: the server had {conns} connections and {fds} descriptors open; of {} opened, {} were closed by the header timeout and {} answered 503 at the cap ({} could not connect)",
            o.idle, a.opened, a.closed, a.refused, a.failed
        );
    }
    let n = check_acked(&w, &server.base);
    server.stop();
    simdb(&o.bin, &[&"verify", &db]);
    println!();
    println!(
        "after SIGTERM: all {n} acknowledged documents were read back before it; verify clean"
    );

    // 6. SIGTERM with stragglers.
    if o.stragglers > 0 {
        let server = Server::start(&o.bin, &db);
        let addr = server.base.trim_start_matches("http://").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let heads = hold_half_open(
            addr.clone(),
            o.stragglers,
            b"POST /documents HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n",
            stop.clone(),
        );
        let bodies = hold_half_open(
            addr,
            10,
            b"POST /documents HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[{\"id\"",
            stop.clone(),
        );
        let (w2, base, clients) = (w.clone(), server.base.clone(), o.clients);
        let load = std::thread::spawn(move || {
            run_phase(
                &w2,
                &base,
                Mix::Mixed,
                clients,
                f64::INFINITY,
                u64::MAX,
                Arc::new(AtomicBool::new(false)),
            )
        });
        std::thread::sleep(Duration::from_secs(2));
        let (took, ok) = server.stop_timed();
        let (lat, _) = load.join().expect("the stop phase");
        stop.store(true, Ordering::Relaxed);
        let (h, b) = (
            heads.join().expect("stragglers"),
            bodies.join().expect("stragglers"),
        );
        let sent: usize = lat.0.values().map(Vec::len).sum();
        assert!(ok, "the server did not exit 0 after SIGTERM");
        let server = Server::start(&o.bin, &db);
        let n = check_acked(&w, &server.base);
        server.stop();
        simdb(&o.bin, &[&"verify", &db]);
        println!(
            "stop: SIGTERM under the mix ({sent} requests answered) with {} half-sent heads and {} half-sent bodies held: exit 0 after {:.2} s; after restart all {n} acknowledged documents are there; verify clean",
            h.opened, b.opened, took.as_secs_f64()
        );
    }

    if o.crash {
        let server = Server::start(&o.bin, &db);
        let stop = Arc::new(AtomicBool::new(false));
        // The stalled clients of phase 5b hold their bodies through the
        // crash too.
        let stalled = (o.stalled > 0).then(|| {
            hold_half_open(
                server.base.trim_start_matches("http://").to_string(),
                o.stalled,
                STALLED_BODY,
                stop.clone(),
            )
        });
        let kill_after = rand::rng().random_range(0.5..o.seconds.max(1.0));
        let w2 = w.clone();
        let base = server.base.clone();
        let stop2 = stop.clone();
        let load = std::thread::spawn(move || {
            run_phase(
                &w2,
                &base,
                Mix::Mixed,
                o.clients,
                f64::INFINITY,
                u64::MAX,
                stop2,
            )
        });
        std::thread::sleep(Duration::from_secs_f64(kill_after));
        server.kill9();
        let (lat, _) = load.join().expect("the crash phase");
        stop.store(true, Ordering::Relaxed);
        let held = stalled.map_or(0, |a| a.join().expect("the stalled clients").opened);
        let sent: usize = lat.0.values().map(Vec::len).sum();
        let server = Server::start(&o.bin, &db);
        let n = check_acked(&w, &server.base);
        server.stop();
        simdb(&o.bin, &[&"verify", &db]);
        println!(
            "crash: kill -9 after {kill_after:.1} s of mixed load ({sent} requests answered, {held} stalled chunked bodies held); after restart all {n} acknowledged documents are there; verify clean"
        );
    }
}
