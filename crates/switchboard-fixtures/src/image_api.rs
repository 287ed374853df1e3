//! `image-api`: image generation APIs on 127.0.0.1, for the `images` built-in's tests. Every
//! image is a small PNG generated here ([`crate::png`]) whose colour derives from the prompt.
//!
//! - `POST /v1/images/generations` — OpenAI: needs `Authorization: Bearer KEY` with `--key`
//!   (else 401 with OpenAI's error body); `{model, prompt, n, size?, response_format?}` →
//!   `{"created", "data": [{"b64_json"}]}`; `size` "WxH" sets the image size (default 8×8).
//! - `POST /sdapi/v1/txt2img` — Automatic1111/Forge: `{prompt, width?, height?, …}` →
//!   `{"images": [base64], "parameters", "info"}` (default 8×8).
//!
//! A prompt containing `[not-an-image]` gets base64 text instead of an image, `[bad-base64]`
//! a string that is not base64. Sizes are capped at 2048 × 2048. `GET /last` answers the last
//! other request (method, target, headers, JSON body).

use serde_json::{Value, json};

use crate::api::{ApiRequest, ApiResponse, fnv, serve as serve_api};
use crate::png;

const MAX_SIDE: u64 = 2048;

/// Serves until killed; returns an exit code when it cannot bind.
pub fn serve(port: u16, key: Option<String>) -> i32 {
    serve_api("image-api", port, move |request| {
        answer(request, key.as_deref())
    })
}

fn answer(request: &ApiRequest, key: Option<&str>) -> ApiResponse {
    if request.method != "POST" {
        return error(405, "use POST");
    }
    let body = request.json();
    let Some(prompt) = body.get("prompt").and_then(Value::as_str) else {
        return error(400, "'prompt' is required");
    };
    match request.path.as_str() {
        "/v1/images/generations" => {
            let bearer = request
                .header("authorization")
                .and_then(|value| value.strip_prefix("Bearer "));
            let valid = match key {
                Some(key) => bearer == Some(key),
                None => bearer.is_some_and(|b| !b.is_empty()),
            };
            if !valid {
                let body = json!({"error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error", "param": null,
                    "code": "invalid_api_key"}});
                return ApiResponse::json(401, &body);
            }
            let (width, height) = body
                .get("size")
                .and_then(Value::as_str)
                .and_then(|size| size.split_once('x'))
                .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                .unwrap_or((8, 8));
            let image = image_for(prompt, width, height);
            ApiResponse::json(
                200,
                &json!({"created": 1_767_225_600, "data": [{"b64_json": image}]}),
            )
        }
        "/sdapi/v1/txt2img" => {
            let side = |key: &str| body.get(key).and_then(Value::as_u64).unwrap_or(8);
            let image = image_for(prompt, side("width"), side("height"));
            ApiResponse::json(
                200,
                &json!({"images": [image], "parameters": body, "info": "{}"}),
            )
        }
        _ => error(404, "no such endpoint"),
    }
}

/// The base64 of the image for `prompt` (or of what its test markers ask for).
fn image_for(prompt: &str, width: u64, height: u64) -> String {
    if prompt.contains("[bad-base64]") {
        return "this is *not* base64!".to_owned();
    }
    let bytes = if prompt.contains("[not-an-image]") {
        b"GIF? no: just some text".to_vec()
    } else {
        let hash = fnv(prompt).to_be_bytes();
        let side = |n: u64| u32::try_from(n.clamp(1, MAX_SIDE)).unwrap_or(8);
        png::solid(side(width), side(height), [hash[0], hash[1], hash[2]])
    };
    base64(&bytes)
}

fn error(status: u16, message: &str) -> ApiResponse {
    ApiResponse::json(status, &json!({"error": {"message": message}}))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
