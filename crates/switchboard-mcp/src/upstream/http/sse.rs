//! An incremental Server-Sent Events parser (the WHATWG event-stream format): bytes in,
//! complete events out. Handles lines split across chunks, `\n`, `\r\n` and lone `\r` line
//! ends, comments, multi-line `data:`, `id:` (remembered for resumption once its event is
//! complete, as the spec's "last event ID" is: an event cut off mid-way is sent again after
//! a resumption) and `retry:`.

use std::time::Duration;

/// One event: its type (`message` when absent) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: String,
    pub data: String,
}

/// Whether a `Content-Type` value names an event stream (media types are case-insensitive,
/// RFC 9110 §8.3.1; parameters do not matter).
pub fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Buffers partial input across chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    /// How much of `buffer` (a partial line) is known to hold no line end: a long line
    /// arriving in many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    started: bool,
    kind: Option<String>,
    data: Option<String>,
    /// The id the event in the making will have (the last `id:` seen; it carries over).
    id_buffer: Option<String>,
    /// The id of the last complete event.
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// An event (or a line) over the size limit: the stream must be dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge;

impl SseParser {
    /// Feeds a chunk; returns the events it completed. An event larger than `max_bytes` is an
    /// error (the stream must be dropped).
    pub fn feed(&mut self, chunk: &[u8], max_bytes: usize) -> Result<Vec<Event>, TooLarge> {
        let mut chunk = chunk;
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut from = self.scanned.min(self.buffer.len());
        while let Some(offset) = self.buffer[from..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = from + offset;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + 1;
            if self.buffer[end] == b'\r' {
                match self.buffer.get(start) {
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            from = start;
            if let Some(event) = self.line(line) {
                events.push(event);
            }
            // The event in the making: its data so far (what follows in this chunk may be
            // other, complete events, each within the limit on its own).
            if self.pending(0) > max_bytes {
                return Err(TooLarge);
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.pending(self.buffer.len()) > max_bytes {
            return Err(TooLarge);
        }
        Ok(events)
    }

    /// The id of the last event that set one (`Last-Event-ID` when resuming).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The reconnection delay the server asked for, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Forgets a partial event (the connection broke mid-event), its id included; keeps the
    /// last complete event's id and the retry.
    pub fn reset_partial(&mut self) {
        self.id_buffer.clone_from(&self.last_event_id);
        self.buffer.clear();
        self.scanned = 0;
        self.after_cr = false;
        self.started = false;
        self.kind = None;
        self.data = None;
    }

    /// The bytes an event in the making holds: `unread` of the buffer, and its data.
    fn pending(&self, unread: usize) -> usize {
        unread + self.data.as_ref().map_or(0, String::len)
    }

    fn line(&mut self, mut line: String) -> Option<Event> {
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            // Dispatch: the id is the stream's from now on, even for an event without data.
            self.last_event_id.clone_from(&self.id_buffer);
            let kind = self.kind.take();
            let data = self.data.take()?;
            return Some(Event {
                kind: kind
                    .filter(|k| !k.is_empty())
                    .unwrap_or_else(|| "message".to_owned()),
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.kind = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id_buffer = Some(value.to_owned()),
            // ASCII digits only (`u64::parse` would take a leading `+`).
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(millis) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(millis));
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(data: &str) -> Event {
        Event {
            kind: "message".into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_across_chunks_with_comments_and_crlf() {
        let mut parser = SseParser::default();
        let first = parser.feed(b": keepalive\n\nevent: endp", 1 << 20);
        assert_eq!(first, Ok(vec![]));
        let events = parser
            .feed(
                b"oint\r\ndata: /messages?s=1\r\n\r\ndata: {\"a\":\ndata: 1}\n\n",
                1 << 20,
            )
            .expect("ok");
        assert_eq!(
            events,
            [
                Event {
                    kind: "endpoint".into(),
                    data: "/messages?s=1".into()
                },
                message("{\"a\":\n1}"),
            ]
        );
    }

    #[test]
    fn ids_retry_and_lone_carriage_returns() {
        let mut parser = SseParser::default();
        let events = parser
            .feed(b"\xef\xbb\xbfid: 7\rretry: 1500\rdata:x\r", 1 << 10)
            .expect("ok");
        assert!(events.is_empty());
        // The `\n` of a `\r\n` split across chunks is not a second (empty) line.
        assert_eq!(parser.feed(b"\n", 1 << 10), Ok(vec![]));
        assert_eq!(parser.feed(b"\n", 1 << 10), Ok(vec![message("x")]));
        assert_eq!(parser.last_event_id(), Some("7"));
        assert_eq!(parser.retry(), Some(Duration::from_millis(1500)));
        // An event with an id but no data (a resumption primer) dispatches nothing.
        assert_eq!(
            parser.feed(b"id: 8\ndata\n\nid: 9\n\n", 1 << 10),
            Ok(vec![message("")])
        );
        assert_eq!(parser.last_event_id(), Some("9"));
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut parser = SseParser::default();
        assert_eq!(parser.feed(&[b'x'; 100], 50), Err(TooLarge));
        let mut parser = SseParser::default();
        let mut lines = Vec::new();
        for _ in 0..10 {
            lines.extend_from_slice(b"data: 0123456789\n");
        }
        assert_eq!(parser.feed(&lines, 50), Err(TooLarge));
    }

    /// An event of data up to the limit is taken, whether it arrives at once or in small
    /// chunks: the bytes of a line already taken into the data are not counted again.
    #[test]
    fn an_event_just_under_the_limit_is_taken_in_one_chunk_or_many() {
        let payload = "y".repeat(900);
        let event = format!("data: {payload}\n\n");
        let mut whole = SseParser::default();
        let taken = whole.feed(event.as_bytes(), 1000).expect("under the limit");
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].data, payload);
        let mut pieces = SseParser::default();
        let mut got = Vec::new();
        for chunk in event.as_bytes().chunks(7) {
            got.extend(pieces.feed(chunk, 1000).expect("under the limit"));
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, payload);
    }

    /// Events each within the limit are taken when they arrive together over it.
    #[test]
    fn several_events_in_one_chunk_are_judged_one_by_one() {
        let event = format!("data: {}\n\n", "z".repeat(600));
        let two = event.repeat(2);
        let mut parser = SseParser::default();
        let taken = parser
            .feed(two.as_bytes(), 1000)
            .expect("each is under the limit");
        assert_eq!(taken.len(), 2);
    }

    /// An event's id is the stream's only once the event is complete: one cut off by a broken
    /// connection is asked for again (`Last-Event-ID` stays the previous one).
    #[test]
    fn the_id_of_an_event_cut_off_is_not_the_last_one() {
        let mut parser = SseParser::default();
        let first = parser.feed(b"id: 1\ndata: a\n\nid: 2\ndata: {\"par", 1 << 10);
        assert_eq!(first, Ok(vec![message("a")]));
        assert_eq!(parser.last_event_id(), Some("1"));
        parser.reset_partial();
        assert_eq!(parser.last_event_id(), Some("1"));
        // Resumed after 1: event 2 comes again, whole; an event without id keeps it.
        let again = parser.feed(b"id: 2\ndata: b\n\ndata: c\n\n", 1 << 10);
        assert_eq!(again, Ok(vec![message("b"), message("c")]));
        assert_eq!(parser.last_event_id(), Some("2"));
    }

    #[test]
    fn event_streams_are_told_by_their_media_type_in_any_case() {
        for yes in [
            "text/event-stream",
            "Text/Event-Stream; charset=utf-8",
            " text/event-stream",
        ] {
            assert!(is_event_stream(yes), "{yes}");
        }
        for no in ["application/json", "text/event-streams", ""] {
            assert!(!is_event_stream(no), "{no}");
        }
    }

    /// `retry:` takes ASCII digits only.
    #[test]
    fn a_retry_with_a_sign_is_ignored() {
        let mut parser = SseParser::default();
        let _ = parser.feed(b"retry: +1500\nretry: 15x\n\n", 1 << 10);
        assert_eq!(parser.retry(), None);
    }
}
