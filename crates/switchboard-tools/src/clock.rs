//! `clock`: the current time, in UTC or at a fixed UTC offset, and the distance between two
//! instants. Read-only, idempotent, and fast — a tool every agent can be given.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::clock::Clock as TimeSource;
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolAnnotations, ToolDefinition, ToolOutcome};

/// The clock provider.
pub struct Clock {
    time: Arc<dyn TimeSource>,
}

impl Clock {
    pub fn new(time: Arc<dyn TimeSource>) -> Self {
        Self { time }
    }

    fn now(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, ToolError> {
        let offset = match arguments.get("utc_offset") {
            None | Some(Value::Null) => 0,
            Some(Value::String(text)) => parse_offset(text)?,
            Some(_) => {
                return Err(ToolError::new(
                    "utc_offset must be a string like \"+02:00\"",
                ));
            }
        };
        let now = self.time.wall();
        let unix = now
            .duration_since(UNIX_EPOCH)
            .map_err(|_| ToolError::new("the system clock is before 1970"))?;
        let local = shift(now, offset)?;
        let stamp = humantime::format_rfc3339_millis(local).to_string();
        let iso = if offset == 0 {
            stamp
        } else {
            format!("{}{}", stamp.trim_end_matches('Z'), format_offset(offset))
        };
        Ok(ToolOutcome::structured(json!({
            "iso8601": iso,
            "unix_ms": u64::try_from(unix.as_millis()).unwrap_or(u64::MAX),
            "utc_offset": format_offset(offset),
        })))
    }
}

fn shift(time: SystemTime, offset_seconds: i64) -> Result<SystemTime, ToolError> {
    let delta = Duration::from_secs(offset_seconds.unsigned_abs());
    let shifted = if offset_seconds >= 0 {
        time.checked_add(delta)
    } else {
        time.checked_sub(delta)
    };
    shifted.ok_or_else(|| ToolError::new("time out of range"))
}

/// Parses `+HH:MM`, `-HH:MM`, `Z`; at most ±14:00.
fn parse_offset(text: &str) -> Result<i64, ToolError> {
    let bad = || {
        ToolError::new(format!(
            "utc_offset '{text}' is not of the form +HH:MM or -HH:MM (e.g. \"+02:00\")"
        ))
    };
    if text == "Z" || text == "UTC" {
        return Ok(0);
    }
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (1, &text[1..]),
        Some(b'-') => (-1, &text[1..]),
        _ => return Err(bad()),
    };
    let (hours, minutes) = rest.split_once(':').ok_or_else(bad)?;
    let hours: i64 = hours.parse().map_err(|_| bad())?;
    let minutes: i64 = minutes.parse().map_err(|_| bad())?;
    if hours > 14 || minutes >= 60 || (hours == 14 && minutes > 0) {
        return Err(bad());
    }
    Ok(sign * (hours * 3600 + minutes * 60))
}

fn format_offset(seconds: i64) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

impl ToolProvider for Clock {
    fn name(&self) -> &str {
        "clock"
    }

    fn description(&self) -> &str {
        "The current time"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let mut now = ToolDefinition::new(
            "now",
            "Current date and time as ISO 8601, in UTC or at a fixed UTC offset.",
            json!({
                "type": "object",
                "properties": {
                    "utc_offset": {"type": "string", "description": "Offset from UTC such as \"+02:00\" or \"-05:30\"; default UTC", "pattern": "^(Z|UTC|[+-][0-9]{2}:[0-9]{2})$"}
                },
                "additionalProperties": false
            }),
        );
        now.title = Some("Current time".to_owned());
        switchboard_core::LatencyMeta::new(1, 5)
            .idempotent(true)
            .cacheable_seconds(0)
            .write_into(&mut now.meta);
        now.annotations = Some(read_only());
        now.output_schema = Some(json!({
            "type": "object",
            "properties": {
                "iso8601": {"type": "string"},
                "unix_ms": {"type": "integer"},
                "utc_offset": {"type": "string"}
            },
            "required": ["iso8601", "unix_ms", "utc_offset"]
        }));
        vec![now]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            match tool {
                "now" => self.now(&arguments),
                other => Err(ToolError::new(format!("the clock has no tool '{other}'"))),
            }
        })
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    struct Fixed(SystemTime);

    impl TimeSource for Fixed {
        fn now(&self) -> tokio::time::Instant {
            switchboard_core::clock::SystemClock.now()
        }
        fn wall(&self) -> SystemTime {
            self.0
        }
    }

    fn clock_at(unix_seconds: u64) -> Clock {
        Clock::new(Arc::new(Fixed(
            UNIX_EPOCH + Duration::from_secs(unix_seconds),
        )))
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn now_in_utc_and_at_an_offset() {
        let clock = clock_at(1_700_000_000);
        let ctx = CallContext::default();
        let utc = clock.call("now", Map::new(), &ctx).await.expect("utc");
        let utc = utc.structured_content.expect("structured");
        assert_eq!(utc["iso8601"], "2023-11-14T22:13:20.000Z");
        assert_eq!(utc["unix_ms"], 1_700_000_000_000u64);
        let shifted = clock
            .call("now", args(json!({"utc_offset": "-05:30"})), &ctx)
            .await
            .expect("offset");
        assert_eq!(
            shifted.structured_content.expect("structured")["iso8601"],
            "2023-11-14T16:43:20.000-05:30"
        );
    }

    #[tokio::test]
    async fn bad_offsets_are_explained() {
        let clock = clock_at(0);
        let ctx = CallContext::default();
        for bad in ["5", "+25:00", "+01:99", "+1"] {
            let error = clock
                .call("now", args(json!({"utc_offset": bad})), &ctx)
                .await
                .expect_err(bad);
            assert!(error.0.contains(bad), "{}", error.0);
        }
        let unknown = clock
            .call("later", Map::new(), &ctx)
            .await
            .expect_err("unknown");
        assert!(unknown.0.contains("later"));
    }
}
