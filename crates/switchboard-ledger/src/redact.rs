//! Secrets never reach the ledger: arguments whose name says they are secret (whatever
//! they hold: a list or an object beneath such a name is redacted whole), and values that
//! look like credentials, are replaced by `"[REDACTED]"` at any depth before a row is
//! written. Names are compared without case or punctuation (`privateKey`, `private-key` and
//! `private_key` alike). The argument digest is taken over the original arguments, so
//! identical calls still match.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub const REDACTED: &str = "[REDACTED]";

/// Parts of argument names that mark a secret, compared with the name's letters and
/// digits only, lowercased.
const SECRET_NAMES: [&str; 13] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "auth",
    "credential",
    "privatekey",
    "accesskey",
    "cookie",
    "sessionkey",
];

/// Prefixes of well-known credential formats.
const SECRET_PREFIXES: [&str; 12] = [
    "sk-",
    "sk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "glpat-",
    "Bearer ",
];

fn secret_name(name: &str) -> bool {
    // Letters and digits only, lowercased: on the stack for the usual short key, on the heap
    // for a longer one (whole, so a part past the 64th byte still counts).
    let letters = name
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|byte| byte.to_ascii_lowercase());
    let mut stack = [0u8; 64];
    let heap: Vec<u8>;
    let plain: &[u8] = if name.len() <= stack.len() {
        let mut len = 0;
        for (slot, byte) in stack.iter_mut().zip(letters) {
            *slot = byte;
            len += 1;
        }
        &stack[..len]
    } else {
        heap = letters.collect();
        &heap
    };
    SECRET_NAMES.iter().any(|part| {
        plain
            .windows(part.len())
            .any(|window| window == part.as_bytes())
    })
}

/// Whether a string value looks like a credential.
pub fn looks_secret(text: &str) -> bool {
    if SECRET_PREFIXES
        .iter()
        .any(|prefix| text.starts_with(prefix))
        && text.len() >= 12
    {
        return true;
    }
    // A PEM private key (its lines and spaces are no token characters).
    if text.contains("-----BEGIN") && text.contains("PRIVATE KEY") {
        return true;
    }
    // A JWT: three base64url parts, the first starting with eyJ.
    if text.starts_with("eyJ") && text.split('.').count() == 3 && text.len() > 30 {
        return true;
    }
    // A long run of token characters mixing letters and digits (hex or base64 keys).
    let token_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '='));
    let digits = text.chars().filter(char::is_ascii_digit).count();
    let letters = text.chars().filter(char::is_ascii_alphabetic).count();
    token_chars && text.len() >= 32 && digits >= 4 && letters >= 4
}

fn redact_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(key, inner)| {
            if secret_name(key) {
                (key.clone(), redact_all(inner))
            } else {
                (key.clone(), redact_value(inner))
            }
        })
        .collect()
}

/// Everything under a secret's name: its shape kept (so a reader sees a list of two, say),
/// every value in it redacted.
fn redact_all(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| (key.clone(), redact_all(inner)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_all).collect()),
        Value::Null => Value::Null,
        _ => Value::String(REDACTED.to_owned()),
    }
}

fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(redact_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::String(text) if looks_secret(text) => Value::String(REDACTED.to_owned()),
        other => other.clone(),
    }
}

/// The arguments with secrets replaced.
pub fn redact(arguments: &Map<String, Value>) -> Value {
    // Walked in place: the arguments are copied once, into the redacted value.
    Value::Object(redact_map(arguments))
}

/// SHA-256 of the arguments' JSON (keys in their given order).
pub fn digest(arguments: &Map<String, Value>) -> String {
    let bytes = serde_json::to_vec(arguments).unwrap_or_default();
    switchboard_core::hex::encode(&Sha256::digest(&bytes))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_names_and_values_are_redacted_at_any_depth() {
        let arguments = json!({
            "query": "weather in Paris",
            "api_key": "abc",
            "nested": {"Authorization": "Basic Zm9vOmJhcg==", "list": ["ghp_0123456789abcdefghijABCDEFGHIJ0123"]},
            "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "words": "a perfectly ordinary sentence that is rather long indeed"
        });
        let redacted = redact(arguments.as_object().expect("object"));
        assert_eq!(redacted["query"], "weather in Paris");
        assert_eq!(redacted["api_key"], REDACTED);
        assert_eq!(redacted["nested"]["Authorization"], REDACTED);
        assert_eq!(redacted["nested"]["list"][0], REDACTED);
        assert_eq!(redacted["jwt"], REDACTED);
        assert_eq!(redacted["hex"], REDACTED);
        assert_eq!(
            redacted["words"],
            "a perfectly ordinary sentence that is rather long indeed"
        );
    }

    /// Secrets in lists or objects under a secret's name, names spelled in other cases and
    /// punctuation, and PEM keys are redacted too.
    #[test]
    fn secrets_in_other_shapes_and_spellings_are_redacted() {
        let arguments = json!({
            "password": ["hunter2", "hunter3"],
            "auth": {"user": "bob", "pass": "hunter2", "retries": 3},
            "privateKey": "plain words",
            "private-key": "plain words",
            "accessKey": "x",
            "sessionKey": "x",
            "passphrase": "correct horse",
            "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "path": "/home/alice/notes.txt",
            "count": 3
        });
        let redacted = redact(arguments.as_object().expect("object"));
        assert_eq!(redacted["password"], json!([REDACTED, REDACTED]));
        assert_eq!(
            redacted["auth"],
            json!({"user": REDACTED, "pass": REDACTED, "retries": REDACTED})
        );
        for key in [
            "privateKey",
            "private-key",
            "accessKey",
            "sessionKey",
            "passphrase",
            "pem",
        ] {
            assert_eq!(redacted[key], REDACTED, "{key}");
        }
        assert_eq!(redacted["path"], "/home/alice/notes.txt");
        let long = format!("{}_password", "x".repeat(80));
        let long_name = redact(
            json!({long.clone(): "hunter2"})
                .as_object()
                .expect("object"),
        );
        assert_eq!(
            long_name[&long], REDACTED,
            "a part past the 64th letter counts"
        );
        assert_eq!(redacted["count"], 3);
    }
}
