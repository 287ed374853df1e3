//! Writing to stdout without panicking when the reader goes away (`switchboard tools | head`).

use std::io::Write;

/// Writes `text` and a newline to stdout.
pub fn print_line(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")?;
    stdout.flush()?;
    Ok(())
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
