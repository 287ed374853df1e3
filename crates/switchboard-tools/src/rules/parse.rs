//! Turning a rules file into rules (sections).
//!
//! - **Front matter** (Markdown and text): a block at the very top between two `---` lines
//!   of `key: value` lines. Only `system`, `title`, `attribution` and `license` are read; other
//!   keys are ignored.
//! - **Markdown** (`.md`, `.markdown`): every ATX heading (`#` … `######`, outside fenced
//!   code) starts a rule holding the text up to the next heading of any level. The rule's
//!   fragment is the slugs of its heading path joined with `/` (`actions/attack`); a path seen
//!   before in the file gets `-2`, `-3`… on its last slug. Text before the first heading is a
//!   rule without a fragment. Sections with no text of their own (a heading directly followed
//!   by a sub-heading) are not rules. Setext headings are plain text.
//! - **Text** (`.txt`): one rule per file, or, when the file has ALL-CAPS lines standing
//!   alone between blank lines (`COMBAT`), one rule per such heading.
//! - **JSON** (`.json`): an array of record objects, or an object holding one (under
//!   `rules`, `records`, `entries`, `items`, `results` or `data`, else its only array of
//!   objects; the object's own `system`, `attribution` and `license` strings apply to the
//!   file). Each record needs a `name` or `title`; its fragment is its `id`, `index` or
//!   `slug` (else the slug of its name); its text is [`super::records::render_record`] of the rest.

use std::collections::{HashMap, HashSet};

/// What a file is, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Markdown,
    Text,
    Json,
}

impl Kind {
    pub fn of(path: &std::path::Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "md" | "markdown" => Some(Self::Markdown),
            "txt" => Some(Self::Text),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// One rule of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The part of the id after `#` (`None`: the file's preamble or whole text).
    pub fragment: Option<String>,
    pub title: String,
    /// Heading titles from the top of the file down to this rule.
    pub headings: Vec<String>,
    pub body: String,
}

/// A parsed file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The system the file names for itself (front matter or the JSON object's key).
    pub system: Option<String>,
    /// `(license, attribution text)` the file declares.
    pub attribution: Option<(Option<String>, String)>,
    pub sections: Vec<Section>,
    /// Records skipped, with the reason (the rest of the file is indexed).
    pub warnings: Vec<String>,
}

/// A slug: lowercase letters and digits, other runs become one `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "section".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// A system name fit for an id: no `/`, `#` or surrounding blanks.
pub fn clean_system(text: &str) -> Option<String> {
    let cleaned: String = text
        .trim()
        .chars()
        .map(|c| if matches!(c, '/' | '#') { '-' } else { c })
        .collect();
    (!cleaned.is_empty()).then_some(cleaned)
}

/// Parses `text` (the file's contents) as `kind`; `stem` names whole-file rules.
pub fn parse(kind: Kind, text: &str, stem: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match kind {
        Kind::Json => super::records::json_records(text),
        Kind::Markdown | Kind::Text => {
            let (front, rest) = front_matter(text);
            let mut parsed = Parsed {
                system: front.get("system").and_then(|s| clean_system(s)),
                attribution: front
                    .get("attribution")
                    .map(|a| (front.get("license").cloned(), a.clone())),
                ..Parsed::default()
            };
            let title = front
                .get("title")
                .cloned()
                .unwrap_or_else(|| stem.to_owned());
            parsed.sections = if kind == Kind::Markdown {
                markdown(rest, &title)
            } else {
                plain_text(rest, &title)
            };
            Ok(parsed)
        }
    }
}

/// The front matter's keys and the text after it.
fn front_matter(text: &str) -> (HashMap<String, String>, &str) {
    let mut keys = HashMap::new();
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return (keys, text);
    }
    let mut consumed = text.find('\n').map_or(text.len(), |i| i + 1);
    for line in lines {
        consumed += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return (keys, &text[consumed..]);
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            if !value.is_empty() {
                keys.insert(key.trim().to_ascii_lowercase(), value.to_owned());
            }
        }
    }
    (HashMap::new(), text) // no closing line: not front matter
}

/// Level and text of an ATX heading line.
fn atx_heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let mut title = after.trim();
    let closed = title.trim_end_matches('#');
    if closed.is_empty() || closed.ends_with([' ', '\t']) {
        title = closed.trim_end();
    }
    Some((level, title.to_owned()))
}

/// Gives each fragment a number when its path was seen before in the file.
#[derive(Default)]
pub struct Fragments(HashSet<String>);

impl Fragments {
    /// `slug`, or `slug-2`, `slug-3`… when `parent/slug` is taken (by an earlier heading,
    /// numbered or not).
    pub fn unique(&mut self, parent: &str, slug: String) -> String {
        let join = |s: &str| {
            if parent.is_empty() {
                s.to_owned()
            } else {
                format!("{parent}/{s}")
            }
        };
        let (mut candidate, mut n) = (slug.clone(), 1);
        while self.0.contains(&join(&candidate)) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        self.0.insert(join(&candidate));
        candidate
    }
}

fn trimmed_block(lines: &[&str]) -> String {
    lines
        .join("\n")
        .trim_matches(|c| c == '\n' || c == '\r')
        .trim_end()
        .to_owned()
}

fn markdown(text: &str, file_title: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    // (level, title, deduplicated slug)
    let mut stack: Vec<(usize, String, String)> = Vec::new();
    let mut fragments = Fragments::default();
    let mut body: Vec<&str> = Vec::new();
    let mut fence: Option<String> = None;
    let flush =
        |stack: &[(usize, String, String)], body: &mut Vec<&str>, out: &mut Vec<Section>| {
            let text = trimmed_block(body);
            body.clear();
            if text.trim().is_empty() {
                return;
            }
            let section = match stack.last() {
                None => Section {
                    fragment: None,
                    title: file_title.to_owned(),
                    headings: Vec::new(),
                    body: text,
                },
                Some((_, title, _)) => Section {
                    fragment: Some(
                        stack
                            .iter()
                            .map(|s| s.2.as_str())
                            .collect::<Vec<_>>()
                            .join("/"),
                    ),
                    title: title.clone(),
                    headings: stack.iter().map(|s| s.1.clone()).collect(),
                    body: text,
                },
            };
            out.push(section);
        };
    for line in text.lines() {
        let start = line.trim_start();
        if let Some(open) = &fence {
            if start.starts_with(open.as_str()) {
                fence = None;
            }
            body.push(line);
            continue;
        }
        if start.starts_with("```") || start.starts_with("~~~") {
            fence = Some(start[..3].to_owned());
            body.push(line);
            continue;
        }
        let Some((level, title)) = atx_heading(line) else {
            body.push(line);
            continue;
        };
        flush(&stack, &mut body, &mut sections);
        while stack.last().is_some_and(|(l, _, _)| *l >= level) {
            stack.pop();
        }
        let parent = stack
            .iter()
            .map(|s| s.2.as_str())
            .collect::<Vec<_>>()
            .join("/");
        let unique = fragments.unique(&parent, slug(&title));
        let title = if title.is_empty() {
            "(untitled)".to_owned()
        } else {
            title
        };
        stack.push((level, title, unique));
    }
    flush(&stack, &mut body, &mut sections);
    sections
}

/// A line that is a heading of a text file: letters, none lowercase, at most 80 characters.
fn caps_heading(line: &str) -> bool {
    let line = line.trim();
    line.len() <= 80
        && line.chars().any(char::is_alphabetic)
        && !line.chars().any(char::is_lowercase)
}

fn plain_text(text: &str, file_title: &str) -> Vec<Section> {
    let lines: Vec<&str> = text.lines().collect();
    let is_heading = |i: usize| {
        caps_heading(lines[i])
            && (i == 0 || lines[i - 1].trim().is_empty())
            && lines.get(i + 1).is_none_or(|next| next.trim().is_empty())
    };
    let headings: Vec<usize> = (0..lines.len()).filter(|&i| is_heading(i)).collect();
    let mut sections = Vec::new();
    let whole = |body: &[&str], title: &str, fragment: Option<String>| {
        let body = trimmed_block(body);
        (!body.trim().is_empty()).then(|| Section {
            headings: if fragment.is_some() {
                vec![title.to_owned()]
            } else {
                Vec::new()
            },
            fragment,
            title: title.to_owned(),
            body,
        })
    };
    let first = headings.first().copied().unwrap_or(lines.len());
    sections.extend(whole(&lines[..first], file_title, None));
    let mut fragments = Fragments::default();
    for (n, &at) in headings.iter().enumerate() {
        let end = headings.get(n + 1).copied().unwrap_or(lines.len());
        let title = lines[at].trim();
        let fragment = fragments.unique("", slug(title));
        sections.extend(whole(&lines[at + 1..end], title, Some(fragment)));
    }
    sections
}
