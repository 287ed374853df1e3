//! An install: look the server up, resolve its `server.json` (the command line is a step
//! before anything runs; a model's remote must be public, `model_remotes`, and its entry is
//! written `public_only`), clear a stale install of the same server id, wait for its inputs,
//! install it into `install_dir/SERVER` (each step within `[manager] step_timeout`), then
//! vet and add it like any entry (`Job::add`); a package that runs here (npm, PyPI) runs
//! under `[manager] sandbox`, written into its entry (`confinement`). A failure or a cancel after the install
//! removes the directory again. Only `install_dir/SERVER` is ever removed
//! ([`is_install_dir`]), whatever an install record says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use switchboard_core::config::ManagerConfig;
use switchboard_core::config::edit::{EntryTransport, ServerEntry};
use switchboard_registry::{Choice, Launch, Resolution};

use super::confinement::{self, Confinement};
use super::kept_home::{self, HomeOwner};
use super::model_remotes;
use super::{Job, Outcome, WorkError, failed, server_id_for};
use crate::manager::operation::{Activation, Request, Requester, Waiting, Work};
use crate::manager::{Installed, Manager, inputs, now_ms};

/// Screens the values given with an install before the request is kept: each must name an
/// input of the server; secret ones are dropped from the request and returned, written
/// nowhere yet — the caller keeps them ([`inputs::Screened::keep`]) once the request is
/// admitted, so a refused request overwrites no secret. Other requests pass as they are.
pub(crate) async fn screen_values(
    manager: &Manager,
    mut request: Request,
) -> Result<(Request, Option<inputs::Screened>), String> {
    let Work::Install {
        name,
        version,
        server,
        values,
        ..
    } = &mut request.work
    else {
        return Ok((request, None));
    };
    if values.is_empty() {
        return Ok((request, None));
    }
    let settings = manager
        .host()
        .and_then(|host| host.config())
        .map(|config| config.manager.clone())
        .unwrap_or_default();
    let listing = manager
        .registry(&settings)
        .get(name, version.as_deref())
        .await
        .map_err(|error| format!("cannot check the values given for {name}: {error}"))?;
    let resolution = switchboard_registry::resolve(&listing.server).map_err(|e| e.to_string())?;
    let server = server.get_or_insert_with(|| server_id_for(name)).clone();
    let screened = inputs::screen(&server, &resolution.inputs, std::mem::take(values))?;
    values.clone_from(&screened.plain);
    Ok((request, Some(screened)))
}

/// `docker run`'s arguments without the `-e NAME` / `--env NAME` of a variable the entry
/// does not set: docker passes such a name from its own environment, which is the gateway's,
/// so an optional input left empty (or a runtime argument naming `GITHUB_TOKEN`) would hand
/// the container the gateway's own value.
/// Only docker's own options are looked at: they end at the image (the first argument that
/// is neither an option nor an option's value); what follows is the server's.
fn passing_only_set_variables(args: Vec<String>, env: &BTreeMap<String, String>) -> Vec<String> {
    const TAKING_A_VALUE: [&str; 5] = ["-e", "--env", "--network", "--security-opt", "--cap-drop"];
    let mut kept = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    // `run` itself.
    kept.extend(args.next());
    while let Some(arg) = args.next() {
        if !arg.starts_with('-') {
            // The image: the rest is the server's.
            kept.push(arg);
            break;
        }
        if !TAKING_A_VALUE.contains(&arg.as_str()) {
            kept.push(arg);
            continue;
        }
        let Some(value) = args.next() else {
            kept.push(arg);
            break;
        };
        let unset =
            (arg == "-e" || arg == "--env") && !value.contains('=') && !env.contains_key(&value);
        if !unset {
            kept.push(arg);
            kept.push(value);
        }
    }
    kept.extend(args);
    kept
}

/// The config entry of a launch. Every string that came from the `server.json` is written
/// with `$` doubled, so no `${VAR}` in it is ever substituted: a registry entry cannot make
/// the gateway hand it a variable or a secret. Only the inputs' own `${…}` references
/// (`env`, made by [`inputs::entries`]) stay references. A remote is written `public_only`
/// when `public_only` says ([`public_only_remote`]).
fn transport_of(
    launch: Launch,
    env: BTreeMap<String, String>,
    public_only: bool,
) -> EntryTransport {
    let literal = |text: String| switchboard_core::config::literal(&text);
    let literals = |map: BTreeMap<String, String>| {
        map.into_iter()
            .map(|(k, v)| (k, literal(v)))
            .collect::<BTreeMap<_, _>>()
    };
    match launch {
        Launch::Stdio {
            command,
            args,
            env: fixed,
        } => {
            let env: BTreeMap<String, String> = literals(fixed).into_iter().chain(env).collect();
            let args = if command == "docker" {
                passing_only_set_variables(args, &env)
            } else {
                args
            };
            EntryTransport::Stdio {
                command: literal(command),
                args: args.into_iter().map(literal).collect(),
                env,
                cwd: None,
            }
        }
        Launch::Http { url, headers } => EntryTransport::Http {
            url: literal(url),
            headers: literals(headers).into_iter().chain(env).collect(),
            tls: None,
            public_only,
        },
        Launch::Sse { url, headers } => EntryTransport::Sse {
            url: literal(url),
            headers: literals(headers).into_iter().chain(env).collect(),
            tls: None,
            public_only,
        },
    }
}

/// Whether a remote installed for `by` is held to public addresses at every connection
/// (`public_only`, `model_remotes`): a model's, unless `[manager] allow_private_remotes`.
fn public_only_remote(by: Requester, settings: &ManagerConfig) -> bool {
    by == Requester::Model && !settings.allow_private_remotes
}

/// An install's failure as the operation's: a step past `[manager] step_timeout` says so.
pub(super) fn install_error(error: switchboard_registry::InstallError) -> WorkError {
    match error {
        switchboard_registry::InstallError::Cancelled => WorkError::Cancelled,
        error @ switchboard_registry::InstallError::TimedOut { .. } => {
            failed(format!("{error} ([manager] step_timeout)"))
        }
        error => failed(error),
    }
}

/// Where the manager installs servers now: `[manager] install_dir`, else the default, as an
/// absolute path.
pub(super) fn install_root(settings: &ManagerConfig) -> Result<PathBuf, WorkError> {
    let root = settings
        .install_dir
        .clone()
        .unwrap_or_else(crate::manager::default_install_dir);
    std::path::absolute(&root).map_err(|e| {
        failed(format!(
            "cannot resolve [manager] install_dir {}: {e}",
            root.display()
        ))
    })
}

/// Whether `dir` is exactly `root/SERVER`, for a valid server id: the only directory the
/// manager installs a server into, so the only one it removes. A path read from an install
/// record (which a hand edit, or on PostgreSQL any replica, may have written: `root/..`,
/// `/`) is held to this before anything is deleted.
pub(super) fn is_install_dir(root: &Path, server: &str, dir: &Path) -> bool {
    crate::manager::valid_server_id(server)
        && std::path::absolute(dir).is_ok_and(|dir| dir == root.join(server))
}

/// Removes an install directory off the runtime's threads (a `node_modules` is thousands of
/// files).
pub(super) async fn remove_dir(dir: &Path) -> Result<(), String> {
    let owned = dir.to_owned();
    tokio::task::spawn_blocking(move || switchboard_registry::uninstall(&owned))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot remove {}: {e}", dir.display()))
}

impl Job<'_> {
    pub(super) async fn install(
        &self,
        name: &str,
        version: Option<&str>,
        server: Option<&str>,
        values: &BTreeMap<String, String>,
        activation: Activation,
    ) -> Outcome {
        let registry = self.manager.registry(self.settings);
        let wanted = version.map_or_else(|| name.to_owned(), |v| format!("{name}@{v}"));
        self.step(5, &format!("looking up {wanted}"));
        let listing = self
            .or_cancel(registry.get(name, version))
            .await?
            .map_err(failed)?;
        let resolution = switchboard_registry::resolve(&listing.server).map_err(failed)?;
        if let Choice::Remote { url, .. } = &resolution.choice
            && public_only_remote(self.request.by, self.settings)
        {
            self.or_cancel(model_remotes::check_public(url))
                .await?
                .map_err(failed)?;
        }
        let server_id = server.map_or_else(|| server_id_for(name), str::to_owned);
        if self
            .host
            .config()
            .is_some_and(|c| c.server(&server_id).is_some())
        {
            return Err(failed(format!(
                "a server named '{server_id}' is already configured; ask again with another server name"
            )));
        }
        self.step(
            10,
            &format!(
                "found {} {} in {}; will run: {}",
                listing.server.name, listing.server.version, listing.source, resolution.preview
            ),
        );
        // Whatever ends this short of success, `Manager::finish` removes the secrets given
        // for it (`Operation::secrets`).
        self.installing(&server_id, &listing, &resolution, values, activation)
            .await
    }

    async fn installing(
        &self,
        server_id: &str,
        listing: &switchboard_registry::Listing,
        resolution: &Resolution,
        values: &BTreeMap<String, String>,
        activation: Activation,
    ) -> Outcome {
        let server_id = server_id.to_owned();
        let root = install_root(self.settings)?;
        let dir = root.join(&server_id);
        if !is_install_dir(&root, &server_id, &dir) {
            return Err(failed(format!(
                "'{server_id}' cannot name a directory of the manager's"
            )));
        }
        // Before anything is downloaded: a package that would run confined needs a launcher.
        let confinement = Confinement::of(self.host, self.settings, resolution, &dir)?;
        // Before the inputs: the earlier install's secrets are under the keys this one's
        // take, so they go first, and never a key given for this operation.
        self.clear_stale_install(&server_id, &root).await?;
        let values = self.inputs(&server_id, resolution, values.clone()).await?;
        if dir.exists() {
            // Left by a run that died mid-install: nothing refers to it.
            remove_dir(&dir).await.map_err(failed)?;
        }
        self.step(15, &format!("installing into {}", dir.display()));
        let progress = |percent: u8, message: &str| {
            let scaled = 15 + u8::try_from(u16::from(percent.min(100)) * 55 / 100).unwrap_or(55);
            self.step(scaled, message);
        };
        let launch = switchboard_registry::install(
            resolution,
            &dir,
            self.settings.step_timeout,
            self.cancel,
            &progress,
        )
        .await
        .map_err(install_error)?;
        let owned = self.manager.owned_secrets(self.id);
        let mut env = inputs::entries(&server_id, &resolution.inputs, &values, &owned);
        if let Some(confinement) = &confinement {
            let checked = match self.request.by {
                Requester::Model => confinement::check_arguments(&launch, &dir),
                _ => Ok(()),
            };
            if let Err(error) = checked.and_then(|()| confinement.prepare()) {
                if let Err(e) = remove_dir(&dir).await {
                    tracing::warn!("{e}");
                }
                return Err(error);
            }
            env.extend(confinement.env());
        }
        // What the same server saved in its home before this install again (`kept_home`).
        let owner = HomeOwner {
            package: listing.server.name.clone(),
            agent: self.request.agent.clone(),
        };
        match kept_home::restore_home(&root, &server_id, &dir, &owner) {
            Ok(true) => self.step(72, "kept the server's home from its earlier install"),
            Ok(false) => {}
            Err(error) => {
                if let Err(e) = remove_dir(&dir).await {
                    tracing::warn!("{e}");
                }
                return Err(error);
            }
        }
        let public_only = public_only_remote(self.request.by, self.settings);
        let entry = ServerEntry {
            transport: transport_of(launch, env, public_only),
            enabled: None,
            trust: Some(self.settings.trust),
            sandbox: confinement.map(|c| Box::new(c.entry())),
        };
        let installed = Installed {
            agent: self.request.agent.clone(),
            server: server_id.clone(),
            name: listing.server.name.clone(),
            version: listing.server.version.clone(),
            dir: dir.clone(),
            operation: self.id.to_owned(),
            installed_ms: now_ms(),
            secrets: inputs::stored_secret_keys(&server_id, &resolution.inputs, &owned),
            replica: self.manager.replica(),
        };
        let origin = json!({
            "name": listing.server.name,
            "version": listing.server.version,
            "source": listing.source,
            "command": resolution.preview,
        });
        let added = self.add(&server_id, entry, activation, Some(origin)).await;
        match added {
            Ok(result) => {
                // The server runs and is in the config: a record that cannot be kept costs
                // only its clean uninstall later, so the operation still succeeded.
                if let Err(error) = self.manager.record_install(&installed) {
                    tracing::warn!(
                        server = server_id,
                        "the install of '{server_id}' is not recorded ({error}): removing it will not delete {}",
                        dir.display()
                    );
                }
                Ok(result)
            }
            Err(error) => {
                // Its home waits for the next try, as the earlier install's did.
                if let Err(WorkError::Failed(e)) =
                    kept_home::keep_home(&root, &server_id, &dir, &owner)
                {
                    tracing::warn!("{e}");
                }
                if let Err(e) = remove_dir(&dir).await {
                    tracing::warn!("{e}");
                }
                Err(error)
            }
        }
    }

    /// Clears the record of an earlier install of `server`, taken out of the config since by
    /// hand or by `servers remove` (a configured one was refused): its directory, when it is
    /// `root/SERVER`, and its secrets — except those given for this operation, which are
    /// under the same keys.
    async fn clear_stale_install(&self, server: &str, root: &Path) -> Result<(), WorkError> {
        let Some(stale) = self.manager.installed_server(server).map_err(failed)? else {
            return Ok(());
        };
        if is_install_dir(root, server, &stale.dir) {
            self.step(
                12,
                &format!("clearing the earlier install in {}", stale.dir.display()),
            );
            kept_home::keep_home(root, server, &stale.dir, &HomeOwner::of(&stale))?;
            remove_dir(&stale.dir).await.map_err(failed)?;
        } else {
            self.step(
                12,
                &format!(
                    "leaving the earlier install's {} in place: it is not {}",
                    stale.dir.display(),
                    root.join(server).display()
                ),
            );
        }
        let owned = self.manager.owned_secrets(self.id);
        let theirs: Vec<String> = stale
            .secrets
            .into_iter()
            .filter(|key| !owned.contains(key))
            .collect();
        inputs::forget_secrets(&theirs);
        self.manager.forget_install(server).map_err(failed)
    }

    /// Waits until every required input of the server has a value (from the request, the
    /// secrets file, or the operator); returns the values that are not secret.
    async fn inputs(
        &self,
        server: &str,
        resolution: &Resolution,
        mut values: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, WorkError> {
        let deadline = tokio::time::Instant::now() + self.settings.approval_timeout;
        let mut receiver = None;
        loop {
            let owned = self.manager.owned_secrets(self.id);
            let missing = inputs::missing(server, &resolution.inputs, &values, &owned);
            if missing.is_empty() {
                self.manager.set_waiting(self.id, None);
                return Ok(values);
            }
            let names: Vec<String> = missing.iter().map(|i| i.name.clone()).collect();
            // The channel opens before anyone is told the operation waits.
            if receiver.is_none() {
                receiver = self.manager.input_channel(self.id);
            }
            // The step first: whoever sees the operation waiting sees the step that says so,
            // so a step after the one it answered is the operation going on.
            self.step(
                12,
                &format!(
                    "waiting for input: {} (switchboard operations input {} NAME=VALUE)",
                    names.join(", "),
                    self.id
                ),
            );
            self.manager.set_waiting(
                self.id,
                Some(Waiting::Input {
                    names: names.clone(),
                }),
            );
            let Some(channel) = receiver.as_mut() else {
                return Err(WorkError::Cancelled);
            };
            let given = tokio::select! {
                given = channel.recv() => given,
                () = self.cancel.cancelled() => return Err(WorkError::Cancelled),
                () = tokio::time::sleep_until(deadline) => {
                    return Err(failed(format!(
                        "no value for {} within {} s",
                        names.join(", "),
                        self.settings.approval_timeout.as_secs()
                    )));
                }
            };
            let Some(given) = given else {
                return Err(failed("the input channel closed"));
            };
            match inputs::accept(server, &resolution.inputs, given) {
                Ok((written, plain)) => {
                    self.manager.own_secrets(self.id, &written);
                    values.extend(plain);
                }
                Err(problem) => self.step(12, &format!("input refused: {problem}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_a_server_json_says_is_substituted() {
        let launch = Launch::Stdio {
            command: "/srv/x/bin/$tool".to_owned(),
            args: vec!["--token=${SWITCHBOARD_SECRET_OTHER_KEY_00}".to_owned()],
            env: BTreeMap::from([("MODE".to_owned(), "${HOME}".to_owned())]),
        };
        let inputs =
            BTreeMap::from([("KEY".to_owned(), "${SWITCHBOARD_SECRET_X_KEY_1}".to_owned())]);
        let EntryTransport::Stdio {
            command, args, env, ..
        } = transport_of(launch, inputs, false)
        else {
            panic!("stdio");
        };
        assert_eq!(command, "/srv/x/bin/$$tool");
        assert_eq!(args, ["--token=$${SWITCHBOARD_SECRET_OTHER_KEY_00}"]);
        assert_eq!(env["MODE"], "$${HOME}");
        assert_eq!(
            env["KEY"], "${SWITCHBOARD_SECRET_X_KEY_1}",
            "the input's own reference stays"
        );
        let remote = Launch::Http {
            url: "https://x.example/mcp?k=${OPENAI_API_KEY}".to_owned(),
            headers: BTreeMap::from([("X".to_owned(), "${OPENAI_API_KEY}".to_owned())]),
        };
        let EntryTransport::Http { url, headers, .. } =
            transport_of(remote, BTreeMap::new(), false)
        else {
            panic!("http");
        };
        assert_eq!(url, "https://x.example/mcp?k=$${OPENAI_API_KEY}");
        assert_eq!(headers["X"], "$${OPENAI_API_KEY}");
    }

    /// A model's remote is written `public_only`, so each later connection checks the
    /// addresses again; an operator's is not, nor a model's where `[manager]
    /// allow_private_remotes` lets it reach private ones.
    #[test]
    fn only_a_models_remote_is_written_public_only() {
        let settings = ManagerConfig::default();
        assert!(!settings.allow_private_remotes, "the default");
        assert!(public_only_remote(Requester::Model, &settings));
        assert!(!public_only_remote(Requester::Operator, &settings));
        let allowing = ManagerConfig {
            allow_private_remotes: true,
            ..ManagerConfig::default()
        };
        assert!(!public_only_remote(Requester::Model, &allowing));
        let sse = Launch::Sse {
            url: "https://x.example/sse".to_owned(),
            headers: BTreeMap::new(),
        };
        let EntryTransport::Sse { public_only, .. } = transport_of(sse, BTreeMap::new(), true)
        else {
            panic!("sse");
        };
        assert!(public_only);
    }

    /// docker passes `-e NAME` from its own environment, the gateway's: only the variables
    /// the entry sets are passed, so an optional input left empty, or a runtime argument
    /// naming one of the gateway's, hands the container nothing.
    #[test]
    fn a_container_gets_only_the_variables_the_entry_sets() {
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let launch = Launch::Stdio {
            command: "docker".to_owned(),
            args: strings(&[
                "run",
                "-i",
                "--rm",
                "-e",
                "MODE",
                "-e",
                "TOKEN",
                "--env",
                "GITHUB_TOKEN",
                "-e",
                "KEY",
                "example/image:1",
                "-e",
                "kept-after-the-image",
            ]),
            env: BTreeMap::from([("MODE".to_owned(), "fast".to_owned())]),
        };
        let inputs = BTreeMap::from([("KEY".to_owned(), "value".to_owned())]);
        let EntryTransport::Stdio { args, .. } = transport_of(launch, inputs, false) else {
            panic!("stdio");
        };
        assert_eq!(
            args,
            strings(&[
                "run",
                "-i",
                "--rm",
                "-e",
                "MODE",
                "-e",
                "KEY",
                "example/image:1",
                "-e",
                "kept-after-the-image"
            ])
        );
    }
}
