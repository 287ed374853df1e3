//! File paths and URLs in a task, rewritten into the words they stand for.
//!
//! A task that names `/root/markdown/report.md` asks for a *file* (read or written) of type
//! *md* called *report*; its directories (`root`, `markdown`) are where it lives, not what the
//! task needs, and they match tools by accident. A URL names a *web page* on a site. So a path
//! becomes `file path <name words> <extension>` (tools that take a file name a `path`) and a
//! URL `url <host words>`; everything else of the text is kept as it is. Only whole
//! whitespace-separated words are rewritten.
//!
//! A path can also be where the task's result goes: "save it **to** /root/x.md", or "generate
//! a report **in** /root/x.md" — a clause (up to `.` `,` `;` `!` `?`) with a verb of producing
//! (save, write, generate, create, draft, export, store, output, produce) and the path right
//! after `in`/`at`/`as`/`on`, or any path right after `to`/`into`. Such a task needs a tool
//! that *writes* a file as one of its steps, whatever else it does, so the rewrite says
//! `write file path …`. A path the task only names ("summarize the notes in /root/x.md") stays
//! a plain `file path`.

/// `text` with every file path and URL replaced by the words it stands for.
pub fn rewrite_locations(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = String::with_capacity(text.len());
    let mut clause_start = 0;
    while clause_start < words.len() {
        let clause_end = words[clause_start..]
            .iter()
            .position(|word| ends_clause(word))
            .map_or(words.len(), |offset| clause_start + offset + 1);
        let clause = &words[clause_start..clause_end];
        let produces = clause.iter().any(|word| is_output_verb(word));
        for (index, word) in clause.iter().enumerate() {
            if !out.is_empty() {
                out.push(' ');
            }
            match locate(word) {
                Some(Location::Url(host)) => {
                    out.push_str("url ");
                    out.push_str(host);
                }
                Some(Location::File { name, extension }) => {
                    let before = index.checked_sub(1).map(|i| clause[i].to_lowercase());
                    let output = match before.as_deref() {
                        Some("to" | "into") => true,
                        Some("in" | "at" | "as" | "on") => produces,
                        _ => false,
                    };
                    if output {
                        out.push_str("write ");
                    }
                    out.push_str("file path ");
                    out.push_str(name);
                    if let Some(extension) = extension {
                        out.push(' ');
                        out.push_str(extension);
                    }
                }
                None => {
                    out.push_str(word);
                    continue;
                }
            }
            // The clause ends where it did, for the clause split that comes later.
            if ends_clause(word) {
                out.extend(word.chars().last());
            }
        }
        clause_start = clause_end;
    }
    out
}

/// Whether a word closes a clause (a path's own dots are inside the word, not at its end,
/// unless it ends the sentence).
fn ends_clause(word: &str) -> bool {
    word.ends_with(['.', ',', ';', '!', '?', '。', '，', '；'])
}

/// Words that make a task produce something: a path they lead to is written, not read.
fn is_output_verb(word: &str) -> bool {
    const OUTPUT_VERBS: &[&str] = &[
        "save",
        "saved",
        "saving",
        "write",
        "writes",
        "written",
        "writing",
        "generate",
        "generated",
        "create",
        "created",
        "draft",
        "export",
        "exported",
        "store",
        "stored",
        "output",
        "produce",
        "produced",
    ];
    let word = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    OUTPUT_VERBS.contains(&word.as_str())
}

#[derive(Debug, PartialEq)]
enum Location<'a> {
    Url(&'a str),
    File {
        name: &'a str,
        extension: Option<&'a str>,
    },
}

/// What a word names, if it is a URL or a file path. Trailing sentence punctuation is ignored.
fn locate(word: &str) -> Option<Location<'_>> {
    let word = word
        .trim_start_matches(['(', '"', '\'', '`', '‘', '“'])
        .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'', '`', '’', '”']);
    if let Some((_, rest)) = word.split_once("://") {
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        return Some(Location::Url(host.trim_start_matches("www.")));
    }
    let rooted = word.starts_with('/') || word.starts_with("~/") || word.starts_with("./");
    if !rooted || word.len() < 2 {
        return None;
    }
    let file = word.rsplit('/').next().unwrap_or_default();
    if file.is_empty() {
        // A directory: the task works with files in it.
        return Some(Location::File {
            name: "",
            extension: None,
        });
    }
    match file.rsplit_once('.') {
        Some((name, extension))
            if !name.is_empty()
                && !extension.is_empty()
                && extension.chars().all(char::is_alphanumeric) =>
        {
            Some(Location::File {
                name,
                extension: Some(extension),
            })
        }
        _ => Some(Location::File {
            name: file,
            extension: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_file_name_and_extension() {
        assert_eq!(
            rewrite_locations("keep /root/markdown/bitcoin_report.md."),
            "keep file path bitcoin_report md."
        );
        assert_eq!(
            rewrite_locations("files under ~/data/ please"),
            "files under file path  please"
        );
        assert_eq!(rewrite_locations("read ./notes"), "read file path notes");
    }

    #[test]
    fn a_path_the_task_produces_is_written() {
        assert_eq!(
            rewrite_locations("Make a chart, then save it in /root/figs/sales.png."),
            "Make a chart, then save it in write file path sales png."
        );
        assert_eq!(
            rewrite_locations("Convert /root/a.bib into /root/word/list.docx"),
            "Convert file path a bib into write file path list docx"
        );
        // The verb must be in the path's own clause.
        assert_eq!(
            rewrite_locations("Read the data in /root/x.csv, then generate a chart"),
            "Read the data in file path x csv, then generate a chart"
        );
    }

    #[test]
    fn urls_become_their_host() {
        assert_eq!(
            rewrite_locations("see https://www.youtube.com/watch?v=abc now"),
            "see url youtube.com now"
        );
    }

    #[test]
    fn other_words_and_fractions_stay() {
        assert_eq!(
            rewrite_locations("and/or 1/2 cup, the C++ way"),
            "and/or 1/2 cup, the C++ way"
        );
        assert_eq!(rewrite_locations(""), "");
        assert_eq!(rewrite_locations("/"), "/");
    }
}
