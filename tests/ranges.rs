//! A store built by key range (`simdb::import::ranges`, what the engines
//! run on their workers) is the store `simdb import` builds from the same
//! export: every family's entries, byte for byte, and no table file of one
//! range overlapping another's.

use std::path::{Path, PathBuf};

use crate::common;

use serde_json::json;
use simdb::import::ranges::{self, Counts, Item, RangeOutput};

/// A store with clusters (edited and exact copies), short documents,
/// priorities, own times, kept texts and decisions, exported in parts of
/// `rows` rows: the export's directory and its decision log.
fn exported(t: &common::TempDb, keep: &str, rows: usize) -> PathBuf {
    let vocab = common::vocab();
    let mut rng = common::rng(59);
    let mut lines = Vec::new();
    for i in 0..80 {
        let words = common::article(&mut rng, &vocab, 120);
        let time = 1_700_000_000 + (i * 7919) % 5000;
        lines.push(
            json!({"id": format!("a{i:03}"), "text": words.concat(), "priority": i % 4, "time": time})
                .to_string(),
        );
        for c in 0..(i % 4) {
            let edited = common::edit(&mut rng, &vocab, &words, 1 + c);
            lines.push(json!({"id": format!("e{i:03}-{c}"), "text": edited.concat()}).to_string());
        }
        if i % 5 == 0 {
            // Exact copies: documents sharing a fingerprint.
            lines.push(json!({"id": format!("x{i:03}"), "text": words.concat()}).to_string());
        }
    }
    lines.push(json!({"id": "short", "text": "国务院 常务 会议"}).to_string());
    let input = t.file("docs.jsonl", lines.join("\n"));
    let src = t.path().join("src.db");
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let o = common::simdb(args);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    };
    run(&[&"init", &src, &"--keep", &keep, &"--keep-texts"]);
    run(&[&"ingest", &src, &input]);
    run(&[&"decide", &src, &"keep", &"e003-1"]);
    run(&[&"decide", &src, &"not-a-copy", &"a007", &"e007-0"]);
    let out = t.path().join("export");
    run(&[
        &"export",
        &src,
        &"--parquet",
        &out,
        &"--file-rows",
        &rows.to_string(),
    ]);
    out
}

/// What an engine does between two steps: each share's items through
/// Arrow IPC (the engines' transport), sampled; the boundaries of `n`
/// ranges from the samples; each share's items cut by them; each range's
/// pieces from every share, together.
fn shuffle(shares: Vec<Vec<Item>>, n: usize) -> Vec<Vec<Item>> {
    let mut samples = Vec::new();
    let mut moved = Vec::new();
    for items in shares {
        let mut back = Vec::new();
        ranges::from_ipc(&ranges::to_ipc(&items).unwrap(), &mut back).unwrap();
        assert_eq!(back, items);
        samples.extend(ranges::sample(&back, 5 * n));
        moved.push(back);
    }
    let bounds = ranges::boundaries(samples, n);
    assert!(bounds.len() < n.max(1));
    let mut out: Vec<Vec<Item>> = (0..=bounds.len()).map(|_| Vec::new()).collect();
    for items in moved {
        // Cut in Arrow's columns (the engines' way) as items are cut.
        let ipc = ranges::split_ipc(&ranges::to_ipc(&items).unwrap(), &bounds).unwrap();
        let pieces = ranges::split(items, &bounds);
        assert_eq!(ipc.len(), pieces.len());
        for (r, (piece, bytes)) in pieces.into_iter().zip(ipc).enumerate() {
            let mut back = Vec::new();
            ranges::from_ipc(&bytes, &mut back).unwrap();
            assert_eq!(back, piece);
            out[r].extend(piece);
        }
    }
    // No group in two ranges.
    let mut seen = std::collections::HashMap::new();
    for (r, range) in out.iter().enumerate() {
        for i in range {
            assert_eq!(*seen.entry(ranges::range_key(i)).or_insert(r), r);
        }
    }
    out
}

/// Builds the store of `export` by range, in `shares` shares and `n`
/// ranges a round, at `target`.
fn build_by_range(export: &Path, target: &Path, shares: usize, n: usize) -> Counts {
    let parts = common::parquet_parts(export);
    let log_file = export.join(simdb::db::decisions::DECISIONS_FILE);
    let log = simdb::db::decisions::read_log(&log_file).unwrap();
    let mut counts = Counts::default();
    let mut first = Vec::new();
    for share in parts.chunks(parts.len().div_ceil(shares)) {
        let (i, c) = ranges::map_share(share, &log).unwrap();
        first.push(i);
        counts.add(&c);
    }
    let work = target.with_extension("ranges");
    let mut outputs: Vec<RangeOutput> = Vec::new();
    let mut second = Vec::new();
    for (r, range) in shuffle(first, n).into_iter().enumerate() {
        // Round 1 read in place from Arrow IPC (the engines' way), round
        // 2 from items.
        let ipc = [ranges::to_ipc(&range).unwrap()];
        let mut o = ranges::reduce_ipc(&ipc, &work, &format!("r1-{r:03}"), 1 << 20).unwrap();
        counts.add(&std::mem::take(&mut o.counts));
        second.push(std::mem::take(&mut o.items));
        outputs.push(o);
    }
    assert!(second.iter().flatten().all(|i| i.tag >= ranges::ROUND_TWO));
    for (r, range) in shuffle(second, n).into_iter().enumerate() {
        let o = ranges::reduce(range, &work, &format!("r2-{r:03}"), 1 << 20).unwrap();
        assert!(o.items.is_empty());
        outputs.push(o);
    }
    let meta = ranges::export_of(&parts).unwrap();
    ranges::assemble(target, &meta, &log, &outputs, &counts, Default::default()).unwrap();
    counts
}

/// A family's name, entries and level-0 table files.
type Family = (String, Vec<(Vec<u8>, Vec<u8>)>, u64);

/// Every family's entries of the store at `p`, and the number of its
/// level-0 table files (an ingested file that overlapped another lands
/// there).
fn families(p: &Path) -> Vec<Family> {
    let db = common::raw_open(p);
    let mut names = rocksdb::DB::list_cf(&rocksdb::Options::default(), p).unwrap();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let cf = db.cf_handle(&name).unwrap();
            let entries = db
                .iterator_cf(&cf, rocksdb::IteratorMode::Start)
                .map(|kv| {
                    let (k, v) = kv.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            let l0 = db
                .property_int_value_cf(&cf, "rocksdb.num-files-at-level0")
                .unwrap()
                .unwrap_or(0);
            (name, entries, l0)
        })
        .collect()
}

#[test]
fn a_store_built_by_range_is_the_imported_store() {
    for (keep, rows, shares, n) in [
        ("priority", 37, 3, 4),
        ("first", 500, 1, 1),
        ("newest", 11, 7, 13),
    ] {
        let t = common::TempDb::new();
        std::fs::create_dir_all(t.path()).unwrap();
        let export = exported(&t, keep, rows);
        let imported = t.path().join("imported.db");
        let opts = simdb::import::Options {
            freeze: false,
            ..Default::default()
        };
        let summary =
            simdb::import::run(&imported, std::slice::from_ref(&export), &opts, |_| {}).unwrap();
        assert!(summary.restored && summary.clusters > 20, "{summary:?}");
        let by_range = t.path().join("by-range.db");
        let counts = build_by_range(&export, &by_range, shares, n);
        assert_eq!(
            (
                counts.documents,
                counts.clusters,
                counts.shared_fingerprints
            ),
            (
                summary.documents,
                summary.clusters,
                summary.shared_fingerprints
            ),
            "{keep}"
        );
        let (a, b) = (families(&imported), families(&by_range));
        assert_eq!(a.len(), b.len());
        for ((name, ea, l0a), (nb, eb, l0b)) in a.iter().zip(&b) {
            assert_eq!(name, nb);
            // Only `meta` is written, not ingested.
            if name != "meta" {
                assert_eq!((*l0a, *l0b), (0, 0), "{keep}: {name}'s table files overlap");
            }
            assert_eq!(ea.len(), eb.len(), "{keep}: {name}");
            for (x, y) in ea.iter().zip(eb) {
                assert_eq!(x, y, "{keep}: {name}");
            }
        }
        let entries = |name: &str| a.iter().find(|f| f.0 == name).unwrap().1.len();
        for name in ["docs", "texts", "decisions", "band7", "parts", "block3"] {
            assert!(entries(name) > 0, "{keep}: {name}");
        }
        // The store answers and verifies clean.
        let o = common::simdb(&[&"verify", &by_range]);
        assert_eq!(
            common::code(&o),
            0,
            "{}{}",
            common::stdout(&o),
            common::stderr(&o)
        );
    }
}

/// Shares that are not the parts of one export, each once, are refused
/// with what came twice.
#[test]
fn ranges_refuse_what_is_not_one_export() {
    let t = common::TempDb::new();
    std::fs::create_dir_all(t.path()).unwrap();
    let export = exported(&t, "first", 100);
    let parts = common::parquet_parts(&export);
    let (mut items, _) = ranges::map_share(&parts[..1], &[]).unwrap();
    let (again, _) = ranges::map_share(&parts[..1], &[]).unwrap();
    items.extend(again);
    let err = ranges::reduce(items, &t.path().join("w"), "r", 1 << 20).unwrap_err();
    assert!(err.to_string().contains("comes twice"), "{err}");
    let plain = t.file(
        "fps.jsonl",
        r#"{"id": "z", "fingerprint": "0123456789abcdef"}"#,
    );
    let err = ranges::map_share(&[plain], &[]).unwrap_err();
    assert!(err.to_string().contains("not a simdb export"), "{err}");
}
