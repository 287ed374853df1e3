//! File paths and URLs in a task, rewritten into the words they stand for.
//!
//! A task that names `/root/markdown/report.md` asks for a *file* (read or written) of type
//! *md* called *report*; its directories (`root`, `markdown`) are where it lives, not what the
//! task needs, and they match tools by accident. A URL names a *web page* on a site. So a path
//! becomes `file path <name words> <extension>` (tools that take a file name a `path`) and a
//! URL `url <host words>`; everything else of
//! the text is kept as it is. Only whole whitespace-separated words are rewritten.

/// `text` with every file path and URL replaced by the words it stands for.
pub fn rewrite_locations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, word) in text.split_whitespace().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        match locate(word) {
            Some(Location::Url(host)) => {
                out.push_str("url ");
                out.push_str(host);
            }
            Some(Location::File { name, extension }) => {
                out.push_str("file path ");
                out.push_str(name);
                if let Some(extension) = extension {
                    out.push(' ');
                    out.push_str(extension);
                }
            }
            None => out.push_str(word),
        }
    }
    out
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
            rewrite_locations("save it to /root/markdown/bitcoin_report.md."),
            "save it to file path bitcoin_report md"
        );
        assert_eq!(
            rewrite_locations("files under ~/data/ please"),
            "files under file path  please"
        );
        assert_eq!(rewrite_locations("read ./notes"), "read file path notes");
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
