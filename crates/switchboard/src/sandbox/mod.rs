//! Sandboxed stdio servers: what the gateway asks of the launcher, and what it can say is in
//! force.
//!
//! A server with a sandbox is started as `LAUNCHER sandbox-exec FLAGS -- COMMAND ARGS`: the
//! launcher (the `switchboard` binary, or whatever program embeds [`exec::run`]) confines
//! itself with safe system calls — rlimits, `no_new_privs`, an optional user, Landlock — and
//! then execs the command, which inherits all of it. The environment is filtered by the
//! gateway when it spawns the launcher. [`launch`] turns a [`SandboxConfig`] into the
//! wrapper and environment of a `StdioCommand`; [`protections`] says, for `status`, which of
//! them hold on this kernel and user. This module never decides whether a server is
//! sandboxed: the config does (`Config::sandbox_of`).

pub mod exec;
mod pids;
mod rules;

use std::path::{Path, PathBuf};

use switchboard_core::config::{NetworkAccess, SandboxConfig};
use switchboard_mcp::upstream::Wrapper;

pub use rules::{KernelSupport, SYSTEM_READ};

/// The launcher's subcommand.
pub const SUBCOMMAND: &str = "sandbox-exec";

/// The gateway's variables a sandboxed server gets (besides its configured `env`) unless
/// `inherit_env = true`.
pub const KEPT_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// How a sandboxed server is started: the wrapper and, unless the environment is inherited,
/// the variables it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub wrapper: Wrapper,
    pub keep_env: Option<Vec<String>>,
}

/// The launch of `command args` (in `cwd`) under `config`, with `launcher` as the program
/// that runs `sandbox-exec`. Paths the server needs to start — the directory of its program
/// and the one above it (a venv's or a package's prefix), absolute paths among its arguments,
/// its working directory — are readable besides the system's and `readable`.
pub fn launch(
    config: &SandboxConfig,
    launcher: &Path,
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
) -> Launch {
    let mut flags = vec![SUBCOMMAND.to_owned()];
    let mut push = |flag: &str, value: String| {
        flags.push(flag.to_owned());
        flags.push(value);
    };
    if let Some(memory) = config.memory {
        push("--memory", memory.to_string());
    }
    if let Some(cpu) = config.cpu {
        // Whole seconds, rounded up: "1.5s" must not become 1.
        let seconds = cpu.as_secs() + u64::from(cpu.subsec_nanos() > 0);
        push("--cpu", seconds.to_string());
    }
    if let Some(files) = config.files {
        push("--files", files.to_string());
    }
    if let Some(processes) = config.processes {
        push("--processes", processes.to_string());
    }
    if let Some(user) = &config.user {
        push("--user", user.clone());
    }
    for path in startup_paths(command, args, cwd)
        .iter()
        .chain(&config.readable)
    {
        push("--read", path.display().to_string());
    }
    for path in &config.writable {
        push("--write", path.display().to_string());
    }
    push("--network", config.network.as_str().to_owned());
    Launch {
        wrapper: Wrapper {
            program: launcher.to_path_buf(),
            args: flags,
        },
        keep_env: (!config.inherit_env).then(|| KEPT_ENV.map(str::to_owned).to_vec()),
    }
}

/// What a server needs to read to start at all.
fn startup_paths(command: &str, args: &[String], cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(program) = find_program(command) {
        let program = program.canonicalize().unwrap_or(program);
        push_dir_and_prefix(&mut paths, &program);
        // A script's interpreter (`#!/usr/bin/env node`: node as PATH finds it) may live
        // outside the system paths too (a version manager's directory).
        if let Some(interpreter) = interpreter_of(&program).and_then(|i| find_program(&i)) {
            let interpreter = interpreter.canonicalize().unwrap_or(interpreter);
            push_dir_and_prefix(&mut paths, &interpreter);
        }
    }
    // A venv's `bin/python` is a link into the system: its prefix is the link's (the
    // directories above the link resolved, not the link itself).
    let unresolved = Path::new(command);
    if unresolved.is_absolute()
        && let Some(prefix) = unresolved.parent().and_then(Path::parent)
        && let Ok(prefix) = prefix.canonicalize()
    {
        paths.push(prefix);
    }
    // Every path as the launcher will open it: `..` and links resolved, so `/usr/..` or a
    // link to `/` is judged as the `/` it is.
    for arg in args {
        let path = Path::new(arg);
        if !path.is_absolute() {
            continue;
        }
        let Ok(path) = path.canonicalize() else {
            continue;
        };
        // A directory itself; a file with its directory (a script's siblings), unless that
        // directory is a home or the like, then the file alone.
        match path.parent() {
            Some(dir) if path.is_file() && !too_broad(dir) => paths.push(dir.to_path_buf()),
            _ => paths.push(path),
        }
    }
    paths.extend(cwd.and_then(|cwd| cwd.canonicalize().ok()));
    paths.retain(|path| !too_broad(path));
    paths.sort();
    paths.dedup();
    paths
}

/// The directory of `program` and the one above it (its installation's prefix); of a
/// program in a home directory or the like, the program alone.
fn push_dir_and_prefix(paths: &mut Vec<PathBuf>, program: &Path) {
    match program.parent() {
        Some(dir) if !too_broad(dir) => {
            paths.push(dir.to_path_buf());
            if let Some(prefix) = dir.parent().filter(|prefix| !too_broad(prefix)) {
                paths.push(prefix.to_path_buf());
            }
        }
        _ => paths.push(program.to_path_buf()),
    }
}

/// Whether granting `path` would grant far more than a server needs: the root, `/tmp`, the
/// home directories' parents, a home directory (anyone's under `/home`, root's, the
/// gateway's own `$HOME`) or an ancestor of one. Derived paths never reach that wide; a
/// path an operator lists in `readable` or `writable` is theirs to choose.
pub(crate) fn too_broad(path: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let broad = [
        "/", "/home", "/root", "/tmp", "/var", "/var/tmp", "/srv", "/mnt", "/media",
    ];
    broad.iter().any(|broad| path == Path::new(broad))
        || path.parent() == Some(Path::new("/home"))
        || home.is_some_and(|home| home.starts_with(path))
}

/// The interpreter a script's `#!` line names (for `/usr/bin/env X`, X).
fn interpreter_of(program: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head.get(..read)?.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.ends_with("/env") {
        words.find(|word| !word.starts_with('-')).map(str::to_owned)
    } else {
        Some(first.to_owned())
    }
}

/// `command` as `execvp` will find it: as given when it has a `/`, else on `PATH`.
fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.is_file())
}

/// Which of a sandbox's protections hold, for `status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Protections {
    /// The rlimits asked for, e.g. `["memory 1073741824", "cpu 600s"]`.
    pub limits: Vec<String>,
    /// "filtered" (PATH, HOME, LANG, TMPDIR and `env`) or "inherited".
    pub env: &'static str,
    /// Landlock file-system rules: "enforced" or "not available".
    pub filesystem: &'static str,
    /// "any" (nothing to enforce), "enforced (how)", or "not enforced (why)".
    pub network: String,
    /// RLIMIT_NPROC: "binds", "not asked", "cgroup pids.max" (as root, where a pids
    /// controller is mounted) or "not bound (root, no pids cgroup)".
    pub processes: &'static str,
    /// The user the server runs as, when one is configured.
    pub user: Option<String>,
    /// Always true: the launcher sets `no_new_privs`.
    pub no_new_privs: bool,
}

/// What of `config` is in force, given the kernel's support and whether the gateway runs as
/// root.
pub fn protections(config: &SandboxConfig, kernel: KernelSupport, root: bool) -> Protections {
    let mut limits = Vec::new();
    if let Some(memory) = config.memory {
        limits.push(format!("memory {memory}"));
    }
    if let Some(cpu) = config.cpu {
        limits.push(format!("cpu {}s", cpu.as_secs_f64().ceil()));
    }
    if let Some(files) = config.files {
        limits.push(format!("files {files}"));
    }
    if let Some(processes) = config.processes {
        limits.push(format!("processes {processes}"));
    }
    let network = match config.network {
        NetworkAccess::Any => "any".to_owned(),
        NetworkAccess::None if root => "enforced (a network namespace of its own)".to_owned(),
        NetworkAccess::None if kernel.landlock_net => "enforced (no TCP)".to_owned(),
        NetworkAccess::None => "not enforced (the kernel has no Landlock network rules)".to_owned(),
        NetworkAccess::Loopback => {
            "not enforced (Landlock rules name ports, not addresses)".to_owned()
        }
    };
    let runs_as_root = root && config.user.is_none();
    Protections {
        limits,
        env: if config.inherit_env {
            "inherited"
        } else {
            "filtered"
        },
        filesystem: if kernel.landlock_fs {
            "enforced"
        } else {
            "not available"
        },
        network,
        processes: match (config.processes, runs_as_root, kernel.pids_cgroup) {
            (None, _, _) => "not asked",
            (Some(_), true, true) => "cgroup pids.max",
            (Some(_), true, false) => "not bound (root, no pids cgroup)",
            (Some(_), false, _) => "binds",
        },
        user: config.user.clone(),
        no_new_privs: true,
    }
}

#[cfg(test)]
mod tests;
