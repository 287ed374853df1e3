//! Recall regression on the labelled LiveMCPBench task set in `../shared/catalog` (referenced
//! by path, never copied). Fails, with a message saying so, when the catalog is missing.
//!
//! The floors below are the measured recall of the method minus a small margin, so a change
//! that makes retrieval worse fails here. The targets (recall@5 ≥ 0.45, recall@10 ≥
//! 0.55) are NOT yet met by this method; see the crate README/report.

use std::path::PathBuf;

use switchboard_search::evaluation::{evaluate, load_queries};
use switchboard_search::{PlainBm25, SearchIndex, docs_from_catalog_file};

const RECALL_AT_5_FLOOR: f64 = 0.35;
const RECALL_AT_10_FLOOR: f64 = 0.42;

fn catalog_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/catalog")
}

#[test]
fn recall_on_livemcpbench_tasks_beats_plain_bm25_and_holds_its_floor() {
    let dir = catalog_dir();
    let tools = dir.join("livemcpbench_tools.json");
    let queries = dir.join("queries.jsonl");
    assert!(
        tools.is_file() && queries.is_file(),
        "the labelled catalog is missing: expected {} and {} (the shared benchmark data)",
        tools.display(),
        queries.display()
    );
    let docs = docs_from_catalog_file(&tools).expect("catalog loads");
    let queries = load_queries(&queries).expect("queries load");
    assert!(
        queries.len() > 80,
        "only {} labelled queries",
        queries.len()
    );

    let baseline = PlainBm25::build(docs.clone());
    let baseline = evaluate(&queries, |query| {
        baseline
            .search(query, 100)
            .into_iter()
            .map(|hit| hit.key)
            .collect()
    });
    let index = SearchIndex::build(docs);
    let method = evaluate(&queries, |query| {
        index
            .search(query, 100, |_| true)
            .into_iter()
            .map(|hit| hit.key)
            .collect()
    });
    let at = |report: &switchboard_search::evaluation::RecallReport, k| {
        report.recall_at(k).expect("cut-off measured")
    };
    assert!(
        at(&method, 5) >= RECALL_AT_5_FLOOR,
        "recall@5 fell: {method:?}"
    );
    assert!(
        at(&method, 10) >= RECALL_AT_10_FLOOR,
        "recall@10 fell: {method:?}"
    );
    for k in [5, 10] {
        assert!(
            at(&method, k) > at(&baseline, k),
            "no better than plain BM25 at {k}: {method:?} vs {baseline:?}"
        );
    }
}
