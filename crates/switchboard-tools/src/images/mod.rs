//! `images`: `generate_image(prompt, style?)` through the OpenAI Images API or an
//! Automatic1111 / Forge server ([`backends`]), answered as an MCP image content block.
//!
//! Styles are named in the config; each may append a suffix to the prompt, say what the
//! image should not show, and set request fields of the backend:
//!
//! ```toml
//! [servers.images.styles.watercolor]
//! suffix = ", watercolor, soft edges"
//! negative = "photo, text"                             # A1111: negative_prompt; OpenAI: "Avoid: …"
//! params = { steps = 30 }                              # A1111; OpenAI: size, quality, …
//! [servers.images.styles.default]                        # used when no style is given
//! params = { size = "1024x1024" }
//! ```
//!
//! A style's params are merged over the backend's request (they may not set `prompt`, `n` or
//! `response_format`). The image must be PNG, JPEG or WebP and at most `max_bytes`; with
//! `out_dir` it is also saved as `TIMESTAMP-slug.png` with a `.json` sidecar holding the
//! prompt, style and backend. The API key is sent only to the backend and never shown
//! (`Debug` hides it).

mod backends;
mod definition;
mod output;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use switchboard_core::config::SecretString;

use futures::future::BoxFuture;
use reqwest::Client;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

pub use backends::DEFAULT_OPENAI_MODEL;
pub use output::{Format, slug, timestamp};

/// Typical duration of `generate_image`, in milliseconds; its declared worst case is the
/// configured `timeout`.
pub const ESTIMATED_MS: u64 = 2_000;
/// The style applied when a call names none, if configured.
pub const DEFAULT_STYLE: &str = "default";

/// Which image API to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageBackend {
    OpenAi,
    Automatic1111,
}

impl ImageBackend {
    /// The base URL used when none is configured.
    pub fn default_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com",
            Self::Automatic1111 => "http://127.0.0.1:7860",
        }
    }

    /// The backend's name in results and sidecars ("openai", "automatic1111").
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Automatic1111 => "automatic1111",
        }
    }
}

/// A named style: a prompt suffix, a negative prompt and request fields for the backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StyleSpec {
    /// Appended to the prompt as is (so start it with ", " or " ").
    pub suffix: Option<String>,
    /// What the image should not show. A1111 gets it as `negative_prompt` (a
    /// `negative_prompt` in `params` wins); OpenAI has no negative prompt, so it is appended
    /// to the prompt on a line of its own as `Avoid: …`.
    pub negative: Option<String>,
    /// Fields set in the backend's request body (OpenAI: `size`, `quality`, `style`,
    /// `background`, `model`; A1111: `steps`, `width`, `height`, `cfg_scale`, `sampler_name`,
    /// `negative_prompt`, `seed`, …).
    pub params: Map<String, Value>,
}

/// Settings of the images provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagesSettings {
    pub backend: ImageBackend,
    /// The API's base URL ([`ImageBackend::default_url`]).
    pub url: String,
    /// OpenAI: the bearer key. A1111: `user:password` for `--api-auth`, else a bearer token.
    /// Printed as `***` by `Debug`.
    pub api_key: Option<SecretString>,
    /// OpenAI: the model (default [`DEFAULT_OPENAI_MODEL`]); A1111: a checkpoint to use.
    pub model: Option<String>,
    /// Where images are saved, with their sidecars; `None`: not saved.
    pub out_dir: Option<PathBuf>,
    pub styles: BTreeMap<String, StyleSpec>,
    /// Largest image accepted (default 8 MiB).
    pub max_bytes: u64,
    /// Longest a call may take (default 120 s).
    pub timeout: Duration,
}

impl ImagesSettings {
    /// Default settings for `backend`.
    pub fn for_backend(backend: ImageBackend) -> Self {
        Self {
            backend,
            url: backend.default_url().to_owned(),
            api_key: None,
            model: None,
            out_dir: None,
            styles: BTreeMap::new(),
            max_bytes: 8 << 20,
            timeout: Duration::from_secs(120),
        }
    }
}

impl Default for ImagesSettings {
    fn default() -> Self {
        Self::for_backend(ImageBackend::OpenAi)
    }
}

/// Why the images provider cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum ImagesError {
    #[error("images: {0}")]
    Settings(String),
    #[error("images: cannot build an HTTP client: {0}")]
    Client(String),
}

/// The images provider.
pub struct Images {
    settings: ImagesSettings,
    client: Client,
}

impl Images {
    /// Checks the settings and builds the HTTP client.
    pub fn new(settings: ImagesSettings) -> Result<Self, ImagesError> {
        let bad = |text: String| Err(ImagesError::Settings(text));
        let url = reqwest::Url::parse(&settings.url)
            .map_err(|error| ImagesError::Settings(format!("url '{}': {error}", settings.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return bad(format!(
                "url '{}' is not an http or https URL",
                settings.url
            ));
        }
        let has_key = settings
            .api_key
            .as_ref()
            .map(SecretString::expose)
            .is_some_and(|k| !k.is_empty());
        if url.host_str() == Some("api.openai.com") && !has_key {
            return bad(
                "the OpenAI API needs api_key, e.g. api_key = \"${OPENAI_API_KEY}\"".into(),
            );
        }
        if settings.max_bytes == 0 || settings.timeout.is_zero() {
            return bad("max_bytes and timeout must be more than zero".into());
        }
        for (name, style) in &settings.styles {
            if name.is_empty() {
                return bad("a style has an empty name".into());
            }
            let reserved = backends::reserved(settings.backend);
            if let Some(key) = style.params.keys().find(|k| reserved.contains(&k.as_str())) {
                return bad(format!(
                    "style '{name}' sets '{key}', which {} requests set themselves",
                    backends::display_name(settings.backend)
                ));
            }
        }
        let tls = switchboard_tls::client_config(Default::default())
            .map_err(|error| ImagesError::Client(error.to_string()))?;
        let client = Client::builder()
            .use_preconfigured_tls(tls)
            .user_agent(concat!(
                "Switchboard/",
                env!("CARGO_PKG_VERSION"),
                " (images built-in)"
            ))
            .timeout(settings.timeout)
            .build()
            .map_err(|error| ImagesError::Client(error.to_string()))?;
        Ok(Self { settings, client })
    }

    fn style(&self, requested: Option<&str>) -> Result<Option<(&str, &StyleSpec)>, String> {
        let Some(name) = requested else {
            return Ok(self
                .settings
                .styles
                .get_key_value(DEFAULT_STYLE)
                .map(|(name, spec)| (name.as_str(), spec)));
        };
        match self.settings.styles.get_key_value(name) {
            Some((name, spec)) => Ok(Some((name.as_str(), spec))),
            None if self.settings.styles.is_empty() => Err(format!(
                "unknown style '{name}': no styles are configured (leave style out)"
            )),
            None => Err(format!(
                "unknown style '{name}'; the styles are: {}",
                self.settings
                    .styles
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    async fn generate(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
        let prompt = arguments
            .get("prompt")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or("'prompt' must be a non-empty string")?;
        let requested = match arguments.get("style") {
            None | Some(Value::Null) => None,
            Some(Value::String(style)) => Some(style.as_str()),
            Some(_) => return Err("'style' must be a string".into()),
        };
        let style = self.style(requested)?;
        let mut full_prompt = match style.and_then(|(_, spec)| spec.suffix.as_deref()) {
            Some(suffix) => format!("{prompt}{suffix}"),
            None => prompt.to_owned(),
        };
        let negative = style
            .and_then(|(_, spec)| spec.negative.as_deref())
            .map(str::trim)
            .filter(|n| !n.is_empty());
        let backend = self.settings.backend;
        if let (Some(negative), ImageBackend::OpenAi) = (negative, backend) {
            // The Images API has no negative prompt: it is said in the prompt.
            full_prompt.push_str(&format!("\nAvoid: {negative}"));
        }
        let empty = Map::new();
        let params = style.map_or(&empty, |(_, spec)| &spec.params);
        let who = backends::display_name(backend);
        let mut response =
            backends::request(&self.client, &self.settings, &full_prompt, negative, params)
                .send()
                .await
                .map_err(|error| format!("{who} is unreachable: {}", describe(&error)))?;
        let status = response.status();
        // Base64 is 4/3 of the image; the answer may echo the request and add some metadata.
        let cap = self.settings.max_bytes.saturating_mul(4) / 3 + (1 << 20);
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| format!("{who}'s answer broke off: {}", describe(&error)))?
        {
            if body.len() as u64 + chunk.len() as u64 > cap {
                return Err(format!(
                    "{who}'s answer is over {cap} bytes: the image would be larger than \
                     max_bytes ({})",
                    self.settings.max_bytes
                ));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(format!(
                "{who} answered HTTP {status}: {}",
                backends::error_detail(&body)
            ));
        }
        let answer: Value = serde_json::from_slice(&body).map_err(|_| {
            format!(
                "{who} answered with something that is not JSON: {}",
                backends::error_detail(&body)
            )
        })?;
        let encoded = backends::image_of(backend, &answer)?;
        let (bytes, format) = output::decode(encoded, self.settings.max_bytes)
            .map_err(|error| format!("{who}: {error}"))?;
        let style_name = style.map(|(name, _)| name);
        let model = match backend {
            ImageBackend::OpenAi => Some(
                params
                    .get("model")
                    .and_then(Value::as_str)
                    .or(self.settings.model.as_deref())
                    .unwrap_or(DEFAULT_OPENAI_MODEL),
            ),
            ImageBackend::Automatic1111 => self.settings.model.as_deref(),
        };
        let mut described = json!({
            "prompt": prompt,
            "full_prompt": full_prompt,
            "negative_prompt": negative,
            "style": style_name,
            "backend": backend.name(),
            "model": model,
            "mime_type": format.mime_type(),
            "bytes": bytes.len(),
        });
        let saved = match &self.settings.out_dir {
            Some(dir) => {
                let mut sidecar = described.clone();
                sidecar["params"] = Value::Object(params.clone());
                sidecar["created"] = json!(
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
                );
                Some(output::save(dir, prompt, format, &bytes, &sidecar)?)
            }
            None => None,
        };
        let path = |p: &PathBuf| Value::String(p.display().to_string());
        described["saved"] = saved.as_ref().map_or(Value::Null, |s| path(&s.image));
        described["sidecar"] = saved.as_ref().map_or(Value::Null, |s| path(&s.sidecar));
        let mut text = format!(
            "Generated a {} image ({} bytes) with {who} for \"{prompt}\"",
            format.extension().to_uppercase(),
            bytes.len()
        );
        if let Some(name) = style_name {
            text.push_str(&format!(" in style '{name}'"));
        }
        if let Some(saved) = &saved {
            text.push_str(&format!("; saved to {}", saved.image.display()));
        }
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
        let mut outcome = ToolOutcome::structured_with_text(described, text);
        outcome.content.insert(
            0,
            json!({"type": "image", "data": data, "mimeType": format.mime_type()}),
        );
        Ok(outcome)
    }
}

/// A reqwest error with its causes.
fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "no answer in time".to_owned();
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.contains(&more) {
            text.push_str(&format!(": {more}"));
        }
        cause = error.source();
    }
    text
}

impl ToolProvider for Images {
    fn name(&self) -> &str {
        "images"
    }

    fn description(&self) -> &str {
        "Image generation"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![definition::generate_image(
            &self.settings.styles,
            self.settings.timeout,
        )]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            if tool != "generate_image" {
                return Err(ToolError::new(format!("images has no tool '{tool}'")));
            }
            match tokio::time::timeout(self.settings.timeout, self.generate(&arguments)).await {
                Ok(result) => result.map_err(ToolError::new),
                Err(_) => Err(ToolError::new(format!(
                    "generate_image timed out: no answer within {}",
                    humantime::format_duration(self.settings.timeout)
                ))),
            }
        })
    }
}
