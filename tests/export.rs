//! `simdb export --parquet`: every document once, in id order, each column
//! equal to what the store says of it; files and row groups cut as asked;
//! an empty store; a non-empty directory refused.

mod common;

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, BinaryArray, Float64Array, Int64Array, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rand::Rng;
use serde_json::json;
use simdb::db::export::ExportOptions;
use simdb::ingest::{self, Input};
use simdb::{Db, Recipe};

/// (id, fingerprint, sketch, cluster, ingested_at, source, ord, priority)
/// of every row.
type Row = (
    String,
    i64,
    Option<Vec<u8>>,
    i64,
    i64,
    String,
    i64,
    Option<f64>,
);

fn read_rows(dir: &Path) -> (Vec<Row>, Vec<usize>, usize) {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    let mut groups = Vec::new();
    for f in &files {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(f).unwrap()).unwrap();
        for g in b.metadata().row_groups() {
            groups.push(g.num_rows() as usize);
        }
        for batch in b.build().unwrap() {
            let batch = batch.unwrap();
            let col = |n: &str| batch.column_by_name(n).unwrap().clone();
            let id = col("id");
            let id = id.as_any().downcast_ref::<StringArray>().unwrap();
            let fp = col("fingerprint");
            let fp = fp.as_any().downcast_ref::<Int64Array>().unwrap();
            let sk = col("sketch");
            let sk = sk.as_any().downcast_ref::<BinaryArray>().unwrap();
            let cl = col("cluster");
            let cl = cl.as_any().downcast_ref::<Int64Array>().unwrap();
            let at = col("ingested_at");
            let at = at.as_any().downcast_ref::<Int64Array>().unwrap();
            let src = col("source");
            let src = src.as_any().downcast_ref::<StringArray>().unwrap();
            let ord = col("ord");
            let ord = ord.as_any().downcast_ref::<Int64Array>().unwrap();
            let pr = col("priority");
            let pr = pr.as_any().downcast_ref::<Float64Array>().unwrap();
            for i in 0..batch.num_rows() {
                rows.push((
                    id.value(i).to_string(),
                    fp.value(i),
                    (!sk.is_null(i)).then(|| sk.value(i).to_vec()),
                    cl.value(i),
                    at.value(i),
                    src.value(i).to_string(),
                    ord.value(i),
                    (!pr.is_null(i)).then(|| pr.value(i)),
                ));
            }
        }
    }
    (rows, groups, files.len())
}

#[test]
fn export_matches_the_store() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(21);
    let mut lines = Vec::new();
    let mut originals: Vec<Vec<String>> = Vec::new();
    for i in 0..90 {
        let words = if !originals.is_empty() && rng.random_bool(0.4) {
            let o = originals[rng.random_range(0..originals.len())].clone();
            common::edit(&mut rng, &vocab, &o, 2)
        } else {
            let w = common::article(&mut rng, &vocab, 150);
            originals.push(w.clone());
            w
        };
        let mut v = json!({"id": format!("t{i:03}"), "text": words.concat()});
        if i % 5 == 0 {
            v["priority"] = json!(i as f64 / 10.0);
        }
        lines.push(v.to_string());
    }
    // Fingerprints with the top bit set (negative as INT64), no sketch.
    for i in 0..7u64 {
        let fp = (1u64 << 63) | rng.random::<u64>();
        lines.push(json!({"id": format!("f{i}"), "fingerprint": format!("{fp:016x}")}).to_string());
    }
    let input = t.file("in.jsonl", lines.join("\n"));
    let mut db = Db::create(t.path(), Recipe::default()).unwrap();
    ingest::run(
        &mut db,
        &[Input::guess(&input)],
        &Default::default(),
        |_| {},
    )
    .unwrap();
    drop(db);
    let db = Db::open_read_only(t.path()).unwrap();

    let out = t.path().with_extension("parquet");
    let opts = ExportOptions {
        row_group_rows: 7,
        file_rows: 40,
    };
    let s = db.export_parquet(&out, &opts).unwrap();
    assert_eq!(s.documents, 97);
    assert_eq!(s.files.len(), 3);
    assert!(out.join("_SUCCESS").exists());
    let (rows, groups, files) = read_rows(&out);
    assert_eq!(files, 3);
    assert!(groups.iter().all(|&g| (1..=7).contains(&g)), "{groups:?}");
    assert_eq!(groups.iter().sum::<usize>(), 97);
    assert_eq!(rows.len(), 97);
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "rows are in id order");

    let mut clustered = 0;
    for (id, fp, sketch, cluster, at, source, ord, priority) in &rows {
        let d = db.document(id).unwrap().unwrap();
        assert_eq!(*fp as u64, d.fingerprint.value(), "{id}");
        assert_eq!(
            sketch
                .as_ref()
                .map(|s| s.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            d.sketch,
            "{id}"
        );
        assert_eq!(*cluster as u64, d.cluster.id, "{id}");
        assert_eq!(*at as u64, d.ingested_at, "{id}");
        assert_eq!(source, &d.source, "{id}");
        assert_eq!(*ord as u64, d.ord, "{id}");
        assert_eq!(*priority, d.priority, "{id}");
        clustered += usize::from(d.cluster.size > 1);
        if id.starts_with('f') {
            assert!(*fp < 0 && sketch.is_none(), "{id}");
        }
    }
    assert!(
        clustered > 10,
        "the corpus has clusters ({clustered} members)"
    );
    // Documents of one cluster share its id.
    let c = db.cluster_of("t000").unwrap().unwrap();
    for m in &c.members {
        let row = rows.iter().find(|r| r.0 == m.id).unwrap();
        assert_eq!(row.3 as u64, c.id);
    }

    // Not into a directory that holds something.
    let err = db.export_parquet(&out, &opts).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
}

#[test]
fn empty_store_and_cli() {
    let t = common::TempDb::new();
    Db::create(t.path(), Recipe::default()).unwrap();
    let out = t.path().with_extension("empty");
    let o = common::simdb(&[&"export", &t.path(), &"--parquet", &out]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("exported 0 documents"),
        "{}",
        common::stdout(&o)
    );
    let (rows, _, files) = read_rows(&out);
    assert_eq!((rows.len(), files), (0, 1));

    let o = common::simdb(&[&"export", &t.path(), &"--parquet", &out]);
    assert_ne!(common::code(&o), 0);
    assert!(
        common::stderr(&o).contains("not empty"),
        "{}",
        common::stderr(&o)
    );
    let o = common::simdb(&[
        &"export",
        &t.path(),
        &"--parquet",
        &out,
        &"--row-group-rows",
        &"0",
    ]);
    assert_ne!(common::code(&o), 0);
}

#[test]
fn import_reads_the_export_back() {
    let t = common::TempDb::new();
    let mut rng = common::rng(22);
    let mut lines = Vec::new();
    let mut fps = Vec::new();
    for i in 0..300u64 {
        // Pairs 1 bit apart, some fingerprints shared, the top bit set half the time.
        let fp: u64 = if i % 10 == 9 {
            fps[(i - 1) as usize]
        } else {
            rng.random()
        };
        let fp = if i % 2 == 1 && i % 10 != 9 {
            fps[(i - 1) as usize] ^ 1
        } else {
            fp
        };
        fps.push(fp);
        lines.push(json!({"id": format!("d{i}"), "fingerprint": format!("{fp:016x}")}).to_string());
    }
    let input = t.file("fps.jsonl", lines.join("\n"));
    let src = t.path().join("src.db");
    let o = common::simdb(&[&"import", &src, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let out = t.path().join("export");
    let o = common::simdb(&[&"export", &src, &"--parquet", &out, &"--file-rows", &"64"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));

    let back = t.path().join("back.db");
    let o = common::simdb(&[&"import", &back, &out, &"--parquet"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("imported 300 documents"),
        "{}",
        common::stdout(&o)
    );
    let (a, b) = (
        Db::open_read_only(&src).unwrap(),
        Db::open_read_only(&back).unwrap(),
    );
    for (i, &fp) in fps.iter().enumerate() {
        let id = format!("d{i}");
        assert_eq!(b.get(&id).unwrap().unwrap().fingerprint.value(), fp);
        let sorted = |db: &Db| {
            let mut v: Vec<String> = db
                .query(simdb::Fingerprint(fp), 3, None)
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&a), sorted(&b), "{id}");
    }
    let o = common::simdb(&[&"verify", &back]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));

    // --parquet refuses other inputs; a file without the columns is named.
    let o = common::simdb(&[&"import", &t.path().join("x.db"), &input, &"--parquet"]);
    assert_ne!(common::code(&o), 0);
    assert!(
        common::stderr(&o).contains("not a Parquet file"),
        "{}",
        common::stderr(&o)
    );
    let lonely = t.path().join("ids.parquet");
    {
        use arrow_array::{RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};
        let schema =
            std::sync::Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![std::sync::Arc::new(StringArray::from(vec!["a", "b"]))],
        )
        .unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(File::create(&lonely).unwrap(), schema, None)
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    let o = common::simdb(&[&"import", &t.path().join("y.db"), &lonely]);
    assert_ne!(common::code(&o), 0);
    assert!(
        common::stderr(&o).contains("no \"fingerprint\" column"),
        "{}",
        common::stderr(&o)
    );
    assert!(!t.path().join("y.db").exists());
}
