//! `public_only` on an HTTP server is checked when its connection is made, not once when it
//! is installed: a real MCP server (`switchboard-fixture http-echo`) reached as
//! `http://localhost:PORT/mcp` is refused at connect, the error naming the host, the address
//! it resolved to and why; the same server without the key connects.

mod support;

use std::path::Path;

use support::{Echo, parse_config};
use switchboard::Host;

/// A Host of one HTTP server, `remote`, at `url`, `public_only` or not; its files in `dir`.
async fn started(dir: &Path, url: &str, public_only: bool) -> Host {
    let text = format!(
        "[gateway]\nconnect_timeout = \"5s\"\npins = \"pins.json\"\n\n\
         [servers.remote]\nurl = \"{url}\"\npublic_only = {public_only}\n"
    );
    let config = parse_config(&text, &dir.join("switchboard.toml"));
    let host = Host::from_config(&config).expect("host");
    host.ready().await;
    host
}

fn report(host: &Host) -> switchboard::ServerReport {
    host.status()
        .into_iter()
        .find(|report| report.server == "remote")
        .expect("the server is reported")
}

#[tokio::test]
async fn a_public_only_server_on_loopback_is_refused_at_connect_and_reached_without_the_key() {
    let echo = Echo::start();
    let port = echo
        .address
        .rsplit_once(':')
        .map(|(_, port)| port.to_owned())
        .expect("a port");
    let url = format!("http://localhost:{port}/mcp");
    let dir = tempfile::tempdir().expect("tempdir");

    let held = started(dir.path(), &url, true).await;
    let refused = report(&held);
    assert_eq!(refused.state, "down", "{refused:?}");
    let error = refused.error.unwrap_or_default();
    assert!(
        error.contains("localhost resolves to")
            && error.contains("loopback")
            && error.contains("public_only"),
        "{error}"
    );
    held.shutdown().await;

    let plain = started(dir.path(), &url, false).await;
    let reached = report(&plain);
    assert_eq!(reached.state, "up", "{reached:?}");
    assert!(reached.tools > 0, "{reached:?}");
    plain.shutdown().await;
}
