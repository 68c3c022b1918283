//! The `simdb` command-line tool. See `simdb --help`.

// As in the library: no unwrap or expect outside tests; each exception
// carries its reason.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

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
