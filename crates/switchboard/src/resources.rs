//! Resources of every server, URIs unchanged, and `resources/read` routed to the owner.
//!
//! A caller sees, reads and subscribes to the resources of the servers it may see
//! ([`Host::servers_seen_by`]: its view holds one of their tools, or opens the server as a whole);
//! another server's URI is not found, as an unknown one.
//!
//! Routing, among those servers, in order: a URI some server listed; the servers whose
//! resource template's fixed prefix matches, the longest prefix first; a URI a tool of some
//! server returned (a `resource_link` or an embedded resource, recorded when the result passed
//! through, when no listing or template names an owner, at most [`MAX_LINK_ROUTES`] of them);
//! else each server that serves resources, in config order, until one has it — all of them
//! within one call timeout, not one each.
//!
//! With `[shared] redis`, a session's subscriptions are kept in its shared state
//! (`crate::sessions::shared`) and the updates a server sends are told to the other replicas
//! on the event bus, so they reach the session's GET stream on whichever replica serves it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::{Caller, ServerId, ToolOutcome};
use switchboard_mcp::jsonrpc::{RpcError, code};
use switchboard_mcp::upstream::client::{ClientError, RpcClient};

use crate::Host;
use crate::fleet::Member;

/// The most URIs from tool results remembered for routing; the oldest go first.
pub(crate) const MAX_LINK_ROUTES: usize = 10_000;

/// URIs tool results linked to, and the server whose tool returned each, oldest first out.
#[derive(Debug, Default)]
pub(crate) struct LinkRoutes {
    servers: HashMap<String, ServerId>,
    order: VecDeque<String>,
}

impl LinkRoutes {
    fn insert(&mut self, uri: &str, server: &ServerId) {
        if let Some(known) = self.servers.get_mut(uri) {
            *known = server.clone();
            return;
        }
        while self.order.len() >= MAX_LINK_ROUTES {
            if let Some(oldest) = self.order.pop_front() {
                self.servers.remove(&oldest);
            }
        }
        self.servers.insert(uri.to_owned(), server.clone());
        self.order.push_back(uri.to_owned());
    }

    fn get(&self, uri: &str) -> Option<&ServerId> {
        self.servers.get(uri)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.servers.len()
    }
}

/// The fixed part of a URI template, before its first expression (`file:///{path}` →
/// `file:///`).
fn template_prefix(template: &Value) -> &str {
    let template = template
        .get("uriTemplate")
        .and_then(Value::as_str)
        .unwrap_or("");
    template.split('{').next().unwrap_or("")
}

impl Host {
    /// The fleet's servers `caller` may see the prompts and resources of, in config order.
    pub(crate) fn members_seen_by(&self, caller: &Caller) -> Vec<Arc<Member>> {
        let seen = self.servers_seen_by(caller);
        self.inner
            .fleet
            .load()
            .members
            .iter()
            .filter(|member| seen.contains(&member.plan.spec.id))
            .cloned()
            .collect()
    }

    /// The resources of the servers `caller` may see; a URI two servers list is listed once,
    /// as the first server's (where reads of it go).
    pub(crate) fn resources(&self, caller: &Caller) -> Vec<Value> {
        let mut seen = std::collections::HashSet::new();
        self.members_seen_by(caller)
            .iter()
            .flat_map(|m| m.supervisor().status().extras.resources.to_vec())
            .filter(|resource| {
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                seen.insert(uri.to_owned())
            })
            .collect()
    }

    /// The resource templates of the servers `caller` may see.
    pub(crate) fn resource_templates(&self, caller: &Caller) -> Vec<Value> {
        self.members_seen_by(caller)
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
        let fleet = self.inner.fleet.load_full();
        // A URI a listing or a template names an owner for is routed there: a link in one
        // server's result never takes another server's resource over.
        let owned = |uri: &str| {
            fleet
                .members
                .iter()
                .any(|member| lists(member, uri) || matching_template(member, uri).is_some())
        };
        let unowned: Vec<&str> = std::iter::once(first)
            .chain(uris)
            .filter(|uri| !owned(uri))
            .collect();
        if unowned.is_empty() {
            return;
        }
        let mut routes = self
            .inner
            .resource_routes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for uri in unowned {
            routes.insert(uri, server);
        }
    }

    /// `resources/read` of `uri` for `caller`, on the servers it may see.
    pub(crate) async fn read_resource(
        &self,
        caller: &Caller,
        uri: &str,
    ) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let not_found = || {
            RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("Resource not found: {uri}"),
            )
        };
        let candidates = self.resource_candidates(caller, uri);
        // One call timeout for them all: an unknown URI tried on every server costs the
        // slowest server's bound, not the sum.
        let Some(bound) = candidates.iter().map(|m| m.plan.call_timeout).max() else {
            return Err(not_found());
        };
        let deadline = tokio::time::Instant::now() + bound;
        let mut answered_error = None;
        let mut unavailable = None;
        for member in candidates {
            let Some(client) = member.supervisor().client() else {
                continue;
            };
            let _lease = member.connection.lease();
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let timeout = member.plan.call_timeout.min(left);
            if timeout.is_zero() {
                break;
            }
            match self
                .forward(&client, "resources/read", json!({"uri": uri}), timeout)
                .await
            {
                Ok(result) => return Ok(result),
                // A server's own answer says more than another's silence or absence.
                Err(error) if error.code != code::INTERNAL_ERROR => {
                    answered_error.get_or_insert(error);
                }
                Err(error) => unavailable = Some(error),
            }
        }
        Err(answered_error.or(unavailable).unwrap_or_else(not_found))
    }

    /// The most likely owner of `uri` among the servers `caller` may see, if any could own it.
    pub(crate) fn resource_owner(&self, caller: &Caller, uri: &str) -> Option<Arc<Member>> {
        self.resource_candidates(caller, uri).into_iter().next()
    }

    /// Servers `caller` may see that may own `uri`, most likely first (the module doc).
    pub(crate) fn resource_candidates(&self, caller: &Caller, uri: &str) -> Vec<Arc<Member>> {
        let members = self.members_seen_by(caller);
        if let Some(member) = members.iter().find(|m| lists(m, uri)) {
            return vec![member.clone()];
        }
        let mut templated: Vec<(usize, &Arc<Member>)> = members
            .iter()
            .filter_map(|m| matching_template(m, uri).map(|prefix| (prefix, m)))
            .collect();
        if !templated.is_empty() {
            // Longest prefix first; the sort is stable, so config order breaks ties.
            templated.sort_by_key(|(prefix, _)| std::cmp::Reverse(*prefix));
            return templated.into_iter().map(|(_, m)| m.clone()).collect();
        }
        let routed = self
            .inner
            .resource_routes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(uri)
            .cloned();
        if let Some(member) =
            routed.and_then(|server| members.iter().find(|m| m.plan.spec.id == server))
        {
            return vec![member.clone()];
        }
        members
            .into_iter()
            .filter(|m| {
                m.supervisor()
                    .status()
                    .capabilities
                    .get("resources")
                    .is_some()
            })
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

/// Whether `member` listed a resource of this URI.
fn lists(member: &Member, uri: &str) -> bool {
    member
        .supervisor()
        .status()
        .extras
        .resources
        .iter()
        .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
}

/// The length of the longest fixed prefix of `member`'s resource templates that `uri` starts
/// with, if one does (an empty prefix matches nothing).
fn matching_template(member: &Member, uri: &str) -> Option<usize> {
    member
        .supervisor()
        .status()
        .extras
        .resource_templates
        .iter()
        .map(template_prefix)
        .filter(|prefix| !prefix.is_empty() && uri.starts_with(prefix))
        .map(str::len)
        .max()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_routes_keep_the_newest_and_forget_the_oldest_past_the_bound() {
        let mut routes = LinkRoutes::default();
        let (a, b) = (ServerId::new("a"), ServerId::new("b"));
        for n in 0..MAX_LINK_ROUTES + 5 {
            routes.insert(&format!("mem://{n}"), &a);
        }
        assert_eq!(routes.len(), MAX_LINK_ROUTES);
        assert_eq!(routes.get("mem://0"), None, "the oldest went first");
        assert_eq!(
            routes.get(&format!("mem://{}", MAX_LINK_ROUTES + 4)),
            Some(&a)
        );
        // A link seen again is re-routed, not added twice.
        routes.insert("mem://10", &b);
        assert_eq!(routes.get("mem://10"), Some(&b));
        assert_eq!(routes.len(), MAX_LINK_ROUTES);
    }

    #[test]
    fn a_template_prefix_is_its_text_before_the_first_expression() {
        assert_eq!(
            template_prefix(&json!({"uriTemplate": "https://api.github.com/repos/{owner}/{repo}"})),
            "https://api.github.com/repos/"
        );
        assert_eq!(template_prefix(&json!({"uriTemplate": "{+url}"})), "");
        assert_eq!(template_prefix(&json!({})), "");
    }
}
