//! Ranking behaviour on a small hand-written set of tools.

use serde_json::json;
use switchboard_core::ToolDefinition;
use switchboard_search::{Hit, SearchConfig, SearchDoc, SearchIndex};

fn doc(server: &str, name: &str, description: &str, parameters: &[(&str, &str)]) -> SearchDoc {
    let properties: serde_json::Map<String, serde_json::Value> = parameters
        .iter()
        .map(|(name, description)| {
            (
                (*name).to_owned(),
                json!({"type": "string", "description": description}),
            )
        })
        .collect();
    SearchDoc {
        key: format!("{server}/{name}"),
        name: name.to_owned(),
        server: server.to_owned(),
        category: "test".to_owned(),
        definition: ToolDefinition::new(
            name,
            description,
            json!({"type": "object", "properties": properties}),
        ),
    }
}

fn fixture() -> SearchIndex {
    SearchIndex::build(vec![
        doc(
            "filesystem",
            "write_file",
            "Create a new file or overwrite a file with content.",
            &[("path", "Where to write"), ("content", "Text")],
        ),
        doc(
            "filesystem",
            "read_file",
            "Read the complete contents of a file from the file system.",
            &[("path", "File to read")],
        ),
        doc(
            "filesystem",
            "list_directory",
            "List the entries of a directory.",
            &[("path", "Directory")],
        ),
        doc(
            "github",
            "createIssue",
            "Create a new issue in a GitHub repository.",
            &[
                ("owner", "Repository owner"),
                ("repo", "Repository name"),
                ("title", "Issue title"),
            ],
        ),
        doc(
            "github",
            "search_repositories",
            "Search for GitHub repositories.",
            &[("query", "Search query")],
        ),
        doc(
            "excel",
            "excel_read_sheet",
            "Read values from an Excel sheet.",
            &[("fileAbsolutePath", "Path of the xlsx file")],
        ),
        doc(
            "weather",
            "get_forecast",
            "Weather forecast for a location.",
            &[("latitude", "Latitude"), ("longitude", "Longitude")],
        ),
        doc(
            "search-cn",
            "bing_search",
            "使用必应搜索指定的关键词，并返回搜索结果列表",
            &[("query", "搜索关键词")],
        ),
        doc(
            "mirror-a",
            "echo",
            "Echo the message back.",
            &[("message", "Message")],
        ),
        doc(
            "mirror-b",
            "echo",
            "Echo the message back.",
            &[("message", "Message")],
        ),
    ])
}

fn keys(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|hit| hit.key.as_str()).collect()
}

#[test]
fn read_a_file_ranks_read_file_first() {
    let hits = fixture().search("read a file", 3, |_| true);
    assert_eq!(
        keys(&hits).first(),
        Some(&"filesystem/read_file"),
        "{hits:?}"
    );
}

#[test]
fn camel_case_names_match_their_words() {
    let hits = fixture().search("create an issue", 3, |_| true);
    assert_eq!(keys(&hits).first(), Some(&"github/createIssue"), "{hits:?}");
}

#[test]
fn concept_map_links_everyday_words_to_formats() {
    let hits = fixture().search("open my spreadsheet", 3, |_| true);
    assert_eq!(
        keys(&hits).first(),
        Some(&"excel/excel_read_sheet"),
        "{hits:?}"
    );
}

#[test]
fn chinese_descriptions_are_searchable() {
    let hits = fixture().search("关键词搜索", 3, |_| true);
    assert_eq!(
        keys(&hits).first(),
        Some(&"search-cn/bing_search"),
        "{hits:?}"
    );
}

#[test]
fn results_are_best_first_and_limited() {
    let hits = fixture().search("file directory repository weather", 2, |_| true);
    assert_eq!(hits.len(), 2);
    assert!(hits[0].score >= hits[1].score);
    assert!(fixture().search("file", 0, |_| true).is_empty());
}

#[test]
fn filter_hides_tools_outside_the_view() {
    let hits = fixture().search("read a file", 10, |key| !key.starts_with("filesystem/"));
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|hit| !hit.key.starts_with("filesystem/")),
        "{hits:?}"
    );
}

#[test]
fn equal_scores_are_ordered_by_the_tie_break() {
    let index = fixture();
    let default_order = index.search("echo message", 2, |_| true);
    assert_eq!(keys(&default_order), ["mirror-a/echo", "mirror-b/echo"]);
    assert_eq!(default_order[0].score, default_order[1].score);
    let prefer_b = index.search_with(
        "echo message",
        2,
        |_| true,
        |key| {
            if key.starts_with("mirror-b") {
                1.0
            } else {
                0.0
            }
        },
    );
    assert_eq!(keys(&prefer_b), ["mirror-b/echo", "mirror-a/echo"]);
}

#[test]
fn empty_and_hostile_queries_return_nothing_without_panicking() {
    let index = fixture();
    for query in [
        "",
        "   ",
        "the of and a",
        "!!!???",
        "\u{0}\u{200B}\u{FEFF}",
        "zzzzqqqq",
    ] {
        assert!(index.search(query, 5, |_| true).is_empty(), "{query:?}");
    }
    let huge = "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6".repeat(2000);
    assert!(index.search(&huge, 5, |_| true).len() <= 5);
    assert!(
        SearchIndex::build(Vec::new())
            .search("read a file", 5, |_| true)
            .is_empty()
    );
}

#[test]
fn directories_of_a_path_in_a_task_do_not_match_tools() {
    let hits = fixture().search(
        "write the notes to /home/weather/github/notes.txt",
        10,
        |_| true,
    );
    assert_eq!(
        keys(&hits).first(),
        Some(&"filesystem/write_file"),
        "{hits:?}"
    );
    assert!(
        keys(&hits)
            .iter()
            .all(|key| !key.starts_with("weather/") && !key.starts_with("github/")),
        "directory names matched: {hits:?}"
    );
}

#[test]
fn request_framing_words_do_not_pull_in_tools_that_happen_to_use_them() {
    let index = SearchIndex::build(vec![
        doc(
            "filesystem",
            "read_file",
            "Read the complete contents of a file.",
            &[("path", "File to read")],
        ),
        doc(
            "desktop",
            "give_feedback",
            "Open the feedback form. Tell us what you need and help us improve.",
            &[],
        ),
    ]);
    let hits = index.search(
        "Please help me, I need you to tell me what a file says",
        5,
        |_| true,
    );
    assert_eq!(keys(&hits), ["filesystem/read_file"], "{hits:?}");
}

#[test]
fn a_path_a_task_produces_asks_for_writing_and_a_path_it_names_for_reading() {
    let index = fixture();
    let rank = |hits: &[Hit], key: &str| keys(hits).iter().position(|k| *k == key);
    let produced = index.search(
        "Get the weather forecast, then draft a summary in /root/notes/forecast.md",
        10,
        |_| true,
    );
    assert_eq!(keys(&produced).first(), Some(&"weather/get_forecast"));
    assert!(
        rank(&produced, "filesystem/write_file") < rank(&produced, "filesystem/read_file"),
        "{produced:?}"
    );
    let named = index.search("Get the summary in /root/notes/forecast.md", 10, |_| true);
    assert!(
        rank(&named, "filesystem/read_file") < rank(&named, "filesystem/write_file"),
        "{named:?}"
    );
}

#[test]
fn a_many_step_task_still_lists_every_matching_tool_when_asked_for_many() {
    let docs: Vec<SearchDoc> = (0..80)
        .map(|i| {
            doc(
                &format!("server{i}"),
                &format!("report_{i}"),
                "Writes a weather report.",
                &[],
            )
        })
        .collect();
    let index = SearchIndex::build(docs);
    // Two clauses, so the ranking fuses per-clause rankings, each cut at a fixed depth.
    let hits = index.search("Get the weather, then write a report.", 100, |_| true);
    assert_eq!(hits.len(), 80, "{hits:?}");
    assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score));
}

#[test]
fn words_that_stand_together_in_the_task_and_the_tool_rank_it_first() {
    // Both tools say "stock" and "price" once, in descriptions of the same length; only the
    // second says them next to each other, as the task does. It is listed second, so without
    // phrase evidence the tie would go to the first.
    let docs = vec![
        doc(
            "market",
            "lookup_one",
            "Returns the price history of a stock.",
            &[],
        ),
        doc(
            "market",
            "lookup_two",
            "Returns the stock price for a company.",
            &[],
        ),
    ];
    let task = "What is the stock price of Nvidia?";
    let hits = SearchIndex::build(docs.clone()).search(task, 2, |_| true);
    assert_eq!(
        keys(&hits),
        ["market/lookup_two", "market/lookup_one"],
        "{hits:?}"
    );
    assert!(hits[0].score > hits[1].score, "{hits:?}");

    let mut words_only = SearchConfig::default();
    words_only.phrase_weight = 0.0;
    let hits = SearchIndex::build_with(docs, words_only).search(task, 2, |_| true);
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0].score, hits[1].score, "{hits:?}");
}
