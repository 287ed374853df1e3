//! Tool search for Switchboard: find the tools a task needs among hundreds, without putting
//! their schemas in the model's context.
//!
//! [`SearchIndex`] is built once per catalog snapshot from [`SearchDoc`]s and queried many
//! times; the caller's view and tier come in as a filter on document keys, and equal scores are
//! ordered by a caller-supplied key (latency fit). Ranking is BM25F over a tool's name, its
//! description, its parameters, its server and its category, with stemming, CJK bigrams,
//! phrase evidence (adjacent term pairs), a small concept map of general English and
//! server-level evidence (see [`SearchConfig`]).
//! Before ranking, file paths and URLs in a task are rewritten into what they name (`file path
//! <name> <extension>`, `url <host>`), so directory names do not match tools by accident; a
//! path the task writes its result to ("save it to …") becomes `write file path …`, since such
//! a task needs a tool that writes files; and request-framing words ("help", "tell me") are
//! dropped like stopwords.
//! [`PlainBm25`] is the plain baseline and [`evaluation`] scores either on a labelled task set.
//!
//! This crate never does I/O except [`evaluation::load_queries`] and [`docs_from_catalog_file`].

mod baseline;
mod clauses;
mod concepts;
mod config;
pub mod evaluation;
mod fields;
mod index;
mod paths;
mod phrases;
mod rank;
mod stopwords;
mod tokenize;

use std::path::Path;

use switchboard_core::ToolDefinition;
use switchboard_core::offline::{OfflineCatalog, OfflineCatalogError};

pub use baseline::PlainBm25;
pub use config::{Feedback, FieldWeight, SearchConfig};
pub use fields::Field;
pub use index::SearchIndex;
pub use rank::Hit;
pub use tokenize::{Normalisation, Tokenizer};

/// One searchable tool.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchDoc {
    /// What hits are reported under: the exposed name, or an offline catalog's id.
    pub key: String,
    /// The name the tool is listed under (may differ from `definition.name`).
    pub name: String,
    pub server: String,
    pub category: String,
    pub definition: ToolDefinition,
}

/// One document per tool of an offline catalog, keyed by the catalog id (`server/tool`).
pub fn docs_from_catalog(catalog: &OfflineCatalog) -> Vec<SearchDoc> {
    catalog
        .tools
        .iter()
        .map(|tool| SearchDoc {
            key: tool.id.clone(),
            name: tool.definition.name.clone(),
            server: tool.server.clone(),
            category: tool.category.clone(),
            definition: tool.definition.clone(),
        })
        .collect()
}

/// Reads an offline catalog file and returns its documents.
pub fn docs_from_catalog_file(path: &Path) -> Result<Vec<SearchDoc>, OfflineCatalogError> {
    OfflineCatalog::load(path).map(|catalog| docs_from_catalog(&catalog))
}
