//! The launcher's flags round-trip, and `status` says what holds.

use std::time::Duration;

use switchboard_core::config::{NetworkAccess, SandboxConfig};

use super::exec::ExecPlan;
use super::*;

fn config() -> SandboxConfig {
    SandboxConfig {
        memory: Some(1 << 30),
        cpu: Some(Duration::from_millis(1500)),
        files: Some(256),
        processes: Some(64),
        inherit_env: false,
        readable: vec!["/data".into()],
        writable: vec!["/tmp/w".into()],
        network: NetworkAccess::None,
        user: Some("nobody".to_owned()),
    }
}

#[test]
fn the_launch_flags_are_read_back_by_the_launcher() {
    let launch = launch(
        &config(),
        Path::new("/bin/switchboard"),
        "/bin/sh",
        &["-c".to_owned(), "exit 0".to_owned()],
        None,
    );
    assert_eq!(launch.wrapper.program, Path::new("/bin/switchboard"));
    assert_eq!(launch.wrapper.args[0], SUBCOMMAND);
    assert_eq!(
        launch.keep_env,
        Some(vec![
            "PATH".into(),
            "HOME".into(),
            "LANG".into(),
            "TMPDIR".into()
        ])
    );
    let mut argv: Vec<String> = launch.wrapper.args[1..].to_vec();
    argv.extend(["--".to_owned(), "/bin/sh".to_owned()]);
    let plan = ExecPlan::parse(argv).expect("parses");
    assert_eq!(plan.memory, Some(1 << 30));
    assert_eq!(plan.cpu_seconds, Some(2), "rounded up");
    assert_eq!((plan.files, plan.processes), (Some(256), Some(64)));
    assert_eq!(plan.user.as_deref(), Some("nobody"));
    assert!(plan.read.contains(&PathBuf::from("/data")));
    assert_eq!(plan.write, [PathBuf::from("/tmp/w")]);
    assert_eq!(plan.network, "none");
    assert_eq!(plan.command, ["/bin/sh"]);
}

#[test]
fn the_launcher_refuses_what_it_cannot_read() {
    for bad in [
        vec!["--memory", "lots", "--", "x"],
        vec!["--files"],
        vec!["--network", "lan", "--", "x"],
        vec!["--memory", "1"],
        vec!["--bogus", "1", "--", "x"],
    ] {
        let args = bad.iter().map(|s| (*s).to_owned());
        assert!(ExecPlan::parse(args).is_err(), "{bad:?}");
    }
}

/// Each mistake says what is wrong: a command without `--` before it is not taken for a
/// flag that lacks its value, and a known flag with a bad value is not an unknown flag.
#[test]
fn the_launchers_usage_errors_say_what_is_wrong() {
    let error = |args: &[&str]| match ExecPlan::parse(args.iter().map(|s| (*s).to_owned())) {
        Ok(plan) => panic!("{args:?} parsed: {plan:?}"),
        Err(error) => error.to_string(),
    };
    let missing_dashes = error(&["/bin/true"]);
    assert!(
        missing_dashes.contains("'/bin/true' is not a flag")
            && missing_dashes.contains("FLAGS -- COMMAND ARGS"),
        "{missing_dashes}"
    );
    let unknown = error(&["--bogus", "--", "x"]);
    assert!(unknown.contains("'--bogus' is not a flag"), "{unknown}");
    let network = error(&["--network", "lan", "--", "x"]);
    assert!(
        network.contains("--network lan: use none, loopback or any"),
        "{network}"
    );
}

#[test]
fn status_says_what_holds_on_this_kernel_and_user() {
    let full = KernelSupport {
        landlock_fs: true,
        landlock_net: true,
        pids_cgroup: false,
    };
    let mut sandbox = config();
    let held = protections(&sandbox, full, true);
    assert_eq!(held.filesystem, "enforced");
    assert_eq!(held.network, "enforced (a network namespace of its own)");
    assert_eq!(
        protections(&sandbox, full, false).network,
        "enforced (no TCP)"
    );
    assert_eq!(held.processes, "binds", "a configured user is not root");
    assert_eq!(held.env, "filtered");
    assert_eq!(held.limits.len(), 4);
    sandbox.user = None;
    assert_eq!(
        protections(&sandbox, full, true).processes,
        "not bound (root, no pids cgroup)"
    );
    let cgroups = KernelSupport {
        pids_cgroup: true,
        ..full
    };
    assert_eq!(
        protections(&sandbox, cgroups, true).processes,
        "cgroup pids.max"
    );
    let bare = protections(&sandbox, KernelSupport::default(), false);
    assert_eq!(bare.filesystem, "not available");
    assert!(bare.network.starts_with("not enforced"));
    assert_eq!(bare.processes, "binds");
    sandbox.network = NetworkAccess::Loopback;
    assert!(
        protections(&sandbox, full, false)
            .network
            .starts_with("not enforced")
    );
}

#[test]
fn a_sandbox_without_a_launcher_is_refused_not_dropped() {
    use switchboard_core::config::{Config, Format, MapEnvironment, Origin};
    let config = Config::parse(
        "[gateway.sandbox]\nfiles = 64\n\n[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"x\"\nsandbox = false\n",
        Origin::Inline,
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid");
    let Err(error) = crate::plans(&config) else {
        panic!("a sandboxed server was planned without a launcher");
    };
    assert!(
        matches!(&error, crate::AssembleError::SandboxWithoutLauncher { server } if server == "a"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("server 'a' has a sandbox, but this gateway has no sandbox launcher"),
        "{error}"
    );
    let [server_b] = &config.servers[1..] else {
        unreachable!()
    };
    let plan = crate::assemble::plan(&config, server_b, None).expect("b is not sandboxed");
    let switchboard_mcp::upstream::Endpoint::Stdio(command) = plan.spec.endpoint else {
        panic!("stdio");
    };
    assert_eq!((command.wrapper, command.keep_env), (None, None));
    let server_a = &config.servers[0];
    let plan = crate::assemble::plan(&config, server_a, Some(Path::new("/bin/sb"))).expect("a");
    let switchboard_mcp::upstream::Endpoint::Stdio(command) = plan.spec.endpoint else {
        panic!("stdio");
    };
    assert_eq!(
        command.wrapper.map(|w| w.program),
        Some(PathBuf::from("/bin/sb"))
    );
}

#[test]
fn a_change_of_the_sandbox_a_server_runs_in_restarts_it_and_only_it() {
    use switchboard_core::config::{Config, Format, MapEnvironment, Origin};
    let parse = |gateway: &str| {
        let text = format!(
            "{gateway}\n[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"x\"\nsandbox = false\n\n[servers.c]\nurl = \"http://h/mcp\"\n\n[servers.d]\ncommand = \"x\"\nsandbox = {{ files = 9 }}\n"
        );
        Config::parse(
            &text,
            Origin::Inline,
            Format::Toml,
            &MapEnvironment::default(),
        )
        .expect("valid")
    };
    let fingerprints = |config: &Config| -> Vec<String> {
        config
            .servers
            .iter()
            .map(|server| crate::connection_fingerprint(config, server))
            .collect()
    };
    let none = fingerprints(&parse(""));
    let some = fingerprints(&parse("[gateway.sandbox]\nfiles = 64\n"));
    let other = fingerprints(&parse("[gateway.sandbox]\nfiles = 65\n"));
    assert_ne!(none[0], some[0], "a takes the default");
    assert_ne!(some[0], other[0]);
    assert_eq!(&none[1..], &some[1..], "b is off, c is HTTP, d has its own");
    assert_eq!(&some[1..], &other[1..]);
}

#[test]
fn a_scripts_interpreter_is_readable_wherever_path_finds_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("tool").join("bin").join("server");
    std::fs::create_dir_all(script.parent().expect("parent")).expect("dirs");
    std::fs::write(&script, "#!/usr/bin/env -S sh -e\nexit 0\n").expect("script");
    let launch = launch(
        &SandboxConfig::default(),
        Path::new("/bin/switchboard"),
        &script.display().to_string(),
        &[],
        None,
    );
    let read: Vec<&String> = launch
        .wrapper
        .args
        .windows(2)
        .filter(|pair| pair[0] == "--read")
        .map(|pair| &pair[1])
        .collect();
    let script = script.canonicalize().expect("canonical");
    let prefix = script.parent().and_then(Path::parent).expect("prefix");
    assert!(read.iter().any(|p| Path::new(p) == prefix), "{read:?}");
    let sh = find_program("sh").expect("sh on PATH");
    let sh = sh.canonicalize().unwrap_or(sh);
    let sh_dir = sh.parent().expect("dir");
    assert!(read.iter().any(|p| Path::new(p) == sh_dir), "{read:?}");
}

/// Paths the sandbox derives from a server's command line never reach a home directory, the
/// root or `/tmp` (security review): a directory argument is granted itself, not its parent.
#[test]
fn derived_readable_paths_stop_short_of_homes_and_the_root() {
    for broad in ["/", "/home", "/home/alice", "/root", "/tmp"] {
        assert!(too_broad(Path::new(broad)), "{broad}");
    }
    if let Some(home) = std::env::var_os("HOME") {
        assert!(too_broad(Path::new(&home)));
    }
    for narrow in [
        "/home/alice/Docs",
        "/opt/servers/memory",
        "/usr/lib/node_modules",
    ] {
        assert!(!too_broad(Path::new(narrow)), "{narrow}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("Docs");
    std::fs::create_dir(&docs).expect("mkdir");
    let script = dir.path().join("server.py");
    std::fs::write(&script, "print()").expect("write");
    let to_root = dir.path().join("root-link");
    std::os::unix::fs::symlink("/", &to_root).expect("symlink");
    let args = [
        docs.display().to_string(),
        script.display().to_string(),
        "/".to_owned(),
        "/home".to_owned(),
        // `/` written otherwise: the launcher opens what they resolve to.
        "/usr/..".to_owned(),
        "/proc/self/root".to_owned(),
        to_root.display().to_string(),
        format!("{}/../../home", docs.display()),
    ];
    let paths = startup_paths("no-such-program-here", &args, None);
    assert!(paths.contains(&docs), "the directory itself: {paths:?}");
    assert!(
        !paths
            .iter()
            .any(|path| docs.starts_with(path) && *path != docs && *path != dir.path()),
        "no ancestor of the directory above the script's own: {paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|path| too_broad(path) || path.canonicalize().is_ok_and(|real| too_broad(&real))),
        "neither / nor /home, however written: {paths:?}"
    );
}
