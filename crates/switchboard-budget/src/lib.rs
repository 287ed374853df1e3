//! Switchboard's latency budgets — the pure logic behind "the model only ever sees tools that
//! can answer within the budget of the moment".
//!
//! Code map (each module owns one concept; none touches sockets or the MCP wire format, and
//! none reads a clock — time is handed in or comes through [`switchboard_core::clock::Clock`]):
//! - [`window`]: the rolling window of a tool's last calls and its quantiles/rates;
//! - [`effective`]: measured-or-declared effective latency;
//! - [`health`]: health score and the Healthy/Degraded state machine with hysteresis;
//! - [`tiers`]: tiers, placement with hysteresis, fit, tier views, batch fit;
//! - [`visible`]: anti-churn of one session's visible (= callable) set;
//! - [`book`]: the per-environment book tying the above together;
//! - [`predict`]: latency prediction for masking;
//! - [`recheck`]: when a hidden tool nobody calls is re-measured, and whether a burst of
//!   probes replaces its window;
//! - [`selector`]: the seed's tier selector (turn context → tier + reason);
//! - [`deadline`], [`retry`], [`hedge`], [`extra_budget`]: call deadlines, retries and hedged
//!   requests within budgets of extra load;
//! - [`badge`]: badges and leaderboards; [`safety`] and [`probe`]: which tools may be probed and
//!   with what input;
//! - [`store`]: SQLite persistence of windows per environment.

pub mod badge;
pub mod book;
pub mod deadline;
pub mod effective;
pub mod extra_budget;
pub mod health;
pub mod hedge;
pub mod predict;
pub mod probe;
pub mod recheck;
pub mod retry;
pub mod safety;
pub mod selector;
pub mod store;
pub mod tiers;
pub mod visible;
pub mod window;

pub use badge::{Badge, leaderboard};
pub use book::{BudgetConfig, LatencyBook, RecordOutcome, ToolBudget};
pub use deadline::{CallDeadline, DeadlineInputs, DeadlinePolicy, caller_deadline};
pub use effective::{Declared, EffectiveConfig, EffectiveLatency};
pub use extra_budget::ExtraRequestBudget;
pub use health::{HealthConfig, HealthScore, HealthState, HealthTracker, HealthTransition};
pub use hedge::{HedgePolicy, Hedged, hedged};
pub use predict::{MaskingConfig, Prediction};
pub use probe::minimal_instance;
pub use recheck::{MAX_RECHECK_INTERVAL, RecheckPolicy, RecheckSchedule, worth_a_burst};
pub use retry::{Failure, RetryPolicy, call_with_bounded_retries, call_with_retries};
pub use safety::{ProbeVerdict, SafetyOverride, ToolSafety, probe_targets};
pub use selector::{Selection, SelectorConfig, TierSelector, TurnContext};
pub use store::{Environment, LatencyStore, StoreError};
pub use tiers::{
    Placement, Tier, TierId, TierSet, TierView, ToolProfile, batch_fits, batch_latency,
};
pub use visible::{ListDecision, VisibleSet};
pub use window::{LatencyWindow, Outcome, Quantile, Sample, WindowSummary};
