//! The scale tool at N = 1M, when asked:
//! `cargo test --release --test tests scale:: -- --ignored` (about 10 s warm).
//! It asserts recall 1.0 on planted neighbours and equality with brute force.

#[test]
#[ignore = "scale run; ask for it with --ignored"]
fn scale_tool_at_one_million() {
    let simdb = std::path::PathBuf::from(env!("CARGO_BIN_EXE_simdb"));
    let tool = simdb.parent().unwrap().join("examples").join("scale");
    assert!(
        tool.exists(),
        "build the example first: cargo build --release --examples"
    );
    let out = std::process::Command::new(tool)
        .args(["--n", "1000000", "--queries", "2000", "--brute", "50"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("= 1.0000"), "{text}");
    assert!(text.contains(", 0 differ"), "{text}");
}
