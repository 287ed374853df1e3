//! One row of the ledger.

use serde::{Deserialize, Serialize};

/// One call on record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The call id (a ULID, also in the result's `_meta`).
    pub call_id: String,
    /// When the call started, milliseconds since the Unix epoch.
    pub started_ms: i64,
    pub agent: Option<String>,
    /// The subject (`sub`) of the OAuth token the call came with. Left out of the row's JSON
    /// when absent, so rows written before it hash as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The OAuth client (`client_id`/`azp`) that presented that token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    pub session: Option<String>,
    pub tier: Option<String>,
    /// The name the caller used.
    pub exposed: String,
    /// The server and its own name of the tool, when the name resolved.
    pub server: Option<String>,
    pub tool: Option<String>,
    /// SHA-256 of the original arguments.
    pub args_digest: Option<String>,
    /// The arguments with secrets replaced.
    pub args_redacted: Option<std::sync::Arc<serde_json::Value>>,
    /// ok, tool_error, denied, rate_limited, timed_out, cancelled, upstream_down,
    /// upstream_error, unknown_tool, invalid_arguments, input_required.
    pub outcome: String,
    pub error: Option<String>,
    pub duration_us: i64,
    pub cost: f64,
    /// Who decided an approval, how, and what.
    pub approval: Option<String>,
    pub result_bytes: Option<i64>,
    pub cached: bool,
    /// The W3C trace id (32 hex digits) of the trace the call ran in, when it had one. Left
    /// out of the row's JSON when absent, like `subject`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl LedgerEntry {
    /// The fields the hash chain covers, in a fixed order: the entry's JSON, byte for byte
    /// what `serde_json::to_string` writes of it (the chain of every row on record was
    /// hashed over that text).
    ///
    /// Written by hand because every call writes one on its own thread: the keys are
    /// literals rather than escaped anew each time, and a string that needs no escaping
    /// (nearly all of them: ids, names, digests) is copied whole. It is the derived
    /// serializer's output all the same, a test holds the two together.
    pub(crate) fn canonical(&self) -> String {
        let mut line = Line {
            text: String::with_capacity(384),
            scratch: Vec::new(),
        };
        line.key("{\"call_id\":");
        line.string(&self.call_id);
        line.key(",\"started_ms\":");
        line.json(&self.started_ms);
        line.key(",\"agent\":");
        line.optional(self.agent.as_deref());
        if let Some(subject) = &self.subject {
            line.key(",\"subject\":");
            line.string(subject);
        }
        if let Some(client_id) = &self.client_id {
            line.key(",\"client_id\":");
            line.string(client_id);
        }
        line.key(",\"session\":");
        line.optional(self.session.as_deref());
        line.key(",\"tier\":");
        line.optional(self.tier.as_deref());
        line.key(",\"exposed\":");
        line.string(&self.exposed);
        line.key(",\"server\":");
        line.optional(self.server.as_deref());
        line.key(",\"tool\":");
        line.optional(self.tool.as_deref());
        line.key(",\"args_digest\":");
        line.optional(self.args_digest.as_deref());
        line.key(",\"args_redacted\":");
        line.json(&self.args_redacted);
        line.key(",\"outcome\":");
        line.string(&self.outcome);
        line.key(",\"error\":");
        line.optional(self.error.as_deref());
        line.key(",\"duration_us\":");
        line.json(&self.duration_us);
        line.key(",\"cost\":");
        line.json(&self.cost);
        line.key(",\"approval\":");
        line.optional(self.approval.as_deref());
        line.key(",\"result_bytes\":");
        line.json(&self.result_bytes);
        line.key(",\"cached\":");
        line.key(if self.cached { "true" } else { "false" });
        if let Some(trace_id) = &self.trace_id {
            line.key(",\"trace_id\":");
            line.string(trace_id);
        }
        line.key("}");
        line.text
    }
}

/// The canonical text as it is written, and a buffer for what serde_json writes of the
/// values that are not strings (only those few bytes are checked as UTF-8 again).
struct Line {
    text: String,
    scratch: Vec<u8>,
}

impl Line {
    fn key(&mut self, literal: &str) {
        self.text.push_str(literal);
    }

    /// A JSON string: copied whole when no byte of it needs escaping, else serde_json's own
    /// escaping.
    fn string(&mut self, text: &str) {
        // Folded without an early exit, so the compiler checks many bytes at a time.
        let needs_escaping = text.bytes().fold(false, |found, byte| {
            found | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
        });
        if !needs_escaping {
            self.text.push('"');
            self.text.push_str(text);
            self.text.push('"');
        } else {
            self.json(text);
        }
    }

    fn optional(&mut self, text: Option<&str>) {
        match text {
            Some(text) => self.string(text),
            None => self.key("null"),
        }
    }

    /// Any other value, as serde_json writes it (numbers, the redacted arguments).
    fn json<T: Serialize + ?Sized>(&mut self, value: &T) {
        self.scratch.clear();
        // Writing into a Vec cannot fail, these types always serialize, and serde_json
        // writes UTF-8.
        if serde_json::to_writer(&mut self.scratch, value).is_ok()
            && let Ok(written) = std::str::from_utf8(&self.scratch)
        {
            self.text.push_str(written);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn entry() -> LedgerEntry {
        LedgerEntry {
            call_id: "01JCALL0000000000000000000".into(),
            started_ms: 1_764_000_000_123,
            agent: Some("npc".into()),
            subject: None,
            client_id: None,
            session: Some("s-1".into()),
            tier: None,
            exposed: "echo__echo".into(),
            server: Some("echo".into()),
            tool: Some("echo".into()),
            args_digest: Some(
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            ),
            args_redacted: Some(Arc::new(json!({"message": "hello", "n": [1, 2.5, null]}))),
            outcome: "ok".into(),
            error: None,
            duration_us: 1234,
            cost: 0.0,
            approval: None,
            result_bytes: Some(5),
            cached: false,
            trace_id: None,
        }
    }

    #[test]
    fn the_canonical_text_is_the_derived_serializers_byte_for_byte() {
        let awkward = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} del \u{7f} é 🦀 </script>";
        let mut cases = vec![entry()];
        let mut all = entry();
        all.subject = Some("user@example.com".into());
        all.client_id = Some("client-7".into());
        all.tier = Some("voice".into());
        all.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        all.cached = true;
        all.cost = 1.0 / 3.0;
        all.approval = Some(awkward.into());
        cases.push(all);
        let mut unresolved = entry();
        unresolved.agent = None;
        unresolved.session = None;
        unresolved.server = None;
        unresolved.tool = None;
        unresolved.args_digest = None;
        unresolved.args_redacted = None;
        unresolved.result_bytes = None;
        unresolved.exposed = awkward.into();
        unresolved.error = Some(awkward.into());
        unresolved.outcome = "unknown_tool".into();
        unresolved.started_ms = -1;
        unresolved.duration_us = i64::MAX;
        cases.push(unresolved);
        for cost in [f64::NAN, f64::INFINITY, -0.0, 1e21, 123.456, 5e-324] {
            let mut priced = entry();
            priced.cost = cost;
            cases.push(priced);
        }
        let mut escaped_ids = entry();
        escaped_ids.call_id = "a\"b".into();
        escaped_ids.subject = Some("\u{1f}".into());
        escaped_ids.client_id = Some("\\".into());
        escaped_ids.trace_id = Some("\r".into());
        escaped_ids.args_redacted = Some(Arc::new(
            json!({"k\"": awkward, "nested": {"x": [awkward]}}),
        ));
        cases.push(escaped_ids);
        for case in cases {
            let derived = serde_json::to_string(&case).expect("serializes");
            assert_eq!(case.canonical(), derived);
        }
    }
}
