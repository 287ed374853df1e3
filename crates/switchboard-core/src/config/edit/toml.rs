//! Edits of native TOML files through `toml_edit`: servers are `[servers.ID]` tables (with
//! their `[servers.ID.tools.X]` sub-tables), or entries of a dotted or inline `servers` table.
//!
//! `toml_edit` re-prints what it parsed faithfully except for line breaks (`\r\n` comes out as
//! `\n`, a missing final one is added), so the edit is taken as a line diff between the
//! document printed before and after it, and replayed onto the original lines: every line
//! outside the entry is copied from the original text, byte for byte.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::diff::replay;
use super::fields::{Field, sandbox_field, transport_fields, trust_field};
use super::toml_tables::{
    attached, keep_detached_comments, last_position, prefix_of, shift_positions,
};
use super::{EditError, ServerEntry};

/// Root keys that hold servers (`mcpServers` is read in TOML too).
const CONTAINERS: [&str; 2] = ["servers", "mcpServers"];

fn parse(text: &str) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>().map_err(|error| {
        let offset = error.span().map_or(0, |span| span.start);
        EditError::syntax_at(
            text,
            offset,
            format!("TOML syntax error: {}", error.message().trim()),
        )
    })
}

/// [`parse`], for a change: a file that lists its servers as `[[servers]]` entries with an
/// `id` (which the config reads) is refused saying so — this editor writes `[servers.ID]`
/// tables, and would otherwise answer that the server is not there.
fn parse_for_change(text: &str) -> Result<DocumentMut, EditError> {
    let doc = parse(text)?;
    let listed = CONTAINERS.into_iter().find(|key| {
        matches!(
            doc.get(key),
            Some(Item::ArrayOfTables(_) | Item::Value(Value::Array(_)))
        )
    });
    if let Some(key) = listed {
        return Err(EditError::Unsupported(format!(
            "this file lists its servers as [[{key}]] entries, which changes made while the \
             gateway runs cannot edit: write each as a [{key}.ID] table (the id as the table's \
             name), or edit the file by hand"
        )));
    }
    Ok(doc)
}

/// The root key whose table holds server `id`.
fn container_of(doc: &DocumentMut, id: &str) -> Option<&'static str> {
    CONTAINERS.into_iter().find(|key| {
        doc.get(key)
            .and_then(Item::as_table_like)
            .is_some_and(|servers| servers.contains_key(id))
    })
}

pub(super) fn server_ids(text: &str) -> Result<Vec<String>, EditError> {
    let doc = parse(text)?;
    let mut ids = Vec::new();
    for (_, item) in doc.iter().filter(|(key, _)| CONTAINERS.contains(key)) {
        if let Some(servers) = item.as_table_like() {
            ids.extend(servers.iter().map(|(id, _)| id.to_owned()));
        } else if let Some(servers) = item.as_array_of_tables() {
            // `[[servers]]` with `id = "..."` (the seeds' form, read but not edited).
            ids.extend(
                servers
                    .iter()
                    .filter_map(|server| server.get("id").and_then(Item::as_str))
                    .map(str::to_owned),
            );
        }
    }
    Ok(ids)
}

pub(super) fn server_text(text: &str, id: &str) -> Option<String> {
    let doc = parse(text).ok()?;
    let container = container_of(&doc, id)?;
    let (servers_key, servers) = doc.as_table().get_key_value(container)?;
    let (key, item) = servers.as_table_like()?.get_key_value(id)?;
    let mut item = item.clone();
    if let Item::Table(table) = &mut item {
        let prefix = prefix_of(table);
        table.decor_mut().set_prefix(attached(&prefix));
    }
    // A document holding only this server; a dotted parent prints no `[servers]` header.
    let mut parent = Table::new();
    parent.set_implicit(true);
    parent.set_dotted(true);
    parent.insert_formatted(key, item);
    let mut alone = DocumentMut::new();
    alone
        .as_table_mut()
        .insert_formatted(servers_key, Item::Table(parent));
    let printed = alone.to_string();
    Some(printed.trim_start_matches(['\r', '\n']).to_owned())
}

pub(super) fn add(text: &str, id: &str, entry: &ServerEntry) -> Result<String, EditError> {
    let mut doc = parse_for_change(text)?;
    let before = doc.to_string();
    if container_of(&doc, id).is_some() {
        return Err(EditError::Exists(id.to_owned()));
    }
    let key = CONTAINERS
        .into_iter()
        .find(|key| doc.contains_key(key))
        .unwrap_or("servers");
    if !doc.contains_key(key) {
        let mut servers = Table::new();
        servers.set_implicit(true);
        doc.insert(key, Item::Table(servers));
    }
    let values = entry_values(entry);
    let positions = match doc.get(key) {
        Some(Item::Table(servers)) => Some((last_position(servers), last_position(doc.as_table()))),
        Some(Item::Value(Value::InlineTable(_))) => None,
        _ => {
            return Err(EditError::Unsupported(format!(
                "'{key}' is not a table of servers"
            )));
        }
    };
    let Some((last_server, last_any)) = positions else {
        if let Some(servers) = doc.get_mut(key).and_then(Item::as_inline_table_mut) {
            append_inline(
                servers,
                id,
                Value::InlineTable(values.into_iter().collect()),
            );
        }
        return Ok(replay(text, &before, &doc.to_string()));
    };
    // The new table goes right after the last server table, or at the end of the file.
    let position = match last_server {
        Some(last) if last_any.is_some_and(|any| any > last) => {
            shift_positions(doc.as_table_mut(), last);
            last + 1
        }
        _ => last_any.map_or(1, |any| any + 1),
    };
    let at_end = last_server.is_none() || last_server == last_any;
    let prefix = if at_end {
        // After everything, comments at the end of the file included.
        let trailing = doc.trailing().as_str().unwrap_or_default().to_owned();
        doc.set_trailing("");
        separated(&before, trailing)
    } else {
        "\n".to_owned()
    };
    let mut table: Table = values
        .into_iter()
        .map(|(k, v)| (k, Item::Value(v)))
        .collect();
    table.set_position(Some(position));
    table.decor_mut().set_prefix(prefix);
    if let Some(servers) = doc.get_mut(key).and_then(Item::as_table_mut) {
        servers.insert(id, Item::Table(table));
    }
    Ok(replay(text, &before, &doc.to_string()))
}

pub(super) fn remove(text: &str, id: &str) -> Result<String, EditError> {
    let mut doc = parse_for_change(text)?;
    let before = doc.to_string();
    let key = container_of(&doc, id).ok_or_else(|| EditError::Missing(id.to_owned()))?;
    keep_detached_comments(&mut doc, key, id);
    if let Some(servers) = doc.get_mut(key).and_then(Item::as_table_like_mut) {
        servers.remove(id);
    }
    Ok(replay(text, &before, &doc.to_string()))
}

pub(super) fn set_enabled(text: &str, id: &str, enabled: bool) -> Result<String, EditError> {
    let mut doc = parse_for_change(text)?;
    let before = doc.to_string();
    let key = container_of(&doc, id).ok_or_else(|| EditError::Missing(id.to_owned()))?;
    let server = doc
        .get_mut(key)
        .and_then(Item::as_table_like_mut)
        .and_then(|servers| servers.get_mut(id));
    let not_a_table = || EditError::Unsupported(format!("server '{id}' is not a table"));
    match server {
        Some(Item::Table(table)) => set_in_table(table, enabled)?,
        Some(Item::Value(Value::InlineTable(table))) => set_in_inline(table, enabled),
        _ => return Err(not_a_table()),
    }
    Ok(replay(text, &before, &doc.to_string()))
}

/// Changes `enabled` (and `disabled`) where written; else adds `enabled` after the last key,
/// indented like it.
fn set_in_table(table: &mut Table, enabled: bool) -> Result<(), EditError> {
    let mut changed = false;
    for (key, value) in [("enabled", enabled), ("disabled", !enabled)] {
        if let Some(item) = table.get_mut(key) {
            let old = item.as_value_mut().ok_or_else(|| not_a_value(key))?;
            set_bool(old, value);
            changed = true;
        }
    }
    if !changed {
        let indent = table
            .iter()
            .last()
            .and_then(|(key, _)| table.key(key))
            .and_then(|key| key.leaf_decor().prefix()?.as_str().map(str::to_owned))
            .filter(|prefix| prefix.chars().all(|c| c == ' ' || c == '\t'))
            .unwrap_or_default();
        table.insert("enabled", Item::Value(Value::from(enabled)));
        if let Some(mut key) = table.key_mut("enabled") {
            key.leaf_decor_mut().set_prefix(indent);
        }
        table.set_implicit(false);
    }
    Ok(())
}

fn set_in_inline(table: &mut InlineTable, enabled: bool) {
    let mut changed = false;
    for (key, value) in [("enabled", enabled), ("disabled", !enabled)] {
        if let Some(old) = table.get_mut(key) {
            set_bool(old, value);
            changed = true;
        }
    }
    if !changed {
        append_inline(table, "enabled", Value::from(enabled));
    }
}

fn not_a_value(key: &str) -> EditError {
    EditError::Unsupported(format!("'{key}' is a table, not a value"))
}

/// Replaces a value by a boolean, keeping the spaces and comment around it.
fn set_bool(old: &mut Value, value: bool) {
    let decor = old.decor().clone();
    *old = Value::from(value);
    *old.decor_mut() = decor;
}

/// Adds `key = value` at the end of an inline table, keeping the space before its `}`.
fn append_inline(table: &mut InlineTable, key: &str, mut value: Value) {
    let closing = table.iter_mut().last().map(|(_, last)| {
        let suffix = last.decor().suffix().cloned().unwrap_or_default();
        last.decor_mut().set_suffix("");
        suffix
    });
    if let Some(suffix) = closing {
        value.decor_mut().set_suffix(suffix);
    }
    table.insert(key, value);
}

/// A new entry's value as TOML.
fn value(field: Field) -> Value {
    match field {
        Field::Text(text) => Value::from(text),
        Field::List(items) => Value::Array(items.iter().map(String::as_str).collect::<Array>()),
        Field::Map(entries) => Value::InlineTable(
            entries
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        ),
        Field::Bool(flag) => Value::from(flag),
        // A count past i64 is no count anyone means: the largest TOML holds.
        Field::Integer(count) => Value::from(i64::try_from(count).unwrap_or(i64::MAX)),
        Field::Table(entries) => Value::InlineTable(
            entries
                .into_iter()
                .map(|(key, field)| (key, value(field)))
                .collect(),
        ),
    }
}

/// The keys of a new server table, in the order a person writes them.
fn entry_values(entry: &ServerEntry) -> Vec<(&'static str, Value)> {
    transport_fields(&entry.transport, Some("transport"))
        .into_iter()
        .chain(entry.sandbox.as_deref().map(sandbox_field))
        .chain(entry.trust.map(trust_field))
        .map(|(key, field)| (key, value(field)))
        .chain(
            entry
                .enabled
                .map(|enabled| ("enabled", Value::from(enabled))),
        )
        .collect()
}

/// The prefix of a new table at the end of the document: the comments that ended the file,
/// then what makes one blank line after the `printed` document (nothing when it shows nothing).
fn separated(printed: &str, mut trailing: String) -> String {
    if printed.trim().is_empty() {
        return trailing;
    }
    let mut full = printed.to_owned();
    if !full.ends_with('\n') {
        full.push('\n');
        trailing.push('\n');
    }
    let body = &full[..full.len() - 1];
    if !body
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        trailing.push('\n');
    }
    trailing
}
