//! Retrieval quality on a labelled task set (`queries.jsonl`: one task, the tools it needs).
//!
//! Tool-level recall@k: over all expected tools of all tasks, the fraction with at least one of
//! its `any_of` ids among the top k of one retrieval for the raw task text. Expected tools that
//! resolve to no catalog tool (empty `any_of`) are skipped. MRR: mean over expected tools of
//! 1/rank of the first matching id (0 when not in the top [`RANKED_DEPTH`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How deep each retrieval is ranked for MRR.
pub const RANKED_DEPTH: usize = 100;
/// The cut-offs reported.
pub const CUTOFFS: [usize; 4] = [1, 3, 5, 10];

/// One labelled task.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledQuery {
    pub qid: String,
    pub query: String,
    /// Each expected tool as the set of catalog ids that satisfy it.
    pub expected: Vec<Vec<String>>,
}

#[derive(Deserialize)]
struct RawQuery {
    qid: String,
    query: String,
    expected_tools: Vec<RawExpected>,
}

#[derive(Deserialize)]
struct RawExpected {
    any_of: Vec<String>,
}

/// Why a query set could not be read.
#[derive(Debug, thiserror::Error)]
pub enum QuerySetError {
    #[error("cannot read query set {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("query set {}, line {line}: {source}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
}

/// Reads a JSON-lines query set; blank lines are skipped.
pub fn load_queries(path: &Path) -> Result<Vec<LabelledQuery>, QuerySetError> {
    let text = std::fs::read_to_string(path).map_err(|source| QuerySetError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut queries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let raw: RawQuery = serde_json::from_str(line).map_err(|source| QuerySetError::Line {
            path: path.to_owned(),
            line: index + 1,
            source,
        })?;
        let expected: Vec<Vec<String>> = raw
            .expected_tools
            .into_iter()
            .map(|tool| tool.any_of)
            .filter(|any_of| !any_of.is_empty())
            .collect();
        if !expected.is_empty() {
            queries.push(LabelledQuery {
                qid: raw.qid,
                query: raw.query,
                expected,
            });
        }
    }
    Ok(queries)
}

/// Recall and MRR of one ranking method on one query set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallReport {
    pub queries: usize,
    pub expected_tools: usize,
    /// `(k, recall@k)` for each of [`CUTOFFS`].
    pub recall: Vec<(usize, f64)>,
    pub mrr: f64,
    /// Fraction of tasks with every expected tool in the top 10.
    pub tasks_complete_at_10: f64,
}

impl RecallReport {
    /// Recall at cut-off `k`, if it was measured.
    pub fn recall_at(&self, k: usize) -> Option<f64> {
        self.recall
            .iter()
            .find(|(cutoff, _)| *cutoff == k)
            .map(|(_, value)| *value)
    }
}

/// Runs `rank` (query text → ranked keys, best first) once per task and scores the result.
pub fn evaluate(queries: &[LabelledQuery], rank: impl Fn(&str) -> Vec<String>) -> RecallReport {
    let mut found_at = [0usize; CUTOFFS.len()];
    let mut reciprocal_sum = 0.0;
    let mut expected_tools = 0;
    let mut complete = 0;
    for query in queries {
        let ranked = rank(&query.query);
        let mut all_in_ten = true;
        for any_of in &query.expected {
            expected_tools += 1;
            let position = ranked
                .iter()
                .take(RANKED_DEPTH)
                .position(|key| any_of.contains(key));
            if let Some(position) = position {
                reciprocal_sum += 1.0 / (position + 1) as f64;
            }
            for (slot, cutoff) in CUTOFFS.iter().enumerate() {
                if position.is_some_and(|position| position < *cutoff) {
                    found_at[slot] += 1;
                }
            }
            all_in_ten &= position.is_some_and(|position| position < 10);
        }
        complete += usize::from(all_in_ten);
    }
    let share = |count: usize, total: usize| count as f64 / total.max(1) as f64;
    RecallReport {
        queries: queries.len(),
        expected_tools,
        recall: CUTOFFS
            .iter()
            .zip(found_at)
            .map(|(cutoff, found)| (*cutoff, share(found, expected_tools)))
            .collect(),
        mrr: reciprocal_sum / expected_tools.max(1) as f64,
        tasks_complete_at_10: share(complete, queries.len()),
    }
}
