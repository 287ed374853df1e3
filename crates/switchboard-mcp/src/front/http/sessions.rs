//! Legacy (2025-era) HTTP sessions whose `Mcp-Session-Id` *is* their immutable state,
//! sealed with the deployment's key ring (`crate::seal`): the negotiated protocol version
//! and the client's capabilities, bound to the agent (and OAuth subject) and the endpoint
//! path it was minted on, with an expiry. A replica that does not hold an id in memory but
//! opens it adopts the session, so any replica sharing the ring serves it; one minted for
//! another agent or route is refused, whichever replica holds it.
//!
//! What lives in memory, on the replica that serves a request: the calls in flight (for
//! `notifications/cancelled`), the relay of server requests to the client (owner-bound: a
//! request relayed mid-call waits on the replica that asked, and an answer POSTed elsewhere
//! is routed there by `super::owners`), resource subscriptions, and — unless a store the
//! replicas share is handed in ([`EndedSessions`]) — DELETE's record of ended sessions. That
//! memory is bounded: past `MAX_HELD` sessions the oldest nothing uses are let go (their
//! ids are adopted again at their next request).
//! docs/scale-out.md says what a client sees when it moves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::super::relay::Relay;
use super::super::subscriptions::ResourceSubscriptions;
use crate::era::LATEST_LEGACY_VERSION;
use crate::jsonrpc::RequestId;
use crate::seal::{Binding, Keys, OpenError, Purpose, blob, key_id_text};

/// How long a session id opens after `initialize`; then the client initializes again.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// Sessions held in memory before expired ones are first swept; later sweeps wait until
/// the table has doubled since the last one, so a busy front does not scan it per session.
const SWEEP_ABOVE: usize = 1024;
/// Sessions held in memory at most. Past it the oldest that nothing else holds (no call in
/// flight, no stream open) are let go, a tenth at a time: their ids still open, and a later
/// request adopts them again, as another replica would. Without a bound, `initialize` after
/// `initialize` would pin memory for the sessions' whole lifetime.
const MAX_HELD: usize = 16 * 1024;
/// Capabilities larger than this are kept by name only, so an id stays under 1 KB.
const MAX_CAPABILITIES_BYTES: usize = 480;
/// Capability names longer than this are not kept (no capability MCP defines comes close).
const MAX_CAPABILITY_NAME: usize = 64;

/// What the id carries.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// The negotiated protocol version.
    #[serde(rename = "v")]
    version: String,
    /// What the client declared in `initialize`.
    #[serde(rename = "c")]
    capabilities: Value,
    /// When the session began (seconds since the epoch), for logs.
    #[serde(rename = "t")]
    created: u64,
}

/// One session, as held by this replica.
pub(crate) struct Session {
    /// The session's calls in flight, by their request ids: hashed with foldhash (seeded at
    /// random per map), as every call goes in and out.
    pub(super) in_flight: Mutex<foldhash::HashMap<RequestId, CancellationToken>>,
    /// Requests relayed to this session's client, and what it said it supports.
    pub(super) relay: Arc<Relay>,
    pub(super) subscriptions: Arc<ResourceSubscriptions>,
    /// Who and where the id was minted for.
    principal: String,
    route: String,
    expires: SystemTime,
    /// The key that sealed the id: once it is retired, the id no longer opens anywhere.
    key: u32,
    /// The protocol version negotiated at `initialize`.
    pub(super) version: String,
}

/// Who asks, and on which endpoint.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asker<'a> {
    pub agent: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub route: &'a str,
}

impl<'a> Asker<'a> {
    pub fn new(
        agent: Option<&'a str>,
        principal: Option<&'a switchboard_core::Principal>,
        route: &'a str,
    ) -> Self {
        Self {
            agent,
            subject: principal.and_then(|p| p.subject.as_deref()),
            route,
        }
    }

    fn principal(&self) -> String {
        format!(
            "{}\u{1f}{}",
            self.agent.unwrap_or(""),
            self.subject.unwrap_or("")
        )
    }
}

/// Why an id does not name a session this asker may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SessionRefusal {
    #[error("unknown or expired session: {0}")]
    Sealed(OpenError),
    #[error("unknown or expired session: it was ended (DELETE)")]
    Ended,
    /// The store of ended sessions the replicas share did not answer, and its policy is to
    /// refuse rather than guess.
    #[error("the session cannot be checked now: {0}; retry later")]
    Unverifiable(String),
}

impl SessionRefusal {
    /// The HTTP status that answers it: 404 tells the client to initialize again, 503 to
    /// retry the same session later.
    pub(super) fn status(&self) -> http::StatusCode {
        match self {
            Self::Unverifiable(_) => http::StatusCode::SERVICE_UNAVAILABLE,
            Self::Sealed(_) | Self::Ended => http::StatusCode::NOT_FOUND,
        }
    }
}

/// The store of ended sessions could not be asked or told, and its policy is to refuse
/// (`[shared] redis_unavailable = "fail_closed"`): what it says names the store and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EndedUnavailable(pub String);

/// What a question to an [`EndedSessions`] store comes back as.
pub type EndedAnswer<'a, T> = BoxFuture<'a, Result<T, EndedUnavailable>>;

/// Where sessions ended by DELETE are remembered until their ids expire: so that no replica
/// that shares the store opens them again. Asked on every request of a 2025-era session, so
/// an implementation over the network answers from memory what it can (a session it already
/// checked, while it hears of every end) and bounds each question's time.
pub trait EndedSessions: Send + Sync + std::fmt::Debug {
    /// Records that the session `id`, valid until `expires`, was ended at `now`.
    fn end<'a>(&'a self, id: &'a str, expires: SystemTime, now: SystemTime) -> EndedAnswer<'a, ()>;
    /// Tells the store that this replica just minted the session `id` (valid until
    /// `expires`): nobody can have ended it yet, so a store that hears of ends may answer
    /// for it from memory from now on.
    fn started(&self, id: &str, expires: SystemTime, now: SystemTime) {
        let _ = (id, expires, now);
    }
    /// Whether the session `id`, whose id opens until `expires`, was ended.
    fn is_ended<'a>(
        &'a self,
        id: &'a str,
        expires: SystemTime,
        now: SystemTime,
    ) -> EndedAnswer<'a, bool>;
}

/// Ended sessions in this process's memory: a DELETE holds on the replica that took it.
#[derive(Debug, Default)]
pub struct LocalEndedSessions {
    ended: Mutex<HashMap<String, SystemTime>>,
}

impl LocalEndedSessions {
    /// Records that the session `id`, valid until `expires`, was ended at `now`.
    pub fn end_now(&self, id: &str, expires: SystemTime, now: SystemTime) {
        let mut ended = lock(&self.ended);
        ended.retain(|_, until| *until > now);
        ended.insert(id.to_owned(), expires);
    }

    /// Whether this process saw the session `id` ended.
    pub fn ended_here(&self, id: &str, now: SystemTime) -> bool {
        lock(&self.ended).get(id).is_some_and(|until| *until > now)
    }
}

impl EndedSessions for LocalEndedSessions {
    fn end<'a>(&'a self, id: &'a str, expires: SystemTime, now: SystemTime) -> EndedAnswer<'a, ()> {
        self.end_now(id, expires, now);
        Box::pin(std::future::ready(Ok(())))
    }

    fn is_ended<'a>(
        &'a self,
        id: &'a str,
        _expires: SystemTime,
        now: SystemTime,
    ) -> EndedAnswer<'a, bool> {
        Box::pin(std::future::ready(Ok(self.ended_here(id, now))))
    }
}

/// A session [`SessionTable::find`] knows the asker may use, before it asks whether it ended.
enum Found {
    Held(Arc<Session>),
    /// Opened from its id (not held here yet), and when that id expires.
    Opened(Sealed, SystemTime),
}

/// The sessions of one HTTP front.
pub(super) struct SessionTable {
    keys: Arc<dyn Keys>,
    /// By session id (minted here), hashed with foldhash: every request looks its session up.
    live: Mutex<Held>,
    ended: Arc<dyn EndedSessions>,
    /// This replica's name, carried in the ids of the requests its sessions relay (so an
    /// answer POSTed to another replica finds its way back); none without replicas.
    replica: Option<Arc<str>>,
}

/// The sessions held in memory, and the size at which they are next swept.
#[derive(Default)]
struct Held {
    sessions: foldhash::HashMap<String, Arc<Session>>,
    sweep_at: usize,
}

impl Held {
    fn get(&self, id: &str) -> Option<&Arc<Session>> {
        self.sessions.get(id)
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        self.sessions.remove(id)
    }

    /// Holds `session` as `id`, sweeping expired sessions first when the table has grown
    /// enough since the last sweep, and letting the oldest idle ones go past [`MAX_HELD`].
    fn insert(&mut self, id: String, session: Arc<Session>, now: SystemTime) {
        if self.sessions.len() >= self.sweep_at.max(SWEEP_ABOVE) {
            self.sessions.retain(|_, session| session.expires > now);
            if self.sessions.len() >= MAX_HELD {
                self.let_go_of_oldest_idle(MAX_HELD / 10);
            }
            self.sweep_at = (self.sessions.len() * 2).clamp(SWEEP_ABOVE, MAX_HELD);
        }
        self.sessions.insert(id, session);
    }

    /// Drops up to `count` sessions that only this table holds, the oldest first.
    fn let_go_of_oldest_idle(&mut self, count: usize) {
        let mut idle: Vec<(SystemTime, String)> = self
            .sessions
            .iter()
            .filter(|(_, session)| Arc::strong_count(session) == 1)
            .map(|(id, session)| (session.expires, id.clone()))
            .collect();
        idle.sort_unstable();
        for (_, id) in idle.into_iter().take(count) {
            self.sessions.remove(&id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The capabilities to carry: as declared, or by name only when they are large — those MCP
/// defines first, then others while they fit in [`MAX_CAPABILITIES_BYTES`].
fn carried(capabilities: Value) -> Value {
    const DEFINED: [&str; 6] = [
        "elicitation",
        "sampling",
        "roots",
        "tasks",
        "extensions",
        "experimental",
    ];
    if serde_json::to_string(&capabilities).map_or(0, |text| text.len()) <= MAX_CAPABILITIES_BYTES {
        return capabilities;
    }
    let Value::Object(map) = capabilities else {
        return Value::Object(Map::new());
    };
    let mut names: Vec<String> = map
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.len() <= MAX_CAPABILITY_NAME)
        .collect();
    names.sort_by_key(|name| !DEFINED.contains(&name.as_str()));
    let mut kept = Map::new();
    let mut size = 2;
    for name in names {
        // `"name":{},` in the JSON.
        size += name.len() + 6;
        if size > MAX_CAPABILITIES_BYTES {
            break;
        }
        kept.insert(name, Value::Object(Map::new()));
    }
    Value::Object(kept)
}

impl SessionTable {
    /// The sessions of a front with `options`: their relayed requests name this replica when
    /// the front routes answers between replicas.
    pub(super) fn of(options: &super::HttpOptions) -> Self {
        let replica = options
            .answer_routes
            .as_ref()
            .map(|routes| Arc::from(routes.replica()));
        Self::new(
            options.keys.clone(),
            options.ended_sessions.clone(),
            replica,
        )
    }

    pub(super) fn new(
        keys: Arc<dyn Keys>,
        ended: Arc<dyn EndedSessions>,
        replica: Option<Arc<str>>,
    ) -> Self {
        Self {
            keys,
            live: Mutex::default(),
            ended,
            replica,
        }
    }

    fn binding<'a>(principal: &'a str, route: &'a str) -> Binding<'a> {
        Binding {
            purpose: Purpose::Session,
            agent: principal,
            route,
        }
    }

    /// A new session for an `initialize` with `params`: its id and its state.
    pub(super) fn start(&self, asker: Asker<'_>, params: Option<&Value>) -> (String, Arc<Session>) {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = match requested {
            Some(version) if crate::era::LEGACY_VERSIONS.contains(&version) => version,
            _ => LATEST_LEGACY_VERSION,
        };
        let capabilities = params
            .and_then(|p| p.get("capabilities"))
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let now = self.keys.now();
        let sealed = Sealed {
            version: version.to_owned(),
            capabilities: carried(capabilities),
            created: now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        };
        let payload = serde_json::to_vec(&sealed).unwrap_or_default();
        let principal = asker.principal();
        let id = self.keys.seal(
            &Self::binding(&principal, asker.route),
            SESSION_LIFETIME,
            &payload,
        );
        let expires = now + SESSION_LIFETIME;
        self.ended.started(&id, expires, now);
        let session = self.hold(&id, sealed, principal, asker.route, expires);
        (id, session)
    }

    fn hold(
        &self,
        id: &str,
        sealed: Sealed,
        principal: String,
        route: &str,
        expires: SystemTime,
    ) -> Arc<Session> {
        let key = blob::key_of(id).unwrap_or_default();
        let relay = Arc::new(match &self.replica {
            Some(replica) => Relay::for_replica(replica.clone()),
            None => Relay::default(),
        });
        let initialize = serde_json::json!({"capabilities": sealed.capabilities});
        relay.remember_capabilities(Some(&initialize));
        let session = Arc::new(Session {
            in_flight: Mutex::default(),
            relay,
            subscriptions: Arc::default(),
            principal,
            route: route.to_owned(),
            expires,
            key,
            version: sealed.version,
        });
        let now = self.keys.now();
        lock(&self.live).insert(id.to_owned(), session.clone(), now);
        session
    }

    /// The session `id` names, for `asker`: held here, or opened and adopted — unless it was
    /// ended (asked of the store of ended sessions once the id is known to be the asker's).
    pub(super) async fn find(
        &self,
        id: &str,
        asker: Asker<'_>,
    ) -> Result<Arc<Session>, SessionRefusal> {
        let principal = asker.principal();
        let held = lock(&self.live).get(id).cloned();
        let found = match held {
            Some(session) => Found::Held(self.still_valid(id, session, &principal, asker)?),
            None => {
                let payload = self
                    .keys
                    .open(id, &Self::binding(&principal, asker.route))
                    .map_err(SessionRefusal::Sealed)?;
                let sealed: Sealed = serde_json::from_slice(&payload)
                    .map_err(|_| SessionRefusal::Sealed(OpenError::Malformed))?;
                let expires = UNIX_EPOCH + Duration::from_secs(sealed.created) + SESSION_LIFETIME;
                Found::Opened(sealed, expires)
            }
        };
        let expires = match &found {
            Found::Held(session) => session.expires,
            Found::Opened(_, expires) => *expires,
        };
        match self.ended.is_ended(id, expires, self.keys.now()).await {
            Ok(false) => {}
            Ok(true) => {
                lock(&self.live).remove(id);
                return Err(SessionRefusal::Ended);
            }
            Err(EndedUnavailable(why)) => return Err(SessionRefusal::Unverifiable(why)),
        }
        Ok(match found {
            Found::Held(session) => session,
            Found::Opened(sealed, expires) => {
                let session = self.hold(id, sealed, principal, asker.route, expires);
                tracing::debug!(
                    version = %session.version,
                    "adopted a session another replica started"
                );
                session
            }
        })
    }

    /// A held session, if this asker may use it and it still runs. Its id was checked when it
    /// was made or adopted.
    fn still_valid(
        &self,
        id: &str,
        session: Arc<Session>,
        principal: &str,
        asker: Asker<'_>,
    ) -> Result<Arc<Session>, SessionRefusal> {
        if session.principal != principal {
            Err(SessionRefusal::Sealed(OpenError::WrongAgent))
        } else if session.route != asker.route {
            Err(SessionRefusal::Sealed(OpenError::WrongRoute))
        } else if session.expires <= self.keys.now() {
            lock(&self.live).remove(id);
            Err(SessionRefusal::Sealed(OpenError::Expired))
        } else if !self.keys.ring().holds(session.key) {
            lock(&self.live).remove(id);
            Err(SessionRefusal::Sealed(OpenError::UnknownKey(key_id_text(
                session.key,
            ))))
        } else {
            Ok(session)
        }
    }

    /// The session `id` if this replica holds it for `asker` (for messages that only its
    /// owner can act on: a cancellation, an answer to a relayed request).
    pub(super) fn held(&self, id: &str, asker: Asker<'_>) -> Option<Arc<Session>> {
        let session = lock(&self.live).get(id).cloned()?;
        (session.principal == asker.principal() && session.route == asker.route).then_some(session)
    }

    /// Ends the session `id` (DELETE): its calls here are cancelled, its relayed questions
    /// answered "the client went away", and no replica that
    /// shares the store of ended sessions accepts the id any longer. A store that cannot be
    /// told refuses (the session is not ended, the client may DELETE again).
    pub(super) async fn end(
        &self,
        id: &str,
        asker: Asker<'_>,
    ) -> Result<Arc<Session>, SessionRefusal> {
        let session = self.find(id, asker).await?;
        self.ended
            .end(id, session.expires, self.keys.now())
            .await
            .map_err(|EndedUnavailable(why)| SessionRefusal::Unverifiable(why))?;
        lock(&self.live).remove(id);
        // Its client will answer nothing more: a call waiting on a relayed question ends.
        session.relay.close();
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::seal::{FixedKeys, KeyRing};

    fn table(secret: &[u8]) -> SessionTable {
        table_ending_in(secret, Arc::new(LocalEndedSessions::default()))
    }

    fn table_ending_in(secret: &[u8], ended: Arc<dyn EndedSessions>) -> SessionTable {
        SessionTable::new(
            Arc::new(FixedKeys(Arc::new(KeyRing::from_secret(secret)))),
            ended,
            None,
        )
    }

    const QA: Asker<'static> = Asker {
        agent: Some("qa"),
        subject: None,
        route: "/mcp",
    };

    #[tokio::test]
    async fn another_replica_adopts_a_session_for_its_agent_and_route_only() {
        let (first, second) = (table(b"ring"), table(b"ring"));
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}});
        let (id, _) = first.start(QA, Some(&params));
        assert!(id.len() < 1024, "{} bytes", id.len());
        let dev = Asker {
            agent: Some("dev"),
            ..QA
        };
        assert_eq!(
            second.find(&id, dev).await.err(),
            Some(SessionRefusal::Sealed(OpenError::WrongAgent))
        );
        let other_route = Asker {
            route: "/mcp/agents/qa",
            ..QA
        };
        assert_eq!(
            second.find(&id, other_route).await.err(),
            Some(SessionRefusal::Sealed(OpenError::WrongRoute))
        );
        let adopted = second.find(&id, QA).await.expect("adopted");
        assert_eq!(adopted.version, "2025-06-18");
        assert!(second.held(&id, QA).is_some());
        assert!(
            second.held(&id, dev).is_none(),
            "another agent cannot cancel its calls"
        );
        // Held ones are checked too.
        assert_eq!(
            first.find(&id, dev).await.err(),
            Some(SessionRefusal::Sealed(OpenError::WrongAgent))
        );
        assert!(table(b"other ring").find(&id, QA).await.is_err());
    }

    #[tokio::test]
    async fn an_ended_session_is_refused_where_it_ended() {
        let replica = table(b"ring");
        let (id, _) = replica.start(QA, None);
        replica.end(&id, QA).await.expect("ended");
        assert_eq!(
            replica.find(&id, QA).await.err(),
            Some(SessionRefusal::Ended)
        );
        assert_eq!(
            replica.end(&id, QA).await.err(),
            Some(SessionRefusal::Ended)
        );
        // Replicas sharing one store of ended sessions all refuse it, those holding it too.
        let shared: Arc<dyn EndedSessions> = Arc::new(LocalEndedSessions::default());
        let (a, b) = (
            table_ending_in(b"ring", shared.clone()),
            table_ending_in(b"ring", shared),
        );
        let (id, _) = a.start(QA, None);
        b.find(&id, QA).await.expect("adopted");
        a.end(&id, QA).await.expect("ended");
        assert_eq!(b.find(&id, QA).await.err(), Some(SessionRefusal::Ended));
    }

    #[test]
    fn large_capabilities_are_kept_by_name() {
        let big = json!({"sampling": {"x": "y".repeat(2000)}, "roots": {"listChanged": true}});
        assert_eq!(carried(big), json!({"sampling": {}, "roots": {}}));
        let small = json!({"roots": {"listChanged": true}});
        assert_eq!(carried(small.clone()), small);
        // A flood of names (or one very long one) keeps what MCP defines and stays small.
        let mut flood: Map<String, Value> =
            (0..100_000).map(|i| (format!("x{i}"), json!({}))).collect();
        flood.insert("z".repeat(10_000), json!({}));
        flood.insert("elicitation".to_owned(), json!({"form": {}}));
        let kept = carried(Value::Object(flood));
        assert!(kept.get("elicitation").is_some(), "{kept}");
        let size = serde_json::to_string(&kept).expect("json").len();
        assert!(size <= MAX_CAPABILITIES_BYTES, "{size} bytes");
    }

    /// A table past its bound lets the oldest idle sessions go, never one still in use, and
    /// sweeps only when it has grown since the last sweep.
    #[test]
    fn held_sessions_are_bounded_and_sessions_in_use_are_kept() {
        let now = SystemTime::now();
        let session = |age: u64| {
            Arc::new(Session {
                in_flight: Mutex::default(),
                relay: Arc::default(),
                subscriptions: Arc::default(),
                principal: String::new(),
                route: String::new(),
                expires: now + SESSION_LIFETIME - Duration::from_secs(age),
                key: 0,
                version: LATEST_LEGACY_VERSION.to_owned(),
            })
        };
        let mut held = Held::default();
        let in_use = session(80_000);
        held.insert("oldest, in use".to_owned(), in_use.clone(), now);
        for i in 0..MAX_HELD + 10 {
            held.insert(format!("s{i}"), session(i as u64 % 50_000), now);
        }
        assert!(held.sessions.len() <= MAX_HELD, "{}", held.sessions.len());
        assert!(
            held.get("oldest, in use").is_some(),
            "a session in use is kept"
        );
        drop(in_use);
    }
}
