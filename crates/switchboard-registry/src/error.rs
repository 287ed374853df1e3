//! [`RegistryError`]: why a search or a look-up found nothing to offer, naming the source —
//! the registry URL, or the catalog file and the JSON path and line inside it.

use std::path::PathBuf;

use thiserror::Error;

/// A failure of [`crate::Registry::search`] or [`crate::Registry::get`], or of one source.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// A registry base URL that cannot be parsed or used as a base.
    #[error("invalid registry URL '{base}': {message}")]
    BadUrl { base: String, message: String },
    /// The request did not get an answer (connection refused, timeout, TLS, body cut off).
    #[error("registry request {url} failed: {message}")]
    Unreachable { url: String, message: String },
    /// The registry answered with a status that is not 2xx.
    #[error("registry request {url} answered HTTP {status}{}", body_note(.body))]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// The registry's answer is not the v0.1 API's shape.
    #[error(
        "registry answer from {url} is not what the MCP Registry v0.1 API sends: at {json_path}: {message}"
    )]
    Shape {
        url: String,
        json_path: String,
        message: String,
    },
    /// The registry answered a look-up with another server, or another version of it, than
    /// the one asked for.
    #[error("registry request {url} asked for {asked} but the answer is {answered}")]
    Mismatch {
        url: String,
        asked: String,
        answered: String,
    },
    /// A catalog file that cannot be read.
    #[error("cannot read catalog {}: {source}", path.display())]
    CatalogRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A catalog file that is not JSON, or not one of the shapes a catalog may take.
    #[error("catalog {} line {line} column {column}, at {json_path}: {message}", path.display())]
    Catalog {
        path: PathBuf,
        json_path: String,
        message: String,
        line: usize,
        column: usize,
    },
    /// No source knows the server (or that version of it).
    #[error("no server '{name}'{} in {}", version_note(.version.as_deref()), asked_note(.asked))]
    NotFound {
        name: String,
        version: Option<String>,
        /// Every source asked, each with a note when it failed.
        asked: Vec<String>,
    },
    /// The server is known but withdrawn (`deprecated`, `deleted`, …).
    #[error("server '{name}' version {version} in {source_name} is {status}, not active")]
    Inactive {
        name: String,
        version: String,
        status: String,
        source_name: String,
    },
    /// Every source failed; each failure is kept.
    #[error("every source failed: {}", join(.0))]
    AllFailed(Vec<RegistryError>),
}

fn body_note(body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", body.trim())
    }
}

fn version_note(version: Option<&str>) -> String {
    version.map(|v| format!(" version {v}")).unwrap_or_default()
}

fn asked_note(asked: &[String]) -> String {
    if asked.is_empty() {
        "any source (none is configured)".to_owned()
    } else {
        asked.join("; ")
    }
}

fn join(errors: &[RegistryError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
