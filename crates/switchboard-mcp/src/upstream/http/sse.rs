//! An incremental Server-Sent Events parser: bytes in, complete events out.

/// One event: its type (`message` when absent) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: String,
    pub data: String,
}

/// Buffers partial input across chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    kind: Option<String>,
    data: Vec<String>,
}

/// Why the stream is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge;

impl SseParser {
    /// Feeds a chunk; returns the events it completed. An event larger than `max_bytes` is an
    /// error (the stream must be dropped).
    pub fn feed(&mut self, chunk: &[u8], max_bytes: usize) -> Result<Vec<Event>, TooLarge> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(Event {
                        kind: self.kind.take().unwrap_or_else(|| "message".to_owned()),
                        data: self.data.join("\n"),
                    });
                    self.data.clear();
                }
                self.kind = None;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (
                    field.to_owned(),
                    value.strip_prefix(' ').unwrap_or(value).to_owned(),
                ),
                None => (line.clone(), String::new()),
            };
            match field.as_str() {
                "data" => self.data.push(value),
                "event" => self.kind = Some(value),
                _ => {}
            }
        }
        let pending = self.buffer.len() + self.data.iter().map(String::len).sum::<usize>();
        if pending > max_bytes {
            Err(TooLarge)
        } else {
            Ok(events)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_across_chunks_with_comments_and_crlf() {
        let mut parser = SseParser::default();
        assert!(
            parser
                .feed(b": keepalive\n\nevent: endp", 1 << 20)
                .expect("ok")
                .is_empty()
        );
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
                Event {
                    kind: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
            ]
        );
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut parser = SseParser::default();
        assert_eq!(parser.feed(&[b'x'; 100], 50), Err(TooLarge));
    }
}
