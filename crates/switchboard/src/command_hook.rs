//! Hooks that run an external command, in the style of Claude Code hooks.
//!
//! The command gets the call as one JSON object on stdin:
//! `{"event": "pre_call" | "post_call", "call_id", "agent", "session", "tool", "server",
//! "upstream_tool", "arguments", "result"}` (`result` only after the call). It answers on
//! stdout, or says nothing:
//!
//! - exit 0 with no output: allow the call / keep the result;
//! - exit 0 with `{"decision": "deny", "reason": "..."}` (or `"block"`, Claude Code's word):
//!   deny the call (pre_call) / withhold the result (post_call);
//! - exit 0 with `{"arguments": {...}}`: run the call with these arguments (validated again);
//! - exit 0 with `{"result": {CallToolResult}}`: replace the result (post_call);
//! - exit 2: deny, with stderr as the reason;
//! - any other exit, a timeout, more than [`MAX_OUTPUT`] bytes on stdout, any other
//!   `decision`, or output that is not such JSON: the hook failed, and its `on_failure` rule
//!   decides (deny by default): a decision it does not know is never taken for an allow.
//!
//! The command runs in a process group of its own, killed whole once the command exits, fails
//! or times out: nothing it started (a `sh` hook's `curl`) outlives it or holds its pipes
//! open. The timeout covers the whole exchange; the input is written while the output is
//! read, and no more output is read than is kept.

use std::process::{Output, Stdio};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::ToolOutcome;
use switchboard_core::agent::{ToolPattern, glob_match};
use switchboard_core::config::{HookConfig, HookEvent};
use switchboard_core::hooks::{After, Before, FailurePolicy, Hook, HookCall, HookFailure};
use switchboard_mcp::upstream::process_group::ProcessGroup;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

/// The most a hook may answer on stdout; more is a failure.
const MAX_OUTPUT: usize = 1 << 20;
/// The most of a hook's stderr kept (for a denial's reason or a failure); the rest is read
/// and dropped, so a chatty hook does not block on a full pipe.
const MAX_STDERR: usize = 4096;

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
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| self.failure(format!("cannot start: {error}")))?;
        // Killed when dropped, on every way out of here.
        let group = ProcessGroup::of(&child);
        let output = tokio::time::timeout(
            self.config.timeout,
            self.exchange(&mut child, &group, input.to_string()),
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
    /// reads its input, or never read it. Too long an answer ends it at once.
    async fn exchange(
        &self,
        child: &mut Child,
        group: &ProcessGroup,
        input: String,
    ) -> Result<Output, HookFailure> {
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.failure("its pipes were not created"));
        };
        let exited = async {
            let status = child.wait().await;
            // What it left running would hold its pipes open.
            group.kill();
            status.map_err(|error| self.failure(format!("could not be waited for: {error}")))
        };
        let ((), stdout, stderr, status) = tokio::try_join!(
            write_input(stdin, input),
            self.read_answer(stdout),
            read_stderr(stderr),
            exited,
        )?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }

    /// Reads stdout to its end, failing once it passes [`MAX_OUTPUT`].
    async fn read_answer(&self, stdout: ChildStdout) -> Result<Vec<u8>, HookFailure> {
        let mut answer = Vec::new();
        stdout
            .take(MAX_OUTPUT as u64 + 1)
            .read_to_end(&mut answer)
            .await
            .map_err(|error| self.failure(format!("its answer could not be read: {error}")))?;
        if answer.len() > MAX_OUTPUT {
            return Err(self.failure(format!("answered more than {MAX_OUTPUT} bytes on stdout")));
        }
        Ok(answer)
    }

    /// The reason of a JSON answer that denies: `None` when it has no `decision`, a failure
    /// when its decision is not one this knows (so its `on_failure` rule decides, and a word
    /// meant as a refusal never lets the call through).
    fn denial(&self, answer: &Map<String, Value>) -> Result<Option<String>, HookFailure> {
        let Some(decision) = answer.get("decision") else {
            return Ok(None);
        };
        match decision.as_str() {
            Some("deny" | "block") => Ok(Some(
                answer
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
                    .to_owned(),
            )),
            _ => Err(self.failure(format!(
                "answered an unknown decision {decision} (known: \"deny\", \"block\")"
            ))),
        }
    }

    /// A post-call answer that the result is not to be delivered.
    fn withheld(&self, reason: &str) -> After {
        After::Replace {
            outcome: Box::new(ToolOutcome::error(format!(
                "result withheld by {}: {reason}",
                self.name
            ))),
        }
    }

    /// What the hook's exit and output say.
    fn answer(&self, output: &Output) -> Result<Answer, HookFailure> {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) if stdout.trim().is_empty() => Ok(Answer::Nothing),
            Some(0) => match serde_json::from_str(stdout.trim()) {
                Ok(Value::Object(answer)) => Ok(Answer::Json(answer)),
                Ok(_) => Err(self.failure("answered JSON that is not an object")),
                Err(error) => {
                    Err(self.failure(format!("answered something that is not JSON ({error})")))
                }
            },
            Some(2) => Ok(Answer::Deny(stderr.trim().to_owned())),
            Some(code) => {
                Err(self.failure(format!("exited with status {code}: {}", stderr.trim())))
            }
            None => Err(self.failure("was killed by a signal")),
        }
    }
}

/// Reads stderr to its end, keeping the first [`MAX_STDERR`] bytes. A failure to read it only
/// shortens the reason.
async fn read_stderr(mut stderr: ChildStderr) -> Result<Vec<u8>, HookFailure> {
    let mut kept = Vec::new();
    let _ = (&mut stderr)
        .take(MAX_STDERR as u64)
        .read_to_end(&mut kept)
        .await;
    let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
    Ok(kept)
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
    Json(Map<String, Value>),
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

    fn is_configured(&self) -> bool {
        true
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
                    if let Some(reason) = self.denial(&answer)? {
                        return Ok(Before::Deny { reason });
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
                Answer::Deny(reason) => Ok(self.withheld(&reason)),
                Answer::Json(answer) => {
                    if let Some(reason) = self.denial(&answer)? {
                        return Ok(self.withheld(&reason));
                    }
                    match answer.get("result") {
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
                    }
                }
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
