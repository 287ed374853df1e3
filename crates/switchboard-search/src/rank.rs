//! Query evaluation: query term weights, BM25F over tools, optional feedback expansion, server
//! evidence, the caller's filter, and ordering with a caller-supplied tie-break.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::index::{Postings, SearchIndex, TermId};

/// A ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The key the document was indexed under.
    pub key: String,
    /// Higher is better; comparable only within one result list.
    pub score: f64,
}

type QueryWeights = HashMap<TermId, f32>;

/// One clause of a task, scored on its own.
struct ClauseScores {
    weights: QueryWeights,
    scores: Vec<f32>,
}

/// Longest query read, in bytes; the rest of a longer one (pasted blobs) is ignored.
const MAX_QUERY_BYTES: usize = 4096;

impl SearchIndex {
    /// The best `limit` tools for `query` among those whose key passes `filter`, best first.
    /// Equal scores keep index order.
    pub fn search(&self, query: &str, limit: usize, filter: impl Fn(&str) -> bool) -> Vec<Hit> {
        self.search_with(query, limit, filter, |_| 0.0)
    }

    /// Like [`SearchIndex::search`], with equal scores ordered by `tie_break` (higher first),
    /// e.g. how well a tool's latency fits the caller's budget.
    pub fn search_with(
        &self,
        query: &str,
        limit: usize,
        filter: impl Fn(&str) -> bool,
        tie_break: impl Fn(&str) -> f64,
    ) -> Vec<Hit> {
        if limit == 0 || self.tools.is_empty() {
            return Vec::new();
        }
        let query = crate::paths::rewrite_locations(truncate(query, MAX_QUERY_BYTES));
        // Tokenize each clause once; the whole task is the union of its clauses' terms.
        let clause_terms: Vec<Vec<String>> = crate::clauses::clauses(&query)
            .into_iter()
            .map(|clause| {
                let terms = self.tokenizer.terms(clause);
                if self.config.phrase_weight > 0.0 {
                    crate::phrases::with_phrases(terms)
                } else {
                    terms
                }
            })
            .filter(|terms| !terms.is_empty())
            .collect();
        let mut weights = self.query_weights(clause_terms.iter().flatten());
        if weights.is_empty() {
            return Vec::new();
        }
        let mut scores = accumulate(&self.tool_postings, &weights, self.tools.len());
        if let Some(feedback) = self.config.feedback {
            self.expand_with_feedback(&mut weights, &scores, &filter, feedback);
            scores = accumulate(&self.tool_postings, &weights, self.tools.len());
        }
        // Each clause is scored once; clause evidence and fusion both read it.
        let clauses = if clause_terms.len() > 1 {
            self.score_clauses(&clause_terms)
        } else {
            Vec::new()
        };
        let whole = self.with_clause_evidence(scores, &clauses);
        let mut combined = self.with_server_evidence(&whole, &weights);
        if let Some(k) = self.config.fusion_k
            && !clauses.is_empty()
        {
            combined = self.fused(&combined, &clauses, k, &filter);
        }
        let mut ranked: Vec<(f64, usize)> = combined
            .iter()
            .enumerate()
            .filter(|(slot, score)| **score > 0.0 && filter(&self.tools[*slot].key))
            .map(|(slot, score)| (f64::from(*score), slot))
            .collect();
        keep_best(&mut ranked, limit, |left, right| {
            right.0.total_cmp(&left.0).then_with(|| {
                let left_key = &self.tools[left.1].key;
                let right_key = &self.tools[right.1].key;
                tie_break(right_key)
                    .total_cmp(&tie_break(left_key))
                    .then(left.1.cmp(&right.1))
            })
        });
        ranked
            .into_iter()
            .map(|(score, slot)| Hit {
                key: self.tools[slot].key.clone(),
                score,
            })
            .collect()
    }

    /// Distinct query terms with saturated counts, phrases at `phrase_weight`, plus concept-map
    /// expansions.
    fn query_weights<'a>(&self, terms: impl IntoIterator<Item = &'a String>) -> QueryWeights {
        let mut counts: HashMap<&str, f32> = HashMap::new();
        for term in terms {
            *counts.entry(term.as_str()).or_insert(0.0) += 1.0;
        }
        let k3 = self.config.query_k3;
        let mut weights = QueryWeights::new();
        let mut expansions = Vec::new();
        for (term, count) in &counts {
            let mut weight = if k3 > 0.0 {
                count * (k3 + 1.0) / (k3 + count)
            } else {
                1.0
            };
            if crate::phrases::is_phrase(term) {
                weight *= self.config.phrase_weight;
            }
            if let Some(id) = self.vocabulary.get(*term) {
                weights.insert(*id, weight);
            }
            if self.config.concept_weight > 0.0 {
                for related in self.concepts.related(term) {
                    expansions.push((*related, weight * self.config.concept_weight));
                }
            }
        }
        for (id, weight) in expansions {
            let entry = weights.entry(id).or_insert(0.0);
            *entry = entry.max(weight);
        }
        weights
    }

    fn expand_with_feedback(
        &self,
        weights: &mut QueryWeights,
        scores: &[f32],
        filter: &impl Fn(&str) -> bool,
        feedback: crate::config::Feedback,
    ) {
        let mut top: Vec<(f32, usize)> = scores
            .iter()
            .enumerate()
            .filter(|(slot, score)| **score > 0.0 && filter(&self.tools[*slot].key))
            .map(|(slot, score)| (*score, slot))
            .collect();
        keep_best(&mut top, feedback.documents, |left, right| {
            right.0.total_cmp(&left.0).then(left.1.cmp(&right.1))
        });
        let Some(best) = top.first().map(|(score, _)| *score) else {
            return;
        };
        let mut candidates: HashMap<TermId, f32> = HashMap::new();
        for (score, slot) in &top {
            for (term, weight) in &self.tools[*slot].terms {
                let idf = self.tool_postings.idf[*term as usize];
                *candidates.entry(*term).or_insert(0.0) += score / best * weight * idf;
            }
        }
        let mut ordered: Vec<(TermId, f32)> = candidates
            .into_iter()
            .filter(|(term, _)| !weights.contains_key(term))
            .collect();
        ordered
            .sort_unstable_by(|left, right| right.1.total_cmp(&left.1).then(left.0.cmp(&right.0)));
        ordered.truncate(feedback.terms);
        let Some(strongest) = ordered.first().map(|(_, weight)| *weight) else {
            return;
        };
        for (term, weight) in ordered {
            weights.insert(term, feedback.weight * weight / strongest);
        }
    }

    /// Each clause's query weights and tool scores, for clauses with a known term.
    fn score_clauses(&self, clause_terms: &[Vec<String>]) -> Vec<ClauseScores> {
        clause_terms
            .iter()
            .map(|terms| self.query_weights(terms))
            .filter(|weights| !weights.is_empty())
            .map(|weights| {
                let scores = accumulate(&self.tool_postings, &weights, self.tools.len());
                ClauseScores { weights, scores }
            })
            .collect()
    }

    /// Reciprocal rank fusion of the whole-task ranking (`whole`) with each clause's ranking.
    /// Only the top of each list matters, so each list is cut at a depth of 50.
    fn fused(
        &self,
        whole: &[f32],
        clauses: &[ClauseScores],
        k: f32,
        filter: &impl Fn(&str) -> bool,
    ) -> Vec<f32> {
        const DEPTH: usize = 50;
        let mut fused = vec![0.0f32; whole.len()];
        let mut add = |scores: &[f32]| {
            let mut ranked: Vec<(f32, usize)> = scores
                .iter()
                .enumerate()
                .filter(|(slot, score)| **score > 0.0 && filter(&self.tools[*slot].key))
                .map(|(slot, score)| (*score, slot))
                .collect();
            keep_best(&mut ranked, DEPTH, |a, b| {
                b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
            });
            for (rank, (_, slot)) in ranked.iter().enumerate() {
                fused[*slot] += 1.0 / (k + rank as f32 + 1.0);
            }
        };
        add(whole);
        for clause in clauses {
            add(&self.with_server_evidence(&clause.scores, &clause.weights));
        }
        // Keep the whole-task score as a small tie-breaker among equal fused scores. A tool
        // below every ranking's top `DEPTH` still matched: it follows all fused ones (a fused
        // score is at least 1/(k + DEPTH)), in whole-task order, so deep result lists stay
        // complete.
        let best = whole
            .iter()
            .copied()
            .fold(0.0, f32::max)
            .max(f32::MIN_POSITIVE);
        fused
            .iter()
            .zip(whole)
            .map(|(f, w)| f + 1e-4 * w / best)
            .collect()
    }

    /// Whole-task score normalised by the best tool, plus `clause_weight` times the tool's best
    /// normalised clause score.
    fn with_clause_evidence(&self, scores: Vec<f32>, clauses: &[ClauseScores]) -> Vec<f32> {
        let weight = self.config.clause_weight;
        if weight <= 0.0 || clauses.len() < 2 {
            return scores;
        }
        let Some(best) = maximum(&scores) else {
            return scores;
        };
        let mut best_clause = vec![0.0f32; scores.len()];
        for clause in clauses {
            let Some(clause_best) = maximum(&clause.scores) else {
                continue;
            };
            for (kept, score) in best_clause.iter_mut().zip(&clause.scores) {
                *kept = kept.max(score / clause_best);
            }
        }
        scores
            .iter()
            .zip(best_clause)
            .map(|(score, clause)| score / best + weight * clause)
            .collect()
    }

    /// Tool score normalised by the best tool, plus the server's normalised score times
    /// `server_evidence`.
    fn with_server_evidence(&self, scores: &[f32], weights: &QueryWeights) -> Vec<f32> {
        let lambda = self.config.server_evidence;
        if lambda <= 0.0 {
            return scores.to_vec();
        }
        let servers = accumulate(&self.server_postings, weights, self.server_count);
        let best_tool = scores.iter().copied().fold(0.0, f32::max);
        let best_server = servers.iter().copied().fold(0.0, f32::max);
        if best_tool <= 0.0 || best_server <= 0.0 {
            return scores.to_vec();
        }
        scores
            .iter()
            .zip(&self.tools)
            .map(|(score, tool)| {
                score / best_tool + lambda * servers[tool.server as usize] / best_server
            })
            .collect()
    }
}

/// `Σ_t w_q(t) · idf(t) · weight(t, d)` for every document.
fn accumulate(postings: &Postings, weights: &QueryWeights, documents: usize) -> Vec<f32> {
    let mut scores = vec![0.0f32; documents];
    // A fixed term order makes the float sums, and so the ranking, identical run to run.
    let mut ordered: Vec<(&TermId, &f32)> = weights.iter().collect();
    ordered.sort_unstable_by_key(|(term, _)| **term);
    for (term, query_weight) in ordered {
        let slot = *term as usize;
        let factor = query_weight * postings.idf[slot];
        for posting in &postings.lists[slot] {
            scores[posting.document as usize] += factor * posting.weight;
        }
    }
    scores
}

/// Cuts `items` to its first `count` in `order` (a total order), sorted. Selecting before
/// sorting keeps this linear in the number of matches: a long task can match most of a large
/// catalog, and only the top of it is ever read.
fn keep_best<T>(items: &mut Vec<T>, count: usize, mut order: impl FnMut(&T, &T) -> Ordering) {
    if count == 0 {
        items.clear();
        return;
    }
    if items.len() > count {
        items.select_nth_unstable_by(count - 1, &mut order);
        items.truncate(count);
    }
    items.sort_unstable_by(order);
}

/// The largest score, if any is positive.
fn maximum(scores: &[f32]) -> Option<f32> {
    let best = scores.iter().copied().fold(0.0, f32::max);
    (best > 0.0).then_some(best)
}

/// `text` cut to at most `limit` bytes, at a character boundary.
fn truncate(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_best_is_the_head_of_a_full_sort() {
        let scores: Vec<(f32, usize)> = (0..200)
            .map(|slot| (((slot * 7919) % 101) as f32 / 10.0, slot))
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        for count in [0, 1, 5, 50, 199, 200, 500] {
            let mut sorted = scores.clone();
            sorted.sort_unstable_by(order);
            sorted.truncate(count);
            let mut kept = scores.clone();
            keep_best(&mut kept, count, order);
            assert_eq!(kept, sorted, "count {count}");
        }
    }
}
