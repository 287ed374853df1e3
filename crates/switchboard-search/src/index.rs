//! The inverted index: built once per catalog snapshot, queried many times.
//!
//! Every posting stores its finished BM25F term weight `tf~/(k1+tf~)` with
//! `tf~ = Σ_f w_f·tf_f / (1 − b_f + b_f·len_f/avglen_f)`, so a query only multiplies by the
//! query weight and IDF and adds. A second, server-level index treats all tools of a server as
//! one document: the server evidence of [`crate::rank`].

use std::collections::HashMap;

use crate::SearchDoc;
use crate::concepts::ConceptMap;
use crate::config::{FieldWeight, SearchConfig};
use crate::fields::{Field, field_texts};
use crate::phrases;
use crate::tokenize::Tokenizer;

pub(crate) type TermId = u32;

/// One document (tool or server) containing a term, with its precomputed weight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting {
    pub document: u32,
    pub weight: f32,
}

/// Postings and IDF of one collection (tools, or servers).
#[derive(Debug, Default)]
pub(crate) struct Postings {
    pub lists: Vec<Vec<Posting>>,
    pub idf: Vec<f32>,
}

/// A tool in the index.
#[derive(Debug)]
pub(crate) struct IndexedTool {
    pub key: String,
    pub server: u32,
    /// The tool's terms with their posting weights (the forward index, for feedback).
    pub terms: Vec<(TermId, f32)>,
}

/// A searchable index over tool documents. Cheap to query from many threads (`&self`).
#[derive(Debug)]
pub struct SearchIndex {
    pub(crate) config: SearchConfig,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) vocabulary: HashMap<String, TermId>,
    pub(crate) tools: Vec<IndexedTool>,
    pub(crate) tool_postings: Postings,
    pub(crate) server_postings: Postings,
    pub(crate) server_count: usize,
    pub(crate) concepts: ConceptMap,
}

/// Per-field term counts of one document.
type FieldCounts = HashMap<TermId, [f32; Field::COUNT]>;

impl SearchIndex {
    /// Builds the index with the default ranking.
    pub fn build(docs: impl IntoIterator<Item = SearchDoc>) -> Self {
        Self::build_with(docs, SearchConfig::default())
    }

    /// Builds the index with a given ranking configuration.
    pub fn build_with(docs: impl IntoIterator<Item = SearchDoc>, config: SearchConfig) -> Self {
        let tokenizer = Tokenizer::new(config.normalisation);
        let mut vocabulary = HashMap::new();
        let mut server_ids: HashMap<String, u32> = HashMap::new();
        let mut tool_counts = Vec::new();
        let mut tool_lengths = Vec::new();
        let mut keys = Vec::new();
        let mut tool_servers = Vec::new();
        let mut server_counts: Vec<FieldCounts> = Vec::new();
        let mut server_lengths: Vec<[f32; Field::COUNT]> = Vec::new();
        for doc in docs {
            let next_server = server_ids.len() as u32;
            let server = *server_ids.entry(doc.server.clone()).or_insert(next_server);
            if server == next_server {
                server_counts.push(HashMap::new());
                server_lengths.push([0.0; Field::COUNT]);
            }
            let mut counts = FieldCounts::new();
            let mut lengths = [0.0; Field::COUNT];
            for (field, text) in Field::ALL.into_iter().zip(field_texts(&doc)) {
                let slot = field.index();
                let mut count = |term: String| {
                    let next = vocabulary.len() as TermId;
                    let id = *vocabulary.entry(term).or_insert(next);
                    counts.entry(id).or_insert([0.0; Field::COUNT])[slot] += 1.0;
                };
                let mut previous: Option<String> = None;
                let pairs = config.phrase_weight > 0.0 && field.holds_phrases();
                tokenizer.each_term(&text, |term| {
                    if pairs && let Some(before) = previous.replace(term.clone()) {
                        count(phrases::phrase(&before, &term));
                    }
                    count(term);
                    // Field length counts words only, so pairs do not lengthen a field.
                    lengths[slot] += 1.0;
                });
            }
            let server_slot = server as usize;
            for (term, per_field) in &counts {
                let sum = server_counts[server_slot]
                    .entry(*term)
                    .or_insert([0.0; Field::COUNT]);
                for (total, count) in sum.iter_mut().zip(per_field) {
                    *total += count;
                }
            }
            for (total, length) in server_lengths[server_slot].iter_mut().zip(lengths) {
                *total += length;
            }
            tool_counts.push(counts);
            tool_lengths.push(lengths);
            keys.push(doc.key);
            tool_servers.push(server);
        }
        let vocabulary_size = vocabulary.len();
        let tool_postings = weigh(&config, &tool_counts, &tool_lengths, vocabulary_size);
        let server_postings = weigh(&config, &server_counts, &server_lengths, vocabulary_size);
        let mut tools: Vec<IndexedTool> = keys
            .into_iter()
            .zip(tool_servers)
            .map(|(key, server)| IndexedTool {
                key,
                server,
                terms: Vec::new(),
            })
            .collect();
        for (term, list) in tool_postings.lists.iter().enumerate() {
            for posting in list {
                tools[posting.document as usize]
                    .terms
                    .push((term as TermId, posting.weight));
            }
        }
        let concepts = ConceptMap::build(&tokenizer, &vocabulary);
        Self {
            server_count: server_ids.len(),
            config,
            tokenizer,
            vocabulary,
            tools,
            tool_postings,
            server_postings,
            concepts,
        }
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The ranking configuration the index was built with.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }
}

/// Turns per-field counts into postings with BM25F weights and Lucene-style IDF.
fn weigh(
    config: &SearchConfig,
    counts: &[FieldCounts],
    lengths: &[[f32; Field::COUNT]],
    vocabulary_size: usize,
) -> Postings {
    let documents = counts.len().max(1) as f32;
    let mut average = [0.0f32; Field::COUNT];
    for length in lengths {
        for (sum, value) in average.iter_mut().zip(length) {
            *sum += value;
        }
    }
    for sum in &mut average {
        *sum = (*sum / documents).max(1.0);
    }
    let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); vocabulary_size];
    for (document, (per_term, length)) in counts.iter().zip(lengths).enumerate() {
        for (term, per_field) in per_term {
            let mut pseudo_frequency = 0.0;
            for field in Field::ALL {
                let slot = field.index();
                let FieldWeight { weight, b } = config.weight(field);
                let normaliser = 1.0 - b + b * length[slot] / average[slot];
                pseudo_frequency += weight * per_field[slot] / normaliser;
            }
            if pseudo_frequency > 0.0 {
                lists[*term as usize].push(Posting {
                    document: document as u32,
                    weight: pseudo_frequency / (config.k1 + pseudo_frequency),
                });
            }
        }
    }
    let idf = lists
        .iter_mut()
        .map(|list| {
            list.sort_unstable_by_key(|posting| posting.document);
            let frequency = list.len() as f32;
            (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln()
        })
        .collect();
    Postings { lists, idf }
}
