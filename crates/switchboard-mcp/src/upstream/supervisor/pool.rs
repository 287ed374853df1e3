//! A pool of instances of one stdio server, as the rest of the gateway sees it: which instance
//! a call goes to, and what the server's status is.
//!
//! The choice is made per call, without a lock or an allocation: the instances that are up
//! (an atomic flag each) are scanned from a cursor that moves one step per call, and the one
//! with the fewest calls in flight (an atomic count each) wins — the first seen, so ties go
//! round. The count is held by an [`InstanceCall`] until the call ends.
//!
//! The status of a pool is that of its first instance that is up (its tools, prompts,
//! resources, era and capabilities: the instances run the same server, and the catalog lists
//! one of them), up when any instance is, with the number of instances up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use switchboard_core::upstream::Upstream;

use super::instance::Slot;
use super::{InstanceCount, ServerState, ServerStatus};

/// One call's count on the instance of a pool it went to; dropping it ends the count.
pub struct InstanceCall {
    slot: Arc<Slot>,
}

impl Drop for InstanceCall {
    fn drop(&mut self) {
        self.slot.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The instance that is up with the fewest calls in flight (ties taken in turn from
/// `cursor`), its upstream, and the call's count on it. `None` when no instance is up.
pub(super) fn choose(
    pool: &[Arc<Slot>],
    cursor: &AtomicUsize,
) -> Option<(Arc<dyn Upstream>, InstanceCall)> {
    let start = cursor.fetch_add(1, Ordering::Relaxed) % pool.len();
    // An instance can go down between its flag and its slot: look again, a few times.
    for _ in 0..pool.len().min(4) {
        let (behind, ahead) = pool.split_at(start);
        let mut best: Option<(&Arc<Slot>, usize)> = None;
        for slot in ahead.iter().chain(behind) {
            if !slot.is_up() {
                continue;
            }
            let load = slot.in_flight.load(Ordering::Relaxed);
            if best.is_none_or(|(_, least)| load < least) {
                best = Some((slot, load));
                if load == 0 {
                    break;
                }
            }
        }
        let (slot, _) = best?;
        slot.in_flight.fetch_add(1, Ordering::Relaxed);
        let call = InstanceCall { slot: slot.clone() };
        if let Some(upstream) = slot.upstream() {
            return Some((upstream, call));
        }
    }
    None
}

/// The status of a pool: its first instance that is up (else its first), up when any is,
/// starting when none is up and any is starting, settled when every instance is.
pub(super) fn combined(pool: &[Arc<Slot>]) -> ServerStatus {
    let statuses: Vec<ServerStatus> = pool.iter().map(|s| s.status.borrow().clone()).collect();
    let up = statuses
        .iter()
        .filter(|status| status.state == ServerState::Up)
        .count();
    let settled = statuses.iter().all(|status| status.settled);
    let starting = statuses
        .iter()
        .any(|status| status.state == ServerState::Starting);
    let configured = statuses.len();
    // The first instance that is down and says why, 1-based as in the logs.
    let down = statuses
        .iter()
        .enumerate()
        .find(|(_, status)| status.state != ServerState::Up && status.error.is_some());
    let mut status = statuses
        .iter()
        .find(|status| status.state == ServerState::Up)
        .or(statuses.first())
        .cloned()
        .unwrap_or_else(ServerStatus::starting);
    if up > 0 {
        status.error = down.and_then(|(index, instance)| {
            let why = instance.error.as_deref()?;
            Some(format!(
                "instance {} of {configured} is down: {why}",
                index + 1
            ))
        });
    } else if starting {
        status.state = ServerState::Starting;
    }
    status.settled = settled;
    status.instances = InstanceCount {
        up: u8::try_from(up).unwrap_or(u8::MAX),
        configured: u8::try_from(configured).unwrap_or(u8::MAX),
    };
    status
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use serde_json::{Map, Value};
    use switchboard_core::upstream::UpstreamError;
    use switchboard_core::{CallContext, ToolOutcome};
    use tokio::sync::watch;

    use super::*;

    /// An upstream that answers with its instance's number.
    struct Numbered(usize);

    impl Upstream for Numbered {
        fn call_tool<'a>(
            &'a self,
            _tool: &'a str,
            _arguments: Map<String, Value>,
            _ctx: &'a CallContext,
        ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
            Box::pin(async move { Ok(ToolOutcome::text(self.0.to_string())) })
        }
    }

    struct Pool {
        slots: Vec<Arc<Slot>>,
        statuses: Vec<watch::Sender<ServerStatus>>,
        cursor: AtomicUsize,
    }

    impl Pool {
        /// `n` instances, all up.
        fn up(n: usize) -> Self {
            let mut pool = Self {
                slots: Vec::new(),
                statuses: Vec::new(),
                cursor: AtomicUsize::new(0),
            };
            for index in 0..n {
                let (tx, rx) = watch::channel(ServerStatus::starting());
                let slot = Arc::new(Slot::new(rx));
                slot.set_current(Some(Arc::new(Numbered(index))));
                tx.send_modify(|s| {
                    s.state = ServerState::Up;
                    s.settled = true;
                });
                pool.slots.push(slot);
                pool.statuses.push(tx);
            }
            pool
        }

        fn down(&self, index: usize, why: &str) {
            self.slots[index].set_current(None);
            self.statuses[index].send_modify(|s| {
                s.state = ServerState::Down;
                s.error = Some(why.to_owned());
            });
        }

        /// Which instance the next call goes to, and its count there.
        fn pick(&self) -> (usize, InstanceCall) {
            let (upstream, call) = choose(&self.slots, &self.cursor).expect("an instance is up");
            let index = self
                .slots
                .iter()
                .position(|slot| Arc::ptr_eq(slot, &call.slot))
                .expect("one of the pool's");
            // The upstream handed out is the chosen instance's own.
            let own = self.slots[index].upstream().expect("up");
            assert!(std::ptr::addr_eq(Arc::as_ptr(&own), Arc::as_ptr(&upstream)));
            (index, call)
        }
    }

    #[test]
    fn calls_one_after_another_go_round_the_instances() {
        let pool = Pool::up(3);
        let order: Vec<usize> = (0..6).map(|_| pool.pick().0).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_call_goes_to_the_instance_with_the_fewest_in_flight() {
        let pool = Pool::up(3);
        let (first, _held_a) = pool.pick();
        let (second, _held_b) = pool.pick();
        assert_ne!(first, second);
        // Two instances are busy: every call now goes to the third, whose count rises.
        let (third, held_c) = pool.pick();
        assert!(![first, second].contains(&third));
        let (next, _held_d) = pool.pick();
        assert_ne!(next, third, "the third has a call in flight now");
        drop(held_c);
        assert_eq!(pool.slots[third].in_flight.load(Ordering::Relaxed), 0);
        let (after, _held_e) = pool.pick();
        assert_eq!(after, third, "the only idle instance again");
    }

    #[test]
    fn calls_skip_an_instance_that_is_down_and_none_up_is_none() {
        let pool = Pool::up(3);
        pool.down(1, "exited");
        let picked: Vec<usize> = (0..4).map(|_| pool.pick().0).collect();
        assert!(!picked.contains(&1), "{picked:?}");
        pool.down(0, "exited");
        pool.down(2, "exited");
        assert!(choose(&pool.slots, &pool.cursor).is_none());
    }

    #[test]
    fn a_pool_is_up_while_any_instance_is_and_says_which_is_down() {
        let pool = Pool::up(3);
        let status = combined(&pool.slots);
        assert_eq!(status.state, ServerState::Up);
        assert_eq!(
            status.instances,
            InstanceCount {
                up: 3,
                configured: 3
            }
        );
        assert_eq!(status.error, None);

        pool.down(0, "the server closed stdout");
        let status = combined(&pool.slots);
        assert_eq!(status.state, ServerState::Up);
        assert_eq!(status.instances.up, 2);
        assert_eq!(
            status.error.as_deref(),
            Some("instance 1 of 3 is down: the server closed stdout")
        );

        pool.down(1, "x");
        pool.down(2, "x");
        let status = combined(&pool.slots);
        assert_eq!(status.state, ServerState::Down);
        assert_eq!(
            status.error.as_deref(),
            Some("the server closed stdout"),
            "a pool all down says why as one server would"
        );
        pool.statuses[2].send_modify(|s| s.state = ServerState::Starting);
        assert_eq!(combined(&pool.slots).state, ServerState::Starting);
    }

    #[test]
    fn a_pool_is_settled_once_every_instance_is() {
        let pool = Pool::up(2);
        assert!(combined(&pool.slots).settled);
        pool.statuses[1].send_modify(|s| s.settled = false);
        assert!(!combined(&pool.slots).settled);
    }
}
