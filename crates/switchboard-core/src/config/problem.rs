//! A config problem, located: `file:line:col: message` and a hint.

use std::fmt;

/// One problem in a config file. Line and column are 1-based (0 when unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub origin: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl Problem {
    pub fn new(
        origin: &str,
        line: usize,
        column: usize,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Self {
        Self {
            origin: origin.to_owned(),
            line,
            column,
            message: message.into(),
            hint,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.origin, self.message)?;
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.origin, self.line, self.column, self.message
            )?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found in one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<Problem>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
