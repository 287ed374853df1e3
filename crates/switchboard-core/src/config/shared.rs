//! `[shared]`: state shared by the replicas of one deployment: the key ring that seals
//! session ids and `requestState` so that any replica opens what another sealed, and Redis,
//! which keeps in one place for every replica the rate limits and concurrency caps, the
//! sessions ended by DELETE, the used `requestState` nonces and the shared result cache
//! (docs/scale-out.md).
//!
//! ```toml
//! [shared]
//! keys = "/etc/switchboard/keys.json"        # made by `switchboard keys create`; relative
//!                                            # paths are taken from the config file's directory
//! redis = "redis://127.0.0.1:6379"           # or "unix:///run/redis/redis.sock"
//! redis_unavailable = "fail_open"            # default; or "fail_closed"
//! replicas = 3                               # fail_open: each replica applies limit/3 alone
//! deployment = "prod"                        # namespaces the keys (default "default")
//! ```

use std::path::PathBuf;

use super::tree::{Node, Value};
use super::validate::Walk;
use crate::limits::WhenUnreachable;

pub(super) const SHARED_KEYS: [&str; 5] = [
    "keys",
    "redis",
    "redis_unavailable",
    "replicas",
    "deployment",
];
const POLICIES: [&str; 2] = ["fail_open", "fail_closed"];
const SCHEMES: [&str; 4] = ["redis://", "rediss://", "unix://", "redis+unix://"];
/// The longest deployment name (it is part of every key).
const MAX_DEPLOYMENT_LEN: usize = 64;

/// `[shared]`: what the replicas of one deployment share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedConfig {
    /// The key ring file (`switchboard keys create FILE`); without one, each process seals
    /// with a random key of its own (one replica).
    pub keys: Option<PathBuf>,
    /// The Redis that holds rate limits and concurrency caps, sessions ended by DELETE and
    /// used approval states; `None`: each process keeps them alone (the embedded default).
    pub redis: Option<String>,
    /// What calls (and session and approval-state checks) meet while Redis is unreachable.
    pub redis_unavailable: WhenUnreachable,
    /// How many replicas share the limits: with `fail_open` each applies limit/replicas on
    /// its own while Redis is unreachable.
    pub replicas: Option<u32>,
    /// The deployment's name inside Redis keys (`switchboard:{deployment}:…`).
    pub deployment: Option<String>,
}

impl SharedConfig {
    /// The deployment's name in keys ("default" unless set).
    pub fn deployment(&self) -> &str {
        self.deployment.as_deref().unwrap_or("default")
    }
}

impl Walk<'_> {
    pub(super) fn shared(&mut self, node: &Node) -> SharedConfig {
        let mut shared = SharedConfig::default();
        let mut policy_set = false;
        for (key, key_pos, value) in self.table(node, "shared") {
            let what = format!("shared.{key}");
            match key.as_str() {
                "keys" => shared.keys = self.path(value, &what),
                "redis" => {
                    let Some(url) = self.string(value, &what) else {
                        continue;
                    };
                    if SCHEMES.iter().any(|scheme| url.starts_with(scheme))
                        && url.len() > "unix://".len()
                    {
                        shared.redis = Some(url);
                    } else {
                        self.problem(
                            value.pos,
                            format!(
                                "{what} must be a redis://, rediss:// or unix:// URL, found '{}'",
                                super::redacted_url(&url)
                            ),
                            Some("e.g. \"redis://127.0.0.1:6379\" or \"unix:///run/redis/redis.sock\"".to_owned()),
                        );
                    }
                }
                "redis_unavailable" => {
                    let Some(text) = self.string(value, &what) else {
                        continue;
                    };
                    match text.as_str() {
                        "fail_open" => shared.redis_unavailable = WhenUnreachable::FailOpen,
                        "fail_closed" => shared.redis_unavailable = WhenUnreachable::FailClosed,
                        other => {
                            self.not_one_of(value.pos, &what, other, &POLICIES, None);
                            continue;
                        }
                    }
                    policy_set = true;
                }
                "replicas" => {
                    shared.replicas = self
                        .count(value, &what)
                        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
                }
                "deployment" => {
                    let Some(name) = self.string(value, &what) else {
                        continue;
                    };
                    if super::server::is_valid_id(&name) && name.len() <= MAX_DEPLOYMENT_LEN {
                        shared.deployment = Some(name);
                    } else {
                        self.problem(
                            value.pos,
                            format!("{what} '{name}' must be 1-64 characters of A-Z a-z 0-9 _ -"),
                            None,
                        );
                    }
                }
                other => self.unknown(*key_pos, other, "shared", &SHARED_KEYS),
            }
        }
        let fails_open = shared.redis_unavailable == WhenUnreachable::FailOpen;
        if shared.redis.is_some() && fails_open && shared.replicas.is_none() {
            let how = if policy_set { "" } else { " (the default)" };
            self.problem(
                node.pos,
                format!(
                    "shared.replicas is missing: with redis_unavailable = \"fail_open\"{how} each \
                     replica applies limit/replicas alone while Redis is unreachable"
                ),
                Some(
                    "add e.g. `replicas = 3`, or set redis_unavailable = \"fail_closed\""
                        .to_owned(),
                ),
            );
        }
        if matches!(node.value, Value::Table(_)) && shared.redis.is_none() && policy_set {
            self.problem(
                node.pos,
                "shared.redis_unavailable has no effect without shared.redis",
                Some("add e.g. redis = \"redis://127.0.0.1:6379\"".to_owned()),
            );
        }
        shared
    }
}
