//! `simdb serve`.

use super::prelude::*;

pub(super) fn serve(a: ServeArgs) -> Result<bool> {
    let mut config = simdb::server::Config::new(a.addr);
    if let Some(t) = a.threads {
        config.threads = t;
    }
    config.tokens = match a.token_file.as_deref() {
        Some(f) => simdb::server::read_tokens(f)?,
        None => Vec::new(),
    };
    config.max_body_bytes = mib("--max-body-mb", a.max_body_mb)?;
    config.body_timeout = std::time::Duration::from_secs(a.body_timeout);
    config.max_batch = a.max_batch;
    config.max_hits = a.max_hits;
    config.max_connections = a.max_connections;
    config.header_timeout = std::time::Duration::from_secs(a.header_timeout);
    config.shutdown_grace = std::time::Duration::from_secs(a.shutdown_grace);
    config.max_inflight_body_bytes = mib("--max-inflight-mb", a.max_inflight_mb)?;
    config.allowed_hosts = a.allow_host.clone();
    config.read_only = a.read_only;
    config.refresh = std::time::Duration::from_secs(a.refresh);
    config.max_long_reads = a
        .max_long_reads
        .unwrap_or_else(|| simdb::server::default_long_reads(config.threads));
    config.long_read_timeout = std::time::Duration::from_secs(a.long_read_timeout);
    // Refuse an exposed address before opening the store.
    config.check()?;
    // The store's share of the descriptors, so connections cannot starve
    // it (serve splits them the same way).
    let descriptors = simdb::server::Descriptors::of_process(config.max_connections)?;
    let access = if a.read_only {
        simdb::Access::ReadOnly
    } else {
        simdb::Access::ReadWrite
    };
    let db = Db::options()
        .access(access)
        .tuning(simdb::Tuning {
            block_cache_bytes: mib("--cache-mb", a.cache_mb)?,
            max_open_files: u32::try_from(descriptors.store_files).unwrap_or(u32::MAX),
            // A replica holds every table file open: the writer's
            // compactions cannot remove one from under its view.
            open_all_files: a.read_only,
            ..Default::default()
        })
        .open(&a.db)?;
    let role = if a.read_only {
        format!(", read-only replica refreshed every {} s", a.refresh)
    } else {
        String::new()
    };
    let auth = if !config.tokens.is_empty() {
        "bearer token required"
    } else {
        "no token"
    };
    let threads = config.threads;
    simdb::server::serve(db, config, |addr| {
        // The one line a supervisor (or a test) waits for.
        println!(
            "simdb: serving {} on http://{addr} ({threads} threads, {auth}, {} connections{role})",
            a.db.display(),
            descriptors.connections
        );
        let _ = io::stdout().flush();
    })?;
    if a.read_only {
        eprintln!("simdb: stopped");
    } else {
        eprintln!("simdb: stopped; every acknowledged write is stored");
    }
    Ok(true)
}
