//! Sealed blobs: AES-256-GCM (`ring::aead`) over a payload and its expiry, bound to what it
//! was minted for.
//!
//! A blob is URL-safe base64 (no padding) of
//! `version (1) ‖ key id (4) ‖ purpose (1) ‖ agent tag (4) ‖ route tag (4) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
//! The plaintext is `expiry (8, ms since the epoch, big-endian) ‖ payload`. The associated
//! data is the header (everything before the nonce) followed by the full agent and route,
//! so a blob opens only for the agent and route it was sealed for, and a changed header
//! fails like a changed ciphertext. The two 4-byte tags (SHA-256 prefixes of the agent and
//! the route) only let a refusal say *which* binding differs; the AEAD is what enforces it.
//!
//! This module never reads a file or a clock: keys and the time are handed in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};

/// The blob format's version.
const VERSION: u8 = 1;
const HEADER_LEN: usize = 1 + 4 + 1 + 4 + 4;
const TAG_LEN: usize = 16;

/// What a blob is for: a blob of one purpose never opens as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A 2025-era `Mcp-Session-Id`.
    Session,
    /// A 2026-era `requestState` of an `input_required` answer.
    RequestState,
}

impl Purpose {
    fn byte(self) -> u8 {
        match self {
            Self::Session => 1,
            Self::RequestState => 2,
        }
    }
}

/// Who and where a blob is for.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub purpose: Purpose,
    /// The agent (and principal) the blob was minted for; empty for none.
    pub agent: &'a str,
    /// The endpoint path, or for a `requestState` the call it belongs to.
    pub route: &'a str,
}

/// Why a blob did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("it is not a sealed value (bad base64 or too short)")]
    Malformed,
    #[error("it has format version {0}, this gateway reads version {VERSION}")]
    UnsupportedVersion(u8),
    #[error("it was sealed for another purpose")]
    WrongPurpose,
    #[error(
        "it was sealed with key {0}, which the key ring does not hold (retired, or another ring)"
    )]
    UnknownKey(String),
    #[error("it was issued to another agent")]
    WrongAgent,
    #[error("it was issued for another route")]
    WrongRoute,
    #[error("it was tampered with (its seal does not match)")]
    Tampered,
    #[error("it expired")]
    Expired,
}

/// One AES-256-GCM key with its id.
pub struct SealKey {
    id: u32,
    key: LessSafeKey,
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealKey")
            .field("id", &key_id_text(self.id))
            .finish_non_exhaustive()
    }
}

/// How a key id is shown: 8 hex digits.
pub fn key_id_text(id: u32) -> String {
    format!("{id:08x}")
}

impl SealKey {
    /// A key from 32 secret bytes.
    pub fn new(id: u32, secret: &[u8; 32]) -> Self {
        // AES-256 takes any 32 bytes, so this cannot fail.
        let key = match UnboundKey::new(&AES_256_GCM, secret) {
            Ok(key) => key,
            Err(_) => unreachable!("AES-256-GCM accepts every 32-byte key"),
        };
        Self {
            id,
            key: LessSafeKey::new(key),
        }
    }

    pub fn id(&self) -> u32 {
        self.id
    }
}

fn tag(text: &str) -> [u8; 4] {
    let hash = digest(&SHA256, text.as_bytes());
    let mut out = [0u8; 4];
    out.copy_from_slice(&hash.as_ref()[..4]);
    out
}

fn header(id: u32, binding: &Binding<'_>) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[0] = VERSION;
    out[1..5].copy_from_slice(&id.to_be_bytes());
    out[5] = binding.purpose.byte();
    out[6..10].copy_from_slice(&tag(binding.agent));
    out[10..14].copy_from_slice(&tag(binding.route));
    out
}

fn associated(header: &[u8], binding: &Binding<'_>) -> Vec<u8> {
    let mut aad = Vec::with_capacity(header.len() + binding.agent.len() + binding.route.len() + 8);
    aad.extend_from_slice(header);
    for part in [binding.agent, binding.route] {
        aad.extend_from_slice(&(part.len() as u32).to_be_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Seals `payload` with `key` for `binding` until `expires`.
pub fn seal(key: &SealKey, binding: &Binding<'_>, expires: SystemTime, payload: &[u8]) -> String {
    let header = header(key.id, binding);
    let mut nonce = [0u8; NONCE_LEN];
    if SystemRandom::new().fill(&mut nonce).is_err() {
        // The system's random source failing is not something to seal around.
        nonce = rand::random();
    }
    let mut data = Vec::with_capacity(8 + payload.len() + TAG_LEN);
    data.extend_from_slice(&millis(expires).to_be_bytes());
    data.extend_from_slice(payload);
    let aad = associated(&header, binding);
    let sealed = key.key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(aad),
        &mut data,
    );
    if sealed.is_err() {
        unreachable!("AES-GCM seals any payload under 64 GiB");
    }
    let mut blob = Vec::with_capacity(HEADER_LEN + NONCE_LEN + data.len());
    blob.extend_from_slice(&header);
    blob.extend_from_slice(&nonce);
    blob.extend_from_slice(&data);
    URL_SAFE_NO_PAD.encode(blob)
}

/// The id of the key a blob names, if it is one of ours at all.
pub fn key_of(blob: &str) -> Result<u32, OpenError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(blob)
        .map_err(|_| OpenError::Malformed)?;
    parse_header(&bytes).map(|(id, _)| id)
}

fn parse_header(bytes: &[u8]) -> Result<(u32, &[u8]), OpenError> {
    if bytes.len() < HEADER_LEN + NONCE_LEN + 8 + TAG_LEN {
        return Err(OpenError::Malformed);
    }
    if bytes[0] != VERSION {
        return Err(OpenError::UnsupportedVersion(bytes[0]));
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&bytes[1..5]);
    Ok((u32::from_be_bytes(id), &bytes[..HEADER_LEN]))
}

/// Opens `blob` with whichever of `keys` it names, for `binding`, at `now`.
pub fn open<'k>(
    keys: impl IntoIterator<Item = &'k SealKey>,
    blob: &str,
    binding: &Binding<'_>,
    now: SystemTime,
) -> Result<Vec<u8>, OpenError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(blob)
        .map_err(|_| OpenError::Malformed)?;
    let (id, header) = parse_header(&bytes)?;
    if header[5] != binding.purpose.byte() {
        return Err(OpenError::WrongPurpose);
    }
    if header[6..10] != tag(binding.agent) {
        return Err(OpenError::WrongAgent);
    }
    if header[10..14] != tag(binding.route) {
        return Err(OpenError::WrongRoute);
    }
    let key = keys
        .into_iter()
        .find(|key| key.id == id)
        .ok_or_else(|| OpenError::UnknownKey(key_id_text(id)))?;
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&bytes[HEADER_LEN..HEADER_LEN + NONCE_LEN]);
    let mut data = bytes[HEADER_LEN + NONCE_LEN..].to_vec();
    let aad = associated(header, binding);
    let plain = key
        .key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut data,
        )
        .map_err(|_| OpenError::Tampered)?;
    let (expiry, payload) = plain.split_at(8);
    let mut ms = [0u8; 8];
    ms.copy_from_slice(expiry);
    let expires = UNIX_EPOCH + Duration::from_millis(u64::from_be_bytes(ms));
    if expires <= now {
        return Err(OpenError::Expired);
    }
    Ok(payload.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: Binding<'static> = Binding {
        purpose: Purpose::Session,
        agent: "qa",
        route: "/mcp",
    };

    fn later(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn a_blob_opens_for_its_binding_only() {
        let key = SealKey::new(7, &[1; 32]);
        let blob = seal(&key, &SESSION, later(60), b"state");
        assert!(
            blob.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(
            open([&key], &blob, &SESSION, later(0)),
            Ok(b"state".to_vec())
        );
        let other_agent = Binding {
            agent: "dev",
            ..SESSION
        };
        assert_eq!(
            open([&key], &blob, &other_agent, later(0)),
            Err(OpenError::WrongAgent)
        );
        let other_route = Binding {
            route: "/mcp/agents/qa",
            ..SESSION
        };
        assert_eq!(
            open([&key], &blob, &other_route, later(0)),
            Err(OpenError::WrongRoute)
        );
        let state = Binding {
            purpose: Purpose::RequestState,
            ..SESSION
        };
        assert_eq!(
            open([&key], &blob, &state, later(0)),
            Err(OpenError::WrongPurpose)
        );
        assert_eq!(
            open([&key], &blob, &SESSION, later(60)),
            Err(OpenError::Expired)
        );
        let other = SealKey::new(8, &[1; 32]);
        assert_eq!(
            open([&other], &blob, &SESSION, later(0)),
            Err(OpenError::UnknownKey("00000007".into()))
        );
        let same_id_other_secret = SealKey::new(7, &[2; 32]);
        assert_eq!(
            open([&same_id_other_secret], &blob, &SESSION, later(0)),
            Err(OpenError::Tampered)
        );
    }

    #[test]
    fn any_changed_byte_is_refused() {
        let key = SealKey::new(1, &[9; 32]);
        let blob = seal(&key, &SESSION, later(60), b"{\"v\":1}");
        let bytes = URL_SAFE_NO_PAD.decode(&blob).expect("base64");
        for index in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[index] ^= 0x01;
            let forged = URL_SAFE_NO_PAD.encode(&changed);
            assert!(
                open([&key], &forged, &SESSION, later(0)).is_err(),
                "byte {index}"
            );
        }
        assert_eq!(
            open([&key], "not a blob!", &SESSION, later(0)),
            Err(OpenError::Malformed)
        );
        assert_eq!(
            open([&key], "AAAA", &SESSION, later(0)),
            Err(OpenError::Malformed)
        );
        let mut future = bytes.clone();
        future[0] = 9;
        assert_eq!(
            open([&key], &URL_SAFE_NO_PAD.encode(&future), &SESSION, later(0)),
            Err(OpenError::UnsupportedVersion(9))
        );
    }

    #[test]
    fn two_seals_of_one_payload_differ() {
        let key = SealKey::new(1, &[3; 32]);
        assert_ne!(
            seal(&key, &SESSION, later(60), b"x"),
            seal(&key, &SESSION, later(60), b"x")
        );
    }
}
