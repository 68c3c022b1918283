//! Hostile input: each case gets a clear message naming file:line, the good
//! documents land, memory stays bounded, and nothing half-written remains
//! (verify is clean afterwards).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{code, simdb, stderr, stdout, TempDb};

fn verify_clean(db: &std::path::Path) {
    let o = simdb(&[&"verify", &db]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

/// Runs simdb and returns (exit code, stdout, stderr, peak RSS in MiB).
fn simdb_rss(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String, String, f64) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_simdb"));
    for a in args {
        c.arg(a.as_ref());
    }
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("o"), out.path().join("e"));
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap());
    // Reaped below with wait4. Its peak RSS is read from the child's own
    // `VmHWM`, polled while it runs, not from wait4's rusage: a child
    // spawned with CLONE_VM carries into its `ru_maxrss`, at exec, the
    // high-water mark of this test process, which in a full parallel run
    // holds other tests' data (300-450 MiB against 150 MiB alone).
    #[allow(clippy::zombie_processes)]
    let child = c.spawn().unwrap();
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let status_path = format!("/proc/{pid}/status");
    let mut peak_kb = 0u64;
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0);
        if let Ok(st) = std::fs::read_to_string(&status_path) {
            let hwm = st
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak_kb = peak_kb.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        code,
        std::fs::read_to_string(o).unwrap(),
        std::fs::read_to_string(e).unwrap(),
        peak_kb as f64 / 1024.0,
    )
}

#[test]
fn ids_and_text_of_the_wrong_kind() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let lines = [
        r#"{"id":"ok1","text":"a good document about rivers and lakes"}"#,
        r#"{"id":"","text":"empty id"}"#,
        r#"{"id":1.5,"text":"float id"}"#,
        r#"{"id":{"a":1},"text":"object id"}"#,
        r#"{"id":"n1","text":42}"#,
        r#"{"id":"n2","text":null}"#,
        r#""just a string""#,
        r#"{"id":"ok1","text":"the same id again, with new text about mountains"}"#,
        "{\"id\":\"nul\",\"text\":\"nul \\u0000 bytes \\u0000 inside words\"}",
        r#"{"id":"rtl","text":"עברית מימין לשמאל والعربية أيضا"}"#,
        r#"{"id":"emoji","text":"party 🎉🎉 time 😀 with friends 👍🏽"}"#,
        "{\"id\":\"raw-nul\",\"text\":\"x\u{0}y\"}\u{0}",
    ];
    let input = t.file("kinds.jsonl", lines.join("\n"));
    let o = simdb(&[&"ingest", &db, &input]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    for (line, what) in [
        (2, "empty \"id\""),
        (3, "string or an integer"),
        (4, "string or an integer"),
        (5, "\"text\" must be a string"),
        (6, "\"text\" must be a string"),
        (7, "not a JSON object"),
        (12, "kinds.jsonl:12"),
    ] {
        assert!(
            err.contains(&format!("kinds.jsonl:{line}: ")) && err.contains(what),
            "line {line} ({what}): {err}"
        );
    }
    let out = stdout(&o) + &err;
    assert!(out.contains("replaced 1"), "duplicate id replaces: {out}");
    for id in ["ok1", "nul", "rtl", "emoji"] {
        assert_eq!(code(&simdb(&[&"get", &db, &id])), 0, "{id}");
    }
    let o = simdb(&[&"get", &db, &"ok1", &"--json"]);
    assert!(stdout(&o).contains("kinds.jsonl:8"), "{}", stdout(&o));
    verify_clean(&db);
}

#[test]
fn empty_and_binary_files() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let empty = t.file("empty.jsonl", "");
    let o = simdb(&[&"ingest", &db, &empty]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        (stdout(&o) + &stderr(&o)).contains("read 0"),
        "{}",
        stderr(&o)
    );

    // Random bytes: every line is bad, none is a document, nothing panics.
    let mut rng = common::rng(5);
    let bytes: Vec<u8> = (0..200_000)
        .map(|_| rand::Rng::random::<u8>(&mut rng))
        .collect();
    let bin = t.file("random.bin", &bytes);
    let o = simdb(&[&"ingest", &db, &bin, &"--format", &"jsonl"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("random.bin:1: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("inserted 0"), "{err}");
    let o = simdb(&[&"ingest", &db, &bin, &"--format", &"jsonl", &"--strict"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("random.bin:1"), "{}", stderr(&o));
    verify_clean(&db);
}

#[test]
fn a_100_mb_document_is_refused_by_default_and_taken_when_allowed() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let words = [
        "river", "mountain", "forest", "valley", "meadow", "harbour", "island",
    ];
    let mut text = String::with_capacity(100 << 20);
    let mut i = 0usize;
    while text.len() < 100 << 20 {
        text.push_str(words[i % words.len()]);
        text.push_str(&format!("{} ", i % 9973));
        i += 1;
    }
    let mut data = Vec::new();
    data.extend_from_slice(b"{\"id\":\"small\",\"text\":\"a small document about rivers\"}\n");
    writeln!(data, "{{\"id\":\"big\",\"text\":\"{text}\"}}").unwrap();
    data.extend_from_slice(b"{\"id\":\"after\",\"text\":\"the document after the big one\"}\n");
    let input = t.file("big.jsonl", &data);
    drop(text);
    let o = simdb(&[&"ingest", &db, &input]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("big.jsonl:2") && stderr(&o).contains("--max-doc-bytes"),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&simdb(&[&"get", &db, &"after"])), 0);
    assert_eq!(code(&simdb(&[&"get", &db, &"big"])), 1);
    let o = simdb(&[
        &"ingest",
        &db,
        &input,
        &"--max-doc-bytes",
        &(128u64 << 20).to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&simdb(&[&"get", &db, &"big"])), 0);
    verify_clean(&db);
}

#[test]
fn a_1_gb_line_without_newline_is_refused_in_bounded_memory() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    // A sparse file: 1 GiB of NUL bytes, no newline, after one good line.
    let path = t.dir.path().join("huge.jsonl");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"{\"id\":\"first\",\"text\":\"the only good document here\"}\n")
            .unwrap();
        f.set_len(1 << 30).unwrap();
    }
    let (code, _out, err, rss) = simdb_rss(&[&"ingest", &db, &path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("huge.jsonl:2") && err.contains("--max-doc-bytes"),
        "{err}"
    );
    assert!(
        rss > 0.0 && rss < 400.0,
        "peak RSS {rss:.0} MiB for a 1 GiB line"
    );
    assert_eq!(common::code(&simdb(&[&"get", &db, &"first"])), 0);
    verify_clean(&db);
}

/// A store on a small tmpfs that fills up mid-ingest (needs root to mount;
/// skipped with a message otherwise).
#[test]
fn a_disk_that_fills_up_mid_ingest() {
    let t = TempDb::new();
    let mnt = t.dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=12m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let db = mnt.join("db");
    simdb(&[&"init", &db]);
    let mut lines = String::new();
    let mut rng = common::rng(9);
    for i in 0..300_000 {
        let fp: u64 = rand::Rng::random(&mut rng);
        lines +=
            &format!("{{\"id\":\"doc-{i:07}-padding-padding\",\"fingerprint\":\"{fp:016x}\"}}\n");
    }
    let input = t.file("many.jsonl", lines);
    let o = simdb(&[&"ingest", &db, &input, &"--acks"]);
    assert_eq!(code(&o), 2, "the ingest should fail: {}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("No space left") || err.contains("no space"),
        "{err}"
    );
    assert!(err.contains("many.jsonl:"), "names where it stopped: {err}");
    let acked: u64 = stdout(&o)
        .lines()
        .rev()
        .find_map(|l| {
            l.strip_prefix("{\"acknowledged\": ")?
                .strip_suffix('}')?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert!(acked > 0, "some batches landed before the disk filled");
    // Give the store room again: it opens, verifies, and holds every
    // acknowledged document.
    assert!(Command::new("mount")
        .args(["-o", "remount,size=256m"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success());
    verify_clean(&db);
    for i in [0, acked / 2, acked - 1] {
        let id = format!("doc-{i:07}-padding-padding");
        assert_eq!(
            code(&simdb(&[&"get", &db, &id])),
            0,
            "{id} (acknowledged {acked})"
        );
    }
}

/// Issue 11: a UTF-8 byte-order mark at the start of a JSONL file (files
/// exported on Windows have one) made line 1 "invalid JSON". It is dropped,
/// for ingest and for `query --batch`.
#[test]
fn regression_11_byte_order_mark_starts_no_bad_line() {
    let t = common::TempDb::new();
    let db = t.path();
    assert_eq!(common::code(&common::simdb(&[&"init", &db])), 0);
    let input = t.file(
        "bom.jsonl",
        "\u{feff}{\"id\":\"a\",\"text\":\"near duplicate detection database for text\"}\n{\"id\":\"b\",\"text\":\"another document entirely\"}\n",
    );
    let o = common::simdb(&[&"ingest", &db, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("inserted 2"),
        "{}",
        common::stderr(&o)
    );
    assert!(
        common::stderr(&o).contains("bad lines 0"),
        "{}",
        common::stderr(&o)
    );
    let batch = t.file(
        "q.jsonl",
        "\u{feff}{\"id\":\"q\",\"text\":\"near duplicate detection database for text\"}\n",
    );
    let o = common::simdb(&[&"query", &db, &"--batch", &batch]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("\"id\":\"a\""),
        "{}",
        common::stdout(&o)
    );
}

/// Issue 11: ids `1` and `"1"` name the same document (an integer id is its
/// decimal string), as the README says: the second replaces the first.
#[test]
fn regression_11_integer_and_string_ids_are_one_document() {
    let t = common::TempDb::new();
    let db = t.path();
    assert_eq!(common::code(&common::simdb(&[&"init", &db])), 0);
    let input = t.file(
        "ids.jsonl",
        "{\"id\":1,\"text\":\"first text about one thing\"}\n{\"id\":\"1\",\"text\":\"second text about another\"}\n",
    );
    let o = common::simdb(&[&"ingest", &db, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("inserted 1 | replaced 1"),
        "{}",
        common::stderr(&o)
    );
    let o = common::simdb(&[&"get", &db, &"1", &"--json"]);
    assert_eq!(common::code(&o), 0);
    assert!(
        common::stdout(&o).contains("ids.jsonl:2"),
        "{}",
        common::stdout(&o)
    );
}
