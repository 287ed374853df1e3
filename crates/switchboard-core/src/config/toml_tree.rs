//! TOML text → [`Node`] tree, keeping every key's and value's position.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::tree::{Node, Pos, Value};

/// Parses TOML; a syntax error comes back as (line, column, message).
pub fn parse(text: &str) -> Result<Node, (usize, usize, String)> {
    let table = DeTable::parse(text).map_err(|error| {
        let pos = error
            .span()
            .map(|span| Pos::at(text, span.start))
            .unwrap_or_default();
        (
            pos.line,
            pos.column,
            format!("TOML syntax error: {}", error.message().trim()),
        )
    })?;
    let span = table.span();
    let mut out_of_range = None;
    let value = convert_table(text, table.get_ref(), &mut out_of_range);
    // TOML: an integer that cannot be represented losslessly is an error, not some value.
    if let Some((pos, literal)) = out_of_range {
        return Err((
            pos.line,
            pos.column,
            format!(
                "TOML syntax error: the integer {literal} does not fit in 64 bits (TOML integers are from -9223372036854775808 to 9223372036854775807)"
            ),
        ));
    }
    Ok(Node {
        pos: Pos::at(text, span.start),
        value,
    })
}

/// The first integer too large for 64 bits: where it was written, and as written.
type OutOfRange = Option<(Pos, String)>;

/// Entries in file order (the parser's map is sorted by key; the order of servers matters).
fn convert_table(text: &str, table: &DeTable<'_>, out_of_range: &mut OutOfRange) -> Value {
    let mut entries: Vec<_> = table
        .iter()
        .map(|(key, value)| (key.span().start, key, value))
        .collect();
    entries.sort_by_key(|(start, _, _)| *start);
    Value::Table(
        entries
            .into_iter()
            .map(|(start, key, value)| {
                (
                    key.get_ref().to_string(),
                    Pos::at(text, start),
                    convert(text, value, out_of_range),
                )
            })
            .collect(),
    )
}

fn convert(text: &str, value: &Spanned<DeValue<'_>>, out_of_range: &mut OutOfRange) -> Node {
    let pos = Pos::at(text, value.span().start);
    let converted = match value.get_ref() {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            let (sign, body) = match digits.strip_prefix('-') {
                Some(rest) => (-1, rest.to_owned()),
                None => (1, digits.trim_start_matches('+').to_owned()),
            };
            let body = body
                .trim_start_matches("0x")
                .trim_start_matches("0o")
                .trim_start_matches("0b");
            let parsed = match sign {
                -1 => i64::from_str_radix(&format!("-{body}"), i.radix()),
                _ => i64::from_str_radix(body, i.radix()),
            };
            match parsed {
                Ok(n) => Value::Integer(n),
                Err(_) => {
                    let written = text.get(value.span()).unwrap_or(i.as_str());
                    out_of_range.get_or_insert_with(|| (pos, written.to_owned()));
                    Value::Null
                }
            }
        }
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse()
            .map(Value::Float)
            .unwrap_or(Value::Null),
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| convert(text, item, out_of_range))
                .collect(),
        ),
        DeValue::Table(table) => convert_table(text, table, out_of_range),
    };
    Node {
        pos,
        value: converted,
    }
}
