//! The launcher's side: `sandbox-exec FLAGS -- COMMAND ARGS` confines this process with safe
//! system calls and execs the command in its place.
//!
//! Order matters: the user is looked up while `/etc/passwd` is still readable; rlimits, the
//! pids cgroup and the network namespace are set while still privileged; the user is switched before `no_new_privs` and Landlock, which
//! then bind the server whatever it execs. Any failure ends the launcher with a message on
//! stderr (which the gateway logs under the server's name) before the command runs: a
//! sandbox is never silently weaker than asked, except for the Landlock features the kernel
//! lacks, which `status` reports.

use std::convert::Infallible;
use std::ffi::{CString, NulError};
use std::path::PathBuf;

use nix::sys::resource::{Resource, setrlimit};
use nix::unistd::{Gid, Uid, User, execvp, setgid, setgroups, setuid};

use super::rules::{self, Enforced};

/// What the launcher was asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecPlan {
    pub memory: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub files: Option<u64>,
    pub processes: Option<u64>,
    pub user: Option<String>,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// "none" refuses TCP; "loopback" and "any" set no network rule.
    pub network: String,
    /// The command and its arguments.
    pub command: Vec<String>,
}

/// Why the launcher could not start the server.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox-exec: {0}")]
    Usage(String),
    #[error("sandbox-exec: cannot set {what}: {source}")]
    Limit {
        what: &'static str,
        source: nix::Error,
    },
    #[error("sandbox-exec: unknown user '{0}'")]
    UnknownUser(String),
    #[error("sandbox-exec: cannot switch to user '{user}': {source}")]
    User { user: String, source: nix::Error },
    #[error("sandbox-exec: cannot set no_new_privs: {0}")]
    NoNewPrivs(nix::Error),
    #[error("sandbox-exec: Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("sandbox-exec: an argument holds a NUL byte: {0}")]
    Nul(#[from] NulError),
    #[error("sandbox-exec: cannot run '{command}': {source}")]
    Exec { command: String, source: nix::Error },
}

/// The launcher's flags, each followed by its value.
const FLAGS: [&str; 8] = [
    "--memory",
    "--cpu",
    "--files",
    "--processes",
    "--user",
    "--read",
    "--write",
    "--network",
];

impl ExecPlan {
    /// Reads the flags after `sandbox-exec` (the launcher's own argv, without the program
    /// and subcommand).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, SandboxError> {
        let mut plan = Self {
            network: "any".to_owned(),
            ..Self::default()
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--" {
                plan.command = args.collect();
                break;
            }
            if !FLAGS.contains(&flag.as_str()) {
                return Err(SandboxError::Usage(format!(
                    "'{flag}' is not a flag ({}): write FLAGS -- COMMAND ARGS",
                    FLAGS.join(", ")
                )));
            }
            let value = args
                .next()
                .ok_or_else(|| SandboxError::Usage(format!("{flag} needs a value")))?;
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| SandboxError::Usage(format!("{flag} {value}: not a number")))
            };
            match flag.as_str() {
                "--memory" => plan.memory = Some(number()?),
                "--cpu" => plan.cpu_seconds = Some(number()?),
                "--files" => plan.files = Some(number()?),
                "--processes" => plan.processes = Some(number()?),
                "--user" => plan.user = Some(value),
                "--read" => plan.read.push(value.into()),
                "--write" => plan.write.push(value.into()),
                "--network" if matches!(value.as_str(), "none" | "loopback" | "any") => {
                    plan.network = value;
                }
                _ => {
                    return Err(SandboxError::Usage(format!(
                        "{flag} {value}: use none, loopback or any"
                    )));
                }
            }
        }
        if plan.command.is_empty() {
            return Err(SandboxError::Usage(
                "no command: write FLAGS -- COMMAND ARGS".to_owned(),
            ));
        }
        Ok(plan)
    }
}

/// Confines this process as `plan` says and execs its command; returns only on failure.
pub fn run(plan: &ExecPlan) -> SandboxError {
    match confine_and_exec(plan) {
        Ok(never) => match never {},
        Err(error) => error,
    }
}

fn confine_and_exec(plan: &ExecPlan) -> Result<Infallible, SandboxError> {
    let argv = plan
        .command
        .iter()
        .map(|arg| CString::new(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let user = match &plan.user {
        Some(name) => Some(
            User::from_name(name)
                .ok()
                .flatten()
                .ok_or_else(|| SandboxError::UnknownUser(name.clone()))?,
        ),
        None => None,
    };
    limit(Resource::RLIMIT_AS, "memory", plan.memory, 0)?;
    // The soft limit sends SIGXCPU, which a server may catch; the hard one a second later
    // kills it.
    limit(Resource::RLIMIT_CPU, "cpu", plan.cpu_seconds, 1)?;
    limit(Resource::RLIMIT_NOFILE, "files", plan.files, 0)?;
    limit(Resource::RLIMIT_NPROC, "processes", plan.processes, 0)?;
    if let Some(max) = plan.processes
        && user.is_none()
        && nix::unistd::geteuid().is_root()
        && let Err(error) = super::pids::confine(max)
    {
        eprintln!(
            "sandbox-exec: processes not bound: RLIMIT_NPROC does not bind root and no pids \
             cgroup could be made ({error})"
        );
    }
    if plan.network == "none" {
        // A network namespace of its own: no interface up, so no IP at all (UDP too) and no
        // abstract Unix socket of the host. Needs root (CAP_SYS_ADMIN), so before the user is switched; Landlock's TCP rules
        // below hold either way.
        if let Err(error) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            && nix::unistd::geteuid().is_root()
        {
            eprintln!(
                "sandbox-exec: no network namespace of its own ({error}): only Landlock's TCP \
                 rules hold"
            );
        }
    }
    if let Some(user) = &user {
        switch_user(user.uid, user.gid).map_err(|source| SandboxError::User {
            user: user.name.clone(),
            source,
        })?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(SandboxError::NoNewPrivs)?;
    let mut write = plan.write.clone();
    if let Some(user) = &user
        && !super::too_broad(&user.dir)
        && !super::rules::SYSTEM_READ
            .iter()
            .any(|system| std::path::Path::new(system).starts_with(&user.dir))
    {
        // Its home is where an unprivileged server keeps its caches — unless that home is
        // `/` or holds system paths (`nobody`'s is `/` on several distributions), which
        // would make everything writable.
        write.push(user.dir.clone());
    }
    match rules::restrict(&plan.read, &write, plan.network == "none")? {
        Enforced::Fully => {}
        Enforced::Partly => eprintln!(
            "sandbox-exec: this kernel enforces only part of the Landlock rules (an older ABI)"
        ),
        Enforced::Not => {
            eprintln!("sandbox-exec: this kernel has no Landlock: file-system rules not enforced");
        }
    }
    let Some(program) = argv.first() else {
        return Err(SandboxError::Usage("no command".to_owned()));
    };
    execvp(program, &argv).map_err(|source| SandboxError::Exec {
        command: plan.command[0].clone(),
        source,
    })
}

/// Sets both limits of `resource` (the hard one `slack` above) when `value` is given.
fn limit(
    resource: Resource,
    what: &'static str,
    value: Option<u64>,
    slack: u64,
) -> Result<(), SandboxError> {
    let Some(value) = value else {
        return Ok(());
    };
    setrlimit(resource, value, value.saturating_add(slack))
        .map_err(|source| SandboxError::Limit { what, source })
}

fn switch_user(uid: Uid, gid: Gid) -> Result<(), nix::Error> {
    setgroups(&[gid])?;
    setgid(gid)?;
    setuid(uid)
}
