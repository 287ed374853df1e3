//! Anti-churn for the listed tool set of one session: a changed listing breaks clients' prompt
//! caches, so the visible set changes only when it must, and not too often.
//!
//! The caller offers a freshly computed [`TierView`] whenever something happened (a tier
//! change, a health or placement transition — offering after every call is also fine, since
//! views only change on such transitions). [`VisibleSet::offer`] then decides:
//! - a **tier change** (the session switched tier) is adopted at once;
//! - within the same tier, a different set is adopted only if `min_interval` has passed since
//!   the last change; otherwise it is **deferred** (offer again at `until`);
//! - an identical set changes nothing.
//!
//! [`ListDecision::list_changed_due`] says when `notifications/tools/list_changed` must go out.
//! The adopted set is also what the session may call: visible = callable.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::tiers::{TierId, TierView};

/// Default minimum time between two same-tier changes.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(30);

/// What an offer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListDecision {
    /// The first set of the session (announced by the listing itself, no notification).
    Initial,
    /// Nothing to change.
    Unchanged,
    /// The set changed: notify the session.
    Changed,
    /// A same-tier change is waiting for the minimum interval: offer again at `until`.
    Deferred { until: Instant },
}

impl ListDecision {
    /// Whether `notifications/tools/list_changed` is due.
    pub fn list_changed_due(self) -> bool {
        self == ListDecision::Changed
    }
}

/// The set of tools one session sees (and may call).
#[derive(Debug, Clone)]
pub struct VisibleSet {
    min_interval: Duration,
    tier: Option<TierId>,
    /// Sorted, for comparison and lookup.
    names: Vec<Arc<str>>,
    last_change: Option<Instant>,
}

impl Default for VisibleSet {
    fn default() -> Self {
        Self::new(DEFAULT_MIN_INTERVAL)
    }
}

impl VisibleSet {
    pub fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            tier: None,
            names: Vec::new(),
            last_change: None,
        }
    }

    /// The current tier, `None` before the first offer.
    pub fn tier(&self) -> Option<TierId> {
        self.tier
    }

    /// The visible tools, sorted by name.
    pub fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// Visible = callable: whether the session may call `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.names
            .binary_search_by(|probe| (**probe).cmp(name))
            .is_ok()
    }

    /// Offers a newly computed view (see the module doc).
    pub fn offer(&mut self, view: &TierView, now: Instant) -> ListDecision {
        let mut names = view.visible.clone();
        names.sort_unstable();
        names.dedup();
        let Some(current_tier) = self.tier else {
            self.adopt(view.tier, names, now);
            return ListDecision::Initial;
        };
        if current_tier != view.tier {
            let changed = names != self.names;
            self.adopt(view.tier, names, now);
            return if changed {
                ListDecision::Changed
            } else {
                ListDecision::Unchanged
            };
        }
        if names == self.names {
            return ListDecision::Unchanged;
        }
        if let Some(last) = self.last_change {
            let until = last + self.min_interval;
            if now < until {
                return ListDecision::Deferred { until };
            }
        }
        self.adopt(view.tier, names, now);
        ListDecision::Changed
    }

    fn adopt(&mut self, tier: TierId, names: Vec<Arc<str>>, now: Instant) {
        if names != self.names || self.tier.is_none() {
            self.last_change = Some(now);
        }
        self.tier = Some(tier);
        self.names = names;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(tier: usize, names: &[&str]) -> TierView {
        TierView {
            tier: TierId(tier),
            visible: names.iter().map(|name| Arc::from(*name)).collect(),
        }
    }

    #[test]
    fn tier_changes_apply_at_once_and_same_tier_changes_wait() {
        let start = Instant::now();
        let mut set = VisibleSet::new(Duration::from_secs(30));
        assert_eq!(
            set.offer(&view(0, &["b", "a"]), start),
            ListDecision::Initial
        );
        assert!(set.allows("a") && !set.allows("c"));
        assert_eq!(
            set.offer(&view(0, &["a", "b"]), start),
            ListDecision::Unchanged
        );

        let later = start + Duration::from_secs(10);
        let decision = set.offer(&view(0, &["a"]), later);
        assert_eq!(
            decision,
            ListDecision::Deferred {
                until: start + Duration::from_secs(30)
            }
        );
        assert!(!decision.list_changed_due());
        assert!(
            set.allows("b"),
            "a deferred change keeps the old set callable"
        );

        // A tier change is adopted immediately, even inside the interval.
        let switched = set.offer(&view(2, &["a", "b", "c"]), later);
        assert!(switched.list_changed_due());
        assert_eq!(set.tier(), Some(TierId(2)));
        assert!(set.allows("c"));

        let decision = set.offer(&view(2, &["a", "c"]), later + Duration::from_secs(30));
        assert_eq!(decision, ListDecision::Changed);
        assert!(!set.allows("b"));
    }
}
