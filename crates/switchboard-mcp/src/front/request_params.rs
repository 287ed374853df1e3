//! Checks of a request's params — an object, never an array — that the dispatcher (and the HTTP front, before it opens a
//! session) makes before answering, so a field of the wrong type, or a list cursor the
//! gateway never gave, is refused with -32602 naming it rather than read as absent. It only
//! judges params; it answers nothing itself.

use serde_json::Value;

use crate::jsonrpc::{RpcError, code};

/// A field of a request's params: its name, whether a value fits it, and what fits, in words.
type Field = (&'static str, fn(&Value) -> bool, &'static str);

/// A request's params given by position (an array): JSON-RPC allows them, but MCP names
/// every param — each method's params are an object, or absent — so no method takes them.
/// Refused with -32602 for every method, rather than read as no params at all.
pub fn params_by_position(method: &str, params: Option<&Value>) -> Option<RpcError> {
    params?.is_array().then(|| {
        RpcError::new(
            code::INVALID_PARAMS,
            format!(
                "{method}: params must be an object (MCP names every param; params by \
                 position, an array, are not taken)"
            ),
        )
    })
}

/// What is wrong with an `initialize` request's params, if anything: MCP's
/// `protocolVersion` is a string, `capabilities` and `clientInfo` objects. A field left out
/// or `null` (Go clients send `null` for a field they leave unset) is taken as before (the
/// latest version, no capabilities); one of another type is refused.
pub fn invalid_initialize(params: Option<&Value>) -> Option<RpcError> {
    let fields: [Field; 3] = [
        ("protocolVersion", Value::is_string, "a string"),
        ("capabilities", Value::is_object, "an object"),
        ("clientInfo", Value::is_object, "an object"),
    ];
    let params = params?;
    fields.iter().find_map(|(key, fits, what)| {
        let value = params.get(*key).filter(|value| !value.is_null())?;
        (!fits(value)).then(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!("initialize: params.{key} must be {what}, got {value}"),
            )
        })
    })
}

/// The list methods the gateway answers: each answers everything in one page, with no
/// `nextCursor`.
pub const LIST_METHODS: [&str; 5] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "tasks/list",
];

/// What is wrong with a list request's `params.cursor`, if anything. The gateway never
/// hands out a cursor, so any cursor is one it did not give (MCP: an invalid cursor is
/// -32602); answering the first page instead would show a paging client the same page again.
/// `null` and `""` are taken for "no cursor": clients that build the params from an empty
/// paging state send them for the first page.
pub fn invalid_cursor(method: &str, params: Option<&Value>) -> Option<RpcError> {
    let cursor = params?
        .get("cursor")
        .filter(|cursor| !cursor.is_null() && cursor.as_str() != Some(""))?;
    Some(RpcError::new(
        code::INVALID_PARAMS,
        format!(
            "{method}: params.cursor {cursor} is not a cursor this gateway gave (it lists everything in one page, with no nextCursor); leave it out"
        ),
    ))
}

/// What is wrong with a `completion/complete` request's params, if anything, by its JSON
/// path: MCP's `ref` is an object whose `type` is `ref/prompt` (with a string `name`) or
/// `ref/resource` (with a string `uri`), and `argument` an object with a string `name` and
/// `value`. Without this a malformed reference would be answered with no suggestions, as if
/// it were a well-formed one nothing completes.
pub fn invalid_complete(params: Option<&Value>) -> Option<RpcError> {
    let problem = complete_problem(params.unwrap_or(&Value::Null))?;
    Some(RpcError::new(
        code::INVALID_PARAMS,
        format!("completion/complete: {problem}"),
    ))
}

fn complete_problem(params: &Value) -> Option<String> {
    let Some(reference) = params.get("ref").filter(|r| r.is_object()) else {
        return Some(format!(
            "params.ref must be an object ({{\"type\": \"ref/prompt\", \"name\": …}} or \
             {{\"type\": \"ref/resource\", \"uri\": …}}), got {}",
            shown(params.get("ref"))
        ));
    };
    let named = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => "name",
        Some("ref/resource") => "uri",
        _ => {
            return Some(format!(
                "params.ref.type must be \"ref/prompt\" or \"ref/resource\", got {}",
                shown(reference.get("type"))
            ));
        }
    };
    let strings = [
        (reference.get(named), format!("params.ref.{named}")),
        (
            params.pointer("/argument/name"),
            "params.argument.name".to_owned(),
        ),
        (
            params.pointer("/argument/value"),
            "params.argument.value".to_owned(),
        ),
    ];
    if !params.get("argument").is_some_and(Value::is_object) {
        return Some(format!(
            "params.argument must be an object ({{\"name\": …, \"value\": …}}), got {}",
            shown(params.get("argument"))
        ));
    }
    strings.into_iter().find_map(|(value, path)| {
        (!value.is_some_and(Value::is_string))
            .then(|| format!("{path} must be a string, got {}", shown(value)))
    })
}

/// A value as an error message shows it: its JSON, or "nothing" when it is absent.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn initialize_fields_of_the_wrong_type_are_named() {
        let valid = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        assert!(invalid_initialize(Some(&valid)).is_none());
        assert!(invalid_initialize(Some(&json!({}))).is_none());
        let unset =
            json!({"protocolVersion": "2025-06-18", "capabilities": null, "clientInfo": null});
        assert!(invalid_initialize(Some(&unset)).is_none());
        assert!(invalid_initialize(None).is_none());
        let refused = invalid_initialize(Some(&json!({"protocolVersion": 5})));
        let message = refused.map(|error| error.message).unwrap_or_default();
        assert_eq!(
            message,
            "initialize: params.protocolVersion must be a string, got 5"
        );
        assert!(invalid_initialize(Some(&json!({"capabilities": []}))).is_some());
        assert!(invalid_initialize(Some(&json!({"clientInfo": "x"}))).is_some());
    }

    #[test]
    fn a_completion_reference_is_checked_field_by_field() {
        let argument = json!({"name": "department", "value": "E"});
        for valid in [
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": argument}),
            json!({"ref": {"type": "ref/resource", "uri": "file:///{x}"}, "argument": argument}),
        ] {
            assert!(invalid_complete(Some(&valid)).is_none(), "{valid}");
        }
        for (params, path) in [
            (json!({"ref": "x", "argument": argument}), "params.ref "),
            (json!({"argument": argument}), "params.ref "),
            (Value::Null, "params.ref "),
            (
                json!({"ref": {"type": "ref/tool"}, "argument": argument}),
                "params.ref.type",
            ),
            (
                json!({"ref": {"type": "ref/prompt"}, "argument": argument}),
                "params.ref.name",
            ),
            (
                json!({"ref": {"type": "ref/resource", "uri": 3}, "argument": argument}),
                "params.ref.uri",
            ),
            (
                json!({"ref": {"type": "ref/prompt", "name": "p"}}),
                "params.argument ",
            ),
            (
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"value": "E"}}),
                "params.argument.name",
            ),
            (
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "d"}}),
                "params.argument.value",
            ),
        ] {
            let refused = invalid_complete(Some(&params));
            let message = refused.map(|error| error.message).unwrap_or_default();
            assert!(message.contains(path), "{params}: {message:?}");
        }
        assert!(invalid_complete(None).is_some(), "no params, no reference");
    }

    #[test]
    fn any_cursor_is_one_the_gateway_never_gave() {
        assert!(invalid_cursor("tools/list", None).is_none());
        assert!(invalid_cursor("tools/list", Some(&json!({"cursor": null}))).is_none());
        assert!(invalid_cursor("tools/list", Some(&json!({"cursor": ""}))).is_none());
        let refused = invalid_cursor("tools/list", Some(&json!({"cursor": "abc"})));
        let message = refused.map(|error| error.message).unwrap_or_default();
        assert!(
            message.starts_with("tools/list: params.cursor \"abc\""),
            "{message}"
        );
    }
}
