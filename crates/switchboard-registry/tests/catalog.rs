//! Local catalog files: the three shapes (an array of `server.json`, one `server.json`, a
//! registry page), search and look-up over them, and a malformed file reported with its path,
//! JSON path, line and column.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_registry::{Registry, RegistryError, Sources};

fn server(name: &str, version: &str, description: &str) -> Value {
    json!({"name": name, "version": version, "description": description,
           "packages": [{"registryType": "npm", "identifier": "x", "version": version,
                         "transport": {"type": "stdio"}}]})
}

fn write(dir: &Path, file: &str, value: &Value) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, serde_json::to_string_pretty(value).expect("json")).expect("write");
    path
}

fn catalogs(paths: Vec<PathBuf>) -> Registry {
    Registry::new(Sources {
        registries: vec![],
        catalogs: paths,
        ttl: Duration::from_secs(60),
    })
}

#[tokio::test]
async fn the_three_shapes_are_read_in_order_and_deduplicated_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let array = write(
        dir.path(),
        "array.json",
        &json!([
            server("io.example/files", "1.0.0", "Reads files"),
            server("io.example/files", "1.2.0", "Reads files, newer"),
            server("io.example/time", "0.1.0", "Tells the time"),
        ]),
    );
    let single = write(
        dir.path(),
        "single.json",
        &server("io.example/weather", "2.0.0", "Forecasts"),
    );
    let page = write(
        dir.path(),
        "page.json",
        &json!({"servers": [
            {"server": server("io.example/time", "9.9.9", "A second time server"), "_meta": {}},
            {"server": server("io.example/gone", "1.0.0", "Withdrawn"),
             "_meta": {"io.modelcontextprotocol.registry/official": {"status": "deleted"}}},
            {"server": server("io.example/old", "1.0.0", "Superseded"),
             "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": false}}},
            {"server": server("io.example/old", "2.0.0", "Current"),
             "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": true}}},
        ], "metadata": {"count": 4}}),
    );
    let registry = catalogs(vec![array.clone(), single, page.clone()]);
    let found = registry.search("", 50).await.expect("search");
    let names: Vec<(&str, &str)> = found
        .iter()
        .map(|l| (l.server.name.as_str(), l.server.version.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("io.example/files", "1.2.0"),
            ("io.example/time", "0.1.0"),
            ("io.example/weather", "2.0.0"),
            ("io.example/old", "2.0.0"),
        ]
    );
    assert_eq!(found[0].source, array.display().to_string());
    assert!(found.iter().all(|l| l.status == "active" && l.is_latest));

    let time = registry.search("TIME", 50).await.expect("search");
    assert_eq!(time.len(), 1);
    assert_eq!(time[0].server.version, "0.1.0");
    assert_eq!(
        registry.search("forecast", 50).await.expect("search")[0]
            .server
            .name,
        "io.example/weather"
    );
    assert_eq!(registry.search("", 2).await.expect("search").len(), 2);

    let older = registry
        .get("io.example/files", Some("1.0.0"))
        .await
        .expect("get a version");
    assert_eq!(older.server.description.as_deref(), Some("Reads files"));
    let latest = registry.get("io.example/old", None).await.expect("latest");
    assert_eq!(latest.server.version, "2.0.0");
    let gone = registry
        .get("io.example/gone", None)
        .await
        .expect_err("deleted");
    assert!(
        matches!(&gone, RegistryError::Inactive { status, .. } if status == "deleted"),
        "{gone}"
    );
    let missing = registry
        .get("io.example/files", Some("3.0.0"))
        .await
        .expect_err("no such version");
    let text = missing.to_string();
    assert!(matches!(missing, RegistryError::NotFound { .. }), "{text}");
    assert!(text.contains("version 3.0.0"), "{text}");
    assert!(text.contains(&array.display().to_string()), "{text}");
    assert!(text.contains(&page.display().to_string()), "{text}");
}

#[tokio::test]
async fn a_file_that_is_not_json_names_its_path_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.json");
    std::fs::write(&path, "[\n  {\"name\": \"a\",\n   \"version\": }\n]\n").expect("write");
    let error = catalogs(vec![path.clone()])
        .search("", 10)
        .await
        .expect_err("broken");
    let RegistryError::AllFailed(failures) = &error else {
        panic!("expected AllFailed, got {error}");
    };
    let RegistryError::Catalog {
        path: reported,
        line,
        column,
        ..
    } = &failures[0]
    else {
        panic!("expected a catalog error, got {}", failures[0]);
    };
    assert_eq!(reported, &path);
    assert_eq!((*line, *column), (3, 15));
    let text = error.to_string();
    assert!(text.contains("broken.json line 3 column 15"), "{text}");
}

#[tokio::test]
async fn an_entry_of_the_wrong_shape_names_its_json_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bad = server("io.example/b", "1.0.0", "b");
    bad["packages"] =
        json!([{"registryType": "npm", "identifier": 7, "transport": {"type": "stdio"}}]);
    let array = write(
        dir.path(),
        "array.json",
        &json!([server("io.example/a", "1.0.0", "a"), bad]),
    );
    let error = catalogs(vec![array.clone()])
        .get("io.example/a", None)
        .await
        .expect_err("bad entry");
    let text = error.to_string();
    assert!(text.contains(&array.display().to_string()), "{text}");
    assert!(text.contains("at $[1].packages[0]"), "{text}");
    assert!(text.contains("invalid type: integer `7`"), "{text}");
    assert!(text.contains("line "), "{text}");

    let page = write(
        dir.path(),
        "page.json",
        &json!({"servers": [{"server": {"name": "no-version"}}]}),
    );
    let text = catalogs(vec![page])
        .search("", 10)
        .await
        .expect_err("bad page")
        .to_string();
    assert!(text.contains("at $.servers[0].server"), "{text}");
    assert!(text.contains("missing field `version`"), "{text}");

    let missing = dir.path().join("absent.json");
    let text = catalogs(vec![missing])
        .search("", 10)
        .await
        .expect_err("absent")
        .to_string();
    assert!(text.contains("cannot read catalog"), "{text}");
    assert!(text.contains("absent.json"), "{text}");
}

#[tokio::test]
async fn a_bad_catalog_is_skipped_when_another_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{").expect("write");
    let good = write(
        dir.path(),
        "good.json",
        &server("io.example/a", "1.0.0", "a"),
    );
    let found = catalogs(vec![broken, good])
        .search("", 10)
        .await
        .expect("the good file answers");
    assert_eq!(found.len(), 1);
}

#[tokio::test]
async fn no_sources_find_nothing() {
    let registry = catalogs(vec![]);
    assert!(registry.search("", 10).await.expect("empty").is_empty());
    let text = registry
        .get("io.example/a", None)
        .await
        .expect_err("none")
        .to_string();
    assert!(text.contains("none is configured"), "{text}");
}
