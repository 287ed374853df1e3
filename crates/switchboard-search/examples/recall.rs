//! Quick recall and latency check on the shared catalog while developing the ranking:
//! `cargo run --release -p switchboard-search --example recall [CATALOG_DIR]`.
//! The full benchmark with ablations is `bench search`. Environment: `RECALL_SET="name=value,…"`
//! overrides ranking parameters, `RECALL_QUERY` ranks one query, `RECALL_MISSES` prints where
//! each expected tool ranked, `RECALL_DUMP=FILE` writes every task's full ranking as JSON
//! (task text → keys, best first) for analysis outside Rust, `RECALL_SLOWEST` lists the slowest
//! tasks to search. Recall is also printed for each half of the set (qid order).

use std::path::PathBuf;
use std::time::Instant;

use switchboard_search::evaluation::{evaluate, load_queries};
use switchboard_search::{Feedback, SearchConfig, SearchIndex, docs_from_catalog_file};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("../shared/catalog"), PathBuf::from);
    let docs = docs_from_catalog_file(&dir.join("livemcpbench_tools.json"))?;
    let queries = load_queries(&dir.join("queries.jsonl"))?;
    let index = SearchIndex::build_with(docs, config_from_environment());
    if let Ok(query) = std::env::var("RECALL_QUERY") {
        for hit in index.search(&query, 15, |_| true) {
            println!("{:.4} {}", hit.score, hit.key);
        }
        return Ok(());
    }
    let report = evaluate(&queries, |query| {
        index
            .search(query, 100, |_| true)
            .into_iter()
            .map(|hit| hit.key)
            .collect()
    });
    let at = |k| report.recall_at(k).unwrap_or(0.0);
    println!(
        "R@1 {:.3} R@3 {:.3} R@5 {:.3} R@10 {:.3} MRR {:.3} all@10 {:.3}",
        at(1),
        at(3),
        at(5),
        at(10),
        report.mrr,
        report.tasks_complete_at_10
    );
    // The same on each half of the set (qid order), to tell a method's gain from noise.
    let mut ordered = queries.clone();
    ordered.sort_by(|left, right| left.qid.cmp(&right.qid));
    let (first, second) = ordered.split_at(ordered.len() / 2);
    let halves: Vec<_> = [first, second]
        .into_iter()
        .map(|half| {
            evaluate(half, |query| {
                index
                    .search(query, 100, |_| true)
                    .into_iter()
                    .map(|hit| hit.key)
                    .collect()
            })
        })
        .collect();
    let half_at = |half: usize, k| halves[half].recall_at(k).unwrap_or(0.0);
    println!(
        "halves: R@5 {:.3} / {:.3}  R@10 {:.3} / {:.3}  MRR {:.3} / {:.3}",
        half_at(0, 5),
        half_at(1, 5),
        half_at(0, 10),
        half_at(1, 10),
        halves[0].mrr,
        halves[1].mrr
    );
    if let Some(path) = std::env::var_os("RECALL_DUMP") {
        let rankings: std::collections::HashMap<String, Vec<String>> = queries
            .iter()
            .map(|query| {
                let ranked = index
                    .search(&query.query, index.len(), |_| true)
                    .into_iter()
                    .map(|hit| hit.key)
                    .collect();
                (query.query.clone(), ranked)
            })
            .collect();
        std::fs::write(path, serde_json::to_string(&rankings)?)?;
    }
    if std::env::var_os("RECALL_MISSES").is_some() {
        for query in &queries {
            let ranked: Vec<String> = index
                .search(&query.query, 100, |_| true)
                .into_iter()
                .map(|hit| hit.key)
                .collect();
            println!("\n# {}", query.query);
            println!("  top: {:?}", &ranked[..ranked.len().min(5)]);
            for any_of in &query.expected {
                let rank = ranked.iter().position(|key| any_of.contains(key));
                println!("  {:?} {}", rank.map(|r| r + 1), any_of[0]);
            }
        }
    }
    if std::env::var_os("RECALL_SLOWEST").is_some() {
        let mut timed: Vec<(f64, &str)> = queries
            .iter()
            .map(|query| {
                let started = Instant::now();
                for _ in 0..20 {
                    std::hint::black_box(index.search(&query.query, 10, |_| true));
                }
                (
                    started.elapsed().as_secs_f64() * 1e6 / 20.0,
                    query.query.as_str(),
                )
            })
            .collect();
        timed.sort_by(|left, right| right.0.total_cmp(&left.0));
        for (micros, query) in timed.iter().take(5) {
            let shown: String = query.chars().take(100).collect();
            println!("{micros:8.1} µs  {} chars  {shown}", query.chars().count());
        }
    }
    let started = Instant::now();
    let mut searches = 0;
    for _ in 0..5 {
        for query in &queries {
            std::hint::black_box(index.search(&query.query, 10, |_| true));
            searches += 1;
        }
    }
    println!(
        "mean search over {} tools: {:.1} µs",
        index.len(),
        started.elapsed().as_secs_f64() * 1e6 / f64::from(searches)
    );
    Ok(())
}

/// The default configuration with overrides from `RECALL_SET="name=value,…"`.
fn config_from_environment() -> SearchConfig {
    let mut config = SearchConfig::default();
    let settings = std::env::var("RECALL_SET").unwrap_or_default();
    for setting in settings.split(',').filter(|setting| !setting.is_empty()) {
        let Some((name, value)) = setting.split_once('=') else {
            continue;
        };
        let Ok(value) = value.parse::<f32>() else {
            continue;
        };
        match name {
            "k1" => config.k1 = value,
            "server" => config.server_evidence = value,
            "concept" => config.concept_weight = value,
            "clause" => config.clause_weight = value,
            "phrase" => config.phrase_weight = value,
            "fusion" => config.fusion_k = (value > 0.0).then_some(value),
            "k3" => config.query_k3 = value,
            "feedback" => {
                config.feedback = (value > 0.0).then_some(Feedback {
                    documents: 3,
                    terms: 10,
                    weight: value,
                });
            }
            "feedback_documents" => {
                if let Some(feedback) = config.feedback.as_mut() {
                    feedback.documents = value as usize;
                }
            }
            "feedback_terms" => {
                if let Some(feedback) = config.feedback.as_mut() {
                    feedback.terms = value as usize;
                }
            }
            _ => {
                let Some((field, part)) = name.split_once('.') else {
                    continue;
                };
                let Ok(slot) = field.parse::<usize>() else {
                    continue;
                };
                let Some(weight) = config.fields.get_mut(slot) else {
                    continue;
                };
                if part == "w" {
                    weight.weight = value;
                } else {
                    weight.b = value;
                }
            }
        }
    }
    config
}
