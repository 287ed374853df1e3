//! `bench search`: tool-search quality and latency on the shared catalog.
//!
//! Quality: one retrieval per raw task text of `queries.jsonl` over `livemcpbench_tools.json`,
//! tool-level recall@1/3/5/10 and MRR, for plain BM25 (the reference point), the final method,
//! the method with each part switched off, and the method on each half of the query set (by qid
//! order) to show the gain is not carried by a few queries. Latency: median (and p90/p99) of
//! single searches over a 1,000-tool corpus (tools.json + the LiveMCPBench pool, padded with
//! renamed copies), cycling through the task texts.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use switchboard_search::evaluation::{LabelledQuery, RecallReport, evaluate, load_queries};
use switchboard_search::{
    Feedback, PlainBm25, SearchConfig, SearchDoc, SearchIndex, docs_from_catalog_file,
};

use crate::report::Percentiles;

const CORPUS_SIZE: usize = 1000;
const LATENCY_ROUNDS: usize = 20;

#[derive(Serialize)]
struct Row {
    method: String,
    queries: usize,
    expected_tools: usize,
    recall_at_1: f64,
    recall_at_3: f64,
    recall_at_5: f64,
    recall_at_10: f64,
    mrr: f64,
    tasks_complete_at_10: f64,
}

#[derive(Serialize)]
struct SearchReport {
    quality: Vec<Row>,
    corpus_tools: usize,
    build_ms: f64,
    latency: Percentiles,
}

/// Runs the search benchmark over the catalog directory and prints it.
pub fn run(catalog_dir: &Path, json: bool) -> anyhow::Result<()> {
    let pool = docs_from_catalog_file(&catalog_dir.join("livemcpbench_tools.json"))?;
    let queries = load_queries(&catalog_dir.join("queries.jsonl"))?;
    let mut quality = Vec::new();
    let baseline = PlainBm25::build(pool.clone());
    let by_baseline = |query: &str| keys(baseline.search(query, 100));
    quality.push(row(
        "plain BM25 (k1=1.2, b=0.75)",
        &evaluate(&queries, by_baseline),
    ));
    for (name, config) in variants() {
        let index = SearchIndex::build_with(pool.clone(), config);
        let by_index = |query: &str| keys(index.search(query, 100, |_| true));
        quality.push(row(name, &evaluate(&queries, by_index)));
    }
    let half = queries.len() / 2;
    let mut ordered: Vec<LabelledQuery> = queries.clone();
    ordered.sort_by(|left, right| left.qid.cmp(&right.qid));
    let final_index = SearchIndex::build(pool.clone());
    for (name, part) in [
        ("first half", &ordered[..half]),
        ("second half", &ordered[half..]),
    ] {
        let by_baseline = |query: &str| keys(baseline.search(query, 100));
        quality.push(row(
            &format!("plain BM25, {name}"),
            &evaluate(part, by_baseline),
        ));
        let by_index = |query: &str| keys(final_index.search(query, 100, |_| true));
        quality.push(row(&format!("final, {name}"), &evaluate(part, by_index)));
    }
    let corpus = corpus(catalog_dir, pool)?;
    let corpus_tools = corpus.len();
    let started = Instant::now();
    let index = SearchIndex::build(corpus);
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut samples: Vec<Duration> = Vec::with_capacity(queries.len() * LATENCY_ROUNDS);
    for _ in 0..LATENCY_ROUNDS {
        for query in &queries {
            let started = Instant::now();
            let hits = index.search(&query.query, 10, |_| true);
            samples.push(started.elapsed());
            std::hint::black_box(hits);
        }
    }
    let report = SearchReport {
        quality,
        corpus_tools,
        build_ms,
        latency: Percentiles::of(&mut samples),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&report);
    }
    Ok(())
}

/// The final method and the method with one part switched off at a time.
fn variants() -> Vec<(&'static str, SearchConfig)> {
    let final_config = SearchConfig::default();
    let mut without_server = final_config.clone();
    without_server.server_evidence = 0.0;
    let mut without_concepts = final_config.clone();
    without_concepts.concept_weight = 0.0;
    let mut without_clauses = final_config.clone();
    without_clauses.clause_weight = 0.0;
    without_clauses.fusion_k = None;
    let mut without_phrases = final_config.clone();
    without_phrases.phrase_weight = 0.0;
    let mut without_fusion = final_config.clone();
    without_fusion.fusion_k = None;
    let mut fields_only = without_clauses.clone();
    fields_only.server_evidence = 0.0;
    fields_only.concept_weight = 0.0;
    fields_only.fusion_k = None;
    fields_only.phrase_weight = 0.0;
    let mut with_feedback = final_config.clone();
    with_feedback.feedback = Some(Feedback {
        documents: 3,
        terms: 10,
        weight: 0.3,
    });
    vec![
        ("BM25F fields + stemming only", fields_only),
        ("final + RM3 feedback (3 docs, 10 terms)", with_feedback),
        ("final without server evidence", without_server),
        ("final without concept map", without_concepts),
        ("final without clause evidence and fusion", without_clauses),
        ("final without clause fusion", without_fusion),
        ("final without phrase evidence", without_phrases),
        ("final", final_config),
    ]
}

fn corpus(catalog_dir: &Path, pool: Vec<SearchDoc>) -> anyhow::Result<Vec<SearchDoc>> {
    let mut docs = docs_from_catalog_file(&catalog_dir.join("tools.json"))
        .context("the 1,000-tool corpus needs tools.json")?;
    docs.extend(pool);
    let mut copy = 0;
    while docs.len() < CORPUS_SIZE && copy < docs.len() {
        let mut extra = docs[copy].clone();
        extra.key = format!("copy{copy}/{}", extra.key);
        docs.push(extra);
        copy += 1;
    }
    docs.truncate(CORPUS_SIZE);
    Ok(docs)
}

fn keys(hits: Vec<switchboard_search::Hit>) -> Vec<String> {
    hits.into_iter().map(|hit| hit.key).collect()
}

fn row(method: &str, report: &RecallReport) -> Row {
    let at = |k| report.recall_at(k).unwrap_or(0.0);
    Row {
        method: method.to_owned(),
        queries: report.queries,
        expected_tools: report.expected_tools,
        recall_at_1: at(1),
        recall_at_3: at(3),
        recall_at_5: at(5),
        recall_at_10: at(10),
        mrr: report.mrr,
        tasks_complete_at_10: report.tasks_complete_at_10,
    }
}

fn print(report: &SearchReport) {
    println!(
        "{:<40} {:>5} {:>6}  {:>5} {:>5} {:>5} {:>5}  {:>5}  {:>6}",
        "tool search", "tasks", "tools", "R@1", "R@3", "R@5", "R@10", "MRR", "all@10"
    );
    for row in &report.quality {
        println!(
            "{:<40} {:>5} {:>6}  {:.3} {:.3} {:.3} {:.3}  {:.3}  {:.3}",
            row.method,
            row.queries,
            row.expected_tools,
            row.recall_at_1,
            row.recall_at_3,
            row.recall_at_5,
            row.recall_at_10,
            row.mrr,
            row.tasks_complete_at_10
        );
    }
    let latency = &report.latency;
    println!(
        "search over {} tools (build {:.1} ms): p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs over {} searches",
        report.corpus_tools,
        report.build_ms,
        latency.p50_us,
        latency.p90_us,
        latency.p99_us,
        latency.samples
    );
}
