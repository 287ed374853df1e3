//! Sealed `requestState` for approvals on the 2026-07-28 era: an HMAC-SHA256 over what was
//! asked — the agent, the exact call (tool and a digest of its arguments) and an expiry —
//! plus a nonce that may be used once. A tampered, expired, replayed or transplanted state
//! is refused. The key is configurable so that replicas behind one load balancer agree.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchboard_core::approval::ApprovalRequest;

#[derive(Serialize, Deserialize)]
struct Sealed {
    agent: Option<String>,
    tool: String,
    arguments: String,
    expires_ms: u64,
    nonce: String,
}

/// Seals and opens approval states.
pub struct Sealer {
    key: Vec<u8>,
    used: Mutex<HashMap<String, u64>>,
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

use switchboard_core::hex::encode as hex;

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn digest(request: &ApprovalRequest) -> String {
    let arguments = serde_json::to_string(&request.arguments).unwrap_or_default();
    hex(&Sha256::digest(arguments.as_bytes()))
}

impl Sealer {
    pub fn new(key: Option<&[u8]>) -> Self {
        let key = match key {
            Some(key) => key.to_vec(),
            None => rand::random::<[u8; 32]>().to_vec(),
        };
        Self {
            key,
            used: Mutex::default(),
        }
    }

    /// A state for `request`, valid for `lifetime`.
    pub fn seal(&self, request: &ApprovalRequest, lifetime: Duration) -> String {
        let sealed = Sealed {
            agent: request.agent.clone(),
            tool: request.tool.clone(),
            arguments: digest(request),
            expires_ms: now_ms() + lifetime.as_millis() as u64,
            nonce: hex(&rand::random::<[u8; 16]>()),
        };
        let payload = serde_json::to_vec(&sealed).unwrap_or_default();
        format!("{}.{}", hex(&payload), hex(&hmac(&self.key, &payload)))
    }

    /// Checks a state against the call it comes back with, and uses it up.
    pub fn open(&self, state: &str, request: &ApprovalRequest) -> Result<(), &'static str> {
        let (payload, mac) = state.split_once('.').ok_or("malformed")?;
        let payload = unhex(payload).ok_or("malformed")?;
        let mac = unhex(mac).ok_or("malformed")?;
        let expected = hmac(&self.key, &payload);
        let same = mac.len() == expected.len()
            && mac
                .iter()
                .zip(expected.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same {
            return Err("its seal does not match (tampered, or sealed with another key)");
        }
        let sealed: Sealed = serde_json::from_slice(&payload).map_err(|_| "malformed")?;
        let now = now_ms();
        if sealed.expires_ms < now {
            return Err("it expired");
        }
        if sealed.agent != request.agent
            || sealed.tool != request.tool
            || sealed.arguments != digest(request)
        {
            return Err("it was issued for a different call");
        }
        let mut used = self.used.lock().map_err(|_| "unavailable")?;
        used.retain(|_, expires| *expires >= now);
        if used.insert(sealed.nonce, sealed.expires_ms).is_some() {
            return Err("it was already used");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(tool: &str, value: i64) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c".into(),
            agent: Some("qa".into()),
            tool: tool.into(),
            server: "fs".into(),
            arguments: json!({"n": value}).as_object().cloned().unwrap_or_default(),
            reason: "r".into(),
        }
    }

    #[test]
    fn a_state_opens_once_for_its_own_call_only() {
        let sealer = Sealer::new(Some(b"shared key"));
        let state = sealer.seal(&request("fs__delete", 1), Duration::from_secs(60));
        assert_eq!(
            sealer.open(&state, &request("fs__delete", 2)),
            Err("it was issued for a different call")
        );
        assert_eq!(
            sealer.open(&state, &request("fs__other", 1)),
            Err("it was issued for a different call")
        );
        assert_eq!(sealer.open(&state, &request("fs__delete", 1)), Ok(()));
        assert_eq!(
            sealer.open(&state, &request("fs__delete", 1)),
            Err("it was already used")
        );
        // Another replica with the same key accepts it; a different key does not.
        let fresh = sealer.seal(&request("fs__delete", 1), Duration::from_secs(60));
        assert!(
            Sealer::new(Some(b"other key"))
                .open(&fresh, &request("fs__delete", 1))
                .is_err()
        );
        assert_eq!(
            Sealer::new(Some(b"shared key")).open(&fresh, &request("fs__delete", 1)),
            Ok(())
        );
    }

    #[test]
    fn tampered_and_expired_states_are_refused() {
        let sealer = Sealer::new(None);
        let state = sealer.seal(&request("t", 1), Duration::from_secs(60));
        let (payload, mac) = state.split_once('.').expect("two parts");
        let mut bytes = unhex(payload).expect("hex");
        let text = String::from_utf8(bytes.clone())
            .expect("json")
            .replace("\"qa\"", "\"ad\"");
        bytes = text.into_bytes();
        let forged = format!("{}.{mac}", hex(&bytes));
        assert!(
            sealer
                .open(&forged, &request("t", 1))
                .expect_err("forged")
                .contains("seal")
        );
        assert_eq!(sealer.open("zz", &request("t", 1)), Err("malformed"));
        let expired = sealer.seal(&request("t", 1), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(sealer.open(&expired, &request("t", 1)), Err("it expired"));
    }
}
