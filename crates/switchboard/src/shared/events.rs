//! [`EventBus`]: typed events between the replicas of one deployment, over Redis pub/sub on
//! the channel `switchboard:{deployment}:events` — `tools/list_changed`, so clients listening
//! on one replica hear of a change that happened on another, and the sessions ended by DELETE
//! (`shared::marks`) — and each replica's own channel, `switchboard:{deployment}:replica:<name>`,
//! which carries the answers to requests it relayed when a client POSTs them to another
//! replica ([`AnswerRoutes`], issue 32's owner-bound streams), and the commands other
//! replicas send about the tasks it runs ([`TaskCommand`], `shared::tasks`).
//!
//! Delivery is at most once (pub/sub keeps nothing): fine for list changes (a client that
//! missed one lists on its next turn); what must not be missed says how: every
//! (re)subscription starts a new [`EventBus::epoch`], and `0` while none holds, so a reader
//! of ended sessions knows what it heard may be incomplete and asks Redis again. A replica
//! never hears its own events. Publishing never waits on the call path (it is spawned,
//! bounded by [`COMMAND_TIMEOUT`]); the subscriber reconnects by itself every [`PROBE_EVERY`]
//! while Redis is unreachable, and pings its connection every [`HEARTBEAT_EVERY`], when it
//! also renews its heartbeat key `switchboard:{deployment}:alive:<name>` (it lives
//! [`HEARTBEAT_LIFE`]): an answer for a replica with no heartbeat is refused at once, one
//! whose channel nobody subscribes (its process died, or it is subscribing again) after
//! [`RESUBSCRIBE_GRACE`] of trying.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use switchboard_mcp::front::http::{AnswerRoutes, RoutedAnswer, Undeliverable};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::limiter::{COMMAND_TIMEOUT, PROBE_EVERY, SharedError, open};
use super::tasks::TaskCommand;

/// How often the subscriber pings its connection and renews its heartbeat.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// How long a heartbeat lives unless renewed: a replica whose machine went silent counts as
/// gone after this. Long enough that a replica starved of CPU for a few seconds (an
/// overloaded machine) is not taken for gone while its calls wait for their answers.
pub const HEARTBEAT_LIFE: Duration = Duration::from_secs(5);
/// How long an answer for a replica with a heartbeat but no subscription is tried again: the
/// replica may be subscribing again after a lost connection; a dead process stays
/// unsubscribed, and is refused after this.
pub const RESUBSCRIBE_GRACE: Duration = Duration::from_millis(600);
/// Events (and routed answers) held for a slow follower before it misses some.
const BACKLOG: usize = 1024;

/// Delivers an answer to a replica that is alive: `KEYS[1]` its heartbeat, `ARGV[1]` its
/// channel, `ARGV[2]` the answer. -1: no heartbeat; else how many subscribers got it.
const DELIVER: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
return redis.call('PUBLISH', ARGV[1], ARGV[2])
";

/// An event one replica tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SharedEvent {
    /// The tools a replica lists changed: listeners everywhere should list again.
    ToolsListChanged,
    /// A 2025-era session was ended by DELETE: `session` is the SHA-256 (hex) of its id, which
    /// opens until `until_ms` (milliseconds since the epoch).
    SessionEnded { session: String, until_ms: u64 },
    /// A task's status changed on the replica that runs it (`shared::tasks`): its owner
    /// (so a replica passes it on to that caller's streams only) and its record without its
    /// result (JSON of `shared::tasks::Record`).
    TaskChanged {
        task: String,
        agent: Option<String>,
        session: Option<String>,
        subject: Option<String>,
        record: String,
    },
    /// A session's shared state changed (`shared::sessions`): `session` is the SHA-256 (hex)
    /// of its key, and the rest its whole state after the change, at `version`.
    SessionChanged {
        session: String,
        version: u64,
        categories: Vec<String>,
        #[serde(default)]
        resources: Vec<String>,
        read_more: bool,
        tier: Option<String>,
    },
    /// A server told a replica that the resource at `uri` changed
    /// (`notifications/resources/updated`): sessions that subscribed to it through that
    /// replica may be listening on another.
    ResourceUpdated { uri: String },
}

/// What travels on the channel: the event and the replica that sent it.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    origin: String,
    #[serde(flatten)]
    event: SharedEvent,
}

/// Publish and subscribe to [`SharedEvent`]s; route answers to the replica that asked.
/// Cheap to clone.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<BusInner>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("channel", &self.inner.heard.channel)
            .field("replica", &self.inner.heard.origin)
            .finish_non_exhaustive()
    }
}

struct BusInner {
    /// What the subscriber shares with publishers: the connection, names, what was heard.
    heard: Arc<Listener>,
    /// `switchboard:{deployment}:`.
    prefix: String,
    deliver: redis::Script,
    _listening: DropGuard,
}

/// The subscriber, and what publishers share with it.
struct Listener {
    client: redis::Client,
    connection: ConnectionManager,
    channel: String,
    /// This replica's own channel and heartbeat key.
    own_channel: String,
    alive_key: String,
    origin: String,
    received: broadcast::Sender<SharedEvent>,
    answers: broadcast::Sender<RoutedAnswer>,
    /// Commands for tasks this replica runs, sent by others on its own channel.
    commands: broadcast::Sender<TaskCommand>,
    /// The subscription's epoch (see [`EventBus::epoch`]).
    epoch: AtomicU64,
    /// Called with each event heard, on the subscriber's task, before it is handed on.
    hooks: RwLock<Vec<Hook>>,
}

/// What [`EventBus::on_event`] registers.
pub type Hook = Box<dyn Fn(&SharedEvent) + Send + Sync>;

impl EventBus {
    /// A bus on the Redis at `url` for `deployment`'s replicas. Connects lazily and keeps
    /// trying in the background while Redis is unreachable.
    pub fn connect(url: &str, deployment: &str) -> Result<Self, SharedError> {
        let (client, connection, runtime) = open(url)?;
        let prefix = format!("switchboard:{{{deployment}}}:");
        let channel = format!("{prefix}events");
        let origin = format!("{:016x}", rand::random::<u64>());
        let (received, _) = broadcast::channel(BACKLOG);
        let (answers, _) = broadcast::channel(BACKLOG);
        let (commands, _) = broadcast::channel(BACKLOG);
        let stop = CancellationToken::new();
        let listener = Listener {
            client,
            connection,
            channel,
            own_channel: replica_channel(&prefix, &origin),
            alive_key: alive_key(&prefix, &origin),
            origin,
            received,
            answers,
            commands,
            epoch: AtomicU64::new(0),
            hooks: RwLock::default(),
        };
        let heard = Arc::new(listener);
        runtime.spawn(heard.clone().listen(stop.clone()));
        Ok(Self {
            inner: Arc::new(BusInner {
                heard,
                prefix,
                deliver: redis::Script::new(DELIVER),
                _listening: stop.drop_guard(),
            }),
        })
    }

    /// Tells the other replicas `event`, in the background (never waits; lost if Redis is
    /// unreachable).
    pub fn publish(&self, event: SharedEvent) {
        let Some(payload) = self.payload(event) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut connection = self.inner.heard.connection.clone();
        let channel = self.inner.heard.channel.clone();
        runtime.spawn(async move {
            let mut command = redis::cmd("PUBLISH");
            command.arg(&channel).arg(&payload);
            let sent =
                tokio::time::timeout(COMMAND_TIMEOUT, command.query_async::<i64>(&mut connection));
            if let Ok(Err(error)) = sent.await {
                tracing::debug!(target: "switchboard::shared", "event not published: {error}");
            }
        });
    }

    /// `event` as it travels, from this replica (for a caller that publishes it itself, in a
    /// transaction with what it announces).
    pub(crate) fn payload(&self, event: SharedEvent) -> Option<String> {
        let envelope = Envelope {
            origin: self.inner.heard.origin.clone(),
            event,
        };
        serde_json::to_string(&envelope).ok()
    }

    /// The events channel.
    pub(crate) fn channel(&self) -> &str {
        &self.inner.heard.channel
    }

    /// The events other replicas publish from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SharedEvent> {
        self.inner.heard.received.subscribe()
    }

    /// Calls `hook` with every event other replicas publish from now on, on the subscriber's
    /// task as it is heard — before any [`EventBus::subscribe`]r, and never missing one while
    /// subscribed (a receiver that falls behind by more than its backlog does). It must not
    /// block.
    pub fn on_event(&self, hook: Hook) {
        self.inner
            .heard
            .hooks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(hook);
    }

    /// The commands other replicas send about the tasks this replica runs, from now on.
    pub fn task_commands(&self) -> broadcast::Receiver<TaskCommand> {
        self.inner.heard.commands.subscribe()
    }

    /// The subscription's epoch: a number that changes each time the subscriber subscribes
    /// again (after a lost connection, during which events were missed), and `0` while it is
    /// not subscribed. Whoever relies on hearing every event compares it with the epoch in
    /// which it last asked Redis directly.
    pub fn epoch(&self) -> u64 {
        self.inner.heard.epoch.load(Ordering::Acquire)
    }
}

impl AnswerRoutes for EventBus {
    fn replica(&self) -> &str {
        &self.inner.heard.origin
    }

    fn deliver(
        &self,
        owner: &str,
        answer: RoutedAnswer,
    ) -> BoxFuture<'_, Result<(), Undeliverable>> {
        let owner = owner.to_owned();
        Box::pin(async move {
            // A name of the form this bus gives, so a client cannot pick a channel.
            if owner.len() != 16 || !owner.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Undeliverable::OwnerGone(owner));
            }
            let unreachable = |why: String| Undeliverable::Unreachable {
                owner: owner.clone(),
                why,
            };
            let payload =
                serde_json::to_string(&answer).map_err(|error| unreachable(error.to_string()))?;
            let mut invocation = self.inner.deliver.prepare_invoke();
            invocation
                .key(alive_key(&self.inner.prefix, &owner))
                .arg(replica_channel(&self.inner.prefix, &owner))
                .arg(payload);
            let deadline = tokio::time::Instant::now() + RESUBSCRIBE_GRACE;
            loop {
                let mut connection = self.inner.heard.connection.clone();
                let sent = tokio::time::timeout(
                    COMMAND_TIMEOUT,
                    invocation.invoke_async::<i64>(&mut connection),
                )
                .await;
                return match sent {
                    Ok(Ok(receivers)) if receivers > 0 => Ok(()),
                    // A heartbeat but nobody listening: subscribing again, or dead.
                    Ok(Ok(0)) if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    Ok(Ok(_)) => Err(Undeliverable::OwnerGone(owner)),
                    Ok(Err(error)) => Err(unreachable(format!("redis: {error}"))),
                    Err(_) => Err(unreachable(format!(
                        "redis: no answer within {} ms",
                        COMMAND_TIMEOUT.as_millis()
                    ))),
                };
            }
        })
    }

    fn arrivals(&self) -> broadcast::Receiver<RoutedAnswer> {
        self.inner.heard.answers.subscribe()
    }
}

fn replica_channel(prefix: &str, replica: &str) -> String {
    format!("{prefix}replica:{replica}")
}

fn alive_key(prefix: &str, replica: &str) -> String {
    format!("{prefix}alive:{replica}")
}

impl Listener {
    /// Subscribes and hands on what other replicas publish; reconnects every
    /// [`PROBE_EVERY`] while Redis is unreachable, until `stop`.
    async fn listen(self: Arc<Self>, stop: CancellationToken) {
        let mut told_down = false;
        let mut epochs = 0_u64;
        loop {
            match self.subscribed().await {
                Ok(pubsub) => {
                    if told_down {
                        tracing::info!(target: "switchboard::shared", "events from other replicas are heard again");
                        told_down = false;
                    }
                    epochs += 1;
                    self.epoch.store(epochs, Ordering::Release);
                    let lost = self.heard(pubsub, &stop).await;
                    self.epoch.store(0, Ordering::Release);
                    match lost {
                        None => return,
                        Some(why) => tracing::warn!(
                            target: "switchboard::shared",
                            "the subscription to other replicas' events was lost ({why}); subscribing again"
                        ),
                    }
                }
                Err(error) if !told_down => {
                    tracing::warn!(
                        target: "switchboard::shared",
                        "events from other replicas are not heard ({error}); retrying"
                    );
                    told_down = true;
                }
                Err(_) => {}
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(PROBE_EVERY) => {}
            }
        }
    }

    /// Hands on the messages of `pubsub`, pinging it and renewing the heartbeat (at once,
    /// then every [`HEARTBEAT_EVERY`]), until the connection is lost (why) or `stop` (`None`).
    async fn heard(&self, pubsub: redis::aio::PubSub, stop: &CancellationToken) -> Option<String> {
        let (mut sink, mut messages) = pubsub.split();
        let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => return None,
                message = messages.next() => message,
                _ = beat.tick() => {
                    let pinged = tokio::time::timeout(COMMAND_TIMEOUT, sink.ping::<redis::Value>()).await;
                    if !matches!(pinged, Ok(Ok(_))) {
                        return Some(format!("no PONG within {} ms", COMMAND_TIMEOUT.as_millis()));
                    }
                    self.beat().await;
                    continue;
                }
            };
            let Some(message) = message else {
                return Some("the connection ended".to_owned());
            };
            let payload = message.get_payload_bytes();
            if message.get_channel_name() == self.own_channel {
                if let Ok(answer) = serde_json::from_slice::<RoutedAnswer>(payload) {
                    let _ = self.answers.send(answer);
                } else if let Ok(command) = serde_json::from_slice::<TaskCommand>(payload) {
                    let _ = self.commands.send(command);
                }
                continue;
            }
            let Ok(envelope) = serde_json::from_slice::<Envelope>(payload) else {
                continue; // An event of a newer version, or not ours: ignored.
            };
            if envelope.origin != self.origin {
                let hooks = self
                    .hooks
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for hook in hooks.iter() {
                    hook(&envelope.event);
                }
                drop(hooks);
                let _ = self.received.send(envelope.event);
            }
        }
    }

    /// Renews this replica's heartbeat key (bounded; a failure shows at the next ping).
    async fn beat(&self) {
        let mut command = redis::cmd("SET");
        command
            .arg(&self.alive_key)
            .arg(1)
            .arg("PX")
            .arg(u64::try_from(HEARTBEAT_LIFE.as_millis()).unwrap_or(u64::MAX));
        let mut connection = self.connection.clone();
        let set = tokio::time::timeout(COMMAND_TIMEOUT, command.query_async::<()>(&mut connection));
        if let Ok(Err(error)) = set.await {
            tracing::debug!(target: "switchboard::shared", "heartbeat not renewed: {error}");
        }
    }

    /// A pub/sub connection subscribed to the events channel and this replica's own, within
    /// [`COMMAND_TIMEOUT`] a step.
    async fn subscribed(&self) -> Result<redis::aio::PubSub, String> {
        let bounded = |step: &str| {
            format!(
                "{step}: no answer within {} ms",
                COMMAND_TIMEOUT.as_millis()
            )
        };
        let mut pubsub = tokio::time::timeout(COMMAND_TIMEOUT, self.client.get_async_pubsub())
            .await
            .map_err(|_| bounded("connect"))?
            .map_err(|error| error.to_string())?;
        tokio::time::timeout(
            COMMAND_TIMEOUT,
            pubsub.subscribe(&[self.channel.as_str(), self.own_channel.as_str()]),
        )
        .await
        .map_err(|_| bounded("subscribe"))?
        .map_err(|error| error.to_string())?;
        Ok(pubsub)
    }
}

#[cfg(test)]
mod tests;
