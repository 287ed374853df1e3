//! Durations as operators write them: `"100us"`, `"500ms"`, `"30s"`, `"2m"`, `"1h"`, `"1.5s"`,
//! `"0"` (zero needs no unit), or an integer number of milliseconds.

use std::time::Duration;

/// The hint shown with a duration that does not parse.
pub const DURATION_HINT: &str = "write e.g. \"100us\", \"500ms\", \"30s\", \"2m\", \"1h\", or an integer number of milliseconds";

/// Parses `"100us"` (or `"100µs"`), `"500ms"`, `"30s"`, `"2m"`/`"2min"`, `"1h"`, `"1.5s"` (spaces around the unit allowed),
/// and `"0"`; any other number without a unit is refused (seconds? milliseconds?).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b == b'0') {
        return Some(Duration::ZERO);
    }
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return None;
    }
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "us" | "µs" => number / 1_000_000.0,
        "ms" => number / 1000.0,
        "s" | "sec" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_operators_write() {
        let cases = [
            ("500ms", Some(Duration::from_millis(500))),
            ("100us", Some(Duration::from_micros(100))),
            ("2.5 µs", Some(Duration::from_nanos(2500))),
            ("0us", Some(Duration::ZERO)),
            ("30s", Some(Duration::from_secs(30))),
            (" 30 s ", Some(Duration::from_secs(30))),
            ("1.5s", Some(Duration::from_millis(1500))),
            ("2m", Some(Duration::from_secs(120))),
            ("2min", Some(Duration::from_secs(120))),
            ("1h", Some(Duration::from_secs(3600))),
            ("0s", Some(Duration::ZERO)),
            ("0", Some(Duration::ZERO)),
            ("s", None),
            ("30", None),
            ("-1s", None),
            ("1.2.3s", None),
            ("5 parsecs", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), expected, "{text:?}");
        }
    }
}
