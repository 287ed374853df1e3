//! Cost quotas across replicas: what the *other* replicas of a deployment spent, as last read
//! from the store they share, and what this replica spent that it has not sent yet.
//!
//! [`Limits`](super::Limits) counts an agent's quota as its own spending here (exact, at once,
//! in [`Quota`](super::Quota)) plus the other replicas' spending held in [`SharedSpending`].
//! The call path only takes this struct's lock: it never waits on the store. A task outside
//! this crate (`switchboard::quotas`, on PostgreSQL) sends what [`SharedSpending::take_unsent`]
//! hands it and installs what it read with [`SharedSpending::replace_others`], every few
//! hundred milliseconds; so a replica over-admits by at most what the others spent since its
//! last successful read (plus their own unsent part).
//!
//! The other replicas' spending arrives as pieces, each with the instant it leaves the window
//! (on this replica's clock: the store tells how long each has left, so clocks of different
//! machines never meet). When the store is unreachable, the pieces read last keep counting
//! until they leave the window, and unsent spending is kept to be sent when it is back.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// Spending of one agent on this replica that the store has not been told about.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsent {
    pub agent: String,
    /// The agent's quota window when it was spent (the store keeps it as long as that).
    pub window: Duration,
    pub cost: f64,
}

/// One piece of another replica's spending: `cost`, counted until `leaves`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    pub leaves: Instant,
    pub cost: f64,
}

#[derive(Debug, Default)]
struct AgentShare {
    unsent: f64,
    window: Duration,
    others: VecDeque<Spent>,
}

/// The other replicas' spending and this replica's unsent spending, per agent.
#[derive(Debug, Default)]
pub struct SharedSpending {
    agents: Mutex<HashMap<String, AgentShare>>,
}

impl SharedSpending {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, AgentShare>> {
        match self.agents.lock() {
            Ok(agents) => agents,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Notes `cost` spent here by `agent` (whose window is `window`), to be sent.
    pub fn record(&self, agent: &str, window: Duration, cost: f64) {
        if cost <= 0.0 || !cost.is_finite() {
            return;
        }
        let mut agents = self.lock();
        let share = agents.entry(agent.to_owned()).or_default();
        share.unsent += cost;
        share.window = window;
    }

    /// Everything spent here and not sent yet (now counted as sent).
    pub fn take_unsent(&self) -> Vec<Unsent> {
        let mut agents = self.lock();
        agents
            .iter_mut()
            .filter(|(_, share)| share.unsent > 0.0)
            .map(|(agent, share)| Unsent {
                agent: agent.clone(),
                window: share.window,
                cost: std::mem::take(&mut share.unsent),
            })
            .collect()
    }

    /// Gives back spending that could not be sent, to go with the next attempt.
    pub fn restore_unsent(&self, unsent: Vec<Unsent>) {
        for Unsent {
            agent,
            window,
            cost,
        } in unsent
        {
            self.record(&agent, window, cost);
        }
    }

    /// The other replicas' spending as just read, per agent; an agent not named spent nothing
    /// elsewhere that still counts.
    pub fn replace_others(&self, mut others: HashMap<String, Vec<Spent>>) {
        let mut agents = self.lock();
        for (agent, share) in agents.iter_mut() {
            share.others = others.remove(agent).unwrap_or_default().into();
        }
        for (agent, spent) in others {
            agents.entry(agent).or_default().others = spent.into();
        }
    }

    /// What the other replicas spent for `agent` that still counts at `now`.
    pub fn others_at(&self, agent: &str, now: Instant) -> f64 {
        let mut agents = self.lock();
        let Some(share) = agents.get_mut(agent) else {
            return 0.0;
        };
        share.others.retain(|spent| spent.leaves > now);
        share.others.iter().map(|spent| spent.cost).sum()
    }

    /// The pieces of that spending (for when budget frees up).
    pub fn others_pieces(&self, agent: &str, now: Instant) -> Vec<Spent> {
        self.lock().get(agent).map_or_else(Vec::new, |share| {
            share
                .others
                .iter()
                .filter(|spent| spent.leaves > now)
                .copied()
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn unsent_spending_is_handed_out_once_and_can_be_given_back() {
        let spending = SharedSpending::new();
        let hour = Duration::from_secs(3600);
        spending.record("npc", hour, 1.5);
        spending.record("npc", hour, 2.0);
        spending.record("npc", hour, 0.0);
        spending.record("gm", hour, f64::NAN);
        let taken = spending.take_unsent();
        assert_eq!(
            taken,
            vec![Unsent {
                agent: "npc".to_owned(),
                window: hour,
                cost: 3.5
            }]
        );
        assert!(spending.take_unsent().is_empty(), "sent once");
        spending.restore_unsent(taken);
        spending.record("npc", hour, 1.0);
        assert_eq!(spending.take_unsent()[0].cost, 4.5, "kept for the next try");
    }

    #[tokio::test(start_paused = true)]
    async fn other_replicas_spending_counts_until_it_leaves_the_window() {
        let spending = SharedSpending::new();
        let now = Instant::now();
        let piece = |secs, cost| Spent {
            leaves: now + Duration::from_secs(secs),
            cost,
        };
        spending.replace_others(HashMap::from([(
            "npc".to_owned(),
            vec![piece(10, 2.0), piece(20, 3.0)],
        )]));
        assert_eq!(spending.others_at("npc", now), 5.0);
        assert_eq!(spending.others_at("gm", now), 0.0);
        assert_eq!(
            spending.others_at("npc", now + Duration::from_secs(10)),
            3.0
        );
        assert_eq!(
            spending.others_pieces("npc", now + Duration::from_secs(10)),
            vec![piece(20, 3.0)]
        );
        // A later read without the agent: nothing of it counts any more.
        spending.replace_others(HashMap::new());
        assert_eq!(spending.others_at("npc", now), 0.0);
    }
}
