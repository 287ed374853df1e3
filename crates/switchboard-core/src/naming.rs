//! How a canonical tool id (server, tool) becomes the name a client sees, and back.
//!
//! Exposed name = `<prefix><separator><tool>` (prefix defaults to the server id; an empty
//! prefix means pass-through). Names are limited to MCP's `[A-Za-z0-9_.-]` and to
//! [`MAX_NAME_LEN`] characters so every LLM API accepts them. The scheme for a name that
//! would be longer, or that holds other characters:
//!
//! 1. every character outside `[A-Za-z0-9_.-]` becomes `_`;
//! 2. if the result is longer than 64 characters, it is cut to 55 characters and
//!    `_` plus the first 8 hex digits of the SHA-256 of the *unshortened* name is appended.
//!
//! The result is deterministic (same inputs, same name on every start and every replica);
//! reversal goes through the catalog's name table, never by parsing, so shortened names
//! resolve exactly.

use sha2::{Digest, Sha256};

/// Longest name every LLM function-calling API accepts.
pub const MAX_NAME_LEN: usize = 64;

const HASH_HEX_DIGITS: usize = 8;

/// Builds the exposed name of `tool` under `prefix` with `separator`.
pub fn exposed_name(prefix: &str, separator: &str, tool: &str) -> String {
    let joined = if prefix.is_empty() {
        tool.to_owned()
    } else {
        format!("{prefix}{separator}{tool}")
    };
    fit_name(&joined)
}

/// Makes `name` a valid exposed name: allowed characters only, at most [`MAX_NAME_LEN`].
pub fn fit_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect();
    let cleaned = if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    };
    if cleaned.len() <= MAX_NAME_LEN && cleaned == name {
        return cleaned;
    }
    if cleaned.len() <= MAX_NAME_LEN {
        // Characters were replaced: two different names could now coincide, so mark it.
        return with_hash(
            &cleaned,
            name,
            cleaned.len().min(MAX_NAME_LEN - HASH_HEX_DIGITS - 1),
        );
    }
    with_hash(&cleaned, name, MAX_NAME_LEN - HASH_HEX_DIGITS - 1)
}

fn with_hash(cleaned: &str, original: &str, keep: usize) -> String {
    let digest = Sha256::digest(original.as_bytes());
    let hex = crate::hex::encode(&digest[..HASH_HEX_DIGITS / 2]);
    // `cleaned` is ASCII, so byte slicing is character slicing.
    format!("{}_{hex}", &cleaned[..keep])
}

/// Whether `c` may appear in an exposed tool name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_with_separator() {
        assert_eq!(
            exposed_name("github", "__", "create_issue"),
            "github__create_issue"
        );
        assert_eq!(exposed_name("", "__", "create_issue"), "create_issue");
    }

    #[test]
    fn long_names_are_shortened_deterministically_within_the_limit() {
        let tool = "a_really_long_tool_name_that_goes_on_and_on_and_on_forever_and_ever";
        let first = exposed_name("server", "__", tool);
        assert_eq!(first.len(), MAX_NAME_LEN);
        assert_eq!(first, exposed_name("server", "__", tool));
        assert!(first.starts_with("server__a_really_long"));
        let other = exposed_name("server", "__", &format!("{tool}_2"));
        assert_ne!(first, other, "different long names must not coincide");
    }

    #[test]
    fn foreign_characters_are_replaced_and_marked() {
        let name = exposed_name("my server", "__", "tool/one");
        assert!(name.chars().all(is_name_char), "{name}");
        assert_ne!(name, exposed_name("my_server", "__", "tool_one"));
    }
}
