//! `[shared]`: what the replicas of one deployment share. Here, the key ring that seals
//! session ids and `requestState` so that any replica opens what another sealed
//! (docs/scale-out.md).
//!
//! ```toml
//! [shared]
//! keys = "/etc/switchboard/keys.json"  # made by `switchboard keys create`; relative paths
//!                                      # are taken from the config file's directory
//! ```

use std::path::PathBuf;

use super::tree::Node;
use super::validate::Walk;

pub(super) const SHARED_KEYS: [&str; 1] = ["keys"];

/// `[shared]`: state the replicas of a deployment share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedConfig {
    /// The key ring file (`switchboard keys create FILE`); without one, each process seals
    /// with a random key of its own (one replica).
    pub keys: Option<PathBuf>,
}

impl Walk<'_> {
    pub(super) fn shared(&mut self, node: &Node) -> SharedConfig {
        let mut shared = SharedConfig::default();
        for (key, key_pos, value) in self.table(node, "shared") {
            let what = format!("shared.{key}");
            match key.as_str() {
                "keys" => shared.keys = self.path(value, &what),
                other => self.unknown(*key_pos, other, "shared", &SHARED_KEYS),
            }
        }
        shared
    }
}
