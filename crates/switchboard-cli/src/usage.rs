//! [`UsageError`]: a command given flags or arguments it cannot run with — exit code 2, as
//! clap's own parse errors, apart from a failure of the work itself (exit 1).

/// A usage error: what was asked cannot be done as asked, and how to ask instead.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// An error for `main` to exit 2 with.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Whether `error` (or what it wraps) is a usage error.
pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<UsageError>())
}
