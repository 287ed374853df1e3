//! What was learnt about a token, kept by the token's SHA-256 (never the token) for a short
//! while: a signature that verified, an introspection answer. An entry lives no longer than
//! the token ([`keep_for`]: until its `exp`, at most [`MAX_KEEP`]); past [`MAX_ENTRIES`] the
//! expired entries go, then all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

/// The longest anything about a token is reused.
pub const MAX_KEEP: Duration = Duration::from_secs(60);
const MAX_ENTRIES: usize = 10_000;

pub type Digest = [u8; 32];

/// The SHA-256 of a token, its key here.
pub fn digest(token: &str) -> Digest {
    let mut digest = [0; 32];
    digest.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref());
    digest
}

/// How long what a token's claims say may be reused: until its `exp` (`wall` is now, in
/// seconds since the epoch), at most [`MAX_KEEP`]; zero without an `exp`.
pub fn keep_for(claims: &Map<String, Value>, wall: u64) -> Duration {
    claims
        .get("exp")
        .and_then(Value::as_u64)
        .map_or(Duration::ZERO, |exp| {
            Duration::from_secs(exp.saturating_sub(wall))
        })
        .min(MAX_KEEP)
}

pub struct TokenCache<T> {
    entries: Mutex<HashMap<Digest, (T, Instant)>>,
}

impl<T: Clone> TokenCache<T> {
    pub fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, digest: &Digest, now: Instant) -> Option<T> {
        let entries = self.entries.lock().ok()?;
        let (value, until) = entries.get(digest)?;
        (*until > now).then(|| value.clone())
    }

    /// Keeps `value` for `keep` (nothing for zero).
    pub fn put(&self, digest: Digest, value: T, now: Instant, keep: Duration) {
        if keep.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(digest, (value, now + keep));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_live_until_exp_and_at_most_a_minute() {
        let claims = |exp: Value| match json!({"exp": exp}) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        assert_eq!(
            keep_for(&claims(json!(1010)), 1000),
            Duration::from_secs(10)
        );
        assert_eq!(keep_for(&claims(json!(99_999)), 1000), MAX_KEEP);
        assert_eq!(keep_for(&claims(json!(900)), 1000), Duration::ZERO);
        assert_eq!(keep_for(&Map::new(), 1000), Duration::ZERO);
        let cache = TokenCache::new();
        let now = Instant::now();
        cache.put(digest("a"), 1, now, Duration::from_secs(10));
        cache.put(digest("b"), 2, now, Duration::ZERO);
        assert_eq!(
            cache.get(&digest("a"), now + Duration::from_secs(9)),
            Some(1)
        );
        assert_eq!(cache.get(&digest("a"), now + Duration::from_secs(10)), None);
        assert_eq!(cache.get(&digest("b"), now), None);
    }
}
