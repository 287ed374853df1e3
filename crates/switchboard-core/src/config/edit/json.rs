//! Edits of JSON config files (`mcpServers`, VS Code's `servers` object, the seeds' `servers`
//! array): the entry is found by the config reader's [`scan`](crate::config::json::scan) (so
//! the editor accepts exactly the JSONC the validator does) and text is spliced in or out at
//! its byte span; the rest of the document is never re-serialized. New text is laid out like
//! its siblings (`json_layout`).

use super::json_layout::{self, Layout, Slot};
use super::{EditError, ServerEntry};
use crate::config::json::{self as jsonc, Kind, Member, Span};

/// The JSON shape a servers container has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// `{"mcpServers": {ID: {...}}}` (Claude Desktop, Cursor).
    McpServers,
    /// `{"servers": {ID: {"type": ...}}}` (VS Code).
    VsCode,
    /// `{"servers": [{"id": ID, ...}]}` (the seeds).
    Array,
}

/// A servers container of the document.
struct Container<'a> {
    key: &'a str,
    form: Option<Form>,
    span: &'a Span,
}

/// Where server `id` is: its container and its place in it.
struct Found<'a> {
    form: Form,
    container: &'a Span,
    index: usize,
}

/// `text[range]` replaced by a string.
pub(super) type Edit = (usize, usize, String);

/// Applies non-overlapping edits; insertions at the same place keep their order.
pub(super) fn splice(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for (start, end, new) in edits {
        out.push_str(&text[at..start]);
        out.push_str(&new);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The document's spans, or None when it holds only blanks and comments.
fn scan(text: &str) -> Result<Option<Span>, EditError> {
    jsonc::scan(text).map_err(|error| EditError::syntax_at(text, error.at, error.message))
}

/// The member `key` of an object.
fn member<'a>(object: &'a Span, key: &str) -> Option<&'a Member> {
    match &object.kind {
        Kind::Object(members) => members.iter().find(|m| m.key == key),
        _ => None,
    }
}

fn root_object(root: &Span) -> Result<&[Member], EditError> {
    match &root.kind {
        Kind::Object(members) => Ok(members),
        _ => Err(EditError::Unsupported(
            "the config file is not a JSON object".to_owned(),
        )),
    }
}

/// The document's `mcpServers` / `servers` members, in file order.
fn containers(root: &Span) -> Result<Vec<Container<'_>>, EditError> {
    Ok(root_object(root)?
        .iter()
        .filter(|m| m.key == "mcpServers" || m.key == "servers")
        .map(|m| Container {
            key: &m.key,
            form: match (&m.value.kind, m.key.as_str()) {
                (Kind::Array(_), _) => Some(Form::Array),
                (Kind::Object(_), "mcpServers") => Some(Form::McpServers),
                (Kind::Object(_), _) => Some(Form::VsCode),
                _ => None,
            },
            span: &m.value,
        })
        .collect())
}

/// The id of an element of a servers array.
fn element_id(element: &Span) -> Option<&str> {
    match &member(element, "id")?.value.kind {
        Kind::String(id) => Some(id),
        _ => None,
    }
}

/// The ids of a container, in order.
fn ids_of(container: &Span) -> Vec<&str> {
    match &container.kind {
        Kind::Object(members) => members.iter().map(|m| m.key.as_str()).collect(),
        Kind::Array(elements) => elements
            .iter()
            .filter_map(|e| element_id(&e.value))
            .collect(),
        _ => Vec::new(),
    }
}

fn find<'a>(root: &'a Span, id: &str) -> Result<Option<Found<'a>>, EditError> {
    for container in containers(root)? {
        let Some(form) = container.form else { continue };
        let index = match &container.span.kind {
            Kind::Object(members) => members.iter().position(|m| m.key == id),
            Kind::Array(elements) => elements
                .iter()
                .position(|e| element_id(&e.value) == Some(id)),
            _ => None,
        };
        if let Some(index) = index {
            return Ok(Some(Found {
                form,
                container: container.span,
                index,
            }));
        }
    }
    Ok(None)
}

impl<'a> Found<'a> {
    /// The entry's span: `"ID": {...}` in an object, `{...}` in an array.
    fn slot(&self) -> Option<Slot<'a>> {
        json_layout::slots(self.container).get(self.index).copied()
    }

    /// The server's object.
    fn server(&self) -> Option<&'a Span> {
        match &self.container.kind {
            Kind::Object(members) => members.get(self.index).map(|m| &m.value),
            Kind::Array(elements) => elements.get(self.index).map(|e| &e.value),
            _ => None,
        }
    }
}

pub(super) fn server_ids(text: &str) -> Result<Vec<String>, EditError> {
    let Some(root) = scan(text)? else {
        return Ok(Vec::new());
    };
    Ok(containers(&root)?
        .iter()
        .flat_map(|c| ids_of(c.span))
        .map(str::to_owned)
        .collect())
}

pub(super) fn server_text(text: &str, id: &str) -> Option<String> {
    let root = scan(text).ok()??;
    let slot = find(&root, id).ok()??.slot()?;
    Some(text[slot.start..slot.end].to_owned())
}

pub(super) fn add(text: &str, id: &str, entry: &ServerEntry) -> Result<String, EditError> {
    let Some(root) = scan(text)? else {
        return Ok(json_layout::new_document(text, id, entry));
    };
    if find(&root, id)?.is_some() {
        return Err(EditError::Exists(id.to_owned()));
    }
    let layout = Layout::of(text, &root);
    let Some(container) = containers(&root)?.into_iter().next() else {
        // No servers at all: a new "mcpServers" object at the end of the top-level object.
        let edits = layout.insert(text, &root, &|place| {
            json_layout::servers_member(&layout, place, id, entry)
        });
        return Ok(splice(text, edits));
    };
    let Some(form) = container.form else {
        return Err(EditError::Unsupported(format!(
            "\"{}\" is neither an object nor an array",
            container.key
        )));
    };
    let edits = layout.insert(text, container.span, &|place| {
        json_layout::server_member(&layout, place, form, id, entry)
    });
    Ok(splice(text, edits))
}

pub(super) fn remove(text: &str, id: &str) -> Result<String, EditError> {
    let root = scan(text)?.ok_or_else(|| EditError::Missing(id.to_owned()))?;
    let found = find(&root, id)?.ok_or_else(|| EditError::Missing(id.to_owned()))?;
    let slots = json_layout::slots(found.container);
    Ok(splice(text, json_layout::remove(text, &slots, found.index)))
}

pub(super) fn set_enabled(text: &str, id: &str, enabled: bool) -> Result<String, EditError> {
    let root = scan(text)?.ok_or_else(|| EditError::Missing(id.to_owned()))?;
    let found = find(&root, id)?.ok_or_else(|| EditError::Missing(id.to_owned()))?;
    let server = found
        .server()
        .filter(|s| matches!(s.kind, Kind::Object(_)))
        .ok_or_else(|| EditError::Unsupported(format!("server '{id}' is not an object")))?;
    let mut edits: Vec<Edit> = Vec::new();
    for (key, value) in [("disabled", !enabled), ("enabled", enabled)] {
        if let Some(member) = member(server, key) {
            edits.push((member.value.start, member.value.end, value.to_string()));
        }
    }
    if edits.is_empty() && !enabled {
        let member = match found.form {
            Form::Array => "\"enabled\": false",
            Form::McpServers | Form::VsCode => "\"disabled\": true",
        };
        let layout = Layout::of(text, &root);
        edits = layout.insert(text, server, &|_| member.to_owned());
    }
    Ok(splice(text, edits))
}
