//! The crash tool with a few kills (docs/operations.md quotes a 100-kill run):
//! SIGKILL mid-ingest loses no acknowledged document, verify is clean after
//! every kill, and re-running the ingest converges.

#[test]
fn sigkill_during_ingest_loses_nothing_acknowledged() {
    let simdb = std::path::PathBuf::from(env!("CARGO_BIN_EXE_simdb"));
    let tool = simdb.parent().unwrap().join("examples").join("crash");
    assert!(
        tool.exists(),
        "examples are built by cargo test: {}",
        tool.display()
    );
    let out = std::process::Command::new(tool)
        .args(["--runs", "4", "--docs", "1500", "--seed", "7", "--simdb"])
        .arg(&simdb)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("0 lost, 0 inconsistent, 0 diverged"),
        "{text}"
    );
}
