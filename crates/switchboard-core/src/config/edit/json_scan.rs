//! A JSONC scanner for editing: finds the byte spans of every value, object member and array
//! element (and of the comma after each), skipping `//` and `/* */` comments and accepting
//! trailing commas. It decodes only strings; the editor splices text at these spans.

use super::EditError;

/// A value and where it is: `text[start..end]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Span {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Object(Vec<Member>),
    Array(Vec<Element>),
    String(String),
    /// A number, `true`, `false` or `null`.
    Literal,
}

/// `"key": value` in an object.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub key_start: usize,
    pub value: Span,
    /// Where the comma after the value is, if one follows.
    pub comma: Option<usize>,
}

/// A value in an array.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Element {
    pub value: Span,
    pub comma: Option<usize>,
}

impl Span {
    /// The member `key` of an object.
    pub fn member(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(members) => members.iter().find(|m| m.key == key),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 128;

/// Scans a whole JSONC document; `None` for a text holding only blanks and comments.
pub(super) fn scan(text: &str) -> Result<Option<Span>, EditError> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    scanner.skip_space()?;
    if scanner.at == scanner.bytes.len() {
        return Ok(None);
    }
    let value = scanner.value()?;
    scanner.skip_space()?;
    if scanner.at < scanner.bytes.len() {
        return Err(scanner.error("unexpected text after the end of the JSON document"));
    }
    Ok(Some(value))
}

/// The offset just past the blanks and comments that start at `at`, or None when a comment is
/// not closed.
pub(super) fn skip_blanks(text: &str, mut at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    loop {
        match bytes.get(at) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => at += 1,
            Some(b'/') if bytes.get(at + 1) == Some(&b'/') => {
                at = text[at..].find('\n').map_or(text.len(), |n| at + n);
            }
            Some(b'/') if bytes.get(at + 1) == Some(&b'*') => {
                at = at + 2 + text[at + 2..].find("*/")? + 2;
            }
            _ => return Some(at),
        }
    }
}

struct Scanner<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    depth: usize,
}

impl Scanner<'_> {
    fn error(&self, message: &str) -> EditError {
        EditError::syntax_at(self.text, self.at, format!("JSON syntax error: {message}"))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) -> Result<(), EditError> {
        match skip_blanks(self.text, self.at) {
            Some(at) => {
                self.at = at;
                Ok(())
            }
            None => {
                // Point at the comment that is not closed.
                self.at = skip_blanks_until_comment(self.text, self.at);
                Err(self.error("unterminated /* comment"))
            }
        }
    }

    fn value(&mut self) -> Result<Span, EditError> {
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => self.nested(Self::object)?,
            Some(b'[') => self.nested(Self::array)?,
            Some(b'"') => Kind::String(self.string()?),
            Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => self.literal()?,
            Some(_) => return Err(self.error("expected a value")),
            None => return Err(self.error("unexpected end of file, expected a value")),
        };
        Ok(Span {
            start,
            end: self.at,
            kind,
        })
    }

    fn nested(
        &mut self,
        parse: fn(&mut Self) -> Result<Kind, EditError>,
    ) -> Result<Kind, EditError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let kind = parse(self);
        self.depth -= 1;
        kind
    }

    fn literal(&mut self) -> Result<Kind, EditError> {
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let word = &self.text[start..self.at];
        let valid = matches!(word, "true" | "false" | "null")
            || serde_json::from_str::<serde_json::Number>(word).is_ok();
        if valid {
            Ok(Kind::Literal)
        } else {
            self.at = start;
            Err(self.error("expected a value"))
        }
    }

    fn string(&mut self) -> Result<String, EditError> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                None | Some(b'\n') => {
                    self.at = start;
                    return Err(self.error("unterminated string"));
                }
                Some(b'"') => break,
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
            }
        }
        self.at += 1;
        let raw = self.text.get(start..self.at).unwrap_or_default();
        // Raw tabs and other control characters are accepted, as the config parser does.
        serde_json::from_str::<String>(raw)
            .or_else(|_| serde_json::from_str::<String>(&escape_controls(raw)))
            .map_err(|error| {
                self.at = start;
                self.error(&format!("invalid string: {error}"))
            })
    }

    /// After a value: the offset of a following comma (consumed), and checks what closes.
    fn separator(&mut self, close: u8) -> Result<Option<usize>, EditError> {
        self.skip_space()?;
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                Ok(Some(self.at - 1))
            }
            Some(byte) if byte == close => Ok(None),
            _ => Err(self.error(&format!("expected ',' or '{}'", close as char))),
        }
    }

    fn array(&mut self) -> Result<Kind, EditError> {
        self.at += 1;
        let mut elements = Vec::new();
        loop {
            self.skip_space()?;
            if self.peek() == Some(b']') {
                self.at += 1;
                return Ok(Kind::Array(elements));
            }
            let value = self.value()?;
            let comma = self.separator(b']')?;
            elements.push(Element { value, comma });
        }
    }

    fn object(&mut self) -> Result<Kind, EditError> {
        self.at += 1;
        let mut members: Vec<Member> = Vec::new();
        loop {
            self.skip_space()?;
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Kind::Object(members));
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a \"key\" or '}'")),
            }
            let key_start = self.at;
            let key = self.string()?;
            if members.iter().any(|m| m.key == key) {
                self.at = key_start;
                return Err(self.error(&format!("duplicate key \"{key}\"")));
            }
            self.skip_space()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after the key"));
            }
            self.at += 1;
            self.skip_space()?;
            let value = self.value()?;
            let comma = self.separator(b'}')?;
            members.push(Member {
                key,
                key_start,
                value,
                comma,
            });
        }
    }
}

/// The start of the first comment from `at` on that is not closed (for the error's place).
fn skip_blanks_until_comment(text: &str, from: usize) -> usize {
    let mut at = from;
    let bytes = text.as_bytes();
    loop {
        match bytes.get(at) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => at += 1,
            Some(b'/') if bytes.get(at + 1) == Some(&b'/') => {
                at = text[at..].find('\n').map_or(text.len(), |n| at + n);
            }
            Some(b'/') if bytes.get(at + 1) == Some(&b'*') => match text[at + 2..].find("*/") {
                Some(n) => at = at + 2 + n + 2,
                None => return at,
            },
            _ => return at,
        }
    }
}

/// `raw` with control characters written as `\u00XX` escapes.
fn escape_controls(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_control() && (c as u32) < 0x20 {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}
