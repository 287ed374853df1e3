//! The HTTP/1.1 client of the upstream transports: keep-alive connections pooled per origin
//! and per thread (a thread reuses the connections it opened), each spoken directly by the
//! task that sends on it (`conn`), TLS by rustls (`tls`: the public roots — webpki's and the
//! system's store — or a server's own CA and client certificate), and redirects within the
//! endpoint's origin followed.
//!
//! It replaced reqwest, whose tower stack (a redirect policy that re-parsed the URL of every
//! response, a boxed service per layer, its own pool bookkeeping) was a sixth of the
//! instructions of an HTTP → HTTP call, and then hyper's client connection, whose driver
//! task every exchange passed through (BENCHMARKS.md). What they did that the upstreams
//! need is here: connect and TLS, reuse, a request that never reached a pooled connection
//! sent again on a fresh one, redirects. No proxy is used: upstreams on loopback must not be
//! routed through an environment proxy.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::error::Error as StdError;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use foldhash::HashMap;
use http::header::LOCATION;
use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use tokio::net::TcpStream;
use url::Url;

use super::conn::{Connection, Framing, Head, Stream};
use super::tls::{self, PUBLIC_ROOTS, UpstreamTls};

/// How long connecting (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// An idle pooled connection older than this is closed instead of reused: under the 5 s
/// after which the MCP SDKs' servers (Node's `keepAliveTimeout`, uvicorn's
/// `timeout_keep_alive`) close an idle connection, so a request is never written into one
/// the server is closing at that moment (it would fail with no answer, not be retried).
const IDLE_TIMEOUT: Duration = Duration::from_secs(4);
/// TCP keep-alive probes on every connection, so a GET stream to a vanished host ends.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// Idle connections kept per origin.
const MAX_IDLE_PER_ORIGIN: usize = 256;
/// After this many give-backs on a thread, every origin's idle connections are looked at:
/// those idle too long closed, origins left with none forgotten — also origins no call goes
/// to any more (a removed server, TLS settings that changed).
const SWEEP_EVERY: u32 = 1024;
/// Redirects followed for one request.
const MAX_REDIRECTS: usize = 10;
/// How long an answer is waited for after the request could not be written whole: a server
/// may refuse (413, 401) and close before it has read the body.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(1);
/// The most of a body [`Response::text`] reads (error answers and refusals).
const TEXT_LIMIT: usize = 64 * 1024;

/// Where a connection goes: scheme, host and port, for `https` the TLS settings it was
/// made with ([`UpstreamTls`]'s id), and whether it was held to public addresses
/// ([`super::public_only`]): a connection is only reused for the origin it was opened for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Origin {
    tls: bool,
    host: String,
    port: u16,
    tls_settings: u64,
    public_only: bool,
}

/// A URL parsed once into what a request needs: its origin, the request target and the
/// `Host` header; and, for an MCP server's endpoint, its own TLS settings if it has any.
#[derive(Clone, Debug)]
pub(super) struct Target {
    url: Url,
    origin: Origin,
    path: PathAndQuery,
    host: HeaderValue,
    tls: Option<Arc<UpstreamTls>>,
    /// An MCP server's endpoint ([`Target::with_tls`]), whose TLS errors name its settings.
    upstream: bool,
}

impl Target {
    pub(super) fn parse(url: &str) -> Result<Target, String> {
        let parsed = Url::parse(url).map_err(|error| format!("invalid URL '{url}': {error}"))?;
        Target::from_url(parsed)
    }

    fn from_url(url: Url) -> Result<Target, String> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "unsupported URL scheme '{other}' in {url} (http or https)"
                ));
            }
        };
        // The host to connect to (an IPv6 address without its brackets).
        let host = match url.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(host) => host.to_string(),
            None => return Err(format!("the URL {url} has no host")),
        };
        let host_str = url.host_str().unwrap_or_default();
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("the URL {url} has no port"))?;
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let path = PathAndQuery::try_from(target)
            .map_err(|error| format!("invalid path in {url}: {error}"))?;
        let authority = match url.port() {
            Some(port) => format!("{host_str}:{port}"),
            None => host_str.to_owned(),
        };
        let host_header = HeaderValue::try_from(authority)
            .map_err(|error| format!("invalid host in {url}: {error}"))?;
        Ok(Target {
            origin: Origin {
                tls,
                host,
                port,
                tls_settings: PUBLIC_ROOTS,
                public_only: false,
            },
            path,
            host: host_header,
            url,
            tls: None,
            upstream: false,
        })
    }

    /// This target as an MCP server's endpoint, with its own TLS settings (`None`: the
    /// public roots).
    pub(super) fn with_tls(mut self, tls: Option<Arc<UpstreamTls>>) -> Target {
        self.origin.tls_settings = tls.as_ref().map_or(PUBLIC_ROOTS, |tls| tls.id());
        self.tls = tls;
        self.upstream = true;
        self
    }

    /// This target with every connection to it held to public addresses (a server's
    /// `public_only`), or not.
    pub(super) fn public_only(mut self, public_only: bool) -> Target {
        self.origin.public_only = public_only;
        self
    }

    /// `reference` resolved against this URL (an SSE `endpoint` event, a `Location`), with
    /// the same TLS settings, held to public addresses if this one is.
    pub(super) fn join(&self, reference: &str) -> Result<Target, String> {
        let joined = self
            .url
            .join(reference)
            .map_err(|error| format!("invalid URL reference '{reference}': {error}"))?;
        let joined = Target::from_url(joined)?.public_only(self.origin.public_only);
        Ok(match self.upstream {
            true => joined.with_tls(self.tls.clone()),
            false => joined,
        })
    }

    pub(super) fn origin(&self) -> &Origin {
        &self.origin
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.url.fmt(f)
    }
}

/// An HTTP exchange that failed before a response: the cause chain on one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct HttpError(String);

/// The causes of an error on one line ("connection refused" is often deep inside).
pub(super) fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

struct Idle {
    connection: Connection,
    since: Instant,
}

thread_local! {
    /// This thread's idle connections, per origin, the oldest first. A pool per thread, not
    /// one behind a lock: on a gateway whose threads each own their client connections
    /// (`front::http::workers`) a call's upstream exchange stays on its thread, and no call
    /// waits on another thread's lock. Keyed with foldhash: every call checks a connection
    /// out and back in.
    static IDLE: RefCell<Pool> = RefCell::default();
}

/// One thread's idle connections.
#[derive(Default)]
struct Pool {
    idle: HashMap<Origin, VecDeque<Idle>>,
    /// Connections given back since every origin's were last looked at ([`SWEEP_EVERY`]).
    since_sweep: u32,
}

impl Pool {
    /// Closes every connection idle longer than [`IDLE_TIMEOUT`] at `now`, and forgets the
    /// origins left with none.
    fn sweep(&mut self, now: Instant) {
        self.since_sweep = 0;
        self.idle.retain(|_, idle| {
            idle.retain(|one| now.saturating_duration_since(one.since) <= IDLE_TIMEOUT);
            !idle.is_empty()
        });
    }
}

/// The client every upstream shares: its pool of idle connections (per thread, [`IDLE`]) and
/// the TLS settings of the servers that have none of their own.
pub(super) struct HttpClient {
    /// Built on the first `https` connection: the root store is not needed before.
    tls: OnceLock<Result<UpstreamTls, String>>,
}

/// The one client of the process.
pub(super) fn http_client() -> &'static HttpClient {
    static CLIENT: OnceLock<HttpClient> = OnceLock::new();
    CLIENT.get_or_init(|| HttpClient {
        tls: OnceLock::new(),
    })
}

impl HttpClient {
    /// Sends one request and returns the response once its head has arrived; its body is
    /// read from [`Response::chunk`]. Redirects to the same origin are followed (a POST only
    /// on 307 and 308, which keep the method and the body).
    pub(super) async fn send(
        &self,
        method: Method,
        target: &Target,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let mut redirected: Option<Target> = None;
        for _ in 0..=MAX_REDIRECTS {
            let current = redirected.as_ref().unwrap_or(target);
            let response = self.send_once(&method, current, &headers, &body).await?;
            let follow = match response.status {
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
                StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER => {
                    method != Method::POST
                }
                _ => false,
            };
            let location = response
                .headers
                .get(LOCATION)
                .and_then(|value| value.to_str().ok());
            let (true, Some(location)) = (follow, location) else {
                return Ok(response);
            };
            let next = current.join(location).map_err(HttpError)?;
            if next.origin != current.origin {
                return Err(HttpError(format!(
                    "{current} redirected to {next}, another origin; not following it (configure that URL instead)"
                )));
            }
            redirected = Some(next);
        }
        Err(HttpError(format!(
            "more than {MAX_REDIRECTS} redirects from {target}"
        )))
    }

    /// Sends one request on a pooled connection to `target`'s origin, or a new one, and
    /// reads the response's head.
    async fn send_once(
        &self,
        method: &Method,
        target: &Target,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Response, HttpError> {
        loop {
            let (mut connection, pooled) = match checkout(&target.origin) {
                Some(connection) => (connection, true),
                None => (connect(target, self).await?, false),
            };
            let sent = connection
                .send(method, &target.path, &target.host, headers, body)
                .await;
            match sent {
                Ok(()) => {}
                // A pooled connection the server closed meanwhile: the request, never read
                // whole, goes out on another (never a request that was written).
                Err(_) if pooled => continue,
                Err(error) => {
                    return early_answer(connection, method, &target.origin)
                        .await
                        .ok_or_else(|| {
                            HttpError(
                                tls::client_cert_refusal(&error).unwrap_or_else(|| {
                                    format!("sending the request failed: {error}")
                                }),
                            )
                        });
                }
            }
            let head = connection.read_head(method).await.map_err(HttpError)?;
            return Ok(Response::new(head, connection, &target.origin));
        }
    }

    /// The TLS settings for `target`: its server's own, or the public roots.
    fn tls<'a>(&'a self, target: &'a Target) -> Result<&'a UpstreamTls, HttpError> {
        if let Some(tls) = &target.tls {
            return Ok(tls);
        }
        self.tls
            .get_or_init(UpstreamTls::public)
            .as_ref()
            .map_err(|error| HttpError(error.clone()))
    }
}

/// An idle connection to `origin` that can take a request now: the newest that is open.
fn checkout(origin: &Origin) -> Option<Connection> {
    loop {
        let mut idle =
            with_pool(|pool| pool.idle.get_mut(origin).and_then(VecDeque::pop_back)).flatten()?;
        if idle.since.elapsed() <= IDLE_TIMEOUT && idle.connection.is_idle_and_open() {
            return Some(idle.connection);
        }
    }
}

/// Pools a connection whose exchange has ended. The oldest idle ones are looked at on the
/// way: those idle too long, and the oldest if the server has closed it meanwhile (its own
/// keep-alive timeout), are closed, so closed connections do not pile up while calls come.
fn give_back(origin: &Origin, connection: Connection) {
    with_pool(|pool| {
        let now = Instant::now();
        pool.since_sweep += 1;
        if pool.since_sweep >= SWEEP_EVERY {
            pool.sweep(now);
        }
        if !pool.idle.contains_key(origin) {
            pool.idle.insert(origin.clone(), VecDeque::new());
        }
        let Some(idle) = pool.idle.get_mut(origin) else {
            return;
        };
        while idle
            .front()
            .is_some_and(|oldest| now.duration_since(oldest.since) > IDLE_TIMEOUT)
        {
            idle.pop_front();
        }
        if idle
            .front_mut()
            .is_some_and(|oldest| !oldest.connection.is_idle_and_open())
        {
            idle.pop_front();
        }
        if idle.len() < MAX_IDLE_PER_ORIGIN {
            idle.push_back(Idle {
                connection,
                since: now,
            });
        }
    });
}

/// The answer a server sent before closing on a request it did not read whole, if one came
/// within [`EARLY_ANSWER_WAIT`]; the connection is not pooled after it.
async fn early_answer(
    mut connection: Connection,
    method: &Method,
    origin: &Origin,
) -> Option<Response> {
    let head = tokio::time::timeout(EARLY_ANSWER_WAIT, connection.read_head(method))
        .await
        .ok()?
        .ok()?;
    let head = Head {
        keep_alive: false,
        ..head
    };
    Some(Response::new(head, connection, origin))
}

/// How many idle connections to `target`'s origin this thread's pool holds.
#[cfg(test)]
pub(super) fn idle_connections(target: &Target) -> usize {
    with_pool(|pool| pool.idle.get(&target.origin).map_or(0, VecDeque::len)).unwrap_or_default()
}

/// Runs `f` on this thread's pool; `None` while the thread is being torn down (its pool
/// gone) or the pool is in use further up the stack.
fn with_pool<T>(f: impl FnOnce(&mut Pool) -> T) -> Option<T> {
    IDLE.try_with(|pool| pool.try_borrow_mut().ok().map(|mut pool| f(&mut pool)))
        .ok()
        .flatten()
}

/// A new connection to `target`'s origin, TLS set up where it is `https`; for a
/// `public_only` origin, to the addresses its host resolved to once and all found public.
async fn connect(target: &Target, client: &HttpClient) -> Result<Connection, HttpError> {
    let origin = &target.origin;
    let address = format!("{}:{}", origin.host, origin.port);
    let cannot =
        |error: &dyn std::fmt::Display| HttpError(format!("cannot connect to {address}: {error}"));
    let connecting = async {
        let tcp = if origin.public_only {
            let checked = super::public_only::public_addresses(&origin.host, origin.port)
                .await
                .map_err(|error| cannot(&error))?;
            TcpStream::connect(checked.as_slice()).await
        } else {
            TcpStream::connect((origin.host.as_str(), origin.port)).await
        }
        .map_err(|error| cannot(&error))?;
        let _ = tcp.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new().with_time(TCP_KEEPALIVE);
        let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive);
        if !origin.tls {
            return Ok(Connection::new(Stream::Plain(tcp)));
        }
        let name =
            rustls::pki_types::ServerName::try_from(origin.host.clone()).map_err(|error| {
                HttpError(format!(
                    "invalid TLS server name '{}': {error}",
                    origin.host
                ))
            })?;
        let stream = client
            .tls(target)?
            .connector()
            .connect(name, tcp)
            .await
            .map_err(|error| {
                HttpError(tls::handshake_failure(&error, &address, target.upstream))
            })?;
        Ok(Connection::new(Stream::Tls(Box::new(stream))))
    };
    tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| {
            HttpError(format!(
                "connecting to {address} took longer than {}s",
                CONNECT_TIMEOUT.as_secs()
            ))
        })?
}

/// A response whose head has arrived. Its connection goes back to the pool once the body
/// has been read to the end (where the server keeps it open); a response dropped before
/// that closes its connection.
pub(super) struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Framing,
    keep_alive: bool,
    /// The connection, until the body ends; it goes back to this thread's pool then.
    connection: Option<(Connection, Origin)>,
}

impl Response {
    fn new(head: Head, connection: Connection, origin: &Origin) -> Response {
        let mut response = Response {
            status: head.status,
            headers: head.headers,
            body: head.body,
            keep_alive: head.keep_alive,
            connection: Some((connection, origin.clone())),
        };
        if response.body == Framing::Length(0) {
            response.release();
        }
        response
    }

    pub(super) fn status(&self) -> StatusCode {
        self.status
    }

    pub(super) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body has ended: the connection is pooled if it can carry another request.
    fn release(&mut self) {
        if let Some((connection, origin)) = self.connection.take()
            && self.keep_alive
            && connection.is_drained()
        {
            give_back(&origin, connection);
        }
    }

    /// The next piece of the body; `None` at its end (and after an error).
    pub(super) async fn chunk(&mut self) -> Option<Result<Bytes, HttpError>> {
        let (connection, _) = self.connection.as_mut()?;
        match connection.body_chunk(&mut self.body).await {
            Ok(Some(data)) => {
                if self.body == Framing::Length(0) {
                    self.release();
                }
                Some(Ok(data))
            }
            Ok(None) => {
                self.release();
                None
            }
            Err(reason) => {
                self.connection = None;
                Some(Err(HttpError(reason)))
            }
        }
    }

    /// The whole body, refused once it passes `max_bytes`.
    pub(super) async fn read_limited(mut self, max_bytes: usize) -> Result<Vec<u8>, String> {
        let mut body = match self.body {
            // Refused before a byte is read when it says it is too large.
            Framing::Length(length) if length > max_bytes as u64 => {
                return Err(format!("the answer exceeds the {max_bytes}-byte limit"));
            }
            Framing::Length(length) => Vec::with_capacity(length as usize),
            _ => Vec::new(),
        };
        while let Some(chunk) = self.chunk().await {
            let chunk = chunk.map_err(|error| format!("reading the answer failed: {error}"))?;
            body.extend_from_slice(&chunk);
            if body.len() > max_bytes {
                return Err(format!("the answer exceeds the {max_bytes}-byte limit"));
            }
        }
        Ok(body)
    }

    /// The body as text, up to its first [`TEXT_LIMIT`] bytes (an error answer, a refusal);
    /// read to its end, the connection is pooled.
    pub(super) async fn text(mut self) -> String {
        let mut body = Vec::new();
        while body.len() < TEXT_LIMIT
            && let Some(Ok(chunk)) = self.chunk().await
        {
            body.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&body).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_target_keeps_the_query_and_fills_in_the_default_port() {
        let target = Target::parse("https://mcp.example.com/v1/mcp?key=a%20b").expect("parse");
        assert_eq!(target.path.as_str(), "/v1/mcp?key=a%20b");
        assert_eq!(target.host, "mcp.example.com");
        assert_eq!(
            target.origin,
            Origin {
                tls: true,
                host: "mcp.example.com".to_owned(),
                port: 443,
                tls_settings: PUBLIC_ROOTS,
                public_only: false,
            }
        );
    }

    #[test]
    fn an_ipv6_host_is_bracketed_in_the_host_header_only() {
        let target = Target::parse("http://[::1]:8080/mcp").expect("parse");
        assert_eq!(target.host, "[::1]:8080");
        assert_eq!(target.origin.host, "::1");
        assert_eq!(target.origin.port, 8080);
    }

    #[test]
    fn a_relative_reference_stays_on_the_origin() {
        let base = Target::parse("http://127.0.0.1:9/sse").expect("parse");
        let joined = base.join("/messages?session=1").expect("join");
        assert_eq!(joined.origin(), base.origin());
        assert_eq!(joined.path.as_str(), "/messages?session=1");
        let elsewhere = base.join("http://127.0.0.2:9/messages").expect("join");
        assert_ne!(elsewhere.origin(), base.origin());
    }

    #[test]
    fn urls_without_a_usable_scheme_or_host_are_refused() {
        let error = Target::parse("ftp://127.0.0.1/x").expect_err("ftp");
        assert!(error.contains("unsupported URL scheme 'ftp'"), "{error}");
        let error = Target::parse("not a url").expect_err("garbage");
        assert!(error.contains("invalid URL 'not a url'"), "{error}");
    }

    #[test]
    fn a_servers_own_tls_settings_keep_its_connections_apart_even_after_a_redirect() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = switchboard_testkit::certs::TestCa::make(dir.path())
            .unwrap_or_else(|error| panic!("{error}"));
        let one = ca
            .issue_client("one", "a")
            .unwrap_or_else(|error| panic!("{error}"));
        let two = ca
            .issue_client("two", "b")
            .unwrap_or_else(|error| panic!("{error}"));
        let url = "https://127.0.0.1:8443/mcp";
        let with = |client: &switchboard_testkit::certs::Issued| {
            let files = super::super::TlsFiles {
                ca: Some(ca.ca_file().to_owned()),
                client: Some((client.cert.clone(), client.key.clone())),
            };
            let tls = UpstreamTls::load(&files).expect("the files load");
            Target::parse(url)
                .expect("parse")
                .with_tls(Some(Arc::new(tls)))
        };
        let public = Target::parse(url).expect("parse");
        let (first, again, other) = (with(&one), with(&one), with(&two));
        assert_ne!(
            public.origin, first.origin,
            "pooled apart from the public roots"
        );
        assert_ne!(
            first.origin, other.origin,
            "and from another client certificate"
        );
        assert_eq!(
            first.origin, again.origin,
            "the same files loaded again (a reconnect) find the same connections"
        );
        let moved = first.join("/elsewhere").expect("join");
        assert_eq!(moved.origin, first.origin, "a redirect keeps the settings");

        let missing = super::super::TlsFiles {
            ca: Some(PathBuf::from("/nonexistent/ca.pem")),
            client: None,
        };
        let error = UpstreamTls::load(&missing).expect_err("no such file");
        assert!(error.starts_with("tls.ca /nonexistent/ca.pem:"), "{error}");
    }

    #[tokio::test]
    async fn a_sweep_closes_what_idled_too_long_and_forgets_origins_left_empty() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let mut pool = Pool::default();
        let start = Instant::now();
        for (port, age) in [(1, 0), (2, 0), (2, 60)] {
            let tcp = TcpStream::connect(address).await.expect("connect");
            let origin = Origin {
                tls: false,
                host: "127.0.0.1".to_owned(),
                port,
                tls_settings: PUBLIC_ROOTS,
                public_only: false,
            };
            pool.idle.entry(origin).or_default().push_back(Idle {
                connection: Connection::new(Stream::Plain(tcp)),
                since: start + Duration::from_secs(age),
            });
        }
        pool.since_sweep = 7;
        pool.sweep(start + IDLE_TIMEOUT);
        assert_eq!(pool.idle.values().map(VecDeque::len).sum::<usize>(), 3);
        assert_eq!(pool.since_sweep, 0);
        pool.sweep(start + IDLE_TIMEOUT + Duration::from_secs(1));
        let left: Vec<_> = pool
            .idle
            .iter()
            .map(|(o, idle)| (o.port, idle.len()))
            .collect();
        assert_eq!(
            left,
            [(2, 1)],
            "port 1's only connection was too old: forgotten"
        );
    }

    #[derive(Debug)]
    struct Wrapped(&'static str, std::io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.1)
        }
    }

    #[test]
    fn the_error_chain_names_each_cause_once() {
        let refused = || std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let chained = Wrapped("client error (Connect)", refused());
        assert_eq!(error_chain(&chained), "client error (Connect): refused");
        // A cause the message already quotes is not repeated.
        let quoted = Wrapped("tcp connect error: refused", refused());
        assert_eq!(error_chain(&quoted), "tcp connect error: refused");
    }
}
