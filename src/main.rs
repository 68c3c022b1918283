//! The `simdb` command-line tool. See `simdb --help`.

// As in the library: no unwrap or expect outside tests; each exception
// carries its reason.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc for the command: a write's in-order decisions and commit, on
/// one thread, allocate and free per candidate and per key, and glibc's
/// malloc was a quarter of that thread's time in an ingest into a 5M store
/// (docs/performance.md, "Allocator"). The library leaves the allocator to
/// its user (the Python package keeps the interpreter's).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(true) => ExitCode::from(0),
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // A closed pipe (`simdb query … | head`) is not an error.
            let broken_pipe = e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::from(0);
            }
            eprintln!("simdb: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
