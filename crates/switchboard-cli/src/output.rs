//! Writing to stdout without panicking when the reader goes away (`switchboard tools | head`),
//! writing to stderr without panicking when it is closed ([`note!`]: `eprintln!` panics, and
//! a command then exits 101 instead of with its own code), and the one way commands show a
//! past time to people ([`ago`]).

use std::io::Write;

/// Writes `text` and a newline to stdout.
pub fn print_line(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")?;
    stdout.flush()?;
    Ok(())
}

/// `eprintln!`, except that a closed stderr (`2>&1 | head -1`) drops the text instead of
/// panicking: what a command says there is for people, never worth its exit code.
macro_rules! note {
    () => {
        $crate::output::note_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::note_line(format_args!($($arg)*))
    };
}
pub(crate) use note;

/// `eprint!` as [`note!`] writes it: no newline, nothing said when stderr is closed.
macro_rules! note_part {
    ($($arg:tt)*) => {
        $crate::output::note_text(format_args!($($arg)*))
    };
}
pub(crate) use note_part;

/// Writes a line to stderr; a closed stderr is not an error (see [`note!`]).
pub fn note_line(text: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Writes text to stderr, no newline; a closed stderr is not an error (see [`note!`]).
pub fn note_text(text: std::fmt::Arguments<'_>) {
    let _ = write!(std::io::stderr(), "{text}");
}

/// Pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    print_line(&serde_json::to_string_pretty(value)?)
}

/// Whether an error is a closed stdout.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// "3s", "5m", "2h", "4d" since a Unix time in milliseconds (a time to come: "0s").
pub fn ago(at_ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    match now.saturating_sub(at_ms) / 1000 {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
