//! The ingest run through the library: identical results whatever the
//! thread count and batch size; duplicates inside one batch are seen.

use crate::common;

use simdb::ingest::{self, Event, Input};
use simdb::{Db, Recipe};

fn corpus(t: &common::TempDb) -> std::path::PathBuf {
    let vocab = common::vocab();
    let mut rng = common::rng(5);
    let mut lines = String::new();
    for i in 0..300 {
        let words = common::article(&mut rng, &vocab, 120);
        lines += &serde_json::json!({"id": format!("d{i}"), "text": words.concat()}).to_string();
        lines.push('\n');
        if i % 7 == 0 {
            // An exact copy under another id, and a one-word edit.
            lines += &serde_json::json!({"id": format!("d{i}-copy"), "text": words.concat()})
                .to_string();
            lines.push('\n');
            let e = common::edit(&mut rng, &vocab, &words, 1).concat();
            lines += &serde_json::json!({"id": format!("d{i}-edit"), "text": e}).to_string();
            lines.push('\n');
        }
        if i % 50 == 0 {
            lines += "{not json\n";
        }
    }
    t.file("in.jsonl", lines)
}

type Run = (
    ingest::Summary,
    Vec<(String, String, u32)>,
    Vec<(String, String)>,
);

fn run(threads: usize, batch_size: usize) -> Run {
    let t = common::TempDb::new();
    let input = corpus(&t);
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let opts = ingest::Options {
        batch_size,
        ..Default::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut report = Vec::new();
    let mut summary = pool
        .install(|| {
            ingest::run(&mut db, &[Input::guess(&input)], &opts, |e| {
                if let Event::Duplicate(r) = e {
                    report.push((r.id.clone(), r.duplicate_of.clone(), r.distance));
                }
            })
        })
        .unwrap();
    summary.elapsed = Default::default();
    let mut records = Vec::new();
    db.admin()
        .for_each(|id, r| {
            records.push((id.to_string(), r.fingerprint.to_string()));
            Ok(())
        })
        .unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    (summary, report, records)
}

#[test]
fn same_result_whatever_threads_and_batch_size() {
    let base = run(1, 2048);
    assert_eq!(base.0.bad_lines, 6);
    assert_eq!(base.0.writes.inserted, 300 + 2 * 43);
    // Every exact copy is reported against its original, even in one batch.
    for i in (0..300).step_by(7) {
        let copy = format!("d{i}-copy");
        assert!(
            base.1
                .iter()
                .any(|(id, of, d)| *id == copy && *of == format!("d{i}") && *d == 0),
            "{copy}"
        );
    }
    for (threads, batch) in [(2, 2048), (2, 7), (1, 1), (4, 64)] {
        let other = run(threads, batch);
        assert_eq!(
            other.0, base.0,
            "summary with {threads} threads, batch {batch}"
        );
        assert_eq!(
            other.1, base.1,
            "report with {threads} threads, batch {batch}"
        );
        assert_eq!(
            other.2, base.2,
            "records with {threads} threads, batch {batch}"
        );
    }
}
