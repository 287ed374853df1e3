//! LLM-safe tool names, as every renderer writes them: the rule lives in
//! `switchboard_core::llm_names`, beside the catalog that maps rendered names back to their
//! tools, so a call by a rendered name resolves on every replica without any state here.

pub use switchboard_core::llm_names::{gemini_name, is_llm_safe, llm_name};

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn rendered_names_are_valid_and_deterministic(names in proptest::collection::hash_set("[A-Za-z0-9_.é/ -]{1,80}", 1..60)) {
            for name in &names {
                let llm = llm_name(name);
                prop_assert!(is_llm_safe(&llm), "{}", llm);
                prop_assert_eq!(&llm_name(name), &llm);
                let gemini = gemini_name(name);
                prop_assert!(is_llm_safe(&gemini), "{}", gemini);
                prop_assert!(gemini.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'), "{}", gemini);
            }
        }
    }
}
