//! JSON text → [`Node`] tree, keeping positions. Accepts what editors write in MCP client
//! configs: `//` and `/* */` comments and trailing commas (JSONC).

use super::tree::{Node, Pos, Value};

type ParseError = (usize, usize, String);

/// Parses JSON (with comments and trailing commas).
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    parser.skip_space()?;
    let node = parser.value()?;
    parser.skip_space()?;
    if parser.at < parser.bytes.len() {
        return Err(parser.error("unexpected text after the end of the JSON document"));
    }
    Ok(node)
}

const MAX_DEPTH: usize = 128;

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn pos(&self) -> Pos {
        Pos::at(self.text, self.at)
    }

    fn error(&self, message: &str) -> ParseError {
        let pos = self.pos();
        (
            pos.line,
            pos.column,
            format!("JSON syntax error: {message}"),
        )
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                    while let Some(byte) = self.peek() {
                        if byte == b'\n' {
                            break;
                        }
                        self.at += 1;
                    }
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                    let start = self.at;
                    self.at += 2;
                    loop {
                        match self.peek() {
                            None => {
                                self.at = start;
                                return Err(self.error("unterminated /* comment"));
                            }
                            Some(b'*') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                                self.at += 2;
                                break;
                            }
                            Some(_) => self.at += 1,
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        let value = match self.peek() {
            Some(b'{') => self.nested(Self::object)?,
            Some(b'[') => self.nested(Self::array)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b't') => self.keyword("true", Value::Bool(true))?,
            Some(b'f') => self.keyword("false", Value::Bool(false))?,
            Some(b'n') => self.keyword("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a value")),
            None => return Err(self.error("unexpected end of file, expected a value")),
        };
        Ok(Node { pos, value })
    }

    fn nested(
        &mut self,
        parse: fn(&mut Self) -> Result<Value, ParseError>,
    ) -> Result<Value, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let value = parse(self);
        self.depth -= 1;
        value
    }

    fn keyword(&mut self, word: &str, value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let literal = &self.text[start..self.at];
        if let Ok(integer) = literal.parse::<i64>() {
            return Ok(Value::Integer(integer));
        }
        literal.parse::<f64>().map(Value::Float).map_err(|_| {
            self.at = start;
            self.error(&format!("'{literal}' is not a number"))
        })
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.at;
        self.at += 1;
        let mut out = String::new();
        loop {
            let Some(byte) = self.peek() else {
                self.at = start;
                return Err(self.error("unterminated string"));
            };
            match byte {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let escape_start = self.at;
                    let end = (self.at + 12).min(self.text.len());
                    let window = self.text.get(escape_start..end).unwrap_or("");
                    let (decoded, used) = decode_escape(window)
                        .ok_or_else(|| self.error("invalid escape sequence"))?;
                    out.push_str(&decoded);
                    self.at += used;
                }
                b'\n' => return Err(self.error("line break inside a string")),
                _ => {
                    let rest = &self.text[self.at..];
                    let Some(ch) = rest.chars().next() else {
                        return Err(self.error("invalid text"));
                    };
                    out.push(ch);
                    self.at += ch.len_utf8();
                }
            }
        }
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space()?;
            if self.peek() == Some(b']') {
                self.at += 1;
                return Ok(Value::Array(items));
            }
            items.push(self.value()?);
            self.skip_space()?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {}
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.at += 1;
        let mut entries: Vec<(String, Pos, Node)> = Vec::new();
        loop {
            self.skip_space()?;
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Table(entries));
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a \"key\" or '}'")),
            }
            let key_pos = self.pos();
            let key = self.string()?;
            if entries.iter().any(|(existing, _, _)| existing == &key) {
                return Err((
                    key_pos.line,
                    key_pos.column,
                    format!("JSON syntax error: duplicate key \"{key}\""),
                ));
            }
            self.skip_space()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after the key"));
            }
            self.at += 1;
            self.skip_space()?;
            let value = self.value()?;
            entries.push((key, key_pos, value));
            self.skip_space()?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }
}

/// Decodes one escape at the start of `window` (which starts with a backslash).
fn decode_escape(window: &str) -> Option<(String, usize)> {
    let mut chars = window.chars();
    chars.next();
    let kind = chars.next()?;
    let simple = match kind {
        '"' => Some('"'),
        '\\' => Some('\\'),
        '/' => Some('/'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        _ => None,
    };
    if let Some(ch) = simple {
        return Some((ch.to_string(), 2));
    }
    if kind != 'u' {
        return None;
    }
    let high = u32::from_str_radix(window.get(2..6)?, 16).ok()?;
    if (0xD800..0xDC00).contains(&high) {
        let low = window
            .get(6..12)
            .filter(|s| s.starts_with("\\u"))
            .and_then(|s| u32::from_str_radix(&s[2..], 16).ok())?;
        let code = 0x10000 + ((high - 0xD800) << 10) + (low.checked_sub(0xDC00)?);
        return Some((char::from_u32(code)?.to_string(), 12));
    }
    Some((char::from_u32(high)?.to_string(), 6))
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
    }
}
