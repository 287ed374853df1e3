//! [`SharedMarks`]: what must hold on every replica once one replica saw it, kept in Redis —
//! the 2025-era sessions ended by DELETE ([`EndedSessions`]) and the `requestState` nonces
//! already used ([`UsedNonces`]).
//!
//! Keys: `switchboard:{deployment}:ended:<sha256 of the session id>` (set with `PX` until the
//! sealed id's own expiry, so it goes when the id would stop opening anyway) and
//! `switchboard:{deployment}:nonce:<nonce hex>` (`SET … 1 NX PX <until the state expires>`:
//! only the first `SET` of a nonce succeeds, on whichever replica). Every key expires; nothing
//! is scanned.
//!
//! This process's memory answers first (an id ended or a nonce used here never costs a round
//! trip) and keeps what it learnt. Commands are bounded (`shared::bounded`: 500 ms each, none for
//! 250 ms after a failure); while Redis does not answer, `[shared] redis_unavailable` decides:
//! `fail_open` answers from this replica's memory only (a DELETE or a used state seen by
//! another replica may be missed), `fail_closed` refuses (the session or the state "cannot be
//! checked now", retry later).

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use switchboard_core::hex::encode as hex;
use switchboard_core::limits::WhenUnreachable;
use switchboard_mcp::front::http::{
    EndedAnswer, EndedSessions, EndedUnavailable, LocalEndedSessions,
};

use super::bounded::Bounded;
use super::limiter::SharedError;
use crate::approvals::{MemoryNonces, NonceAnswer, UsedNonces};

/// Ended sessions and used nonces shared by the replicas through Redis. Cheap to share
/// (`Arc`): one value serves as both seams.
pub struct SharedMarks {
    redis: Bounded,
    /// `switchboard:{deployment}:`.
    prefix: String,
    policy: WhenUnreachable,
    ended: LocalEndedSessions,
    nonces: MemoryNonces,
}

impl std::fmt::Debug for SharedMarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMarks")
            .field("target", &self.redis.target())
            .field("prefix", &self.prefix)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SharedMarks {
    /// Marks in the Redis at `url`, keys namespaced by `deployment`, `policy` while it does
    /// not answer. Connects lazily (a Redis down now only makes the first requests meet the
    /// policy); needs a tokio runtime.
    pub fn connect(
        url: &str,
        deployment: &str,
        policy: WhenUnreachable,
    ) -> Result<Self, SharedError> {
        let outage = match policy {
            WhenUnreachable::FailOpen => {
                "ended sessions and used approval states are kept by this replica alone (shared.redis_unavailable = \"fail_open\")"
            }
            WhenUnreachable::FailClosed => {
                "sessions and approval states that need it are refused (shared.redis_unavailable = \"fail_closed\")"
            }
        };
        Ok(Self {
            redis: Bounded::connect(
                url,
                "ended sessions and used approval states",
                outage.to_owned(),
            )?,
            prefix: format!("switchboard:{{{deployment}}}:"),
            policy,
            ended: LocalEndedSessions::default(),
            nonces: MemoryNonces::default(),
        })
    }

    fn ended_key(&self, id: &str) -> String {
        format!(
            "{}ended:{}",
            self.prefix,
            hex(&Sha256::digest(id.as_bytes()))
        )
    }

    /// What a question Redis could not answer gets: this replica's own answer (fail open),
    /// or a refusal that says why (fail closed).
    fn unanswered<T>(&self, why: String, here: impl FnOnce() -> T) -> Result<T, String> {
        match self.policy {
            WhenUnreachable::FailOpen => Ok(here()),
            WhenUnreachable::FailClosed => Err(format!(
                "the shared store is unreachable ({why}; shared.redis_unavailable = \"fail_closed\")"
            )),
        }
    }

    async fn end_shared(
        &self,
        id: &str,
        expires: SystemTime,
        now: SystemTime,
    ) -> Result<(), String> {
        let mut command = redis::cmd("SET");
        command
            .arg(self.ended_key(id))
            .arg(1)
            .arg("PX")
            .arg(millis_until(expires, now));
        match self.redis.query::<()>(command).await {
            Ok(()) => {
                self.ended.end_now(id, expires, now);
                Ok(())
            }
            Err(why) => self.unanswered(why, || self.ended.end_now(id, expires, now)),
        }
    }

    async fn is_ended_shared(&self, id: &str, now: SystemTime) -> Result<bool, String> {
        if self.ended.ended_here(id, now) {
            return Ok(true);
        }
        let mut command = redis::cmd("EXISTS");
        command.arg(self.ended_key(id));
        match self.redis.query::<i64>(command).await {
            Ok(found) => Ok(found > 0),
            Err(why) => self.unanswered(why, || false),
        }
    }

    async fn first_use_shared(
        &self,
        nonce: [u8; 16],
        expires_ms: u64,
        now_ms: u64,
    ) -> Result<bool, String> {
        if self.nonces.used_here(&nonce, now_ms) {
            return Ok(false);
        }
        let mut command = redis::cmd("SET");
        command
            .arg(format!("{}nonce:{}", self.prefix, hex(&nonce)))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(expires_ms.saturating_sub(now_ms).max(1));
        match self.redis.query::<Option<String>>(command).await {
            Ok(set) => {
                self.nonces.use_here(nonce, expires_ms, now_ms);
                Ok(set.is_some())
            }
            Err(why) => self.unanswered(why, || self.nonces.use_here(nonce, expires_ms, now_ms)),
        }
    }
}

impl EndedSessions for SharedMarks {
    fn end<'a>(&'a self, id: &'a str, expires: SystemTime, now: SystemTime) -> EndedAnswer<'a, ()> {
        Box::pin(async move {
            self.end_shared(id, expires, now)
                .await
                .map_err(EndedUnavailable)
        })
    }

    fn is_ended<'a>(&'a self, id: &'a str, now: SystemTime) -> EndedAnswer<'a, bool> {
        Box::pin(async move {
            self.is_ended_shared(id, now)
                .await
                .map_err(EndedUnavailable)
        })
    }
}

impl UsedNonces for SharedMarks {
    fn first_use(&self, nonce: [u8; 16], expires_ms: u64, now_ms: u64) -> NonceAnswer<'_> {
        Box::pin(self.first_use_shared(nonce, expires_ms, now_ms))
    }
}

/// Milliseconds from `now` to `until`, at least one (`PX 0` is an error).
fn millis_until(until: SystemTime, now: SystemTime) -> u64 {
    until
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests;
