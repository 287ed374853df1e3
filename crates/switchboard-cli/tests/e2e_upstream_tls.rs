//! `[servers.ID.tls]` end to end: the real gateway (`switchboard status` and `call`) in front
//! of `switchboard-fixture http-echo` over HTTPS, with certificates a CA made for the test
//! signed (`switchboard_testkit::certs`, the `openssl` CLI). Without `tls.ca` the server's
//! certificate is refused, saying to name its CA; with it the call goes through. When the
//! server asks for a client certificate (mutual TLS), a gateway without one is refused in
//! words that name tls.cert and tls.key, and one with them is let in. A legacy HTTP+SSE
//! server on the official Python SDK over HTTPS (its message endpoint joined to the stream's
//! URL) is reached with its CA too. A certificate without its key, or a key others may read,
//! is refused before anything starts. `servers add --tls-ca/--tls-cert/--tls-key` adds such a
//! server to a running gateway, and `--tls-*` on a plain http:// URL is refused, the file
//! untouched. A client certificate renewed over the same paths is taken by `switchboard
//! reload`, which restarts that server alone. A CA in the system's store (`SSL_CERT_FILE`)
//! is trusted without `tls.ca`, and a store the environment names that cannot be read fails
//! the server's start, saying so.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::*;
use switchboard_testkit::certs::{Issued, TestCa};

/// The test CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`.
fn certificates(dir: &Path) -> (TestCa, Issued, Issued) {
    let ca = TestCa::make(dir).unwrap_or_else(|error| panic!("{error}"));
    let server = ca
        .issue_server("server")
        .unwrap_or_else(|error| panic!("{error}"));
    let client = ca
        .issue_client("gateway", "switchboard")
        .unwrap_or_else(|error| panic!("{error}"));
    (ca, server, client)
}

/// The echo fixture over HTTPS, asking for a client certificate from `client_ca` if given.
fn https_echo(server: &Issued, client_ca: Option<&Path>) -> (Fixture, String) {
    let (cert, key) = (
        server.cert.display().to_string(),
        server.key.display().to_string(),
    );
    let mut args = vec!["http-echo", "--tls-cert", &cert, "--tls-key", &key];
    let ca = client_ca.map(|ca| ca.display().to_string());
    if let Some(ca) = &ca {
        args.extend(["--client-ca", ca]);
    }
    let fixture = Fixture::start(&args);
    let url = format!("https://{}/mcp", fixture.address);
    (fixture, url)
}

/// A config in `dir` with the server `private` at `url` and `tls` (an inline table's body).
fn config(dir: &Path, url: &str, tls: &str) -> std::path::PathBuf {
    let tls = if tls.is_empty() {
        String::new()
    } else {
        format!("tls = {{ {tls} }}\n")
    };
    write_config(
        dir,
        &format!(
            "[gateway]\nconnect_timeout = \"10s\"\n\n[servers.private]\nurl = \"{url}\"\n{tls}"
        ),
    )
}

/// `switchboard --config CONFIG ARGS...` with `SSL_CERT_FILE` set to `store`, or with
/// neither it nor `SSL_CERT_DIR` set.
fn run_with_store(config: &Path, args: &[&str], store: Option<&Path>) -> std::process::Output {
    let mut command = Command::new(switchboard());
    command.arg("--config").arg(config).args(args);
    command
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    if let Some(store) = store {
        command.env("SSL_CERT_FILE", store);
    }
    command.output().expect("run switchboard")
}

/// The server's entry in `switchboard status --json`.
fn status(config: &Path) -> Value {
    status_with(config, None)
}

/// The server's entry in `switchboard status --json`, the system's CA store as [`run_with_store`].
fn status_with(config: &Path, store: Option<&Path>) -> Value {
    let status = stdout_json(&run_with_store(config, &["status", "--json"], store));
    status["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["server"] == "private"))
        .cloned()
        .unwrap_or_else(|| panic!("no server 'private' in {status}"))
}

/// What `switchboard call private__echo message=over tls` printed, if it succeeded.
fn echo(config: &Path) -> Result<String, String> {
    echo_with(config, None)
}

/// What `switchboard call private__echo message=over tls` printed, if it succeeded, the
/// system's CA store as [`run_with_store`].
fn echo_with(config: &Path, store: Option<&Path>) -> Result<String, String> {
    let output = run_with_store(
        config,
        &["call", "private__echo", "message=over tls"],
        store,
    );
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{stdout}\n{stderr}"))
    }
}

/// `switchboard config check CONFIG`.
fn check(config: &Path) -> std::process::Output {
    let file = config.display().to_string();
    run_bare(config, &["config", "check", &file])
}

#[test]
fn a_private_ca_is_trusted_only_where_the_server_names_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ca, server, _) = certificates(dir.path());
    let (_fixture, url) = https_echo(&server, None);

    let untrusted = config(dir.path(), &url, "");
    let entry = status(&untrusted);
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        entry["state"] != "up"
            && error.contains("not signed by a CA the gateway trusts")
            && error.contains("tls.ca"),
        "{entry}"
    );
    assert!(
        echo(&untrusted).is_err(),
        "a call went to an untrusted server"
    );

    let trusted = config(dir.path(), &url, "ca = \"ca.pem\"");
    assert_eq!(status(&trusted)["state"], "up", "{}", status(&trusted));
    assert_eq!(echo(&trusted).as_deref(), Ok("over tls"));
}

/// A CA the operator put in the system's store (here `SSL_CERT_FILE`, as OpenSSL reads it)
/// is trusted for every server without naming it in the config; a store the environment
/// names that cannot be read is an error that says so, not a quiet fall-back to fewer roots.
#[test]
fn a_ca_in_the_systems_store_is_trusted_without_tls_ca() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ca, server, _) = certificates(dir.path());
    let (_fixture, url) = https_echo(&server, None);
    let config = config(dir.path(), &url, "");

    assert_ne!(
        status_with(&config, None)["state"],
        "up",
        "trusted without the store"
    );
    let store = Some(ca.ca_file());
    assert_eq!(
        status_with(&config, store)["state"],
        "up",
        "{}",
        status_with(&config, store)
    );
    assert_eq!(echo_with(&config, store).as_deref(), Ok("over tls"));

    let missing = dir.path().join("no-such-bundle.pem");
    let entry = status_with(&config, Some(&missing));
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        entry["state"] != "up"
            && error.contains("SSL_CERT_FILE=")
            && error.contains("no-such-bundle.pem")
            && error.contains("fix or unset it"),
        "{entry}"
    );
}

#[test]
fn a_server_that_asks_for_a_client_certificate_gets_the_configured_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ca, server, _) = certificates(dir.path());
    let (_fixture, url) = https_echo(&server, Some(ca.ca_file()));

    let without = config(dir.path(), &url, "ca = \"ca.pem\"");
    let entry = status(&without);
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        entry["state"] != "up"
            && error.contains("refused the gateway's client certificate")
            && error.contains("tls.cert and tls.key"),
        "{entry}"
    );

    let with = config(
        dir.path(),
        &url,
        "ca = \"ca.pem\", cert = \"gateway.crt\", key = \"gateway.key\"",
    );
    assert_eq!(status(&with)["state"], "up", "{}", status(&with));
    assert_eq!(echo(&with).as_deref(), Ok("over tls"));
}

/// A peer process, killed when dropped.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_legacy_sse_server_over_https_is_reached_with_its_ca() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ca, server, _) = certificates(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let python = Peer(
        Command::new(venv_bin().join("python"))
            .arg(repo_root().join("e2e/py/http_server.py"))
            .args(["sse", &port.to_string()])
            .arg(&server.cert)
            .arg(&server.key)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python server"),
    );
    let listening = wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(listening.is_some(), "the Python server does not listen");
    let url = format!("https://127.0.0.1:{port}/sse");
    let text = format!(
        "[gateway]\nconnect_timeout = \"15s\"\n\n[servers.private]\nurl = \"{url}\"\n\
         transport = \"sse\"\ntls = {{ ca = \"ca.pem\" }}\n"
    );
    let config = write_config(dir.path(), &text);
    let entry = status(&config);
    assert_eq!(
        (entry["state"].as_str(), entry["transport"].as_str()),
        (Some("up"), Some("sse")),
        "{entry}"
    );
    let output = run_bare(&config, &["call", "private__add", "a=2", "b=3"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "5");
    drop(python);
}

#[test]
fn a_client_certificate_without_its_key_or_with_an_open_key_is_refused_before_starting() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, _, client) = certificates(dir.path());
    let url = "https://127.0.0.1:9/mcp";

    let alone = config(dir.path(), url, "ca = \"ca.pem\", cert = \"gateway.crt\"");
    let output = check(&alone);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success()
            && said.contains("switchboard.toml:6:")
            && said.contains("servers.private.tls.cert is set but servers.private.tls.key is not"),
        "{said}"
    );

    std::fs::set_permissions(&client.key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let open = config(
        dir.path(),
        url,
        "cert = \"gateway.crt\", key = \"gateway.key\"",
    );
    let output = check(&open);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success()
            && said.contains("servers.private.tls.key")
            && said.contains("gateway.key")
            && said.contains("chmod 600"),
        "{said}"
    );
}

/// A gateway running (`serve --http`, its admin file in `dir`) on a config in `dir`: the
/// built-in `clock`, then `servers` (TOML tables).
fn running(dir: &Path, servers: &str) -> (support::live::Live, std::path::PathBuf) {
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nconnect_timeout = \"10s\"\n\n[servers.clock]\nbuiltin = \"clock\"\n{servers}"
        ),
    );
    (support::live::Live::start(dir, config.clone(), &[]), config)
}

#[test]
fn servers_add_with_tls_flags_reaches_a_mutual_tls_server_on_a_running_gateway() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ca, server, client) = certificates(dir.path());
    let (_fixture, url) = https_echo(&server, Some(ca.ca_file()));
    let (live, config) = running(dir.path(), "");
    let (ca_file, cert, key) = (
        ca.ca_file().display().to_string(),
        client.cert.display().to_string(),
        client.key.display().to_string(),
    );

    // A certificate without its key is refused by the command itself.
    let half = live.cli(&[
        "servers",
        "add",
        "private",
        "--url",
        &url,
        "--tls-ca",
        &ca_file,
        "--tls-cert",
        &cert,
    ]);
    assert!(!half.status.success());
    assert!(
        String::from_utf8_lossy(&half.stderr).contains("--tls-key"),
        "{}",
        String::from_utf8_lossy(&half.stderr)
    );
    // TLS files for a plain http:// server: refused by the gateway, the file as it was.
    let before = std::fs::read_to_string(&config).expect("read");
    let plain = live.cli(&[
        "servers",
        "add",
        "plain",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--tls-ca",
        &ca_file,
    ]);
    assert!(!plain.status.success());
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("https://"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).expect("read"), before);

    // Tried first: `servers test` with the same flags connects a copy and adds nothing.
    let entry = [
        "--json",
        "--url",
        &url,
        "--tls-ca",
        &ca_file,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ];
    let tested = live.json(&[&["servers", "test", "private"][..], &entry].concat());
    assert_eq!(tested["verdict"], "ok", "{tested}");
    let untrusted = live.cli(&["servers", "test", "private", "--json", "--url", &url]);
    let untrusted = String::from_utf8_lossy(&untrusted.stdout).into_owned();
    assert!(
        untrusted.contains("\"failed\"") && untrusted.contains("tls.ca"),
        "{untrusted}"
    );

    let added = live.json(&[&["servers", "add", "private"][..], &entry].concat());
    assert_eq!(added["servers"][0]["action"], "added", "{added}");
    assert_eq!(added["servers"][0]["state"], "up", "{added}");
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(
        written.ends_with(&format!(
            "[servers.private]\nurl = \"{url}\"\ntls = {{ ca = \"{ca_file}\", cert = \"{cert}\", key = \"{key}\" }}\n"
        )),
        "{written}"
    );
    let answer = live.call("private__echo", r#"{"message": "added over tls"}"#);
    assert_eq!(
        support::live::text_of(&answer),
        "added over tls",
        "{answer}"
    );
}

#[test]
fn a_reload_after_a_certificate_is_renewed_in_place_restarts_that_server_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ca, server, _) = certificates(dir.path());
    let (_fixture, url) = https_echo(&server, Some(ca.ca_file()));
    let (live, _) = running(
        dir.path(),
        &format!(
            "\n[servers.private]\nurl = \"{url}\"\n\
             tls = {{ ca = \"ca.pem\", cert = \"gateway.crt\", key = \"gateway.key\" }}\n"
        ),
    );
    let generation = |id: &str| {
        support::live::server(&live.status(), id).expect("in status")["generation"].clone()
    };
    assert_eq!(generation("private"), 1);

    // Nothing renewed: a reload restarts nothing.
    let reloaded = live.json(&["reload", "--json"]);
    let restarted = |report: &Value| -> Vec<String> {
        report["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["action"] == "restarted")
            .filter_map(|s| s["server"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(restarted(&reloaded).is_empty(), "{reloaded}");

    // Renewed over the same paths (a new key, a new certificate): that server restarts.
    ca.issue_client("gateway", "switchboard")
        .unwrap_or_else(|error| panic!("{error}"));
    let reloaded = live.json(&["reload", "--json"]);
    assert_eq!(restarted(&reloaded), ["private"], "{reloaded}");
    assert_eq!(
        (generation("private"), generation("clock")),
        (Value::from(2), Value::from(1))
    );
    let answer = live.call("private__echo", r#"{"message": "renewed"}"#);
    assert_eq!(support::live::text_of(&answer), "renewed", "{answer}");
}
