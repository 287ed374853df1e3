//! Token counts with OpenAI's o200k_base encoding (GPT-4o and later), from the BPE ranks
//! bundled in `tiktoken-rs` — no network. The encoder is built once per process.

/// The number of o200k_base tokens of `text`.
pub fn count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_real_tokens() {
        assert_eq!(super::count(""), 0);
        assert_eq!(super::count("hello"), 1);
        assert!(super::count("The quick brown fox jumps over the lazy dog.") >= 9);
    }
}
