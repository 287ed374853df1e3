//! State the replicas of one deployment share (issue 32). Today: rate limits and
//! concurrency caps in Redis ([`RedisLimiter`], behind `switchboard_core::limits`'s
//! [`SharedLimiter`](switchboard_core::limits::SharedLimiter) seam), chosen by
//! `[shared] redis`.
//!
//! Must never: scan keys (`KEYS`), trust a replica's clock for a limit, or let a call wait
//! on an unreachable Redis longer than [`limiter::COMMAND_TIMEOUT`].

pub mod limiter;

pub use limiter::{RedisLimiter, SharedError};
