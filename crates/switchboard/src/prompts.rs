//! Prompts of every server under exposed names (`<prefix><separator><prompt>`, the same rule as
//! tools, first server wins on a collision), and `prompts/get` routed back to the owner, whose
//! requests for the client's input reach the client as a tool call's do. A caller lists, gets
//! and completes the prompts of the servers it may see ([`Host::servers_seen_by`]); another
//! server's prompt is unknown to it.

use serde_json::{Map, Value, json};
use switchboard_core::naming::exposed_name;
use switchboard_core::{CallContext, Caller};
use switchboard_mcp::jsonrpc::{RpcError, code};
use switchboard_mcp::upstream::session::{Rounds, input_required_result};

use crate::Host;
use crate::resources::within;

/// One exposed prompt.
pub(crate) struct ExposedPrompt {
    /// The definition with its exposed name.
    pub definition: Value,
    pub server: std::sync::Arc<crate::fleet::Member>,
    pub upstream_name: String,
}

impl Host {
    /// Every server's prompts, in config order, with exposed names.
    pub(crate) fn prompts(&self) -> Vec<ExposedPrompt> {
        let settings = self.inner.settings.load();
        let separator = &settings.naming.separator;
        let fleet = self.inner.fleet.load_full();
        let mut exposed: Vec<ExposedPrompt> = Vec::new();
        for member in &fleet.members {
            let plan = &member.plan;
            for prompt in member.supervisor().status().extras.prompts.iter() {
                let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let public = exposed_name(&plan.prefix, separator, name);
                if exposed
                    .iter()
                    .any(|p| p.definition["name"] == public.as_str())
                {
                    tracing::warn!(server = %plan.spec.id, "prompt '{name}' is hidden: '{public}' is already taken");
                    continue;
                }
                let mut definition = prompt.clone();
                definition["name"] = json!(public);
                exposed.push(ExposedPrompt {
                    definition,
                    server: member.clone(),
                    upstream_name: name.to_owned(),
                });
            }
        }
        exposed
    }

    /// The prompts of the servers `caller` may see.
    pub(crate) fn prompts_for(&self, caller: &Caller) -> Vec<ExposedPrompt> {
        let seen = self.servers_seen_by(caller);
        let mut prompts = self.prompts();
        prompts.retain(|prompt| seen.contains(&prompt.server.plan.spec.id));
        prompts
    }

    /// `prompts/get` on the server that owns the prompt, for `ctx`'s caller: a server that
    /// asks for the client's input gets it as in a call (a modern client answers
    /// `input_required` and retries; a legacy one is asked mid-request).
    pub(crate) async fn get_prompt(
        &self,
        ctx: &CallContext,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let unknown = || RpcError::new(code::INVALID_PARAMS, format!("Unknown prompt: {name}"));
        let caller = Caller::new(ctx.agent.clone(), ctx.session.clone())
            .with_principal(ctx.principal.clone());
        let prompt = self
            .prompts_for(&caller)
            .into_iter()
            .find(|p| p.definition["name"] == name)
            .ok_or_else(unknown)?;
        let client = prompt.server.supervisor().client().ok_or_else(unknown)?;
        let _lease = prompt.server.connection.lease();
        let mut params = Map::new();
        params.insert("name".into(), Value::String(prompt.upstream_name.clone()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), arguments);
        }
        let method = "prompts/get";
        let rounds = client.request_with_rounds(method, name, params, ctx);
        let timeout = prompt.server.plan.call_timeout;
        match within(&client, method, timeout, rounds).await? {
            Rounds::Answered(result) => Ok(result),
            Rounds::InputRequired {
                input_requests,
                request_state,
            } => Ok(input_required_result(input_requests, request_state)),
            Rounds::NotAsked(why) => Err(RpcError::new(code::INTERNAL_ERROR, why)),
        }
    }
}

impl Host {
    /// `completion/complete` for `caller`: a prompt reference goes to the prompt's server under
    /// its own name, a resource reference to the resource's server; no owner `caller` may see,
    /// no suggestions.
    pub(crate) async fn complete(
        &self,
        caller: &Caller,
        mut params: Value,
    ) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let empty = json!({"completion": {"values": [], "hasMore": false}});
        let owner = match params.pointer("/ref/type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = params
                    .pointer("/ref/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let Some(prompt) = self
                    .prompts_for(caller)
                    .into_iter()
                    .find(|p| p.definition["name"] == name.as_str())
                else {
                    return Ok(empty);
                };
                params["ref"]["name"] = json!(prompt.upstream_name);
                Some(prompt.server)
            }
            Some("ref/resource") => {
                let uri = params
                    .pointer("/ref/uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                self.resource_owner(caller, &uri)
            }
            _ => None,
        };
        let Some(member) = owner else {
            return Ok(empty);
        };
        let supervisor = member.supervisor();
        if supervisor
            .status()
            .capabilities
            .get("completions")
            .is_none()
        {
            return Ok(empty);
        }
        let Some(client) = supervisor.client() else {
            return Ok(empty);
        };
        let _lease = member.connection.lease();
        self.forward(
            &client,
            "completion/complete",
            params,
            member.plan.call_timeout,
        )
        .await
    }
}
