//! Times as the console shows and reads them: UTC wall-clock text from milliseconds since
//! the epoch, "3 min ago", and the audit filter's times (`30m`, `2d`, `2026-11-26`,
//! `2026-11-26 05:30`, or milliseconds).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01.
fn days_of(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-26 05:12:03Z`.
pub(crate) fn utc(ms: i64) -> String {
    let seconds = ms.div_euclid(1_000);
    let (year, month, day) = civil(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
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
            .map(|n| now - n * ms)
    };
    if let Some(back) = unit("s", 1_000)
        .or_else(|| unit("m", 60_000))
        .or_else(|| unit("h", 3_600_000))
        .or_else(|| unit("d", 86_400_000))
    {
        return Some(back);
    }
    let (date, clock) = match text.split_once(['T', ' ']) {
        Some((date, clock)) => (date, Some(clock)),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut seconds = days_of(year, month, day) * 86_400;
    if let Some(clock) = clock {
        let mut fields = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
        let hours = fields.next()??;
        let minutes = fields.next().flatten().unwrap_or(0);
        let secs = fields.next().flatten().unwrap_or(0);
        if hours > 23 || minutes > 59 || secs > 60 {
            return None;
        }
        seconds += hours * 3_600 + minutes * 60 + secs;
    }
    Some(seconds * 1_000)
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
        assert_eq!(parse("30m", 10_000_000), Some(10_000_000 - 1_800_000));
        assert_eq!(parse("2d", 200_000_000), Some(200_000_000 - 172_800_000));
        assert_eq!(parse("12345", 0), Some(12_345));
        assert_eq!(parse("2026-13-01", 0), None);
        assert_eq!(parse("soon", 0), None);
        assert_eq!(parse("  ", 0), None);
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
