//! `switchboard console` against a real `switchboard serve`: the command mints a one-time
//! sign-in link through the admin endpoint, the link signs a browser in once, and the
//! console reads the gateway's own ledger (a call made with `switchboard call` shows up).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_command_prints_a_link_that_signs_in_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger.display().to_string()),
            quoted(&fixture())
        ),
    );
    let admin_file = dir.path().join("admin.json");
    let admin_arg = admin_file.display().to_string();
    let mut gateway = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0", "--admin-file", &admin_arg])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the gateway");
    let mut lines = BufReader::new(gateway.stderr.take().expect("stderr")).lines();
    for line in lines.by_ref() {
        if line
            .expect("stderr")
            .starts_with("switchboard: listening on ")
        {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));

    let echoed = run_bare(&config, &["call", "fx__echo", "message=from the CLI"]);
    assert!(
        echoed.status.success(),
        "{}",
        String::from_utf8_lossy(&echoed.stderr)
    );

    let printed = run_bare(
        &config,
        &[
            "console",
            "--no-open",
            "--operator",
            "dana",
            "--admin-file",
            &admin_arg,
        ],
    );
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let stdout = String::from_utf8_lossy(&printed.stdout).into_owned();
    let link = stdout
        .lines()
        .find_map(|line| line.strip_prefix("sign in (once, within 120 s): "))
        .unwrap_or_else(|| panic!("a sign-in link in {stdout}"))
        .to_owned();
    assert!(
        link.starts_with("http://127.0.0.1:") && link.contains("/console/sign-in/"),
        "{link}"
    );

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let signed_in = http.get(&link).send().await.expect("GET the link");
    assert_eq!(signed_in.status(), 303);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let base = link.split("/console/").next().expect("base").to_owned();
    let page = async |path: &str| {
        http.get(format!("{base}{path}"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .expect("body")
    };
    let audit = page("/console/audit").await;
    assert!(
        audit.contains("signed in as <strong>dana</strong>"),
        "{audit}"
    );
    assert!(
        audit.contains("fx__echo"),
        "the gateway's own ledger: {audit}"
    );
    let servers = page("/console/servers").await;
    assert!(servers.contains("data-server=\"fx\""), "{servers}");

    let again = http.get(&link).send().await.expect("GET the link again");
    assert_eq!(again.status(), 401, "the link works once");
    // The admin endpoint's own routes still want its bearer token.
    let status = http
        .get(format!("{base}/status"))
        .send()
        .await
        .expect("GET");
    assert_eq!(status.status(), 401);

    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(gateway.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = gateway.wait();
}
