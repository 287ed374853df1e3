//! The tables of a TOML document as `toml_edit` prints them: their document positions (where
//! a new table goes), and the comments in their header prefixes — which of them belong to a
//! header and which only happen to sit above it (kept when the table is removed).

use toml_edit::{DocumentMut, Item, Table};

/// The largest document position in `table` and the tables under it.
pub(super) fn last_position(table: &Table) -> Option<isize> {
    let mut last = table.position();
    for (_, item) in table.iter() {
        let under = match item {
            Item::Table(sub) => last_position(sub),
            Item::ArrayOfTables(array) => array.iter().filter_map(last_position).max(),
            _ => None,
        };
        last = last.max(under);
    }
    last
}

/// Moves every table after position `after` one place down, freeing `after + 1`.
pub(super) fn shift_positions(table: &mut Table, after: isize) {
    if let Some(position) = table.position().filter(|p| *p > after) {
        table.set_position(Some(position + 1));
    }
    for (_, item) in table.iter_mut() {
        match item {
            Item::Table(sub) => shift_positions(sub, after),
            Item::ArrayOfTables(array) => {
                for sub in array.iter_mut() {
                    shift_positions(sub, after);
                }
            }
            _ => {}
        }
    }
}

pub(super) fn prefix_of(table: &Table) -> String {
    table
        .decor()
        .prefix()
        .and_then(|raw| raw.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The comment lines directly above a header (after the last blank line of its prefix).
pub(super) fn attached(prefix: &str) -> String {
    let kept = detached(prefix).len();
    let rest = &prefix[kept..];
    let lines: Vec<&str> = rest.split_inclusive('\n').collect();
    let blank = lines
        .iter()
        .take_while(|l| l.ends_with('\n') && l.trim().is_empty())
        .map(|l| l.len())
        .sum::<usize>();
    rest[blank..].to_owned()
}

/// What a removed header's prefix holds that is not its own: everything before its last blank
/// line, unless that is only blank lines.
fn detached(prefix: &str) -> &str {
    let mut end = 0;
    let mut blank_at = None;
    for line in prefix.split_inclusive('\n') {
        if line.ends_with('\n') && line.trim().is_empty() {
            blank_at = Some(end);
        }
        end += line.len();
    }
    let kept = &prefix[..blank_at.unwrap_or(0)];
    if kept.trim().is_empty() { "" } else { kept }
}

/// A table's place among the printed tables.
struct Printed {
    position: isize,
    path: Vec<(String, Option<usize>)>,
    prefix: String,
}

/// The tables with a header, in the order they are printed (as `toml_edit` orders them).
fn printed_tables(root: &Table) -> Vec<Printed> {
    fn walk(
        table: &Table,
        path: &mut Vec<(String, Option<usize>)>,
        last: &mut isize,
        array: bool,
        out: &mut Vec<Printed>,
    ) {
        if !table.is_dotted() {
            if let Some(position) = table.position() {
                *last = position;
            }
            let shown = array || !(table.is_implicit() && table.get_values().is_empty());
            if !path.is_empty() && shown {
                out.push(Printed {
                    position: *last,
                    path: path.clone(),
                    prefix: prefix_of(table),
                });
            }
        }
        for (key, item) in table.iter() {
            match item {
                Item::Table(sub) => {
                    path.push((key.to_owned(), None));
                    walk(sub, path, last, false, out);
                    path.pop();
                }
                Item::ArrayOfTables(tables) => {
                    for (index, sub) in tables.iter().enumerate() {
                        path.push((key.to_owned(), Some(index)));
                        walk(sub, path, last, true, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut Vec::new(), &mut 0, false, &mut out);
    out.sort_by_key(|printed| printed.position);
    out
}

fn table_at<'t>(root: &'t mut Table, path: &[(String, Option<usize>)]) -> Option<&'t mut Table> {
    let mut table = root;
    for (key, index) in path {
        table = match (table.get_mut(key)?, index) {
            (Item::Table(sub), None) => sub,
            (Item::ArrayOfTables(tables), Some(index)) => tables.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(table)
}

/// Before server `id` is removed: the comments in its tables' prefixes that are not attached
/// to their headers (a file's opening comment, a section banner) move to the next table
/// printed, or to the end of the file.
pub(super) fn keep_detached_comments(doc: &mut DocumentMut, key: &str, id: &str) {
    let removed = [(key.to_owned(), None), (id.to_owned(), None)];
    // Whether nothing is printed before the tables seen so far.
    let mut at_start = doc.as_table().get_values().is_empty();
    let mut pending = String::new();
    let mut moves = Vec::new();
    for printed in printed_tables(doc.as_table()) {
        if printed.path.starts_with(&removed) {
            pending.push_str(detached(&printed.prefix));
            continue;
        }
        if at_start && pending.is_empty() {
            // The file now starts here: no blank lines above the first header.
            let prefix = printed.prefix.trim_start_matches(['\r', '\n']);
            if prefix.len() != printed.prefix.len() {
                moves.push((printed.path, prefix.to_owned()));
            }
        } else if !pending.is_empty() {
            moves.push((printed.path, std::mem::take(&mut pending) + &printed.prefix));
        }
        at_start = false;
    }
    for (path, prefix) in moves {
        if let Some(table) = table_at(doc.as_table_mut(), &path) {
            table.decor_mut().set_prefix(prefix);
        }
    }
    if !pending.is_empty() {
        let trailing = doc.trailing().as_str().unwrap_or_default();
        let trailing = pending + trailing;
        doc.set_trailing(trailing);
    }
}
