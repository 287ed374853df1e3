//! Installs with real processes and no network: npm from a local tarball (`npm pack` of a
//! package written here, npm offline with a cache of the test's own), PyPI from a wheel
//! written here (no index), OCI against a stand-in `docker` script. Covers the bin and
//! console-script choice, the Launch, progress, a failing install (directory removed, output
//! tail reported), cancellation (the whole process group killed, directory removed), and
//! missing tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::npm::pick_bin;
use super::pypi::{normalize, pick_script};
use super::*;
use crate::resolve::{Choice, Input, RemoteKind, Resolution};

/// npm kept off the network and out of the user's cache.
fn npm_env(tmp: &Path) -> Vec<(String, String)> {
    [
        (
            "npm_config_cache",
            tmp.join("npm-cache").display().to_string(),
        ),
        ("npm_config_offline", "true".into()),
        ("npm_config_update_notifier", "false".into()),
        ("npm_config_audit", "false".into()),
        ("npm_config_fund", "false".into()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .into()
}

/// `npm pack` of a package made of `manifest` and `files`; the tarball's path.
fn pack(tmp: &Path, manifest: &Value, files: &[(&str, &str)]) -> PathBuf {
    let source = tmp.join("source");
    std::fs::create_dir_all(&source).expect("source dir");
    std::fs::write(source.join("package.json"), manifest.to_string()).expect("manifest");
    for (name, text) in files {
        std::fs::write(source.join(name), text).expect("file");
    }
    let output = Command::new("npm")
        .args(["pack", "--json", "--pack-destination"])
        .arg(tmp)
        .current_dir(&source)
        .envs(npm_env(tmp))
        .output()
        .expect("run npm pack");
    assert!(output.status.success(), "npm pack: {output:?}");
    let packed: Value = serde_json::from_slice(&output.stdout).expect("npm pack --json");
    let file = packed[0]["filename"].as_str().expect("filename");
    tmp.join(file)
}

fn npm_resolution(package: &str, package_args: &[&str]) -> Resolution {
    Resolution {
        name: "io.example/thing".into(),
        version: "1.0.0".into(),
        choice: Choice::Npm {
            package: package.into(),
            version: "1.0.0".into(),
            runtime_args: vec!["-y".into()],
            package_args: package_args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::from([("FIXED".to_owned(), "1".to_owned())]),
        },
        inputs: vec![],
        preview: String::new(),
    }
}

fn overrides(spec: &Path, env: Vec<(String, String)>) -> Settings {
    Settings {
        spec: Some(spec.display().to_string()),
        env,
        ..Settings::default()
    }
}

#[tokio::test]
async fn npm_installs_a_local_tarball_and_launches_its_bin() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let manifest = json!({"name": "@test/thing-server", "version": "1.0.0",
                          "bin": {"mcp-thing": "cli.js"}});
    let tarball = pack(
        tmp.path(),
        &manifest,
        &[(
            "cli.js",
            "#!/usr/bin/env node\nconsole.log('thing ' + process.argv.slice(2).join(' '));\n",
        )],
    );
    let dir = tmp.path().join("servers").join("thing");
    let seen = Mutex::new(Vec::new());
    let progress = |percent: u8, message: &str| {
        if let Ok(mut seen) = seen.lock() {
            seen.push((percent, message.to_owned()));
        }
    };
    let launch = install_with(
        &npm_resolution("@test/thing-server", &["--flag", "value"]),
        &dir,
        &overrides(&tarball, npm_env(tmp.path())),
        &CancellationToken::new(),
        &progress,
    )
    .await
    .expect("install");
    let Launch::Stdio { command, args, env } = launch else {
        panic!("expected a stdio launch, got {launch:?}");
    };
    assert_eq!(
        PathBuf::from(&command),
        dir.join("node_modules/.bin/mcp-thing")
    );
    assert!(Path::new(&command).is_absolute());
    assert_eq!(args, ["--flag", "value"], "npm runtime args are dropped");
    assert_eq!(env.get("FIXED").map(String::as_str), Some("1"));
    let ran = Command::new(&command)
        .args(&args)
        .output()
        .expect("run the bin");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout).trim(),
        "thing --flag value"
    );
    let seen = seen.lock().expect("progress").clone();
    assert_eq!(seen.first().map(|s| s.0), Some(10));
    assert!(seen[0].1.starts_with("npm install "), "{seen:?}");
    assert!(
        seen.iter().any(|(_, m)| m == "found bin mcp-thing"),
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&(100, "installed".to_owned())));
    uninstall(&dir).expect("uninstall");
    assert!(!dir.exists());
    uninstall(&dir).expect("uninstalling twice is fine");
}

#[tokio::test]
async fn a_failing_npm_install_removes_the_directory_and_reports_the_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let manifest = json!({"name": "broken-server", "version": "1.0.0", "bin": "cli.js",
                          "scripts": {"preinstall": "echo boom-from-preinstall >&2; exit 3"}});
    let tarball = pack(tmp.path(), &manifest, &[("cli.js", "")]);
    let dir = tmp.path().join("broken");
    let error = install_with(
        &npm_resolution("broken-server", &[]),
        &dir,
        &overrides(&tarball, npm_env(tmp.path())),
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect_err("preinstall fails");
    let InstallError::Failed {
        command,
        status,
        output,
    } = &error
    else {
        panic!("expected Failed, got {error}");
    };
    assert!(command.starts_with("npm install --prefix "), "{command}");
    assert!(command.contains("--loglevel=error"), "{command}");
    assert!(!status.is_empty());
    assert!(output.contains("boom-from-preinstall"), "{output}");
    assert!(output.lines().count() <= process::TAIL_LINES);
    assert!(!dir.exists(), "the directory is removed");
    assert!(error.to_string().contains("its last output"), "{error}");
}

/// Regression: a `bin` key of the package's own `package.json` was joined to `.bin/` as it
/// was, so `../../…/usr/bin/env` made the gateway's launch command `/usr/bin/env`.
#[tokio::test]
async fn a_bin_name_that_leaves_the_install_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let escape = format!("{}usr/bin/env", "../".repeat(24));
    let manifest = json!({"name": "escaping-server", "version": "1.0.0",
                          "bin": {escape.clone(): "cli.js"}});
    let tarball = pack(
        tmp.path(),
        &manifest,
        &[("cli.js", "#!/usr/bin/env node\n")],
    );
    let dir = tmp.path().join("escaping");
    let error = install_with(
        &npm_resolution("escaping-server", &[]),
        &dir,
        &overrides(&tarball, npm_env(tmp.path())),
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect_err("the bin leaves the directory");
    assert!(
        matches!(&error, InstallError::NoCommand(m) if m.contains("not a plain file name")),
        "{error}"
    );
    assert!(!dir.exists(), "the directory is removed");
}

#[test]
fn a_bin_link_must_stay_inside_the_install() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("install");
    let bins = dir.join("node_modules/.bin");
    let package = dir.join("node_modules/thing");
    std::fs::create_dir_all(&bins).expect("bins");
    std::fs::create_dir_all(&package).expect("package");
    std::fs::write(package.join("cli.js"), "").expect("cli");
    let outside = tmp.path().join("outside.js");
    std::fs::write(&outside, "").expect("outside");
    std::os::unix::fs::symlink("../thing/cli.js", bins.join("thing")).expect("link");
    std::os::unix::fs::symlink(&outside, bins.join("away")).expect("link");
    std::os::unix::fs::symlink("../thing", bins.join("folder")).expect("link");
    assert_eq!(
        npm::bin_path(&dir, "thing", "thing").expect("inside"),
        bins.join("thing")
    );
    for (bin, why) in [
        ("away", "not a file inside"),
        ("folder", "not a file inside"),
        ("missing", "did not link"),
        ("..", "not a plain file name"),
        (".", "not a plain file name"),
        ("", "not a plain file name"),
        ("a/b", "not a plain file name"),
        ("thing/", "not a plain file name"),
        ("/usr/bin/env", "not a plain file name"),
    ] {
        let error = npm::bin_path(&dir, "thing", bin).expect_err(bin);
        assert!(error.to_string().contains(why), "{bin:?}: {error}");
    }
}

/// Whether `pid` is a live process (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn cancelling_kills_the_whole_install_and_removes_the_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pid_file = tmp.path().join("script.pid");
    let script = format!("echo $$ > '{}'; exec sleep 30", pid_file.display());
    let manifest = json!({"name": "slow-server", "version": "1.0.0", "bin": "cli.js",
                          "scripts": {"preinstall": script}});
    let tarball = pack(tmp.path(), &manifest, &[("cli.js", "")]);
    let dir = tmp.path().join("slow");
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let resolution = npm_resolution("slow-server", &[]);
    let overrides = overrides(&tarball, npm_env(tmp.path()));
    let install = install_with(&resolution, &dir, &overrides, &cancel, &|_, _| {});
    let watch = async {
        // The script announces itself through its pid file; cancel once it runs.
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok())
            {
                assert!(alive(pid), "the script runs");
                cancel.cancel();
                return Some(pid);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
        None
    };
    let (result, pid) = tokio::join!(install, watch);
    let pid = pid.expect("the preinstall script started");
    assert!(matches!(result, Err(InstallError::Cancelled)), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "no wait for the sleep"
    );
    assert!(!dir.exists(), "the directory is removed");
    let gone_by = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < gone_by {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "the script's process {pid} is gone");
}

#[tokio::test]
async fn missing_tools_say_how_to_get_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let no_path = vec![("PATH".to_owned(), tmp.path().display().to_string())];
    let error = install_with(
        &npm_resolution("anything", &[]),
        &tmp.path().join("x"),
        &Settings {
            spec: None,
            env: no_path.clone(),
            ..Settings::default()
        },
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect_err("no npm");
    assert!(
        matches!(&error, InstallError::Unavailable(m) if m.contains("install Node.js")),
        "{error}"
    );
    assert!(!tmp.path().join("x").exists());
    let mut docker = oci_resolution();
    docker.inputs.clear();
    let error = install_with(
        &docker,
        &tmp.path().join("y"),
        &Settings {
            spec: None,
            env: no_path,
            ..Settings::default()
        },
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect_err("no docker");
    assert!(
        matches!(&error, InstallError::Unavailable(m) if m.contains("docker is not on PATH")),
        "{error}"
    );
    let tools: Vec<&str> = tools_available()
        .into_iter()
        .map(|(tool, _)| tool)
        .collect();
    assert_eq!(tools, ["npm", "python3", "docker"]);
}

fn oci_resolution() -> Resolution {
    Resolution {
        name: "io.example/image".into(),
        version: "1.0.0".into(),
        choice: Choice::Oci {
            image: "ghcr.io/example/server:1.0.0".into(),
            runtime_args: vec!["--network".into(), "none".into()],
            package_args: vec!["serve".into()],
            env: BTreeMap::from([("FIXED".to_owned(), "1".to_owned())]),
        },
        inputs: vec![Input {
            name: "TOKEN".into(),
            description: None,
            required: true,
            secret: true,
            default: None,
            choices: vec![],
            format: None,
        }],
        preview: String::new(),
    }
}

/// A stand-in `docker` in a directory of its own; `engine` says whether `docker info` works.
fn fake_docker(tmp: &Path, engine: bool) -> Vec<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let bin = tmp.join(if engine { "bin-up" } else { "bin-down" });
    std::fs::create_dir_all(&bin).expect("bin");
    let info = if engine {
        "exit 0"
    } else {
        "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2; exit 1"
    };
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in info) {info};; pull) echo \"pulled $2\"; exit 0;; esac\nexit 9\n"
    );
    let path = bin.join("docker");
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path_var = format!("{}:/usr/bin:/bin", bin.display());
    vec![("PATH".to_owned(), path_var)]
}

#[tokio::test]
async fn oci_needs_an_engine_and_passes_variables_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let down = install_with(
        &oci_resolution(),
        &tmp.path().join("down"),
        &Settings {
            spec: None,
            env: fake_docker(tmp.path(), false),
            ..Settings::default()
        },
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect_err("no engine");
    let text = down.to_string();
    assert!(matches!(down, InstallError::Unavailable(_)), "{text}");
    assert!(
        text.starts_with("docker is installed but no engine answers: Cannot connect"),
        "{text}"
    );
    assert!(!tmp.path().join("down").exists());

    let launch = install_with(
        &oci_resolution(),
        &tmp.path().join("up"),
        &Settings {
            spec: None,
            env: fake_docker(tmp.path(), true),
            ..Settings::default()
        },
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect("pulled");
    assert_eq!(
        launch,
        Launch::Stdio {
            command: "docker".into(),
            args: [
                "run",
                "-i",
                "--rm",
                "-e",
                "FIXED",
                "-e",
                "TOKEN",
                "--network",
                "none",
                "ghcr.io/example/server:1.0.0",
                "serve"
            ]
            .map(str::to_owned)
            .into(),
            env: BTreeMap::from([("FIXED".to_owned(), "1".to_owned())]),
        }
    );
}

/// A stand-in `docker` whose engine answers but whose `pull` hangs (as one on a stalled
/// registry does), after starting a child of its own and writing both pids to `pids`.
fn hanging_docker(tmp: &Path, pids: &Path) -> Vec<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let bin = tmp.join("bin-hang");
    std::fs::create_dir_all(&bin).expect("bin");
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in info) exit 0;; esac\nsleep 3600 &\necho \"$$ $!\" > '{}'\nwait\n",
        pids.display()
    );
    let path = bin.join("docker");
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    vec![(
        "PATH".to_owned(),
        format!("{}:/usr/bin:/bin", bin.display()),
    )]
}

/// Regression: steps had no deadline, so a hung `docker pull` (or npm postinstall) kept its
/// operation in progress, and its slot taken, for ever.
#[tokio::test]
async fn a_step_past_its_deadline_is_killed_with_its_group_and_fails_the_install() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pids = tmp.path().join("pull.pids");
    let dir = tmp.path().join("hung");
    let settings = Settings {
        env: hanging_docker(tmp.path(), &pids),
        deadline: Duration::from_secs(2),
        ..Settings::default()
    };
    let (resolution, cancel) = (oci_resolution(), CancellationToken::new());
    let started = Instant::now();
    let install = install_with(&resolution, &dir, &settings, &cancel, &|_, _| {});
    let error = tokio::time::timeout(Duration::from_secs(30), install)
        .await
        .expect("the install ends at its step's deadline")
        .expect_err("the pull never ends");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let InstallError::TimedOut { command, after, .. } = &error else {
        panic!("expected TimedOut, got {error}");
    };
    assert_eq!(command, "docker pull ghcr.io/example/server:1.0.0");
    assert_eq!(*after, Duration::from_secs(2));
    let text = error.to_string();
    assert!(
        text.contains("was stopped after 2 s without finishing"),
        "{text}"
    );
    assert!(!dir.exists(), "the directory is removed");
    let text = std::fs::read_to_string(&pids).expect("the pull wrote its pids");
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|pid| pid.parse().expect("pid"))
        .collect();
    assert_eq!(pids.len(), 2, "{text}");
    let gone_by = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|pid| alive(*pid)) && Instant::now() < gone_by {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pid in pids {
        assert!(!alive(pid), "process {pid} of the hung step is gone");
    }
}

#[tokio::test]
async fn remotes_install_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("remote");
    let resolution = Resolution {
        name: "io.example/remote".into(),
        version: "1.0.0".into(),
        choice: Choice::Remote {
            transport: RemoteKind::Sse,
            url: "https://example.com/sse".into(),
            headers: BTreeMap::new(),
        },
        inputs: vec![],
        preview: String::new(),
    };
    let launch = install(
        &resolution,
        &dir,
        STEP_DEADLINE,
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect("remote");
    assert_eq!(
        launch,
        Launch::Sse {
            url: "https://example.com/sse".into(),
            headers: BTreeMap::new()
        }
    );
    assert!(!dir.exists());
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    assert!(matches!(
        install(&resolution, &dir, STEP_DEADLINE, &cancelled, &|_, _| {}).await,
        Err(InstallError::Cancelled)
    ));
}

/// A wheel of a project `thing-server` with one console script.
fn wheel(tmp: &Path) -> PathBuf {
    let path = tmp.join("thing_server-1.0.0-py3-none-any.whl");
    let script = r#"
import sys, zipfile
files = {
    "thing_server/__init__.py": "def main():\n    print('thing from python')\n",
    "thing_server-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: thing-server\nVersion: 1.0.0\n",
    "thing_server-1.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "thing_server-1.0.0.dist-info/entry_points.txt": "[console_scripts]\nthing-server = thing_server:main\n\n[other]\nx = y:z\n",
}
record = "".join(f"{name},,\n" for name in files) + "thing_server-1.0.0.dist-info/RECORD,,\n"
files["thing_server-1.0.0.dist-info/RECORD"] = record
with zipfile.ZipFile(sys.argv[1], "w") as archive:
    for name, text in files.items():
        archive.writestr(name, text)
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .status()
        .expect("python3");
    assert!(status.success());
    path
}

#[tokio::test]
async fn pypi_installs_a_local_wheel_into_a_venv_and_launches_its_script() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let wheel = wheel(tmp.path());
    let dir = tmp.path().join("py");
    let resolution = Resolution {
        name: "io.example/thing".into(),
        version: "1.0.0".into(),
        choice: Choice::Pypi {
            package: "Thing_Server".into(),
            version: "1.0.0".into(),
            package_args: vec!["--x".into()],
            env: BTreeMap::new(),
        },
        inputs: vec![],
        preview: String::new(),
    };
    let env = vec![
        ("PIP_NO_INDEX".to_owned(), "1".to_owned()),
        (
            "PIP_CACHE_DIR".to_owned(),
            tmp.path().join("pip-cache").display().to_string(),
        ),
    ];
    let launch = install_with(
        &resolution,
        &dir,
        &overrides(&wheel, env),
        &CancellationToken::new(),
        &|_, _| {},
    )
    .await
    .expect("pip install");
    let Launch::Stdio { command, args, .. } = launch else {
        panic!("expected stdio");
    };
    assert_eq!(PathBuf::from(&command), dir.join("venv/bin/thing-server"));
    assert_eq!(args, ["--x"]);
    let ran = Command::new(&command).output().expect("run the script");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout).trim(),
        "thing from python"
    );
}

#[test]
fn the_bin_is_named_after_the_package_or_is_the_only_one() {
    let pick = |package: &str, bin: Value| pick_bin(package, &json!({"bin": bin}));
    assert_eq!(pick("@scope/tool", json!("cli.js")), Ok("tool".into()));
    assert_eq!(
        pick("@scope/tool", json!({"other": "a.js", "tool": "b.js"})),
        Ok("tool".into())
    );
    assert_eq!(
        pick(
            "@modelcontextprotocol/server-memory",
            json!({"mcp-server-memory": "dist/index.js"})
        ),
        Ok("mcp-server-memory".into())
    );
    let several = pick("tool", json!({"a": "a.js", "b": "b.js"})).expect_err("several");
    assert!(several.contains("a, b"), "{several}");
    assert!(pick_bin("tool", &json!({})).is_err());
}

#[test]
fn the_console_script_is_named_after_the_package_or_is_the_only_one() {
    let text = "[console_scripts]\nmcp-server-time = mcp_server_time:main\nhelper = x:y\n";
    assert_eq!(
        pick_script("mcp_server.time", text),
        Ok("mcp-server-time".into())
    );
    let several = pick_script("other", text).expect_err("several");
    assert!(several.contains("mcp-server-time, helper"), "{several}");
    assert_eq!(
        pick_script("other", "[console_scripts]\nonly = a:b\n"),
        Ok("only".into())
    );
    assert!(pick_script("x", "[gui_scripts]\ng = a:b\n").is_err());
    assert_eq!(normalize("Foo_Bar.baz"), "foo-bar-baz");
}

/// Field `n` (1-based, as proc(5) counts) of a `/proc/PID/stat` line, as a number.
fn stat_field(stat: &str, n: usize) -> i32 {
    let (_, rest) = stat.rsplit_once(") ").expect("stat line");
    // `rest` starts at field 3 (the state).
    rest.split_whitespace()
        .nth(n - 3)
        .and_then(|field| field.parse().ok())
        .unwrap_or_else(|| panic!("field {n} of {stat}"))
}

/// proc(5)'s fields: the niceness and the scheduling policy (5 = SCHED_IDLE).
const NICE_FIELD: usize = 19;
const POLICY_FIELD: usize = 41;

#[tokio::test]
async fn steps_run_at_low_priority_and_show_the_real_command() {
    if !process::on_path("nice", &[]) {
        eprintln!("no `nice` on PATH: steps run at normal priority, nothing to check");
        return;
    }
    let own = std::fs::read_to_string("/proc/self/stat").expect("own stat");
    let step = process::Step {
        program: "cat",
        args: vec!["/proc/self/stat".to_owned()],
        env: &[],
        deadline: STEP_DEADLINE,
    };
    assert_eq!(
        step.command_line(),
        "cat /proc/self/stat",
        "no priority prefix shown"
    );
    let stat = step.run(&CancellationToken::new()).await.expect("cat runs");
    let niceness = (stat_field(&own, NICE_FIELD) + process::NICENESS).min(19);
    assert_eq!(stat_field(&stat, NICE_FIELD), niceness, "{stat}");
    // SCHED_IDLE wherever `chrt` can set it here.
    let idle_policy = process::on_path("chrt", &[])
        && Command::new("chrt")
            .args(["--idle", "0", "true"])
            .status()
            .is_ok_and(|status| status.success());
    if idle_policy {
        assert_eq!(stat_field(&stat, POLICY_FIELD), 5, "SCHED_IDLE: {stat}");
    }
    if process::on_path("ionice", &[]) {
        // `ionice` with no arguments prints its own IO class.
        let step = process::Step {
            program: "ionice",
            args: vec![],
            env: &[],
            deadline: STEP_DEADLINE,
        };
        let class = step
            .run(&CancellationToken::new())
            .await
            .expect("ionice runs");
        assert!(class.starts_with("idle"), "{class}");
    }
    // A missing program is still reported as missing, not as `nice` failing.
    let missing = process::Step {
        program: "no-such-program-here",
        args: vec![],
        env: &[],
        deadline: STEP_DEADLINE,
    };
    let error = missing
        .run(&CancellationToken::new())
        .await
        .expect_err("not there");
    assert!(matches!(error, InstallError::Unavailable(_)), "{error}");
}

#[tokio::test]
async fn an_installer_step_sees_what_installers_need_and_not_the_gateways_environment() {
    // Cargo gives the test process variables no installer needs.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    async fn printenv(name: &str, env: &[(String, String)]) -> Result<String, InstallError> {
        let step = process::Step {
            program: "printenv",
            args: vec![name.to_owned()],
            env,
            deadline: Duration::from_secs(10),
        };
        step.run(&CancellationToken::new()).await
    }
    let given = [("npm_config_cache".to_owned(), "/tmp/cache".to_owned())];
    assert!(printenv("PATH", &[]).await.is_ok(), "PATH is passed on");
    let own = printenv("npm_config_cache", &given)
        .await
        .expect("set by the step");
    assert!(own.contains("/tmp/cache"), "{own}");
    let leaked = printenv("CARGO_MANIFEST_DIR", &[]).await;
    assert!(
        matches!(leaked, Err(InstallError::Failed { .. })),
        "the gateway's own variable reached an installer: {leaked:?}"
    );
    assert!(process::passed_to_installers("HTTPS_PROXY"));
    assert!(process::passed_to_installers("PIP_INDEX_URL"));
    assert!(!process::passed_to_installers(
        "SWITCHBOARD_SECRET_GITHUB_TOKEN"
    ));
    assert!(!process::passed_to_installers("AWS_SECRET_ACCESS_KEY"));
}
