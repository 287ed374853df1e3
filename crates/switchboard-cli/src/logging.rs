//! Logs go to stderr (stdout belongs to the protocol on stdio), filtered by `--log`,
//! `$SWITCHBOARD_LOG` or a per-command default.
//!
//! A line is handed to a thread of its own that writes it ([`Lossy`]): a parent that pipes
//! the gateway's stderr and reads it slowly — or never, as MCP clients may — then blocks that
//! thread, never the runtime (on stdio, its only thread: one log write into a full pipe froze
//! the whole gateway). Past [`BACKLOG`] lines waiting, new ones are dropped and counted, and
//! the count is written once the writer catches up. A line that cannot be written (stderr
//! closed) is dropped: tracing's own report of that failure would `eprintln!` to the same
//! closed stderr, and that panic killed whichever task was logging.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Log lines that may wait for the writer before new ones are dropped.
const BACKLOG: usize = 4096;

/// How long [`flush`] waits for the lines already logged to be written.
const FLUSH_PATIENCE: Duration = Duration::from_millis(500);

enum Item {
    Line(Vec<u8>),
    /// Answered once every line sent before it is written.
    Flush(SyncSender<()>),
}

/// The writer thread's inbox, once logging is set up.
static INBOX: OnceLock<SyncSender<Item>> = OnceLock::new();
/// Lines dropped since the writer last said so.
static DROPPED: AtomicU64 = AtomicU64::new(0);

pub fn init(flag: Option<&str>, default_level: &str) {
    let filter = flag
        .map(str::to_owned)
        .or_else(|| std::env::var("SWITCHBOARD_LOG").ok())
        .unwrap_or_else(|| default_level.to_owned());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(default_level));
    let (inbox, items) = sync_channel(BACKLOG);
    let started = std::thread::Builder::new()
        .name("switchboard-log".to_owned())
        .spawn(move || write_lines(&items));
    if started.is_err() || INBOX.set(inbox).is_err() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Lossy)
        .with_target(false)
        .log_internal_errors(false)
        .try_init();
}

/// Waits (a little) for the lines logged so far to reach stderr: before the process exits.
pub fn flush() {
    let Some(inbox) = INBOX.get() else {
        return;
    };
    let (done, written) = sync_channel(1);
    if inbox.try_send(Item::Flush(done)).is_ok() {
        let _ = written.recv_timeout(FLUSH_PATIENCE);
    }
}

fn write_lines(items: &Receiver<Item>) {
    let mut stderr = std::io::stderr();
    while let Ok(item) = items.recv() {
        match item {
            Item::Line(line) => {
                let _ = stderr.write_all(&line);
            }
            Item::Flush(done) => {
                let _ = stderr.flush();
                let _ = done.send(());
            }
        }
        let dropped = DROPPED.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = writeln!(
                stderr,
                "switchboard: {dropped} log lines dropped (stderr was not read fast enough)"
            );
        }
    }
}

/// The subscriber's writer: each event's text, handed to the writer thread whole.
struct Lossy;

/// One event's text, sent when the event is written.
struct LossyLine(Vec<u8>);

impl<'a> MakeWriter<'a> for Lossy {
    type Writer = LossyLine;

    fn make_writer(&'a self) -> Self::Writer {
        LossyLine(Vec::with_capacity(160))
    }
}

impl Write for LossyLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LossyLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let Some(inbox) = INBOX.get() else {
            return;
        };
        let line = std::mem::take(&mut self.0);
        if let Err(TrySendError::Full(_)) = inbox.try_send(Item::Line(line)) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}
