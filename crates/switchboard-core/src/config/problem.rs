//! A config problem, located: `file:line:col: message` and a hint.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where config text came from: a file, or text handed over directly (shown as `<inline>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Inline,
}

impl Origin {
    /// The file, if the text came from one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Inline => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Inline => f.write_str("<inline>"),
        }
    }
}

/// `"<inline>"` is [`Origin::Inline`]; anything else names a file.
impl From<&str> for Origin {
    fn from(name: &str) -> Self {
        if name == "<inline>" {
            Self::Inline
        } else {
            Self::File(PathBuf::from(name))
        }
    }
}

impl From<&Path> for Origin {
    fn from(path: &Path) -> Self {
        Self::File(path.to_path_buf())
    }
}

/// One problem in a config file. Line and column are 1-based, the column counted in
/// characters; both are 0 when the problem has no place in the text (an unreadable file).
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
