//! LLM-safe tool names: every LLM API accepts `[A-Za-z0-9_-]{1,64}`. A name already in that
//! form is kept; any other becomes its safe characters (others → `_`), cut to fit, plus `_`
//! and 8 hex digits of the SHA-256 of the original — deterministic, so every replica and
//! every call renders the same name. Gemini also wants a name to start with a letter or `_`:
//! [`gemini_name`] prefixes `_` to one that does not.
//!
//! The renderers (`switchboard-render`) write these names; the [`crate::Catalog`] maps them
//! back ([`rendered_names`]), so a model calling a tool by the name it was shown reaches it.
//! Reversal goes through that table, never by parsing.

use sha2::{Digest, Sha256};

/// The longest name every LLM API accepts.
const MAX: usize = 64;

fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn hashed(name: &str, digits: usize) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let hex = crate::hex::encode(&digest);
    let stem: String = name
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect();
    let keep = MAX - 1 - digits;
    let stem: String = stem.chars().take(keep).collect();
    format!("{stem}_{}", &hex[..digits])
}

/// Whether every LLM API takes `name` as it is.
pub fn is_llm_safe(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX && name.chars().all(safe)
}

/// The LLM-safe form of one name.
pub fn llm_name(name: &str) -> String {
    if is_llm_safe(name) {
        name.to_owned()
    } else {
        hashed(name, 8)
    }
}

fn gemini_takes(safe_name: &str) -> bool {
    safe_name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// The name Gemini takes: the LLM-safe name, or that of `_` and the name when the LLM-safe
/// name does not start with a letter or `_`.
pub fn gemini_name(name: &str) -> String {
    let safe = llm_name(name);
    if gemini_takes(&safe) {
        safe
    } else {
        llm_name(&format!("_{name}"))
    }
}

/// The names the renderers write for `name` other than `name` itself (none for a name every
/// API takes as it is: no hashing then).
pub fn rendered_names(name: &str) -> Vec<String> {
    if is_llm_safe(name) && gemini_takes(name) {
        return Vec::new();
    }
    let mut names = Vec::with_capacity(2);
    for rendered in [llm_name(name), gemini_name(name)] {
        if rendered != name && !names.contains(&rendered) {
            names.push(rendered);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_stay_and_others_are_hashed() {
        assert_eq!(llm_name("github__create_issue"), "github__create_issue");
        let dotted = llm_name("fs.read_file");
        assert!(dotted.starts_with("fs_read_file_") && dotted.len() == "fs_read_file_".len() + 8);
        assert_eq!(llm_name("fs.read_file"), dotted, "deterministic");
        assert!(llm_name(&"x".repeat(100)).len() <= 64);
        assert_eq!(gemini_name("1password__list"), "_1password__list");
        assert!(rendered_names("github__create_issue").is_empty());
        assert_eq!(rendered_names("1password__list"), ["_1password__list"]);
        assert_eq!(rendered_names("fs.read_file"), [dotted]);
    }
}
