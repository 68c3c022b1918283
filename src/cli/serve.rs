//! `simdb serve`.

use super::prelude::*;

pub(super) fn serve(a: ServeArgs) -> Result<bool> {
    let mut config = simdb::server::Config::new(a.addr);
    if let Some(t) = a.threads {
        config.threads = t;
    }
    config.token = a
        .token_file
        .as_deref()
        .map(simdb::server::read_token)
        .transpose()?;
    config.max_body_bytes = mib("--max-body-mb", a.max_body_mb)?;
    config.body_timeout = std::time::Duration::from_secs(a.body_timeout);
    config.max_batch = a.max_batch;
    config.max_hits = a.max_hits;
    // Refuse an exposed address before opening the store.
    config.check()?;
    let db = Db::open_tuned(
        &a.db,
        simdb::Access::ReadWrite,
        simdb::Tuning {
            block_cache_bytes: mib("--cache-mb", a.cache_mb)?,
            ..Default::default()
        },
    )?;
    let auth = if config.token.is_some() {
        "bearer token required"
    } else {
        "no token"
    };
    let threads = config.threads;
    simdb::server::serve(db, config, |addr| {
        // The one line a supervisor (or a test) waits for.
        println!(
            "simdb: serving {} on http://{addr} ({threads} threads, {auth})",
            a.db.display()
        );
        let _ = io::stdout().flush();
    })?;
    eprintln!("simdb: stopped; every acknowledged write is stored");
    Ok(true)
}
