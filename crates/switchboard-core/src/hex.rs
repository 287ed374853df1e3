//! Lowercase hex of bytes (digests, tokens, hash chains), by table: a `format!` per byte
//! cost more than the SHA-256 it printed, on every call's path.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits per byte.
pub fn encode(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

/// Bytes from hex (either case), or `None` for an odd length or a non-hex digit.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_lowercase_digits_per_byte() {
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::encode(&[]), "");
        assert_eq!(
            super::decode("000fA5ff"),
            Some(vec![0x00, 0x0f, 0xa5, 0xff])
        );
        assert_eq!(super::decode("0"), None);
        assert_eq!(super::decode("zz"), None);
    }
}
