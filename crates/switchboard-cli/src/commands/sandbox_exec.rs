//! `switchboard sandbox-exec FLAGS -- COMMAND ARGS` (hidden): the sandbox launcher the
//! gateway runs a sandboxed stdio server under. It is dispatched before the command line is
//! parsed, the log set up or the runtime started, so a server's start pays only for the
//! confinement itself; the work is `switchboard::sandbox::exec`.

use std::io::Write;
use std::process::ExitCode;

use switchboard::sandbox::exec::{ExecPlan, SandboxError, run as confine_and_exec};

/// Whether the command line asks for the launcher.
pub fn requested() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == switchboard::sandbox::SUBCOMMAND)
}

/// Confines this process and execs the server; returns only on failure (126: the sandbox
/// could not be set up; 127: the command could not be run).
pub fn run() -> ExitCode {
    let args: Result<Vec<String>, _> = std::env::args_os()
        .skip(2)
        .map(std::ffi::OsString::into_string)
        .collect();
    let error = match args {
        Ok(args) => match ExecPlan::parse(args) {
            Ok(plan) => confine_and_exec(&plan),
            Err(error) => error,
        },
        Err(_) => SandboxError::Usage("an argument is not UTF-8".to_owned()),
    };
    let _ = writeln!(std::io::stderr(), "{error}");
    match error {
        SandboxError::Exec { .. } => ExitCode::from(127),
        _ => ExitCode::from(126),
    }
}
