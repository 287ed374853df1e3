//! The call load of `bench manager`: C clients call `a__echo`, each one call after another on
//! a keep-alive connection with a legacy session of its own, until the window's controller
//! (sleeping through an idle window, or queueing installs and following them through a busy
//! one) returns. Every latency is kept; a failed call is counted, and its connection opened
//! again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::json;

use crate::drive::failure;
use crate::http_client::HttpClient;
use crate::report::Percentiles;

/// The calls of one window or more.
#[derive(Default)]
pub struct Calls {
    pub samples: Vec<Duration>,
    /// When each sample's call was sent.
    pub sent: Vec<Instant>,
    pub errors: usize,
    pub first_error: Option<String>,
}

impl Calls {
    fn failed(&mut self, reason: String) {
        self.errors += 1;
        self.first_error.get_or_insert(reason);
    }

    pub fn merge(&mut self, other: &Calls) {
        self.samples.extend_from_slice(&other.samples);
        self.sent.extend_from_slice(&other.sent);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }

    /// The calls sent before `at`, and those sent from it on (failed calls count in the
    /// first).
    pub fn split_at(self, at: Instant) -> (Calls, Calls) {
        let mut before = Calls {
            errors: self.errors,
            first_error: self.first_error,
            ..Calls::default()
        };
        let mut after = Calls::default();
        for (sample, sent) in self.samples.into_iter().zip(self.sent) {
            let part = if sent < at { &mut before } else { &mut after };
            part.samples.push(sample);
            part.sent.push(sent);
        }
        (before, after)
    }

    pub fn side(mut self) -> Side {
        Side {
            calls: self.samples.len() + self.errors,
            latency: Percentiles::of(&mut self.samples),
            errors: self.errors,
            first_error: self.first_error,
        }
    }
}

/// The calls of one kind of window.
#[derive(Debug, Serialize)]
pub struct Side {
    /// Latency of the calls that were answered.
    pub latency: Percentiles,
    /// Every call made, failed ones included.
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
}

/// Opens `clients` connections with `open` and calls through them for half a second.
pub fn warm_up(
    open: &(dyn Fn() -> anyhow::Result<HttpClient> + Sync),
    callers: &mut [HttpClient],
) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_millis(500);
    window(open, callers, || {
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        Ok(())
    })
    .map(|_| ())
}

/// Every client calls until `control` returns; the calls, how long the window lasted and
/// what `control` returned. Reconnects with `open` after a failed call.
pub fn window<T>(
    open: &(dyn Fn() -> anyhow::Result<HttpClient> + Sync),
    callers: &mut [HttpClient],
    control: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(Calls, Duration, T)> {
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let stop = &stop;
        let workers: Vec<_> = callers
            .iter_mut()
            .map(|client| scope.spawn(move || call_until(open, client, stop)))
            .collect();
        let controlled = control();
        stop.store(true, Ordering::Relaxed);
        let length = started.elapsed();
        let mut calls = Calls::default();
        for worker in workers {
            let done = worker
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))?;
            calls.merge(&done);
        }
        Ok((calls, length, controlled?))
    })
}

/// Calls `a__echo` one after another until `stop`.
fn call_until(
    open: &(dyn Fn() -> anyhow::Result<HttpClient> + Sync),
    client: &mut HttpClient,
    stop: &AtomicBool,
) -> anyhow::Result<Calls> {
    let params = json!({"name": "a__echo", "arguments": {"message": "beside the manager"}});
    let mut calls = Calls::default();
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        match client.exchange("tools/call", params.clone()) {
            Ok(answer) => match failure(&answer) {
                None => {
                    calls.samples.push(sent.elapsed());
                    calls.sent.push(sent);
                }
                Some(reason) => calls.failed(reason),
            },
            Err(error) => {
                calls.failed(format!("{error:#}"));
                *client = open().context("reconnecting after a failed call")?;
            }
        }
    }
    Ok(calls)
}
