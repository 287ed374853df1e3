//! Newline-delimited JSON-RPC, as the stdio transport frames it in both directions (the
//! gateway's own stdin, a stdio server's stdout): one line at a time, in bounded memory. A
//! line over the limit — its line ending not counted — is skipped whole, and the id of the
//! request it was or answers is read from its start, so that only that request fails.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::jsonrpc::RequestId;

/// How much of an oversized line is kept to find its request's id.
const ID_SEARCH_BYTES: usize = 4096;

/// Why a line was not read.
pub(crate) enum Unread {
    /// Over the limit and skipped, with the request id its start shows, if any.
    TooLarge(Option<RequestId>),
    /// Reading failed: the stream is over.
    Failed(std::io::Error),
}

/// Reads one line into `line`; a line over `max_bytes` is skipped whole. Returns the bytes
/// read, line ending included (0: the end of the stream).
pub(crate) async fn read_bounded_line(
    reader: &mut BufReader<impl AsyncRead + Unpin>,
    line: &mut Vec<u8>,
    max_bytes: usize,
) -> Result<usize, Unread> {
    let mut too_large: Option<Option<RequestId>> = None;
    loop {
        let available = reader.fill_buf().await.map_err(Unread::Failed)?;
        if available.is_empty() {
            return match too_large {
                Some(id) => Err(Unread::TooLarge(id)),
                None => Ok(line.len()),
            };
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..=end], true),
            None => (available, false),
        };
        if too_large.is_none() {
            line.extend_from_slice(chunk);
            let ending = if line.ends_with(b"\r\n") {
                2
            } else {
                usize::from(line.ends_with(b"\n"))
            };
            if line.len() - ending > max_bytes {
                too_large = Some(id_in_start(&line[..line.len().min(ID_SEARCH_BYTES)]));
                line.clear();
            }
        }
        let consumed = chunk.len();
        reader.consume(consumed);
        if done {
            return match too_large {
                Some(id) => Err(Unread::TooLarge(id)),
                None => Ok(line.len()),
            };
        }
    }
}

/// The `"id"` a JSON-RPC message's first bytes show (a number or a string), if they do.
fn id_in_start(start: &[u8]) -> Option<RequestId> {
    let at = start.windows(4).position(|w| w == b"\"id\"")?;
    let rest = &start[at + 4..];
    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = rest.get(colon..)?.strip_prefix(b":")?;
    let value = serde_json::Deserializer::from_slice(rest)
        .into_iter::<serde_json::Value>()
        .next()?
        .ok()?;
    match value {
        serde_json::Value::Number(n) => n.as_i64().map(RequestId::Number),
        serde_json::Value::String(s) => Some(RequestId::String(s)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line over the limit is skipped whole, with the id of the request it answers, and
    /// the next line reads as usual; a line of exactly the limit is taken.
    #[tokio::test]
    async fn an_oversized_answer_is_skipped_with_its_id_and_reading_goes_on() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{}"}}}}"#,
            "z".repeat(500)
        );
        let exact = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        let text = format!("{big}\n{exact}\r\n");
        let mut reader = BufReader::with_capacity(64, text.as_bytes());
        let mut line = Vec::new();
        let first = read_bounded_line(&mut reader, &mut line, exact.len()).await;
        assert!(
            matches!(first, Err(Unread::TooLarge(Some(RequestId::Number(7))))),
            "the oversized answer names request 7"
        );
        line.clear();
        let second = read_bounded_line(&mut reader, &mut line, exact.len()).await;
        assert!(matches!(second, Ok(n) if n == exact.len() + 2));
        assert_eq!(line.trim_ascii(), exact.as_bytes());
    }
}
