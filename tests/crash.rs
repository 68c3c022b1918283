//! The crash tool with a few kills (docs/operations.md quotes a 100-kill run):
//! SIGKILL mid-ingest loses no acknowledged document, verify is clean after
//! every kill, and re-running the ingest converges.

#[test]
fn sigkill_during_ingest_loses_nothing_acknowledged() {
    let simdb = std::path::PathBuf::from(env!("CARGO_BIN_EXE_simdb"));
    let tool = simdb.parent().unwrap().join("examples").join("crash");
    assert!(
        tool.exists(),
        "examples are built by cargo test: {}",
        tool.display()
    );
    let out = std::process::Command::new(tool)
        .args(["--runs", "4", "--docs", "1500", "--seed", "7", "--simdb"])
        .arg(&simdb)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("0 lost, 0 inconsistent, 0 diverged"),
        "{text}"
    );
}

use crate::common;

/// Issue 37 (review 2026-11-b, finding 4): `migrate --keep` killed at ten
/// moments of its rebuild. Each time the store either opens with the
/// clusters it had or the finished ones, or is refused as a half-built
/// store (and `verify` says which command finishes it); running the same
/// command again then ends with the clusters of an uninterrupted run, and
/// `verify` is clean.
#[test]
fn sigkill_during_migrate_keep_ends_with_the_clusters_of_a_fresh_rebuild() {
    use rand::Rng;
    use simdb::db::KeepPolicy;
    use simdb::Db;
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(374);
    let mut lines = String::new();
    for a in 0..300 {
        let base = common::article(&mut rng, &vocab, 120);
        for c in 0..20 {
            let words = common::edit(&mut rng, &vocab, &base, 1 + c % 5);
            let text = serde_json::to_string(&words.concat()).unwrap();
            lines.push_str(&format!("{{\"id\":\"a{a:03}c{c:02}\",\"text\":{text}}}\n"));
        }
    }
    let input = t.file("in.jsonl", lines);
    let base = t.path().with_file_name("base");
    assert_eq!(common::code(&common::simdb(&[&"init", &base])), 0);
    assert_eq!(common::code(&common::simdb(&[&"ingest", &base, &input])), 0);
    let before = common::cluster_shapes(&Db::options().read_only().open(&base).unwrap());
    // The reference: an uninterrupted run, and how long it takes.
    let reference = t.path().with_file_name("reference");
    common::copy_dir(&base, &reference);
    let start = std::time::Instant::now();
    let o = common::simdb(&[&"migrate", &reference, &"--keep", &"newest"]);
    let took = start.elapsed();
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let want = common::cluster_shapes(&Db::options().read_only().open(&reference).unwrap());
    assert!(!want.is_empty() && want != before);
    let (mut refused, mut untouched) = (0, 0);
    for n in 0..10 {
        let p = t.path().with_file_name(format!("killed{n}"));
        common::copy_dir(&base, &p);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdb"))
            .args(["migrate", "--keep", "newest"])
            .arg(&p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(took.mul_f64(rng.random_range(0.05..1.0)));
        child.kill().unwrap();
        child.wait().unwrap();
        match Db::options().read_only().open(&p) {
            Ok(db) => {
                let got = common::cluster_shapes(&db);
                match db.admin().keep_policy().unwrap() {
                    KeepPolicy::Newest => assert_eq!(got, want, "kill {n}: finished"),
                    _ => {
                        assert_eq!(got, before, "kill {n}: not begun");
                        untouched += 1;
                    }
                }
            }
            Err(e) => {
                assert!(
                    matches!(e, simdb::Error::ClustersIncomplete { .. }),
                    "kill {n}: {e}"
                );
                let o = common::simdb(&[&"verify", &p]);
                assert_ne!(common::code(&o), 0);
                assert!(common::stderr(&o).contains("migrate"), "kill {n}");
                refused += 1;
            }
        }
        let o = common::simdb(&[&"migrate", &p, &"--keep", &"newest"]);
        assert_eq!(common::code(&o), 0, "kill {n}: {}", common::stderr(&o));
        let db = Db::options().read_only().open(&p).unwrap();
        assert_eq!(common::cluster_shapes(&db), want, "kill {n}: run again");
        assert!(db.admin().verify().unwrap().is_clean(), "kill {n}");
    }
    eprintln!("10 kills: {refused} half-built (refused), {untouched} before the rebuild began");
    assert!(refused > 0, "no kill landed inside the rebuild ({took:?})");
}
