//! The recipe of the keyword arguments of `Db.create` and the fingerprint functions.

use super::*;

// ---------------------------------------------------------------- recipe

/// A recipe from the keyword arguments of `Db.create` and `fingerprint`.
#[allow(clippy::too_many_arguments)]
pub(super) fn recipe(
    top_k: u32,
    shingle: u32,
    hmm: bool,
    tf: &str,
    keep_stop_words: bool,
    latin: &str,
    script: &str,
) -> PyResult<Recipe> {
    let mut r = Recipe::with(top_k, shingle, hmm);
    let invalid = |msg: String| Python::attach(|py| raise(py, "InvalidInput", msg));
    match script {
        "t2s" => {}
        "none" => r = r.without_script_folding(),
        other => {
            return Err(invalid(format!(
                "script must be 't2s' or 'none', not {other:?}"
            )))
        }
    }
    match simdb::fingerprint::LatinFeatures::parse(latin) {
        Some(l) => r = r.with_latin(l),
        None => {
            return Err(invalid(format!(
                "latin must be 'words' or 'char-N-grams' (N in 2..=8), not {latin:?}"
            )))
        }
    }
    match tf {
        "raw" => {}
        "log" => r = r.with_log_tf(),
        other => {
            return Err(Python::attach(|py| {
                raise(
                    py,
                    "InvalidInput",
                    format!("tf must be 'raw' or 'log', not {other:?}"),
                )
            }))
        }
    }
    if keep_stop_words {
        r = r.keeping_stop_words();
    }
    Ok(r)
}
