//! How a value that names `${VAR}` references is shown where the value itself would be
//! redacted (`servers show`, the ledger's change rows): a reference says where a secret is
//! kept, it is not one, so it is shown as written — but a reference's `:-default` may be a
//! literal secret, and so may the text around a reference
//! (`postgres://app:hunter2@${DB_HOST}/db`): each is redacted, except an authorization
//! scheme before it (`Bearer ${TOKEN}`) and white space.

use std::collections::BTreeMap;

use super::tree::{Node, Value};

/// What stands in for a reference's default.
const REDACTED_DEFAULT: &str = "[redacted]";

/// `text` as written when it holds a `${VAR}` reference, each default redacted
/// (`${TOKEN:-[redacted]}`); `None` for a value with no reference (a literal, to redact
/// whole) or one that is not well formed (the config then fails to load anyway).
pub fn shown_reference(text: &str) -> Option<String> {
    let mut shown = String::with_capacity(text.len());
    let mut literal = String::new();
    let mut rest = text;
    let mut references = 0;
    while let Some(index) = rest.find('$') {
        literal.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            literal.push_str("$$");
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            literal.push('$');
            rest = after;
            continue;
        };
        let end = body.find('}')?;
        shown.push_str(&masked(&std::mem::take(&mut literal)));
        match body[..end].split_once(":-") {
            Some((name, _)) => {
                shown.push_str(&format!("${{{name}:-{REDACTED_DEFAULT}}}"));
            }
            None => shown.push_str(&format!("${{{}}}", &body[..end])),
        }
        references += 1;
        rest = &body[end + 1..];
    }
    literal.push_str(rest);
    shown.push_str(&masked(&literal));
    (references > 0).then_some(shown)
}

/// Literal text beside a reference as it is shown: white space and an authorization scheme
/// (`Bearer `, `Basic `, `Token `) as written, anything else redacted — it may be a secret.
fn masked(literal: &str) -> String {
    let word = literal.trim_end();
    let scheme = ["bearer", "basic", "token"]
        .iter()
        .any(|scheme| word.eq_ignore_ascii_case(scheme));
    if word.is_empty() || (scheme && literal.ends_with(' ')) {
        literal.to_owned()
    } else {
        REDACTED_DEFAULT.to_owned()
    }
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
        // The text around a reference may hold a secret of its own.
        assert_eq!(
            shown_reference("postgres://app:hunter2@${DB_HOST}/db").as_deref(),
            Some("[redacted]${DB_HOST}[redacted]")
        );
        assert_eq!(
            shown_reference("sk-live-abc${SUFFIX}").as_deref(),
            Some("[redacted]${SUFFIX}")
        );
        assert_eq!(
            shown_reference("pa$$w${X}").as_deref(),
            Some("[redacted]${X}")
        );
        assert_eq!(
            shown_reference("${USER} ${PASS}").as_deref(),
            Some("${USER} ${PASS}")
        );
        assert_eq!(
            shown_reference("cost $$5"),
            None,
            "an escaped $ is no reference"
        );
        assert_eq!(shown_reference("$${NOT}"), None);
        assert_eq!(shown_reference("${UNCLOSED"), None);
    }
}
