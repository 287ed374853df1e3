//! `fetch_page`: one web page as readable text.
//!
//! HTTP(S) only. Redirects are followed here, not by reqwest, up to `max_redirects`, and every
//! hop is checked again: its scheme, and its host by [`guard`] (literal addresses here, names
//! in the resolver reqwest connects through). The body is read up to `max_bytes` and no
//! further (the page is then marked truncated). HTML becomes text ([`html::readable`]); plain
//! text, JSON and XML pass through as text; anything else is refused, naming its type.

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{Client, Url};

use super::WebSettings;
use super::guard::{self, refusal};
use super::html;
use super::search::describe;

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub url: String,
    pub final_url: String,
    pub status: u16,
    pub content_type: String,
    pub title: Option<String>,
    pub text: String,
    /// Body bytes read (at most `max_bytes`).
    pub bytes: u64,
    /// The body went on past `max_bytes`.
    pub truncated: bool,
    pub redirects: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
}

const ACCEPTED: &str =
    "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1";

/// Fetches `address`, following redirects (see the module doc).
pub async fn fetch(client: &Client, settings: &WebSettings, address: &str) -> Result<Page, String> {
    let mut url = Url::parse(address.trim())
        .map_err(|error| format!("'{address}' is not a valid URL: {error}"))?;
    let mut redirects = 0;
    let mut response = loop {
        guard::check_host(&url, settings.allow_private)?;
        let response = client
            .get(url.clone())
            .header(ACCEPT, ACCEPTED)
            .send()
            .await
            .map_err(|error| match refusal(&error) {
                Some(refused) => guard::refused_fetch(refused),
                None => format!("cannot fetch {url}: {}", describe(&error)),
            })?;
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|value| value.to_str().ok());
        match location {
            Some(location) if response.status().is_redirection() => {
                let next = url.join(location).map_err(|error| {
                    format!("{url} redirects to '{location}', which is not a valid URL: {error}")
                })?;
                if redirects >= settings.max_redirects {
                    return Err(format!(
                        "too many redirects: {address} still redirects after {} (to {next}); \
                         the limit is max_redirects = {}",
                        redirects, settings.max_redirects
                    ));
                }
                redirects += 1;
                url = next;
            }
            _ => break response,
        }
    };
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered HTTP {status}"));
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let declared = match content_type.as_deref() {
        Some(content_type) => Some(kind_of(content_type).ok_or_else(|| {
            format!(
                "{url} is {content_type}, not a page: fetch_page reads HTML, plain text, \
                 JSON and XML only"
            )
        })?),
        None => None,
    };
    let max = usize::try_from(settings.max_bytes).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("reading {url} failed: {}", describe(&error)))?
    {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let kind = match declared {
        Some(kind) => kind,
        None => sniff(&body).ok_or_else(|| {
            format!(
                "{url} has no content type and its body looks binary: fetch_page reads text only"
            )
        })?,
    };
    let charset = content_type
        .as_deref()
        .and_then(charset_of)
        .or_else(|| (kind == Kind::Html).then(|| meta_charset(&body)).flatten());
    let decoded = decode(&body, charset.as_deref());
    let (title, text) = match kind {
        Kind::Html => {
            let page = html::readable(&decoded);
            (page.title, page.text)
        }
        Kind::Text => (None, decoded),
    };
    Ok(Page {
        url: address.to_owned(),
        final_url: url.to_string(),
        status: status.as_u16(),
        content_type: content_type.unwrap_or_default(),
        title,
        text,
        bytes: body.len() as u64,
        truncated,
        redirects,
    })
}

/// What a declared content type is read as; `None` for types that are not text.
fn kind_of(content_type: &str) -> Option<Kind> {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "" => Some(Kind::Text),
        "application/json"
        | "application/ld+json"
        | "application/xml"
        | "application/javascript"
        | "application/x-ndjson"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/rss+xml"
        | "application/atom+xml" => Some(Kind::Text),
        other if other.starts_with("text/") => Some(Kind::Text),
        other if other.ends_with("+json") || other.ends_with("+xml") => Some(Kind::Text),
        _ => None,
    }
}

/// A body with no declared type: HTML when it starts like HTML, text when it has no NUL
/// bytes and is UTF-8, else `None`.
fn sniff(body: &[u8]) -> Option<Kind> {
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return None;
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A character cut at the end of the sample is still text.
        Err(error) if error.error_len().is_none() => {
            std::str::from_utf8(&head[..error.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    let start = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(Kind::Html)
    } else {
        Some(Kind::Text)
    }
}

/// The `charset` parameter of a content type, lower case.
fn charset_of(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
    })
}

/// The charset an HTML document declares in its first KiB (`<meta charset=…>` or
/// `content="…; charset=…"`).
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!value.is_empty()).then_some(value)
}

/// The body as text: single-byte Western encodings mapped byte by byte, anything else read
/// as UTF-8 (invalid sequences replaced).
fn decode(body: &[u8], charset: Option<&str>) -> String {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    match charset {
        Some(
            "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" | "us-ascii" | "ascii",
        ) => body
            .iter()
            .map(|&byte| match byte {
                0x80..=0x9f => html::windows_1252(byte),
                _ => char::from(byte),
            })
            .collect(),
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_decide_how_a_body_is_read() {
        assert_eq!(kind_of("text/html; charset=utf-8"), Some(Kind::Html));
        assert_eq!(kind_of("Application/XHTML+XML"), Some(Kind::Html));
        assert_eq!(kind_of("text/plain"), Some(Kind::Text));
        assert_eq!(kind_of("application/json"), Some(Kind::Text));
        assert_eq!(kind_of("application/problem+json"), Some(Kind::Text));
        assert_eq!(kind_of("image/svg+xml"), Some(Kind::Text));
        assert_eq!(kind_of("application/octet-stream"), None);
        assert_eq!(kind_of("image/png"), None);
        assert_eq!(kind_of("application/pdf"), None);
    }

    #[test]
    fn untyped_bodies_are_sniffed() {
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Some(Kind::Html));
        assert_eq!(sniff(b"<html><body>"), Some(Kind::Html));
        assert_eq!(sniff(b"just words"), Some(Kind::Text));
        assert_eq!(sniff("caf\u{e9}".as_bytes()), Some(Kind::Text));
        assert_eq!(sniff(&[0x89, b'P', b'N', b'G', 0, 0]), None);
        assert_eq!(sniff(&[0xff, 0xfe, 0x41]), None);
    }

    #[test]
    fn charsets_come_from_the_header_or_the_page() {
        assert_eq!(
            charset_of("text/html; Charset=\"ISO-8859-1\"").as_deref(),
            Some("iso-8859-1")
        );
        assert_eq!(charset_of("text/html"), None);
        assert_eq!(
            meta_charset(b"<html><head><meta charset='windows-1252'>").as_deref(),
            Some("windows-1252")
        );
        assert_eq!(decode(b"caf\xe9 \x93q\x94", Some("iso-8859-1")), "café “q”");
        assert_eq!(decode("\u{feff}hé".as_bytes(), None), "hé");
    }
}
