//! Where and how JSON text is spliced: the layout of a container's entries (one per line or
//! all on one line, their indentation, trailing commas, the file's line break), the text of a
//! new server entry laid out like its siblings, and the byte ranges that insert or remove an
//! entry with its comma.

use super::ServerEntry;
use super::json::{Edit, Form};
use super::json_render::{fields, multi_line, one_line, quote};
use crate::config::json::{Kind, Span};

/// An entry of an object (`"key": value`) or array (`value`), and the comma after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot<'a> {
    pub start: usize,
    pub end: usize,
    pub comma: Option<usize>,
    pub value: &'a Span,
}

/// The entries of an object or array, in order.
pub(super) fn slots(container: &Span) -> Vec<Slot<'_>> {
    match &container.kind {
        Kind::Object(members) => members
            .iter()
            .map(|m| Slot {
                start: m.key_start,
                end: m.value.end,
                comma: m.comma,
                value: &m.value,
            })
            .collect(),
        Kind::Array(elements) => elements
            .iter()
            .map(|e| Slot {
                start: e.value.start,
                end: e.value.end,
                comma: e.comma,
                value: &e.value,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The file's conventions: its line break and one level of indentation.
pub(super) struct Layout {
    eol: &'static str,
    step: String,
}

/// Where a new entry goes, as its render sees it.
pub(super) struct Place {
    /// The indentation of the entry's line.
    indent: String,
    /// The container is written on one line: so is the entry.
    inline: bool,
    /// The siblings' values span several lines.
    multiline: bool,
    /// The siblings write `{ "a": 1 }` rather than `{"a": 1}`.
    pad: bool,
    /// The indentation of the keys inside the siblings' values.
    inner: Option<String>,
}

impl Layout {
    pub(super) fn of(text: &str, root: &Span) -> Self {
        let step = slots(root)
            .first()
            .filter(|slot| blank_before(text, slot.start))
            .map(|slot| {
                let indent = line_indent(text, slot.start);
                let outer = line_indent(text, root.start);
                indent.strip_prefix(outer).unwrap_or(indent).to_owned()
            })
            .filter(|step| !step.is_empty())
            .unwrap_or_else(|| "  ".to_owned());
        Self {
            eol: eol_of(text),
            step,
        }
    }

    /// The edits that add an entry at the end of `container` (an object or array).
    pub(super) fn insert(
        &self,
        text: &str,
        container: &Span,
        render: &dyn Fn(&Place) -> String,
    ) -> Vec<Edit> {
        let eol = self.eol;
        let entries = slots(container);
        let Some(last) = entries.last() else {
            let close = container.end.saturating_sub(1);
            let inside = &text[container.start + 1..close];
            let from = container.start + 1 + inside.trim_end().len();
            let outer = line_indent(text, container.start);
            let place = Place {
                indent: format!("{outer}{}", self.step),
                inline: false,
                multiline: true,
                pad: false,
                inner: None,
            };
            let item = render(&place);
            return vec![(
                close.max(from),
                close,
                format!("{eol}{}{item}{eol}{outer}", place.indent),
            )];
        };
        let sibling = &text[last.value.start..last.value.end];
        let mut place = Place {
            indent: line_indent(text, last.start).to_owned(),
            inline: !blank_before(text, last.start),
            multiline: sibling.contains('\n'),
            pad: sibling.starts_with("{ "),
            inner: first_key_indent(text, last.value).map(str::to_owned),
        };
        if place.inline {
            place.indent.clear();
            let item = render(&place);
            return match last.comma {
                Some(comma) => vec![(comma + 1, comma + 1, format!(" {item},"))],
                None => vec![(last.end, last.end, format!(", {item}"))],
            };
        }
        let after = last.comma.map_or(last.end, |comma| comma + 1);
        let tail = line_tail(text, after);
        let at = if at_eol(text, tail) { tail } else { after };
        let item = render(&place);
        let trailing = if last.comma.is_some() { "," } else { "" };
        // The comma first: both may go at the same place.
        let mut edits = Vec::new();
        if last.comma.is_none() {
            edits.push((last.end, last.end, ",".to_owned()));
        }
        edits.push((at, at, format!("{eol}{}{item}{trailing}", place.indent)));
        edits
    }

    /// The indentation of the keys inside a new multi-line value written at `place`.
    fn inner(&self, place: &Place) -> String {
        place
            .inner
            .clone()
            .unwrap_or_else(|| format!("{}{}", place.indent, self.step))
    }
}

/// The edits that remove entry `index` of `entries` and the comma that separated it: whole
/// lines when the entry has lines of its own (with a comment at the end of its last line),
/// else just its text.
pub(super) fn remove(text: &str, entries: &[Slot<'_>], index: usize) -> Vec<Edit> {
    let Some(slot) = entries.get(index) else {
        return Vec::new();
    };
    let previous = index.checked_sub(1).and_then(|i| entries.get(i));
    let next = entries.get(index + 1);
    let tail = line_tail(text, slot.comma.map_or(slot.end, |comma| comma + 1));
    if blank_before(text, slot.start) && at_eol(text, tail) {
        let start = line_start(text, slot.start);
        let end = if text[tail..].starts_with("\r\n") {
            tail + 2
        } else if text[tail..].starts_with('\n') {
            tail + 1
        } else {
            tail
        };
        let mut edits = vec![(start, end, String::new())];
        if next.is_none() && slot.comma.is_none() {
            // The previous entry's comma would now be a trailing comma the file did not use.
            if let Some(comma) = previous.and_then(|p| p.comma) {
                edits.push((comma, comma + 1, String::new()));
            }
        }
        return edits;
    }
    match (previous.and_then(|p| p.comma), next) {
        (Some(comma), _) => vec![(comma, slot.end, String::new())],
        (None, Some(next)) => vec![(slot.start, next.start, String::new())],
        (None, None) => {
            let end = slot.comma.map_or(slot.end, |comma| comma + 1);
            vec![(slot.start, end, String::new())]
        }
    }
}

/// A whole new document for a file without one (empty, or only comments).
pub(super) fn new_document(text: &str, id: &str, entry: &ServerEntry) -> String {
    let layout = Layout {
        eol: eol_of(text),
        step: "  ".to_owned(),
    };
    let eol = layout.eol;
    let place = Place {
        indent: layout.step.clone(),
        inline: false,
        multiline: true,
        pad: false,
        inner: None,
    };
    let separator = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        eol
    };
    let member = servers_member(&layout, &place, id, entry);
    format!(
        "{text}{separator}{{{eol}{}{member}{eol}}}{eol}",
        place.indent
    )
}

/// `"mcpServers": {"ID": {...}}`, for a file that has no servers object yet.
pub(super) fn servers_member(
    layout: &Layout,
    place: &Place,
    id: &str,
    entry: &ServerEntry,
) -> String {
    if place.inline {
        let server = server_member(layout, place, Form::McpServers, id, entry);
        return format!("\"mcpServers\": {{{server}}}");
    }
    let inner = Place {
        indent: layout.inner(place),
        inline: false,
        multiline: true,
        pad: false,
        inner: None,
    };
    let server = server_member(layout, &inner, Form::McpServers, id, entry);
    let eol = layout.eol;
    format!(
        "\"mcpServers\": {{{eol}{}{server}{eol}{}}}",
        inner.indent, place.indent
    )
}

/// A server entry of `form`: `"ID": {...}` in an object, `{"id": "ID", ...}` in an array.
pub(super) fn server_member(
    layout: &Layout,
    place: &Place,
    form: Form,
    id: &str,
    entry: &ServerEntry,
) -> String {
    let fields = fields(form, id, entry);
    let object = if place.multiline && !place.inline {
        let inner = layout.inner(place);
        let unit = inner
            .strip_prefix(place.indent.as_str())
            .filter(|unit| !unit.is_empty())
            .unwrap_or(&layout.step)
            .to_owned();
        multi_line(&fields, &place.indent, &inner, &unit, layout.eol)
    } else {
        one_line(&fields, place.pad)
    };
    match form {
        Form::Array => object,
        Form::McpServers | Form::VsCode => format!("{}: {object}", quote(id)),
    }
}

/// `\r\n` when the file's first line ends so, else `\n`.
fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(n) if text[..n].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |n| n + 1)
}

/// The spaces and tabs that start the line holding `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = line_start(text, at);
    let line = &text[start..];
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..width.min(at - start)]
}

/// Only spaces and tabs precede `at` on its line.
fn blank_before(text: &str, at: usize) -> bool {
    text[line_start(text, at)..at]
        .bytes()
        .all(|b| b == b' ' || b == b'\t')
}

/// The indentation of the first key of an object value, when that key has a line of its own.
fn first_key_indent<'t>(text: &'t str, value: &Span) -> Option<&'t str> {
    let Kind::Object(members) = &value.kind else {
        return None;
    };
    let first = members.first()?;
    blank_before(text, first.key_start).then(|| line_indent(text, first.key_start))
}

/// Past the spaces, tabs and one comment that follow `at` on its line.
fn line_tail(text: &str, at: usize) -> usize {
    let skip = |from: usize| {
        from + text[from..].len() - text[from..].trim_start_matches([' ', '\t']).len()
    };
    let at = skip(at);
    let rest = &text[at..];
    if rest.starts_with("//") {
        let end = rest.find('\n').map_or(text.len(), |n| at + n);
        return if text[..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
    }
    if let Some(body) = rest.strip_prefix("/*")
        && let Some(n) = body.find("*/")
        && !body[..n].contains('\n')
    {
        return skip(at + n + 4);
    }
    at
}

/// `at` ends its line (or the text).
fn at_eol(text: &str, at: usize) -> bool {
    let rest = &text[at..];
    rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n")
}
