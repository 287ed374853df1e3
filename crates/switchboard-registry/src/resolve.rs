//! [`resolve`]: from a `server.json` to one runnable [`Choice`] — an npm, PyPI or OCI package
//! speaking stdio (in that order of preference), else a remote endpoint — with exact versions
//! only, the values the user must supply as [`Input`]s, and a preview of what will run.
//!
//! Nothing here runs anything, and nothing is ever handed to a shell: arguments are argv
//! entries. Values that need the user (environment variables and headers without a fixed
//! value) are never guessed; they are returned as inputs for the caller to fill.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::server_json::{Argument, KeyValueInput, Package, ServerJson};

mod exact;

pub use exact::inexact_reason;
use exact::{DEFAULT_BASES, identifier_problem, npm_inexact_reason, oci_image};

/// A value the user must (or may) supply: an environment variable or a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    pub secret: bool,
    pub default: Option<String>,
    pub choices: Vec<String>,
    pub format: Option<String>,
}

/// The kind of a remote endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// Streamable HTTP.
    Http,
    /// Legacy HTTP+SSE.
    Sse,
}

/// What will be installed and run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Npm {
        package: String,
        version: String,
        runtime_args: Vec<String>,
        package_args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Pypi {
        package: String,
        version: String,
        package_args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Oci {
        /// The image reference with its `@digest` or `:tag`.
        image: String,
        runtime_args: Vec<String>,
        package_args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Remote {
        transport: RemoteKind,
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// A server resolved to one way of running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub name: String,
    /// The server's version (from `server.json`).
    pub version: String,
    pub choice: Choice,
    /// Values the caller must fill before running (not in `choice`'s env or headers).
    pub inputs: Vec<Input>,
    /// The command line (or URL) shown before anything runs.
    pub preview: String,
}

/// Why a `server.json` cannot be resolved.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ResolveError {
    /// Nothing the gateway can run: no npm/PyPI/OCI stdio package and no HTTP/SSE remote.
    #[error("server '{name}' offers nothing Switchboard can run (it needs an npm, PyPI or OCI package over stdio, or a streamable-http or sse remote); it offers: {}", offers_note(.offers))]
    Unsupported { name: String, offers: Vec<String> },
    /// The package's version is missing, a range, or a moving tag.
    #[error(
        "{registry} package '{package}' of server '{name}': version '{version}' is not exact ({reason}); only exact versions are installed"
    )]
    InexactVersion {
        name: String,
        registry: String,
        package: String,
        version: String,
        reason: &'static str,
    },
    /// A package from a registry other than the default one.
    #[error(
        "{registry} package '{package}' of server '{name}' comes from {base_url}; only the default {registry} registry is supported"
    )]
    OtherRegistry {
        name: String,
        registry: String,
        package: String,
        base_url: String,
    },
    /// An OCI package asking for more than a closed container (a runtime flag that widens it,
    /// a variable that steers the docker client).
    #[error("oci package '{package}' of server '{name}': {reason}")]
    Unsafe {
        name: String,
        package: String,
        reason: String,
    },
    /// A remote whose address is one no registry server should have: the machine's own
    /// link-local services (a cloud's instance metadata), the unspecified address.
    #[error("remote {url} of server '{name}': {reason}")]
    UnsafeRemote {
        name: String,
        url: String,
        reason: &'static str,
    },
    /// A package identifier that is not a plain package name or image reference (a path, a
    /// URL, a flag), which the installer would take for something else.
    #[error("{registry} package '{package}' of server '{name}': {reason}")]
    BadIdentifier {
        name: String,
        registry: String,
        package: String,
        reason: &'static str,
    },
    /// A required argument with neither a value nor a default.
    #[error(
        "package '{package}' of server '{name}': argument '{argument}' needs a value and has neither a value nor a default"
    )]
    ArgumentNeedsValue {
        name: String,
        package: String,
        argument: String,
    },
}

fn offers_note(offers: &[String]) -> String {
    if offers.is_empty() {
        "no packages and no remotes".to_owned()
    } else {
        offers.join(", ")
    }
}

/// Picks how to run `server`; see the module doc for the order.
pub fn resolve(server: &ServerJson) -> Result<Resolution, ResolveError> {
    for registry in ["npm", "pypi", "oci"] {
        let package = server.packages.iter().find(|p| {
            p.registry_type.eq_ignore_ascii_case(registry)
                && p.transport.kind.eq_ignore_ascii_case("stdio")
        });
        if let Some(package) = package {
            return resolve_package(server, registry, package);
        }
    }
    let remote = server.remotes.iter().find_map(|remote| {
        let kind = match remote.kind.to_ascii_lowercase().as_str() {
            "streamable-http" => RemoteKind::Http,
            "sse" => RemoteKind::Sse,
            _ => return None,
        };
        Some((kind, remote))
    });
    if let Some((transport, remote)) = remote {
        if let Some(reason) = unreachable_on_purpose(&remote.url) {
            return Err(ResolveError::UnsafeRemote {
                name: server.name.clone(),
                url: remote.url.clone(),
                reason,
            });
        }
        let (headers, inputs) = split_headers(&remote.headers);
        let kind = match transport {
            RemoteKind::Http => "streamable HTTP",
            RemoteKind::Sse => "SSE",
        };
        let preview = with_notes(format!("connect to {} ({kind})", remote.url), &[], &inputs);
        return Ok(Resolution {
            name: server.name.clone(),
            version: server.version.clone(),
            choice: Choice::Remote {
                transport,
                url: remote.url.clone(),
                headers,
            },
            inputs,
            preview,
        });
    }
    let offers = server
        .packages
        .iter()
        .map(|p| {
            format!(
                "{} package {} ({})",
                p.registry_type, p.identifier, p.transport.kind
            )
        })
        .chain(
            server
                .remotes
                .iter()
                .map(|r| format!("{} remote {}", r.kind, r.url)),
        )
        .collect();
    Err(ResolveError::Unsupported {
        name: server.name.clone(),
        offers,
    })
}

fn resolve_package(
    server: &ServerJson,
    registry: &str,
    package: &Package,
) -> Result<Resolution, ResolveError> {
    let name = &server.name;
    if let Some(base) = package.registry_base_url.as_deref()
        && let Some((_, defaults)) = DEFAULT_BASES.iter().find(|(r, _)| *r == registry)
        && !defaults.contains(&base.trim_end_matches('/'))
    {
        return Err(ResolveError::OtherRegistry {
            name: name.clone(),
            registry: registry.to_owned(),
            package: package.identifier.clone(),
            base_url: base.to_owned(),
        });
    }
    if let Some(reason) = identifier_problem(registry, &package.identifier) {
        return Err(ResolveError::BadIdentifier {
            name: name.clone(),
            registry: registry.to_owned(),
            package: package.identifier.clone(),
            reason,
        });
    }
    let runtime_args = arguments(server, package, &package.runtime_arguments)?;
    let package_args = arguments(server, package, &package.package_arguments)?;
    let mut env = BTreeMap::new();
    let mut fixed = Vec::new();
    let mut inputs = Vec::new();
    for variable in &package.environment_variables {
        match &variable.value {
            Some(value) => {
                env.insert(variable.name.clone(), value.clone());
                let shown = if variable.is_secret {
                    "<secret>"
                } else {
                    value
                };
                fixed.push(format!("{}={shown}", variable.name));
            }
            None => inputs.push(Input {
                name: variable.name.clone(),
                description: variable.description.clone(),
                required: variable.is_required,
                secret: variable.is_secret,
                default: variable.default.clone(),
                choices: variable.choices.clone(),
                format: variable.format.clone(),
            }),
        }
    }
    let inexact = |version: &str, reason| ResolveError::InexactVersion {
        name: name.clone(),
        registry: registry.to_owned(),
        package: package.identifier.clone(),
        version: version.to_owned(),
        reason,
    };
    let exact = |version: Option<&str>, reason_of: fn(&str) -> Option<&'static str>| {
        let version = version.unwrap_or("");
        match reason_of(version) {
            Some(reason) => Err(inexact(version, reason)),
            None => Ok(version.to_owned()),
        }
    };
    let (choice, command) = match registry {
        "npm" => {
            let version = exact(package.version.as_deref(), npm_inexact_reason)?;
            let command = format!(
                "npm install --prefix <dir> {}@{version}, then <dir>/node_modules/.bin/<bin of {}>{}",
                package.identifier,
                package.identifier,
                argv_note(&package_args)
            );
            let choice = Choice::Npm {
                package: package.identifier.clone(),
                version,
                runtime_args,
                package_args,
                env: env.clone(),
            };
            (choice, command)
        }
        "pypi" => {
            let version = exact(package.version.as_deref(), inexact_reason)?;
            let command = format!(
                "python3 -m venv <dir>/venv, <dir>/venv/bin/python -m pip install {}=={version}, then <dir>/venv/bin/<console script of {}>{}",
                package.identifier,
                package.identifier,
                argv_note(&package_args)
            );
            let choice = Choice::Pypi {
                package: package.identifier.clone(),
                version,
                package_args,
                env: env.clone(),
            };
            (choice, command)
        }
        _ => {
            let image = oci_image(&package.identifier, package.version.as_deref())
                .map_err(|(version, reason)| inexact(&version, reason))?;
            // The container is the boundary: no runtime flag may widen it, and no variable
            // may steer the `docker` client itself (the variables are set on its process).
            if let Some(flag) = oci_disallowed_flag(&runtime_args) {
                return Err(ResolveError::Unsafe {
                    name: name.clone(),
                    package: package.identifier.clone(),
                    reason: format!(
                        "runtime argument '{flag}' is not allowed (only --init, --read-only, --network none, --cap-drop, --security-opt no-new-privileges and -e/--env NAME: nothing that widens the container)"
                    ),
                });
            }
            if let Some(variable) = env
                .keys()
                .chain(inputs.iter().map(|i| &i.name))
                .find(|name| !oci_variable_allowed(name))
            {
                return Err(ResolveError::Unsafe {
                    name: name.clone(),
                    package: package.identifier.clone(),
                    reason: format!(
                        "environment variable '{variable}' would steer the docker client itself (DOCKER_*, LD_*, PATH are refused)"
                    ),
                });
            }
            let command = format!(
                "docker pull {image}, then docker run -i --rm{}{} {image}{}",
                argv_note(&docker_env_args(
                    env.keys().chain(inputs.iter().map(|i| &i.name))
                )),
                argv_note(&runtime_args),
                argv_note(&package_args)
            );
            let choice = Choice::Oci {
                image,
                runtime_args,
                package_args,
                env: env.clone(),
            };
            (choice, command)
        }
    };
    Ok(Resolution {
        name: name.clone(),
        version: server.version.clone(),
        choice,
        preview: with_notes(command, &fixed, &inputs),
        inputs,
    })
}

/// The first OCI runtime argument that would open the container wider than
/// `docker run -i --rm` leaves it. Allowed: `--init`, `--read-only`, `--network none`,
/// `--cap-drop X`, `--security-opt no-new-privileges`, and variables passed by name
/// (`-e NAME`, `--env NAME`).
fn oci_disallowed_flag(args: &[String]) -> Option<&str> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let value = args.get(index + 1).map(String::as_str);
        let name_only =
            |v: Option<&str>| v.is_some_and(|v| !v.contains('=') && !v.starts_with('-'));
        let step = match arg.as_str() {
            "--init" | "--read-only" | "-i" | "--rm" | "--network=none" => 1,
            "--security-opt=no-new-privileges" => 1,
            "--network" if value == Some("none") => 2,
            "--security-opt" if value == Some("no-new-privileges") => 2,
            "--cap-drop" if value.is_some() => 2,
            "-e" | "--env" if name_only(value) => 2,
            other if other.starts_with("--cap-drop=") => 1,
            _ => return Some(arg),
        };
        index += step;
    }
    None
}

/// Whether a variable set on the `docker` client's process leaves the client alone.
fn oci_variable_allowed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    !(upper.starts_with("DOCKER_") || upper.starts_with("LD_") || upper == "PATH")
}

/// The argv of `args`: positional → its value or default; named → the flag, then its value
/// or default (the flag alone when it takes none).
fn arguments(
    server: &ServerJson,
    package: &Package,
    args: &[Argument],
) -> Result<Vec<String>, ResolveError> {
    let mut argv = Vec::new();
    for arg in args {
        let value = arg.value.clone().or_else(|| arg.default.clone());
        let label = arg
            .name
            .clone()
            .or_else(|| arg.value_hint.clone())
            .unwrap_or_else(|| arg.kind.clone());
        let needs_value = || ResolveError::ArgumentNeedsValue {
            name: server.name.clone(),
            package: package.identifier.clone(),
            argument: label.clone(),
        };
        if arg.kind.eq_ignore_ascii_case("named") {
            let Some(flag) = arg.name.as_deref().filter(|n| !n.is_empty()) else {
                return Err(needs_value());
            };
            let flag = if flag.starts_with('-') {
                flag.to_owned()
            } else {
                format!("--{flag}")
            };
            match value {
                Some(value) => argv.extend([flag, value]),
                // A flag that names a value it lacks: required → error, optional → left out.
                None if arg.value_hint.is_some() && arg.is_required => return Err(needs_value()),
                None if arg.value_hint.is_some() => {}
                None => argv.push(flag),
            }
        } else {
            match value {
                Some(value) => argv.push(value),
                None if arg.is_required => return Err(needs_value()),
                None => {}
            }
        }
    }
    Ok(argv)
}

/// `-e NAME` for each variable: `docker run` passes the variable from its own environment
/// into the container, so no value appears on the command line.
pub(crate) fn docker_env_args<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    names
        .flat_map(|name| ["-e".to_owned(), name.clone()])
        .collect()
}

/// Fixed headers into the map, the others into inputs.
fn split_headers(headers: &[KeyValueInput]) -> (BTreeMap<String, String>, Vec<Input>) {
    let mut fixed = BTreeMap::new();
    let mut inputs = Vec::new();
    for header in headers {
        match &header.value {
            Some(value) => {
                fixed.insert(header.name.clone(), value.clone());
            }
            None => inputs.push(Input {
                name: header.name.clone(),
                description: header.description.clone(),
                required: header.is_required,
                secret: header.is_secret,
                default: header.default.clone(),
                choices: Vec::new(),
                format: None,
            }),
        }
    }
    (fixed, inputs)
}

fn argv_note(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || c == '\'') {
                format!(" '{}'", arg.replace('\'', "'\\''"))
            } else {
                format!(" {arg}")
            }
        })
        .collect()
}

fn with_notes(mut preview: String, fixed: &[String], inputs: &[Input]) -> String {
    if !fixed.is_empty() {
        preview.push_str(&format!("; with {}", fixed.join(", ")));
    }
    if !inputs.is_empty() {
        let names: Vec<String> = inputs
            .iter()
            .map(|input| {
                let mut notes = Vec::new();
                if input.required {
                    notes.push("required");
                }
                if input.secret {
                    notes.push("secret");
                }
                if notes.is_empty() {
                    input.name.clone()
                } else {
                    format!("{} ({})", input.name, notes.join(", "))
                }
            })
            .collect();
        preview.push_str(&format!("; needs {}", names.join(", ")));
    }
    preview
}

/// Why a registry remote's URL is refused, if it is: a link-local host (169.254.0.0/16,
/// fe80::/10: where clouds serve instance metadata and credentials), an unspecified one
/// (0.0.0.0, ::), or a metadata service's name. A server listed in a registry connects out to
/// the internet; these would turn a model's request into a read of the gateway's machine.
pub(crate) fn unreachable_on_purpose(url: &str) -> Option<&'static str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(host, _)| host),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if ["metadata.google.internal", "metadata", "instance-data"].contains(&host.as_str()) {
        return Some("a cloud metadata service's name is refused");
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) if ip.is_link_local() => {
            Some("a link-local address (169.254.0.0/16) is refused")
        }
        Ok(std::net::IpAddr::V6(ip)) if (ip.segments()[0] & 0xffc0) == 0xfe80 => {
            Some("a link-local address (fe80::/10) is refused")
        }
        Ok(ip) if ip.is_unspecified() => Some("an unspecified address is refused"),
        _ => None,
    }
}
