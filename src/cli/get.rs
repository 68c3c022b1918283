//! `simdb get`.

use super::prelude::*;

pub(super) fn get(a: GetArgs) -> Result<bool> {
    let db = Db::open_read_only(&a.db)?;
    note_freshness(&db);
    let Some(r) = db.get(&a.id)? else {
        eprintln!("simdb: no document with id {:?}", a.id);
        return Ok(false);
    };
    let cluster = db
        .cluster_of(&a.id)?
        .context("the document vanished while it was read")?;
    if a.json {
        println!(
            "{}",
            json!({"id": a.id, "fingerprint": r.fingerprint.to_string(), "content_hash": format!("{:016x}", r.content_hash),
                   "length": r.length, "ingested_at": r.ingested_at, "source": r.source,
                   "terms": r.terms, "short": r.is_short(), "top_terms": r.top_terms,
                   "sketch": r.sketch.map(|s| s.0.iter().map(|b| format!("{b:02x}")).collect::<String>()),
                   "ord": r.ord, "priority": r.priority.map(|p| p.value()),
                   "cluster": {"id": cluster.id, "size": cluster.size, "representative": cluster.representative}})
        );
    } else {
        println!("id           {}", a.id);
        println!("fingerprint  {}", r.fingerprint);
        println!("content_hash {:016x}", r.content_hash);
        println!("length       {}", r.length);
        println!("ingested_at  {}", r.ingested_at);
        println!("source       {}", r.source);
        println!(
            "terms        {}{}",
            r.terms,
            if r.is_short() { " (short)" } else { "" }
        );
        println!("top terms    {}", r.top_terms.join(", "));
        println!(
            "sketch       {}",
            if r.sketch.is_some() {
                "yes"
            } else {
                "none (no text seen)"
            }
        );
        if let Some(p) = r.priority {
            println!("priority     {}", p.value());
        }
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
    }
    Ok(true)
}
