//! Ranking parameters. [`SearchConfig::default`] is the measured method; the fields are public
//! so benchmarks can switch parts off and show what each part is worth.

use crate::fields::Field;
use crate::tokenize::Normalisation;

/// Weight and length normalisation of one field in BM25F.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeight {
    pub weight: f32,
    /// 0 = no length normalisation, 1 = full.
    pub b: f32,
}

/// How a search ranks tools.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchConfig {
    pub normalisation: Normalisation,
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// Per field, in [`Field::ALL`] order.
    pub fields: [FieldWeight; Field::COUNT],
    /// Saturation of repeated query terms: a term said three times counts
    /// `3(k3+1)/(k3+3)` times. 0 counts each distinct term once.
    pub query_k3: f32,
    /// Weight of server-level evidence (a server's tools matched as one document) added to a
    /// tool's normalised score; tasks tend to use several tools of one server. 0 = off.
    pub server_evidence: f32,
    /// Weight of terms added from the concept map relative to the user's own terms. 0 = off.
    pub concept_weight: f32,
    /// Weight of clause-level evidence: a long task is split into clauses (sentences, commas,
    /// "and"/"then"), each clause is scored on its own, and a tool gets its best clause score
    /// (normalised per clause) times this weight on top of its whole-task score. Multi-step tasks
    /// need one tool per step; this keeps one strong step from drowning the others. 0 = off.
    pub clause_weight: f32,
    /// Pseudo-relevance feedback: expand the query with terms of the top documents.
    pub feedback: Option<Feedback>,
    /// Weight of phrase evidence (pairs of adjacent terms in a tool's name or description that
    /// also stand next to each other in a clause of the query) relative to a single word.
    /// 0 = off: pairs are then neither indexed nor queried.
    pub phrase_weight: f32,
    /// Reciprocal rank fusion of the whole-task ranking with one ranking per clause:
    /// `Σ 1 / (k + rank)`, so the best tools of every step of a task come up, not only the
    /// best tools of its strongest step. `None` = off.
    pub fusion_k: Option<f32>,
}

/// RM3-style pseudo-relevance feedback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// How many top documents are taken as relevant.
    pub documents: usize,
    /// How many expansion terms are added.
    pub terms: usize,
    /// Weight of the expansion terms relative to the original query.
    pub weight: f32,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            normalisation: Normalisation::Stemmed,
            k1: 1.2,
            fields: [
                FieldWeight {
                    weight: 3.0,
                    b: 0.5,
                }, // name
                FieldWeight {
                    weight: 1.0,
                    b: 0.75,
                }, // description
                FieldWeight {
                    weight: 0.5,
                    b: 0.75,
                }, // parameters
                FieldWeight {
                    weight: 1.5,
                    b: 0.3,
                }, // server
                FieldWeight {
                    weight: 0.5,
                    b: 0.3,
                }, // category
            ],
            query_k3: 0.0,
            server_evidence: 0.5,
            concept_weight: 0.5,
            clause_weight: 1.0,
            phrase_weight: 0.5,
            feedback: None,
            fusion_k: Some(FUSION_K),
        }
    }
}

/// The measured fusion constant.
pub const FUSION_K: f32 = 2.0;

impl SearchConfig {
    pub fn weight(&self, field: Field) -> FieldWeight {
        self.fields[field.index()]
    }
}
