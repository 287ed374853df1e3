//! Server identity: the stable id an operator gives each upstream in the config.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The id of one upstream server, as named in the config (`[servers.github]` → `github`).
///
/// Cheap to clone; compared and hashed by value.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServerId(Arc<str>);

impl ServerId {
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(Arc::from(id.as_ref()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl From<&str> for ServerId {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}
