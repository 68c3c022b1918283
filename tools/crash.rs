//! Crash check: runs `simdb ingest --acks` into a fresh store, kills it with
//! SIGKILL at a random moment, reopens the store, verifies it, checks that
//! every acknowledged document is there, re-runs the same ingest and checks
//! that the store converges to the one an uninterrupted run gives: the same
//! ids with the same fingerprints and content, and a clean verify.
//!
//! ```text
//! cargo run --release --example crash -- [--runs 10] [--seed 1] [--docs 3000] [--dir DIR]
//! ```
//!
//! "Acknowledged": `simdb ingest --acks` prints `{"acknowledged": N}` after
//! each committed batch; the first N documents of the input are then in the
//! store. Odd runs use `--sync` (each batch fsynced before its ack). A
//! SIGKILL loses no acknowledged document either way: the write-ahead log is
//! written before the ack. The input repeats some ids with new text (updates)
//! and copies some texts under new ids (shared fingerprints).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simdb::Db;

/// id -> (fingerprint, content hash). The sequence number is left out: it
/// is internal numbering among documents sharing a fingerprint, and a re-run
/// that moves an updated id away and back may give it another free number.
type Records = BTreeMap<String, (u64, u64)>;

fn records(path: &Path) -> Records {
    let db = Db::options().read_only().open(path).expect("open");
    let mut m = Records::new();
    db.admin()
        .for_each(|id, r| {
            m.insert(id.to_string(), (r.fingerprint.0, r.content_hash));
            Ok(())
        })
        .expect("read records");
    m
}

fn simdb(bin: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) {
    let mut c = Command::new(bin);
    for a in args {
        c.arg(a);
    }
    let o = c.output().expect("run simdb");
    assert!(
        o.status.success(),
        "simdb failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn main() {
    let mut runs = 10usize;
    let mut seed = 1u64;
    let mut docs = 3000usize;
    let mut dir: Option<PathBuf> = None;
    let mut bin: Option<PathBuf> = None;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--runs" => runs = v().parse().expect("--runs"),
            "--seed" => seed = v().parse().expect("--seed"),
            "--docs" => docs = v().parse().expect("--docs"),
            "--dir" => dir = Some(PathBuf::from(v())),
            "--simdb" => bin = Some(PathBuf::from(v())),
            other => panic!("unknown argument {other}"),
        }
    }
    let bin = bin
        .or_else(|| {
            let p = std::env::current_exe()
                .ok()?
                .parent()?
                .parent()?
                .join("simdb");
            p.exists().then_some(p)
        })
        .expect("target/<profile>/simdb: build it first, or give --simdb");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("--dir");

    // The input, in order; `expected_after(n)` is the state after n documents.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let vocab: Vec<&str> = simdb::fingerprint::vocabulary()
        .filter(|w| (2..=4).contains(&w.chars().count()))
        .take(20_000)
        .collect();
    let mut lines: Vec<(String, String)> = Vec::new();
    for i in 0..docs {
        let (id, text) = match i % 20 {
            // An update of an earlier id, with new text.
            7 if i > 20 => (lines[i - 7].0.clone(), String::new()),
            // A copy of an earlier text under a new id.
            13 if i > 20 => (format!("doc-{i}"), lines[i - 13].1.clone()),
            _ => (format!("doc-{i}"), String::new()),
        };
        let text = if text.is_empty() {
            (0..60).map(|_| *vocab.choose(&mut rng).unwrap()).collect()
        } else {
            text
        };
        lines.push((id, text));
    }
    let input = dir.join("input.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).expect("input"));
        for (id, text) in &lines {
            writeln!(f, "{}", serde_json::json!({"id": id, "text": text})).unwrap();
        }
    }

    // The uninterrupted run.
    let reference = dir.join("reference");
    let _ = std::fs::remove_dir_all(&reference);
    simdb(&bin, &[&"init", &reference]);
    // Time the uninterrupted run, and when its first batch is acknowledged
    // (before that the process is starting and loading the dictionary).
    let t = Instant::now();
    let mut child = Command::new(&bin)
        .args(["ingest", "--acks", "--batch-size", "50"])
        .arg(&reference)
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ingest");
    let mut first_ack = None;
    for line in BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map_while(Result::ok)
    {
        if line.starts_with("{\"acknowledged\"") && first_ack.is_none() {
            first_ack = Some(t.elapsed());
        }
    }
    assert!(
        child.wait().expect("wait").success(),
        "reference ingest failed"
    );
    let full = t.elapsed();
    let first_ack = first_ack.unwrap_or(full);
    let want = records(&reference);
    println!(
        "crash: {runs} runs, seed {seed}, {docs} documents, uninterrupted ingest {:.2}s (first batch acknowledged at {:.2}s), {} ids",
        full.as_secs_f64(),
        first_ack.as_secs_f64(),
        want.len()
    );

    let (mut lost, mut inconsistent, mut diverged, mut acked_total) =
        (0usize, 0usize, 0usize, 0u64);
    let mut midway = 0usize;
    for run in 0..runs {
        let store = dir.join(format!("run-{run}"));
        let _ = std::fs::remove_dir_all(&store);
        simdb(&bin, &[&"init", &store]);
        let sync = run % 2 == 1;
        let mut cmd = Command::new(&bin);
        cmd.args(["ingest", "--acks", "--batch-size", "50"])
            .arg(&store)
            .arg(&input);
        if sync {
            cmd.arg("--sync");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ingest");
        let stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut acked = 0u64;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line
                    .strip_prefix("{\"acknowledged\": ")
                    .and_then(|r| r.strip_suffix('}'))
                    .and_then(|n| n.parse().ok())
                {
                    acked = n;
                }
            }
            acked
        });
        // One kill in ten during start-up, the others while batches commit.
        let delay = if rng.random_bool(0.1) {
            first_ack.mul_f64(rng.random_range(0.0..1.0))
        } else {
            first_ack + (full - first_ack).mul_f64(rng.random_range(0.0..1.0))
        } + Duration::from_millis(1);
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait");
        let acked = reader.join().expect("reader") as usize;
        acked_total += acked as u64;
        if acked < docs {
            midway += 1;
        }

        // Reopen: verify, and every acknowledged document is as expected.
        let db = Db::options().open(&store).expect("reopen after kill");
        let rep = db.admin().verify().expect("verify");
        if !rep.is_clean() {
            inconsistent += 1;
            println!(
                "run {run}: verify found {} problem(s): {:?}",
                rep.problems.len(),
                &rep.problems[..rep.problems.len().min(3)]
            );
        }
        drop(db);
        let got = records(&store);
        let mut state: BTreeMap<&str, u64> = BTreeMap::new();
        for (id, text) in &lines[..acked] {
            state.insert(id, xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
        }
        let missing = state
            .iter()
            .filter(|(id, hash)| got.get(**id).map(|r| r.1) != Some(**hash))
            .count();
        lost += missing;

        // Re-run the same ingest: the store converges to the reference.
        simdb(&bin, &[&"ingest", &store, &input, &"--batch-size", &"50"]);
        let again = records(&store);
        let same = again == want;
        if !same {
            diverged += 1;
            let diff: Vec<_> = want
                .iter()
                .filter(|(id, r)| again.get(*id) != Some(r))
                .take(3)
                .map(|(id, r)| format!("{id}: want {r:?}, got {:?}", again.get(id)))
                .collect();
            println!("run {run}: differs from the uninterrupted run, e.g. {diff:?}");
        }
        let clean = Db::options()
            .read_only()
            .open(&store)
            .expect("open")
            .admin()
            .verify()
            .expect("verify")
            .is_clean();
        if !clean {
            inconsistent += 1;
        }
        println!(
            "run {run:3}: {} after {:>6.0} ms, {acked:5} acknowledged, {:5} stored, {missing} lost, verify {}, re-run {}",
            if sync { "--sync" } else { "      " },
            delay.as_secs_f64() * 1e3,
            got.len(),
            if rep.is_clean() && clean { "clean" } else { "PROBLEMS" },
            if same { "converged" } else { "DIVERGED" },
        );
        let _ = status; // a killed process: its exit status says nothing
        let _ = std::fs::remove_dir_all(&store);
    }
    println!(
        "crash: {runs} kills ({midway} before the ingest finished), {acked_total} acknowledged documents in all, {lost} lost, {inconsistent} inconsistent, {diverged} diverged"
    );
    assert_eq!(lost + inconsistent + diverged, 0, "crash safety violated");
}
