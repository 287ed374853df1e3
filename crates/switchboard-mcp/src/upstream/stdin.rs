//! A stdio server's stdin: each line written by the task that sends it when nothing is
//! waiting to be written before it, else handed to a writer task that writes what has
//! queued up in one go.
//!
//! Every line used to go through the writer task, which on many cores lives on another
//! thread than the request: a wake-up of that thread per call. A sender now tries first to
//! write its line itself, once and without waiting (the pipe almost always has room). It
//! does so only holding the stdin lock, with no line queued and unwritten (`pending`) and
//! room in the queue taken beforehand, so a line never overtakes one sent before it, and
//! what a short write leaves over is queued, before the lock is let go, so it goes next.
//! A sender that queues its line does so holding the lock too: it can never slip in between
//! a short write and its rest. Nothing is awaited in the attempt, so a sender that is
//! dropped cannot leave half a line behind.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

/// The sending side of a child's stdin.
pub(super) struct Stdin<W> {
    pipe: Arc<Mutex<W>>,
    queue: mpsc::Sender<Vec<u8>>,
    /// Lines queued for the writer task and not written yet.
    pending: Arc<AtomicUsize>,
}

/// The stdin is closed: the child exited, or its writer stopped.
#[derive(Debug)]
pub(super) struct Closed;

impl<W: AsyncWrite + Unpin + Send + 'static> Stdin<W> {
    /// Takes the child's stdin and starts its writer task.
    pub(super) fn start(pipe: W) -> Self {
        let pipe = Arc::new(Mutex::new(pipe));
        let pending = Arc::new(AtomicUsize::new(0));
        let (queue, lines) = mpsc::channel(256);
        tokio::spawn(write_queued(pipe.clone(), lines, pending.clone()));
        Self {
            pipe,
            queue,
            pending,
        }
    }

    /// Writes one line (a newline is added).
    pub(super) async fn send(&self, mut line: Vec<u8>) -> Result<(), Closed> {
        line.push(b'\n');
        if let Ok(mut pipe) = self.pipe.try_lock()
            && self.pending.load(Ordering::Acquire) == 0
            // Room for what a short write leaves over, taken before anything is written.
            && let Ok(room) = self.queue.try_reserve()
        {
            let mut context = Context::from_waker(Waker::noop());
            match Pin::new(&mut *pipe).poll_write(&mut context, &line) {
                Poll::Ready(Ok(written)) if written == line.len() => return Ok(()),
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Err(Closed),
                Poll::Ready(Ok(written)) => {
                    line.drain(..written);
                }
                Poll::Pending => {}
            }
            // Queued while the lock is held: nothing can be written before the rest.
            self.pending.fetch_add(1, Ordering::AcqRel);
            room.send(line);
            return Ok(());
        }
        let permit = self.queue.reserve().await.map_err(|_| Closed)?;
        // Queued holding the lock, as a short write's rest is: never between one and its rest.
        let _pipe = self.pipe.lock().await;
        // Counted before the line can be taken, so the writer never counts it down first.
        self.pending.fetch_add(1, Ordering::AcqRel);
        permit.send(line);
        Ok(())
    }
}

/// Writes queued lines, all that have queued up at once, flushing once per burst.
async fn write_queued<W: AsyncWrite + Unpin>(
    pipe: Arc<Mutex<W>>,
    mut lines: mpsc::Receiver<Vec<u8>>,
    pending: Arc<AtomicUsize>,
) {
    let mut buffer = Vec::with_capacity(4096);
    while let Some(line) = lines.recv().await {
        let mut pipe = pipe.lock().await;
        buffer.clear();
        buffer.extend_from_slice(&line);
        let mut taken = 1;
        while let Ok(more) = lines.try_recv() {
            buffer.extend_from_slice(&more);
            taken += 1;
        }
        if pipe.write_all(&buffer).await.is_err() || pipe.flush().await.is_err() {
            return;
        }
        // Counted down while the lock is held: a sender that then takes it sees them written.
        pending.fetch_sub(taken, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order_whether_written_directly_or_queued() {
        // A small pipe: most lines fill it, so senders switch between writing themselves,
        // queueing behind a short write, and queueing behind each other.
        let (writer, mut reader) = tokio::io::duplex(64);
        let stdin = Arc::new(Stdin::start(writer));
        let sender = {
            let stdin = stdin.clone();
            tokio::spawn(async move {
                for n in 0..2_000 {
                    let line = format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(n % 50));
                    stdin.send(line.into_bytes()).await.expect("stdin open");
                }
            })
        };
        let mut received = Vec::new();
        let mut chunk = [0u8; 37];
        while received.iter().filter(|&&byte| byte == b'\n').count() < 2_000 {
            let read = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut chunk))
                .await
                .expect("lines keep coming")
                .expect("reads");
            received.extend_from_slice(&chunk[..read]);
        }
        sender.await.expect("the sender finishes");
        let text = String::from_utf8(received).expect("whole lines, UTF-8");
        for (n, line) in text.lines().enumerate() {
            assert_eq!(
                line,
                format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(n % 50))
            );
        }
        assert_eq!(stdin.pending.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_line_sent_while_another_waits_in_the_queue_goes_behind_it() {
        let (writer, mut reader) = tokio::io::duplex(8);
        let stdin = Stdin::start(writer);
        // Longer than the pipe: written in part, the rest queued.
        stdin.send(b"first line".to_vec()).await.expect("open");
        assert_eq!(stdin.pending.load(Ordering::Acquire), 1);
        stdin.send(b"second".to_vec()).await.expect("open");
        let mut received = Vec::new();
        let mut chunk = [0u8; 4];
        while received.len() < "first line\nsecond\n".len() {
            let read = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut chunk))
                .await
                .expect("the queue drains")
                .expect("reads");
            received.extend_from_slice(&chunk[..read]);
        }
        assert_eq!(received, b"first line\nsecond\n");
    }

    #[tokio::test]
    async fn a_closed_pipe_is_an_error_not_a_hang() {
        let (writer, reader) = tokio::io::duplex(64);
        drop(reader);
        let stdin = Stdin::start(writer);
        assert!(stdin.send(b"anyone?".to_vec()).await.is_err());
    }

    /// Many senders at once on several threads, into a pipe smaller than their lines (short
    /// writes all the time): every line arrives whole, never cut by another.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn lines_of_senders_on_many_threads_arrive_whole() {
        let (writer, mut reader) = tokio::io::duplex(48);
        let stdin = Arc::new(Stdin::start(writer));
        let senders: Vec<_> = (0..4)
            .map(|who| {
                let stdin = stdin.clone();
                tokio::spawn(async move {
                    for n in 0..200 {
                        let line = format!(
                            "{{\"who\":{who},\"n\":{n},\"pad\":\"{}\"}}",
                            "y".repeat(40 + n % 90)
                        );
                        stdin.send(line.into_bytes()).await.expect("stdin open");
                    }
                })
            })
            .collect();
        let mut received = Vec::new();
        let mut chunk = [0u8; 256];
        while received.iter().filter(|&&byte| byte == b'\n').count() < 4 * 200 {
            let read = tokio::time::timeout(Duration::from_secs(10), reader.read(&mut chunk))
                .await
                .expect("lines keep coming")
                .expect("reads");
            received.extend_from_slice(&chunk[..read]);
        }
        for sender in senders {
            sender.await.expect("a sender finishes");
        }
        let text = String::from_utf8(received).expect("UTF-8");
        let mut next = [0_usize; 4];
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|_| panic!("a line cut by another: {line}"));
            let who = value["who"].as_u64().expect("who") as usize;
            assert_eq!(
                value["n"].as_u64(),
                Some(next[who] as u64),
                "each sender's lines in order"
            );
            next[who] += 1;
        }
    }
}
