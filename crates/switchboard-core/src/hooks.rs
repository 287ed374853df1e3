//! Pre-call and post-call hooks: code that sees every call and may allow it, deny it with a
//! reason, rewrite its arguments, or replace its result.
//!
//! Embedders implement [`Hook`] in Rust; the `switchboard` crate adds hooks that run an
//! external command (in the style of Claude Code hooks). A hook that fails (times out,
//! crashes, answers garbage) is handled per its [`FailurePolicy`].

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::ToolOutcome;

/// What a hook sees of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    pub call_id: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    /// The exposed name.
    pub tool: String,
    pub server: String,
    /// The upstream's own name of the tool.
    pub upstream_tool: String,
    pub arguments: Map<String, Value>,
}

/// A pre-call hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    Allow,
    Deny {
        reason: String,
    },
    /// Go on with these arguments instead (validated again).
    Rewrite {
        arguments: Map<String, Value>,
    },
}

/// A post-call hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    Keep,
    Replace { outcome: Box<ToolOutcome> },
}

/// Why a hook produced no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("hook '{hook}' failed: {reason}")]
pub struct HookFailure {
    pub hook: String,
    pub reason: String,
}

/// What happens when a hook fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Deny the call (pre) or replace the result by an error (post). The default.
    #[default]
    Closed,
    /// Go on as if the hook had allowed (pre) or kept (post).
    Open,
}

/// A hook. Both methods default to doing nothing, so a hook implements the one it needs.
pub trait Hook: Send + Sync {
    /// A name for errors and the ledger.
    fn name(&self) -> &str;

    /// Which calls the hook sees (default: all).
    fn applies(&self, _call: &HookCall) -> bool {
        true
    }

    /// Whether the hook comes from the config's `[[hooks]]`: a reload of the config replaces
    /// those, and keeps the others (an embedder's own). Default: no.
    fn is_configured(&self) -> bool {
        false
    }

    fn on_failure(&self) -> FailurePolicy {
        FailurePolicy::Closed
    }

    fn before<'a>(&'a self, _call: &'a HookCall) -> BoxFuture<'a, Result<Before, HookFailure>> {
        Box::pin(async { Ok(Before::Allow) })
    }

    fn after<'a>(
        &'a self,
        _call: &'a HookCall,
        _outcome: &'a ToolOutcome,
    ) -> BoxFuture<'a, Result<After, HookFailure>> {
        Box::pin(async { Ok(After::Keep) })
    }
}

/// Runs every applicable pre-call hook in order; the first deny wins, rewrites accumulate.
pub async fn run_before(
    hooks: &[std::sync::Arc<dyn Hook>],
    call: &mut HookCall,
) -> Result<bool, String> {
    let mut rewritten = false;
    for hook in hooks {
        if !hook.applies(call) {
            continue;
        }
        match hook.before(call).await {
            Ok(Before::Allow) => {}
            Ok(Before::Deny { reason }) => {
                return Err(format!("denied by hook '{}': {reason}", hook.name()));
            }
            Ok(Before::Rewrite { arguments }) => {
                call.arguments = arguments;
                rewritten = true;
            }
            Err(failure) => match hook.on_failure() {
                FailurePolicy::Open => {
                    tracing::warn!("{failure}; going on (fail-open)");
                }
                FailurePolicy::Closed => return Err(format!("denied: {failure}")),
            },
        }
    }
    Ok(rewritten)
}

/// Runs every applicable post-call hook in order on the outcome; whether one that failed
/// closed withheld it (the outcome is then that error).
pub async fn run_after(
    hooks: &[std::sync::Arc<dyn Hook>],
    call: &HookCall,
    outcome: &mut ToolOutcome,
) -> bool {
    let mut withheld = false;
    for hook in hooks.iter().filter(|hook| hook.applies(call)) {
        match hook.after(call, outcome).await {
            Ok(After::Keep) => {}
            Ok(After::Replace { outcome: replaced }) => *outcome = *replaced,
            Err(failure) => match hook.on_failure() {
                FailurePolicy::Open => tracing::warn!("{failure}; result kept (fail-open)"),
                FailurePolicy::Closed => {
                    *outcome = ToolOutcome::error(format!("result withheld: {failure}"));
                    withheld = true;
                }
            },
        }
    }
    withheld
}
