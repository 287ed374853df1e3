//! A client's requests waiting for their answers, and the callers they run for, sharded by
//! request id: every call takes its entry, is answered through it and drops it, and with one
//! table behind one lock the calls of 16 threads to one server met on that lock (a contended
//! mutex, then a futex wake, in the 16-core profile). Consecutive ids fall in different shards.

use std::sync::{Arc, Mutex, MutexGuard};

use foldhash::{HashMap, HashMapExt};
use switchboard_core::CallerChannel;
use tokio::sync::oneshot;

/// Shards of the table: more than the threads that usually call one server at once.
const SHARDS: usize = 16;

/// The waiting requests of one client, answered with `A`.
pub(super) struct Waiting<A> {
    shards: [Mutex<Shard<A>>; SHARDS],
}

struct Shard<A> {
    /// By the client's own request ids, hashed with foldhash.
    answers: HashMap<i64, oneshot::Sender<A>>,
    /// Callers of requests in flight (a request made for no caller has none).
    callers: Vec<(i64, Arc<dyn CallerChannel>)>,
}

impl<A> Default for Waiting<A> {
    fn default() -> Self {
        Self {
            shards: std::array::from_fn(|_| {
                Mutex::new(Shard {
                    answers: HashMap::new(),
                    callers: Vec::new(),
                })
            }),
        }
    }
}

impl<A> Waiting<A> {
    fn shard(&self, id: i64) -> MutexGuard<'_, Shard<A>> {
        // `rem_euclid` of a positive divisor is in 0..SHARDS, so the cast is exact.
        let index = id.rem_euclid(SHARDS as i64) as usize;
        // A panic elsewhere while holding a shard leaves its map intact.
        self.shards[index]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Request `id` waits for its answer on `answer`, made for `caller` if any.
    pub(super) fn insert(
        &self,
        id: i64,
        answer: oneshot::Sender<A>,
        caller: Option<Arc<dyn CallerChannel>>,
    ) {
        let mut shard = self.shard(id);
        shard.answers.insert(id, answer);
        if let Some(caller) = caller {
            shard.callers.push((id, caller));
        }
    }

    /// Where request `id`'s answer goes, taken out (`None`: it was answered or forgotten).
    pub(super) fn take(&self, id: i64) -> Option<oneshot::Sender<A>> {
        self.shard(id).answers.remove(&id)
    }

    /// Request `id` is over: forgets its caller, and its answer's way if it is still there.
    pub(super) fn forget(&self, id: i64) {
        let mut shard = self.shard(id);
        shard.answers.remove(&id);
        shard.callers.retain(|(of, _)| *of != id);
    }

    /// The caller request `id` runs for, if it is in flight and has one.
    pub(super) fn caller_of(&self, id: i64) -> Option<Arc<dyn CallerChannel>> {
        let shard = self.shard(id);
        shard
            .callers
            .iter()
            .find(|(of, _)| *of == id)
            .map(|(_, caller)| caller.clone())
    }

    /// Every caller with a request in flight, oldest request first.
    pub(super) fn callers(&self) -> Vec<(i64, Arc<dyn CallerChannel>)> {
        let mut all: Vec<_> = (0..SHARDS as i64)
            .flat_map(|index| self.shard(index).callers.clone())
            .collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }

    /// Every request still waiting, taken out (the connection ended).
    pub(super) fn drain(&self) -> Vec<oneshot::Sender<A>> {
        (0..SHARDS as i64)
            .flat_map(|index| {
                let mut shard = self.shard(index);
                shard.callers.clear();
                shard
                    .answers
                    .drain()
                    .map(|(_, answer)| answer)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_answered_forgotten_and_drained_whichever_shard_they_fall_in() {
        let waiting = Waiting::<u32>::default();
        let mut receivers = Vec::new();
        for id in [1, 2, 17, 33, -5] {
            let (tx, rx) = oneshot::channel();
            waiting.insert(id, tx, None);
            receivers.push((id, rx));
        }
        // 1, 17 and 33 share a shard: each keeps its own answer.
        waiting.take(17).expect("17 waits").send(17).expect("sent");
        assert!(waiting.take(17).is_none(), "an answer's way is taken once");
        waiting.forget(33);
        let left = waiting.drain();
        assert_eq!(left.len(), 3, "1, 2 and -5 were still waiting");
        for (id, mut rx) in receivers {
            let got = rx.try_recv();
            match id {
                17 => assert_eq!(got, Ok(17)),
                _ => assert!(got.is_err(), "{id} was not answered"),
            }
        }
    }
}
