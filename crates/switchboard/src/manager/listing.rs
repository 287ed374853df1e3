//! A registry listing as the operator sees it: its name, version, source, the command line
//! installing it would run and its inputs. Searches report each listing so; `look_up` finds
//! one exact version for a dry run, with the registries and catalogs of `[manager]`.

use serde_json::{Value, json};
use switchboard_core::config::ManagerConfig;
use switchboard_registry::{Listing, Registry, RegistryError, Sources};

/// `{name, title, description, version, source, install, inputs: [{name, required, secret}]}`;
/// `install` says why not where the listing cannot be installed.
pub fn summary(listing: &Listing) -> Value {
    let server = &listing.server;
    let (install, inputs) = match switchboard_registry::resolve(server) {
        Ok(resolution) => (
            Value::String(resolution.preview.clone()),
            resolution
                .inputs
                .iter()
                .map(|i| json!({"name": i.name, "required": i.required, "secret": i.secret}))
                .collect(),
        ),
        Err(error) => (json!(format!("cannot be installed: {error}")), Vec::new()),
    };
    json!({
        "name": server.name,
        "title": server.title,
        "description": server.description,
        "version": server.version,
        "source": listing.source,
        "install": install,
        "inputs": inputs,
    })
}

/// The [`summary`] of the listing named `name` at `version` (`None`: the latest) in the
/// registries and catalogs `settings` name; [`RegistryError::NotFound`] names where it was
/// looked for when none has it.
pub async fn look_up(
    settings: &ManagerConfig,
    name: &str,
    version: Option<&str>,
) -> Result<Value, RegistryError> {
    let registry = Registry::new(Sources {
        registries: settings.registries.clone(),
        catalogs: settings.catalogs.clone(),
        ttl: settings.registry_ttl,
    });
    Ok(summary(&registry.get(name, version).await?))
}
