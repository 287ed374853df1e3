//! Fronts as replicas over real HTTP on 127.0.0.1: a legacy session started on one front is
//! served by another sharing the key ring (and refused by one with another ring, on another
//! route, or after DELETE where it was deleted); `/livez` and `/readyz`; a shutdown turns
//! readiness off at once and ends GET streams with a `retry:` hint.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_mcp::front::Dispatcher;
use switchboard_mcp::front::http::{HttpOptions, Lifecycle, LocalEndedSessions, serve};
use switchboard_mcp::seal::{FixedKeys, KeyRing, Keys};
use tokio_util::sync::CancellationToken;

struct Replica {
    base: String,
    client: reqwest::Client,
    shutdown: CancellationToken,
    lifecycle: Lifecycle,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn replica(keys: Arc<dyn Keys>) -> Replica {
    let (backend, _version, _cancelled) = support::fake_backend();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address: SocketAddr = listener.local_addr().expect("address");
    let lifecycle = Lifecycle::default();
    let options = HttpOptions {
        max_message_bytes: 1 << 20,
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        check_host: true,
        auth: None,
        oauth: None,
        connection_workers: 0,
        connections: switchboard_mcp::front::http::ConnectionLimits::default(),
        keys,
        lifecycle: lifecycle.clone(),
        ended_sessions: Arc::new(LocalEndedSessions::default()),
        answer_routes: None,
    };
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        Dispatcher::new(backend, None),
        listener,
        options,
        shutdown.clone(),
    ));
    Replica {
        base: format!("http://{address}"),
        client: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client"),
        shutdown,
        lifecycle,
        served,
    }
}

fn ring(secret: &[u8]) -> Arc<dyn Keys> {
    Arc::new(FixedKeys(Arc::new(KeyRing::from_secret(secret))))
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

impl Replica {
    fn post(&self, path: &str, body: &str, session: Option<&str>) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_owned());
        match session {
            Some(session) => request.header("mcp-session-id", session),
            None => request,
        }
    }

    async fn initialize(&self, path: &str) -> String {
        let init = self
            .post(path, INIT, None)
            .send()
            .await
            .expect("initialize");
        assert_eq!(init.status(), 200);
        init.headers()
            .get("mcp-session-id")
            .expect("session id")
            .to_str()
            .expect("ascii")
            .to_owned()
    }

    async fn list_status(&self, path: &str, session: &str) -> (u16, String) {
        let answer = self
            .post(path, LIST, Some(session))
            .send()
            .await
            .expect("list");
        (answer.status().as_u16(), answer.text().await.expect("body"))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let answer = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("get");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test]
async fn a_session_moves_between_replicas_sharing_the_ring() {
    let shared = ring(b"deployment ring");
    let (a, b) = (replica(shared.clone()).await, replica(shared).await);
    let stranger = replica(ring(b"another deployment")).await;
    let session = a.initialize("/mcp").await;
    assert!(session.len() < 1024, "{} bytes", session.len());
    assert!(
        session.bytes().all(|c| (0x21..=0x7e).contains(&c)),
        "visible ASCII"
    );

    let (status, body) = b.list_status("/mcp", &session).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("echo"), "{body}");
    let (status, body) = stranger.list_status("/mcp", &session).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("does not hold"), "{body}");
    // Minted on /mcp: not valid on another agent's endpoint, on any replica.
    for replica in [&a, &b] {
        let (status, body) = replica.list_status("/mcp/agents/qa", &session).await;
        assert_eq!(status, 404, "{body}");
        assert!(
            body.contains("another agent") || body.contains("another route"),
            "{body}"
        );
    }
    // Another first character: the version byte's bits change, whatever they were.
    let other = if session.starts_with('A') { 'B' } else { 'A' };
    let tampered = format!("{other}{}", &session[1..]);
    let (status, _) = b.list_status("/mcp", &tampered).await;
    assert_eq!(status, 404);

    // DELETE on B ends it there (and its GET stream too); A, which never heard, still holds
    // it: that is the documented limit of a deployment without a shared store.
    let deleted = b
        .client
        .delete(format!("{}/mcp", b.base))
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 204);
    let (status, body) = b.list_status("/mcp", &session).await;
    assert_eq!(status, 404);
    assert!(body.contains("ended"), "{body}");
}

#[tokio::test]
async fn readiness_turns_off_at_once_on_shutdown_and_streams_end_with_a_retry_hint() {
    let front = replica(Arc::new(FixedKeys::ephemeral())).await;
    assert_eq!(front.get("/livez").await.0, 200);
    let (status, body) = front.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready");

    let session = front.initialize("/mcp").await;
    let stream = front
        .client
        .get(format!("{}/mcp", front.base))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("GET stream");
    assert_eq!(stream.status(), 200);
    front.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(2), async {
        while !front.lifecycle.is_draining() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("draining starts");
    let text = tokio::time::timeout(Duration::from_secs(5), stream.text())
        .await
        .expect("the stream ends")
        .expect("body");
    assert!(text.contains("retry: 1000"), "{text}");
    let served = tokio::time::timeout(Duration::from_secs(5), front.served)
        .await
        .expect("the front stops once its streams are closed");
    assert!(matches!(served, Ok(Ok(()))), "{served:?}");
}

#[tokio::test]
async fn readyz_says_draining_while_the_front_still_serves() {
    let front = replica(Arc::new(FixedKeys::ephemeral())).await;
    front.lifecycle.drain();
    let (status, body) = front.get("/readyz").await;
    assert_eq!(status, 503);
    assert_eq!(body["status"], "draining", "{body}");
    assert_eq!(front.get("/livez").await.0, 200);
    let session = front.initialize("/mcp").await;
    assert_eq!(front.list_status("/mcp", &session).await.0, 200);
}
