//! [`EventBus`]: typed events between the replicas of one deployment, over Redis pub/sub on
//! the channel `switchboard:{deployment}:events`. Today it carries `tools/list_changed`, so
//! clients listening on one replica hear of a change that happened on another.
//!
//! Delivery is at most once (pub/sub keeps nothing): fine for what it carries, since a client
//! told that a list changed lists again, and one that missed it lists on its next turn. A
//! replica never hears its own events. Publishing never waits on the call path (it is spawned,
//! bounded by [`COMMAND_TIMEOUT`]); the subscriber reconnects by itself every
//! [`PROBE_EVERY`] while Redis is unreachable.

use std::sync::Arc;

use futures::StreamExt;
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::limiter::{COMMAND_TIMEOUT, PROBE_EVERY, SharedError, open};

/// An event one replica tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SharedEvent {
    /// The tools a replica lists changed: listeners everywhere should list again.
    ToolsListChanged,
}

/// What travels on the channel: the event and the replica that sent it.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    origin: String,
    #[serde(flatten)]
    event: SharedEvent,
}

/// Publish and subscribe to [`SharedEvent`]s. Cheap to clone.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<BusInner>,
}

struct BusInner {
    connection: ConnectionManager,
    channel: String,
    /// This replica's id: its own events come back and are dropped.
    origin: String,
    received: broadcast::Sender<SharedEvent>,
    _listening: DropGuard,
}

impl EventBus {
    /// A bus on the Redis at `url` for `deployment`'s replicas. Connects lazily and keeps
    /// trying in the background while Redis is unreachable.
    pub fn connect(url: &str, deployment: &str) -> Result<Self, SharedError> {
        let (client, connection, runtime) = open(url)?;
        let channel = format!("switchboard:{{{deployment}}}:events");
        let origin = format!("{:016x}", rand::random::<u64>());
        let (received, _) = broadcast::channel(64);
        let stop = CancellationToken::new();
        runtime.spawn(listen(
            client,
            channel.clone(),
            origin.clone(),
            received.clone(),
            stop.clone(),
        ));
        Ok(Self {
            inner: Arc::new(BusInner {
                connection,
                channel,
                origin,
                received,
                _listening: stop.drop_guard(),
            }),
        })
    }

    /// Tells the other replicas `event`, in the background (never waits; lost if Redis is
    /// unreachable).
    pub fn publish(&self, event: SharedEvent) {
        let envelope = Envelope {
            origin: self.inner.origin.clone(),
            event,
        };
        let Ok(payload) = serde_json::to_string(&envelope) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut connection = self.inner.connection.clone();
        let channel = self.inner.channel.clone();
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

    /// The events other replicas publish from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SharedEvent> {
        self.inner.received.subscribe()
    }
}

/// Subscribes to `channel` and hands on what other replicas publish; reconnects every
/// [`PROBE_EVERY`] while Redis is unreachable, until `stop`.
async fn listen(
    client: redis::Client,
    channel: String,
    origin: String,
    received: broadcast::Sender<SharedEvent>,
    stop: CancellationToken,
) {
    let mut told_down = false;
    loop {
        match subscribed(&client, &channel).await {
            Ok(pubsub) => {
                if told_down {
                    tracing::info!(target: "switchboard::shared", "events from other replicas are heard again");
                    told_down = false;
                }
                let mut messages = pubsub.into_on_message();
                loop {
                    let message = tokio::select! {
                        () = stop.cancelled() => return,
                        message = messages.next() => message,
                    };
                    let Some(message) = message else {
                        break; // The connection ended: subscribe again.
                    };
                    let Ok(envelope) =
                        serde_json::from_slice::<Envelope>(message.get_payload_bytes())
                    else {
                        continue; // An event of a newer version, or not ours: ignored.
                    };
                    if envelope.origin != origin {
                        let _ = received.send(envelope.event);
                    }
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

/// A pub/sub connection subscribed to `channel`, within [`COMMAND_TIMEOUT`] a step.
async fn subscribed(client: &redis::Client, channel: &str) -> Result<redis::aio::PubSub, String> {
    let bounded = |step: &str| {
        format!(
            "{step}: no answer within {} ms",
            COMMAND_TIMEOUT.as_millis()
        )
    };
    let mut pubsub = tokio::time::timeout(COMMAND_TIMEOUT, client.get_async_pubsub())
        .await
        .map_err(|_| bounded("connect"))?
        .map_err(|error| error.to_string())?;
    tokio::time::timeout(COMMAND_TIMEOUT, pubsub.subscribe(channel))
        .await
        .map_err(|_| bounded("subscribe"))?
        .map_err(|error| error.to_string())?;
    Ok(pubsub)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchboard_testkit::redis::Redis;

    use super::*;

    /// How long a test waits for an event that should come.
    const HEARD_WITHIN: Duration = Duration::from_secs(5);

    /// Publishes `event` on `from` until `to` hears it (a new subscription takes a moment).
    async fn heard(
        from: &EventBus,
        to: &mut broadcast::Receiver<SharedEvent>,
        event: SharedEvent,
    ) -> bool {
        let started = tokio::time::Instant::now();
        while started.elapsed() < HEARD_WITHIN {
            from.publish(event.clone());
            if let Ok(Ok(got)) = tokio::time::timeout(Duration::from_millis(100), to.recv()).await {
                return got == event;
            }
        }
        false
    }

    #[tokio::test]
    async fn replicas_hear_each_other_never_themselves_and_again_after_an_outage() {
        let mut redis = Redis::start();
        let a = EventBus::connect(&redis.url(), "t").expect("bus");
        let b = EventBus::connect(&redis.url(), "t").expect("bus");
        let other = EventBus::connect(&redis.url(), "other").expect("bus");
        let (mut at_a, mut at_b, mut at_other) = (a.subscribe(), b.subscribe(), other.subscribe());
        assert!(heard(&a, &mut at_b, SharedEvent::ToolsListChanged).await);
        // Long enough for a's own message to have come back, were it handed on.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(at_a.try_recv().is_err(), "a replica never hears itself");
        assert!(
            at_other.try_recv().is_err(),
            "another deployment hears nothing"
        );

        redis.stop();
        a.publish(SharedEvent::ToolsListChanged); // Lost, and publishing does not wait.
        redis.restart();
        assert!(
            heard(&a, &mut at_b, SharedEvent::ToolsListChanged).await,
            "the subscriber came back by itself"
        );
    }

    #[test]
    fn an_event_travels_as_tagged_json_with_its_origin() {
        let envelope = Envelope {
            origin: "r1".into(),
            event: SharedEvent::ToolsListChanged,
        };
        assert_eq!(
            serde_json::to_string(&envelope).expect("json"),
            r#"{"origin":"r1","event":"tools_list_changed"}"#
        );
    }
}
