//! Bearer tokens of agents, stored as salted SHA-256 hashes (`sha256$<salt>$<hash>`), in the
//! config (`[agents.X] tokens = [...]`) or in a token file that `switchboard token create`
//! appends to. A token is shown once, when it is created; only its hash is kept.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchboard_mcp::front::http::Authenticator;

/// One stored token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredToken {
    pub agent: String,
    /// `sha256$<salt hex>$<hash hex>`.
    pub hash: String,
    /// When it was created (RFC 3339), for operators.
    #[serde(default)]
    pub created: Option<String>,
}

/// The token file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenFile {
    pub tokens: Vec<StoredToken>,
}

/// Every token the gateway accepts.
#[derive(Debug, Clone, Default)]
pub struct TokenStore {
    tokens: Vec<StoredToken>,
}

use switchboard_core::hex::encode as hex;

fn digest(salt: &str, token: &str) -> String {
    hex(&Sha256::new()
        .chain_update(salt.as_bytes())
        .chain_update(token.as_bytes())
        .finalize())
}

/// A new token and its stored form.
pub fn new_token(agent: &str) -> (String, StoredToken) {
    let token = format!(
        "sbt_{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let salt = format!("{:032x}", rand::random::<u128>());
    let stored = StoredToken {
        agent: agent.to_owned(),
        hash: format!("sha256${salt}${}", digest(&salt, &token)),
        created: Some(humantime_now()),
    };
    (token, stored)
}

fn humantime_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("unix:{now}")
}

/// Whether `token` matches a stored `sha256$salt$hash`.
pub fn matches(stored: &str, token: &str) -> bool {
    let mut parts = stored.split('$');
    let (Some("sha256"), Some(salt), Some(hash), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    same_secret(&digest(salt, token), hash)
}

/// Whether two secrets are equal, in a time that does not depend on where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Whether text is a stored token's form (the config validator's rule).
pub use switchboard_core::config::is_token_hash as is_stored_form;

impl TokenFile {
    /// Reads a token file; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|error| format!("token file {} is not valid: {error}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(format!(
                "cannot read token file {}: {error}",
                path.display()
            )),
        }
    }

    /// Writes the file, readable by its owner only.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        crate::private_file::write(path, text.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    }
}

impl TokenStore {
    pub fn new(tokens: Vec<StoredToken>) -> Self {
        Self { tokens }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Authenticator for TokenStore {
    fn agent_for(&self, token: &str) -> Option<String> {
        self.tokens
            .iter()
            .find(|stored| matches(&stored.hash, token))
            .map(|stored| stored.agent.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_their_salted_hash() {
        let (token, stored) = new_token("npc");
        assert!(token.starts_with("sbt_") && token.len() == 68);
        assert!(is_stored_form(&stored.hash), "{}", stored.hash);
        assert!(!stored.hash.contains(&token), "only the hash is kept");
        let store = TokenStore::new(vec![stored.clone()]);
        assert_eq!(store.agent_for(&token).as_deref(), Some("npc"));
        assert_eq!(store.agent_for("sbt_wrong"), None);
        assert!(!matches("sha256$x", &token) && !matches("md5$a$b", &token));
        let (other, _) = new_token("npc");
        assert_ne!(token, other);
    }
}
