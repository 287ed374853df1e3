//! English stopwords: function words that say nothing about which tool a task needs.
//! A table, kept sorted for binary search.

const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "etc",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "may",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Words that frame a request to an assistant ("help me", "I want", "tell me", "give me")
/// rather than say what is needed. Almost no tool text uses them, so their IDF is the highest
/// of all and a stray match (a "give feedback" tool) outranks the tools a task is about.
/// Dropped by the stemmed tokenizer only; the plain baseline keeps them. Sorted.
const REQUEST_WORDS: &[&str] = &[
    "give", "hello", "help", "hi", "kindly", "know", "like", "need", "tell", "thank", "thanks",
    "want",
];

/// Whether a lowercase word only frames a request (see [`REQUEST_WORDS`]).
pub fn is_request_word(word: &str) -> bool {
    REQUEST_WORDS.binary_search(&word).is_ok()
}

/// Whether a lowercase word is a stopword.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_so_binary_search_works() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_stopword("the") && !is_stopword("file"));
        assert!(REQUEST_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_request_word("help") && !is_request_word("search"));
    }
}
