//! `switchboard call TOOL`: one call through the full pipeline.
//!
//! Arguments come from `--args JSON` and/or `key=value` pairs (values are parsed as JSON when
//! they parse, else taken as strings: `n=3` is a number, `name=bob` a string).
//!
//! A call that needs an operator's approval is asked at the terminal (whoever runs the
//! command is the operator here); without a terminal it is denied at once, saying why — this
//! process's queue has no other operator. With `[storage] url` the queue is the deployment's,
//! and the call waits for an operator of any replica.
//!
//! With traces configured (`[telemetry]`, `OTEL_*`), the call is traced as a gateway call
//! is — its SERVER span ([`LocalCallSpan`]), the pipeline's and the upstream's spans below it —
//! in the trace `TRACEPARENT` (with `TRACESTATE`, `BAGGAGE`) names, if set (a malformed one is
//! named in a warning and a new trace starts), and the spans are sent before the command
//! exits (`Host::shutdown` waits 2 s at most for the collector).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::usage::usage;
use serde_json::{Map, Value};
use switchboard_core::CallContext;
use switchboard_core::context::unless_cancelled;
use switchboard_core::trace::{BAGGAGE, TRACEPARENT, TRACESTATE, TraceContext};
use switchboard_mcp::front::Backend;
use switchboard_mcp::front::span::LocalCallSpan;
use tokio_util::sync::CancellationToken;

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The tool's exposed name (see `switchboard tools`).
    tool: String,
    /// Arguments as key=value pairs.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Arguments as one JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the MCP CallToolResult as JSON.
    #[arg(long)]
    json: bool,
    /// Call as this agent (one of the config's [agents]), within its permissions.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
}

pub async fn run(config: Option<&Path>, args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = parse_arguments(args.args.as_deref(), &args.pairs)?;
    let host = super::start_host_for_tool(config, args.agent.as_deref(), &args.tool).await?;
    // SIGINT or SIGTERM cancels the call as a gateway call is cancelled when its client goes
    // away: the pipeline ends it and records it as cancelled.
    let mut ctx = CallContext {
        agent: args.agent.clone(),
        trace: trace_of_environment(),
        cancel: host.stop_token(),
        ..CallContext::default()
    };
    let span = LocalCallSpan::start(host.telemetry().as_ref(), &args.tool, &arguments, &mut ctx);
    let calling = host.call(&ctx, &args.tool, arguments);
    let result = match host
        .pending_approvals()
        .filter(|pending| !pending.is_shared())
    {
        Some(pending) => answered_here(calling, &pending, &ctx.cancel).await,
        None => calling.await,
    };
    if let Some(span) = span {
        span.finish(&result);
    }
    // Sends the spans too; a stopped command ends here, its call recorded as cancelled.
    host.close().await?;
    let outcome = result.map_err(|error| match error {
        switchboard_core::pipeline::CallError::UnknownTool { .. } => {
            anyhow::anyhow!("{error}\n  hint: {}", tools_hint(args.agent.as_deref()))
        }
        other => anyhow::Error::new(other),
    })?;
    if args.json {
        print_json(&outcome)?;
    } else if let Some(structured) = outcome
        .structured_content
        .as_ref()
        .filter(|_| outcome.text_content().is_empty())
    {
        print_json(structured)?;
    } else {
        for block in &outcome.content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    print_line(block.get("text").and_then(Value::as_str).unwrap_or(""))?
                }
                _ => print_line(&block.to_string())?,
            }
        }
    }
    Ok(if outcome.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The trace the command was started in: OpenTelemetry's environment carriers `TRACEPARENT`,
/// `TRACESTATE` and `BAGGAGE` (an empty variable reads as unset). A malformed `TRACEPARENT`
/// starts a new trace, and a line on stderr says why it was not used.
fn trace_of_environment() -> Option<TraceContext> {
    let variable = |key: &str| {
        std::env::var(key.to_ascii_uppercase())
            .ok()
            .filter(|value| !value.trim().is_empty())
    };
    let traceparent = variable(TRACEPARENT)?;
    match TraceContext::try_parse(&traceparent, variable(TRACESTATE).as_deref()) {
        Ok(context) => Some(context.with_baggage(variable(BAGGAGE).as_deref())),
        Err(why) => {
            // Not `eprintln!`, which panics when stderr is gone.
            let _ = writeln!(
                std::io::stderr(),
                "switchboard: warning: TRACEPARENT {traceparent:?} is not used ({why}); the call starts a new trace"
            );
            None
        }
    }
}

/// Where to look for the name of a tool that is unknown (or outside the agent's view, which
/// reads the same): the listing of the tools this caller may call.
fn tools_hint(agent: Option<&str>) -> String {
    match agent {
        Some(agent) => {
            format!("`switchboard tools --agent {agent}` lists the tools agent {agent} can call")
        }
        None => "`switchboard tools` lists the tools that can be called".to_owned(),
    }
}

/// Runs `calling`, answering the approvals it waits for: at the terminal, or denied at once
/// without one. Once `stop` is cancelled no question is waited on: the call, cancelled by
/// the same token, ends.
async fn answered_here<T>(
    calling: impl std::future::Future<Output = T>,
    pending: &Arc<switchboard::PendingApprovals>,
    stop: &CancellationToken,
) -> T {
    let mut changes = pending.subscribe();
    tokio::pin!(calling);
    loop {
        tokio::select! {
            result = &mut calling => return result,
            changed = changes.changed() => {
                if changed.is_err() {
                    return calling.await;
                }
                for waiting in pending.list() {
                    let Some((approve, reason)) = unless_cancelled(stop, decide(&waiting)).await
                    else {
                        return calling.await;
                    };
                    let _ = pending
                        .answer(&waiting.id, approve, "operator (switchboard call)", reason.as_deref())
                        .await;
                }
            }
        }
    }
}

/// The operator's answer to `waiting`: asked at the terminal, else a denial saying why.
async fn decide(waiting: &switchboard::PendingApproval) -> (bool, Option<String>) {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return (
            false,
            Some(
                "it needs an operator's approval, and `switchboard call` has no terminal to ask on: \
                 run it in a terminal, or call through a running gateway whose operators \
                 answer with `switchboard approvals`"
                    .to_owned(),
            ),
        );
    }
    let question = format!(
        "switchboard: {} (server {}) needs approval: {}
  arguments: {}
approve? [y/N] ",
        waiting.tool,
        waiting.server,
        waiting.reason,
        Value::Object(waiting.arguments.clone())
    );
    let answer = tokio::task::spawn_blocking(move || {
        let mut stderr = std::io::stderr();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    match answer {
        Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes" | "Yes") => (true, None),
        _ => (false, Some("denied at the terminal".to_owned())),
    }
}

fn parse_arguments(json: Option<&str>, pairs: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut arguments = match json {
        None => Map::new(),
        Some(text) => {
            match serde_json::from_str::<Value>(text)
                .map_err(|error| usage(format!("--args is not valid JSON: {error}")))?
            {
                Value::Object(map) => map,
                other => {
                    return Err(usage(format!(
                        "--args must be a JSON object, got {}",
                        switchboard_core::json_kind(&other)
                    )));
                }
            }
        }
    };
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(usage(format!("argument '{pair}' is not KEY=VALUE")));
        };
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pairs_are_json_when_they_parse() {
        let parsed = parse_arguments(
            Some(r#"{"a": 1}"#),
            &["n=3".into(), "name=bob".into(), "flag=true".into()],
        )
        .expect("parses");
        assert_eq!(
            Value::Object(parsed),
            json!({"a": 1, "n": 3, "name": "bob", "flag": true})
        );
        assert!(parse_arguments(Some("[1]"), &[]).is_err());
        assert!(parse_arguments(None, &["novalue".into()]).is_err());
    }
}
