//! Connection workers: the HTTP front's connections served on N threads, each running a
//! current-thread runtime of its own, instead of on one work-stealing runtime.
//!
//! A call through the front is a chain of handoffs — the connection's reader, the call, the
//! upstream connection's driver, the answer — and on a work-stealing runtime each handoff may
//! wake a task on another core: a cross-core wake-up, a stolen task whose data lives in
//! another core's cache, threads parking and unparking around an empty queue. On a machine of
//! many cores that costs more CPU per call than the work itself (issue 33's profile: 145 µs
//! per call on 16 cores against ~40 µs on one thread). Here one thread owns a connection for
//! its whole life, and everything the connection's calls start — upstream HTTP connections
//! included, since the upstream client pools them per thread — runs on that thread too, so a
//! call's handoffs stay on one core; the cores share only what the calls share (catalog,
//! ledger, limits).
//!
//! One acceptor, on the caller's runtime, lets connections in within the listener's bounds
//! ([`super::connections`]) and hands each to the worker
//! holding the fewest open connections (the kernel's `SO_REUSEPORT` hashing would leave some
//! threads with twice the average of a few long-lived keep-alive connections). On shutdown
//! the acceptor stops, and every worker asks its connections to close after their current
//! request and waits for them; the caller bounds that with its grace period.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::connections::{Admission, ConnectionLimits, serve_connection};

/// A connection handed to a worker, with its place under the listener's cap.
type Handed = (std::net::TcpStream, OwnedSemaphorePermit);

/// A worker thread: where to send it connections, and how many it has open.
struct Worker {
    connections: mpsc::UnboundedSender<Handed>,
    open: Arc<AtomicUsize>,
    /// Fires when the worker's thread has served its last connection.
    finished: oneshot::Receiver<()>,
}

/// Serves `app` on connections from `listener`, within `limits`, each on one of `count`
/// worker threads, until `shutdown` fires and every worker's connections have closed.
pub(super) async fn serve(
    app: Router,
    listener: TcpListener,
    count: usize,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let mut workers = Vec::with_capacity(count);
    for index in 0..count {
        workers.push(start_worker(
            index,
            app.clone(),
            limits.header_timeout,
            shutdown.clone(),
        )?);
    }
    let admission = Admission::new(&limits);
    while let Some((stream, permit)) = admission.accept(&listener, &shutdown).await {
        hand_over(&workers, stream, permit);
    }
    drop(listener);
    for worker in workers {
        drop(worker.connections);
        let _ = worker.finished.await;
    }
    Ok(())
}

/// Gives `stream` to the worker with the fewest open connections.
fn hand_over(workers: &[Worker], stream: tokio::net::TcpStream, permit: OwnedSemaphorePermit) {
    let stream = match stream.into_std() {
        Ok(stream) => stream,
        Err(error) => {
            tracing::warn!(%error, "cannot hand a connection to a worker");
            return;
        }
    };
    let Some(worker) = workers
        .iter()
        .min_by_key(|worker| worker.open.load(Ordering::Relaxed))
    else {
        return;
    };
    worker.open.fetch_add(1, Ordering::Relaxed);
    if worker.connections.send((stream, permit)).is_err() {
        worker.open.fetch_sub(1, Ordering::Relaxed);
        tracing::warn!("a connection worker has stopped; the connection is closed");
    }
}

fn start_worker(
    index: usize,
    app: Router,
    header_timeout: Option<Duration>,
    shutdown: CancellationToken,
) -> io::Result<Worker> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(switchboard_core::idle::on_thread_park)
        .build()?;
    let (connections, incoming) = mpsc::unbounded_channel();
    let open = Arc::new(AtomicUsize::new(0));
    let (done, finished) = oneshot::channel();
    let counter = open.clone();
    std::thread::Builder::new()
        .name(format!("switchboard-http-{index}"))
        .spawn(move || {
            runtime.block_on(run_worker(app, incoming, counter, header_timeout, shutdown));
            let _ = done.send(());
        })?;
    Ok(Worker {
        connections,
        open,
        finished,
    })
}

/// A worker's loop: serve each connection it is handed on a task of its own runtime; at
/// shutdown, let the connections finish their requests and close.
async fn run_worker(
    app: Router,
    mut incoming: mpsc::UnboundedReceiver<Handed>,
    open: Arc<AtomicUsize>,
    header_timeout: Option<Duration>,
    shutdown: CancellationToken,
) {
    let mut connections = JoinSet::new();
    while let Some((stream, permit)) = incoming.recv().await {
        match tokio::net::TcpStream::from_std(stream) {
            Ok(stream) => {
                let (app, open, shutdown) = (app.clone(), open.clone(), shutdown.clone());
                connections.spawn(async move {
                    serve_connection(app, stream, header_timeout, permit, shutdown).await;
                    open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(error) => {
                open.fetch_sub(1, Ordering::Relaxed);
                tracing::warn!(%error, "a worker cannot take a connection");
            }
        }
        // Reap the connections that ended, so the set does not grow with the gateway's age.
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}
