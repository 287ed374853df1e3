//! The `images` built-in against `switchboard-fixture image-api` over real HTTP on 127.0.0.1:
//! both APIs answer a valid PNG image block, the key and the style's suffix and params reach
//! the backend, `out_dir` gets the image and its sidecar, and unknown styles, oversize images
//! and bodies that are not images are refused with a reason.

mod fixture;

use std::collections::BTreeMap;
use switchboard_core::config::SecretString;

use base64::Engine;
use fixture::Fixture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::ToolProvider;
use switchboard_core::{CallContext, LatencyMeta, ToolOutcome};
use switchboard_tools::images::{ImageBackend, Images, ImagesSettings, StyleSpec};

fn image_api() -> Fixture {
    Fixture::start(&["image-api", "--key", "openai-key"])
}

fn settings(fixture: &Fixture, backend: ImageBackend) -> ImagesSettings {
    ImagesSettings {
        url: fixture.url(""),
        api_key: Some(SecretString("openai-key".to_owned())),
        styles: BTreeMap::from([
            (
                "watercolor".to_owned(),
                StyleSpec {
                    suffix: Some(", watercolor".to_owned()),
                    negative: None,
                    params: params(json!({"steps": 30, "width": 16, "height": 24,
                                          "negative_prompt": "photo"})),
                },
            ),
            (
                "default".to_owned(),
                StyleSpec {
                    suffix: Some(", plain".to_owned()),
                    negative: None,
                    params: Map::new(),
                },
            ),
        ]),
        ..ImagesSettings::for_backend(backend)
    }
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

async fn generate(images: &Images, arguments: Value) -> Result<ToolOutcome, String> {
    images
        .call("generate_image", params(arguments), &CallContext::default())
        .await
        .map_err(|error| error.0)
}

/// The PNG in the outcome's image block, checked: its bytes, width and height.
fn png_of(outcome: &ToolOutcome) -> (Vec<u8>, u32, u32) {
    let block = &outcome.content[0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["mimeType"], "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    let number = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let (width, height) = (number(16), number(20));
    (bytes, width, height)
}

#[tokio::test]
async fn openai_answers_an_image_block() {
    let fixture = image_api();
    let images = Images::new(settings(&fixture, ImageBackend::OpenAi)).expect("settings");
    let outcome = generate(&images, json!({"prompt": "a red fox"}))
        .await
        .expect("an image");
    let (bytes, width, height) = png_of(&outcome);
    assert_eq!((width, height), (8, 8));
    let structured = outcome.structured_content.clone().expect("structured");
    assert_eq!(structured["backend"], "openai");
    assert_eq!(structured["style"], "default", "the default style applies");
    assert_eq!(structured["full_prompt"], "a red fox, plain");
    assert_eq!(structured["bytes"], bytes.len());
    assert_eq!(structured["saved"], Value::Null);
    assert!(outcome.text_content().contains("Generated a PNG image"));
    let last = fixture.last().await;
    assert_eq!(last["target"], "/v1/images/generations");
    assert_eq!(last["headers"]["authorization"], "Bearer openai-key");
    assert_eq!(
        last["body"],
        json!({"model": "gpt-image-1", "prompt": "a red fox, plain", "n": 1})
    );

    let dalle = Images::new(ImagesSettings {
        model: Some("dall-e-3".to_owned()),
        ..settings(&fixture, ImageBackend::OpenAi)
    })
    .expect("settings");
    generate(&dalle, json!({"prompt": "x", "style": "watercolor"}))
        .await
        .expect("an image");
    let body = fixture.last().await["body"].clone();
    assert_eq!(body["response_format"], "b64_json");
    assert_eq!(body["model"], "dall-e-3");
}

#[tokio::test]
async fn a_wrong_openai_key_is_explained() {
    let fixture = image_api();
    let images = Images::new(ImagesSettings {
        api_key: Some(SecretString("wrong".to_owned())),
        ..settings(&fixture, ImageBackend::OpenAi)
    })
    .expect("settings");
    let error = generate(&images, json!({"prompt": "x"}))
        .await
        .expect_err("401");
    assert_eq!(
        error,
        "OpenAI answered HTTP 401 Unauthorized: Incorrect API key provided."
    );
}

#[tokio::test]
async fn automatic1111_gets_the_style_suffix_and_params() {
    let fixture = image_api();
    let images = Images::new(settings(&fixture, ImageBackend::Automatic1111)).expect("settings");
    let outcome = generate(
        &images,
        json!({"prompt": "a red fox", "style": "watercolor"}),
    )
    .await
    .expect("an image");
    let (_, width, height) = png_of(&outcome);
    assert_eq!((width, height), (16, 24), "the style's width and height");
    let structured = outcome.structured_content.clone().expect("structured");
    assert_eq!(structured["backend"], "automatic1111");
    assert_eq!(structured["style"], "watercolor");
    let last = fixture.last().await;
    assert_eq!(last["target"], "/sdapi/v1/txt2img");
    assert_eq!(
        last["body"],
        json!({"prompt": "a red fox, watercolor", "steps": 30, "width": 16, "height": 24,
               "negative_prompt": "photo"})
    );
}

#[tokio::test]
async fn out_dir_gets_the_image_and_its_sidecar() {
    let fixture = image_api();
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("images");
    let images = Images::new(ImagesSettings {
        out_dir: Some(out_dir.clone()),
        ..settings(&fixture, ImageBackend::Automatic1111)
    })
    .expect("settings");
    let mut saved = Vec::new();
    for _ in 0..2 {
        let outcome = generate(
            &images,
            json!({"prompt": "A Red Fox!", "style": "watercolor"}),
        )
        .await
        .expect("an image");
        let (bytes, _, _) = png_of(&outcome);
        let structured = outcome.structured_content.expect("structured");
        let path = std::path::PathBuf::from(structured["saved"].as_str().expect("saved"));
        assert_eq!(path.parent(), Some(out_dir.as_path()));
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(
            name.contains("Z-a-red-fox") && name.ends_with(".png"),
            "{name}"
        );
        assert_eq!(std::fs::read(&path).expect("the image"), bytes);
        let sidecar_path = path.with_extension("json");
        assert_eq!(structured["sidecar"], sidecar_path.display().to_string());
        let sidecar: Value =
            serde_json::from_slice(&std::fs::read(&sidecar_path).expect("the sidecar"))
                .expect("JSON");
        assert_eq!(sidecar["prompt"], "A Red Fox!");
        assert_eq!(sidecar["full_prompt"], "A Red Fox!, watercolor");
        assert_eq!(sidecar["style"], "watercolor");
        assert_eq!(sidecar["backend"], "automatic1111");
        assert_eq!(sidecar["params"]["steps"], 30);
        saved.push(path);
    }
    assert_ne!(
        saved[0], saved[1],
        "a second image never overwrites the first"
    );
}

#[tokio::test]
async fn bad_styles_sizes_and_bodies_are_refused() {
    let fixture = image_api();
    let images = Images::new(settings(&fixture, ImageBackend::Automatic1111)).expect("settings");
    let error = generate(&images, json!({"prompt": "x", "style": "oil"}))
        .await
        .expect_err("unknown style");
    assert_eq!(
        error,
        "unknown style 'oil'; the styles are: default, watercolor"
    );

    let error = generate(&images, json!({"prompt": "x [not-an-image]"}))
        .await
        .expect_err("not an image");
    assert!(
        error.contains("not an image (PNG, JPEG or WebP)"),
        "{error}"
    );
    let error = generate(&images, json!({"prompt": "x [bad-base64]"}))
        .await
        .expect_err("not base64");
    assert!(error.contains("not valid base64"), "{error}");

    let mut small = settings(&fixture, ImageBackend::Automatic1111);
    small.max_bytes = 1_000;
    small.styles.insert(
        "big".to_owned(),
        StyleSpec {
            suffix: None,
            negative: None,
            params: params(json!({"width": 256, "height": 256})),
        },
    );
    small.styles.insert(
        "tiny".to_owned(),
        StyleSpec {
            suffix: None,
            negative: None,
            params: params(json!({"width": 8, "height": 8})),
        },
    );
    let small = Images::new(small).expect("settings");
    let error = generate(&small, json!({"prompt": "x", "style": "big"}))
        .await
        .expect_err("oversize");
    assert!(
        error.contains("over the limit of 1000 (max_bytes)"),
        "{error}"
    );
    generate(&small, json!({"prompt": "x", "style": "tiny"}))
        .await
        .expect("an 8 × 8 image still passes");
}

#[test]
fn settings_are_checked_and_the_tool_declares_itself() {
    let reserved = ImagesSettings {
        api_key: Some(SecretString("k".to_owned())),
        styles: BTreeMap::from([(
            "bad".to_owned(),
            StyleSpec {
                suffix: None,
                negative: None,
                params: params(json!({"n": 4})),
            },
        )]),
        ..ImagesSettings::default()
    };
    let error = Images::new(reserved).err().expect("refused").to_string();
    assert!(error.contains("style 'bad' sets 'n'"), "{error}");
    let keyless = Images::new(ImagesSettings::default())
        .err()
        .expect("refused");
    assert!(keyless.to_string().contains("needs api_key"));
    let secret = ImagesSettings {
        api_key: Some(SecretString("sk-very-secret".to_owned())),
        ..ImagesSettings::default()
    };
    assert!(!format!("{secret:?}").contains("sk-very-secret"));

    let mut local = ImagesSettings::for_backend(ImageBackend::Automatic1111);
    local.styles.insert("noir".to_owned(), StyleSpec::default());
    let images = Images::new(local).expect("no key needed locally");
    let tools = images.tools();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "generate_image");
    assert_eq!(
        tool.input_schema["properties"]["style"]["enum"],
        json!(["noir"])
    );
    let latency = LatencyMeta::from_meta(tool.meta.as_ref()).expect("latency meta");
    assert_eq!(
        (
            latency.estimated_duration_ms,
            latency.max_duration_ms,
            latency.idempotent
        ),
        (Some(2_000), Some(120_000), Some(false)),
        "the bound is the configured timeout (default 2 minutes)"
    );
    let annotations = tool.annotations.as_ref().expect("annotations");
    assert_eq!(
        (
            annotations.read_only_hint,
            annotations.destructive_hint,
            annotations.idempotent_hint,
            annotations.open_world_hint
        ),
        (Some(false), Some(false), Some(false), Some(true))
    );
    assert!(tool.output_schema.is_some());
}

#[tokio::test]
async fn a_style_negative_prompt_reaches_each_backend() {
    let fixture = image_api();
    let noir = StyleSpec {
        suffix: Some(", film noir".to_owned()),
        negative: Some("colour, text".to_owned()),
        params: params(json!({"width": 8, "height": 8})),
    };
    let mut a1111 = settings(&fixture, ImageBackend::Automatic1111);
    a1111.styles.insert("noir".to_owned(), noir.clone());
    let images = Images::new(a1111).expect("settings");
    let outcome = generate(&images, json!({"prompt": "a detective", "style": "noir"}))
        .await
        .expect("an image");
    png_of(&outcome);
    let structured = outcome.structured_content.clone().expect("structured");
    assert_eq!(structured["negative_prompt"], "colour, text");
    assert_eq!(structured["full_prompt"], "a detective, film noir");
    let body = fixture.last().await["body"].clone();
    assert_eq!(body["negative_prompt"], "colour, text");
    assert_eq!(body["prompt"], "a detective, film noir");

    let mut openai = settings(&fixture, ImageBackend::OpenAi);
    openai.styles.insert(
        "noir".to_owned(),
        StyleSpec {
            params: Map::new(),
            ..noir
        },
    );
    let images = Images::new(openai).expect("settings");
    let outcome = generate(&images, json!({"prompt": "a detective", "style": "noir"}))
        .await
        .expect("an image");
    let structured = outcome.structured_content.clone().expect("structured");
    assert_eq!(
        structured["full_prompt"],
        "a detective, film noir\nAvoid: colour, text"
    );
    let body = fixture.last().await["body"].clone();
    assert_eq!(
        body["prompt"],
        "a detective, film noir\nAvoid: colour, text"
    );
    assert!(body.get("negative_prompt").is_none(), "{body}");
}

/// Regression: response_format was chosen from the configured model before a style's params
/// were merged, so a style picking another model sent the wrong one (gpt-image-1 refuses it;
/// dall-e answers a URL without it).
#[tokio::test]
async fn a_styles_model_decides_the_response_format() {
    let fixture = image_api();
    let style = |model: &str| StyleSpec {
        suffix: None,
        negative: None,
        params: params(json!({"model": model})),
    };
    let mut configured = settings(&fixture, ImageBackend::OpenAi);
    configured.styles = BTreeMap::from([
        ("classic".to_owned(), style("dall-e-3")),
        ("modern".to_owned(), style("gpt-image-1")),
    ]);
    for (model, chosen, wants_format) in
        [(None, "classic", true), (Some("dall-e-3"), "modern", false)]
    {
        let images = Images::new(ImagesSettings {
            model: model.map(str::to_owned),
            ..configured.clone()
        })
        .expect("settings");
        generate(&images, json!({"prompt": "a lighthouse", "style": chosen}))
            .await
            .expect("an image");
        let body = fixture.last().await["body"].clone();
        assert_eq!(
            body.get("response_format").is_some(),
            wants_format,
            "{chosen}: {body}"
        );
    }
}
