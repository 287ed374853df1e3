//! Offline catalog files: tool definitions captured from servers and stored as JSON, in the
//! shape of the project's benchmark catalogs (`{ "servers": [...], "tools": [...] }`, each
//! tool an MCP tool definition plus `id` = `"<server>/<tool>"` (whose tool part is the `name`
//! when the entry has none), `server` and an optional
//! `category`). Used by `switchboard tools --catalog FILE` and by the benchmarks, where no
//! server needs to run.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::ToolDefinition;

/// One tool of an offline catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineTool {
    /// The catalog's own id, `"<server>/<tool>"`.
    pub id: String,
    pub server: String,
    /// Coarse category, when the file has one (else the server id).
    pub category: String,
    pub definition: ToolDefinition,
}

/// One server of an offline catalog.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OfflineServer {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub category: Option<String>,
}

/// A whole offline catalog.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OfflineCatalog {
    pub servers: Vec<OfflineServer>,
    pub tools: Vec<OfflineTool>,
}

/// Why a catalog file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OfflineCatalogError {
    #[error("cannot read catalog {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("catalog {} is not valid JSON: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("catalog {}: {at}: {message}", path.display())]
    Shape {
        path: PathBuf,
        at: String,
        message: String,
    },
}

#[derive(Deserialize)]
struct RawCatalog {
    #[serde(default)]
    servers: Vec<OfflineServer>,
    tools: Vec<Value>,
}

impl OfflineCatalog {
    /// Reads a catalog file.
    pub fn load(path: &Path) -> Result<Self, OfflineCatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| OfflineCatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|error| match error {
            ParseError::Json(source) => OfflineCatalogError::Json {
                path: path.to_owned(),
                source,
            },
            ParseError::Shape { at, message } => OfflineCatalogError::Shape {
                path: path.to_owned(),
                at,
                message,
            },
        })
    }

    /// Parses catalog text; errors name the JSON path of the bad entry.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let value: Value = serde_json::from_str(text).map_err(ParseError::Json)?;
        if !value.is_object() {
            // Serde would read an array as the struct's fields in order and complain about
            // the first element, which says nothing of what a catalog is.
            return Err(ParseError::Shape {
                at: "$".to_owned(),
                message: format!(
                    "a catalog is an object {{\"tools\": [...]}} (each an MCP tool definition with its \"server\"), not {}",
                    crate::json_kind(&value)
                ),
            });
        }
        let raw: RawCatalog = serde_json::from_value(value).map_err(|error| ParseError::Shape {
            at: "$".to_owned(),
            message: error.to_string(),
        })?;
        let mut tools = Vec::with_capacity(raw.tools.len());
        for (index, entry) in raw.tools.into_iter().enumerate() {
            tools.push(tool_entry(index, entry, &raw.servers)?);
        }
        Ok(Self {
            servers: raw.servers,
            tools,
        })
    }
}

/// Why catalog text could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("{at}: {message}")]
    Shape { at: String, message: String },
}

fn tool_entry(
    index: usize,
    mut entry: Value,
    servers: &[OfflineServer],
) -> Result<OfflineTool, ParseError> {
    let at = format!("$.tools[{index}]");
    let shape = |message: String| ParseError::Shape {
        at: at.clone(),
        message,
    };
    let object = entry
        .as_object_mut()
        .ok_or_else(|| shape("a tool must be an object".to_owned()))?;
    let mut take_string = |key: &str| match object.remove(key) {
        Some(Value::String(text)) => Ok(Some(text)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(key.to_owned()),
    };
    let field = |key: String| shape(format!("'{key}' must be a string"));
    let server = take_string("server").map_err(field)?;
    let id = take_string("id").map_err(field)?;
    let category = take_string("category").map_err(field)?;
    // An id names the tool: its part after the `/` is the name when the entry has none.
    if !object.contains_key("name")
        && let Some((_, tool)) = id.as_deref().and_then(|id| id.split_once('/'))
    {
        object.insert("name".to_owned(), Value::String(tool.to_owned()));
    }
    object.remove("toolsets");
    object.remove("default_enabled");
    let definition: ToolDefinition =
        serde_json::from_value(entry).map_err(|error| shape(error.to_string()))?;
    let server = server
        .or_else(|| {
            id.as_deref()
                .and_then(|id| id.split_once('/'))
                .map(|(s, _)| s.to_owned())
        })
        .ok_or_else(|| {
            shape("a tool needs 'server' or an id of the form server/tool".to_owned())
        })?;
    let id = id.unwrap_or_else(|| format!("{server}/{}", definition.name));
    let category = category
        .or_else(|| {
            servers
                .iter()
                .find(|candidate| candidate.id == server)
                .and_then(|found| found.category.clone())
        })
        .unwrap_or_else(|| server.clone());
    Ok(OfflineTool {
        id,
        server,
        category,
        definition,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tools_with_ids_servers_and_categories() {
        let catalog = OfflineCatalog::parse(
            r#"{"servers": [{"id": "time", "category": "utility"}],
                "tools": [
                  {"id": "time/now", "server": "time", "name": "now", "description": "d",
                   "inputSchema": {"type": "object"}},
                  {"id": "git/log", "name": "log", "category": "vcs", "toolsets": ["x"]}
                ]}"#,
        )
        .expect("parses");
        assert_eq!(catalog.tools.len(), 2);
        assert_eq!(catalog.tools[0].category, "utility");
        assert_eq!(catalog.tools[1].server, "git");
        assert_eq!(catalog.tools[1].category, "vcs");
        assert!(catalog.tools[1].definition.extra.is_empty());
    }

    /// An entry with an id of the form server/tool needs no `name`: it is the id's tool part.
    #[test]
    fn an_id_alone_names_the_tool() {
        let catalog =
            OfflineCatalog::parse(r#"{"tools": [{"id": "time/now", "description": "d"}]}"#)
                .expect("an id is enough");
        let tool = &catalog.tools[0];
        assert_eq!(
            (
                tool.id.as_str(),
                tool.server.as_str(),
                tool.definition.name.as_str()
            ),
            ("time/now", "time", "now")
        );
    }

    /// A listing rendered for an LLM API (an array) is valid JSON but no catalog: the error
    /// says what a catalog is rather than what serde expected of the array's first element.
    #[test]
    fn a_file_that_is_not_an_object_is_told_what_a_catalog_is() {
        let error = OfflineCatalog::parse(r#"[{"type": "function", "function": {"name": "x"}}]"#)
            .expect_err("an array");
        let text = error.to_string();
        assert!(
            text.starts_with("$: a catalog is an object {\"tools\": [...]}")
                && text.ends_with("not an array"),
            "{text}"
        );
        let error = OfflineCatalog::parse(r#"{"servers": []}"#).expect_err("no tools");
        assert!(
            error.to_string().contains("missing field `tools`"),
            "{error}"
        );
        let error = OfflineCatalog::parse(r#"{"tools": [}"#).expect_err("syntax");
        assert!(matches!(error, ParseError::Json(_)), "{error}");
    }

    #[test]
    fn a_bad_entry_is_named_by_its_path() {
        let error =
            OfflineCatalog::parse(r#"{"tools": [{"name": "x"}, 3]}"#).expect_err("no server");
        assert!(error.to_string().starts_with("$.tools[0]:"), "{error}");
        let error = OfflineCatalog::parse(r#"{"tools": [{"name": "x", "server": "s"}, 3]}"#)
            .expect_err("3");
        assert!(error.to_string().starts_with("$.tools[1]:"), "{error}");
    }
}
