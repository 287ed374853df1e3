//! A small concept map of general English: words that name the same kind of thing in tasks
//! and in tool descriptions ("spreadsheet" and "excel", "slides" and "pptx"). A query term in
//! a group adds the group's other words at a lower weight (see `SearchConfig::concept_weight`).
//!
//! Only general vocabulary belongs here — file formats, everyday synonyms, common product
//! names for a kind of document — never words picked to fix one benchmark query.

use std::collections::HashMap;

use crate::index::TermId;
use crate::tokenize::Tokenizer;

const GROUPS: &[&[&str]] = &[
    &[
        "spreadsheet",
        "excel",
        "xlsx",
        "xls",
        "workbook",
        "worksheet",
    ],
    &[
        "slides",
        "slide",
        "powerpoint",
        "pptx",
        "ppt",
        "presentation",
        "deck",
    ],
    &["docx", "document", "doc"],
    &[
        "chart",
        "plot",
        "graph",
        "diagram",
        "visualize",
        "visualization",
    ],
    &["image", "picture", "photo", "png", "jpg", "jpeg"],
    &["webpage", "website", "url", "link", "web", "site", "html"],
    &["search", "find", "lookup", "query"],
    &["stock", "ticker", "shares", "equity"],
    &["weather", "forecast", "temperature"],
    &["news", "headline", "headlines"],
    &["paper", "papers", "preprint", "publication"],
    &["currency", "exchange", "forex"],
    &[
        "crypto",
        "cryptocurrency",
        "bitcoin",
        "btc",
        "ethereum",
        "coin",
    ],
    &[
        "location",
        "address",
        "geocode",
        "coordinates",
        "place",
        "map",
    ],
    &["route", "directions", "navigation"],
    &["time", "date", "timezone", "clock"],
    &["calculate", "compute", "arithmetic", "calculator", "math"],
    &["folder", "directory"],
    &["download", "fetch", "retrieve"],
    &["train", "railway", "rail"],
    &["video", "youtube"],
    &["music", "audio", "song", "sound", "mp3", "wav"],
    &["repository", "repo", "git"],
    &["remember", "memory", "knowledge"],
    &["random", "dice", "shuffle"],
    &["email", "mail"],
    &["recipe", "cook", "cooking", "dish", "meal"],
    &["package", "dependency", "library", "version"],
    &["summary", "summarize", "overview"],
    &["mindmap", "outline"],
    &["save", "write", "store", "export"],
    &["markdown", "md"],
    &["rank", "ranking", "trending", "popular", "hot"],
];

/// Query term → related terms of the index vocabulary.
#[derive(Debug, Default)]
pub(crate) struct ConceptMap {
    related: HashMap<String, Vec<TermId>>,
}

impl ConceptMap {
    /// Normalises the groups with the index's tokenizer and keeps only related terms that some
    /// document contains (others could never match).
    pub fn build(tokenizer: &Tokenizer, vocabulary: &HashMap<String, TermId>) -> Self {
        let mut related: HashMap<String, Vec<TermId>> = HashMap::new();
        for group in GROUPS {
            let terms: Vec<String> = group
                .iter()
                .flat_map(|word| tokenizer.terms(word))
                .collect();
            for term in &terms {
                let entry = related.entry(term.clone()).or_default();
                for other in terms.iter().filter(|other| *other != term) {
                    if let Some(id) = vocabulary.get(other)
                        && !entry.contains(id)
                    {
                        entry.push(*id);
                    }
                }
            }
        }
        Self { related }
    }

    /// Terms related to a query term.
    pub fn related(&self, term: &str) -> &[TermId] {
        self.related.get(term).map_or(&[], Vec::as_slice)
    }
}
