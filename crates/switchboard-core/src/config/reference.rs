//! How a value that names `${VAR}` references is shown where the value itself would be
//! redacted (`servers show`, the ledger's change rows): a reference says where a secret is
//! kept, it is not one, so it is shown as written — except a reference's `:-default`, which
//! may be a literal secret and is redacted.

use std::collections::BTreeMap;

use super::tree::{Node, Value};

/// What stands in for a reference's default.
const REDACTED_DEFAULT: &str = "[redacted]";

/// `text` as written when it holds a `${VAR}` reference, each default redacted
/// (`${TOKEN:-[redacted]}`); `None` for a value with no reference (a literal, to redact
/// whole) or one that is not well formed (the config then fails to load anyway).
pub fn shown_reference(text: &str) -> Option<String> {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    let mut references = 0;
    while let Some(index) = rest.find('$') {
        shown.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            shown.push_str("$$");
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            shown.push('$');
            rest = after;
            continue;
        };
        let end = body.find('}')?;
        match body[..end].split_once(":-") {
            Some((name, _)) => {
                shown.push_str(&format!("${{{name}:-{REDACTED_DEFAULT}}}"));
            }
            None => shown.push_str(&format!("${{{}}}", &body[..end])),
        }
        references += 1;
        rest = &body[end + 1..];
    }
    shown.push_str(rest);
    (references > 0).then_some(shown)
}

/// The entries of a table of strings (`env`, `headers`) that hold a reference, as
/// [`shown_reference`] shows them, keyed `PREFIX.KEY`.
pub(super) fn references_in(node: Option<&Node>, prefix: &str) -> BTreeMap<String, String> {
    let Some(Value::Table(entries)) = node.map(|node| &node.value) else {
        return BTreeMap::new();
    };
    entries
        .iter()
        .filter_map(|(key, _, value)| match &value.value {
            Value::String(text) => Some((format!("{prefix}.{key}"), shown_reference(text)?)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::shown_reference;

    #[test]
    fn references_are_shown_and_literals_and_defaults_are_not() {
        assert_eq!(shown_reference("${API_KEY}").as_deref(), Some("${API_KEY}"));
        assert_eq!(
            shown_reference("Bearer ${env:TOKEN}").as_deref(),
            Some("Bearer ${env:TOKEN}")
        );
        assert_eq!(
            shown_reference("${KEY:-sk-literal}").as_deref(),
            Some("${KEY:-[redacted]}")
        );
        assert_eq!(shown_reference("sk-literal"), None);
        assert_eq!(
            shown_reference("cost $$5"),
            None,
            "an escaped $ is no reference"
        );
        assert_eq!(shown_reference("$${NOT}"), None);
        assert_eq!(shown_reference("${UNCLOSED"), None);
    }
}
