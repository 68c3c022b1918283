//! `simdb get`.

use super::prelude::*;

pub(super) fn get(a: GetArgs) -> Result<bool> {
    let db = Db::options().read_only().open(&a.db)?;
    note_freshness(&db);
    let Some(d) = db.document(&a.id)? else {
        eprintln!("simdb: no document with id {:?}", a.id);
        return Ok(false);
    };
    if a.json {
        println!("{}", serde_json::to_string(&d)?);
    } else {
        println!("id           {}", a.id);
        println!("fingerprint  {}", d.fingerprint);
        println!("content_hash {}", d.content_hash);
        println!("length       {}", d.length);
        println!("ingested_at  {}", d.ingested_at);
        if let Some(t) = d.dated {
            println!("dated        {t}");
        }
        println!("source       {}", d.source);
        println!(
            "terms        {}{}",
            d.terms,
            if d.short { " (short)" } else { "" }
        );
        println!("top terms    {}", d.top_terms.join(", "));
        println!(
            "sketch       {}",
            if d.sketch.is_some() {
                "yes"
            } else {
                "none (no text seen)"
            }
        );
        if let Some(p) = d.priority {
            println!("priority     {p}");
        }
        if let Some(k) = d.kept {
            println!("kept         by decision {k} (simdb decide keep)");
        }
        let cluster = &d.cluster;
        if cluster.size == 1 {
            println!("cluster      {} (alone)", cluster.id);
        } else {
            println!(
                "cluster      {}: {} documents, representative {}{}",
                cluster.id,
                cluster.size,
                cluster.representative,
                if cluster.representative == a.id {
                    " (this one)"
                } else {
                    ""
                }
            );
        }
        if let Some(t) = &d.text {
            println!("text         {t}");
        }
    }
    Ok(true)
}
