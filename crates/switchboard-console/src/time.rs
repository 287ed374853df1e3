//! Times as the console shows and reads them: UTC wall-clock text from milliseconds since
//! the epoch, "3 min ago", and the audit filter's times (`30m`, `2d`, `2026-11-26`,
//! `2026-11-26 05:30`, or milliseconds).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The last instant humantime writes (9999-12-31 23:59:59Z); past it, it fails to format.
const LAST_WRITABLE_MS: u64 = 253_402_300_799_000;

/// `2026-11-26 05:12:03Z` (a time past year 9999, which only an edited row could hold, as
/// the last second of 9999).
pub(crate) fn utc(ms: i64) -> String {
    let ms = u64::try_from(ms).unwrap_or(0).min(LAST_WRITABLE_MS);
    let at = UNIX_EPOCH + Duration::from_millis(ms);
    // humantime writes `2026-11-26T05:12:03Z`; a space reads better in a table.
    humantime::format_rfc3339_seconds(at)
        .to_string()
        .replacen('T', " ", 1)
}

/// A short span: `850 ms`, `42 s`, `3 min`, `5 h`, `2 d`.
pub(crate) fn span(duration: Duration) -> String {
    let ms = duration.as_millis();
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{} s", ms / 1_000),
        60_000..3_600_000 => format!("{} min", ms / 60_000),
        3_600_000..86_400_000 => format!("{} h", ms / 3_600_000),
        _ => format!("{} d", ms / 86_400_000),
    }
}

/// `3 min ago` (or `just now`).
pub(crate) fn ago(ms: i64, now: i64) -> String {
    let elapsed = u64::try_from(now.saturating_sub(ms)).unwrap_or(0);
    if elapsed < 1_000 {
        return "just now".to_owned();
    }
    format!("{} ago", span(Duration::from_millis(elapsed)))
}

/// A time as the audit filter takes it → ms since the epoch: a span back from `now`
/// (`30m`, `1h`, `2d`, `45s`), a UTC date or date and time (`2026-11-26`,
/// `2026-11-26 05:30`, `2026-11-26T05:30:10`), or a number of milliseconds.
pub(crate) fn parse(text: &str, now: i64) -> Option<i64> {
    let text = text.trim().trim_end_matches('Z');
    if text.is_empty() {
        return None;
    }
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let unit = |suffix: &str, ms: i64| {
        text.strip_suffix(suffix)
            .and_then(|n| n.trim().parse::<i64>().ok())
            .map(|n| now.saturating_sub(n.saturating_mul(ms)))
    };
    if let Some(back) = unit("s", 1_000)
        .or_else(|| unit("m", 60_000))
        .or_else(|| unit("h", 3_600_000))
        .or_else(|| unit("d", 86_400_000))
    {
        return Some(back);
    }
    // humantime reads `YYYY-MM-DD HH:MM:SS` (with `T` or a space): fill in what was left out.
    let full = match text.split_once(['T', ' ']) {
        None => format!("{text} 00:00:00"),
        Some((date, clock)) if clock.matches(':').count() == 1 => format!("{date} {clock}:00"),
        Some(_) => text.to_owned(),
    };
    let at = humantime::parse_rfc3339_weak(&full).ok()?;
    i64::try_from(at.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_text_and_parsing_agree() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(1_795_670_703_000), "2026-11-26 05:25:03Z");
        assert_eq!(parse("2026-11-26 05:25:03", 0), Some(1_795_670_703_000));
        assert_eq!(parse("2026-11-26T05:25:03Z", 0), Some(1_795_670_703_000));
        assert_eq!(parse("2026-11-26", 0), Some(1_795_651_200_000));
        assert_eq!(parse("2026-11-26 05:30", 0), Some(1_795_671_000_000));
        assert_eq!(parse("30m", 10_000_000), Some(10_000_000 - 1_800_000));
        assert_eq!(parse("2d", 200_000_000), Some(200_000_000 - 172_800_000));
        assert_eq!(parse("12345", 0), Some(12_345));
        assert_eq!(parse("2026-13-01", 0), None);
        assert_eq!(parse("soon", 0), None);
        assert_eq!(parse("  ", 0), None);
        // Out of range: no overflow, no panic.
        assert_eq!(parse("9999999999999999d", 1_000), Some(1_000 - i64::MAX));
        assert_eq!(utc(i64::MAX), "9999-12-31 23:59:59Z");
        assert_eq!(utc(-5), "1970-01-01 00:00:00Z");
    }

    #[test]
    fn spans_read_naturally() {
        assert_eq!(span(Duration::from_millis(850)), "850 ms");
        assert_eq!(span(Duration::from_secs(42)), "42 s");
        assert_eq!(span(Duration::from_secs(180)), "3 min");
        assert_eq!(ago(1_000, 1_500), "just now");
        assert_eq!(ago(0, 7_200_000), "2 h ago");
    }
}
