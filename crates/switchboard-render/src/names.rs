//! LLM-safe tool names: every LLM API accepts `[A-Za-z0-9_-]{1,64}`. A name already in that
//! form is kept; any other becomes its safe characters (others → `_`), cut to fit, plus `_`
//! and 8 hex digits of the SHA-256 of the original — deterministic, so every replica and
//! every call renders the same name. [`NameMap`] reverses the mapping and never lets two
//! names collide.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

const MAX: usize = 64;

fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn hashed(name: &str, digits: usize) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let hex = switchboard_core::hex::encode(&digest);
    let stem: String = name
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect();
    let keep = MAX - 1 - digits;
    let stem: String = stem.chars().take(keep).collect();
    format!("{stem}_{}", &hex[..digits])
}

/// The LLM-safe form of one name.
pub fn llm_name(name: &str) -> String {
    if !name.is_empty() && name.len() <= MAX && name.chars().all(safe) {
        name.to_owned()
    } else {
        hashed(name, 8)
    }
}

/// Both directions for one set of names.
#[derive(Debug, Clone, Default)]
pub struct NameMap {
    to_llm: HashMap<String, String>,
    from_llm: HashMap<String, String>,
}

impl NameMap {
    /// Maps every name; if two would collide, the later one gets a longer hash.
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut map = Self::default();
        for name in names {
            if map.to_llm.contains_key(name) {
                continue;
            }
            let mut candidate = llm_name(name);
            let mut digits = 8;
            while map.from_llm.contains_key(&candidate) && digits < 32 {
                digits += 4;
                candidate = hashed(name, digits);
            }
            map.to_llm.insert(name.to_owned(), candidate.clone());
            map.from_llm.insert(candidate, name.to_owned());
        }
        map
    }

    pub fn to_llm(&self, name: &str) -> Option<&str> {
        self.to_llm.get(name).map(String::as_str)
    }

    /// The original name of an LLM-safe name (what `host.resolve_llm_name` answers).
    pub fn resolve(&self, llm: &str) -> Option<&str> {
        self.from_llm.get(llm).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn safe_names_stay_and_others_are_hashed() {
        assert_eq!(llm_name("github__create_issue"), "github__create_issue");
        let dotted = llm_name("fs.read_file");
        assert!(dotted.starts_with("fs_read_file_") && dotted.len() == "fs_read_file_".len() + 8);
        assert_eq!(llm_name("fs.read_file"), dotted, "deterministic");
        assert!(llm_name(&"x".repeat(100)).len() <= 64);
    }

    proptest! {
        #[test]
        fn names_are_valid_injective_and_reversible(names in proptest::collection::hash_set("[A-Za-z0-9_.é/ -]{1,80}", 1..60)) {
            let map = NameMap::new(names.iter().map(String::as_str));
            let mut seen = std::collections::HashSet::new();
            for name in &names {
                let llm = map.to_llm(name).expect("mapped");
                prop_assert!(!llm.is_empty() && llm.len() <= 64 && llm.chars().all(safe), "{}", llm);
                prop_assert!(seen.insert(llm.to_owned()), "collision on {}", llm);
                prop_assert_eq!(map.resolve(llm), Some(name.as_str()));
            }
        }
    }
}
