//! The latency budget as the library offers it: predictions for latency masking, parallel
//! calls and whether a batch fits a tier (the maximum of its tools' latencies, not the sum),
//! and the operator's stats.

use serde_json::{Map, Value};
use switchboard_budget::{Prediction, batch_fits};
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, ToolOutcome};

use super::report::ToolStats;
use crate::host::Host;

impl Host {
    /// How long a call of `name` (an exposed name) is expected to take, and whether it is
    /// slow enough to mask with an early "working…" (`[latency] mask_after`). `None` for a
    /// name the catalog does not have.
    pub fn predict(&self, name: &str) -> Option<Prediction> {
        let entry = self.catalog().resolve(name)?.clone();
        let traits = self.inner.latency.traits_of_exposed(&entry.exposed)?;
        Some(self.inner.latency.predict(&traits.key))
    }

    /// Runs independent calls concurrently, each through the whole pipeline; the answers come
    /// back in the order of `calls`.
    pub async fn call_all(
        &self,
        ctx: &CallContext,
        calls: Vec<(String, Map<String, Value>)>,
    ) -> Vec<Result<ToolOutcome, CallError>> {
        futures::future::join_all(
            calls
                .into_iter()
                .map(|(name, arguments)| async move { self.call(ctx, &name, arguments).await }),
        )
        .await
    }

    /// Whether calling `names` in parallel fits `tier`: every one of them fits it (a batch
    /// costs its slowest call). Unknown names and tiers do not fit.
    pub fn batch_fits(&self, names: &[&str], tier: &str) -> bool {
        let latency = &self.inner.latency;
        let Some(tier) = latency.tier_id(&tier.to_lowercase()) else {
            return false;
        };
        let catalog = self.catalog();
        let book = latency.book();
        let mut profiles = Vec::with_capacity(names.len());
        for name in names {
            let Some(entry) = catalog.resolve(name) else {
                return false;
            };
            let key = super::tool_key(entry.spec.server.as_str(), &entry.upstream_name);
            profiles.push(book.profile(&key));
        }
        batch_fits(&profiles, latency.tiers(), tier)
    }

    /// Every tool's latency figures, for operators (`switchboard tools --stats`).
    pub fn latency_report(&self) -> Vec<ToolStats> {
        self.inner.latency.report()
    }

    /// With `[storage] url`: saves this replica's latency windows to PostgreSQL and merges
    /// every replica's into the figures now, bounded by 2 s and skipped while the database
    /// is known to be unreachable (a failure is logged and the figures stay as they were).
    /// Without it, nothing.
    pub async fn sync_latency_stats(&self) {
        let latency = &self.inner.latency;
        let Some(shared) = latency.shared_stats().filter(|shared| !shared.is_failing()) else {
            return;
        };
        let bounded = tokio::time::timeout(std::time::Duration::from_secs(2), shared.sync(latency));
        // `sync` logs its failures.
        let _ = bounded.await;
    }

    /// Saves the latency stats file now; returns how many tools were saved.
    pub fn save_latency(&self) -> Result<usize, String> {
        self.inner.latency.save()
    }
}
