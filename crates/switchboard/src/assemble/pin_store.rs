//! The pin store of a Host built from a config: the embedder's own (`HostOptions::pins`),
//! else the one the config names — `gateway.pins`, else `pins.json` beside the ledger, the
//! file `switchboard serve` keeps them in ([`crate::data_dir::pins_path`]). A config whose
//! servers say `trust = "pinned"` is never run with their definitions unpinned: where no
//! file can be named, building the Host is refused.
//!
//! The store is opened whether or not a server is pinned now: a reload or the server
//! manager (which adds every server it vets *closed*, see [`crate::pins`]) may bring one
//! later. Opening reads the file if it exists; it is written only when a pinned server's
//! definitions are first pinned or an operator approves one. Hosts of one process that name
//! the same file share one store ([`shared_store`]), which holds what is held back and
//! approved; processes sharing the file change it under its lock (`crate::pins`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use switchboard_core::config::{Config, Trust};

use super::AssembleError;
use crate::pins::PinStore;

/// `given`, else the store at the config's pins file.
pub(super) fn pin_store(
    config: &Config,
    given: Option<Arc<PinStore>>,
) -> Result<Arc<PinStore>, AssembleError> {
    if let Some(store) = given {
        return Ok(store);
    }
    if let Some(path) = crate::data_dir::pins_path(config) {
        return Ok(shared_store(path));
    }
    let pinned: Vec<String> = config
        .servers
        .iter()
        .filter(|server| server.trust == Trust::Pinned)
        .map(|server| server.id.clone())
        .collect();
    if pinned.is_empty() {
        // Nothing is pinned now; a server pinned later is pinned for this process.
        return Ok(Arc::new(PinStore::open(None)));
    }
    Err(AssembleError::NoPlaceForPins { servers: pinned })
}

/// The store of the pins file at `path` this process has open, else a newly opened one.
fn shared_store(path: PathBuf) -> Arc<PinStore> {
    static OPEN: Mutex<Option<HashMap<PathBuf, Weak<PinStore>>>> = Mutex::new(None);
    let key = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let open = open.get_or_insert_with(HashMap::new);
    open.retain(|_, store| store.strong_count() > 0);
    if let Some(store) = open.get(&key).and_then(Weak::upgrade) {
        return store;
    }
    let store = Arc::new(PinStore::open(Some(path)));
    open.insert(key, Arc::downgrade(&store));
    store
}
