//! State the replicas of one deployment share (issue 32), in the Redis `[shared] redis`
//! names: rate limits and concurrency caps ([`RedisLimiter`], behind
//! `switchboard_core::limits`'s [`SharedLimiter`](switchboard_core::limits::SharedLimiter)
//! seam), the events replicas tell each other and the answers they route to the replica
//! that asked ([`EventBus`]), and what must hold on every replica once one saw it: sessions
//! ended by DELETE and approval states already used ([`SharedMarks`]); and the result
//! cache's second level, with coalescing across replicas ([`RedisResults`]); and the MCP
//! tasks every replica can read, cancel and see end ([`SharedTasks`]); and what a session changes
//! as it goes — loaded categories, `read_more`, its tier — with the rests of its cut results
//! ([`SharedSessions`]).
//!
//! Must never: scan keys (`KEYS`), trust a replica's clock for a limit, or let a call wait
//! on an unreachable Redis longer than [`limiter::COMMAND_TIMEOUT`].

mod bounded;
pub mod events;
pub mod limiter;
pub mod marks;
pub mod results;
pub mod sessions;
pub mod tasks;

pub use events::{EventBus, SharedEvent};
pub use limiter::{RedisLimiter, SharedError};
pub use marks::SharedMarks;
pub use results::RedisResults;
pub use sessions::SharedSessions;
pub use tasks::SharedTasks;
