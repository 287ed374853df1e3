//! HTML to readable text, without a DOM: the `<title>`, and the text of the document with
//! markup stripped — `script`, `style`, `noscript`, `template`, `svg`, `math` and the like
//! dropped with their content, comments and doctypes dropped, block elements turned into
//! line breaks (headings marked with `#`, list items with `- `), `pre` kept as written,
//! character references decoded ([`super::entities`]), and runs of whitespace collapsed.

pub use super::entities::{decode_entities, windows_1252};

/// Elements whose content is raw text, skipped up to their end tag.
const RAW_SKIPPED: [&str; 7] = [
    "script", "style", "noscript", "iframe", "noembed", "noframes", "xmp",
];
/// Elements skipped with everything inside them (their content is markup).
const NESTED_SKIPPED: [&str; 6] = ["svg", "math", "template", "object", "canvas", "select"];
/// Elements that start and end a paragraph (a blank line around them).
const PARAGRAPHS: [&str; 17] = [
    "p",
    "ul",
    "ol",
    "dl",
    "table",
    "pre",
    "blockquote",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "figure",
    "form",
    "hr",
];
/// Elements that start and end a line.
const LINES: [&str; 14] = [
    "div",
    "li",
    "tr",
    "dt",
    "dd",
    "caption",
    "figcaption",
    "address",
    "details",
    "summary",
    "fieldset",
    "legend",
    "body",
    "option",
];

/// A page as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    pub title: Option<String>,
    pub text: String,
}

/// The title and readable text of `html`.
pub fn readable(html: &str) -> Readable {
    convert(html, true)
}

/// The text of an HTML fragment on one line (search snippets with `<strong>` and entities).
pub fn inline_text(html: &str) -> String {
    collapse(&convert(html, false).text)
}

/// The conversion, with heading and list marks or without.
fn convert(html: &str, marks: bool) -> Readable {
    let mut out = Output {
        marks,
        ..Output::default()
    };
    let mut title = None;
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.text(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            continue;
        }
        let Some(tag) = Tag::parse(rest) else {
            out.text("<");
            rest = &rest[1..];
            continue;
        };
        rest = &rest[tag.length..];
        let name = tag.name.as_str();
        if tag.closing {
            out.close(name);
        } else if name == "title" || RAW_SKIPPED.contains(&name) {
            let (content, after) = raw_text(rest, name);
            if name == "title" && title.is_none() {
                let text = collapse(&decode_entities(content));
                title = (!text.is_empty()).then_some(text);
            }
            rest = after;
        } else if NESTED_SKIPPED.contains(&name) && !tag.self_closing {
            rest = skip_nested(rest, name);
        } else {
            out.open(name);
        }
    }
    out.text(rest);
    Readable {
        title,
        text: out.finish(),
    }
}

/// Runs of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
    /// Bytes from `<` to after `>`.
    length: usize,
}

impl Tag {
    /// The tag at the start of `text` (which starts with `<`), `None` if it is not one.
    fn parse(text: &str) -> Option<Tag> {
        let bytes = text.as_bytes();
        let mut i = 1;
        let closing = bytes.get(1) == Some(&b'/');
        if closing {
            i += 1;
        }
        if !bytes.get(i)?.is_ascii_alphabetic() {
            return None;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
            i += 1;
        }
        let name = text[start..i].to_ascii_lowercase();
        // Attributes, with quoted values that may hold `>`.
        let mut quote = None;
        while i < bytes.len() {
            match (quote, bytes[i]) {
                (None, b'"' | b'\'') => quote = Some(bytes[i]),
                (Some(open), byte) if byte == open => quote = None,
                (None, b'>') => {
                    let self_closing = i > 0 && bytes[i - 1] == b'/';
                    return Some(Tag {
                        name,
                        closing,
                        self_closing,
                        length: i + 1,
                    });
                }
                _ => {}
            }
            i += 1;
        }
        // An unterminated tag swallows the rest of the document, as browsers do.
        Some(Tag {
            name,
            closing,
            self_closing: false,
            length: text.len(),
        })
    }
}

/// The raw text up to `</name` (any case) and what follows its end tag.
fn raw_text<'a>(text: &'a str, name: &str) -> (&'a str, &'a str) {
    let closing = format!("</{name}");
    let found = text.match_indices("</").map(|(at, _)| at).find(|&at| {
        text.as_bytes()
            .get(at..at + closing.len())
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(closing.as_bytes()))
    });
    match found {
        Some(at) => {
            let after = &text[at..];
            let end = after.find('>').map_or(after.len(), |end| end + 1);
            (&text[..at], &after[end..])
        }
        None => (text, ""),
    }
}

/// What follows the end tag matching an already opened `name`, counting nested ones.
fn skip_nested<'a>(mut text: &'a str, name: &str) -> &'a str {
    let mut depth = 1usize;
    while let Some(at) = text.find('<') {
        text = &text[at..];
        match Tag::parse(text) {
            Some(tag) => {
                if tag.name == name {
                    if tag.closing {
                        depth -= 1;
                    } else if !tag.self_closing {
                        depth += 1;
                    }
                }
                text = &text[tag.length..];
                if depth == 0 {
                    return text;
                }
            }
            None => text = &text[1..],
        }
    }
    ""
}

/// The text being written, whitespace collapsed as it goes.
#[derive(Default)]
struct Output {
    text: String,
    space: bool,
    pre: usize,
    /// Mark headings with `#` and list items with `- `.
    marks: bool,
}

impl Output {
    fn text(&mut self, raw: &str) {
        if raw.is_empty() {
            return;
        }
        let decoded = decode_entities(raw);
        if self.pre > 0 {
            self.text.push_str(&decoded.replace('\r', ""));
            self.space = false;
            return;
        }
        for c in decoded.chars() {
            if c.is_whitespace() {
                self.space = true;
            } else {
                if self.space && !self.text.is_empty() && !self.text.ends_with('\n') {
                    self.text.push(' ');
                }
                self.space = false;
                self.text.push(c);
            }
        }
    }

    /// Ends the current line, and leaves a blank line with `blank`.
    fn breaks(&mut self, blank: bool) {
        self.space = false;
        let trimmed = self.text.trim_end_matches([' ', '\t']).len();
        self.text.truncate(trimmed);
        if self.text.is_empty() {
            return;
        }
        let wanted = if blank { 2 } else { 1 };
        // Only the last `wanted` bytes matter: counting every trailing newline made a page of
        // many newlines (a long `<pre>`, `<br>`s) then many paragraphs quadratic.
        let present = self
            .text
            .bytes()
            .rev()
            .take(wanted)
            .take_while(|&b| b == b'\n')
            .count();
        for _ in present..wanted {
            self.text.push('\n');
        }
    }

    fn open(&mut self, name: &str) {
        match name {
            "br" => {
                let trimmed = self.text.trim_end_matches([' ', '\t']).len();
                self.text.truncate(trimmed);
                self.text.push('\n');
                self.space = false;
            }
            "li" => {
                self.breaks(false);
                if self.marks {
                    self.text.push_str("- ");
                }
            }
            "td" | "th" => self.space = true,
            "pre" => {
                self.breaks(true);
                self.pre += 1;
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.breaks(true);
                if self.marks {
                    let level = usize::from(name.as_bytes()[1] - b'0');
                    self.text.push_str(&"#".repeat(level));
                    self.text.push(' ');
                }
            }
            "img" | "input" => self.space = true,
            _ if PARAGRAPHS.contains(&name) => self.breaks(true),
            _ if LINES.contains(&name) => self.breaks(false),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.breaks(true);
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.breaks(true),
            "td" | "th" => self.space = true,
            _ if PARAGRAPHS.contains(&name) => self.breaks(true),
            _ if LINES.contains(&name) => self.breaks(false),
            _ => {}
        }
    }

    /// The text with trailing spaces removed from every line, at most one blank line in a
    /// row, and no blank lines at either end.
    fn finish(self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut blank_run = 0;
        for line in self.text.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                blank_run += 1;
                continue;
            }
            if !out.is_empty() {
                out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
            }
            blank_run = 0;
            out.push_str(line);
        }
        out
    }
}

#[cfg(test)]
mod tests;
