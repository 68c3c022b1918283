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
    if reads_only(&args.command) {
        // A closed pipe (`simdb stats … | head`) ends a command that only
        // prints, as it ends other Unix tools, instead of a panic in a
        // print. Commands that write keep it ignored, so that a closed
        // pipe stops them between batches, with an error they handle.
        #[cfg(unix)]
        // SAFETY: at the start of main, before any thread exists.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
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

/// Whether a command only reads a store (or nothing) and prints.
fn reads_only(c: &cli::args::Command) -> bool {
    use cli::args::Command as C;
    matches!(
        c,
        C::Query(_)
            | C::Fingerprint(_)
            | C::Get(_)
            | C::Stats(_)
            | C::Calibrate(_)
            | C::Clusters(_)
            | C::Pairs(_)
            | C::Completions(_)
    ) || matches!(c, C::Verify(v) if !v.repair)
}
