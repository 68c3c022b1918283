//! The `simdb` binary end to end, in temp directories.

use crate::common;

use common::{code, simdb, simdb_stdin, stderr, stdout, TempDb};
use serde_json::{json, Value};

/// A JSONL corpus of generated Chinese articles; article `i` of `with_edits`
/// also gets an edited copy `i-edit` (1 of 300 words changed) right after it.
fn corpus(seed: u64, n: usize, with_edits: &[usize]) -> (String, Vec<String>) {
    let (lines, docs) = corpus_docs(seed, n, with_edits);
    (
        lines,
        docs.into_iter()
            .filter(|(id, _)| !id.ends_with("-edit"))
            .map(|d| d.1)
            .collect(),
    )
}

/// The JSONL and the (id, text) pairs in input order.
fn corpus_docs(seed: u64, n: usize, with_edits: &[usize]) -> (String, Vec<(String, String)>) {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    let mut lines = String::new();
    let mut docs = Vec::new();
    for i in 0..n {
        let words = common::article(&mut rng, &vocab, 300);
        let t: String = words.concat();
        lines += &format!(
            "{}\n",
            json!({"id": format!("doc-{i}"), "text": t, "extra": 1})
        );
        docs.push((format!("doc-{i}"), t));
        if with_edits.contains(&i) {
            let e: String = common::edit(&mut rng, &vocab, &words, 1).concat();
            lines += &format!("{}\n", json!({"id": format!("doc-{i}-edit"), "text": e}));
            docs.push((format!("doc-{i}-edit"), e));
        }
    }
    (lines, docs)
}

/// The duplicate report brute force expects: for each document, the nearest
/// earlier one within 3 bits (ties by id).
/// The duplicate report ingest should write, by brute force over earlier
/// documents: the default ranked plan's rule, then the sketch check.
fn expected_report(docs: &[(String, String)]) -> Vec<(String, String, u32)> {
    let f = simdb::Fingerprinter::new(simdb::Recipe::default());
    let an: Vec<simdb::Analysis> = docs.iter().map(|(_, t)| f.analyze(t).unwrap()).collect();
    let mut out = Vec::new();
    for i in 0..docs.len() {
        let q = an[i].fingerprint;
        let plan = simdb::index::ProbePlan::ranked(
            q,
            3,
            &an[i].weak_bits,
            simdb::index::DEFAULT_PROBE_BUDGET,
        );
        let earlier = (0..i).map(|j| (docs[j].0.as_str(), an[j].fingerprint));
        let confirmed = simdb::index::brute_force_plan(earlier, q, &plan)
            .into_iter()
            .find(|h| {
                let j = docs.iter().position(|d| d.0 == h.id).unwrap();
                let (a, b) = (an[i].sketch.unwrap(), an[j].sketch.unwrap());
                a.similarity(&b) >= simdb::db::DEFAULT_MIN_SIMILARITY
            });
        if let Some(h) = confirmed {
            out.push((docs[i].0.clone(), h.id.clone(), h.distance));
        }
    }
    out
}

#[test]
fn init_ingest_query_get_delete_stats() {
    let t = TempDb::new();
    let db = t.path();
    let o = simdb(&[&"init", &db]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (lines, docs) = corpus_docs(1, 60, &[5, 40, 41, 42, 43, 44]);
    let texts: Vec<String> = docs
        .iter()
        .filter(|(id, _)| !id.ends_with("-edit"))
        .map(|d| d.1.clone())
        .collect();
    let input = t.file("in.jsonl", &lines);
    let report = t.dir.path().join("report.jsonl");
    let o = simdb(&[&"ingest", &db, &input, &"--report", &report]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("read 66 | inserted 66"),
        "{}",
        stderr(&o)
    );

    // Near-duplicates inside the same input file are reported.
    let rep: Vec<Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(String, String, u32)> = rep
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap().into(),
                v["duplicate_of"].as_str().unwrap().into(),
                v["distance"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    let want = expected_report(&docs);
    assert_eq!(got, want);
    // Most one-word edits land within 3 bits; the planted pairs are there.
    assert!(want.len() >= 4, "{want:?}");
    assert!(
        want.iter()
            .all(|(id, of, _)| *of == id.trim_end_matches("-edit")),
        "{want:?}"
    );

    // Query by text: found, exit 0.
    let o = simdb(&[&"query", &db, &"--text", &texts[5], &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ids: Vec<&str> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "doc-5");

    // Query by id excludes itself.
    let (first, of, _) = &want[0];
    let o = simdb(&[&"query", &db, &"--id", of]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains(first.as_str()));
    assert!(!stdout(&o).lines().any(|l| l.ends_with(&format!(" {of}"))));

    // Nothing found: exit 1.
    let o = simdb(&[
        &"query",
        &db,
        &"--text",
        &"completely unrelated english words here",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));

    // k above 11: exit 2 with a clear message.
    let o = simdb(&[
        &"query",
        &db,
        &"--fingerprint",
        &"0123456789abcdef",
        &"-k",
        &"12",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("k = 12 is not supported"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("panicked"));

    // get
    let o = simdb(&[&"get", &db, &"doc-3", &"--json"]);
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["source"].as_str().unwrap().ends_with("in.jsonl:4"));
    assert_eq!(code(&simdb(&[&"get", &db, &"nope"])), 1);

    // Re-ingest: all unchanged.
    let o = simdb(&[&"ingest", &db, &input]);
    assert!(stderr(&o).contains("unchanged 66"), "{}", stderr(&o));

    // delete, then stats and verify
    let o = simdb(&[&"delete", &db, &"doc-5", &"doc-0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = simdb(&[&"stats", &db, &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["documents"], 64);
    // One key per distinct fingerprint among the documents left (an edited
    // copy whose changed word folds to the original's shares its
    // fingerprint).
    let f = simdb::Fingerprinter::new(simdb::Recipe::default());
    let distinct: std::collections::BTreeSet<simdb::Fingerprint> = docs
        .iter()
        .filter(|(id, _)| id != "doc-5" && id != "doc-0")
        .map(|(_, t)| f.fingerprint(t).unwrap())
        .collect();
    assert!(distinct.len() < 64);
    assert_eq!(v["families"][0]["keys"], distinct.len());
    let o = simdb(&[&"verify", &db]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn bad_lines_are_reported_with_line_numbers_and_good_lines_land() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let mut data: Vec<u8> = Vec::new();
    data.extend_from_slice(b"{\"id\":\"g1\",\"text\":\"first good document about rivers\"}\n");
    data.extend_from_slice(b"{\"id\":\"b2\",\"text\":\n"); // truncated JSON
    data.extend_from_slice(b"{\"id\":\"g3\",\"text\":\"second good document about mountains\"}\n");
    data.extend_from_slice(b"{\"text\":\"no id here\"}\n");
    data.extend_from_slice(b"{\"id\":\"b5\",\"text\":\"bad \xff\xfe utf8\"}\n");
    data.extend_from_slice(b"[1,2,3]\n");
    data.extend_from_slice(b"\n");
    data.extend_from_slice(b"{\"id\":\"e8\",\"text\":\"\xef\xbc\x8c the of\"}\n"); // no features
    data.extend_from_slice(b"{\"id\":9,\"text\":\"third good document about forests\"}");
    let input = t.file("mixed.jsonl", &data);
    let o = simdb(&[&"ingest", &db, &input]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    for line in [2, 4, 5, 6] {
        assert!(
            err.contains(&format!("mixed.jsonl:{line}: ")),
            "line {line}: {err}"
        );
    }
    assert!(
        err.contains("mixed.jsonl:8: document \"e8\" has no usable features"),
        "{err}"
    );
    assert!(err.contains("bad lines 4"), "{err}");
    for id in ["g1", "g3", "9"] {
        assert_eq!(code(&simdb(&[&"get", &db, &id])), 0, "{id}");
    }

    // --strict stops at the first bad line, keeping what came before.
    let t2 = TempDb::new();
    simdb(&[&"init", &t2.path()]);
    let o = simdb(&[&"ingest", &t2.path(), &input, &"--strict"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("mixed.jsonl:2"), "{}", stderr(&o));
    assert_eq!(code(&simdb(&[&"get", &t2.path(), &"g1"])), 0);
    assert_eq!(code(&simdb(&[&"get", &t2.path(), &"g3"])), 1);
}

#[test]
fn plain_lines_directories_and_stdin() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let lines = t.file(
        "docs.txt",
        "the first line of words\n\nsecond line has other words\n",
    );
    t.file("tree/a.txt", "a file about databases and indexes");
    t.file("tree/sub/b.md", "another file about fingerprints");
    let tree = t.dir.path().join("tree");
    let o = simdb_stdin(
        &[&"ingest", &db, &lines, &tree, &"-"],
        b"{\"id\":\"s1\",\"text\":\"from standard input\"}\n",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("inserted 5"), "{}", stderr(&o));
    let lines_id = format!("{}:3", lines.display());
    for id in [lines_id.as_str(), "a.txt", "sub/b.md", "s1"] {
        assert_eq!(code(&simdb(&[&"get", &db, &id])), 0, "{id}");
    }
}

#[test]
fn skip_duplicates_policy() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let (mut lines, texts) = corpus(2, 10, &[]);
    lines += &format!("{}\n", json!({"id": "doc-3-copy", "text": texts[3]}));
    let input = t.file("in.jsonl", &lines);
    let o = simdb(&[&"ingest", &db, &input, &"--skip-duplicates", &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["inserted"], 10);
    assert_eq!(v["duplicate"], 1);
    assert_eq!(v["near_duplicates"], 1);
    assert_eq!(code(&simdb(&[&"get", &db, &"doc-3-copy"])), 1);
    // One set of write counts: every count of the library's WriteCounts,
    // by its name, in the JSON summary and (spaced) in the human one.
    let o = simdb(&[&"ingest", &db, &input, &"--skip-duplicates"]);
    let names = serde_json::to_value(simdb::db::write::WriteCounts::default()).unwrap();
    for name in names.as_object().unwrap().keys() {
        assert!(v.get(name).is_some(), "--json lacks {name}: {v}");
        let spaced = format!("| {} ", name.replace('_', " "));
        assert!(
            stderr(&o).contains(&spaced),
            "summary lacks {spaced}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn batch_queries_answer_one_line_each() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let (lines, texts) = corpus(3, 20, &[]);
    let input = t.file("in.jsonl", &lines);
    simdb(&[&"ingest", &db, &input]);
    let fp = simdb(&[&"fingerprint", &"--text", &texts[7]]);
    let fp = stdout(&fp).trim().to_string();
    let batch = format!(
        "{}\n{}\n{}\nnot json\n{}\n{}\n",
        json!({"id": "q-text", "text": texts[7], "url": "ignored"}),
        json!({"fingerprint": fp}),
        json!({"fingerprint": "ffffffffffffffff"}),
        // "id" alone: the stored document (as POST /query reads it), left
        // out of its own answer; a line's options override the flags'.
        json!({"id": "doc-7", "k": 0}),
        json!({"text": texts[7], "limit": 20000}),
    );
    let bf = t.file("batch.jsonl", batch);
    let o = simdb(&[&"query", &db, &"--batch", &bf]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.len(), 6);
    assert_eq!(out[0]["query"], "q-text");
    assert_eq!(out[0]["hits"][0]["id"], "doc-7");
    assert_eq!(out[1]["hits"][0]["id"], "doc-7");
    assert_eq!(out[1]["query"], 2);
    assert!(out[3]["error"].is_string());
    assert!(stderr(&o).contains("batch.jsonl:4"));
    assert_eq!(out[4]["query"], "doc-7");
    assert_eq!(out[4]["fingerprint"], fp.as_str());
    assert!(
        out[4]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["id"] != "doc-7" && h["distance"] == 0),
        "{}",
        out[4]
    );
    assert_eq!(out[5]["query"], 6);
    assert!(
        out[5]["error"].as_str().unwrap().contains("limit"),
        "{}",
        out[5]
    );
}

#[test]
fn fingerprint_command_needs_no_store() {
    let o = simdb(&[&"fingerprint", &"--text", &"hello near duplicate world"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let a = stdout(&o).trim().to_string();
    assert_eq!(a.len(), 16);
    let o = simdb_stdin(
        &[&"fingerprint", &"--json"],
        b"{\"id\":\"x\",\"text\":\"hello near duplicate world\"}\n{\"id\":\"v\",\"features\":{\"a\":1,\"b\":-2}}\n",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let l: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(l[0]["fingerprint"], a.as_str());
    assert_eq!(l[1]["id"], "v");
    let o = simdb(&[&"fingerprint", &"--text", &"，。"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no usable features"), "{}", stderr(&o));
}

#[test]
fn errors_are_clear_and_never_panics() {
    let t = TempDb::new();
    let mut all = Vec::new();
    let o = simdb(&[&"query", &t.path(), &"--text", &"x"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no such store"), "{}", stderr(&o));
    let notdb = t.dir.path().join("notdb");
    std::fs::create_dir(&notdb).unwrap();
    std::fs::write(notdb.join("x"), "x").unwrap();
    all.push(o);
    let o = simdb(&[&"stats", &notdb]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a simdb store"), "{}", stderr(&o));
    simdb(&[&"init", &t.path()]);
    all.push(o);
    let o = simdb(&[&"init", &t.path()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    all.push(o);
    let o = simdb(&[&"query", &t.path(), &"--fingerprint", &"xyz"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not 16 hex digits"), "{}", stderr(&o));
    all.push(o);
    let o = simdb(&[&"ingest", &t.path(), &t.dir.path().join("absent.jsonl")]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("absent.jsonl: no such file"),
        "{}",
        stderr(&o)
    );
    all.push(o);
    for o in &all {
        assert!(!stderr(o).contains("panicked") && !stderr(o).contains("backtrace"));
    }
}

#[test]
fn readers_work_while_a_writer_holds_the_store() {
    let t = TempDb::new();
    let db = t.path();
    simdb(&[&"init", &db]);
    let input = t.file(
        "in.jsonl",
        "{\"id\":\"a\",\"text\":\"words about rivers and lakes and seas\"}\n",
    );
    assert_eq!(code(&simdb(&[&"ingest", &db, &input])), 0);
    // This process holds the writer's lock.
    let writer = simdb::Db::options().open(&db).unwrap();
    let o = simdb(&[&"ingest", &db, &input]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("store is in use"), "{}", stderr(&o));
    let o = simdb(&[
        &"query",
        &db,
        &"--text",
        &"words about rivers and lakes and seas",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Readers say how fresh their answer is while a writer is active.
    assert!(
        stderr(&o).contains("another process is writing now"),
        "{}",
        stderr(&o)
    );
    let o = simdb(&[&"get", &db, &"a"]);
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains("as of "), "{}", stderr(&o));
    let o = simdb(&[&"stats", &db]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("another process is writing now"),
        "{}",
        stdout(&o)
    );
    drop(writer);
    let o = simdb(&[&"stats", &db]);
    assert!(stdout(&o).contains("no writer active"), "{}", stdout(&o));
    // The recipe's sketch: what tells a new store from an older one.
    assert!(
        stdout(&o).contains("sketch=bbit-minhash-2x128/char-4-grams-alnum/fill-rehashed"),
        "{}",
        stdout(&o)
    );
    let o = simdb(&[&"get", &db, &"a"]);
    assert!(!stderr(&o).contains("note"), "{}", stderr(&o));
}

/// Issue 16: options that reached a panic (a capacity overflow, an
/// unchecked shift) are clear errors naming the option.
#[test]
fn regression_16_huge_option_values_are_errors_not_panics() {
    let t = TempDb::new();
    let db = t.path();
    assert_eq!(code(&simdb(&[&"init", &db])), 0);
    let input = t.file(
        "in.jsonl",
        "{\"id\":\"a\",\"text\":\"near duplicate detection database\"}\n",
    );
    assert_eq!(code(&simdb(&[&"ingest", &db, &input])), 0);
    let huge = u64::MAX.to_string();
    for (args, want) in [
        (
            vec!["calibrate", "DB", "--sample", &huge],
            "more than calibrate takes",
        ),
        (
            vec![
                "query",
                "DB",
                "--fingerprint",
                "0123456789abcdef",
                "--cache-mb",
                &huge,
            ],
            "--cache-mb",
        ),
        (
            vec!["import", "NEW", "IN", "--memory-mb", &huge],
            "--memory-mb",
        ),
    ] {
        let new = t.dir.path().join("new-store");
        let args: Vec<std::ffi::OsString> = args
            .iter()
            .map(|a| match *a {
                "DB" => db.clone().into_os_string(),
                "NEW" => new.clone().into_os_string(),
                "IN" => input.clone().into_os_string(),
                other => other.into(),
            })
            .collect();
        let refs: Vec<&dyn AsRef<std::ffi::OsStr>> = args
            .iter()
            .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
            .collect();
        let o = simdb(&refs);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{want}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    // A recipe naming a learned table, without the table: an error.
    let r = simdb::Recipe {
        idf: "learned/docs=2/terms=1/xxh3=0000000000000000".into(),
        ..Default::default()
    };
    let f = simdb::Fingerprinter::new(r);
    assert!(matches!(
        f.fingerprint("some text"),
        Err(simdb::Error::Input(_))
    ));
    assert!(matches!(
        f.analyze("some text"),
        Err(simdb::Error::Input(_))
    ));
}

#[test]
fn completions_are_scripts_the_shell_accepts() {
    let o = simdb(&[&"completions", &"bash"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let script = stdout(&o);
    for sub in ["ingest", "query", "migrate", "completions"] {
        assert!(script.contains(sub), "bash completion lacks {sub}");
    }
    assert!(script.contains("--probe-budget"));
    // bash parses it (where bash is installed, as on every CI machine).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("simdb.bash");
    std::fs::write(&path, &script).unwrap();
    if let Ok(s) = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
    {
        assert!(s.success(), "bash -n rejects the completion script");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = simdb(&[&"completions", &shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("simdb"), "{shell}");
    }
    let o = simdb(&[&"completions", &"tcsh"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn help_shows_examples() {
    for args in [
        &["--help"][..],
        &["ingest", "--help"],
        &["query", "--help"],
        &["completions", "--help"],
    ] {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> = args
            .iter()
            .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
            .collect();
        let o = simdb(&args);
        assert_eq!(code(&o), 0);
        assert!(stdout(&o).contains("Examples:\n  simdb "), "{}", stdout(&o));
    }
}

#[test]
fn pairs_lists_verified_pairs_once_as_jsonl() {
    let t = TempDb::new();
    let db = t.path();
    let (lines, docs) = corpus_docs(31, 60, &[2, 9, 30, 44]);
    let input = t.file("in.jsonl", lines);
    assert_eq!(code(&simdb(&[&"init", &db])), 0);
    assert_eq!(code(&simdb(&[&"ingest", &db, &input])), 0);
    // What brute force says: every pair within 3 bits, with its similarity.
    let f = simdb::Fingerprinter::new(simdb::Recipe::default());
    let an: Vec<simdb::Analysis> = docs.iter().map(|(_, t)| f.analyze(t).unwrap()).collect();
    let mut want_all = Vec::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let d = an[i].fingerprint.distance(an[j].fingerprint);
            if d <= 3 {
                let s = an[i].sketch.unwrap().similarity(&an[j].sketch.unwrap());
                let (a, b) = if docs[i].0 < docs[j].0 {
                    (i, j)
                } else {
                    (j, i)
                };
                want_all.push((docs[a].0.clone(), docs[b].0.clone(), d, s));
            }
        }
    }
    want_all.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    assert!(
        !want_all.is_empty(),
        "the edited copies are near their originals"
    );
    let parse = |o: &std::process::Output| {
        let mut v: Vec<(String, String, u32, f64)> = stdout(o)
            .lines()
            .map(|l| {
                let p: Value = serde_json::from_str(l).unwrap();
                (
                    p["a"].as_str().unwrap().to_string(),
                    p["b"].as_str().unwrap().to_string(),
                    p["distance"].as_u64().unwrap() as u32,
                    p["similarity"].as_f64().unwrap(),
                )
            })
            .collect();
        v.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
        v
    };
    let o = simdb(&[&"pairs", &db, &"--min-similarity", &"0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(parse(&o), want_all);
    // The default threshold keeps the verified ones.
    let o = simdb(&[&"pairs", &db]);
    let want: Vec<_> = want_all
        .iter()
        .filter(|p| p.3 >= simdb::db::DEFAULT_MIN_SIMILARITY)
        .cloned()
        .collect();
    assert_eq!(parse(&o), want);
    assert!(stderr(&o).contains("pairs within k=3"), "{}", stderr(&o));
    // Nothing within 0 bits among distinct texts: exit 1, no output.
    let o = simdb(&[&"pairs", &db, &"-k", &"0", &"--min-similarity", &"0"]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).is_empty());
    let o = simdb(&[&"pairs", &db, &"-k", &"12"]);
    assert_eq!(code(&o), 2);
}

/// Review 2026-11-b, finding 11 (issue 37): `pairs` on a text stored n
/// times printed n(n-1)/2 pairs (5 x 10^9 for 100,000 copies). By default
/// the copies are now one group line, and pairs name the group's first id;
/// `--copies pairs` lists every pair, and the grouped output expands to it.
#[test]
fn regression_review_b_11_pairs_reports_copies_once_as_a_group() {
    let t = TempDb::new();
    let db = t.path();
    let (lines, docs) = corpus_docs(33, 20, &[4]);
    let copied = &docs[2].1;
    let mut input = lines.clone();
    for i in 0..300 {
        input.push_str(&format!(
            "{}\n",
            json!({"id": format!("copy{i:03}"), "text": copied})
        ));
    }
    let input = t.file("in.jsonl", input);
    assert_eq!(code(&simdb(&[&"init", &db])), 0);
    assert_eq!(code(&simdb(&[&"ingest", &db, &input])), 0);
    let lines_of = |o: &std::process::Output| -> Vec<Value> {
        stdout(o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let o = simdb(&[&"pairs", &db]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let grouped = lines_of(&o);
    assert!(grouped.len() <= 5, "{} lines", grouped.len());
    let ids = |v: &Value| -> Vec<String> {
        v["copies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    // Each group by its first id (a one-word edit may keep the sketch too:
    // such a pair is a group of its own).
    let groups: std::collections::BTreeMap<String, Vec<String>> = grouped
        .iter()
        .filter(|v| v.get("copies").is_some())
        .map(|v| (ids(v)[0].clone(), ids(v)))
        .collect();
    let members = groups
        .values()
        .find(|m| m.contains(&"copy000".to_string()))
        .unwrap();
    assert_eq!(members.len(), 301, "the original and its 300 copies");
    assert!(members.contains(&docs[2].0));
    assert!(grouped
        .iter()
        .any(|v| v.get("copies").is_some() && v["similarity"] == 1.0));
    assert!(
        stderr(&o).contains(&format!("{} groups of copies", groups.len())),
        "{}",
        stderr(&o)
    );
    // Every pair, expanded.
    let o = simdb(&[&"pairs", &db, &"--copies", &"pairs"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut all: Vec<(String, String)> = lines_of(&o)
        .iter()
        .map(|p| {
            (
                p["a"].as_str().unwrap().into(),
                p["b"].as_str().unwrap().into(),
            )
        })
        .collect();
    all.sort();
    assert!(all.len() >= 301 * 300 / 2);
    let side = |x: &str| -> Vec<String> {
        groups
            .get(x)
            .cloned()
            .unwrap_or_else(|| vec![x.to_string()])
    };
    let mut expanded: Vec<(String, String)> = Vec::new();
    for m in groups.values() {
        for (i, a) in m.iter().enumerate() {
            for b in &m[i + 1..] {
                expanded.push((a.clone(), b.clone()));
            }
        }
    }
    for p in grouped.iter().filter(|v| v.get("a").is_some()) {
        for x in side(p["a"].as_str().unwrap()) {
            for y in side(p["b"].as_str().unwrap()) {
                expanded.push(if x < y {
                    (x.clone(), y)
                } else {
                    (y, x.clone())
                });
            }
        }
    }
    expanded.sort();
    assert_eq!(expanded, all);
}

#[test]
fn dedup_keeps_lines_unchanged_and_drops_what_ingest_would_skip() {
    let t = TempDb::new();
    let (mut lines, docs) = corpus_docs(47, 40, &[1, 7, 22]);
    // An exact repeat under another id, a line without features, a bad line.
    let repeat = json!({"id": "again-7", "text": docs.iter().find(|d| d.0 == "doc-7").unwrap().1});
    lines += &format!(
        "{repeat}\n{}\nnot json\n",
        json!({"id": "empty", "text": "，。"})
    );
    // A "read more" repost: an article (its words, then the same words in
    // another order: one fingerprint), later its first half alone, whose
    // similarity is under the threshold: dropped by containment.
    let f = simdb::Fingerprinter::new(simdb::Recipe::default());
    let vocab = common::vocab();
    let (long, half) = (0..100)
        .find_map(|seed| {
            let mut rng = common::rng(seed);
            let words = common::article(&mut rng, &vocab, 100);
            let mut again = words.clone();
            rand::seq::SliceRandom::shuffle(&mut again[..], &mut rng);
            let (long, half) = ([words.concat(), again.concat()].concat(), words.concat());
            let (a, b) = (f.analyze(&long).unwrap(), f.analyze(&half).unwrap());
            let j = a.sketch.unwrap().similarity(&b.sketch.unwrap());
            (a.fingerprint == b.fingerprint && (simdb::db::CONTAINMENT_FLOOR..0.6).contains(&j))
                .then_some((long, half))
        })
        .expect("an article whose half is contained");
    lines += &format!(
        "{}\n{}\n",
        json!({"id": "long", "text": long}),
        json!({"id": "repost", "text": half})
    );
    let input = t.file("in.jsonl", &lines);
    let dropped = t.path().with_file_name("dropped.jsonl");
    let o = simdb(&[&"dedup", &input, &"--dropped", &dropped]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let kept: Vec<&str> = out.lines().collect();
    // Every kept line is an input line, unchanged, in input order.
    let input_lines: Vec<&str> = lines.lines().collect();
    let mut at = 0;
    for k in &kept {
        at += input_lines[at..]
            .iter()
            .position(|l| l == k)
            .expect("an input line")
            + 1;
    }
    assert!(
        stderr(&o).contains("in.jsonl:46: invalid JSON"),
        "{}",
        stderr(&o)
    );
    assert!(
        kept.iter().any(|l| l.contains("\"empty\"")),
        "no features: kept"
    );
    assert!(!kept.iter().any(|l| l.contains("again-7")));
    // The same documents as ingest --skip-duplicates inserts.
    let db = t.path();
    assert_eq!(code(&simdb(&[&"init", &db])), 0);
    let report = t.path().with_file_name("report.jsonl");
    let o2 = simdb(&[
        &"ingest",
        &db,
        &input,
        &"--skip-duplicates",
        &"--report",
        &report,
    ]);
    assert_eq!(code(&o2), 0, "{}", stderr(&o2));
    let skipped: Vec<Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let drops: Vec<Value> = std::fs::read_to_string(&dropped)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        drops.len() >= 2,
        "the edits and the repeat are dropped: {drops:?}"
    );
    assert_eq!(drops.len(), skipped.len());
    for (d, s) in drops.iter().zip(&skipped) {
        assert_eq!(d["id"], s["id"]);
        assert_eq!(d["duplicate_of"], s["duplicate_of"]);
        assert_eq!(d["in_db"], false);
        assert!(d["duplicate_of_source"]
            .as_str()
            .unwrap()
            .contains("in.jsonl:"));
    }
    let repost = drops.iter().find(|d| d["id"] == "repost").unwrap();
    assert_eq!(repost["duplicate_of"], "long");
    assert!(repost["similarity"].as_f64().unwrap() < 0.6, "{repost}");
    assert!(
        repost["containment"].as_f64().unwrap() >= simdb::db::MIN_CONTAINMENT,
        "{repost}"
    );
    let again = drops.iter().find(|d| d["id"] == "again-7").unwrap();
    assert_eq!(again["duplicate_of"], "doc-7");
    assert_eq!(again["distance"], 0);
    assert_eq!(
        kept.len() + drops.len() + 1,
        input_lines.len(),
        "all but the bad line"
    );
    // Against the store that holds them all: everything with features is dropped.
    let o = simdb(&[&"dedup", &input, &"--db", &db]);
    assert_eq!(code(&o), 0);
    let out_db = stdout(&o);
    let kept_db: Vec<&str> = out_db.lines().collect();
    assert_eq!(kept_db.len(), 1, "only the featureless line: {kept_db:?}");
    // Nothing to drop: exit 1; the scratch directory is removed.
    let scratch = t.path().with_file_name("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let one = t.file("one.jsonl", format!("{}\n", input_lines[0]));
    let o = simdb(&[&"dedup", &one, &"--scratch", &scratch]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{}\n", input_lines[0]));
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    // --strict stops at the bad line.
    let o = simdb(&[&"dedup", &input, &"--strict"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--strict"), "{}", stderr(&o));
}

/// `dedup --keep longest` keeps the longest copy even when it comes last
/// (two passes), exactly the representatives and lone documents of a store
/// of that policy; standard input is refused for it.
#[test]
fn dedup_keeps_what_the_keep_policy_keeps() {
    let t = TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(31);
    let mut lines = String::new();
    for n in 0..6 {
        let words = common::article(&mut rng, &vocab, 200);
        // Three copies, the longest last: 90%, 95%, whole.
        for (i, share) in [180, 190, 200].iter().enumerate() {
            let v = json!({"id": format!("a{n}-{i}"), "text": words[..*share].concat()});
            lines += &format!("{v}\n");
        }
        let other = common::article(&mut rng, &vocab, 150);
        lines += &format!(
            "{}\n",
            json!({"id": format!("b{n}"), "text": other.concat()})
        );
    }
    let input = t.file("in.jsonl", &lines);
    let o = simdb(&[&"dedup", &input, &"--keep", &"longest"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let kept: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for n in 0..6 {
        assert!(kept.contains(&format!("a{n}-2")), "{kept:?}");
        assert!(!kept.contains(&format!("a{n}-0")), "{kept:?}");
        assert!(kept.contains(&format!("b{n}")), "{kept:?}");
    }
    // The same as a store of that policy: its representatives and the
    // documents alone.
    let db = t.path();
    assert_eq!(code(&simdb(&[&"init", &db, &"--keep", &"longest"])), 0);
    assert_eq!(code(&simdb(&[&"ingest", &db, &input])), 0);
    let store = simdb::Db::options().read_only().open(&db).unwrap();
    let mut want: Vec<String> = Vec::new();
    for l in lines.lines() {
        let id = serde_json::from_str::<Value>(l).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let c = store.clusters().of(&id).unwrap().unwrap();
        if c.representative == id {
            want.push(id);
        }
    }
    assert_eq!(kept, want);
    // The default keeps the first of each.
    let o = simdb(&[&"dedup", &input]);
    assert!(stdout(&o).contains("\"a0-0\"") && !stdout(&o).contains("\"a0-2\""));
    // Two passes cannot read standard input.
    let o = simdb_stdin(&[&"dedup", &"-", &"--keep", &"longest"], lines.as_bytes());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reads the input twice"),
        "{}",
        stderr(&o)
    );
}

/// Review 2026-11-b, finding 10: the example in `simdb serve --help` sent
/// a form body (`curl -d`), which the service refuses with 415; it sends
/// JSON.
#[test]
fn regression_review_b_10_serve_help_example_sends_json() {
    let o = common::simdb(&[&"serve", &"--help"]);
    let help = common::stdout(&o);
    assert!(
        help.contains("curl -s localhost:7420/query --json"),
        "{help}"
    );
    assert!(!help.contains(" -d '"), "{help}");
}

#[test]
fn a_closed_pipe_ends_a_printing_command_without_a_panic() {
    let t = TempDb::new();
    let o = simdb(&[&"init", &t.path()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let input = t.file(
        "a.jsonl",
        "{\"id\":\"a\",\"text\":\"新闻联播今天的主要内容\"}\n",
    );
    let o = simdb(&[&"ingest", &t.path(), &input]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let db = t.path().display().to_string();
    // A pipe whose reading end is closed before the command writes.
    for args in [
        vec!["stats", &db],
        vec!["get", &db, "a"],
        vec!["verify", &db],
        vec!["query", &db, "--text", "新闻联播今天的主要内容"],
    ] {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_simdb"))
            .args(&args)
            .stdout(w)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
