//! Why two documents matched, and how distances spread in a store: pure
//! computations behind `simdb query --explain` and `simdb calibrate`.

use serde::Serialize;

use crate::fingerprint::MAX_EXACT_K;

/// Why a hit matched: its distance, its sketch similarity, and the
/// weighted terms the two sides share and do not share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub id: String,
    pub distance: u32,
    /// Estimated Jaccard similarity of the two sides' shingles (see
    /// `fingerprint::sketch`), when both sides have a sketch.
    pub similarity: Option<f64>,
    /// The document's stored top terms that the query also has, with the
    /// query's weight, heaviest first.
    pub shared: Vec<(String, f64)>,
    /// The document's stored top terms the query does not have (exact when
    /// the query is a text: all its terms are known).
    pub only_document: Vec<String>,
    /// The query's heaviest terms that are not among the document's stored
    /// top terms (the document may still contain them with less weight).
    pub only_query: Vec<(String, f64)>,
    /// Whether the document's record has terms at all (imported
    /// fingerprints do not).
    pub document_terms_known: bool,
}

/// Explains a hit from the query's weighted terms (`query_terms`, heaviest
/// first; all of a text's terms, or a stored document's top terms) and the
/// document's stored top terms (heaviest first).
pub fn explain(
    id: &str,
    distance: u32,
    similarity: Option<f64>,
    query_terms: &[(String, f64)],
    document_top: &[String],
    show: usize,
) -> Explanation {
    let q: std::collections::HashMap<&str, f64> =
        query_terms.iter().map(|(t, w)| (t.as_str(), *w)).collect();
    let mut shared: Vec<(String, f64)> = document_top
        .iter()
        .filter_map(|t| q.get(t.as_str()).map(|w| (t.clone(), *w)))
        .collect();
    shared.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let only_document = document_top
        .iter()
        .filter(|t| !q.contains_key(t.as_str()))
        .cloned()
        .collect();
    let only_query = query_terms
        .iter()
        .filter(|(t, _)| !document_top.contains(t))
        .take(show)
        .cloned()
        .collect();
    Explanation {
        id: id.to_string(),
        distance,
        similarity,
        shared,
        only_document,
        only_query,
        document_terms_known: !document_top.is_empty(),
    }
}

/// Bins of [`Calibration::nearest_similarity`].
pub const SIMILARITY_BINS: usize = 20;

/// Where a store's documents lie from one another, from a sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Documents sampled.
    pub sampled: usize,
    /// Distance histogram (0..=64) of random pairs of sampled documents:
    /// what *unrelated* documents look like in this store.
    pub random_pairs: Vec<u64>,
    /// For each sampled document, the distance to its nearest other stored
    /// document, 0..=11; index 12 counts documents with none within 11.
    pub nearest: Vec<u64>,
    /// Of `nearest`, those confirmed by the sketches (similarity at least
    /// the threshold: textual near-copies) ...
    pub nearest_confirmed: Vec<u64>,
    /// ... and those the sketches reject (close fingerprints, different
    /// text: the false pairs a larger k lets in).
    pub nearest_rejected: Vec<u64>,
    /// Of `nearest` with two sketches, their similarity in 20 bins of
    /// 0.05 (bin `i`: `i / 20 <= s < (i + 1) / 20`, the last including
    /// 1.0): where the threshold sits among the nearest neighbours.
    pub nearest_similarity: Vec<u64>,
    /// The similarity threshold used.
    pub threshold: f64,
    /// Neighbours were searched up to this distance (<= 11); `nearest[12]`
    /// counts documents with none within it.
    pub max_k: u32,
}

impl Calibration {
    /// An empty calibration for `threshold`, neighbours searched up to
    /// `max_k`.
    pub fn new(threshold: f64, max_k: u32) -> Calibration {
        let near = MAX_EXACT_K as usize + 2;
        Calibration {
            sampled: 0,
            random_pairs: vec![0; 65],
            nearest: vec![0; near],
            nearest_confirmed: vec![0; near],
            nearest_rejected: vec![0; near],
            nearest_similarity: vec![0; SIMILARITY_BINS],
            threshold,
            max_k: max_k.min(MAX_EXACT_K),
        }
    }

    /// Records one sampled document's nearest neighbour: its distance
    /// (`None` = none within 11) and sketch similarity if known.
    pub fn add_nearest(&mut self, nearest: Option<(u32, Option<f64>)>) {
        self.sampled += 1;
        let none = MAX_EXACT_K as usize + 1;
        match nearest {
            None => self.nearest[none] += 1,
            Some((d, sim)) => {
                let d = (d as usize).min(none);
                self.nearest[d] += 1;
                if let Some(s) = sim {
                    let bin = ((s * SIMILARITY_BINS as f64) as usize).min(SIMILARITY_BINS - 1);
                    self.nearest_similarity[bin] += 1;
                }
                match sim {
                    Some(s) if s >= self.threshold => self.nearest_confirmed[d] += 1,
                    Some(_) => self.nearest_rejected[d] += 1,
                    None => {}
                }
            }
        }
    }

    /// Random pairs measured.
    pub fn random_pair_count(&self) -> u64 {
        self.random_pairs.iter().sum()
    }

    /// Mean distance of the random pairs (0 when there are none).
    pub fn random_mean(&self) -> f64 {
        let n = self.random_pair_count();
        if n == 0 {
            return 0.0;
        }
        self.random_pairs
            .iter()
            .enumerate()
            .map(|(d, c)| d as f64 * *c as f64)
            .sum::<f64>()
            / n as f64
    }

    /// Random pairs within `k` bits.
    pub fn random_within(&self, k: usize) -> u64 {
        self.random_pairs[..=k.min(self.random_pairs.len() - 1)]
            .iter()
            .sum()
    }

    /// The smallest k at which at least `share` of the sampled documents'
    /// confirmed nearest neighbours are found, if any are.
    pub fn k_for_share(&self, share: f64) -> Option<u32> {
        let total: u64 = self
            .nearest_confirmed
            .iter()
            .take(MAX_EXACT_K as usize + 1)
            .sum();
        if total == 0 {
            return None;
        }
        let mut acc = 0;
        for (k, c) in self.nearest_confirmed.iter().enumerate() {
            acc += c;
            if acc as f64 >= share * total as f64 {
                return Some(k as u32);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanation_splits_terms() {
        let q = vec![
            ("北京".to_string(), 9.0),
            ("会议".to_string(), 5.0),
            ("召开".to_string(), 2.0),
        ];
        let doc = vec!["会议".to_string(), "上海".to_string(), "北京".to_string()];
        let e = explain("d", 2, Some(0.8), &q, &doc, 8);
        assert_eq!(
            e.shared,
            vec![("北京".to_string(), 9.0), ("会议".to_string(), 5.0)]
        );
        assert_eq!(e.only_document, vec!["上海".to_string()]);
        assert_eq!(e.only_query, vec![("召开".to_string(), 2.0)]);
        assert!(e.document_terms_known);
        let bare = explain("d", 0, None, &q, &[], 2);
        assert!(!bare.document_terms_known && bare.shared.is_empty());
        assert_eq!(bare.only_query.len(), 2);
    }

    #[test]
    fn calibration_counts() {
        let mut c = Calibration::new(0.3, 11);
        c.add_nearest(Some((0, Some(0.9))));
        c.add_nearest(Some((2, Some(0.1))));
        c.add_nearest(Some((5, Some(0.5))));
        c.add_nearest(Some((40, None)));
        c.add_nearest(None);
        assert_eq!(c.sampled, 5);
        assert_eq!(c.nearest[0] + c.nearest[2] + c.nearest[5], 3);
        assert_eq!(c.nearest[12], 2);
        assert_eq!(c.nearest_rejected[2], 1);
        assert_eq!(c.k_for_share(0.5), Some(0));
        assert_eq!(c.k_for_share(1.0), Some(5));
        // Similarities in bins of 0.05, 1.0 in the last.
        c.add_nearest(Some((1, Some(1.0))));
        let mut want = vec![0; SIMILARITY_BINS];
        (want[18], want[2], want[10], want[19]) = (1, 1, 1, 1);
        assert_eq!(c.nearest_similarity, want);
    }
}
