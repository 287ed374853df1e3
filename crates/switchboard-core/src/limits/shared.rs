//! The seam between the gateway's limits and a store that all replicas share (Redis, in
//! `switchboard::shared`). [`Limits`](super::Limits) asks a [`SharedLimiter`] to take, in one
//! step and all or nothing, a slot of every rate and a lease of every concurrency cap a call
//! is limited by; the store keeps the time (never a replica's clock).
//!
//! When the store cannot answer, [`WhenUnreachable`] decides: fail open (each replica limits
//! alone at limit/replicas, see [`scaled`]) or fail closed (the call is refused and says why).
//! This module never talks to a store itself and never waits on one without a bound: that is
//! the implementation's job.

use std::time::Duration;

use futures::future::BoxFuture;

use super::{LimitSpec, Scope};

/// What calls meet while the shared store is unreachable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WhenUnreachable {
    /// Each replica applies limit/replicas on its own: service goes on and the total stays
    /// near the limit (the default: an outage of a rebuildable cache should not become an
    /// outage of every tool call).
    #[default]
    FailOpen,
    /// Every limited call is refused, saying that the shared limiter is unreachable.
    FailClosed,
}

impl WhenUnreachable {
    /// The config value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailOpen => "fail_open",
            Self::FailClosed => "fail_closed",
        }
    }
}

/// One scope's limits, as the store is asked to apply them.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedCheck {
    pub scope: Scope,
    pub spec: LimitSpec,
}

/// A concurrency lease held in the store while a call runs; dropping it releases it.
pub trait Lease: Send + Sync + std::fmt::Debug {}

/// The store's answer to one admission.
#[derive(Debug)]
pub enum SharedVerdict {
    /// Everything was taken; the call may run after `wait` (zero: now).
    Admitted {
        wait: Duration,
        lease: Option<Box<dyn Lease>>,
    },
    /// Nothing was taken: the rate of `checks[scope]` allows the next call after `retry_after`.
    RateLimited { scope: usize, retry_after: Duration },
    /// Nothing was taken: the cap of `checks[scope]` is full.
    Busy { scope: usize },
}

/// The store did not answer (in time); the text says what and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SharedUnavailable(pub String);

/// What `switchboard status` shows about the store.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SharedHealth {
    /// "redis".
    pub backend: &'static str,
    /// Where it is (the URL without a password).
    pub target: String,
    /// Whether the last request was answered.
    pub reachable: bool,
    /// Why it is not, if it is not.
    pub error: Option<String>,
}

/// Rate limits and concurrency caps kept outside this process.
pub trait SharedLimiter: Send + Sync {
    /// Takes, atomically and all or nothing, one slot of every rate and one lease of every
    /// cap in `checks`. A rate whose wait would exceed its `queue` refuses.
    fn admit<'a>(
        &'a self,
        checks: &'a [SharedCheck],
    ) -> BoxFuture<'a, Result<SharedVerdict, SharedUnavailable>>;

    /// The store's state now.
    fn health(&self) -> SharedHealth;
}

/// `spec` as one of `replicas` replicas applies it alone: rates, bursts and caps divided
/// (rounded up, at least one), the queue unchanged.
pub fn scaled(spec: LimitSpec, replicas: u32) -> LimitSpec {
    let n = replicas.max(1);
    LimitSpec {
        per_minute: spec.per_minute.map(|rate| rate / f64::from(n)),
        burst: spec.burst.map(|burst| burst.div_ceil(n).max(1)),
        max_concurrent: spec.max_concurrent.map(|cap| cap.div_ceil(n).max(1)),
        queue: spec.queue,
    }
}
