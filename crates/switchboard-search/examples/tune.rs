//! Scratch: evaluates configurations read from the environment.
use std::path::Path;
use switchboard_search::*;

fn env(name: &str, default: f32) -> f32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let root = Path::new("../../../shared/catalog");
    let docs = docs_from_catalog_file(&root.join("livemcpbench_tools.json")).unwrap();
    let queries = evaluation::load_queries(&root.join("queries.jsonl")).unwrap();
    let base = PlainBm25::build(docs.clone());
    let show = |name: &str, r: &evaluation::RecallReport| {
        println!(
            "{name:10} {:?} mrr {:.3} complete {:.2}",
            r.recall
                .iter()
                .map(|(_, v)| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>(),
            r.mrr,
            r.tasks_complete_at_10
        );
    };
    let r = evaluation::evaluate(&queries, |q| {
        base.search(q, 100).into_iter().map(|h| h.key).collect()
    });
    show("baseline", &r);
    let mut config = SearchConfig::default();
    config.k1 = env("K1", 1.2);
    for (i, f) in ["NAME", "DESC", "PARAM", "SERVER", "CAT"]
        .iter()
        .enumerate()
    {
        config.fields[i].weight = env(&format!("W_{f}"), config.fields[i].weight);
        config.fields[i].b = env(&format!("B_{f}"), config.fields[i].b);
    }
    config.query_k3 = env("K3", 0.0);
    config.server_evidence = env("SERVER", 0.0);
    config.concept_weight = env("CONCEPT", 0.0);
    config.clause_weight = env("CLAUSE", 0.0);
    if env("FB_DOCS", 0.0) > 0.0 {
        config.feedback = Some(Feedback {
            documents: env("FB_DOCS", 0.0) as usize,
            terms: env("FB_TERMS", 10.0) as usize,
            weight: env("FB_W", 0.3),
        });
    }
    let index = SearchIndex::build_with(docs, config);
    let half = queries.len() / 2;
    let run = |qs: &[evaluation::LabelledQuery]| {
        evaluation::evaluate(qs, |q| {
            index
                .search(q, 100, |_| true)
                .into_iter()
                .map(|h| h.key)
                .collect()
        })
    };
    show("method", &run(&queries));
    show("first", &run(&queries[..half]));
    show("second", &run(&queries[half..]));
    if std::env::var("MISS").is_ok() {
        for q in &queries {
            let ranked: Vec<String> = index
                .search(&q.query, 10, |_| true)
                .into_iter()
                .map(|h| h.key)
                .collect();
            let missed: Vec<_> = q
                .expected
                .iter()
                .filter(|a| !ranked.iter().any(|k| a.contains(k)))
                .map(|a| a[0].clone())
                .collect();
            if !missed.is_empty() {
                println!(
                    "\nQ: {}\n  top: {:?}\n  missed: {:?}",
                    q.query.chars().take(200).collect::<String>(),
                    &ranked[..ranked.len().min(5)],
                    missed
                );
            }
        }
    }
}
