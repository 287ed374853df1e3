//! A server's required inputs (`environmentVariables` and headers of its `server.json`):
//! which are still missing, asking the client for them by elicitation, and keeping secrets
//! out of everything but the gateway's secrets file. A secret is written there at once
//! (mode 0600) under `SWITCHBOARD_SECRET_<SERVER>_<NAME>_<HASH>`, and the server's config entry
//! refers to it as `${…}`; the value never reaches an operation, the ledger, a log line or
//! `status`.
//!
//! The key says only which server id and input a secret is for, not which package: a key
//! left by an earlier operation (one that was cancelled, failed, or cut off by a restart)
//! may be another package's token. So a stored secret counts as given only when the
//! operation at hand wrote it (`owned`: the keys on its [`super::Operation::secrets`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use switchboard_core::CallContext;
use switchboard_core::config::{Environment, GatewayEnvironment};
use switchboard_registry::Input;

/// The secrets-file key of input `name` of server `server`: readable (both upper-cased,
/// anything else than letters and digits as `_`) and made unique by a hash of the exact
/// pair, so `my-server` and `my_server` — or server `a` with input `B_C` and server `a_b`
/// with input `C` — never share a secret.
pub(crate) fn secret_key(server: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    let digest = Sha256::digest(format!("{server}\u{0}{name}").as_bytes());
    format!(
        "SWITCHBOARD_SECRET_{}_{}_{}",
        clean(server),
        clean(name),
        switchboard_core::hex::encode(&digest[..4])
    )
}

/// The keys of `server`'s secret inputs that this operation wrote (`owned`) and that have a
/// value in the secrets file: what its install uses, and records.
pub(crate) fn stored_secret_keys(server: &str, inputs: &[Input], owned: &[String]) -> Vec<String> {
    inputs
        .iter()
        .filter(|input| given_secret(server, input, owned))
        .map(|input| secret_key(server, &input.name))
        .collect()
}

/// Removes exactly these keys from the secrets file.
pub(crate) fn forget_secrets(keys: &[String]) {
    let path = GatewayEnvironment::default_secrets_path();
    for key in keys {
        if let Err(error) = switchboard_core::config::remove_secret(&path, key) {
            tracing::warn!("cannot remove a secret from {}: {error}", path.display());
        }
    }
}

/// Those of `keys` that have no value in this gateway's secrets file (or environment).
pub(crate) fn missing_secrets(keys: &[String]) -> Vec<String> {
    let environment = GatewayEnvironment::new();
    keys.iter()
        .filter(|key| environment.var(key).is_none())
        .cloned()
        .collect()
}

/// Whether `input` is a secret this operation gave (its key among `owned`) and the secrets
/// file still has it. A stored value under a key the operation did not write is not given.
fn given_secret(server: &str, input: &Input, owned: &[String]) -> bool {
    if !input.secret {
        return false;
    }
    let key = secret_key(server, &input.name);
    owned.contains(&key) && GatewayEnvironment::new().var(&key).is_some()
}

/// The required inputs that have neither a value, nor a default, nor (for a secret) a value
/// this operation gave (`owned`: the keys it wrote; none before it is queued).
pub(crate) fn missing<'a>(
    server: &str,
    inputs: &'a [Input],
    values: &BTreeMap<String, String>,
    owned: &[String],
) -> Vec<&'a Input> {
    inputs
        .iter()
        .filter(|input| input.required)
        .filter(|input| input.default.is_none())
        .filter(|input| !values.contains_key(&input.name))
        .filter(|input| !given_secret(server, input, owned))
        .collect()
}

/// Values given for a server's inputs, checked: the plain ones (for the config entry) and
/// the secrets, not written anywhere yet ([`Screened::keep`] writes them).
pub(crate) struct Screened {
    pub(crate) plain: BTreeMap<String, String>,
    /// (secrets-file key, value).
    secrets: Vec<(String, String)>,
}

impl Screened {
    /// Writes the secrets to the secrets file; the keys written, and the plain values.
    pub(crate) fn keep(self) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
        let path = GatewayEnvironment::default_secrets_path();
        let mut written = Vec::new();
        for (key, value) in self.secrets {
            if let Err(error) = switchboard_core::config::write_secret(&path, &key, &value) {
                forget_secrets(&written);
                return Err(format!(
                    "cannot keep the secret in {}: {error}",
                    path.display()
                ));
            }
            written.push(key);
        }
        Ok((written, self.plain))
    }
}

/// Takes values given for `server`'s inputs: secrets are written to the secrets file (their
/// keys returned first), the rest are returned (to be written into the config entry).
/// Unknown names are refused.
pub(crate) fn accept(
    server: &str,
    inputs: &[Input],
    given: BTreeMap<String, String>,
) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
    screen(server, inputs, given)?.keep()
}

/// Checks values given for `server`'s inputs — each must name one, and one with choices
/// must be one of them — and sets the secrets apart, writing nothing.
pub(crate) fn screen(
    server: &str,
    inputs: &[Input],
    given: BTreeMap<String, String>,
) -> Result<Screened, String> {
    let mut plain = BTreeMap::new();
    let mut secrets = Vec::new();
    for (name, value) in given {
        let Some(input) = inputs.iter().find(|input| input.name == name) else {
            let known: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(format!(
                "the server takes no input '{name}' (its inputs: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        };
        if !input.choices.is_empty() && !input.choices.contains(&value) {
            return Err(format!(
                "input '{name}' must be one of {}",
                input.choices.join(", ")
            ));
        }
        if input.secret {
            secrets.push((secret_key(server, &name), value));
        } else {
            plain.insert(name, value);
        }
    }
    Ok(Screened { plain, secrets })
}

/// What the config entry gets for each input: a secret this operation gave (`owned`) as a
/// `${…}` reference, the others as their value or default (inputs with neither are left
/// out).
pub(crate) fn entries(
    server: &str,
    inputs: &[Input],
    values: &BTreeMap<String, String>,
    owned: &[String],
) -> BTreeMap<String, String> {
    inputs
        .iter()
        .filter_map(|input| {
            let value = if given_secret(server, input, owned) {
                format!("${{{}}}", secret_key(server, &input.name))
            } else {
                switchboard_core::config::literal(
                    values.get(&input.name).or(input.default.as_ref())?,
                )
            };
            Some((input.name.clone(), value))
        })
        .collect()
}

/// Asks the calling client for `wanted` by elicitation, when it declared it can answer.
/// `Ok(None)` when it cannot (the operator is asked instead); the values otherwise, checked
/// but not kept: the request they go with is screened again and admitted first.
pub(crate) async fn elicit(
    server: &str,
    inputs: &[Input],
    wanted: &[&Input],
    ctx: &CallContext,
) -> Result<Option<BTreeMap<String, String>>, String> {
    let Some(caller) = ctx
        .caller
        .as_ref()
        .filter(|c| c.supports("elicitation/create"))
    else {
        return Ok(None);
    };
    let mut properties = Map::new();
    for input in wanted {
        let mut property = json!({"type": "string", "title": input.name});
        if let Some(description) = &input.description {
            property["description"] = json!(description);
        }
        if !input.choices.is_empty() {
            property["enum"] = json!(input.choices);
        }
        properties.insert(input.name.clone(), property);
    }
    let names: Vec<&str> = wanted.iter().map(|i| i.name.as_str()).collect();
    let params = json!({
        "message": format!(
            "Server '{server}' needs {} to run. Values are kept by the gateway, never shown to the model.",
            names.join(", ")
        ),
        "requestedSchema": {"type": "object", "properties": properties, "required": names},
    });
    let answer = caller
        .request("elicitation/create", params)
        .await
        .map_err(|error| format!("the client could not answer: {}", error.message))?;
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return Err(format!(
            "the client did not give the inputs ({})",
            answer
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("no answer")
        ));
    }
    let given: BTreeMap<String, String> = answer
        .get("content")
        .and_then(Value::as_object)
        .map(|content| {
            content
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    // Checked here, so the client hears at once what is wrong; kept (the secrets written)
    // only once the request is admitted (`Manager::queue`).
    screen(server, inputs, given.clone())?;
    Ok(Some(given))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_environment_names_and_never_shared() {
        let key = secret_key("my-server", "api.key");
        assert!(
            key.starts_with("SWITCHBOARD_SECRET_MY_SERVER_API_KEY_"),
            "{key}"
        );
        assert!(
            key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{key}"
        );
        assert_ne!(secret_key("my-server", "k"), secret_key("my_server", "k"));
        assert_ne!(secret_key("a", "B_C"), secret_key("a_b", "C"));
        assert_eq!(secret_key("a", "b"), secret_key("a", "b"));
    }
}
