//! A compact JWS (RFC 7515) taken apart and its signature checked against one JWK (RFC 7517)
//! with `ring`. Only asymmetric algorithms exist here: RS256/384/512, PS256/384/512, ES256,
//! ES384 and EdDSA (Ed25519). `none` and HS* are not algorithms this module knows, so a token
//! naming them can never verify, whatever key it claims (the "HS256 signed with the public
//! key" attack has nothing to hit). The key must also fit the algorithm: an RSA key for RS*/PS*,
//! a P-256 key for ES256, and so on, and a key that names its own `alg` only that one.
//!
//! This module never decides whether a token is acceptable: claims are [`super::claims`].

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::TokenError;

/// The longest token looked at: a header line of 8 KiB easily holds any access token.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A token taken apart, its signature not yet checked.
#[derive(Debug)]
pub struct Jws<'t> {
    pub header: Header,
    pub claims: Map<String, Value>,
    /// `header.payload`, the bytes the signature covers.
    pub signing_input: &'t str,
    pub signature: Vec<u8>,
}

/// The JOSE header fields the gateway reads.
#[derive(Debug, Deserialize)]
pub struct Header {
    pub alg: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub typ: Option<String>,
    /// Critical extensions: none is understood, so any is a refusal (RFC 7515 §4.1.11).
    #[serde(default)]
    pub crit: Option<Value>,
}

/// One key of a JWK set.
#[derive(Debug, Clone, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(default, rename = "use")]
    pub usage: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
    #[serde(default)]
    pub crv: Option<String>,
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub y: Option<String>,
}

/// A JWK set document.
#[derive(Debug, Deserialize)]
pub struct JwkSet {
    pub keys: Vec<Value>,
}

impl JwkSet {
    /// The keys that parse; a key of an unknown shape is skipped, not fatal.
    pub fn usable(self) -> Vec<Jwk> {
        self.keys
            .into_iter()
            .filter_map(|key| serde_json::from_value::<Jwk>(key).ok())
            .filter(|key| key.usage.as_deref().is_none_or(|usage| usage == "sig"))
            .collect()
    }
}

fn decode(part: &str, what: &'static str) -> Result<Vec<u8>, TokenError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| TokenError::Malformed(what))
}

/// Splits and decodes a compact JWS; nothing is verified yet.
pub fn parse(token: &str) -> Result<Jws<'_>, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Malformed("the token is too long"));
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed("not a compact JWS (three parts)"));
    };
    let header: Header = serde_json::from_slice(&decode(header, "the header is not base64url")?)
        .map_err(|_| TokenError::Malformed("the header is not a JOSE header"))?;
    let claims: Map<String, Value> =
        serde_json::from_slice(&decode(payload, "the payload is not base64url")?)
            .map_err(|_| TokenError::Malformed("the claims are not a JSON object"))?;
    let signature = decode(signature, "the signature is not base64url")?;
    let end = token.rfind('.').unwrap_or(0);
    let signing_input = &token[..end];
    Ok(Jws {
        header,
        claims,
        signing_input,
        signature,
    })
}

/// Whether `key` is of the kind `alg` needs (and, if it names an algorithm, that one).
pub fn key_fits(key: &Jwk, alg: &str) -> bool {
    if key.alg.as_deref().is_some_and(|own| own != alg) {
        return false;
    }
    match alg {
        "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" => key.kty == "RSA",
        "ES256" => key.kty == "EC" && key.crv.as_deref() == Some("P-256"),
        "ES384" => key.kty == "EC" && key.crv.as_deref() == Some("P-384"),
        "EdDSA" | "Ed25519" => key.kty == "OKP" && key.crv.as_deref() == Some("Ed25519"),
        _ => false,
    }
}

/// Checks `jws`'s signature with `key` under the header's algorithm.
pub fn verify(jws: &Jws<'_>, key: &Jwk) -> Result<(), TokenError> {
    let alg = jws.header.alg.as_str();
    if !key_fits(key, alg) {
        return Err(TokenError::BadSignature);
    }
    let message = jws.signing_input.as_bytes();
    let signature = jws.signature.as_slice();
    let component = |value: &Option<String>| -> Result<Vec<u8>, TokenError> {
        let text = value.as_deref().ok_or(TokenError::BadSignature)?;
        decode(text, "a key component is not base64url").map_err(|_| TokenError::BadSignature)
    };
    let checked = match alg {
        "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" => {
            let params = match alg {
                "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                _ => &signature::RSA_PSS_2048_8192_SHA512,
            };
            let (n, e) = (component(&key.n)?, component(&key.e)?);
            let strip = |bytes: &[u8]| -> Vec<u8> {
                let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
                bytes[first..].to_vec()
            };
            RsaPublicKeyComponents {
                n: strip(&n),
                e: strip(&e),
            }
            .verify(params, message, signature)
        }
        "ES256" | "ES384" => {
            let (x, y) = (component(&key.x)?, component(&key.y)?);
            let (algorithm, size): (&'static signature::EcdsaVerificationAlgorithm, usize) =
                if alg == "ES256" {
                    (&signature::ECDSA_P256_SHA256_FIXED, 32)
                } else {
                    (&signature::ECDSA_P384_SHA384_FIXED, 48)
                };
            if x.len() != size || y.len() != size {
                return Err(TokenError::BadSignature);
            }
            let mut point = Vec::with_capacity(1 + 2 * size);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            UnparsedPublicKey::new(algorithm, point).verify(message, signature)
        }
        _ => {
            let x = component(&key.x)?;
            UnparsedPublicKey::new(&signature::ED25519, x).verify(message, signature)
        }
    };
    checked.map_err(|_| TokenError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn parse_refuses_what_is_not_a_compact_jws() {
        assert!(matches!(parse("a.b"), Err(TokenError::Malformed(_))));
        assert!(matches!(parse("a.b.c.d"), Err(TokenError::Malformed(_))));
        assert!(matches!(parse("!!.e30.x"), Err(TokenError::Malformed(_))));
        let header = b64(br#"{"alg":"ES256","kid":"k"}"#);
        let token = format!("{header}.{}.{}", b64(b"{}"), b64(b"sig"));
        let jws = parse(&token).expect("parses");
        assert_eq!(jws.header.kid.as_deref(), Some("k"));
        assert_eq!(jws.signing_input, format!("{header}.{}", b64(b"{}")));
        assert_eq!(jws.signature, b"sig");
    }

    #[test]
    fn keys_fit_only_their_algorithms() {
        let rsa = Jwk {
            kty: "RSA".into(),
            kid: None,
            alg: None,
            usage: None,
            n: None,
            e: None,
            crv: None,
            x: None,
            y: None,
        };
        assert!(key_fits(&rsa, "RS256") && key_fits(&rsa, "PS512"));
        for alg in ["HS256", "none", "ES256", "EdDSA", ""] {
            assert!(!key_fits(&rsa, alg), "{alg}");
        }
        let pinned = Jwk {
            alg: Some("RS384".into()),
            ..rsa
        };
        assert!(!key_fits(&pinned, "RS256") && key_fits(&pinned, "RS384"));
    }
}
