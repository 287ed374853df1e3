//! `dice`: tabletop dice with a real grammar (`4d6kh3`, `d%`, `dF`, `3d6!`, `2d20kl1`,
//! `5d10>=8`, `d20 adv`, `(1d8+3)*2 # damage`), and weighted random tables read from a
//! directory. Seedable for reproducible runs; OS randomness by default.
//!
//! The grammar is in [`parse`], rolling in [`roll`], table files in [`tables`].

pub mod parse;
pub mod roll;
pub mod tables;

use std::path::PathBuf;
use std::sync::Mutex;

use futures::future::BoxFuture;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, LatencyMeta, ToolAnnotations, ToolDefinition, ToolOutcome};

/// A bad expression, with the 1-based column where it goes wrong (0 = the whole roll).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", if *column > 0 { format!(" at column {column}") } else { String::new() })]
pub struct DiceError {
    pub column: usize,
    pub message: String,
}

impl DiceError {
    pub fn at(column: usize, message: impl Into<String>) -> Self {
        Self {
            column,
            message: message.into(),
        }
    }
}

/// Settings of the dice provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiceSettings {
    /// Where random tables are read from (none: no tables).
    pub tables_dir: Option<PathBuf>,
    /// A fixed seed for reproducible rolls (none: OS randomness).
    pub seed: Option<u64>,
}

/// The dice provider.
pub struct Dice {
    rng: Mutex<StdRng>,
    tables_dir: Option<PathBuf>,
}

impl Dice {
    pub fn new(settings: DiceSettings) -> Self {
        let rng = match settings.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        Self {
            rng: Mutex::new(rng),
            tables_dir: settings.tables_dir,
        }
    }

    /// Parses and rolls one expression.
    pub fn roll(&self, expression: &str) -> Result<roll::Outcome, DiceError> {
        let parsed = parse::parse(expression)?;
        let mut rng = match self.rng.lock() {
            Ok(rng) => rng,
            Err(poisoned) => poisoned.into_inner(),
        };
        roll::roll(expression, &parsed, &mut *rng)
    }

    fn call_roll(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, ToolError> {
        let expression = arguments
            .get("expression")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("'expression' must be a string such as \"1d20+5\""))?;
        let outcome = self
            .roll(expression)
            .map_err(|error| ToolError::new(format!("cannot roll '{expression}': {error}")))?;
        let line = outcome.line();
        Ok(ToolOutcome::structured_with_text(
            serde_json::to_value(&outcome).unwrap_or(Value::Null),
            line,
        ))
    }

    fn tables_dir(&self) -> Result<&PathBuf, ToolError> {
        self.tables_dir.as_ref().ok_or_else(|| {
            ToolError::new("no tables directory is configured (set tables_dir on the dice server)")
        })
    }

    fn call_roll_table(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, ToolError> {
        let name = arguments
            .get("table")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("'table' must be a table name from list_tables"))?;
        let count = arguments.get("count").and_then(Value::as_u64).unwrap_or(1);
        if !(1..=100).contains(&count) {
            return Err(ToolError::new("'count' must be between 1 and 100"));
        }
        let table = tables::load(self.tables_dir()?, name).map_err(ToolError::new)?;
        let mut rng = match self.rng.lock() {
            Ok(rng) => rng,
            Err(poisoned) => poisoned.into_inner(),
        };
        let results: Vec<String> = (0..count)
            .map(|_| table.draw(&mut *rng).result.clone())
            .collect();
        let mut outcome = ToolOutcome::structured(json!({"table": table.name, "results": results}));
        outcome.content = vec![
            json!({"type": "text", "text": format!("{}: {}", table.name, results.join("; "))}),
        ];
        Ok(outcome)
    }

    fn call_list_tables(&self) -> Result<ToolOutcome, ToolError> {
        let Some(dir) = &self.tables_dir else {
            let mut outcome = ToolOutcome::structured(json!({"tables": [], "problems": []}));
            outcome.content =
                vec![json!({"type": "text", "text": "no tables directory is configured"})];
            return Ok(outcome);
        };
        let mut found = Vec::new();
        let mut problems = Vec::new();
        for table in tables::list(dir).map_err(ToolError::new)? {
            match table {
                Ok(table) => found.push(json!({
                    "name": table.name,
                    "description": table.description,
                    "entries": table.entries.len(),
                })),
                Err(problem) => problems.push(problem),
            }
        }
        let text = found
            .iter()
            .map(|t| {
                format!(
                    "{} ({} entries)",
                    t["name"].as_str().unwrap_or(""),
                    t["entries"]
                )
            })
            .chain(problems.iter().map(|p| format!("unreadable: {p}")))
            .collect::<Vec<_>>()
            .join("\n");
        let mut outcome = ToolOutcome::structured(json!({"tables": found, "problems": problems}));
        outcome.content = vec![
            json!({"type": "text", "text": if text.is_empty() { "no tables".to_owned() } else { text }}),
        ];
        Ok(outcome)
    }
}

fn annotations(read_only: bool, idempotent: bool) -> Option<ToolAnnotations> {
    Some(ToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: Some(false),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    })
}

fn tool(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    idempotent: bool,
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.title = Some(title.to_owned());
    definition.annotations = annotations(true, idempotent);
    definition.output_schema = Some(output);
    LatencyMeta::new(1, 20)
        .idempotent(idempotent)
        .cacheable_seconds(0)
        .write_into(&mut definition.meta);
    definition
}

impl ToolProvider for Dice {
    fn name(&self) -> &str {
        "dice"
    }

    fn description(&self) -> &str {
        "Dice rolls with a full dice grammar, and weighted random tables"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let die = json!({"type": "object", "properties": {
            "value": {"type": "integer"}, "kept": {"type": "boolean"},
            "from_explosion": {"type": "boolean"}, "rerolled": {"type": "array", "items": {"type": "integer"}},
            "success": {"type": "boolean"}}, "required": ["value", "kept"]});
        vec![
            tool(
                "roll",
                "Roll dice",
                "Roll dice. Grammar: NdM, d% (d100), dF (Fudge), + - * / and parentheses; keep/drop: kh N, kl N, dh N, dl N (4d6kh3); explode: ! (3d6!) or !>=N; reroll: rN, r<N (repeat) or roN (once); count successes: >=N, >N, <=N, <N, =N (5d10>=8); advantage: adv / dis (d20 adv); a label after # (1d20+5 # attack).",
                json!({
                    "type": "object",
                    "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": parse::MAX_EXPRESSION_CHARS, "description": "e.g. \"4d6kh3\", \"1d20+5 # attack\""}},
                    "required": ["expression"],
                    "additionalProperties": false
                }),
                json!({
                    "type": "object",
                    "properties": {
                        "expression": {"type": "string"},
                        "label": {"type": "string"},
                        "total": {"type": "integer"},
                        "rolls": {"type": "array", "items": {"type": "object", "properties": {
                            "term": {"type": "string"}, "value": {"type": "integer"},
                            "dice": {"type": "array", "items": die}}, "required": ["term", "value", "dice"]}}
                    },
                    "required": ["expression", "total", "rolls"]
                }),
                false,
            ),
            tool(
                "roll_table",
                "Roll on a random table",
                "Draw from a weighted random table (see list_tables).",
                json!({
                    "type": "object",
                    "properties": {
                        "table": {"type": "string", "description": "Table name from list_tables"},
                        "count": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many draws (default 1)"}
                    },
                    "required": ["table"],
                    "additionalProperties": false
                }),
                json!({"type": "object", "properties": {"table": {"type": "string"}, "results": {"type": "array", "items": {"type": "string"}}}, "required": ["table", "results"]}),
                false,
            ),
            tool(
                "list_tables",
                "List random tables",
                "The random tables available to roll_table, with their descriptions and sizes.",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
                json!({"type": "object", "properties": {
                    "tables": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": ["string", "null"]}, "entries": {"type": "integer"}}}},
                    "problems": {"type": "array", "items": {"type": "string"}}}, "required": ["tables"]}),
                true,
            ),
        ]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            match tool {
                "roll" => self.call_roll(&arguments),
                "roll_table" => self.call_roll_table(&arguments),
                "list_tables" => self.call_list_tables(),
                other => Err(ToolError::new(format!("dice has no tool '{other}'"))),
            }
        })
    }
}

#[cfg(test)]
mod tests;
