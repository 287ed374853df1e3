//! Text → index terms. One tokenizer serves documents and queries so both sides agree.
//!
//! Steps: split on anything that is not a letter or digit (so `_ - . /` separate words), split
//! camelCase and `HTMLParser`-style runs, lowercase, drop English stopwords and request words
//! ("help", "tell"), stem (Snowball English, or nothing for the plain baseline). Han, kana and Hangul have no spaces: a run of such
//! characters becomes its overlapping character bigrams (a lone character stays a unigram), the
//! usual way to index CJK text without a dictionary. This module never panics on any input.

use rust_stemmers::{Algorithm, Stemmer};

use crate::stopwords::{is_request_word, is_stopword};

/// Longest token kept; longer runs (base64 blobs, hashes) carry no meaning for search.
const MAX_TOKEN_CHARS: usize = 40;

/// Longest run without whitespace, in bytes, read as words. A longer run with no CJK in it is
/// an encoded blob (a pasted base64 image, hex, minified data): split on its `+ / =` and case
/// changes it would yield hundreds of short accidental terms, so it is skipped whole. Paths
/// and URLs are rewritten into words before they get here (see `paths`).
const MAX_RUN_BYTES: usize = 200;

/// How words are normalised after splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalisation {
    /// Lowercase only, keep stopwords (the plain BM25 baseline).
    Plain,
    /// Lowercase, drop stopwords, Snowball English stemming.
    Stemmed,
}

/// Splits and normalises text into terms.
pub struct Tokenizer {
    normalisation: Normalisation,
    stemmer: Stemmer,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Tokenizer")
            .field("normalisation", &self.normalisation)
            .finish()
    }
}

impl Tokenizer {
    pub fn new(normalisation: Normalisation) -> Self {
        Self {
            normalisation,
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// The terms of `text`, in order, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        self.each_term(text, |term| terms.push(term));
        terms
    }

    /// Calls `sink` with each term of `text`, in order.
    pub fn each_term(&self, text: &str, mut sink: impl FnMut(String)) {
        // Almost no text holds a blob: split it whole, and go run by run only when one is there.
        let pieces = if text.split_whitespace().any(is_blob) {
            text.split_whitespace()
                .filter(|run| !is_blob(run))
                .flat_map(split_words)
                .collect()
        } else {
            split_words(text)
        };
        for piece in pieces {
            match piece {
                Piece::Word(word) => {
                    if let Some(term) = self.normalise(&word) {
                        sink(term);
                    }
                }
                Piece::Cjk(chars) => cjk_terms(&chars, &mut sink),
            }
        }
    }

    fn normalise(&self, word: &str) -> Option<String> {
        if word.chars().count() > MAX_TOKEN_CHARS {
            return None;
        }
        let lower = word.to_lowercase();
        match self.normalisation {
            Normalisation::Plain => Some(lower),
            Normalisation::Stemmed => {
                if is_stopword(&lower) || is_request_word(&lower) || is_noise(&lower) {
                    return None;
                }
                Some(self.stemmer.stem(&lower).into_owned())
            }
        }
    }
}

/// Whether a run without whitespace is an encoded blob rather than words.
fn is_blob(run: &str) -> bool {
    run.len() > MAX_RUN_BYTES && !run.chars().any(is_cjk)
}

/// Single letters and pure numbers longer than four digits (ids, timestamps) match by accident.
fn is_noise(word: &str) -> bool {
    let mut chars = word.chars();
    match (chars.next(), chars.next()) {
        (Some(only), None) => only.is_alphabetic(),
        _ => word.len() > 4 && word.chars().all(|c| c.is_ascii_digit()),
    }
}

enum Piece {
    Word(String),
    Cjk(Vec<char>),
}

/// Han, Hiragana, Katakana and Hangul: scripts written without spaces between words.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B–F and supplements
}

fn split_words(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut word = String::new();
    let mut cjk = Vec::new();
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_cjk(c) {
            flush_word(&mut word, &mut pieces);
            cjk.push(c);
        } else if c.is_alphanumeric() {
            if !cjk.is_empty() {
                pieces.push(Piece::Cjk(std::mem::take(&mut cjk)));
            }
            if let Some(before) = previous.filter(|_| !word.is_empty())
                && is_camel_boundary(before, c, chars.peek().copied())
            {
                flush_word(&mut word, &mut pieces);
            }
            word.push(c);
        } else {
            flush_word(&mut word, &mut pieces);
            if !cjk.is_empty() {
                pieces.push(Piece::Cjk(std::mem::take(&mut cjk)));
            }
        }
        previous = Some(c);
    }
    flush_word(&mut word, &mut pieces);
    if !cjk.is_empty() {
        pieces.push(Piece::Cjk(cjk));
    }
    pieces
}

/// `getFile` splits before `F`; `HTMLParser` splits before the `P` of `Parser`.
fn is_camel_boundary(before: char, current: char, next: Option<char>) -> bool {
    if !current.is_uppercase() {
        return false;
    }
    if before.is_lowercase() {
        return true;
    }
    before.is_uppercase() && next.is_some_and(char::is_lowercase)
}

fn flush_word(word: &mut String, pieces: &mut Vec<Piece>) {
    if !word.is_empty() {
        pieces.push(Piece::Word(std::mem::take(word)));
    }
}

fn cjk_terms(chars: &[char], sink: &mut impl FnMut(String)) {
    if let [only] = chars {
        sink(only.to_string());
        return;
    }
    for pair in chars.windows(2) {
        sink(pair.iter().collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stemmed(text: &str) -> Vec<String> {
        Tokenizer::new(Normalisation::Stemmed).terms(text)
    }

    fn plain(text: &str) -> Vec<String> {
        Tokenizer::new(Normalisation::Plain).terms(text)
    }

    #[test]
    fn snake_kebab_dot_and_slash_separate_words() {
        assert_eq!(
            plain("read_file list-dirs a.b/c"),
            ["read", "file", "list", "dirs", "a", "b", "c"]
        );
    }

    #[test]
    fn camel_case_and_acronyms_split() {
        assert_eq!(plain("getBaziDetail"), ["get", "bazi", "detail"]);
        assert_eq!(
            plain("HTMLParser parseJSON"),
            ["html", "parser", "parse", "json"]
        );
    }

    #[test]
    fn stopwords_dropped_and_words_stemmed() {
        assert_eq!(
            stemmed("Read the files of a repository"),
            ["read", "file", "repositori"]
        );
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        assert_eq!(plain("八字"), ["八字"]);
        assert_eq!(plain("搜索关键词"), ["搜索", "索关", "关键", "键词"]);
        assert_eq!(plain("从bing_search返回"), ["从", "bing", "search", "返回"]);
        assert_eq!(plain("字"), ["字"]);
    }

    #[test]
    fn hostile_input_yields_nothing_or_bounded_terms() {
        assert!(stemmed("").is_empty());
        assert!(stemmed("  \u{0} \u{200B} !!! ").is_empty());
        let blob = "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAABHNCSVQICAgI".repeat(100);
        assert!(stemmed(&blob).is_empty());
        assert_eq!(
            stemmed(&format!("What does this base64 image mean? {blob}")),
            ["base64", "imag", "mean"]
        );
        // A short run of the same kind is still read: only long runs are blobs.
        assert!(!stemmed("iVBORw0KGgo/AAAANSUhEUg").is_empty());
        // Text without spaces in a script written without them is not a blob.
        let chinese = "使用必应搜索指定的关键词并返回搜索结果列表".repeat(10);
        assert!(!stemmed(&chinese).is_empty());
    }
}
