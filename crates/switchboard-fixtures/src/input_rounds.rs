//! The conformance suite's multi-round-trip tools and prompt (SEP-2322,
//! `test_input_required_result_*`): each answers `input_required` with requests for the
//! client (elicitation, sampling, roots) and completes when the call comes back with the
//! answers. Its `requestState` is integrity-checked (a keyed hash), so a tampered state is
//! refused with -32602. Only the inputs the client declared in `_meta` are asked for by
//! `test_input_required_result_capabilities`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::conformance::text;

const INVALID_PARAMS: i64 = -32602;

/// The key of the state's hash; a fixture's secret, not a real one.
const STATE_KEY: &str = "switchboard-fixture input rounds";

/// The tools' definitions.
pub fn tools() -> Vec<Value> {
    let empty = json!({"type": "object", "properties": {}});
    [
        ("elicitation", "Asks the user's name by elicitation, then greets them"),
        ("sampling", "Asks the client's model a question by sampling"),
        ("list_roots", "Asks the client for its roots"),
        ("request_state", "Asks for a confirmation and checks its own state"),
        ("multiple_inputs", "Asks for a name, a greeting and the roots at once"),
        ("multi_round", "Asks two questions, one round after the other"),
        ("tampered_state", "Refuses a state that was changed"),
        ("capabilities", "Asks only for what the client declared"),
    ]
    .into_iter()
    .map(|(name, description)| {
        json!({"name": format!("test_input_required_result_{name}"), "description": description, "inputSchema": empty})
    })
    .collect()
}

/// The prompt's definition.
pub fn prompt() -> Value {
    json!({"name": "test_input_required_result_prompt", "description": "Asks for context by elicitation, then returns the prompt"})
}

/// Answers a call of one of the tools; `None` for any other tool.
pub fn call_tool(name: &str, params: &Value) -> Option<Result<Value, (i64, String)>> {
    let round = Round::of(params);
    let roots = || json!({"method": "roots/list", "params": {}});
    Some(match name.strip_prefix("test_input_required_result_")? {
        "elicitation" => round.ask(
            [("user_name", elicitation("What is your name?", "name"))],
            None,
            |a| {
                text(format!(
                    "Hello, {}!",
                    a["user_name"]["content"]["name"].as_str().unwrap_or("")
                ))
            },
        ),
        "sampling" => round.ask(
            [(
                "capital_question",
                sampling("What is the capital of France?", 100),
            )],
            None,
            |a| {
                text(format!(
                    "The model said: {}",
                    a["capital_question"]["content"]["text"]
                        .as_str()
                        .unwrap_or("")
                ))
            },
        ),
        "list_roots" => round.ask([("client_roots", roots())], None, |a| {
            let uris: Vec<&str> = a["client_roots"]["roots"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|root| root["uri"].as_str())
                .collect();
            text(format!("Roots: {}", uris.join(", ")))
        }),
        tool @ ("request_state" | "tampered_state") => round.sealed(tool).and_then(|state| {
            round.ask(
                [("confirm", elicitation("Please confirm", "ok"))],
                Some(state),
                |_| text("Confirmed; state-ok."),
            )
        }),
        "multiple_inputs" => round.sealed("multiple_inputs").and_then(|state| {
            round.ask(
                [
                    ("user_name", elicitation("What is your name?", "name")),
                    ("greeting", sampling("Generate a greeting", 50)),
                    ("client_roots", roots()),
                ],
                Some(state),
                |_| text("All three answers arrived."),
            )
        }),
        "multi_round" => round.multi_round(),
        "capabilities" => {
            let declared = params.pointer("/_meta/io.modelcontextprotocol~1clientCapabilities");
            let has = |capability: &str| declared.and_then(|d| d.get(capability)).is_some();
            let mut asks = Vec::new();
            if has("elicitation") {
                asks.push(("user_name", elicitation("What is your name?", "name")));
            }
            if has("sampling") {
                asks.push((
                    "capital_question",
                    sampling("What is the capital of France?", 100),
                ));
            }
            if has("roots") {
                asks.push(("client_roots", roots()));
            }
            round.ask(asks, None, |_| {
                text("Asked only for what the client can answer.")
            })
        }
        _ => return None,
    })
}

/// Answers `prompts/get` of the prompt; `None` for any other prompt.
pub fn get_prompt(params: &Value) -> Option<Result<Value, (i64, String)>> {
    if params.get("name").and_then(Value::as_str) != Some("test_input_required_result_prompt") {
        return None;
    }
    let ask = (
        "user_context",
        elicitation("What context should the prompt use?", "context"),
    );
    Some(Round::of(params).ask([ask], None, |a| {
        let context = a["user_context"]["content"]["context"].as_str().unwrap_or("");
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("Use this context: {context}")}}]})
    }))
}

/// What a call brought back: its answers and the state it echoes.
struct Round {
    responses: Option<Map<String, Value>>,
    state: Option<String>,
}

impl Round {
    fn of(params: &Value) -> Round {
        Round {
            responses: params
                .get("inputResponses")
                .and_then(Value::as_object)
                .cloned(),
            state: params
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// `complete(answers)` once every one of `asks` came back, else `input_required` asking
    /// for them (again) with `state`. An answer that is not an object is an error.
    fn ask<'k>(
        &self,
        asks: impl IntoIterator<Item = (&'k str, Value)>,
        state: Option<String>,
        complete: impl FnOnce(&Map<String, Value>) -> Value,
    ) -> Result<Value, (i64, String)> {
        let asks: Vec<(&str, Value)> = asks.into_iter().collect();
        let mut answers = Map::new();
        for (key, _) in &asks {
            let Some(answer) = self.responses.as_ref().and_then(|r| r.get(*key)) else {
                let requests: Map<String, Value> = asks
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect();
                let mut result = json!({"resultType": "input_required", "inputRequests": requests});
                if let Some(state) = state {
                    result["requestState"] = Value::String(state);
                }
                return Ok(result);
            };
            if !answer.is_object() {
                return Err((
                    INVALID_PARAMS,
                    format!("inputResponses.{key} must be an object, not {answer}"),
                ));
            }
            answers.insert((*key).to_owned(), answer.clone());
        }
        Ok(complete(&answers))
    }

    /// The state for `label`'s round; when answers came back, the echoed state must be it.
    fn sealed(&self, label: &str) -> Result<String, (i64, String)> {
        if self.responses.is_some() {
            open(self.state.as_deref(), label)?;
        }
        Ok(seal(label))
    }

    /// Two questions, each in its own round, the state saying which round it is.
    fn multi_round(&self) -> Result<Value, (i64, String)> {
        let second = match self.responses {
            None => false,
            Some(_) if open(self.state.as_deref(), "multi_round:1").is_ok() => true,
            Some(_) => {
                open(self.state.as_deref(), "multi_round:2")?;
                true
            }
        };
        // The first round cannot complete: it comes without answers.
        let (ask, label) = if second {
            let question = elicitation("Step 2: What is your favorite color?", "color");
            (("step2", question), "multi_round:2")
        } else {
            let question = elicitation("Step 1: What is your name?", "name");
            (("step1", question), "multi_round:1")
        };
        self.ask([ask], Some(seal(label)), |_| text("Both rounds done."))
    }
}

fn elicitation(message: &str, field: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    }})
}

fn sampling(question: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": max_tokens
    }})
}

fn digest(payload: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    STATE_KEY.hash(&mut hasher);
    payload.hash(&mut hasher);
    hasher.finish()
}

fn seal(payload: &str) -> String {
    format!("{payload}.{:016x}", digest(payload))
}

/// Checks that `state` is this fixture's seal of `expected`.
fn open(state: Option<&str>, expected: &str) -> Result<(), (i64, String)> {
    let refused = || {
        (
            INVALID_PARAMS,
            "requestState failed its integrity check".to_owned(),
        )
    };
    let state = state.ok_or_else(|| (INVALID_PARAMS, "requestState is missing".to_owned()))?;
    let (payload, mac) = state.rsplit_once('.').ok_or_else(refused)?;
    if payload != expected || mac != format!("{:016x}", digest(payload)) {
        return Err(refused());
    }
    Ok(())
}
