//! Phrase evidence: pairs of adjacent terms, indexed and queried as terms of their own.
//!
//! "stock price", "word cloud" and "charging station" mean more together than their words do
//! apart: a tool whose name or description says `get stock price` answers "the price of a
//! stock" better than one that mentions a price in one sentence and a stock in another. So the
//! name and description of every tool also index each pair of adjacent terms (after stopwords
//! are dropped and words stemmed, so "price of the stock" and "stock price" differ only in
//! order), and a query adds the pairs of each of its clauses at `SearchConfig::phrase_weight`
//! of a word's weight — the ordered-bigram part of a sequential dependence model. A pair is
//! never a plain term: the tokenizer splits on spaces, and a pair is joined by one.

/// The term standing for `first` followed by `second`.
pub(crate) fn phrase(first: &str, second: &str) -> String {
    let mut pair = String::with_capacity(first.len() + 1 + second.len());
    pair.push_str(first);
    pair.push(' ');
    pair.push_str(second);
    pair
}

/// Whether a term is a pair of adjacent terms rather than a word.
pub(crate) fn is_phrase(term: &str) -> bool {
    term.contains(' ')
}

/// `terms` followed by the pair of every two adjacent terms, in order.
pub(crate) fn with_phrases(mut terms: Vec<String>) -> Vec<String> {
    let words = terms.len();
    for index in 1..words {
        let pair = phrase(&terms[index - 1], &terms[index]);
        terms.push(pair);
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_follow_the_words_and_are_recognisable() {
        let terms = with_phrases(vec!["stock".into(), "price".into(), "today".into()]);
        assert_eq!(
            terms,
            ["stock", "price", "today", "stock price", "price today"]
        );
        assert!(is_phrase(&terms[3]));
        assert!(!is_phrase(&terms[0]));
        assert_eq!(with_phrases(vec!["alone".into()]), ["alone"]);
        assert!(with_phrases(Vec::new()).is_empty());
    }
}
