//! Hooks that run an external command, in the style of Claude Code hooks.
//!
//! The command gets the call as one JSON object on stdin:
//! `{"event": "pre_call" | "post_call", "call_id", "agent", "session", "tool", "server",
//! "upstream_tool", "arguments", "result"}` (`result` only after the call). It answers on
//! stdout, or says nothing:
//!
//! - exit 0 with no output: allow the call / keep the result;
//! - exit 0 with `{"decision": "deny", "reason": "..."}`: deny the call (pre_call);
//! - exit 0 with `{"arguments": {...}}`: run the call with these arguments (validated again);
//! - exit 0 with `{"result": {CallToolResult}}`: replace the result (post_call);
//! - exit 2: deny, with stderr as the reason;
//! - any other exit, a timeout, or output that is not such JSON: the hook failed, and its
//!   `on_failure` rule decides (deny by default).

use std::process::{Output, Stdio};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_core::ToolOutcome;
use switchboard_core::agent::{ToolPattern, glob_match};
use switchboard_core::config::{HookConfig, HookEvent};
use switchboard_core::hooks::{After, Before, FailurePolicy, Hook, HookCall, HookFailure};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};

/// The most output read from a hook.
const MAX_OUTPUT: usize = 1 << 20;

/// One `[[hooks]]` entry, runnable.
pub struct CommandHook {
    name: String,
    config: HookConfig,
    tools: Vec<ToolPattern>,
}

impl CommandHook {
    pub fn new(index: usize, config: HookConfig) -> Self {
        Self {
            name: format!("hooks[{index}] ({})", config.command.display()),
            tools: config.tools.iter().map(|g| ToolPattern::parse(g)).collect(),
            config,
        }
    }

    fn matches_tool(&self, call: &HookCall) -> bool {
        self.tools.is_empty()
            || self.tools.iter().any(|pattern| match pattern {
                ToolPattern::Exposed(glob) => glob_match(glob, &call.tool),
                ToolPattern::Server { server, tool } => {
                    glob_match(server, &call.server) && glob_match(tool, &call.upstream_tool)
                }
            })
    }

    fn failure(&self, reason: impl Into<String>) -> HookFailure {
        HookFailure {
            hook: self.name.clone(),
            reason: reason.into(),
        }
    }

    /// Runs the command with `input` on stdin, and reads its answer. The timeout covers the
    /// whole exchange, writing the input included.
    async fn run(&self, input: Value) -> Result<Answer, HookFailure> {
        let mut child = tokio::process::Command::new(&self.config.command)
            .args(&self.config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| self.failure(format!("cannot start: {error}")))?;
        let output = tokio::time::timeout(
            self.config.timeout,
            self.exchange(&mut child, input.to_string()),
        )
        .await
        .map_err(|_| {
            self.failure(format!(
                "no answer within {} ms",
                self.config.timeout.as_millis()
            ))
        })??;
        self.answer(&output)
    }

    /// Writes the input while reading the output and waiting for the exit, all at once, so
    /// neither side waits on a full pipe: a hook may answer (or write to stderr) before it
    /// reads its input, or never read it.
    async fn exchange(&self, child: &mut Child, input: String) -> Result<Output, HookFailure> {
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.failure("its pipes were not created"));
        };
        let exited = async {
            child
                .wait()
                .await
                .map_err(|error| self.failure(format!("could not be waited for: {error}")))
        };
        let ((), stdout, stderr, status) = tokio::try_join!(
            write_input(stdin, input),
            self.read_output(stdout),
            self.read_output(stderr),
            exited,
        )?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }

    async fn read_output(&self, mut pipe: impl AsyncRead + Unpin) -> Result<Vec<u8>, HookFailure> {
        let mut output = Vec::new();
        pipe.read_to_end(&mut output)
            .await
            .map_err(|error| self.failure(format!("could not be read: {error}")))?;
        Ok(output)
    }

    /// What the hook's exit and output say.
    fn answer(&self, output: &Output) -> Result<Answer, HookFailure> {
        let stdout = String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(MAX_OUTPUT)]);
        let stderr = String::from_utf8_lossy(&output.stderr[..output.stderr.len().min(4096)]);
        match output.status.code() {
            Some(0) if stdout.trim().is_empty() => Ok(Answer::Nothing),
            Some(0) => serde_json::from_str(stdout.trim())
                .map(Answer::Json)
                .map_err(|error| {
                    self.failure(format!("answered something that is not JSON ({error})"))
                }),
            Some(2) => Ok(Answer::Deny(stderr.trim().to_owned())),
            Some(code) => {
                Err(self.failure(format!("exited with status {code}: {}", stderr.trim())))
            }
            None => Err(self.failure("was killed by a signal")),
        }
    }
}

/// Writes the call to the hook's stdin and closes it. A hook that does not read its input
/// (and exits first: a broken pipe) is its own business.
async fn write_input(mut stdin: ChildStdin, input: String) -> Result<(), HookFailure> {
    let _ = stdin.write_all(input.as_bytes()).await;
    let _ = stdin.shutdown().await;
    Ok(())
}

enum Answer {
    Nothing,
    Json(Value),
    Deny(String),
}

fn call_json(event: &str, call: &HookCall) -> Value {
    json!({
        "event": event,
        "call_id": call.call_id,
        "agent": call.agent,
        "session": call.session,
        "tool": call.tool,
        "server": call.server,
        "upstream_tool": call.upstream_tool,
        "arguments": call.arguments,
    })
}

impl Hook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn applies(&self, call: &HookCall) -> bool {
        let agent_ok = self.config.agents.is_empty()
            || call
                .agent
                .as_ref()
                .is_some_and(|agent| self.config.agents.iter().any(|a| glob_match(a, agent)));
        agent_ok && self.matches_tool(call)
    }

    fn on_failure(&self) -> FailurePolicy {
        if self.config.fail_open {
            FailurePolicy::Open
        } else {
            FailurePolicy::Closed
        }
    }

    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, HookFailure>> {
        Box::pin(async move {
            if self.config.event != HookEvent::PreCall {
                return Ok(Before::Allow);
            }
            match self.run(call_json("pre_call", call)).await? {
                Answer::Nothing => Ok(Before::Allow),
                Answer::Deny(reason) => Ok(Before::Deny {
                    reason: if reason.is_empty() {
                        "no reason given".to_owned()
                    } else {
                        reason
                    },
                }),
                Answer::Json(answer) => {
                    if answer.get("decision").and_then(Value::as_str) == Some("deny") {
                        let reason = answer
                            .get("reason")
                            .and_then(Value::as_str)
                            .unwrap_or("no reason given");
                        return Ok(Before::Deny {
                            reason: reason.to_owned(),
                        });
                    }
                    match answer.get("arguments") {
                        None => Ok(Before::Allow),
                        Some(Value::Object(arguments)) => Ok(Before::Rewrite {
                            arguments: arguments.clone(),
                        }),
                        Some(_) => {
                            Err(self.failure("answered \"arguments\" that are not an object"))
                        }
                    }
                }
            }
        })
    }

    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        outcome: &'a ToolOutcome,
    ) -> BoxFuture<'a, Result<After, HookFailure>> {
        Box::pin(async move {
            if self.config.event != HookEvent::PostCall {
                return Ok(After::Keep);
            }
            let mut input = call_json("post_call", call);
            if let Value::Object(map) = &mut input {
                map.insert(
                    "result".into(),
                    serde_json::to_value(outcome).unwrap_or(Value::Null),
                );
            }
            match self.run(input).await? {
                Answer::Nothing => Ok(After::Keep),
                Answer::Deny(reason) => Ok(After::Replace {
                    outcome: Box::new(ToolOutcome::error(format!(
                        "result withheld by {}: {reason}",
                        self.name
                    ))),
                }),
                Answer::Json(answer) => match answer.get("result") {
                    None => Ok(After::Keep),
                    Some(result) => serde_json::from_value(result.clone())
                        .map(|outcome| After::Replace {
                            outcome: Box::new(outcome),
                        })
                        .map_err(|error| {
                            self.failure(format!(
                                "answered a result that is not a CallToolResult ({error})"
                            ))
                        }),
                },
            }
        })
    }
}

/// The hooks of a config, in file order.
pub fn command_hooks(hooks: &[HookConfig]) -> Vec<std::sync::Arc<dyn Hook>> {
    hooks
        .iter()
        .enumerate()
        .map(|(index, config)| {
            std::sync::Arc::new(CommandHook::new(index, config.clone())) as std::sync::Arc<dyn Hook>
        })
        .collect()
}
