//! How HTTP connections are let in and served, on the front and on the admin endpoint: at
//! most [`ConnectionLimits::max_connections`] at once, and each must send a request's headers
//! within [`ConnectionLimits::header_timeout`] of its start or of its previous answer.
//!
//! A client that opens connections and sends nothing, or a header a byte a minute (slowloris),
//! would otherwise hold a task and a file descriptor each for ever, until the gateway could
//! accept no more. With the bound, a silent or idle connection is closed after the timeout,
//! and past the cap new connections wait in the kernel's listen queue (accepted as others
//! close) rather than failing `accept` for everyone once the process runs out of files. A
//! request whose headers arrived is not bounded here: a long call, or a notification stream,
//! keeps its connection as long as it runs.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The bounds on a listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection may take to send a request's headers, from its start or its
    /// previous answer; none: unbounded.
    pub header_timeout: Option<Duration>,
    /// Connections served at once; past it, new ones wait to be accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    /// The config's defaults: 30 s for the headers, 10,000 connections.
    fn default() -> Self {
        Self {
            header_timeout: Some(switchboard_core::config::DEFAULT_HEADER_TIMEOUT),
            max_connections: switchboard_core::config::DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The listener's side of the cap: a permit per open connection.
pub(super) struct Admission {
    permits: Arc<Semaphore>,
    max: usize,
    /// Whether the cap was reached since it was last logged (logged once per episode).
    full: AtomicBool,
}

impl Admission {
    pub(super) fn new(limits: &ConnectionLimits) -> Self {
        let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
            full: AtomicBool::new(false),
        }
    }

    /// The next connection of `listener` with its permit, once one is free; none once
    /// `shutdown` fires.
    pub(super) async fn accept(
        &self,
        listener: &TcpListener,
        shutdown: &CancellationToken,
    ) -> Option<(TcpStream, OwnedSemaphorePermit)> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if !self.full.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        max = self.max,
                        "max_connections reached: new connections wait until one closes"
                    );
                }
                tokio::select! {
                    permit = self.permits.clone().acquire_owned() => permit.ok()?,
                    () = shutdown.cancelled() => return None,
                }
            }
        };
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = shutdown.cancelled() => return None,
            };
            match accepted {
                Ok((stream, _)) => {
                    if self.permits.available_permits() > self.max / 2 {
                        self.full.store(false, Ordering::Relaxed);
                    }
                    // Answers are often written in two parts (an SSE event, then the end of
                    // the stream): with Nagle's algorithm on, the second waits for the
                    // client's delayed ACK — 40 ms a call.
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "cannot set TCP_NODELAY on a connection");
                    }
                    return Some((stream, permit));
                }
                Err(error) => {
                    // Out of file descriptors and the like: not the listener's fault, and it
                    // passes; wait a little rather than spin on it.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// Serves `app` on `listener` on the caller's runtime, within `limits`, until `shutdown`
/// fires and every connection has closed (each is asked to close after its current request).
pub async fn serve_router(
    app: Router,
    listener: TcpListener,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let admission = Admission::new(&limits);
    let mut connections = JoinSet::new();
    while let Some((stream, permit)) = admission.accept(&listener, &shutdown).await {
        connections.spawn(serve_connection(
            app.clone(),
            stream,
            limits.header_timeout,
            permit,
            shutdown.clone(),
        ));
        // Reap the connections that ended, so the set does not grow with the gateway's age.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// Serves one connection with HTTP/1.1 until it closes; once `shutdown` fires, it closes
/// after its current request. `permit` is held as long as the connection is open.
pub(super) async fn serve_connection(
    app: Router,
    stream: TcpStream,
    header_timeout: Option<Duration>,
    permit: OwnedSemaphorePermit,
    shutdown: CancellationToken,
) {
    let service = TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::trace!(%error, "a connection ended with an error");
    }
    drop(permit);
}
