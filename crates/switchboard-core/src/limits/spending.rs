//! Cost quotas across replicas: what the *other* replicas of a deployment spent, as last read
//! from the store they share, and what this replica spent that it has not sent yet.
//!
//! [`Limits`](super::Limits) counts an agent's quota as its own spending here (exact, at once,
//! in [`Quota`](super::Quota)) plus the other replicas' spending held in [`SharedSpending`].
//! The call path only takes this struct's lock: it never waits on the store. A task outside
//! this crate (`switchboard::quotas`, on PostgreSQL) sends what [`SharedSpending::take_unsent`]
//! hands it and installs what it read with [`SharedSpending::replace_others`], every few
//! hundred milliseconds; so a replica over-admits by at most what the others spent since its
//! last successful read (plus their own unsent part). A replica stopping asks that task for
//! one more exchange at once ([`SharedSpending::flush`]), so its last moments are not lost.
//!
//! The other replicas' spending arrives as pieces, each with the instant it leaves the window
//! (on this replica's clock: the store tells how long each has left, so clocks of different
//! machines never meet). When the store is unreachable, the pieces read last keep counting
//! until they leave the window, and unsent spending is kept to be sent when it is back: what
//! was spent since, and the send that failed, held as it was ([`SharedSpending::hold_failed`])
//! to go again under its number, since the store may have applied it after all.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// Spending of one agent on this replica that the store has not been told about.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsent {
    pub agent: String,
    /// The agent's quota window when it was spent (the store keeps it as long as that).
    pub window: Duration,
    pub cost: f64,
}

/// What [`SharedSpending::take_unsent`] handed out, numbered in order (a send that fails is
/// sent again under its number: the store applies each number once).
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// Report it with [`SharedSpending::sent`] once the store has it.
    pub number: u64,
    pub unsent: Vec<Unsent>,
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
#[derive(Debug)]
pub struct SharedSpending {
    agents: Mutex<HashMap<String, AgentShare>>,
    /// How many times unsent spending was handed out, and the highest of those the store has.
    taken: AtomicU64,
    sent: watch::Sender<u64>,
    /// Asks the task that sends for an exchange now (a flush).
    wake: Arc<Notify>,
    /// Whether the last exchange failed (a flush does not wait then).
    unreachable: AtomicBool,
    /// Whether any agent has a quota here (without one there is nothing to exchange).
    wanted: AtomicBool,
    /// The send that failed, to go again as it was before anything spent since.
    failed: Mutex<Option<Taken>>,
}

impl Default for SharedSpending {
    fn default() -> Self {
        Self {
            agents: Mutex::default(),
            taken: AtomicU64::new(0),
            sent: watch::Sender::new(0),
            wake: Arc::new(Notify::new()),
            unreachable: AtomicBool::new(false),
            wanted: AtomicBool::new(true),
            failed: Mutex::new(None),
        }
    }
}

impl SharedSpending {
    pub fn new() -> Self {
        Self::default()
    }

    /// Says whether this replica's config gives any agent a quota: without one, there is
    /// nothing to send or read (the task that sends skips its exchanges until there is).
    pub fn set_wanted(&self, wanted: bool) {
        self.wanted.store(wanted, Ordering::Release);
    }

    /// Whether exchanges are needed (see [`SharedSpending::set_wanted`]).
    pub fn is_wanted(&self) -> bool {
        self.wanted.load(Ordering::Acquire)
    }

    /// What the task that sends waits on besides its interval: a flush asking for an exchange
    /// now. (Holding it does not keep this value alive.)
    pub fn wake_handle(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Records the outcome of an exchange: `Some(number)` of what it sent when the store took
    /// it, `None` when the store could not be reached.
    pub fn exchanged(&self, sent: Option<u64>) {
        self.unreachable.store(sent.is_none(), Ordering::Release);
        if let Some(number) = sent {
            self.sent.send_if_modified(|highest| {
                let newer = number > *highest;
                if newer {
                    *highest = number;
                }
                newer
            });
        }
    }

    /// Asks for everything spent here so far to be sent now and waits for it, at most
    /// `within` (a replica stopping). False when it was not sent: the store is unreachable,
    /// or slower than that.
    pub async fn flush(&self, within: Duration) -> bool {
        let failed = self.failed().is_some();
        if !failed && !self.lock().values().any(|share| share.unsent > 0.0) {
            return true;
        }
        if self.unreachable.load(Ordering::Acquire) {
            return false;
        }
        // The next hand-out includes everything recorded before this point.
        let target = self.taken.load(Ordering::Acquire) + 1;
        let mut sent = self.sent.subscribe();
        self.wake.notify_one();
        matches!(
            tokio::time::timeout(within, sent.wait_for(|highest| *highest >= target)).await,
            Ok(Ok(_))
        )
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

    fn failed(&self) -> MutexGuard<'_, Option<Taken>> {
        match self.failed.lock() {
            Ok(failed) => failed,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Keeps `sent`, whose exchange failed (the store may still have applied it), to be sent
    /// again as it is, under its number, before anything spent since.
    pub fn hold_failed(&self, sent: Taken) {
        *self.failed() = Some(sent);
    }

    /// What to send next: the send that failed, as it was, if one is held; else everything
    /// spent since the last hand-out ([`SharedSpending::take_unsent`]). The flag says which.
    pub fn next_to_send(&self) -> (Taken, bool) {
        match self.failed().take() {
            Some(failed) => (failed, true),
            None => (self.take_unsent(), false),
        }
    }

    /// Everything spent here and not sent yet (now counted as sent), numbered.
    pub fn take_unsent(&self) -> Taken {
        let mut agents = self.lock();
        let number = self.taken.fetch_add(1, Ordering::AcqRel) + 1;
        let unsent = agents
            .iter_mut()
            .filter(|(_, share)| share.unsent > 0.0)
            .map(|(agent, share)| Unsent {
                agent: agent.clone(),
                window: share.window,
                cost: std::mem::take(&mut share.unsent),
            })
            .collect();
        Taken { number, unsent }
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
    async fn unsent_spending_is_handed_out_once_numbered_in_order() {
        let spending = SharedSpending::new();
        let hour = Duration::from_secs(3600);
        spending.record("npc", hour, 1.5);
        spending.record("npc", hour, 2.0);
        spending.record("npc", hour, 0.0);
        spending.record("gm", hour, f64::NAN);
        let taken = spending.take_unsent().unsent;
        assert_eq!(
            taken,
            vec![Unsent {
                agent: "npc".to_owned(),
                window: hour,
                cost: 3.5
            }]
        );
        assert!(spending.take_unsent().unsent.is_empty(), "sent once");
        spending.record("npc", hour, 1.0);
        let again = spending.take_unsent();
        assert_eq!(again.unsent[0].cost, 1.0, "only what was spent since");
        assert_eq!(again.number, 3, "hand-outs are numbered");
        // A send that failed goes again as it was, before what was spent since.
        spending.hold_failed(again.clone());
        spending.record("npc", hour, 2.0);
        assert_eq!(spending.next_to_send(), (again, true));
        let (next, resent) = spending.next_to_send();
        assert_eq!((next.number, next.unsent[0].cost, resent), (4, 2.0, false));
    }

    #[tokio::test(start_paused = true)]
    async fn a_flush_waits_for_the_next_hand_out_to_be_sent_and_not_when_unreachable() {
        let spending = Arc::new(SharedSpending::new());
        let hour = Duration::from_secs(3600);
        assert!(spending.flush(hour).await, "nothing to send");
        spending.record("npc", hour, 1.0);
        // A sender that hands out and reports when woken.
        let sender = {
            let spending = spending.clone();
            let wake = spending.wake_handle();
            tokio::spawn(async move {
                wake.notified().await;
                let taken = spending.take_unsent();
                assert_eq!(taken.unsent.len(), 1);
                spending.exchanged(Some(taken.number));
            })
        };
        assert!(spending.flush(Duration::from_secs(1)).await, "sent");
        sender.await.expect("the sender");
        // Unreachable: a flush says so at once.
        spending.record("npc", hour, 1.0);
        spending.exchanged(None);
        assert!(!spending.flush(hour).await);
        // A send that failed counts as not sent, even with nothing spent since.
        let taken = spending.take_unsent();
        spending.hold_failed(taken);
        assert!(!spending.flush(hour).await);
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
