//! Resources of every server, URIs unchanged, and `resources/read` routed to the owner.
//!
//! Routing, in order: a URI some server listed; a URI a tool of some server returned (a
//! `resource_link` or an embedded resource — recorded when the result passed through); the
//! server whose resource template's fixed prefix matches; else each server that serves
//! resources, in config order, until one has it.
//!
//! With `[shared] redis`, a session's subscriptions are kept in its shared state
//! (`crate::sessions::shared`) and the updates a server sends are told to the other replicas
//! on the event bus, so they reach the session's GET stream on whichever replica serves it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::{Caller, ServerId, ToolOutcome};
use switchboard_mcp::jsonrpc::{RpcError, code};
use switchboard_mcp::upstream::client::{ClientError, RpcClient};

use crate::Host;
use crate::fleet::Member;
use crate::shared::sessions::SessionChange;

impl Host {
    pub(crate) fn resources(&self) -> Vec<Value> {
        self.inner
            .fleet
            .load()
            .members
            .iter()
            .flat_map(|m| m.supervisor().status().extras.resources.to_vec())
            .collect()
    }

    pub(crate) fn resource_templates(&self) -> Vec<Value> {
        self.inner
            .fleet
            .load()
            .members
            .iter()
            .flat_map(|m| m.supervisor().status().extras.resource_templates.to_vec())
            .collect()
    }

    /// Records the URIs a tool result links to, so they can be read back.
    pub(crate) fn remember_resource_links(&self, server: &ServerId, outcome: &ToolOutcome) {
        let mut uris = outcome.content.iter().filter_map(|block| {
            match block.get("type").and_then(Value::as_str) {
                Some("resource_link") => block.get("uri").and_then(Value::as_str),
                Some("resource") => block
                    .get("resource")
                    .and_then(|r| r.get("uri"))
                    .and_then(Value::as_str),
                _ => None,
            }
        });
        // Most results carry no resource: no lock then.
        let Some(first) = uris.next() else {
            return;
        };
        let Ok(mut routes) = self.inner.resource_routes.lock() else {
            return;
        };
        for uri in std::iter::once(first).chain(uris) {
            routes.insert(uri.to_owned(), server.clone());
        }
    }

    pub(crate) async fn read_resource(&self, uri: &str) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let not_found = || {
            RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("Resource not found: {uri}"),
            )
        };
        let candidates = self.resource_candidates(uri);
        let mut last_error = None;
        for member in candidates {
            let Some(client) = member.supervisor().client() else {
                continue;
            };
            let _lease = member.connection.lease();
            let timeout = member.plan.call_timeout;
            match self
                .forward(&client, "resources/read", json!({"uri": uri}), timeout)
                .await
            {
                Ok(result) => return Ok(result),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(not_found))
    }

    /// `resources/subscribe` or `resources/unsubscribe` of `caller` on the server that owns
    /// `uri`; with sessions' state shared, the session's subscription is then kept for every
    /// replica, so its updates reach the session's GET stream wherever it is.
    pub(crate) async fn subscribe_resource(
        &self,
        caller: &Caller,
        uri: &str,
        subscribe: bool,
    ) -> Result<Value, RpcError> {
        let answer = self.subscribe_upstream(uri, subscribe).await?;
        let change = if subscribe {
            SessionChange::Subscribe(uri)
        } else {
            SessionChange::Unsubscribe(uri)
        };
        if self.inner.options.shared_sessions.is_some() {
            let applied = self.change_session(caller, change).await.map_err(|refused| {
                RpcError::new(
                    code::INTERNAL_ERROR,
                    format!("the subscription to {uri} cannot be shared with the other replicas now: {refused}"),
                )
            })?;
            if let Some(note) = applied.only_here {
                tracing::warn!(target: "switchboard::shared", "a subscription to {uri} is {note}");
            }
        }
        Ok(answer)
    }

    async fn subscribe_upstream(&self, uri: &str, subscribe: bool) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let method = if subscribe {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let mut last_error = None;
        for member in self.resource_candidates(uri) {
            let supervisor = member.supervisor();
            let subscribable = supervisor
                .status()
                .capabilities
                .pointer("/resources/subscribe")
                .and_then(Value::as_bool)
                == Some(true);
            let Some(client) = supervisor.client().filter(|_| subscribable) else {
                continue;
            };
            match self
                .forward(
                    &client,
                    method,
                    json!({"uri": uri}),
                    member.plan.call_timeout,
                )
                .await
            {
                Ok(result) => return Ok(result),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!("no server offers subscriptions to {uri}"),
            )
        }))
    }

    /// The most likely owner of `uri`, if any server could own it.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<Arc<Member>> {
        self.resource_candidates(uri).into_iter().next()
    }

    /// Servers that may own `uri`, most likely first.
    fn resource_candidates(&self, uri: &str) -> Vec<Arc<Member>> {
        let fleet = self.inner.fleet.load_full();
        let members = &fleet.members;
        let listed = members.iter().find(|m| {
            m.supervisor()
                .status()
                .extras
                .resources
                .iter()
                .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
        });
        if let Some(member) = listed {
            return vec![member.clone()];
        }
        let routed = self
            .inner
            .resource_routes
            .lock()
            .ok()
            .and_then(|routes| routes.get(uri).cloned());
        if let Some(member) = routed.and_then(|server| fleet.find(&server)) {
            return vec![member.clone()];
        }
        let templated = members.iter().find(|m| {
            m.supervisor()
                .status()
                .extras
                .resource_templates
                .iter()
                .any(|t| {
                    let template = t.get("uriTemplate").and_then(Value::as_str).unwrap_or("");
                    let prefix = template.split('{').next().unwrap_or("");
                    !prefix.is_empty() && uri.starts_with(prefix)
                })
        });
        if let Some(member) = templated {
            return vec![member.clone()];
        }
        members
            .iter()
            .filter(|m| {
                m.supervisor()
                    .status()
                    .capabilities
                    .get("resources")
                    .is_some()
            })
            .cloned()
            .collect()
    }

    /// Sends one request to an upstream under a deadline; JSON-RPC errors pass through.
    pub(crate) async fn forward(
        &self,
        client: &Arc<RpcClient>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let mut result = within(
            client,
            method,
            timeout,
            client.request(method, Some(params)),
        )
        .await?;
        // The front sets each era's `resultType`, except a request for the client's input
        // (2026-07-28 `input_required`), which goes back as the server gave it.
        if let Value::Object(map) = &mut result
            && map.get("resultType").and_then(Value::as_str) != Some("input_required")
        {
            map.remove("resultType");
        }
        Ok(result)
    }
}

/// Waits for `answer`, `client`'s answer to `method`, at most `timeout`: a JSON-RPC error
/// passes through, a lost connection or the deadline becomes an error naming the server.
pub(crate) async fn within<T>(
    client: &RpcClient,
    method: &str,
    timeout: Duration,
    answer: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, RpcError> {
    match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(ClientError::Rpc(error))) => Err(error),
        Ok(Err(ClientError::Disconnected(reason))) => Err(RpcError::new(
            code::INTERNAL_ERROR,
            format!("server '{}' is unavailable: {reason}", client.server()),
        )),
        Err(_) => Err(RpcError::new(
            code::INTERNAL_ERROR,
            format!(
                "server '{}' did not answer {method} within {} ms",
                client.server(),
                timeout.as_millis()
            ),
        )),
    }
}
