//! `read_file` with `head` or `tail` on a file over `max_read_bytes`: the first lines are
//! streamed from the start and the last ones read from a window at the end, so neither reads
//! (nor holds) more than the limit. When the lines asked for do not fit in the limit, the
//! answer says so rather than cutting a line.

use std::io::{Read, Seek, SeekFrom};

use super::Files;
use super::read::{Content, lines};
use super::roots::io_message;

impl Files {
    /// The first `head` or last `tail` lines of `given`, within the read limit however large
    /// the file is.
    pub(super) fn read_lines(
        &self,
        given: &str,
        head: Option<usize>,
        tail: Option<usize>,
    ) -> Result<Content, String> {
        let (_, mut file, meta) = self.open_for_reading(given)?;
        if meta.is_dir() || meta.len() <= self.max_read_bytes {
            // Small enough to read whole (and a directory gets read's answer).
            return match self.read(given)? {
                Content::Text(text) => Ok(Content::Text(lines(&text, head, tail))),
                binary => Ok(binary),
            };
        }
        let limit = self.max_read_bytes;
        let (wanted, which) = match (head, tail) {
            (Some(n), _) => (n, "first"),
            (None, Some(n)) => (n, "last"),
            // Called with head or tail; without either the whole file is over the limit.
            (None, None) => {
                return Err(format!(
                    "'{given}' is {} bytes, over the read limit of {limit} bytes",
                    meta.len()
                ));
            }
        };
        let mut window = Vec::new();
        if head.is_some() {
            (&mut file)
                .take(limit)
                .read_to_end(&mut window)
                .map_err(|e| io_message(given, &e))?;
            // Only whole lines are shown: the limit may have cut the last one, perhaps inside
            // a character that would then not decode.
            let whole = window
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            window.truncate(whole);
        } else {
            let start = meta.len().saturating_sub(limit);
            file.seek(SeekFrom::Start(start))
                .map_err(|e| io_message(given, &e))?;
            (&mut file)
                .take(limit)
                .read_to_end(&mut window)
                .map_err(|e| io_message(given, &e))?;
            if start > 0 {
                // The window starts inside a line: that line is not whole.
                let first_end = window
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(window.len(), |i| i + 1);
                window.drain(..first_end);
            }
        }
        if window.contains(&0) {
            return Err(format!(
                "'{given}' is a binary file of {} bytes, over the read limit of {limit} bytes",
                meta.len()
            ));
        }
        let text = String::from_utf8(window).map_err(|_| {
            format!("'{given}' is not UTF-8 text, and is over the read limit of {limit} bytes")
        })?;
        let found: Vec<&str> = text.split_inclusive('\n').collect();
        // Whole lines only: the head window ends at its last newline, the tail's starts after
        // its first.
        if found.len() < wanted {
            return Err(format!(
                "the {which} {wanted} lines of '{given}' are more than the read limit of {limit} bytes (the file is {} bytes); ask for fewer lines",
                meta.len()
            ));
        }
        let shown = if head.is_some() {
            found[..wanted].concat()
        } else {
            found[found.len() - wanted..].concat()
        };
        Ok(Content::Text(shown))
    }
}
