//! A metric family: one value (a histogram, a counter) per set of label values, found on the
//! call's path without a lock or an allocation. The series live in a map swapped whole
//! (`ArcSwap`): a call hashes its label values and reads the current map; only a label set
//! seen for the first time takes the writers' mutex, copies the map and adds its series.
//!
//! Label values must come from bounded sets (the caller's job); as a last guard, a family
//! holds at most [`MAX_SERIES`] series and records the rest under [`OVERFLOW`] labels.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

/// Series one family holds at most.
pub(crate) const MAX_SERIES: usize = 4_096;
/// Every label's value for observations past [`MAX_SERIES`].
pub(crate) const OVERFLOW: &str = "_overflow";

/// One series: its label values and its value.
pub(crate) struct Series<V, const N: usize> {
    pub(crate) labels: [Box<str>; N],
    pub(crate) value: V,
}

type Map<V, const N: usize> = HashMap<u64, Vec<Arc<Series<V, N>>>>;

/// Values of type `V` by `N` label values.
pub(crate) struct Family<V, const N: usize> {
    series: ArcSwap<Map<V, N>>,
    /// Held while a series is added (rare: the first time a label set is seen).
    adding: Mutex<()>,
}

impl<V: Default, const N: usize> Default for Family<V, N> {
    fn default() -> Self {
        Self {
            series: ArcSwap::from_pointee(HashMap::new()),
            adding: Mutex::new(()),
        }
    }
}

impl<V: Default, const N: usize> Family<V, N> {
    /// Runs `update` on the value of `labels`, adding its series the first time.
    pub(crate) fn with(&self, labels: [&str; N], update: impl FnOnce(&V)) {
        let key = hash(&labels);
        if let Some(series) = find(&self.series.load(), key, &labels) {
            update(&series.value);
            return;
        }
        update(&self.add(key, labels).value);
    }

    fn add(&self, key: u64, labels: [&str; N]) -> Arc<Series<V, N>> {
        let _adding = self
            .adding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = self.series.load_full();
        if let Some(series) = find(&current, key, &labels) {
            return series.clone();
        }
        let held: usize = current.values().map(Vec::len).sum();
        if held >= MAX_SERIES {
            let overflow = [OVERFLOW; N];
            let key = hash(&overflow);
            if let Some(series) = find(&current, key, &overflow) {
                return series.clone();
            }
            return self.insert(&current, key, overflow);
        }
        self.insert(&current, key, labels)
    }

    fn insert(&self, current: &Map<V, N>, key: u64, labels: [&str; N]) -> Arc<Series<V, N>> {
        let series = Arc::new(Series {
            labels: labels.map(Box::from),
            value: V::default(),
        });
        let mut next = current.clone();
        next.entry(key).or_default().push(series.clone());
        self.series.store(Arc::new(next));
        series
    }

    /// Every series, sorted by label values (so a scrape reads the same order every time).
    pub(crate) fn sorted(&self) -> Vec<Arc<Series<V, N>>> {
        let mut all: Vec<_> = self.series.load().values().flatten().cloned().collect();
        all.sort_by(|a, b| a.labels.cmp(&b.labels));
        all
    }
}

fn find<'m, V, const N: usize>(
    map: &'m Map<V, N>,
    key: u64,
    labels: &[&str; N],
) -> Option<&'m Arc<Series<V, N>>> {
    map.get(&key)?.iter().find(|series| {
        series
            .labels
            .iter()
            .zip(labels)
            .all(|(held, given)| held.as_ref() == *given)
    })
}

/// The values' hash (SipHash with fixed keys: the same in every map, and the label values
/// come from bounded sets, so no caller can flood a bucket).
fn hash<const N: usize>(labels: &[&str; N]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for label in labels {
        hasher.write(label.as_bytes());
        hasher.write_u8(0xff);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn count(family: &Family<AtomicU64, 2>) -> Vec<(String, u64)> {
        family
            .sorted()
            .iter()
            .map(|s| (s.labels.join("|"), s.value.load(Ordering::Relaxed)))
            .collect()
    }

    #[test]
    fn each_label_set_has_its_own_series_in_label_order() {
        let family = Family::<AtomicU64, 2>::default();
        let add = |labels| family.with(labels, |v| _ = v.fetch_add(1, Ordering::Relaxed));
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
    fn past_the_cap_observations_go_to_one_overflow_series() {
        let family = Family::<AtomicU64, 2>::default();
        for i in 0..MAX_SERIES + 10 {
            let name = i.to_string();
            family.with([name.as_str(), "x"], |v| {
                v.fetch_add(1, Ordering::Relaxed);
            });
        }
        let counts = count(&family);
        assert_eq!(counts.len(), MAX_SERIES + 1);
        let overflow = format!("{OVERFLOW}|{OVERFLOW}");
        assert!(counts.contains(&(overflow, 10)));
    }
}
