//! A server config becomes a [`ServerPlan`]: its endpoint (a built-in's provider built, a
//! stdio command put under the sandbox launcher), the naming and overrides of its tools, and
//! the fingerprint of what its connection depends on, which decides whether a reload
//! restarts it.

use std::path::Path;
use std::sync::Arc;

use switchboard_core::ServerId;
use switchboard_core::catalog::ToolOverride;
use switchboard_core::config::{
    Config, EraPreference, SandboxConfig, ServerConfig, Transport, UpstreamTlsConfig,
};
use switchboard_mcp::upstream::http::TlsFiles;
use switchboard_mcp::upstream::{Endpoint, EraChoice, StdioCommand, UpstreamSpec};

use super::AssembleError;
use crate::host::ServerPlan;
use crate::manager::ManagerSlot;

/// The server plans of a config, in config order; disabled servers are left out.
pub fn plans(config: &Config) -> Result<Vec<ServerPlan>, AssembleError> {
    plans_linked(config, &ManagerSlot::default(), None)
}

/// [`plans`], with `manager` built-ins finding their manager in `slot`.
pub(super) fn plans_linked(
    config: &Config,
    slot: &ManagerSlot,
    launcher: Option<&Path>,
) -> Result<Vec<ServerPlan>, AssembleError> {
    config
        .servers
        .iter()
        .filter(|server| server.enabled)
        .map(|server| plan_reusing(config, server, |_| None, slot, launcher))
        .collect()
}

/// The plan of one server, not linked to any running Host (a `manager` built-in of it
/// answers that the manager is not running).
pub(crate) fn plan(
    config: &Config,
    server: &ServerConfig,
    launcher: Option<&Path>,
) -> Result<ServerPlan, AssembleError> {
    plan_reusing(config, server, |_| None, &ManagerSlot::default(), launcher)
}

/// The plan of `server`, taking the endpoint `reuse` gives for the plan's connection
/// fingerprint as it is (a reload keeps the running connection's endpoint — a built-in's
/// provider — when the fingerprint is the running one's, rather than building one to throw
/// away). The fingerprint is computed once: it reads the server's TLS files.
pub(crate) fn plan_reusing(
    config: &Config,
    server: &ServerConfig,
    reuse: impl FnOnce(&str) -> Option<Endpoint>,
    slot: &ManagerSlot,
    launcher: Option<&Path>,
) -> Result<ServerPlan, AssembleError> {
    let gateway = &config.gateway;
    let fingerprint = connection_fingerprint(config, server);
    let endpoint = match (reuse(&fingerprint), &server.transport) {
        (Some(endpoint), _) => endpoint,
        (None, transport) => {
            let mut endpoint = endpoint_of(server, transport, gateway.max_message_bytes, slot)?;
            if let (Endpoint::Stdio(command), Some(sandbox)) =
                (&mut endpoint, config.sandbox_of(server))
            {
                sandbox_command(&server.id, command, &sandbox, launcher)?;
            }
            endpoint
        }
    };
    let prefix = if gateway.prefix_tools {
        server.prefix.clone().unwrap_or_else(|| server.id.clone())
    } else {
        String::new()
    };
    Ok(ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new(&server.id),
            endpoint,
            era: match server.era {
                EraPreference::Auto => EraChoice::Auto,
                EraPreference::Legacy => EraChoice::Legacy,
                EraPreference::Modern => EraChoice::Modern,
            },
            connect_timeout: gateway.connect_timeout,
            discover_timeout: gateway.discover_timeout,
            max_message_bytes: gateway.max_message_bytes,
            instances: server.instances,
        },
        prefix,
        overrides: server
            .tools
            .iter()
            .map(|(tool, o)| {
                (
                    tool.clone(),
                    ToolOverride {
                        name: o.name.clone(),
                        description: o.description.clone(),
                        hidden: o.hidden,
                        category: o.category.clone(),
                        latency: o.latency,
                    },
                )
            })
            .collect(),
        call_timeout: server.call_timeout.unwrap_or(gateway.call_timeout),
        category: server.category.clone().unwrap_or_default(),
        fingerprint,
        pinned: server.trust == switchboard_core::config::Trust::Pinned,
    })
}

/// The endpoint a server's transport describes (a built-in's provider is built here).
fn endpoint_of(
    server: &ServerConfig,
    transport: &Transport,
    max_message_bytes: usize,
    slot: &ManagerSlot,
) -> Result<Endpoint, AssembleError> {
    Ok(match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Endpoint::Stdio(StdioCommand {
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
            cwd: cwd.clone(),
            max_message_bytes,
            wrapper: None,
            keep_env: None,
        }),
        Transport::Http { url, headers } => Endpoint::StreamableHttp {
            url: url.clone(),
            headers: headers.clone(),
            credentials: match &server.auth {
                Some(auth) => Some(Arc::new(
                    switchboard_mcp::upstream::http::UpstreamCredentials::new(auth)
                        .map_err(|error| AssembleError::server(&server.id, error))?,
                )),
                None => None,
            },
            tls: server.tls.as_ref().map(tls_files),
            public_only: server.public_only,
        },
        Transport::Sse { url, headers } => Endpoint::Sse {
            url: url.clone(),
            headers: headers.clone(),
            tls: server.tls.as_ref().map(tls_files),
            public_only: server.public_only,
        },
        Transport::Builtin { name, .. } if name == "manager" => Endpoint::InProcess(Arc::new(
            crate::manager::tools::ManagerTools::new(slot.clone()),
        )),
        Transport::Builtin { name, settings } => {
            let provider = switchboard_tools::builtin(name, settings)
                .map_err(|error| AssembleError::server(&server.id, error))?;
            Endpoint::InProcess(provider)
        }
    })
}

/// The files of `[servers.ID.tls]`, as the HTTP transports take them.
fn tls_files(tls: &UpstreamTlsConfig) -> TlsFiles {
    TlsFiles {
        ca: tls.ca.clone(),
        client: tls.cert.clone().zip(tls.key.clone()),
    }
}

/// Runs `command` under the sandbox launcher; refused without a launcher, so a configured
/// sandbox is never silently dropped.
fn sandbox_command(
    id: &str,
    command: &mut StdioCommand,
    sandbox: &SandboxConfig,
    launcher: Option<&Path>,
) -> Result<(), AssembleError> {
    let Some(launcher) = launcher else {
        return Err(AssembleError::SandboxWithoutLauncher {
            server: id.to_owned(),
        });
    };
    let launch = crate::sandbox::launch(
        sandbox,
        launcher,
        &command.command,
        &command.args,
        command.cwd.as_deref(),
    );
    command.wrapper = Some(launch.wrapper);
    command.keep_env = launch.keep_env;
    Ok(())
}

/// The hash of what a server's connection depends on: its transport (command, args, env, cwd,
/// url, headers, built-in and its settings), its TLS files (named and their contents),
/// `public_only`, auth, sandbox, era and number of instances (a new number starts
/// a new pool beside the old, as any other change of the connection does). Gateway-wide
/// bounds (connect timeout, message size) apply to the next connection and are left out, so
/// changing them restarts nothing.
pub fn connection_fingerprint(config: &Config, server: &ServerConfig) -> String {
    use sha2::{Digest, Sha256};
    let mut text = format!("{:?}\u{0}{:?}", server.transport, server.era);
    // No sandbox hashes as before sandboxes existed.
    if let Some(sandbox) = config.sandbox_of(server) {
        text.push_str(&format!("\u{0}sandbox={sandbox:?}"));
    }
    // One instance hashes as before pools existed.
    if server.instances.get() > 1 {
        text.push_str(&format!("\u{0}instances={}", server.instances));
    }
    // Nor does no tls. Its files count by name and by contents, so a reload after a
    // certificate was renewed over the same paths restarts the server, which reads them anew.
    let mut files = Vec::new();
    if let Some(tls) = &server.tls {
        text.push_str(&format!("\u{0}tls={tls:?}"));
        for path in [&tls.ca, &tls.cert, &tls.key].into_iter().flatten() {
            files.push(std::fs::read(path).unwrap_or_else(|error| error.to_string().into_bytes()));
        }
    }
    // Nor does public_only left false.
    if server.public_only {
        text.push_str("\u{0}public_only");
    }
    // No auth hashes as before it existed; its secret prints redacted, so it is added
    // itself (only a hash of the whole leaves this function).
    if let Some(auth) = &server.auth {
        text.push_str(&format!("\u{0}auth={auth:?}\u{0}"));
        text.push_str(auth.client_secret.expose());
    }
    // A built-in's API key prints redacted: a new key must still restart the server. Only
    // a hash of the whole leaves this function.
    if let Transport::Builtin { settings, .. } = &server.transport
        && let Some(key) = &settings.api_key
    {
        text.push('\u{0}');
        text.push_str(key.expose());
    }
    let mut digest = Sha256::new();
    digest.update(text.as_bytes());
    for contents in &files {
        digest.update((contents.len() as u64).to_le_bytes());
        digest.update(contents);
    }
    switchboard_core::hex::encode(&digest.finalize()[..8])
}
