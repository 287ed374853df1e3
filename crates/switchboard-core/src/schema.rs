//! Tool input schemas, compiled once when a tool enters the catalog and used to validate
//! every call's arguments before it reaches the upstream, with the tool's `x-mcp-header`
//! declarations (an invalid one makes the schema invalid).

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::param_headers::{self, ParamHeader};

/// A compiled input schema.
pub struct InputSchema {
    validator: jsonschema::Validator,
    /// The `x-mcp-header` declarations ([`crate::param_headers`]).
    param_headers: Arc<[ParamHeader]>,
}

impl fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InputSchema")
    }
}

/// One way the arguments break the schema: where (a JSON path such as `$.items[2].name`) and
/// what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl InputSchema {
    /// Compiles `schema`. Fails when it is not a valid JSON Schema, or not an object schema
    /// (MCP requires tool inputs to be objects).
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let Some(object) = schema.as_object() else {
            return Err("inputSchema is not a JSON object".to_owned());
        };
        if let Some(kind) = object.get("type")
            && kind != "object"
        {
            return Err(format!(
                "inputSchema must have type \"object\", found {kind}"
            ));
        }
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .map_err(|error| format!("inputSchema is not a valid JSON Schema: {error}"))?;
        let param_headers = param_headers::declared(schema)?.into();
        Ok(Self {
            validator,
            param_headers,
        })
    }

    /// The properties HTTP clients mirror into `Mcp-Param-*` headers.
    pub fn param_headers(&self) -> &Arc<[ParamHeader]> {
        &self.param_headers
    }

    /// Validates call arguments; every violation, in document order.
    ///
    /// The arguments are borrowed mutably only to be lent to the validator as a JSON value
    /// without copying them (it takes a `Value`, a call's arguments are a `Map`): they are
    /// moved into one and back, and come back as they were.
    pub fn validate(&self, arguments: &mut Map<String, Value>) -> Result<(), Vec<Violation>> {
        let instance = Value::Object(std::mem::take(arguments));
        let verdict = self.judge(&instance);
        if let Value::Object(members) = instance {
            *arguments = members;
        }
        verdict
    }

    fn judge(&self, instance: &Value) -> Result<(), Vec<Violation>> {
        // The common case, valid arguments, skips building error iterators and messages.
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(instance)
            .map(|error| Violation {
                path: json_path(&error.instance_path.to_string()),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }
}

/// Turns a JSON pointer (`/items/2/name`) into a JSON path (`$.items[2].name`).
fn json_path(pointer: &str) -> String {
    let mut path = String::from("$");
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.chars().all(|c| c.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            path.push('.');
            path.push_str(&segment);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn violations_name_the_json_path() {
        let schema = InputSchema::compile(&json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "object",
                "properties": {"n": {"type": "integer"}}}}},
            "required": ["items"]
        }))
        .expect("valid schema");
        let errors = schema
            .validate(&mut args(json!({"items": [{"n": 1}, {"n": "x"}]})))
            .expect_err("invalid");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "$.items[1].n");
        assert!(
            errors[0].message.contains("integer"),
            "{}",
            errors[0].message
        );

        let missing = schema.validate(&mut Map::new()).expect_err("missing");
        assert_eq!(missing[0].path, "$");
        assert!(missing[0].message.contains("items"));
    }

    #[test]
    fn broken_schemas_are_refused() {
        assert!(
            InputSchema::compile(&json!({"type": "object", "properties": {"a": {"type": 5}}}))
                .is_err()
        );
        assert!(InputSchema::compile(&json!({"type": "string"})).is_err());
        assert!(InputSchema::compile(&json!([1])).is_err());
        let bad_header =
            json!({"type": "object", "properties": {"a": {"type": "array", "x-mcp-header": "A"}}});
        let reason = InputSchema::compile(&bad_header).expect_err("bad x-mcp-header");
        assert!(
            reason.contains("x-mcp-header 'A' at '/properties/a'"),
            "{reason}"
        );
    }

    #[test]
    fn the_declared_param_headers_come_with_the_schema() {
        let schema = InputSchema::compile(&json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}
        }}))
        .expect("valid schema");
        let names: Vec<&str> = schema
            .param_headers()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["Region"]);
    }
}
