//! The Switchboard Host: what an agent embeds, and what the gateway serves.
//!
//! A [`Host`] is built from a config: it supervises one connection per server, keeps the
//! catalog of their tools as an immutable snapshot swapped whole on every change, and runs
//! every call through the one pipeline.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard::Host;
//! use switchboard_core::config::Config;
//! let host = Host::from_config(&Config::builtin_default())?;
//! host.ready().await;
//! for tool in host.catalog().entries() {
//!     println!("{}", tool.exposed);
//! }
//! let result = host.call(&Default::default(), "clock__now", Default::default()).await?;
//! println!("{}", result.text_content());
//! host.shutdown().await;
//! # Ok(()) }
//! ```

mod approvals;
mod assemble;
mod command_hook;
pub mod data_dir;
mod exposure;
mod fleet;
mod followed_file;
mod host;
pub mod keyring;
pub mod latency;
mod listing_fit;
pub mod live;
pub mod manager;
mod meta_tools;
pub mod metrics;
pub mod pins;
pub mod private_file;
mod prompts;
pub mod quotas;
mod resource_subscriptions;
mod resources;
mod result_shaping;
pub mod sandbox;
mod sessions;
pub mod shared;
pub mod tasks;
pub mod telemetry;
mod tiers;
pub mod tokens;
mod tool_search;

/// The embedding guide, `docs/library.md`, compiled with the documentation tests so that its
/// example stays true to the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;

pub use approvals::{
    AnswerError, Approvals, Grant, MemoryNonces, PendingApproval, PendingApprovals, Sealer,
    StateError, UsedNonces,
};
pub use assemble::{AssembleError, approval_rules, connection_fingerprint, governance, plans};
pub use command_hook::{CommandHook, command_hooks};
pub use exposure::AgentProfile;
pub use host::{DrainReport, Host, HostOptions, ServerPlan, ServerReport, SharedLimitsReport};
pub use latency::calibrate::{CalibrateOptions, Calibration};
pub use latency::report::ToolStats;
pub use listing_fit::ListingMode;
pub use live::{
    Change, ChangeError, ChangeReport, ChangeRequest, LiveOptions, LiveStatus, Stamp, Surface,
};
pub use manager::Manager;
pub use result_shaping::{DEFAULT_MAX_RESULT_TOKENS, TokenCounter};
pub use sessions::shared::Unshared;
/// The seed's tier selector: a turn's context (utterance or STT partial, first turn, queue
/// depth, time since the last DEEP answer, an explicit command) → a tier, by keyword rules.
///
/// ```
/// use switchboard::{SelectorConfig, TierSelector, TierSet, TurnContext};
/// let selector = TierSelector::new(SelectorConfig::default(), TierSet::default());
/// let turn = |utterance| TurnContext {
///     utterance,
///     first_turn: false,
///     queue_depth: 0,
///     since_last_deep: None,
///     explicit_command: None,
/// };
/// let tiers = TierSet::default();
/// let name = |utterance| tiers.name(selector.select(&turn(utterance)).tier).to_owned();
/// assert_eq!(name("hi there!"), "fast");
/// assert_eq!(name("do you remember what happened last time?"), "standard");
/// assert_eq!(name("think carefully and search the web for it"), "deep");
/// ```
pub use switchboard_budget::{Selection, SelectorConfig, TierSelector, TierSet, TurnContext};
pub use tiers::UnknownTier;
