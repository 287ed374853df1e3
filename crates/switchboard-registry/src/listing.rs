//! [`Listing`]: one server as a source lists it, and the JSON shapes listings arrive in — a
//! registry page (`{servers: [{server, _meta}], metadata}`), one registry entry, and the three
//! shapes of a local catalog file (an array of `server.json` objects, one `server.json`, or a
//! registry page). A shape that does not fit is reported with the JSON path of the first entry
//! that does not fit and serde's line and column.
//!
//! Also the small rules every source shares: what counts as active and latest, query
//! matching, and version order.

use std::cmp::Ordering;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::RegistryError;
use crate::server_json::{Package, Remote, ServerJson};

/// The key of the registry's own metadata in an entry's `_meta`.
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

/// One server as a source lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub server: ServerJson,
    /// The registry's status (`active`, `deprecated`, `deleted`); `active` when unknown.
    pub status: String,
    pub is_latest: bool,
    /// The registry base URL or the catalog file path it came from.
    pub source: String,
}

impl Listing {
    /// Whether the status is `active`.
    pub fn is_active(&self) -> bool {
        self.status.eq_ignore_ascii_case("active")
    }

    /// Whether `query` (lowercase) is in the name, title or description; an empty query
    /// matches everything.
    pub(crate) fn matches(&self, query: &str) -> bool {
        let contains = |text: &str| text.to_lowercase().contains(query);
        query.is_empty()
            || contains(&self.server.name)
            || self.server.title.as_deref().is_some_and(contains)
            || self.server.description.as_deref().is_some_and(contains)
    }
}

/// A page of `GET /v0.1/servers`.
#[derive(Deserialize)]
pub(crate) struct Page {
    pub servers: Vec<Entry>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// `metadata` of a page.
#[derive(Deserialize)]
pub(crate) struct Metadata {
    #[serde(default, rename = "nextCursor", alias = "next_cursor")]
    pub next_cursor: Option<String>,
}

/// One entry: `{server, _meta}`.
#[derive(Deserialize)]
pub(crate) struct Entry {
    pub server: ServerJson,
    #[serde(default, rename = "_meta")]
    pub meta: Option<EntryMeta>,
}

#[derive(Deserialize)]
pub(crate) struct EntryMeta {
    #[serde(default, rename = "io.modelcontextprotocol.registry/official")]
    official: Option<Official>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Official {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    is_latest: Option<bool>,
}

impl Entry {
    pub(crate) fn into_listing(self, source: &str) -> Listing {
        let official = self.meta.and_then(|meta| meta.official);
        let (status, is_latest) = match official {
            Some(official) => (official.status, official.is_latest),
            None => (None, None),
        };
        Listing {
            server: self.server,
            status: status
                .filter(|status| !status.is_empty())
                .unwrap_or_else(|| "active".to_owned()),
            is_latest: is_latest.unwrap_or(true),
            source: source.to_owned(),
        }
    }

    fn bare(server: ServerJson) -> Entry {
        Entry { server, meta: None }
    }
}

/// Where a typed parse failed: serde's message, its line and column, and the JSON path of
/// the first entry that does not fit.
pub(crate) struct ParseFailure {
    pub json_path: String,
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl ParseFailure {
    fn new(error: &serde_json::Error, value: Option<&Value>, locate: fn(&Value) -> String) -> Self {
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        let text = error.to_string();
        ParseFailure {
            json_path: value.map_or_else(|| "$".to_owned(), locate),
            message: text.strip_suffix(&suffix).unwrap_or(&text).to_owned(),
            line: error.line(),
            column: error.column(),
        }
    }

    /// The message with its line and column.
    pub fn located(&self) -> String {
        format!(
            "{} (line {}, column {})",
            self.message, self.line, self.column
        )
    }
}

/// A registry page from its body.
pub(crate) fn parse_page(body: &[u8]) -> Result<Page, ParseFailure> {
    typed(body, locate_page)
}

/// One registry entry (`{server, _meta}`, or a bare `server.json`) from its body.
pub(crate) fn parse_entry(body: &[u8]) -> Result<Entry, ParseFailure> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| ParseFailure::new(&error, None, locate_server))?;
    if is_wrapper(&value) {
        typed(body, locate_wrapper)
    } else {
        typed::<ServerJson>(body, locate_server).map(Entry::bare)
    }
}

/// The listings of a catalog file's text (`path` names it in errors and as their source).
pub(crate) fn parse_catalog(path: &Path, text: &str) -> Result<Vec<Listing>, RegistryError> {
    let source = path.display().to_string();
    let fail = |failure: ParseFailure| RegistryError::Catalog {
        path: path.to_owned(),
        json_path: failure.json_path,
        message: failure.message,
        line: failure.line,
        column: failure.column,
    };
    let bytes = text.as_bytes();
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|error| fail(ParseFailure::new(&error, None, locate_server)))?;
    let entries = match &value {
        Value::Array(items) if items.first().is_some_and(is_wrapper) => {
            typed::<Vec<Entry>>(bytes, locate_wrappers).map_err(fail)?
        }
        Value::Array(_) => typed::<Vec<ServerJson>>(bytes, locate_servers)
            .map_err(fail)?
            .into_iter()
            .map(Entry::bare)
            .collect(),
        Value::Object(map) if map.contains_key("servers") => {
            typed::<Page>(bytes, locate_page).map_err(fail)?.servers
        }
        value if is_wrapper(value) => vec![typed::<Entry>(bytes, locate_wrapper).map_err(fail)?],
        _ => vec![Entry::bare(
            typed::<ServerJson>(bytes, locate_server).map_err(fail)?,
        )],
    };
    Ok(entries
        .into_iter()
        .map(|entry| entry.into_listing(&source))
        .collect())
}

fn typed<T: DeserializeOwned>(
    body: &[u8],
    locate: fn(&Value) -> String,
) -> Result<T, ParseFailure> {
    serde_json::from_slice(body).map_err(|error| {
        let value = serde_json::from_slice::<Value>(body).ok();
        ParseFailure::new(&error, value.as_ref(), locate)
    })
}

fn is_wrapper(value: &Value) -> bool {
    value.get("server").is_some_and(Value::is_object)
}

fn fits<T: DeserializeOwned>(value: &Value) -> bool {
    T::deserialize(value).is_ok()
}

/// The path of the first part of a `server.json` at `path` that does not fit.
fn locate_server_at(value: &Value, path: &str) -> String {
    for (key, fits_item) in [
        ("packages", fits::<Package> as fn(&Value) -> bool),
        ("remotes", fits::<Remote>),
    ] {
        if let Some(Value::Array(items)) = value.get(key)
            && let Some(index) = items.iter().position(|item| !fits_item(item))
        {
            return format!("{path}.{key}[{index}]");
        }
    }
    path.to_owned()
}

fn locate_server(value: &Value) -> String {
    locate_server_at(value, "$")
}

fn locate_wrapper_at(value: &Value, path: &str) -> String {
    match value.get("server") {
        Some(server) if !fits::<ServerJson>(server) => {
            locate_server_at(server, &format!("{path}.server"))
        }
        Some(_) => path.to_owned(),
        None => format!("{path}.server"),
    }
}

fn locate_wrapper(value: &Value) -> String {
    locate_wrapper_at(value, "$")
}

fn locate_servers(value: &Value) -> String {
    first_misfit(value, "$", |item, path| {
        (!fits::<ServerJson>(item)).then(|| locate_server_at(item, path))
    })
}

fn locate_wrappers(value: &Value) -> String {
    first_misfit(value, "$", |item, path| {
        (!fits::<Entry>(item)).then(|| locate_wrapper_at(item, path))
    })
}

fn locate_page(value: &Value) -> String {
    match value.get("servers") {
        Some(servers @ Value::Array(_)) => first_misfit(servers, "$.servers", |item, path| {
            (!fits::<Entry>(item)).then(|| locate_wrapper_at(item, path))
        }),
        _ if value.get("metadata").is_some_and(|m| !fits::<Metadata>(m)) => "$.metadata".to_owned(),
        _ => "$.servers".to_owned(),
    }
}

fn first_misfit(
    value: &Value,
    path: &str,
    check: impl Fn(&Value, &str) -> Option<String>,
) -> String {
    let Value::Array(items) = value else {
        return path.to_owned();
    };
    items
        .iter()
        .enumerate()
        .find_map(|(index, item)| check(item, &format!("{path}[{index}]")))
        .unwrap_or_else(|| path.to_owned())
}

/// Version order: numeric dot-separated parts compared as numbers, a release above its
/// pre-releases (`1.0.0` > `1.0.0-rc.1`), anything else as text.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let split = |v: &str| {
        let v = v.split('+').next().unwrap_or(v);
        match v.split_once('-') {
            Some((core, pre)) => (core.to_owned(), Some(pre.to_owned())),
            None => (v.to_owned(), None),
        }
    };
    let ((core_a, pre_a), (core_b, pre_b)) = (split(a), split(b));
    let mut parts_a = core_a.split('.');
    let mut parts_b = core_b.split('.');
    loop {
        let order = match (parts_a.next(), parts_b.next()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (Some(x), Some(y)) => match (x.parse::<u64>(), y.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => x.cmp(y),
            },
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    match (pre_a, pre_b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

/// Of several listings of one name, the latest: one the source marks latest, else the
/// highest version; earlier wins a tie.
pub(crate) fn latest<'a>(listings: impl Iterator<Item = &'a Listing>) -> Option<&'a Listing> {
    listings.fold(None, |best: Option<&Listing>, listing| match best {
        None => Some(listing),
        Some(best) => {
            let order = listing
                .is_latest
                .cmp(&best.is_latest)
                .then_with(|| compare_versions(&listing.server.version, &best.server.version));
            Some(if order == Ordering::Greater {
                listing
            } else {
                best
            })
        }
    })
}

/// Per name, in order of first appearance, its latest listing.
pub(crate) fn latest_per_name(listings: &[Listing]) -> Vec<&Listing> {
    let mut names: Vec<&str> = Vec::new();
    for listing in listings {
        if !names.contains(&listing.server.name.as_str()) {
            names.push(&listing.server.name);
        }
    }
    names
        .into_iter()
        .filter_map(|name| latest(listings.iter().filter(|l| l.server.name == name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_numerically_and_releases_above_prereleases() {
        assert_eq!(compare_versions("1.10.0", "1.9.3"), Ordering::Greater);
        assert_eq!(compare_versions("1.0.0", "1.0.0-rc.1"), Ordering::Greater);
        assert_eq!(compare_versions("2026.1.26", "2026.1.26"), Ordering::Equal);
        assert_eq!(compare_versions("1.0", "1.0.1"), Ordering::Less);
    }
}
