//! `simdb calibrate`.

use super::prelude::*;

pub(super) fn calibrate(a: CalibrateArgs) -> Result<bool> {
    let db = Db::options().read_only().open(&a.db)?;
    let min_similarity = db.admin().min_similarity_or_default(a.min_similarity)?;
    note_freshness(&db);
    let c = db
        .admin()
        .calibrate(a.sample, a.seed, min_similarity, a.max_k)?;
    // Nearest-neighbour distances (0..=11) and random-pair distances
    // (0..=64) on one axis.
    let none_within = c.nearest[c.nearest.len() - 1];
    let widen = |v: &[u64]| -> Vec<u64> {
        let mut w = v[..v.len() - 1].to_vec();
        w.resize(65, 0);
        w
    };
    let unverified: Vec<u64> = c
        .nearest
        .iter()
        .zip(c.nearest_confirmed.iter().zip(&c.nearest_rejected))
        .map(|(n, (a, b))| n - a - b)
        .collect();
    let svg = simdb::plot::histogram(
        &format!(
            "{}: {} sampled documents ({none_within} with no other document within {} bits)",
            a.db.display(),
            c.sampled,
            c.max_k
        ),
        "Hamming distance",
        &[
            (
                format!("nearest, confirmed (similarity >= {min_similarity})"),
                widen(&c.nearest_confirmed),
            ),
            (
                "nearest, rejected by the sketch".into(),
                widen(&c.nearest_rejected),
            ),
            ("nearest, no sketch to compare".into(), widen(&unverified)),
            ("random pairs (unrelated)".into(), c.random_pairs.clone()),
        ],
    );
    std::fs::write(&a.plot, svg).with_context(|| format!("{}: cannot write", a.plot.display()))?;
    if a.json {
        let mut v = serde_json::to_value(&c)?;
        v["plot"] = json!(a.plot.display().to_string());
        println!("{v}");
        return Ok(c.sampled > 0);
    }
    println!(
        "sampled {} documents; similarity threshold {min_similarity}",
        c.sampled
    );
    println!("nearest other document, by distance:");
    println!(
        "{:>5} {:>9} {:>10} {:>9}",
        "k", "documents", "confirmed", "rejected"
    );
    for d in 0..c.nearest.len() {
        if d as u32 > c.max_k && d != c.nearest.len() - 1 {
            continue;
        }
        let label = if d == c.nearest.len() - 1 {
            format!(">{}", c.max_k)
        } else {
            d.to_string()
        };
        println!(
            "{label:>5} {:>9} {:>10} {:>9}",
            c.nearest[d], c.nearest_confirmed[d], c.nearest_rejected[d]
        );
    }
    println!(
        "random pairs: {}, mean distance {:.1}; within 3: {}, within 7: {}, within 11: {}",
        c.random_pair_count(),
        c.random_mean(),
        c.random_within(3),
        c.random_within(7),
        c.random_within(11)
    );
    match (c.k_for_share(0.9), c.k_for_share(0.99)) {
        (Some(a90), Some(a99)) => {
            println!("90% of the confirmed near-copies are within k={a90}, 99% within k={a99}")
        }
        _ => println!("no confirmed near-copies in the sample"),
    }
    println!("plot: {}", a.plot.display());
    Ok(c.sampled > 0)
}
