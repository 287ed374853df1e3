//! The plain HTTP/1.1 plumbing of the web-API fixtures (`search-api`, `image-api`): requests
//! with every header and the query decoded, responses of any status, content type and body
//! (binary included), and `GET /last`, which answers the last other request (method, target,
//! headers, body) as JSON for tests to assert on. One std thread per connection, keep-alive;
//! prints `listening on 127.0.0.1:PORT` on stdout once bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::http::listen;

/// Largest request body accepted.
const MAX_BODY: usize = 16 << 20;

/// One request as the API fixtures see it.
pub(crate) struct ApiRequest {
    pub method: String,
    /// The target as sent: path and query.
    pub target: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl ApiRequest {
    /// The first value of query parameter `key`.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn describe(&self) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        json!({
            "method": self.method,
            "target": self.target,
            "headers": headers,
            "body": self.json(),
        })
    }
}

/// A whole response.
pub(crate) struct ApiResponse {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<String>,
    pub body: Vec<u8>,
}

impl ApiResponse {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            content_type: content_type.to_owned(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn json(status: u16, value: &Value) -> Self {
        Self::new(status, "application/json", value.to_string())
    }

    pub fn with_header(mut self, header: String) -> Self {
        self.headers.push(header);
        self
    }
}

/// Serves `handler` on 127.0.0.1:`port` until killed; returns an exit code when it cannot bind.
pub(crate) fn serve(
    mode: &str,
    port: u16,
    handler: impl Fn(&ApiRequest) -> ApiResponse + Send + Sync + 'static,
) -> i32 {
    let Some(listener) = listen(mode, port) else {
        return 2;
    };
    let handler = Arc::new(handler);
    let last: Arc<Mutex<Value>> = Arc::new(Mutex::new(Value::Null));
    for stream in listener.incoming().flatten() {
        let (handler, last) = (handler.clone(), last.clone());
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let Ok(mut writer) = stream.try_clone() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            while let Some(request) = read_request(&mut reader) {
                let response = if request.path == "/last" {
                    let value = last.lock().map(|l| l.clone()).unwrap_or(Value::Null);
                    ApiResponse::json(200, &value)
                } else {
                    if let Ok(mut slot) = last.lock() {
                        *slot = request.describe();
                    }
                    handler(&request)
                };
                if write_response(&mut writer, &response).is_err() {
                    return;
                }
            }
        });
    }
    0
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<ApiRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let target = words.next()?.to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse().ok()?;
            }
            headers.push((name, value.trim().to_owned()));
        }
    }
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect();
    Some(ApiRequest {
        method,
        path: decode(path),
        target,
        query,
        headers,
        body,
    })
}

fn write_response(writer: &mut TcpStream, response: &ApiResponse) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Not Found",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    for header in &response.headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    writer.write_all(&response.body)
}

/// Percent-decoding of a query key or value (`+` is a space).
pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if let Some(byte) = text
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    out.push(byte);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A 64-bit FNV-1a hash: deterministic results and colours derived from a query or prompt.
pub(crate) fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
