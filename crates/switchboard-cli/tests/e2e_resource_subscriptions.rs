//! Resource subscriptions of several HTTP sessions to one real server (the conformance
//! fixture, which reads back what it is subscribed to at `test://subscriptions`): the server
//! hears the first subscribe and the last unsubscribe, a session cannot end another's
//! subscription, a closed session's subscriptions end, and a server that restarts is
//! subscribed again, its subscribers told to read their resources again — once its resources
//! are listed, so a read at once is its own even where another server's template overlaps
//! the URI.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

struct Session<'a> {
    url: &'a str,
    id: String,
}

/// The JSON-RPC message of an answer, plain or as one SSE event.
fn message_of(body: &str) -> Value {
    let json = body
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(body);
    serde_json::from_str(json.trim()).unwrap_or_else(|error| panic!("{error}: {body}"))
}

async fn open(url: &str) -> Session<'_> {
    let response = http_client()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}))
        .send()
        .await
        .expect("initialize");
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .expect("a session id")
        .to_owned();
    let session = Session { url, id };
    session
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    session
}

impl Session<'_> {
    async fn send(&self, message: Value) -> String {
        http_client()
            .post(self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .expect("post")
            .text()
            .await
            .expect("body")
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let answer = message_of(
            &self
                .send(json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}))
                .await,
        );
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// What the server says it is subscribed to.
    async fn server_subscriptions(&self) -> Vec<String> {
        let read = self
            .request("resources/read", json!({"uri": "test://subscriptions"}))
            .await;
        let text = read["contents"][0]["text"].as_str().unwrap_or("[]");
        serde_json::from_str(text).expect("a list of URIs")
    }

    /// The session's GET stream, open.
    async fn listen(&self) -> reqwest::Response {
        let stream = http_client()
            .get(self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("get");
        assert_eq!(stream.status().as_u16(), 200, "the GET stream opens");
        stream
    }

    async fn close(&self) {
        let status = http_client()
            .delete(self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("delete")
            .status();
        assert!(status.is_success(), "{status}");
    }
}

/// The ids of `pid`'s child processes that run the fixture (the gateway has a reaper child
/// too), but not the one that shadows the others' resources.
fn children(pid: u32) -> Vec<u32> {
    let output = std::process::Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .expect("pgrep (procps) lists child processes");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .filter(|child: &u32| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains("switchboard-fixture"))
                && std::fs::read(format!("/proc/{child}/environ")).is_ok_and(|env| {
                    !String::from_utf8_lossy(&env).contains("CONFORMANCE_SHADOW_PREFIX")
                })
        })
        .collect()
}

const URI: &str = "test://static-text";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_hears_the_first_subscribe_and_the_last_unsubscribe_and_again_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    // c lists its resources slowly, so a restarted c serves a while before they are listed;
    // d's template covers c's `test://static-…` resources.
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.c]\ncommand = {fixture}\nargs = [\"conformance\"]\nenv = {{ CONFORMANCE_SLOW_RESOURCE_LIST_MS = \"1500\" }}\n\n\
             [servers.d]\ncommand = {fixture}\nargs = [\"conformance\"]\nenv = {{ CONFORMANCE_SHADOW_PREFIX = \"test://static\" }}\n",
            fixture = quoted(&fixture())
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.as_str();
    let (a, b, c) = (open(url).await, open(url).await, open(url).await);
    let subscribe = json!({"uri": URI});

    a.request("resources/subscribe", subscribe.clone()).await;
    b.request("resources/subscribe", subscribe.clone()).await;
    assert_eq!(a.server_subscriptions().await, vec![URI]);
    // c never subscribed: its unsubscribe ends nobody's updates.
    c.request("resources/unsubscribe", subscribe.clone()).await;
    assert_eq!(a.server_subscriptions().await, vec![URI]);
    // b leaves; a still wants the updates.
    b.request("resources/unsubscribe", subscribe.clone()).await;
    assert_eq!(a.server_subscriptions().await, vec![URI]);

    // The server restarts: its new process is subscribed again, and a's GET stream hears
    // that the resource may have changed (a change between the restart and the subscription
    // would have been announced to nobody).
    let mut stream = a.listen().await;
    let server = children(gateway.child.id());
    assert_eq!(server.len(), 1, "one server process: {server:?}");
    let killed = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(server[0]).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(killed.is_ok(), "{killed:?}");
    let again = wait_for(Duration::from_secs(20), || {
        let now = children(gateway.child.id());
        (now.len() == 1 && now != server).then_some(())
    });
    assert!(again.is_some(), "the server was not restarted");
    let mut buffer = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let update = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let message = shared_replicas::next_message(&mut stream, &mut buffer, left)
            .await
            .expect("an update notice after the restart, though nothing changed");
        if message["method"] == "notifications/resources/updated" {
            break message;
        }
    };
    assert_eq!(update["params"]["uri"], URI, "{update}");
    // The notice follows the restarted server's listing: a read at once is its own, not d's
    // (whose template would take the URI while c lists nothing), and it is subscribed again.
    let read = a.request("resources/read", json!({"uri": URI})).await;
    assert_eq!(
        read["contents"][0]["text"], "This is the content of the static text resource.",
        "the read after the notice went elsewhere: {read}"
    );
    assert_eq!(
        a.server_subscriptions().await,
        vec![URI],
        "the restarted server lost the subscription"
    );

    // The last subscriber leaves: the server is unsubscribed.
    a.request("resources/unsubscribe", subscribe.clone()).await;
    assert_eq!(b.server_subscriptions().await, Vec::<String>::new());

    // A closed session's subscriptions end with it.
    b.request("resources/subscribe", subscribe.clone()).await;
    assert_eq!(c.server_subscriptions().await, vec![URI]);
    b.close().await;
    let mut after_close = vec![URI.to_owned()];
    for _ in 0..50 {
        after_close = c.server_subscriptions().await;
        if after_close.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        after_close,
        Vec::<String>::new(),
        "a closed session kept its subscription"
    );
}
