//! `simdb stats`.

use super::prelude::*;

pub(super) fn stats(a: StatsArgs) -> Result<bool> {
    let db = Db::options().read_only().open(&a.db)?;
    let s = db.admin().stats()?;
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
        return Ok(true);
    }
    println!("store        {}", s.path);
    println!("documents    {}", s.documents);
    if let (Some(a), Some(b)) = (s.oldest, s.newest) {
        println!("times        {} .. {}", format_unix(a), format_unix(b));
    }
    println!(
        "clusters     {} of 2 or more documents, {} documents in them (keep policy {})",
        s.clusters, s.clustered_documents, s.keep
    );
    println!(
        "short docs   {} (fewer than {} terms; README, \"The fingerprint recipe\")",
        s.short_documents,
        simdb::fingerprint::SHORT_TERMS
    );
    println!("view         {}", view_text(&s.view));
    println!("size on disk {} bytes", s.bytes_on_disk);
    print_frozen(&s);
    if let Some(e) = &s.extraction {
        println!("web pages    {e}");
    }
    println!(
        "recipe       top_k={} shingle={} hmm={} tf={} hash={} width={} tie={}",
        s.recipe.top_k,
        s.recipe.shingle,
        s.recipe.hmm,
        s.recipe.tf,
        s.recipe.hash,
        s.recipe.width,
        s.recipe.tie_rule
    );
    println!(
        "             tokenizer={} idf={} stopwords={} script={} latin={} sketch={}",
        s.recipe.tokenizer,
        s.recipe.idf,
        s.recipe.stopwords,
        s.recipe.script,
        s.recipe.latin,
        s.recipe.sketch
    );
    println!(
        "{:<8} {:>10} {:>10} {:>12} {:>6} {:>6} {:>6} {:>6}",
        "family", "keys", "buckets", "sst bytes", "p50", "p90", "p99", "max"
    );
    for f in &s.families {
        println!(
            "{:<8} {:>10} {:>10} {:>12} {:>6} {:>6} {:>6} {:>6}",
            f.name,
            f.keys,
            f.buckets,
            f.sst_bytes,
            f.bucket_p50,
            f.bucket_p90,
            f.bucket_p99,
            f.bucket_max
        );
    }
    Ok(true)
}

/// The `frozen` line(s) of `stats`.
fn print_frozen(s: &simdb::db::Stats) {
    match (&s.frozen, &s.frozen_unusable) {
        (Some(f), _) => {
            println!(
                "frozen       generation {}, {} bytes; {:.1}% of buckets unchanged since (read from it)",
                f.generation,
                f.bytes,
                100.0 * f.clean_buckets as f64 / f.buckets as f64
            );
            if f.damaged_buckets > 0 {
                println!(
                    "             {} buckets DAMAGED (failed their CRC; read from RocksDB): run \
                     `simdb verify`, then `simdb freeze`",
                    f.damaged_buckets
                );
            }
        }
        (None, Some(why)) => {
            println!("frozen       unusable, every bucket read from RocksDB: {why}")
        }
        (None, None) => println!("frozen       none (`simdb freeze` writes one)"),
    }
}
