//! Switchboard's way to new MCP servers: find them in the official MCP Registry (v0.1 API)
//! and local catalog files ([`Registry`]), resolve a `server.json` to one runnable choice
//! with exact versions only ([`resolve()`]), and install it into a directory of its own
//! ([`install()`]).
//!
//! It never runs a shell, never installs a version range or a moving tag, and never guesses
//! a value the user must give (those come back as [`Input`]s). It knows nothing of the
//! gateway: the caller decides what to approve, where to install and how to configure the
//! result.

mod client;
mod error;
pub mod install;
mod listing;
pub mod resolve;
pub mod server_json;

pub use client::{OFFICIAL_REGISTRY, Registry, Sources};
pub use error::RegistryError;
pub use install::{InstallError, Launch, ProgressFn, install, tools_available, uninstall};
pub use listing::{Listing, OFFICIAL_META, compare_versions};
pub use resolve::{Choice, Input, RemoteKind, Resolution, ResolveError, resolve};
pub use server_json::{
    Argument, EnvironmentVariable, KeyValueInput, Package, PackageTransport, Remote, ServerJson,
};
