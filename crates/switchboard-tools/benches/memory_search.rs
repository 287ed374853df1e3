//! `search_facts` over 100,000 facts (target: < 5 ms p50).
//!
//! The facts are 12 words each from a 5,000-word vocabulary with a Zipf distribution, like
//! natural text. Measured: typical queries (three words of ordinary frequency), and the worst
//! single word (the most frequent one, in about a third of all facts).
//! Run: `cargo bench -p switchboard-tools --bench memory_search`.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use switchboard_tools::memory::store::Store;

const VOCABULARY: usize = 5_000;
const FACTS: usize = 100_000;

fn word(rank: usize) -> String {
    // Pronounceable, distinct, never a stopword.
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "tu", "sa", "vor", "el", "dun", "ri", "ma", "tho", "gar", "ne",
        "sil", "qu",
    ];
    let mut n = rank + 16;
    let mut text = String::new();
    while n > 0 {
        text.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    text
}

/// Cumulative Zipf weights (s = 1).
fn zipf() -> Vec<f64> {
    let mut total = 0.0;
    (1..=VOCABULARY)
        .map(|rank| {
            total += 1.0 / rank as f64;
            total
        })
        .collect()
}

fn sample(cumulative: &[f64], rng: &mut StdRng) -> usize {
    let total = cumulative[cumulative.len() - 1];
    let pick = rng.random_range(0.0..total);
    cumulative.partition_point(|c| *c < pick)
}

fn fill(store: &Store) {
    let cumulative = zipf();
    let mut rng = StdRng::seed_from_u64(7);
    let mut batch = Vec::with_capacity(1000);
    for i in 0..FACTS {
        let words: Vec<String> = (0..12)
            .map(|_| word(sample(&cumulative, &mut rng)))
            .collect();
        batch.push((
            format!("fact {i}: {}", words.join(" ")),
            None,
            Some("bench".to_owned()),
        ));
        if batch.len() == 1000 {
            store.add_facts(&batch).expect("fill");
            batch.clear();
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("bench.db")).expect("open");
    fill(&store);
    let mut rng = StdRng::seed_from_u64(11);
    let queries: Vec<String> = (0..64)
        .map(|_| {
            (0..3)
                .map(|_| word(rng.random_range(50..2_000)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut group = c.benchmark_group("memory");
    let mut next = 0usize;
    group.bench_function(
        "search_facts, 100k facts, typical 3-word query, top 10",
        |b| {
            b.iter(|| {
                next = (next + 1) % queries.len();
                store.search_facts(&queries[next], 10).expect("search")
            })
        },
    );
    let worst = word(0);
    group.bench_function(
        "search_facts, 100k facts, the most frequent word, top 10",
        |b| b.iter(|| store.search_facts(&worst, 10).expect("search")),
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
