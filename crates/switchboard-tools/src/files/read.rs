//! Reading: text as text, binary files (NUL bytes or invalid UTF-8) as an embedded resource
//! with a base64 blob — never mangled text — and nothing over the size limit.

use std::io::Read;

use base64::Engine;
use serde_json::{Value, json};

use super::Files;
use super::roots::{Located, io_message, locate};

/// What a read produced.
pub enum Content {
    Text(String),
    Binary {
        /// `file:///absolute/path`, percent-encoded.
        uri: String,
        mime: &'static str,
        base64: String,
        size: u64,
    },
}

fn mime_of(path: &str) -> &'static str {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit('.').next().unwrap_or("");
    match ext {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

impl Files {
    /// Opens `given` inside its root: where it is, the open file and its metadata.
    pub(super) fn open_for_reading(
        &self,
        given: &str,
    ) -> Result<(Located<'_>, cap_std::fs::File, cap_std::fs::Metadata), String> {
        let located = locate(&self.roots, given)?;
        let file = located
            .root
            .dir
            .open(located.rel())
            .map_err(|e| io_message(given, &e))?;
        let meta = file.metadata().map_err(|e| io_message(given, &e))?;
        Ok((located, file, meta))
    }

    /// Reads one file, within the size limit.
    pub(super) fn read(&self, given: &str) -> Result<Content, String> {
        let (located, mut file, meta) = self.open_for_reading(given)?;
        if meta.is_dir() {
            return Err(format!("'{given}' is a directory (use list_directory)"));
        }
        if meta.len() > self.max_read_bytes {
            return Err(format!(
                "'{given}' is {} bytes, over the read limit of {} bytes",
                meta.len(),
                self.max_read_bytes
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        (&mut file)
            .take(self.max_read_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_message(given, &e))?;
        if bytes.len() as u64 > self.max_read_bytes {
            return Err(format!(
                "'{given}' grew over the read limit of {} bytes",
                self.max_read_bytes
            ));
        }
        let uri = file_uri(&located.root.path.join(&located.inner));
        if bytes.contains(&0) {
            return Ok(binary(given, uri, &bytes));
        }
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Content::Text(text)),
            Err(error) => Ok(binary(given, uri, error.as_bytes())),
        }
    }
}

/// The `file:` URI of an absolute path, percent-encoded (`file:///srv/my%20notes/a.bin`).
fn file_uri(path: &std::path::Path) -> String {
    match url::Url::from_file_path(path) {
        Ok(url) => url.to_string(),
        // Roots are canonical absolute paths, so this is not reached; a bare path still
        // names the file.
        Err(()) => format!("file://{}", path.display()),
    }
}

fn binary(given: &str, uri: String, bytes: &[u8]) -> Content {
    Content::Binary {
        uri,
        mime: mime_of(given),
        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        size: bytes.len() as u64,
    }
}

/// The first `head` or last `tail` lines of a text.
pub fn lines(text: &str, head: Option<usize>, tail: Option<usize>) -> String {
    match (head, tail) {
        (Some(n), _) => text.split_inclusive('\n').take(n).collect(),
        (None, Some(n)) => {
            let all: Vec<&str> = text.split_inclusive('\n').collect();
            all[all.len().saturating_sub(n)..].concat()
        }
        (None, None) => text.to_owned(),
    }
}

/// A content block for an MCP result.
pub fn block(content: &Content) -> Value {
    match content {
        Content::Text(text) => json!({"type": "text", "text": text}),
        Content::Binary {
            uri, mime, base64, ..
        } => json!({
            "type": "resource",
            "resource": {"uri": uri, "mimeType": mime, "blob": base64}
        }),
    }
}
