//! One fact in one place (issue 38): each fact README.md, docs/ and the
//! `--help` texts state that has a constant is read back and compared with
//! that constant, so a constant that changes without the documentation
//! (or a sentence that drifts from the code) fails here. Every pattern must
//! match somewhere: a fact reworded out of reach of its pattern fails too.

use crate::common;

use regex::Regex;
use simdb::db::limits;

/// README.md and every file of docs/, with their names.
fn documents() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    for p in docs {
        let name = format!("docs/{}", p.file_name().unwrap().to_string_lossy());
        out.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    out
}

/// A `--help` text.
fn help(args: &[&str]) -> (String, String) {
    let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|s| s as _).collect();
    a.push(&"--help");
    let o = common::simdb(&a);
    assert!(o.status.success(), "simdb {args:?} --help");
    (
        format!("simdb {} --help", args.join(" ")),
        String::from_utf8(o.stdout).unwrap(),
    )
}

/// Text joined over line breaks and indentation, so a sentence wrapped
/// anywhere still matches.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A number as written: "10,000" and "10000" alike.
fn number(s: &str) -> u64 {
    s.replace([',', '_'], "").parse().unwrap()
}

/// Every match of `pattern` in `texts`: (where, captures as strings).
fn matches(texts: &[(String, String)], pattern: &str) -> Vec<(String, Vec<String>)> {
    let re = Regex::new(pattern).unwrap();
    let mut out = Vec::new();
    for (name, text) in texts {
        for c in re.captures_iter(&flat(text)) {
            let caps = c
                .iter()
                .skip(1)
                .map(|m| m.map_or(String::new(), |m| m.as_str().to_string()))
                .collect();
            out.push((name.clone(), caps));
        }
    }
    assert!(!out.is_empty(), "no text states /{pattern}/");
    out
}

/// Checks that every match of `pattern` captures `want` (numbers compared
/// as numbers).
fn states(texts: &[(String, String)], pattern: &str, want: &[u64]) {
    for (name, caps) in matches(texts, pattern) {
        let got: Vec<u64> = caps.iter().map(|c| number(c)).collect();
        assert_eq!(got, want, "{name}: /{pattern}/ states {caps:?}");
    }
}

/// English number words, as the format pages write a count.
fn words(n: usize) -> String {
    const ONES: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 10] = [
        "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    match n {
        0..20 => ONES[n].to_string(),
        _ if n.is_multiple_of(10) => TENS[n / 10].to_string(),
        _ => format!("{}-{}", TENS[n / 10], ONES[n % 10]),
    }
}

#[test]
fn the_format_version_and_what_migrate_accepts() {
    let docs = documents();
    let v = u64::from(simdb::FORMAT_VERSION);
    states(&docs, r"(?i)on-disk format \(version (\d+)", &[v]);
    states(
        &docs,
        r"(?i)on-disk format \(version \d+, record version (\d+)\)",
        &[u64::from(simdb::codec::RECORD_VERSION)],
    );
    states(&docs, r#""format_version" u32 big-endian = (\d+)"#, &[v]);
    let migrates = [u64::from(simdb::MIGRATABLE_FORMAT_VERSION), v - 1];
    let mut texts = docs.clone();
    texts.push(help(&["migrate"]));
    texts.push(help(&[]));
    states(&texts, r"older simdb \(formats (\d+) to (\d+)\)", &migrates);
    states(
        &texts,
        r"formats (\d+) to (\d+),? (?:are migrated|with a pointer to `simdb migrate`)",
        &migrates,
    );
    states(
        &texts,
        r"converts a store of formats (\d+) to (\d+)",
        &migrates,
    );
}

#[test]
fn the_column_families_by_number_and_name() {
    let docs = documents();
    let all = simdb::ALL_FAMILIES;
    for (name, caps) in matches(&docs, r"RocksDB directory with ([a-z-]+) column families") {
        assert_eq!(caps[0], words(all.len()), "{name}");
    }
    // The family tables: their first column names every family, `a`..`b`
    // spans included, and nothing else.
    let span = Regex::new(r"^`([a-z]+)(\d+)`\.\.`([a-z]+)(\d+)`").unwrap();
    let one = Regex::new(r"^`([a-z]+\d*)`").unwrap();
    let mut tables = 0;
    for (name, text) in &docs {
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if !line.starts_with("| family | key | value |") {
                continue;
            }
            tables += 1;
            let mut named: Vec<String> = Vec::new();
            for row in lines.by_ref().skip(1) {
                let Some(cell) = row.strip_prefix("| ") else {
                    break;
                };
                if let Some(c) = span.captures(cell) {
                    let (lo, hi): (usize, usize) = (c[2].parse().unwrap(), c[4].parse().unwrap());
                    named.extend((lo..=hi).map(|i| format!("{}{i}", &c[1])));
                } else if let Some(c) = one.captures(cell) {
                    named.push(c[1].to_string());
                }
            }
            let mut want: Vec<String> = all.iter().map(|s| s.to_string()).collect();
            want.sort();
            named.sort();
            assert_eq!(named, want, "{name}: the family table");
        }
    }
    assert!(
        tables >= 2,
        "README.md and docs/format.md each have the table"
    );
}

#[test]
fn the_defaults_and_limits_of_queries_and_writes() {
    let mut texts = documents();
    texts.push(help(&["query"]));
    states(
        &texts,
        r"`--limit` hits per query \((\d+) by default, at most ([\d,]+)\)",
        &[limits::DEFAULT_LIMIT as u64, limits::MAX_LIMIT as u64],
    );
    states(
        &texts,
        r"At most this many results per query, nearest first \(default (\d+), at most ([\d,]+)",
        &[limits::DEFAULT_LIMIT as u64, limits::MAX_LIMIT as u64],
    );
    let budget = simdb::index::DEFAULT_PROBE_BUDGET as u64;
    let bands = simdb::index::bands::BANDS as u64;
    states(
        &texts,
        r"`--probe-budget` buckets allow, (\d+) by default, and the (\d+) band buckets",
        &[budget, bands],
    );
    states(
        &texts,
        r"ranked probing over the four blocks \(default (\d+), and the (\d+) band buckets",
        &[budget, bands],
    );
    for (name, caps) in matches(&texts, r"`--min-similarity` \((0\.\d+) by default") {
        let got: f64 = caps[0].parse().unwrap();
        assert_eq!(got, simdb::db::DEFAULT_MIN_SIMILARITY, "{name}");
    }
    states(
        &texts,
        r"stops after ([\d,]+) candidates its sketch rejected",
        &[limits::QUERY_REJECTED as u64],
    );
    states(
        &texts,
        r"re-checked ([\d,]+) members per step",
        &[limits::SETTLE_STEP as u64],
    );
    states(
        &texts,
        r"commits in chunks of ([\d,]+) documents or (\d+) ms",
        &[
            limits::WRITE_CHUNK_DOCS as u64,
            limits::WRITE_CHUNK_TIME.as_millis() as u64,
        ],
    );
    states(
        &texts,
        r"Exact k <= (\d+)",
        &[u64::from(simdb::fingerprint::MAX_EXACT_K)],
    );
}

/// Every option of `simdb serve --help` that has a default is in the
/// README's service section as "`--option` (default", with that default.
#[test]
fn the_service_options_and_their_defaults() {
    let (_, text) = help(&["serve"]);
    // An option's first line (its description's next lines are indented
    // deeper).
    let option = Regex::new(r"^ {2,10}(?:-[a-zA-Z], )?(--[a-z][a-z-]*)").unwrap();
    let default = Regex::new(r"\[default: ([^\]]+)\]").unwrap();
    // Each option's whole description (it wraps over several lines).
    let mut options: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(c) = option.captures(line) {
            options.push((c[1].to_string(), line.to_string()));
        } else if let Some(last) = options.last_mut() {
            last.1.push(' ');
            last.1.push_str(line.trim());
        }
    }
    // The options' reference is docs/service.md ("Options").
    let service = documents()
        .into_iter()
        .find(|(name, _)| name == "docs/service.md")
        .unwrap();
    let readme = flat(&service.1);
    let mut checked = 0;
    for (opt, desc) in &options {
        let Some(d) = default.captures(desc) else {
            continue;
        };
        let want = d[1].replace(',', "");
        let stated =
            Regex::new(&format!(r"`{opt}(?: [A-Z:]+)?` \(([^;,)\s]+(?:,\d{{3}})*)")).unwrap();
        let Some(c) = stated.captures(&readme) else {
            panic!("docs/service.md does not state {opt}'s default ({want})");
        };
        assert_eq!(c[1].replace(',', ""), want, "docs/service.md: {opt}");
        checked += 1;
    }
    assert!(checked >= 10, "{checked} options with defaults");
}

/// `Db` is a small door (issue 38): at most 22 public methods on `Db`
/// itself, the other work on its handles (`clusters()`, `admin()`,
/// `maintenance()`), and no constructor besides the builder
/// (`Db::options()`). Read from the source of `src/db/`, every
/// `impl Db` block.
#[test]
fn db_is_a_small_door() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db");
    let mut methods = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let mut inside = false;
        for line in text.lines() {
            if line.starts_with("impl") {
                inside = line == "impl Db {";
            } else if inside && line.starts_with("    pub fn ") {
                let name: String = line["    pub fn ".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                methods.push((name, line.trim().to_string()));
            }
        }
    }
    methods.sort();
    let names: Vec<&str> = methods.iter().map(|m| m.0.as_str()).collect();
    assert!(
        methods.len() <= 22,
        "Db has {} public methods: {names:?}",
        methods.len()
    );
    for (name, line) in &methods {
        let returns_db = line.contains("-> Db") || line.contains("Result<Db>");
        assert!(
            !returns_db || name == "options",
            "{name} constructs a Db: stores are opened and created through Db::options()"
        );
    }
    assert!(names.contains(&"options"), "{names:?}");
}

/// The README is a reference, not the manual (issue 38): at most 800
/// lines; the detail is in docs/, dated figures beside their tools.
#[test]
fn the_readme_stays_short() {
    let (_, readme) = &documents()[0];
    let lines = readme.lines().count();
    assert!(lines <= 800, "README.md has {lines} lines (at most 800)");
}
