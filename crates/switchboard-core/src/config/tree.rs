//! A format-neutral tree of config values, each remembering where it was written.

/// Where a node starts: 1-based line and column (in characters), and the byte offset in the
/// source text (which lets a problem inside a string point at the exact character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

impl Pos {
    /// The position of byte `offset` in `text`.
    pub fn at(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Self {
            line,
            column,
            offset,
        }
    }
}

/// A value and its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Array(Vec<Node>),
    /// Keys keep their own positions and their order.
    Table(Vec<(String, Pos, Node)>),
}

impl Value {
    /// What a user would call this kind of value.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Integer(_) => "an integer",
            Self::Float(_) => "a number",
            Self::String(_) => "a string",
            Self::Array(_) => "an array",
            Self::Table(_) => "a table",
        }
    }

    /// A number as written (`-5`, `0.5`), anything else by its kind: what a problem about a
    /// value out of range says it found.
    pub fn described(&self) -> String {
        match self {
            Self::Integer(n) => n.to_string(),
            Self::Float(x) => x.to_string(),
            other => other.kind().to_owned(),
        }
    }
}

impl Node {
    /// The value as JSON (positions dropped), e.g. for arguments written in the config.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as Json;
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Integer(i) => Json::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Value::String(text) => Json::String(text.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Value::Table(entries) => Json::Object(
                entries
                    .iter()
                    .map(|(key, _, node)| (key.clone(), node.to_json()))
                    .collect(),
            ),
        }
    }

    /// The entry `key` of a table node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Table(entries) => entries
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, _, node)| node),
            _ => None,
        }
    }

    /// Where the key `key` of a table node was written.
    pub fn key_pos(&self, key: &str) -> Option<Pos> {
        match &self.value {
            Value::Table(entries) => entries
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, pos, _)| *pos),
            _ => None,
        }
    }
}
