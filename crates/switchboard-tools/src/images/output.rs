//! What comes back from an image API, checked and kept: the base64 decoded within the size
//! cap, the bytes recognised as PNG, JPEG or WebP by their signature, and — with `out_dir` —
//! the image saved as `TIMESTAMP-slug.EXT` beside a `.json` sidecar describing it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine;
use serde_json::Value;

/// The image formats accepted, with their MIME type and file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    Webp,
}

impl Format {
    /// The format `bytes` start with, if any.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Self::Jpeg)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    pub fn mime_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
        }
    }
}

/// Decodes a base64 image (a `data:` URL prefix and line breaks allowed) of at most
/// `max_bytes`, and checks that it is an image.
pub fn decode(encoded: &str, max_bytes: u64) -> Result<(Vec<u8>, Format), String> {
    let encoded = match encoded.strip_prefix("data:") {
        Some(url) => url.split_once(',').map_or(url, |(_, data)| data),
        None => encoded,
    };
    let compact: String = encoded
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let estimated = compact.len() as u64 / 4 * 3;
    if estimated > max_bytes + 2 {
        return Err(format!(
            "the image is about {estimated} bytes, over the limit of {max_bytes} (max_bytes)"
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|error| format!("the image data is not valid base64: {error}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "the image is {} bytes, over the limit of {max_bytes} (max_bytes)",
            bytes.len()
        ));
    }
    let format = Format::sniff(&bytes).ok_or_else(|| {
        let start: String = bytes
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "the answer is not an image (PNG, JPEG or WebP): its {} bytes start with {start}",
            bytes.len()
        )
    })?;
    Ok((bytes, format))
}

/// The image and sidecar written by [`save`].
pub struct Saved {
    pub image: PathBuf,
    pub sidecar: PathBuf,
}

/// Writes `bytes` to `dir/TIMESTAMP-slug.EXT` (never over an existing file) and `sidecar`
/// beside it as `.json`.
pub fn save(
    dir: &Path,
    prompt: &str,
    format: Format,
    bytes: &[u8],
    sidecar: &Value,
) -> Result<Saved, String> {
    let failed = |what: &Path, error: std::io::Error| {
        format!("cannot save the image to {}: {error}", what.display())
    };
    std::fs::create_dir_all(dir).map_err(|error| failed(dir, error))?;
    let stem = format!("{}-{}", timestamp(SystemTime::now()), slug(prompt));
    for attempt in 1..100 {
        let name = if attempt == 1 {
            stem.clone()
        } else {
            format!("{stem}-{attempt}")
        };
        let image = dir.join(format!("{name}.{}", format.extension()));
        let mut file = match std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&image)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(failed(&image, error)),
        };
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|error| failed(&image, error))?;
        let sidecar_path = dir.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(sidecar).unwrap_or_default();
        std::fs::write(&sidecar_path, text + "\n").map_err(|error| failed(&sidecar_path, error))?;
        return Ok(Saved {
            image,
            sidecar: sidecar_path,
        });
    }
    Err(format!(
        "cannot save the image to {}: too many files named {stem}",
        dir.display()
    ))
}

/// `20260101T120000Z`: a UTC time that sorts as text and is safe in file names.
pub fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time)
        .to_string()
        .replace(['-', ':'], "")
}

/// The prompt's first words, lower case, joined by dashes (at most 48 characters).
pub fn slug(prompt: &str) -> String {
    let mut slug = String::new();
    for word in prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if slug.len() + word.len() + 1 > 48 {
            if slug.is_empty() {
                slug = word.chars().take(48).collect();
            }
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        "image".to_owned()
    } else {
        slug
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn formats_are_known_by_their_signature() {
        assert_eq!(Format::sniff(b"\x89PNG\r\n\x1a\nrest"), Some(Format::Png));
        assert_eq!(Format::sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some(Format::Jpeg));
        assert_eq!(Format::sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some(Format::Webp));
        assert_eq!(Format::sniff(b"GIF89a"), None);
        assert_eq!(Format::sniff(b""), None);
    }

    #[test]
    fn decoding_checks_size_base64_and_signature() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n1234");
        assert_eq!(
            decode(&png, 100).map(|(b, f)| (b.len(), f)),
            Ok((12, Format::Png))
        );
        let data_url = format!("data:image/png;base64,{}\n", &png);
        assert!(decode(&data_url, 100).is_ok());
        let too_big = decode(&png, 8).expect_err("over the cap");
        assert!(too_big.contains("over the limit of 8"), "{too_big}");
        let text = base64::engine::general_purpose::STANDARD.encode(b"hello there");
        let not_image = decode(&text, 100).expect_err("not an image");
        assert!(
            not_image.contains("not an image") && not_image.contains("68 65 6c"),
            "{not_image}"
        );
        let garbage = decode("*not base64*", 100).expect_err("garbage");
        assert!(garbage.contains("not valid base64"), "{garbage}");
    }

    #[test]
    fn names_are_stamped_and_slugged() {
        let time = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        assert_eq!(timestamp(time), "20260101T000000Z");
        assert_eq!(
            slug("A Dragon, over the  Misty Mountains!"),
            "a-dragon-over-the-misty-mountains"
        );
        assert_eq!(slug("???"), "image");
        assert_eq!(slug(&"x".repeat(100)).len(), 48);
        assert!(slug(&"word ".repeat(30)).len() <= 48);
    }
}
