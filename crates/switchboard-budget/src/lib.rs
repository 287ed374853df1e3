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
//! - [`predict`]: latency prediction for masking.

pub mod book;
pub mod effective;
pub mod health;
pub mod predict;
pub mod tiers;
pub mod visible;
pub mod window;

pub use book::{BudgetConfig, LatencyBook, RecordOutcome, ToolBudget};
pub use effective::{Declared, EffectiveConfig, EffectiveLatency};
pub use health::{HealthConfig, HealthScore, HealthState, HealthTracker, HealthTransition};
pub use predict::{MaskingConfig, Prediction};
pub use tiers::{
    Placement, Tier, TierId, TierSet, TierView, ToolProfile, batch_fits, batch_latency,
};
pub use visible::{ListDecision, VisibleSet};
pub use window::{LatencyWindow, Outcome, Quantile, Sample, WindowSummary};
