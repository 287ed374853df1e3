//! The operator side of the admin endpoint.

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use axum::body::Bytes;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};
use switchboard::manager::{Operation, Request, State};

use super::{AdminFile, admin_path};

/// The most an admin answer may be (the list of pending approvals, with their arguments).
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;
/// How long an admin request waits for the gateway's answer (a change may start a server and
/// drain another: its connect and drain timeouts, 30 s each by default, fit).
const ANSWER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// The `wait_ms` a long poll's path asks the gateway to wait, if any.
fn long_poll_wait(path: &str) -> std::time::Duration {
    let waited = path
        .split_once('?')
        .into_iter()
        .flat_map(|(_, query)| query.split('&'))
        .find_map(|pair| pair.strip_prefix("wait_ms="))
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or(0);
    std::time::Duration::from_millis(waited)
}

/// A connection to a running gateway's admin endpoint.
pub struct AdminClient {
    file: AdminFile,
}

impl AdminClient {
    pub fn open(explicit: Option<&Path>) -> anyhow::Result<Self> {
        let file = AdminFile::read(&admin_path(explicit)?)?;
        Ok(Self { file })
    }

    /// The admin endpoint of a live gateway running the config this command would load
    /// (`--config`, `$SWITCHBOARD_CONFIG`, `./switchboard.toml`, the user's, or the built-in
    /// default — as `status` judges), so a command meant for one gateway never reaches
    /// another. An `--admin-file` given without a config names its gateway itself, as does an
    /// admin file that names no config.
    pub fn for_config(admin_file: Option<&Path>, config: Option<&Path>) -> anyhow::Result<Self> {
        let admin = Self::open(admin_file)?;
        if !admin.alive() {
            bail!(
                "the gateway that wrote {} is not running (is `switchboard serve` running? or pass --admin-file)",
                admin_path(admin_file)?.display()
            );
        }
        let named = config.is_some()
            || std::env::var_os("SWITCHBOARD_CONFIG").is_some_and(|value| !value.is_empty());
        if admin_file.is_some() && !named {
            return Ok(admin);
        }
        // An admin file that names no config (the built-in default, or a gateway from before
        // admin files named theirs) is taken at its word.
        let Some(theirs) = admin.config() else {
            return Ok(admin);
        };
        let ours = crate::commands::located_config_file(config)?;
        if !admin.runs(ours.as_deref()) {
            let describe = |path: Option<&Path>| {
                path.map_or_else(
                    || "the built-in default".to_owned(),
                    |p| p.display().to_string(),
                )
            };
            bail!(
                "the gateway at {} runs {}, not {} (the config this command loads): pass the --admin-file of the gateway running it, or --config",
                admin.url(),
                describe(Some(theirs)),
                describe(ours.as_deref())
            );
        }
        Ok(admin)
    }

    /// Sends one admin request (`path` under the endpoint's URL) and returns its JSON answer.
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.file.url);
        let mut headers = HeaderMap::new();
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", self.file.token))
            .context("the admin file's token is not a valid HTTP header value")?;
        bearer.set_sensitive(true);
        headers.insert(AUTHORIZATION, bearer);
        let body = match body {
            Some(body) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        // A gateway that is stopped (SIGSTOP) or wedged still accepts the connection: the
        // answer is waited for at most this long (a long poll's wait on top).
        let patience = ANSWER_PATIENCE + long_poll_wait(path);
        let request =
            switchboard_mcp::upstream::http::request(method, &url, headers, body, ANSWER_LIMIT);
        let (status, answer) = tokio::time::timeout(patience, request)
            .await
            .map_err(|_| {
                anyhow!(
                    "the gateway at {} did not answer within {} s (is it stopped or overloaded? pid {})",
                    self.file.url,
                    patience.as_secs(),
                    self.file.pid
                )
            })?
            .map_err(|error| {
                anyhow!("the admin request failed (is the gateway still running?): {error}")
            })?;
        let text = String::from_utf8_lossy(&answer);
        if !status.is_success() {
            // A refused change: {"error": {"code", "message"}}.
            if let Ok(body) = serde_json::from_str::<Value>(&text)
                && let Some(message) = body.pointer("/error/message").and_then(Value::as_str)
            {
                let code = body
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                bail!("{message} [{code}]");
            }
            bail!("the gateway answered {status}: {text}");
        }
        serde_json::from_str(&text).context("the gateway's answer is not JSON")
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send(Method::POST, path, Some(body)).await
    }

    /// The running gateway's config file, as its admin file says.
    pub fn config(&self) -> Option<&Path> {
        self.file.config.as_deref()
    }

    /// Whether the gateway runs `config` (`None`: the built-in default): the same file once
    /// symlinks and relative paths are resolved.
    pub fn runs(&self, config: Option<&Path>) -> bool {
        let canonical = |path: &Path| std::fs::canonicalize(path).ok();
        match (self.config(), config) {
            (Some(theirs), Some(ours)) => {
                canonical(theirs).is_some() && canonical(theirs) == canonical(ours)
            }
            (None, None) => true,
            _ => false,
        }
    }

    /// Whether the gateway that wrote the admin file is still alive.
    pub fn alive(&self) -> bool {
        self.file.is_running()
    }

    pub fn url(&self) -> &str {
        &self.file.url
    }

    pub async fn set_tier(
        &self,
        session: Option<&str>,
        agent: Option<&str>,
        tier: Option<&str>,
    ) -> anyhow::Result<Value> {
        let body = json!({"session": session, "agent": agent, "tier": tier});
        self.send(Method::POST, "/tier", Some(body)).await
    }

    pub async fn approvals(&self) -> anyhow::Result<Value> {
        self.send(Method::GET, "/approvals", None).await
    }

    pub async fn answer(
        &self,
        id: &str,
        approve: bool,
        reason: Option<&str>,
        by: &str,
    ) -> anyhow::Result<Value> {
        let body = json!({"approve": approve, "reason": reason, "by": by});
        self.send(
            Method::POST,
            &format!("/approvals/{}", encode(id)),
            Some(body),
        )
        .await
    }

    /// Searches the gateway's registries (a search operation, waited for) and returns the
    /// finished operation: its `result` is `{query, servers: [...]}`.
    pub async fn registry_search(&self, query: &str, limit: usize) -> anyhow::Result<Operation> {
        let path = format!("/registry/search?query={}&limit={limit}", encode(query));
        Ok(serde_json::from_value(self.get(&path).await?)?)
    }

    /// Queues an operation (as the operator's) and returns its id.
    pub async fn queue_operation(&self, request: &Request) -> anyhow::Result<String> {
        let answer = self
            .send(
                Method::POST,
                "/operations",
                Some(serde_json::to_value(request)?),
            )
            .await?;
        answer["id"]
            .as_str()
            .map(str::to_owned)
            .context("the gateway's answer has no operation id")
    }

    /// The newest operations first, at most `limit`, optionally in one state.
    pub async fn operations(
        &self,
        state: Option<State>,
        limit: usize,
    ) -> anyhow::Result<Vec<Operation>> {
        let mut path = format!("/operations?limit={limit}");
        if let Some(state) = state {
            path.push_str(&format!("&state={}", state.as_str()));
        }
        let answer = self.get(&path).await?;
        Ok(serde_json::from_value(answer["operations"].clone())?)
    }

    /// One operation. With `wait`, once it is over or `wait` passed (60 s at most) — or, with
    /// `since`, as soon as it has more than `since` steps.
    pub async fn operation(
        &self,
        id: &str,
        wait: Option<std::time::Duration>,
        since: Option<usize>,
    ) -> anyhow::Result<Operation> {
        let mut path = format!("/operations/{}", encode(id));
        if let Some(wait) = wait {
            path.push_str(&format!("?wait_ms={}", wait.as_millis()));
            if let Some(since) = since {
                path.push_str(&format!("&since={since}"));
            }
        }
        Ok(serde_json::from_value(self.get(&path).await?)?)
    }

    pub async fn cancel_operation(
        &self,
        id: &str,
        reason: Option<&str>,
    ) -> anyhow::Result<Operation> {
        let path = format!("/operations/{}/cancel", encode(id));
        let answer = self.post(&path, json!({"reason": reason})).await?;
        Ok(serde_json::from_value(answer)?)
    }

    /// Gives a waiting operation values for its inputs (secret ones end up in the gateway's
    /// secrets file only).
    pub async fn operation_input(
        &self,
        id: &str,
        values: &std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<Operation> {
        let path = format!("/operations/{}/input", encode(id));
        let answer = self.post(&path, json!({"values": values})).await?;
        Ok(serde_json::from_value(answer)?)
    }
}

/// Percent-encodes `text` for a URL's path segment or query value.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_poll_is_waited_for_as_long_as_it_asks() {
        assert_eq!(
            long_poll_wait("/operations/x?wait_ms=5000"),
            std::time::Duration::from_secs(5)
        );
        assert_eq!(
            long_poll_wait("/operations?state=queued&wait_ms=250"),
            std::time::Duration::from_millis(250)
        );
        assert_eq!(long_poll_wait("/status"), std::time::Duration::ZERO);
        assert_eq!(encode("a#b?c"), "a%23b%3Fc");
    }
}
