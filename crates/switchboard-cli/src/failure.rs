//! The line a failed command prints on stderr: the error and its causes, each said once.

/// `error` and its causes joined by ": ", as anyhow's `{:#}` joins them, leaving out a cause
/// whose text the line already holds: many errors name their source in their own message
/// (`cannot read catalog FILE: No such file or directory`) and report it as their source
/// too, which `{:#}` would print a second time.
pub fn describe(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}
