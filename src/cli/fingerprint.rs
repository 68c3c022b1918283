//! `simdb fingerprint`.

use super::prelude::*;

pub(super) fn fingerprint(a: FingerprintArgs) -> Result<bool> {
    let fp = match &a.db {
        Some(db) => Db::options().read_only().open(db)?.fingerprinter().clone(),
        None => Fingerprinter::new(recipe(&a.recipe)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let one = |text: &str,
               page: Option<&simdb::web::Page>,
               out: &mut BufWriter<io::StdoutLock>|
     -> Result<()> {
        let q = fp.fingerprint(text)?;
        if a.json {
            let mut v = json!({"fingerprint": q.to_string()});
            if let Some(p) = page {
                v["page"] = json!({
                    "title": p.title,
                    "found": p.found.name(),
                    "encoding": p.encoding,
                    "text": text,
                });
            }
            if a.explain {
                v["features"] = serde_json::to_value(fp.features(text))?;
            }
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "{q}")?;
            if a.explain {
                for f in fp.features(text) {
                    writeln!(out, "  {:>10.4}  {}", f.weight, f.name)?;
                }
            }
        }
        Ok(())
    };
    if let Some(t) = &a.text {
        one(t, None, &mut out)?;
    } else if let (Some(f), true) = (&a.file, a.html) {
        let page = simdb::web::page(&super::read_bytes(f)?, None);
        one(&page.text(), Some(&page), &mut out)?;
    } else if let Some(f) = &a.file {
        one(&read_text(f)?, None, &mut out)?;
    } else {
        let stdin = io::stdin();
        let mut bad = 0usize;
        for (n, line) in stdin.lock().split(b'\n').enumerate() {
            let line = line.context("reading standard input")?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let res = ingest::read::parse_json_doc(&line)
                .map_err(anyhow::Error::msg)
                .and_then(|(id, c)| Ok((id, c.fingerprint(&fp)?)));
            match res {
                Ok((id, q)) => {
                    if a.json {
                        writeln!(out, "{}", json!({"id": id, "fingerprint": q.to_string()}))?
                    } else {
                        writeln!(out, "{q}\t{id}")?
                    }
                }
                Err(e) => {
                    bad += 1;
                    eprintln!("simdb: -:{}: {e:#}", n + 1);
                }
            }
        }
        out.flush()?;
        if bad > 0 {
            bail!("{bad} line(s) of standard input could not be fingerprinted");
        }
    }
    out.flush()?;
    Ok(true)
}
