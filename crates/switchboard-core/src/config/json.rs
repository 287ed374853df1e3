//! The one JSONC reader: what editors write in MCP client configs, `//` and `/* */` comments
//! and trailing commas included. [`scan`] finds every value's byte span (and each member's
//! key and the comma after it), which the format-preserving editor splices at; [`parse`] turns
//! the same spans into the validator's [`Node`] tree of lines and columns. Both therefore
//! accept the same texts and report the same errors at the same places.

use super::tree::{Node, Pos, Value};

type ParseError = (usize, usize, String);

/// Parses JSON (with comments and trailing commas) into the validator's tree.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let located = |error: SyntaxError| {
        let pos = Pos::at(text, error.at);
        (pos.line, pos.column, error.message)
    };
    let span = scan(text).map_err(located)?.ok_or_else(|| {
        located(SyntaxError::new(
            text.len(),
            "unexpected end of file, expected a value",
        ))
    })?;
    Ok(node(text, span))
}

fn node(text: &str, span: Span) -> Node {
    let value = match span.kind {
        Kind::Null => Value::Null,
        Kind::Bool(value) => Value::Bool(value),
        Kind::Integer(value) => Value::Integer(value),
        Kind::Float(value) => Value::Float(value),
        Kind::String(value) => Value::String(value),
        Kind::Array(elements) => Value::Array(
            elements
                .into_iter()
                .map(|element| node(text, element.value))
                .collect(),
        ),
        Kind::Object(members) => Value::Table(
            members
                .into_iter()
                .map(|m| (m.key, Pos::at(text, m.key_start), node(text, m.value)))
                .collect(),
        ),
    };
    Node {
        pos: Pos::at(text, span.start),
        value,
    }
}

/// A value and where it is: `text[start..end]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Array(Vec<Element>),
    Object(Vec<Member>),
}

/// `"key": value` in an object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub key_start: usize,
    pub value: Span,
    /// Where the comma after the value is, if one follows.
    pub comma: Option<usize>,
}

/// A value in an array.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Element {
    pub value: Span,
    pub comma: Option<usize>,
}

/// Where a text stops being JSONC (a byte offset) and why; the message starts with
/// `JSON syntax error: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub at: usize,
    pub message: String,
}

impl SyntaxError {
    fn new(at: usize, message: &str) -> Self {
        Self {
            at,
            message: format!("JSON syntax error: {message}"),
        }
    }
}

/// Scans a whole JSONC document; `None` for a text holding only blanks and comments.
pub(crate) fn scan(text: &str) -> Result<Option<Span>, SyntaxError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        // A byte order mark, as some Windows editors write UTF-8, is no value.
        at: if text.starts_with('\u{feff}') { 3 } else { 0 },
        depth: 0,
    };
    parser.skip_space()?;
    if parser.at == parser.bytes.len() {
        return Ok(None);
    }
    let value = parser.value()?;
    parser.skip_space()?;
    if parser.at < parser.bytes.len() {
        return Err(parser.error("unexpected text after the end of the JSON document"));
    }
    Ok(Some(value))
}

const MAX_DEPTH: usize = 128;

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError::new(self.at, message)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Past blanks and comments; an unclosed `/*` is an error at its start.
    fn skip_space(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                    let rest = &self.bytes[self.at..];
                    self.at += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                    let body = &self.bytes[self.at + 2..];
                    let Some(n) = body.windows(2).position(|pair| pair == b"*/") else {
                        return Err(self.error("unterminated /* comment"));
                    };
                    self.at += 2 + n + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Span, SyntaxError> {
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => self.nested(Self::object)?,
            Some(b'[') => self.nested(Self::array)?,
            Some(b'"') => Kind::String(self.string()?),
            Some(b't') => self.keyword("true", Kind::Bool(true))?,
            Some(b'f') => self.keyword("false", Kind::Bool(false))?,
            Some(b'n') => self.keyword("null", Kind::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
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
        parse: fn(&mut Self) -> Result<Kind, SyntaxError>,
    ) -> Result<Kind, SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let kind = parse(self);
        self.depth -= 1;
        kind
    }

    fn keyword(&mut self, word: &str, kind: Kind) -> Result<Kind, SyntaxError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(kind)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let literal = &self.text[start..self.at];
        if let Ok(integer) = literal.parse::<i64>() {
            return Ok(Kind::Integer(integer));
        }
        literal.parse::<f64>().map(Kind::Float).map_err(|_| {
            self.at = start;
            self.error(&format!("'{literal}' is not a number"))
        })
    }

    /// A string (at its opening quote), decoded. Raw tabs and other control characters are
    /// accepted; a line break is not.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.at;
        self.at += 1;
        let mut out = String::new();
        loop {
            // Only ASCII bytes end a run, so it is whole characters.
            let rest = self.text.get(self.at..).unwrap_or_default();
            let run = rest.find(['"', '\\', '\n']).unwrap_or(rest.len());
            out.push_str(&rest[..run]);
            self.at += run;
            match self.peek() {
                None => {
                    self.at = start;
                    return Err(self.error("unterminated string"));
                }
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\n') => return Err(self.error("line break inside a string")),
                Some(_) => {
                    let (decoded, used) = decode_escape(&rest[run..])
                        .ok_or_else(|| self.error("invalid escape sequence"))?;
                    out.push(decoded);
                    self.at += used;
                }
            }
        }
    }

    /// After a value: the offset of a following comma (consumed), or None before `close`.
    fn separator(&mut self, close: u8) -> Result<Option<usize>, SyntaxError> {
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

    fn array(&mut self) -> Result<Kind, SyntaxError> {
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

    fn object(&mut self) -> Result<Kind, SyntaxError> {
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
                return Err(SyntaxError::new(
                    key_start,
                    &format!("duplicate key \"{key}\""),
                ));
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

/// Decodes the escape that starts `rest` (with its backslash): the character and the bytes
/// it took.
fn decode_escape(rest: &str) -> Option<(char, usize)> {
    let simple = match rest.as_bytes().get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return decode_unicode(rest),
        _ => return None,
    };
    Some((simple, 2))
}

/// `\uXXXX`, or a surrogate pair `\uXXXX\uXXXX`, at the start of `rest`.
fn decode_unicode(rest: &str) -> Option<(char, usize)> {
    let high = u32::from_str_radix(rest.get(2..6)?, 16).ok()?;
    if (0xD800..0xDC00).contains(&high) {
        let low = rest
            .get(6..12)
            .and_then(|s| s.strip_prefix("\\u"))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())?;
        let code = 0x10000 + ((high - 0xD800) << 10) + (low.checked_sub(0xDC00)?);
        return Some((char::from_u32(code)?, 12));
    }
    Some((char::from_u32(high)?, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_trailing_commas_and_positions() {
        let text =
            "{\n  // servers\n  \"a\": [1, 2,],\n  /* x */ \"b\": {\"c\": \"\\u00e9\\n\"},\n}";
        let root = parse(text).expect("parses");
        let a = root.get("a").expect("a");
        assert_eq!((a.pos.line, a.pos.column), (3, 8));
        assert_eq!(
            root.get("b")
                .and_then(|b| b.get("c"))
                .map(|c| c.value.clone()),
            Some(Value::String("é\n".into()))
        );
    }

    #[test]
    fn errors_have_positions() {
        assert_eq!(parse("{\n  \"a\": tru\n}").expect_err("bad").0, 2);
        let (line, column, message) = parse("{\"a\": 1 \"b\": 2}").expect_err("missing comma");
        assert_eq!((line, column), (1, 9));
        assert!(message.contains("expected ','"), "{message}");
        assert!(
            parse("{\"a\": 1, \"a\": 2}")
                .expect_err("dup")
                .2
                .contains("duplicate")
        );
        assert!(parse(&"[".repeat(500)).is_err());
        // An escape close before a character of several bytes.
        let wide = parse("\"\\nabcdefghi\u{e9}\"").map(|node| node.value);
        assert_eq!(wide, Ok(Value::String("\nabcdefghi\u{e9}".into())));
    }
}
