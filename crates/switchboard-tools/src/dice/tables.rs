//! Random tables: weighted lists of results, one file per table in the tables directory.
//! The table's name is the file name without its extension.
//!
//! TOML (`weather.toml`):
//!
//! ```toml
//! description = "Weather on the road"
//!
//! [[entries]]
//! weight = 3          # optional, default 1
//! result = "Clear skies"
//!
//! [[entries]]
//! result = "Thunderstorm"
//! ```
//!
//! CSV (`loot.csv`): one entry per line, `weight,result`; a first line `weight,result` is a
//! header; lines starting with `#` are comments. Results may be quoted to contain commas.
//!
//! Weights are whole numbers from 1 to 1,000,000; a table has at most 10,000 entries.

use std::path::{Path, PathBuf};

use rand::Rng;
use serde::{Deserialize, Serialize};

const MAX_ENTRIES: usize = 10_000;
const MAX_WEIGHT: u64 = 1_000_000;
const MAX_FILE_BYTES: u64 = 4 << 20;

/// One table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub name: String,
    pub description: Option<String>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(default = "one")]
    pub weight: u64,
    pub result: String,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTable {
    #[serde(default)]
    description: Option<String>,
    entries: Vec<Entry>,
}

/// A table name is a plain file stem: no path separators, no leading dot.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
}

/// The tables in `dir`, sorted by name; files that do not parse are reported as errors.
pub fn list(dir: &Path) -> Result<Vec<Result<Table, String>>, String> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        format!(
            "cannot read the tables directory {}: {error}",
            dir.display()
        )
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("toml" | "csv")
            )
        })
        .collect();
    paths.sort();
    Ok(paths.iter().map(|path| load_file(path)).collect())
}

/// The table `name` in `dir`.
pub fn load(dir: &Path, name: &str) -> Result<Table, String> {
    if !valid_name(name) {
        return Err(format!(
            "'{name}' is not a table name (letters, digits, _ - . and spaces)"
        ));
    }
    for extension in ["toml", "csv"] {
        let path = dir.join(format!("{name}.{extension}"));
        if path.is_file() {
            return load_file(&path);
        }
    }
    Err(format!(
        "no table '{name}' in {} (list_tables shows the tables)",
        dir.display()
    ))
}

fn load_file(path: &Path) -> Result<Table, String> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let (description, entries) = match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => (
            None,
            parse_csv(&text).map_err(|e| format!("{}:{e}", path.display()))?,
        ),
        _ => {
            let table: TomlTable = toml::from_str(&text).map_err(|error| {
                let line = error
                    .span()
                    .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
                match line {
                    Some(line) => format!("{}:{line}: {}", path.display(), error.message()),
                    None => format!("{}: {}", path.display(), error.message()),
                }
            })?;
            (table.description, table.entries)
        }
    };
    check(&entries).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Table {
        name,
        description,
        entries,
    })
}

fn parse_csv(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (weight, result) = line
            .split_once(',')
            .ok_or_else(|| format!("{line_no}: expected weight,result"))?;
        if index == 0 && weight.trim().eq_ignore_ascii_case("weight") {
            continue;
        }
        let weight: u64 = weight.trim().parse().map_err(|_| {
            format!(
                "{line_no}: the weight '{}' is not a whole number",
                weight.trim()
            )
        })?;
        let result = result.trim();
        let result = result
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .map_or_else(|| result.to_owned(), |r| r.replace("\"\"", "\""));
        entries.push(Entry { weight, result });
    }
    Ok(entries)
}

fn check(entries: &[Entry]) -> Result<(), String> {
    if entries.is_empty() {
        return Err("the table has no entries".to_owned());
    }
    if entries.len() > MAX_ENTRIES {
        return Err(format!("more than {MAX_ENTRIES} entries"));
    }
    if let Some(bad) = entries
        .iter()
        .find(|e| e.weight == 0 || e.weight > MAX_WEIGHT)
    {
        return Err(format!(
            "entry '{}' has weight {} (use 1 to {MAX_WEIGHT})",
            bad.result, bad.weight
        ));
    }
    Ok(())
}

impl Table {
    /// One weighted draw.
    pub fn draw<R: Rng>(&self, rng: &mut R) -> &Entry {
        let total: u64 = self.entries.iter().map(|e| e.weight).sum();
        let mut pick = rng.random_range(0..total.max(1));
        for entry in &self.entries {
            if pick < entry.weight {
                return entry;
            }
            pick -= entry.weight;
        }
        &self.entries[self.entries.len() - 1]
    }
}
