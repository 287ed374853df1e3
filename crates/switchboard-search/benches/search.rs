//! Search latency over a ~1,000-tool corpus (the shared catalog's tools.json plus the
//! LiveMCPBench pool, tripled keys if needed), queried with the labelled task texts.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_search::evaluation::load_queries;
use switchboard_search::{SearchDoc, SearchIndex, docs_from_catalog_file};

fn corpus() -> (Vec<SearchDoc>, Vec<String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/catalog");
    let mut docs = docs_from_catalog_file(&dir.join("tools.json")).expect("tools.json");
    docs.extend(docs_from_catalog_file(&dir.join("livemcpbench_tools.json")).expect("pool"));
    let mut copy = 0;
    while docs.len() < 1000 {
        let mut extra = docs[copy].clone();
        extra.key = format!("copy{copy}/{}", extra.key);
        docs.push(extra);
        copy += 1;
    }
    docs.truncate(1000);
    let queries = load_queries(&dir.join("queries.jsonl")).expect("queries");
    (docs, queries.into_iter().map(|query| query.query).collect())
}

fn search(criterion: &mut Criterion) {
    let (docs, queries) = corpus();
    let index = SearchIndex::build(docs.clone());
    let mut next = 0;
    criterion.bench_function("search 1000 tools, task queries, limit 10", |bench| {
        bench.iter(|| {
            next = (next + 1) % queries.len();
            index.search(&queries[next], 10, |_| true)
        })
    });
    criterion.bench_function("search 1000 tools, short query", |bench| {
        bench.iter(|| index.search("read a file", 10, |_| true))
    });
    criterion.bench_function("build index over 1000 tools", |bench| {
        bench.iter(|| SearchIndex::build(docs.clone()))
    });
}

criterion_group!(benches, search);
criterion_main!(benches);
