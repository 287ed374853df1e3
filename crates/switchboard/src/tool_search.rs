//! Search mode: `search_tools`, `describe_tool` and `call_tool`. The index is built once per
//! catalog version over every tool; each search is filtered by the caller's view, so a
//! caller never learns of a tool it may not call.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use switchboard_core::pipeline::CallError;
use switchboard_core::tier::effective_latency;
use switchboard_core::{CallContext, Caller, CatalogEntry, ToolOutcome};
use switchboard_search::{SearchDoc, SearchIndex};

use crate::host::Host;

/// Results of `search_tools` when the caller gives no limit.
const DEFAULT_LIMIT: usize = 8;
const MAX_LIMIT: usize = 50;

/// The index of one catalog version.
#[derive(Default)]
pub(crate) struct SearchCache {
    built: Mutex<Option<(u64, Arc<SearchIndex>)>>,
}

/// One line per tool, as the compact listing writes it.
pub(crate) fn compact_line(entry: &CatalogEntry) -> String {
    switchboard_render::compact::line(&entry.exposed, &entry.spec.definition)
}

impl Host {
    fn search_index(&self) -> Arc<SearchIndex> {
        let version = *self.inner.version_now();
        let cache = &self.inner.search;
        if let Ok(built) = cache.built.lock()
            && let Some((at, index)) = built.as_ref()
            && *at == version
        {
            return index.clone();
        }
        let docs: Vec<SearchDoc> = self
            .catalog()
            .entries()
            .iter()
            .map(|entry| SearchDoc {
                key: entry.exposed.clone(),
                name: entry.exposed.clone(),
                server: entry.spec.server.as_str().to_owned(),
                category: entry.category.clone(),
                definition: entry.spec.definition.clone(),
            })
            .collect();
        let index = Arc::new(SearchIndex::build(docs));
        if let Ok(mut built) = cache.built.lock() {
            *built = Some((version, index.clone()));
        }
        index
    }

    /// The tools matching `query` that `caller` may see (permissions and tier), best first,
    /// with their scores; equal scores go to the faster tool.
    pub fn search_tools(
        &self,
        caller: &Caller,
        query: &str,
        limit: usize,
    ) -> Vec<(Arc<CatalogEntry>, f64)> {
        let view = self.view_for(caller);
        let catalog = self.catalog();
        let index = self.search_index();
        let quantile = self.inner.options.quantile;
        index
            .search_with(
                query,
                limit,
                |key| {
                    catalog
                        .resolve(key)
                        .is_some_and(|entry| view.contains(entry))
                },
                |key| {
                    // Latency fit: faster first; unknown latency last.
                    catalog
                        .resolve(key)
                        .and_then(|entry| effective_latency(&entry.latency, quantile))
                        .map_or(f64::MIN, |latency| -latency.as_secs_f64())
                },
            )
            .into_iter()
            .filter_map(|hit| Some((catalog.resolve(&hit.key)?.clone(), hit.score)))
            .collect()
    }

    pub(crate) fn meta_search(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> ToolOutcome {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return ToolOutcome::error("'query' must be a string: what you want to do");
        };
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
        let found = self.search_tools(&Caller::of(ctx), query, limit);
        let lines: Vec<String> = found.iter().map(|(entry, _)| compact_line(entry)).collect();
        let text = if lines.is_empty() {
            format!("no tools match '{query}'")
        } else {
            format!(
                "{}\n(describe_tool(name) shows a tool's full schema; call_tool(name, arguments) runs it)",
                lines.join("\n")
            )
        };
        let names: Vec<&str> = found.iter().map(|(e, _)| e.exposed.as_str()).collect();
        ToolOutcome::structured_with_text(json!({"tools": names}), text)
    }

    pub(crate) fn meta_describe(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> ToolOutcome {
        let Some(name) = arguments.get("name").and_then(Value::as_str) else {
            return ToolOutcome::error("'name' must be a string: a tool name from search_tools");
        };
        let view = self.view_for(&Caller::of(ctx));
        let catalog = self.catalog();
        match catalog.resolve(name).filter(|entry| view.contains(entry)) {
            Some(entry) => {
                let definition =
                    serde_json::to_value(&entry.spec.definition).unwrap_or(Value::Null);
                let mut outcome = ToolOutcome::structured(definition);
                outcome.content = vec![
                    json!({"type": "text", "text": serde_json::to_string_pretty(&entry.spec.definition).unwrap_or_default()}),
                ];
                outcome
            }
            None => ToolOutcome::error(format!(
                "unknown tool '{name}': use search_tools to find tools"
            )),
        }
    }

    pub(crate) async fn meta_call(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> Result<ToolOutcome, CallError> {
        let Some(name) = arguments.get("name").and_then(Value::as_str) else {
            return Ok(ToolOutcome::error(
                "'name' must be a string: a tool name from search_tools",
            ));
        };
        let inner = match arguments.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(inner)) => inner.clone(),
            Some(_) => return Ok(ToolOutcome::error("'arguments' must be an object")),
        };
        match self.call(ctx, name, inner).await {
            Err(CallError::UnknownTool { name }) => Ok(ToolOutcome::error(format!(
                "unknown tool '{name}': use search_tools to find tools"
            ))),
            other => other,
        }
    }
}
