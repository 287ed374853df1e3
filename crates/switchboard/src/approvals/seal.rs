//! Sealed `requestState` for approvals on the 2026-07-28 era: an AES-256-GCM blob
//! (`switchboard_mcp::seal`) sealed with the deployment's key ring, bound to the agent and to
//! the exact call (tool and a digest of its arguments) it asks about, with an expiry inside,
//! plus a nonce that may be used once. A tampered, expired, replayed or transplanted state is
//! refused. With `[shared] keys` every replica opens what another sealed, so the
//! `input_required` retry may land on any of them.
//!
//! Each nonce is used up in a [`UsedNonces`] store: [`MemoryNonces`] (this process's memory)
//! unless a store the replicas share is handed in; with the memory store, a state replayed to
//! a *second* replica within its lifetime is not caught.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use switchboard_core::approval::ApprovalRequest;
use switchboard_core::hex::encode as hex;
use switchboard_mcp::seal::{Binding, Keys, OpenError, Purpose};

/// Why a state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("{0}")]
    Sealed(#[from] OpenError),
    #[error("it was issued for a different call")]
    OtherCall,
    #[error("it was already used")]
    Used,
    /// The store of used nonces the replicas share did not answer, and its policy is to
    /// refuse rather than risk a replay.
    #[error("it cannot be checked now ({0}); retry later")]
    Unverifiable(String),
}

/// Whether a nonce was used for the first time now, or why a shared store cannot say.
pub type NonceAnswer<'a> = BoxFuture<'a, Result<bool, String>>;

/// Where used nonces are remembered until their state expires.
pub trait UsedNonces: Send + Sync {
    /// Marks `nonce` used until `expires_ms` (ms since the epoch): `Ok(false)` when it
    /// already was; `Err(why)` when a shared store cannot say and its policy is to refuse.
    /// `now_ms` lets a store forget what expired.
    fn first_use(&self, nonce: [u8; 16], expires_ms: u64, now_ms: u64) -> NonceAnswer<'_>;
}

/// Used nonces in this process's memory.
#[derive(Default)]
pub struct MemoryNonces {
    used: Mutex<HashMap<[u8; 16], u64>>,
}

impl MemoryNonces {
    /// Whether `nonce` was used here (and has not expired).
    pub fn used_here(&self, nonce: &[u8; 16], now_ms: u64) -> bool {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(nonce)
            .is_some_and(|expires| *expires >= now_ms)
    }

    /// Marks `nonce` used here until `expires_ms`; `false` when it already was.
    pub fn use_here(&self, nonce: [u8; 16], expires_ms: u64, now_ms: u64) -> bool {
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        used.retain(|_, expires| *expires >= now_ms);
        used.insert(nonce, expires_ms).is_none()
    }
}

impl UsedNonces for MemoryNonces {
    fn first_use(&self, nonce: [u8; 16], expires_ms: u64, now_ms: u64) -> NonceAnswer<'_> {
        let first = self.use_here(nonce, expires_ms, now_ms);
        Box::pin(std::future::ready(Ok(first)))
    }
}

/// Seals and opens approval states.
pub struct Sealer {
    keys: Arc<dyn Keys>,
    used: Arc<dyn UsedNonces>,
}

/// The call a state belongs to: tool and a digest of its arguments.
fn route(request: &ApprovalRequest) -> String {
    let arguments = serde_json::to_string(&request.arguments).unwrap_or_default();
    format!(
        "tools/call {} {}",
        request.tool,
        hex(&Sha256::digest(arguments.as_bytes()))
    )
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Sealer {
    /// Nonces are remembered in this process ([`MemoryNonces`]).
    pub fn new(keys: Arc<dyn Keys>) -> Self {
        Self::with_nonces(keys, Arc::new(MemoryNonces::default()))
    }

    /// Nonces are remembered in `used` (a store the replicas share makes a state single-use
    /// across them).
    pub fn with_nonces(keys: Arc<dyn Keys>, used: Arc<dyn UsedNonces>) -> Self {
        Self { keys, used }
    }

    /// A state for `request`, valid for `lifetime`.
    pub fn seal(&self, request: &ApprovalRequest, lifetime: Duration) -> String {
        let route = route(request);
        let binding = Binding {
            purpose: Purpose::RequestState,
            agent: request.agent.as_deref().unwrap_or(""),
            route: &route,
        };
        let nonce: [u8; 16] = rand::random();
        let expires = millis(self.keys.now() + lifetime);
        let mut payload = nonce.to_vec();
        payload.extend_from_slice(&expires.to_be_bytes());
        self.keys.seal(&binding, lifetime, &payload)
    }

    /// Checks a state against the call it comes back with, and uses it up.
    pub async fn open(&self, state: &str, request: &ApprovalRequest) -> Result<(), StateError> {
        let route = route(request);
        let binding = Binding {
            purpose: Purpose::RequestState,
            agent: request.agent.as_deref().unwrap_or(""),
            route: &route,
        };
        let payload = self
            .keys
            .open(state, &binding)
            .map_err(|error| match error {
                OpenError::WrongRoute => StateError::OtherCall,
                other => StateError::Sealed(other),
            })?;
        let (Ok(nonce), Ok(expires)) = (
            <[u8; 16]>::try_from(payload.get(..16).unwrap_or_default()),
            <[u8; 8]>::try_from(payload.get(16..).unwrap_or_default()),
        ) else {
            return Err(StateError::Sealed(OpenError::Malformed));
        };
        let now = millis(self.keys.now());
        match self
            .used
            .first_use(nonce, u64::from_be_bytes(expires), now)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(StateError::Used),
            Err(why) => Err(StateError::Unverifiable(why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_mcp::seal::{FixedKeys, KeyRing};

    use super::*;

    fn request(tool: &str, agent: &str, value: i64) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c".into(),
            agent: Some(agent.into()),
            tool: tool.into(),
            server: "fs".into(),
            arguments: json!({"n": value}).as_object().cloned().unwrap_or_default(),
            reason: "r".into(),
        }
    }

    fn shared(secret: &[u8]) -> Arc<dyn Keys> {
        Arc::new(FixedKeys(Arc::new(KeyRing::from_secret(secret))))
    }

    #[tokio::test]
    async fn a_state_opens_once_for_its_own_call_only() {
        let sealer = Sealer::new(shared(b"shared key"));
        let state = sealer.seal(&request("fs__delete", "qa", 1), Duration::from_secs(60));
        for other in [
            request("fs__delete", "qa", 2),
            request("fs__other", "qa", 1),
        ] {
            assert_eq!(
                sealer.open(&state, &other).await,
                Err(StateError::OtherCall)
            );
        }
        assert_eq!(
            sealer.open(&state, &request("fs__delete", "dev", 1)).await,
            Err(StateError::Sealed(OpenError::WrongAgent))
        );
        assert_eq!(
            sealer.open(&state, &request("fs__delete", "qa", 1)).await,
            Ok(())
        );
        assert_eq!(
            sealer.open(&state, &request("fs__delete", "qa", 1)).await,
            Err(StateError::Used)
        );
        // Another replica with the same ring accepts it; another ring does not.
        let fresh = sealer.seal(&request("fs__delete", "qa", 1), Duration::from_secs(60));
        assert!(matches!(
            Sealer::new(shared(b"other key"))
                .open(&fresh, &request("fs__delete", "qa", 1))
                .await,
            Err(StateError::Sealed(OpenError::UnknownKey(_)))
        ));
        assert_eq!(
            Sealer::new(shared(b"shared key"))
                .open(&fresh, &request("fs__delete", "qa", 1))
                .await,
            Ok(())
        );
        // With one store of used nonces between them, a replay to another replica is caught.
        let used: Arc<dyn UsedNonces> = Arc::new(MemoryNonces::default());
        let (a, b) = (
            Sealer::with_nonces(shared(b"shared key"), used.clone()),
            Sealer::with_nonces(shared(b"shared key"), used),
        );
        let state = a.seal(&request("fs__delete", "qa", 1), Duration::from_secs(60));
        assert_eq!(
            a.open(&state, &request("fs__delete", "qa", 1)).await,
            Ok(())
        );
        assert_eq!(
            b.open(&state, &request("fs__delete", "qa", 1)).await,
            Err(StateError::Used)
        );
    }

    #[tokio::test]
    async fn tampered_and_expired_states_are_refused() {
        let sealer = Sealer::new(Arc::new(FixedKeys::ephemeral()));
        let call = request("t", "qa", 1);
        let state = sealer.seal(&call, Duration::from_secs(60));
        let mut forged = state.clone().into_bytes();
        let last = forged.len() - 3;
        forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).expect("ascii");
        assert_eq!(
            sealer.open(&forged, &call).await,
            Err(StateError::Sealed(OpenError::Tampered))
        );
        assert_eq!(
            sealer.open("zz", &call).await,
            Err(StateError::Sealed(OpenError::Malformed))
        );
        let expired = sealer.seal(&call, Duration::ZERO);
        assert_eq!(
            sealer.open(&expired, &call).await,
            Err(StateError::Sealed(OpenError::Expired))
        );
    }
}
