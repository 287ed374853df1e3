//! The image APIs: the request each backend is sent and where its answer holds the image.
//!
//! - OpenAI Images: `POST {url}/v1/images/generations`, `Authorization: Bearer KEY`,
//!   `{model, prompt, n: 1, response_format: "b64_json", …style params}` → `data[0].b64_json`
//!   (`gpt-image-*` models always answer base64 and refuse `response_format`, so it is left
//!   out for them — decided from the model in effect, a style's `params.model` included). There is no negative prompt: a style's is in the prompt, as `Avoid: …`.
//! - Automatic1111 / Forge: `POST {url}/sdapi/v1/txt2img`, `{prompt, steps: 20, width: 512,
//!   height: 512, negative_prompt (the style's negative), …style params}` (with `model`,
//!   `override_settings.sd_model_checkpoint`) → `images[0]`. An `api_key` of the form
//!   `user:password` is sent as basic auth (`--api-auth`),
//!   any other as a bearer token.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, RequestBuilder};
use serde_json::{Map, Value, json};
use switchboard_core::config::SecretString;

use super::{ImageBackend, ImagesSettings};

/// The OpenAI model used when none is configured.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-image-1";

/// Request fields a style's `params` may not set, per backend.
pub fn reserved(backend: ImageBackend) -> &'static [&'static str] {
    match backend {
        ImageBackend::OpenAi => &["prompt", "n", "response_format"],
        ImageBackend::Automatic1111 => &["prompt", "batch_size", "n_iter"],
    }
}

/// The request for `prompt` (the style's suffix already applied, and for OpenAI its negative
/// prompt too) with the style's `negative` prompt (A1111's `negative_prompt`) and `params`.
pub fn request(
    client: &Client,
    settings: &ImagesSettings,
    prompt: &str,
    negative: Option<&str>,
    params: &Map<String, Value>,
) -> RequestBuilder {
    let base = settings.url.trim_end_matches('/');
    let mut body = Map::new();
    let builder = match settings.backend {
        ImageBackend::OpenAi => {
            let model = settings.model.as_deref().unwrap_or(DEFAULT_OPENAI_MODEL);
            body.insert("model".into(), json!(model));
            body.insert("prompt".into(), json!(prompt));
            body.insert("n".into(), json!(1));
            let builder = client.post(format!("{base}/v1/images/generations"));
            match settings.api_key.as_ref().map(SecretString::expose) {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            }
        }
        ImageBackend::Automatic1111 => {
            body.insert("prompt".into(), json!(prompt));
            body.insert("steps".into(), json!(20));
            body.insert("width".into(), json!(512));
            body.insert("height".into(), json!(512));
            if let Some(negative) = negative {
                body.insert("negative_prompt".into(), json!(negative));
            }
            if let Some(model) = &settings.model {
                body.insert(
                    "override_settings".into(),
                    json!({"sd_model_checkpoint": model}),
                );
            }
            let builder = client.post(format!("{base}/sdapi/v1/txt2img"));
            match settings.api_key.as_ref().map(SecretString::expose) {
                Some(key) => match key.split_once(':') {
                    Some((user, password)) => builder.basic_auth(user, Some(password)),
                    None => builder.bearer_auth(key),
                },
                None => builder,
            }
        }
    };
    for (key, value) in params {
        body.insert(key.clone(), value.clone());
    }
    // After the style's params: a style may choose the model, and the model decides.
    if settings.backend == ImageBackend::OpenAi {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !model.starts_with("gpt-image") {
            body.insert("response_format".into(), json!("b64_json"));
        }
    }
    builder
        .header(ACCEPT, "application/json")
        .header(CONTENT_TYPE, "application/json")
        .body(Value::Object(body).to_string())
}

/// The base64 image in a successful answer.
pub fn image_of(backend: ImageBackend, answer: &Value) -> Result<&str, String> {
    let (found, place) = match backend {
        ImageBackend::OpenAi => (answer.pointer("/data/0/b64_json"), "data[0].b64_json"),
        ImageBackend::Automatic1111 => (answer.pointer("/images/0"), "images[0]"),
    };
    match found.and_then(Value::as_str) {
        Some(image) => Ok(image),
        None if backend == ImageBackend::OpenAi
            && answer.pointer("/data/0/url").is_some() =>
        {
            Err("OpenAI answered a URL instead of base64 data (is response_format ignored by this server?)".into())
        }
        None => Err(format!(
            "{}'s answer has no image at {place}",
            display_name(backend)
        )),
    }
}

/// What an error answer says: `error.message`, `detail`, `error`, `message`, else the start
/// of the body.
pub fn error_detail(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        for pointer in ["/error/message", "/detail", "/error", "/message"] {
            match value.pointer(pointer) {
                Some(Value::String(text)) => return text.clone(),
                Some(detail @ Value::Array(_)) => return detail.to_string(),
                _ => {}
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text,
    }
}

pub fn display_name(backend: ImageBackend) -> &'static str {
    match backend {
        ImageBackend::OpenAi => "OpenAI",
        ImageBackend::Automatic1111 => "Automatic1111",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_found_where_each_backend_puts_them() {
        let openai = json!({"data": [{"b64_json": "AAAA"}]});
        assert_eq!(image_of(ImageBackend::OpenAi, &openai), Ok("AAAA"));
        let a1111 = json!({"images": ["BBBB"], "info": "{}"});
        assert_eq!(image_of(ImageBackend::Automatic1111, &a1111), Ok("BBBB"));
        let error = image_of(ImageBackend::Automatic1111, &openai).expect_err("missing");
        assert_eq!(error, "Automatic1111's answer has no image at images[0]");
        let url = json!({"data": [{"url": "https://x/y.png"}]});
        let error = image_of(ImageBackend::OpenAi, &url).expect_err("a URL");
        assert!(error.contains("URL instead of base64"), "{error}");
    }

    #[test]
    fn error_bodies_are_summarized() {
        assert_eq!(
            error_detail(br#"{"error": {"message": "Incorrect API key provided."}}"#),
            "Incorrect API key provided."
        );
        assert_eq!(error_detail(br#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(
            error_detail(b"  Internal\n Server Error "),
            "Internal Server Error"
        );
    }
}
