//! Latency windows survive a restart: they are loaded per (environment, tool) the first time
//! the catalog shows a tool, and saved by the Host's maintenance task when something was
//! recorded, and at shutdown. A stats file that cannot be opened or written costs the
//! memory of past runs, never the gateway: it is logged and the gateway goes on.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use switchboard_budget::{Environment, LatencyStore, Sample};

use super::LatencyBudget;

/// The stats file.
pub struct Persistence {
    path: PathBuf,
    store: Mutex<LatencyStore>,
}

impl Persistence {
    /// Opens (creating) the stats file, and its directory.
    pub fn open(path: &Path) -> Result<Self, String> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        }
        let store = LatencyStore::open(path)
            .map_err(|error| format!("cannot open latency stats {}: {error}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            store: Mutex::new(store),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored samples of one tool (none when unreadable: logged).
    pub(crate) fn load(&self, environment: &Environment, key: &str) -> Vec<Sample> {
        let Ok(store) = self.store.lock() else {
            return Vec::new();
        };
        store
            .load_samples(environment, key)
            .unwrap_or_else(|error| {
                tracing::warn!(tool = key, %error, "cannot read stored latency samples");
                Vec::new()
            })
    }
}

impl LatencyBudget {
    /// Writes every tool's window to the stats file; returns how many were saved.
    pub fn save(&self) -> Result<usize, String> {
        let Some(persistence) = &self.persistence else {
            return Ok(0);
        };
        let tools = self.tools();
        let windows: Vec<_> = {
            let book = self.book();
            tools
                .values()
                .filter_map(|traits| {
                    let window = book.tool(&traits.key)?.window().clone();
                    (!window.is_empty())
                        .then(|| (traits.environment.clone(), traits.key.clone(), window))
                })
                .collect()
        };
        let mut store = persistence
            .store
            .lock()
            .map_err(|_| "the latency stats store is poisoned".to_owned())?;
        for (environment, key, window) in &windows {
            store
                .save_window(environment, key, window)
                .map_err(|error| format!("cannot save latency stats of {key}: {error}"))?;
        }
        Ok(windows.len())
    }
}
