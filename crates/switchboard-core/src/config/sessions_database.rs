//! `sessions` keeps its summaries in memory's store: a `sessions` built-in that names no
//! `database` takes the one the config's `memory` built-in names (the first, in file order,
//! that names one), so `[servers.memory] database = "campaign.db"` is enough for both. Without
//! a memory database in the config, both keep the shared default
//! (`$XDG_DATA_HOME/switchboard/memory.db`).

use super::model::{ServerConfig, Transport};

/// Fills in each `sessions` built-in's missing `database` from the `memory` built-in's.
pub(super) fn follow_memory_database(servers: &mut [ServerConfig]) {
    let memory = servers.iter().find_map(|server| match &server.transport {
        Transport::Builtin { name, settings } if name == "memory" => settings.database.clone(),
        _ => None,
    });
    let Some(memory) = memory else {
        return;
    };
    for server in servers {
        if let Transport::Builtin { name, settings } = &mut server.transport
            && name == "sessions"
            && settings.database.is_none()
        {
            settings.database = Some(memory.clone());
        }
    }
}
