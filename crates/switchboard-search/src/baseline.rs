//! Plain BM25 (k1 = 1.2, b = 0.75) over one concatenated field — name, server, description and
//! parameter names — split into lowercase ASCII words with English stopwords dropped, no
//! stemming. It reproduces the catalog's reference point (its recall is slightly *above* the
//! published 0.31 / 0.36 at 5 / 10), so gains over it are not inflated by a weak baseline.

use std::collections::HashMap;

use crate::SearchDoc;
use crate::fields::parameter_names;
use crate::rank::Hit;
use crate::stopwords::is_stopword;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The baseline index.
#[derive(Debug)]
pub struct PlainBm25 {
    keys: Vec<String>,
    postings: HashMap<String, Vec<(usize, f32)>>,
    lengths: Vec<f32>,
    average_length: f32,
}

impl PlainBm25 {
    pub fn build(docs: impl IntoIterator<Item = SearchDoc>) -> Self {
        let mut keys = Vec::new();
        let mut lengths = Vec::new();
        let mut postings: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        for (slot, doc) in docs.into_iter().enumerate() {
            let text = format!(
                "{} {} {} {}",
                doc.name,
                doc.server,
                doc.definition.description.as_deref().unwrap_or_default(),
                parameter_names(&doc.definition.input_schema)
            );
            let terms = words(&text);
            lengths.push(terms.len() as f32);
            let mut counts: HashMap<String, f32> = HashMap::new();
            for term in terms {
                *counts.entry(term).or_insert(0.0) += 1.0;
            }
            for (term, count) in counts {
                postings.entry(term).or_default().push((slot, count));
            }
            keys.push(doc.key);
        }
        let average_length = lengths.iter().sum::<f32>() / lengths.len().max(1) as f32;
        Self {
            keys,
            postings,
            lengths,
            average_length: average_length.max(1.0),
        }
    }

    /// The best `limit` documents for `query`, best first; every query word counts once.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let documents = self.keys.len() as f32;
        let mut terms = words(query);
        terms.sort_unstable();
        terms.dedup();
        let mut scores = vec![0.0f32; self.keys.len()];
        for term in terms {
            let Some(list) = self.postings.get(&term) else {
                continue;
            };
            let frequency = list.len() as f32;
            let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln();
            for (slot, count) in list {
                let norm = 1.0 - B + B * self.lengths[*slot] / self.average_length;
                scores[*slot] += idf * count * (K1 + 1.0) / (count + K1 * norm);
            }
        }
        let mut ranked: Vec<(f32, usize)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, score)| *score > 0.0)
            .map(|(slot, score)| (score, slot))
            .collect();
        ranked
            .sort_unstable_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(&right.1)));
        ranked.truncate(limit);
        ranked
            .into_iter()
            .map(|(score, slot)| Hit {
                key: self.keys[slot].clone(),
                score: f64::from(score),
            })
            .collect()
    }
}

/// Lowercase ASCII letter-and-digit runs that are not stopwords.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty() && !is_stopword(word))
        .map(str::to_owned)
        .collect()
}
