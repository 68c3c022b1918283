//! The review's reads against the real `simdb serve` (issue 42: a cluster
//! of 10,000 members, paged, on a 1M-document store, within 100 ms):
//!
//! 1. a store of `--n` imported documents (the sketched binary form,
//!    random fingerprints and sketches: each alone), then `simdb ingest`
//!    of 10,000 copies of one text (half exact, half with one character
//!    edited: one cluster) and `--pairs` texts with one copy each (as
//!    many clusters of two);
//! 2. `simdb serve`, then `--requests` warm requests of each: the big
//!    cluster's first page of 100 members, the page after member 5,000,
//!    its last page; `GET /clusters` largest first, by id, newest member
//!    first and most distant member first (20 a page);
//!    p50 / p99 / max in ms, and the answer's bytes; then `--requests`
//!    "not a copy" decisions (`POST /decisions`), each taking one member
//!    out of the big cluster, and up to 50 "keep this one" decisions, each
//!    making a member the big cluster's representative; `simdb verify`
//!    of the store after them;
//! 3. a store made with `init --keep-texts` holding pairs of texts of 200
//!    and 5,000 words (one character in a hundred edited) and two
//!    unrelated texts of 20,000 words: `GET /diff` of each pair (the last
//!    runs into the diff's 200 ms deadline).
//!
//! ```text
//! cargo build --release --bin simdb --example review_bench
//! target/release/examples/review_bench [--n 1000000] [--pairs 20000] [--requests 200] [--dir DIR]
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

/// `n` documents of random fingerprints and sketches, imported.
fn import(bin: &Path, db: &Path, dir: &Path, n: usize) {
    use simdb::import::{write_binary_sketched_record, BINARY_SKETCHED_MAGIC};
    let input = dir.join("fps.bin");
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut w = std::io::BufWriter::new(std::fs::File::create(&input).expect("input"));
    w.write_all(BINARY_SKETCHED_MAGIC).expect("write");
    for i in 0..n {
        let mut s = [0u8; simdb::fingerprint::SKETCH_BYTES];
        r.fill(&mut s[..]);
        let fp = simdb::Fingerprint(r.random());
        write_binary_sketched_record(&mut w, &format!("d{i}"), fp, &simdb::Sketch(s))
            .expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    let t = Instant::now();
    common::run_simdb(bin, &[&"import", &db, &input]);
    println!(
        "imported {n} documents in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_file(&input);
}

/// The JSONL of 10,000 copies of one text and `pairs` texts with a copy.
fn texts(dir: &Path, pairs: usize) -> PathBuf {
    let words = common::Words::new();
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let pool: Vec<char> = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
        .chars()
        .collect();
    let path = dir.join("texts.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("texts"));
    let one = words.text(&mut r, 200);
    for i in 0..10_000 {
        let text = match i % 2 {
            0 => one.clone(),
            _ => common::edit_chars(&one, 1, &pool, &mut r),
        };
        writeln!(w, "{}", json!({"id": format!("copy{i}"), "text": text})).expect("write");
    }
    for p in 0..pairs {
        let t = words.text(&mut r, 120);
        writeln!(w, "{}", json!({"id": format!("p{p}"), "text": t})).expect("write");
        let c = common::edit_chars(&t, 1, &pool, &mut r);
        writeln!(w, "{}", json!({"id": format!("p{p}-copy"), "text": c})).expect("write");
    }
    w.flush().expect("flush");
    path
}

fn post(agent: &ureq::Agent, url: &str, body: &Value) -> (Value, f64) {
    let t = Instant::now();
    let mut resp = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string().as_bytes())
        .expect("HTTP request");
    let text = resp.body_mut().read_to_string().expect("body");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(resp.status().as_u16(), 200, "{url}: {text}");
    (serde_json::from_str(&text).expect("JSON"), secs)
}

/// `--requests` "not a copy" decisions on the big cluster's members, one a
/// request: each takes its member out.
fn decide(agent: &ureq::Agent, base: &str, requests: usize) {
    let lat: Vec<f64> = (1..=requests)
        .map(|i| {
            let member = format!("copy{}", 2 * i);
            let body = json!({"not_a_copy": ["copy0", member]});
            let (d, secs) = post(agent, &format!("{base}/decisions"), &body);
            assert_eq!(d["seq"], i as u64, "{d}");
            secs * 1e3
        })
        .collect();
    let (c, _, _) = get(agent, &format!("{base}/cluster?id=copy0&limit=1"));
    let size = &c["size"];
    report(
        "not a copy, one member out  ",
        lat,
        &format!("{requests} requests; the cluster now {size} members"),
    );
}

/// `requests` "keep this one" decisions on the big cluster's members, one
/// a request: each makes its member the representative of the whole
/// cluster (a move of its member key; the members' re-check against it
/// runs after the answer, a bounded step per hold of the writer lock, so
/// each request after the first also waits for the steps before it).
fn keep(agent: &ureq::Agent, base: &str, requests: usize) {
    let t = Instant::now();
    let lat: Vec<f64> = (1..=requests)
        .map(|i| {
            let member = format!("copy{}", 2 * i + 1);
            let (d, secs) = post(
                agent,
                &format!("{base}/decisions"),
                &json!({"keep": member}),
            );
            assert_eq!(d["kind"], "keep", "{d}");
            let (c, _, _) = get(agent, &format!("{base}/cluster?id=copy0&limit=1"));
            assert_eq!(c["representative"]["id"], member, "{c}");
            secs * 1e3
        })
        .collect();
    let all = t.elapsed().as_secs_f64();
    let (c, _, _) = get(agent, &format!("{base}/cluster?id=copy0&limit=1"));
    let size = &c["size"];
    report(
        "keep this one, a new representative",
        lat,
        &format!("{requests} requests in {all:.1}s; the cluster now {size} members"),
    );
}

/// Step 3: `GET /diff` of kept texts, short, long and unrelated.
fn diffs(bin: &Path, dir: &Path, requests: usize) {
    let words = common::Words::new();
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let pool: Vec<char> =
        "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年"
            .chars()
            .collect();
    let db = dir.join("texts-store");
    let _ = std::fs::remove_dir_all(&db);
    common::run_simdb(bin, &[&"init", &db, &"--keep-texts"]);
    let path = dir.join("texts-diff.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("texts"));
    let mut chars = Vec::new();
    for (name, n) in [("short", 200), ("long", 5_000)] {
        let t = words.text(&mut r, n);
        let edits = t.chars().count() / 100;
        let c = common::edit_chars(&t, edits, &pool, &mut r);
        chars.push((name, t.chars().count()));
        writeln!(w, "{}", json!({"id": format!("{name}-a"), "text": t})).expect("write");
        writeln!(w, "{}", json!({"id": format!("{name}-b"), "text": c})).expect("write");
    }
    for side in ["a", "b"] {
        let t = words.text(&mut r, 20_000);
        chars.push(("unrelated", t.chars().count()));
        writeln!(
            w,
            "{}",
            json!({"id": format!("unrelated-{side}"), "text": t})
        )
        .expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    common::run_simdb(bin, &[&"ingest", &db, &path]);
    let (mut child, base) = common::spawn_server(bin, &db, &[], Stdio::null());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    for (name, n) in &chars[..3] {
        let url = format!("{base}/diff?a={name}-a&b={name}-b");
        time(
            &agent,
            &format!("diff, {name} ({n} characters)"),
            &url,
            requests.min(50),
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&db);
    let _ = std::fs::remove_file(&path);
}

fn get(agent: &ureq::Agent, url: &str) -> (Value, usize, f64) {
    let t = Instant::now();
    let mut resp = agent.get(url).call().expect("HTTP request");
    let body = resp.body_mut().read_to_string().expect("body");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(resp.status().as_u16(), 200, "{url}: {body}");
    (serde_json::from_str(&body).expect("JSON"), body.len(), secs)
}

fn time(agent: &ureq::Agent, name: &str, url: &str, requests: usize) {
    let (_, bytes, _) = get(agent, url);
    let lat: Vec<f64> = (0..requests).map(|_| get(agent, url).2 * 1e3).collect();
    report(name, lat, &format!("{requests} requests, {bytes} bytes"));
}

/// Prints `name`'s p50, p99 and max of the latencies `lat` (ms), then
/// `what` in parentheses.
fn report(name: &str, mut lat: Vec<f64>, what: &str) {
    lat.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{name:<34} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  ({what})",
        common::pct(&lat, 0.5),
        common::pct(&lat, 0.99),
        lat[lat.len() - 1]
    );
}

fn main() {
    let n: usize = common::arg("--n", 1_000_000);
    let pairs: usize = common::arg("--pairs", 20_000);
    let requests: usize = common::arg("--requests", 200);
    let dir: PathBuf = common::arg("--dir", std::env::temp_dir().join("simdb-review-bench"));
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("simdb")))
        .filter(|p| p.exists())
        .expect("target/<profile>/simdb: build it first (cargo build --release)");
    std::fs::create_dir_all(&dir).expect("--dir");
    let db = dir.join("store");
    let _ = std::fs::remove_dir_all(&db);
    import(&bin, &db, &dir, n);
    let input = texts(&dir, pairs);
    let t = Instant::now();
    let summary = common::run_simdb(&bin, &[&"ingest", &db, &input]);
    println!(
        "ingested 10,000 copies and {pairs} pairs in {:.1}s: {}",
        t.elapsed().as_secs_f64(),
        summary.lines().last().unwrap_or("")
    );
    let (mut child, base) = common::spawn_server(&bin, &db, &[], Stdio::null());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let (first, _, _) = get(&agent, &format!("{base}/cluster?id=copy0&limit=100"));
    let size = first["size"].as_u64().expect("size");
    println!("the copies' cluster: {size} members");
    // The cursor after member 5,000, and the last page's.
    let (mut after, mut at, mut mid, mut last) = (first["next"].clone(), 100, None, None);
    while let Some(c) = after.as_str().map(str::to_string) {
        if at == 5_000 {
            mid = Some(c.clone());
        }
        last = Some(c.clone());
        let (page, _, _) = get(
            &agent,
            &format!("{base}/cluster?id=copy0&limit=100&after={c}"),
        );
        after = page["next"].clone();
        at += 100;
    }
    let page = |c: Option<String>| match c {
        Some(c) => format!("{base}/cluster?id=copy0&limit=100&after={c}"),
        None => format!("{base}/cluster?id=copy0&limit=100"),
    };
    time(&agent, "cluster, first 100 members", &page(None), requests);
    time(
        &agent,
        "cluster, 100 after member 5,000",
        &page(mid),
        requests,
    );
    time(&agent, "cluster, last page", &page(last), requests);
    time(
        &agent,
        "clusters, largest first (20)",
        &format!("{base}/clusters"),
        requests,
    );
    time(
        &agent,
        "clusters, by id (20)",
        &format!("{base}/clusters?sort=id"),
        requests,
    );
    time(
        &agent,
        "clusters, newest member first (20)",
        &format!("{base}/clusters?sort=newest"),
        requests,
    );
    time(
        &agent,
        "clusters, most distant first (20)",
        &format!("{base}/clusters?sort=distant"),
        requests.min(20),
    );
    decide(&agent, &base, requests);
    keep(&agent, &base, requests.min(50));
    let _ = child.kill();
    let _ = child.wait();
    // The store as the kill left it (a re-check the keeps started may be
    // under way, its state in the `a` entries) verifies clean.
    let t = Instant::now();
    let v = common::run_simdb(&bin, &[&"verify", &db]);
    println!(
        "verify after the decisions: {:.1}s: {}",
        t.elapsed().as_secs_f64(),
        v.lines().last().unwrap_or("")
    );
    let _ = std::fs::remove_dir_all(&db);
    let _ = std::fs::remove_file(&input);
    diffs(&bin, &dir, requests);
}
