//! [`Bounded`]: a Redis connection whose every command is bounded by [`COMMAND_TIMEOUT`], and
//! which, once a command failed or timed out, sends none for [`PROBE_EVERY`] (so an outage
//! costs a request at most one bounded wait, and usually none). The first failure and the
//! first answer after it are logged once, saying what the outage means for its user.

use std::future::Future;
use std::sync::Mutex;

use redis::aio::ConnectionManager;
use switchboard_core::limits::WhenUnreachable;
use tokio::time::Instant;

use super::limiter::{COMMAND_TIMEOUT, PROBE_EVERY, SharedError, open, redacted};

/// A bounded connection to the Redis of `[shared] redis`.
pub(crate) struct Bounded {
    connection: ConnectionManager,
    /// The URL without its password, for messages.
    target: String,
    /// What it keeps, for the log ("the shared result cache's entries").
    what: &'static str,
    /// What an outage means, for the log.
    outage: String,
    /// Until when Redis is not asked, after a command failed, and why it failed.
    down: Mutex<Option<(Instant, String)>>,
}

impl std::fmt::Debug for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bounded")
            .field("target", &self.target)
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl Bounded {
    /// A lazy connection to `url` for keeping `what`, whose outage the log words by `policy`:
    /// `fail_open` what this replica then does alone, `fail_closed` what is refused.
    pub(crate) fn with_policy(
        url: &str,
        what: &'static str,
        policy: WhenUnreachable,
        fail_open: &str,
        fail_closed: &str,
    ) -> Result<Self, SharedError> {
        let outage = match policy {
            WhenUnreachable::FailOpen => {
                format!("{fail_open} (shared.redis_unavailable = \"fail_open\")")
            }
            WhenUnreachable::FailClosed => {
                format!("{fail_closed} (shared.redis_unavailable = \"fail_closed\")")
            }
        };
        Self::connect(url, what, outage)
    }

    /// A lazy connection to `url` (needs a tokio runtime) for keeping `what`; `outage` says in
    /// the log what an outage means.
    pub(crate) fn connect(
        url: &str,
        what: &'static str,
        outage: String,
    ) -> Result<Self, SharedError> {
        let (_, connection, _) = open(url)?;
        Ok(Self {
            connection,
            target: redacted(url),
            what,
            outage,
            down: Mutex::new(None),
        })
    }

    /// The URL without its password.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// Runs `command` on a connection, bounded by [`COMMAND_TIMEOUT`], unless Redis was found
    /// down less than [`PROBE_EVERY`] ago; the error names Redis and why.
    pub(crate) async fn run<T, F>(
        &self,
        command: impl FnOnce(ConnectionManager) -> F,
    ) -> Result<T, String>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        if let Some((until, why)) = lock(&self.down).clone()
            && Instant::now() < until
        {
            return Err(why);
        }
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, command(self.connection.clone()));
        let error = match answer.await {
            Ok(Ok(value)) => {
                if lock(&self.down).take().is_some() {
                    tracing::info!(
                        target: "switchboard::shared",
                        "redis at {} answers again: {} are shared again",
                        self.target,
                        self.what
                    );
                }
                return Ok(value);
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} ms", COMMAND_TIMEOUT.as_millis()),
        };
        let why = format!("redis at {}: {error}", self.target);
        let was_down = lock(&self.down)
            .replace((Instant::now() + PROBE_EVERY, why.clone()))
            .is_some();
        if !was_down {
            tracing::warn!(
                target: "switchboard::shared",
                "{why}; until it answers again, {}",
                self.outage
            );
        }
        Err(why)
    }

    /// Runs one command (see [`Bounded::run`]).
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        command: redis::Cmd,
    ) -> Result<T, String> {
        self.run(|mut connection| async move { command.query_async(&mut connection).await })
            .await
    }

    /// Runs one script (see [`Bounded::run`]).
    pub(crate) async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, String> {
        self.run(|mut connection| async move { invocation.invoke_async(&mut connection).await })
            .await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
