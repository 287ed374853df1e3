//! A metric family: one value (a histogram, a counter) per set of label values, found on the
//! call's path without a lock or an allocation. Each thread first looks among the few series
//! it used last (compared value by value: most calls repeat a label set their thread saw a
//! moment ago). Else the series live in a map swapped whole (`ArcSwap`): a call hashes its
//! label values (a multiply-rotate hash, a few instructions per eight bytes) and reads the
//! current map; only a label set seen for the first time takes the writers' mutex, copies
//! the map and adds its series.
//!
//! Label values must come from bounded sets: a label set not found is first passed through
//! the caller's `bound` (which maps a value outside its set to a placeholder), so only bounded
//! sets are ever added, and a set found needs no check. As a last guard, a family holds at
//! most [`MAX_SERIES`] series and records the rest under [`OVERFLOW`] labels.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use thread_local::ThreadLocal;

/// Series one family holds at most.
pub(crate) const MAX_SERIES: usize = 4_096;
/// Every label's value for observations past [`MAX_SERIES`].
pub(crate) const OVERFLOW: &str = "_overflow";

/// One series: its label values and its value. The values are kept in one string (so finding
/// a series reads one allocation besides its own), and series whose label values hash alike
/// are chained.
pub(crate) struct Series<V, const N: usize> {
    /// The label values, one after the other.
    text: Box<str>,
    /// Where each value ends in `text`.
    ends: [usize; N],
    pub(crate) value: V,
    /// The series added before this one with the same hash (a collision), if any.
    collided: Option<Arc<Series<V, N>>>,
}

impl<V, const N: usize> Series<V, N> {
    /// The label values, in the family's order.
    pub(crate) fn labels(&self) -> [&str; N] {
        std::array::from_fn(|i| {
            let start = i.checked_sub(1).map_or(0, |before| self.ends[before]);
            self.text.get(start..self.ends[i]).unwrap_or("")
        })
    }

    /// Whether these are the series' label values: the lengths first (most label sets that
    /// differ, differ there), then the bytes, as bytes (no character boundaries to check).
    fn matches(&self, labels: &[&str; N]) -> bool {
        let mut start = 0;
        let lengths = labels.iter().zip(self.ends).all(|(given, end)| {
            let length = end.saturating_sub(start);
            start = end;
            given.len() == length
        });
        if !lengths {
            return false;
        }
        let text = self.text.as_bytes();
        let mut start = 0;
        labels.iter().zip(self.ends).all(|(given, end)| {
            let held = text.get(start..end);
            start = end;
            // Equal lengths: an empty value matches without a comparison (most label sets
            // have a few: no error, no agent).
            given.is_empty() || held == Some(given.as_bytes())
        })
    }
}

/// Series by the hash of their label values (already a hash: the map uses it as it is).
type Map<V, const N: usize> = HashMap<u64, Arc<Series<V, N>>, BuildHasherDefault<Prehashed>>;

/// Values of type `V` by `N` label values.
pub(crate) struct Family<V: Send + Sync, const N: usize> {
    series: ArcSwap<Map<V, N>>,
    /// Held while a series is added (rare: the first time a label set is seen); guards the
    /// count of series held.
    adding: Mutex<usize>,
    /// Each thread's most recently used series, newest first: a thread's calls mostly repeat
    /// a label set it used a moment ago, found by comparing the values, with no hash and no
    /// map (a series, once added, is never removed, so one remembered stays right).
    recent: ThreadLocal<RefCell<Recent<V, N>>>,
}

/// Series a thread remembers per family.
const RECENT: usize = 4;

type Recent<V, const N: usize> = [Option<Arc<Series<V, N>>>; RECENT];

impl<V: Default + Send + Sync, const N: usize> Default for Family<V, N> {
    fn default() -> Self {
        Self {
            series: ArcSwap::from_pointee(HashMap::default()),
            adding: Mutex::new(0),
            recent: ThreadLocal::new(),
        }
    }
}

impl<V: Default + Send + Sync, const N: usize> Family<V, N> {
    /// Runs `update` on the value of `labels`. A label set not held yet goes through `bound`
    /// first, and its series is added then (so every series held has bounded labels).
    pub(crate) fn with(
        &self,
        labels: [&str; N],
        bound: impl FnOnce([&str; N]) -> [&str; N],
        update: impl FnOnce(&V),
    ) {
        let mut recent = self.recent.get_or_default().borrow_mut();
        let remembered = recent
            .iter()
            .position(|series| series.as_ref().is_some_and(|s| s.matches(&labels)));
        if let Some(index) = remembered {
            recent[..=index].rotate_right(1);
            if let Some(series) = &recent[0] {
                update(&series.value);
            }
            return;
        }
        let series = match find(&self.series.load(), hash(&labels), &labels) {
            Some(series) => series.clone(),
            None => {
                // A value outside its set maps to a placeholder most likely held already:
                // looked up again without the lock.
                let labels = bound(labels);
                let key = hash(&labels);
                match find(&self.series.load(), key, &labels) {
                    Some(series) => series.clone(),
                    None => self.add(key, labels),
                }
            }
        };
        update(&series.value);
        // Remembered by its own labels: a label set that `bound` changed (a value outside its
        // set) takes the map again next time.
        recent.rotate_right(1);
        recent[0] = Some(series);
    }

    fn add(&self, key: u64, labels: [&str; N]) -> Arc<Series<V, N>> {
        let mut held = self
            .adding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = self.series.load_full();
        if let Some(series) = find(&current, key, &labels) {
            return series.clone();
        }
        if *held >= MAX_SERIES {
            let overflow = [OVERFLOW; N];
            let key = hash(&overflow);
            if let Some(series) = find(&current, key, &overflow) {
                return series.clone();
            }
            tracing::warn!(
                target: "switchboard::metrics",
                "a metric family holds {MAX_SERIES} series: new label sets are counted under \"{OVERFLOW}\" from now on"
            );
            *held += 1;
            return self.insert(&current, key, overflow);
        }
        *held += 1;
        self.insert(&current, key, labels)
    }

    fn insert(&self, current: &Map<V, N>, key: u64, labels: [&str; N]) -> Arc<Series<V, N>> {
        let mut text = String::new();
        let ends = labels.map(|label| {
            text.push_str(label);
            text.len()
        });
        let series = Arc::new(Series {
            text: text.into(),
            ends,
            value: V::default(),
            collided: current.get(&key).cloned(),
        });
        let mut next = current.clone();
        next.insert(key, series.clone());
        self.series.store(Arc::new(next));
        series
    }

    /// Every series, sorted by label values (so a scrape reads the same order every time).
    pub(crate) fn sorted(&self) -> Vec<Arc<Series<V, N>>> {
        let mut all: Vec<_> = chained(&self.series.load()).cloned().collect();
        all.sort_by(|a, b| a.labels().cmp(&b.labels()));
        all
    }
}

/// Every series of `map`, collided ones included.
fn chained<V, const N: usize>(map: &Map<V, N>) -> impl Iterator<Item = &Arc<Series<V, N>>> {
    map.values()
        .flat_map(|head| std::iter::successors(Some(head), |series| series.collided.as_ref()))
}

fn find<'m, V, const N: usize>(
    map: &'m Map<V, N>,
    key: u64,
    labels: &[&str; N],
) -> Option<&'m Arc<Series<V, N>>> {
    std::iter::successors(map.get(&key), |series| series.collided.as_ref())
        .find(|series| series.matches(labels))
}

/// The multiplier of FxHash (rustc's): odd, with well-spread bits.
const SEED: u64 = 0x517c_c1b7_2722_0a95;

/// The values' hash: eight bytes at a time, then the length, so `("ab", "")` and `("a", "b")`
/// differ. Not keyed — nobody can flood a bucket, since only bounded label sets are added.
fn hash<const N: usize>(labels: &[&str; N]) -> u64 {
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    let mut hash = 0;
    for label in labels {
        let bytes = label.as_bytes();
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            hash = mix(hash, u64::from_le_bytes(eight));
        }
        let rest = words.remainder();
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        hash = mix(hash, u64::from_le_bytes(tail));
        hash = mix(hash, bytes.len() as u64);
    }
    hash
}

/// The hasher of a map whose keys are hashes already: it passes the `u64` through.
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; anything else still hashes (slowly), never panics.
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(SEED);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn count(family: &Family<AtomicU64, 2>) -> Vec<(String, u64)> {
        family
            .sorted()
            .iter()
            .map(|s| (s.labels().join("|"), s.value.load(Ordering::Relaxed)))
            .collect()
    }

    #[test]
    fn each_label_set_has_its_own_series_in_label_order() {
        let family = Family::<AtomicU64, 2>::default();
        let add = |labels| {
            family.with(labels, |l| l, |v| _ = v.fetch_add(1, Ordering::Relaxed));
        };
        add(["b", "x"]);
        add(["a", "y"]);
        add(["b", "x"]);
        // "ab" + "" must not be the same series as "a" + "b".
        add(["ab", ""]);
        add(["a", "b"]);
        assert_eq!(
            count(&family),
            [
                ("a|b".to_owned(), 1),
                ("a|y".to_owned(), 1),
                ("ab|".to_owned(), 1),
                ("b|x".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn each_threads_recent_series_count_where_they_belong() {
        let family = Family::<AtomicU64, 2>::default();
        // More label sets than a thread remembers, in an order that hits, misses and
        // reorders its recent ones; values that differ in one label only.
        let sets = [
            ["a", "x"],
            ["a", "y"],
            ["b", "x"],
            ["a", "x"],
            ["c", "x"],
            ["d", "x"],
        ];
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for round in 0..10 {
                        for (index, labels) in sets.iter().enumerate() {
                            if (round + index) % 3 != 0 {
                                family.with(
                                    *labels,
                                    |l| l,
                                    |v| _ = v.fetch_add(1, Ordering::Relaxed),
                                );
                            }
                        }
                    }
                });
            }
        });
        let mut expected: std::collections::BTreeMap<String, u64> = Default::default();
        for round in 0..10 {
            for (index, labels) in sets.iter().enumerate() {
                if (round + index) % 3 != 0 {
                    *expected.entry(labels.join("|")).or_default() += 3;
                }
            }
        }
        assert_eq!(count(&family), expected.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn past_the_cap_observations_go_to_one_overflow_series() {
        let family = Family::<AtomicU64, 2>::default();
        for i in 0..MAX_SERIES + 10 {
            let name = i.to_string();
            family.with(
                [name.as_str(), "x"],
                |l| l,
                |v| {
                    v.fetch_add(1, Ordering::Relaxed);
                },
            );
        }
        let counts = count(&family);
        assert_eq!(counts.len(), MAX_SERIES + 1);
        let overflow = format!("{OVERFLOW}|{OVERFLOW}");
        assert!(counts.contains(&(overflow, 10)));
    }

    /// A value outside its set, once its placeholder is held, is counted there without the
    /// writers' lock (a client naming agents at random must not serialize every call).
    #[test]
    fn a_value_bound_to_a_held_placeholder_takes_no_lock() {
        let family = std::sync::Arc::new(Family::<AtomicU64, 1>::default());
        fn bound(_: [&str; 1]) -> [&str; 1] {
            ["_unknown"]
        }
        family.with(["mallory"], bound, |v| {
            v.fetch_add(1, Ordering::Relaxed);
        });
        let held = family.adding.lock().expect("lock");
        let (done, finished) = std::sync::mpsc::channel();
        let other = family.clone();
        std::thread::spawn(move || {
            other.with(["eve"], bound, |v| {
                v.fetch_add(1, Ordering::Relaxed);
            });
            let _ = done.send(());
        });
        let counted = finished.recv_timeout(std::time::Duration::from_secs(5));
        drop(held);
        assert!(counted.is_ok(), "the call waited for the writers' lock");
        let counted: Vec<(String, u64)> = family
            .sorted()
            .iter()
            .map(|series| {
                (
                    series.labels()[0].to_owned(),
                    series.value.load(Ordering::Relaxed),
                )
            })
            .collect();
        assert_eq!(counted, [("_unknown".to_owned(), 2)]);
    }

    #[test]
    fn label_sets_that_hash_alike_are_chained_and_both_found() {
        let family = Family::<AtomicU64, 2>::default();
        let empty = family.series.load_full();
        family.insert(&empty, 7, ["a", "b"]);
        let one = family.series.load_full();
        family.insert(&one, 7, ["ab", ""]);
        let map = family.series.load_full();
        assert_eq!(map.len(), 1);
        for labels in [["a", "b"], ["ab", ""]] {
            let found = find(&map, 7, &labels).expect("chained");
            assert_eq!(found.labels(), labels);
        }
        assert!(find(&map, 7, &["a", ""]).is_none());
        assert_eq!(family.sorted().len(), 2);
    }

    #[test]
    fn only_a_label_set_not_held_goes_through_bound() {
        let family = Family::<AtomicU64, 1>::default();
        fn placeholder(_: [&str; 1]) -> [&str; 1] {
            ["_unknown"]
        }
        family.with(["kept"], |l| l, |v| _ = v.fetch_add(1, Ordering::Relaxed));
        // Held: counted as it is, bound is not asked.
        family.with(["kept"], placeholder, |v| {
            _ = v.fetch_add(1, Ordering::Relaxed)
        });
        family.with(["other"], placeholder, |v| {
            _ = v.fetch_add(1, Ordering::Relaxed)
        });
        family.with(["third"], placeholder, |v| {
            _ = v.fetch_add(1, Ordering::Relaxed)
        });
        let counts: Vec<_> = family
            .sorted()
            .iter()
            .map(|s| (s.labels()[0].to_owned(), s.value.load(Ordering::Relaxed)))
            .collect();
        assert_eq!(counts, [("_unknown".to_owned(), 2), ("kept".to_owned(), 2)]);
    }
}
