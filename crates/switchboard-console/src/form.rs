//! Reading `application/x-www-form-urlencoded` bodies and query strings into a map, without
//! an extractor per page: every page reads only the fields it knows, and a field given twice
//! keeps its last value.

use std::collections::HashMap;

use axum::body::Bytes;

/// Fields of a form or query string.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fields(HashMap<String, String>);

impl Fields {
    pub(crate) fn parse(text: &[u8]) -> Self {
        Self(
            url::form_urlencoded::parse(text)
                .map(|(key, value)| (key.into_owned(), value.into_owned()))
                .collect(),
        )
    }

    pub(crate) fn of_query(uri: &axum::http::Uri) -> Self {
        Self::parse(uri.query().unwrap_or("").as_bytes())
    }

    pub(crate) fn of_body(body: &Bytes) -> Self {
        Self::parse(body)
    }

    /// A field's value, trimmed, when it is not empty.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    }

    pub(crate) fn owned(&self, key: &str) -> Option<String> {
        self.get(key).map(str::to_owned)
    }
}

/// Percent-encodes `text` for a query value or path segment.
pub(crate) fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_decoded_trimmed_and_empty_ones_absent() {
        let fields = Fields::parse(b"reason=not+on+a+Friday%21&empty=&minutes=%2015");
        assert_eq!(fields.get("reason"), Some("not on a Friday!"));
        assert_eq!(fields.get("minutes"), Some("15"));
        assert_eq!(fields.get("empty"), None);
        assert_eq!(fields.get("missing"), None);
        assert_eq!(encode("a b&c/d"), "a+b%26c%2Fd");
    }
}
