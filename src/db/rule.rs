//! The rule a store's answers follow, named so that rows made for one run
//! can say which rule they were made under.
//!
//! What a duplicate check finds, what confirms it and where a document is
//! placed depend on the recipe (how a text becomes a fingerprint, a
//! sketch, parts and weak bits) and on constants of this build: the
//! check's bounds, the band and probe plans, the confirmation thresholds.
//! A [`Rule`] is both, and its [`Rule::digest`] (xxh3-64 of the rule's
//! JSON, [`Rule::to_json`]) is what the engines' rows carry (the `rule`
//! column of `simdb.ray.fingerprint`'s output) and an export states
//! (`simdb.rule` in its metadata): a run refuses rows stamped with another
//! digest, because its answers would not be the store's. A build that
//! changes a constant changes the digest (a golden test pins it).

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::limits;
use crate::fingerprint::{self, Fingerprint, Recipe};
use crate::index;

/// Version of the rule's JSON layout (a field added is a new version).
pub const RULE_VERSION: u32 = 1;

/// What the digest hashes before the JSON, so that no other xxh3 of a
/// JSON text is mistaken for one.
const DIGEST_DOMAIN: &[u8] = b"simdb rule\n";

/// The constants of this build that the answers depend on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleConstants {
    /// Bits of the exact search a write checks (and a representative
    /// confirms within without a sketch).
    pub k: u32,
    /// Largest exact `k` a query or an exact-k job takes.
    pub max_exact_k: u32,
    /// A check stops after this many confirmed documents...
    pub check_confirmed: usize,
    /// ...or this many examined.
    pub check_examined: usize,
    /// The ranked plan's probe budget and tolerance.
    pub probe_budget: usize,
    pub probe_tolerance: u32,
    /// A band candidate is examined within this many bits...
    pub band_distance: u32,
    /// ...and at most this many of them, nearest first.
    pub band_candidates: usize,
    /// The sketch's threshold of a new store (the recipe's sketch kind's).
    pub min_similarity: f64,
    /// Containment that confirms a short text in a long one, its floor of
    /// similarity, and the floor with the fine sketch.
    pub min_containment: f64,
    pub containment_floor: f64,
    pub refined_containment_floor: f64,
    /// Below this similarity the fine sketch decides.
    pub refine_below: f64,
    /// Parts per document the part index keys, and the weak bits kept.
    pub part_fingerprints: usize,
    pub weak_bits: usize,
    /// The content-defined parts: window, average, bounds in characters,
    /// parts per document and per query.
    pub parts_window: usize,
    pub parts_average: u64,
    pub parts_min_chars: usize,
    pub parts_max_chars: usize,
    pub parts: usize,
    pub query_parts: usize,
    /// Bins of the fine sketch.
    pub fine_bins: usize,
}

impl RuleConstants {
    /// This build's constants for stores of `recipe`.
    pub fn of(recipe: &Recipe) -> RuleConstants {
        let write = super::write::WritePolicy::default();
        RuleConstants {
            k: super::Query::new(Fingerprint(0)).k,
            max_exact_k: fingerprint::MAX_EXACT_K,
            check_confirmed: limits::CHECK_CONFIRMED,
            check_examined: limits::CHECK_EXAMINED,
            probe_budget: write.probe_budget,
            probe_tolerance: index::PROBE_TOLERANCE,
            band_distance: index::bands::DEFAULT_BAND_DISTANCE,
            band_candidates: index::bands::DEFAULT_BAND_CANDIDATES,
            min_similarity: super::recipe_min_similarity(recipe),
            min_containment: super::MIN_CONTAINMENT,
            containment_floor: super::CONTAINMENT_FLOOR,
            refined_containment_floor: super::REFINED_CONTAINMENT_FLOOR,
            refine_below: fingerprint::fine::REFINE_BELOW,
            part_fingerprints: index::parts::DEFAULT_PART_FINGERPRINTS,
            weak_bits: fingerprint::WEAK_BITS,
            parts_window: fingerprint::parts::WINDOW,
            parts_average: fingerprint::parts::AVERAGE,
            parts_min_chars: fingerprint::parts::MIN_CHARS,
            parts_max_chars: fingerprint::parts::MAX_CHARS,
            parts: fingerprint::parts::PARTS,
            query_parts: fingerprint::parts::QUERY_PARTS,
            fine_bins: fingerprint::fine::FINE_BINS,
        }
    }
}

/// The recipe and this build's constants: what a run's answers follow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    pub version: u32,
    pub recipe: Recipe,
    pub constants: RuleConstants,
}

impl Rule {
    /// This build's rule for `recipe`.
    pub fn of(recipe: &Recipe) -> Rule {
        Rule {
            version: RULE_VERSION,
            recipe: recipe.clone(),
            constants: RuleConstants::of(recipe),
        }
    }

    /// The rule as one line of JSON, fields in a fixed order.
    pub fn to_json(&self) -> String {
        // Only strings, numbers and booleans: cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// xxh3-64 of `"simdb rule\n"` and [`Rule::to_json`]'s bytes.
    pub fn digest(&self) -> u64 {
        let mut bytes = DIGEST_DOMAIN.to_vec();
        bytes.extend_from_slice(self.to_json().as_bytes());
        xxh3_64(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rule_is_pinned() {
        let rule = Rule::of(&Recipe::default());
        let json = rule.to_json();
        assert!(
            json.starts_with(r#"{"version":1,"recipe":{"tokenizer":"#),
            "{json}"
        );
        assert!(
            json.ends_with(
                r#""constants":{"k":3,"max_exact_k":11,"check_confirmed":16,"check_examined":256,"probe_budget":112,"probe_tolerance":3,"band_distance":14,"band_candidates":16,"min_similarity":0.6,"min_containment":0.75,"containment_floor":0.5,"refined_containment_floor":0.45,"refine_below":0.33,"part_fingerprints":8,"weak_bits":24,"parts_window":8,"parts_average":16,"parts_min_chars":8,"parts_max_chars":64,"parts":6,"query_parts":12,"fine_bins":384}}"#
            ),
            "{json}"
        );
        // A change of a constant or of the default recipe changes this:
        // rows stamped before are then refused, as they should be.
        assert_eq!(format!("{:016x}", rule.digest()), "9934d6204ab66e96");
    }

    #[test]
    fn the_digest_names_the_recipe() {
        let a = Rule::of(&Recipe::default());
        let b = Rule::of(&Recipe::with(0, 2, false));
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest(), Rule::of(&Recipe::default()).digest());
    }
}
