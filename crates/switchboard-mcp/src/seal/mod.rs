//! Sealed client-side state, so that any replica sharing a key ring serves a request another
//! replica started: the 2025-era `Mcp-Session-Id` and the 2026-era `requestState`.
//!
//! [`blob`] is the format (AES-256-GCM, bound to purpose, agent, route and expiry);
//! [`KeyRing`] is a set of keys of which the newest seals and every one opens; [`Keys`] is
//! the seam through which the front and the approver get the ring in force (the gateway's
//! implementation follows the key ring file, `switchboard::keyring`). This module never
//! reads files: it is handed keys and, through [`Keys`], the time.

pub mod blob;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use blob::{Binding, OpenError, Purpose, SealKey, key_id_text};

/// Keys of which the newest seals and every one opens.
#[derive(Debug)]
pub struct KeyRing {
    /// Oldest first; never empty.
    keys: Vec<SealKey>,
}

impl KeyRing {
    /// A ring of `keys`, oldest first (the last one seals); `None` when there are none.
    pub fn new(keys: Vec<SealKey>) -> Option<Self> {
        if keys.is_empty() {
            None
        } else {
            Some(Self { keys })
        }
    }

    /// A ring of one random key, for one process alone (no `[shared] keys`).
    pub fn ephemeral() -> Self {
        Self {
            keys: vec![SealKey::new(rand::random(), &rand::random())],
        }
    }

    /// A ring of one key derived from a configured secret (`gateway.approval_key`, kept for
    /// replicas that shared one before key rings existed): SHA-256 of it.
    pub fn from_secret(secret: &[u8]) -> Self {
        let hash = ring::digest::digest(&ring::digest::SHA256, secret);
        let mut key = [0u8; 32];
        key.copy_from_slice(hash.as_ref());
        let id = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
        Self {
            keys: vec![SealKey::new(id, &key)],
        }
    }

    /// The key that seals.
    pub fn current(&self) -> &SealKey {
        // `new` refuses an empty ring.
        &self.keys[self.keys.len() - 1]
    }

    /// Whether the ring still holds the key `id` (a retired key's state no longer opens).
    pub fn holds(&self, id: u32) -> bool {
        self.keys.iter().any(|key| key.id() == id)
    }

    /// Seals `payload` with the newest key.
    pub fn seal(&self, binding: &Binding<'_>, expires: SystemTime, payload: &[u8]) -> String {
        blob::seal(self.current(), binding, expires, payload)
    }

    /// Opens a blob sealed with any key of the ring.
    pub fn open(
        &self,
        sealed: &str,
        binding: &Binding<'_>,
        now: SystemTime,
    ) -> Result<Vec<u8>, OpenError> {
        blob::open(&self.keys, sealed, binding, now)
    }
}

/// Where sealing gets its ring and its time.
pub trait Keys: Send + Sync + std::fmt::Debug {
    /// The ring in force now.
    fn ring(&self) -> Arc<KeyRing>;
    /// The wall-clock time that expiries are measured against.
    fn now(&self) -> SystemTime;

    /// Seals `payload` for `binding`, valid for `lifetime`.
    fn seal(&self, binding: &Binding<'_>, lifetime: Duration, payload: &[u8]) -> String {
        self.ring().seal(binding, self.now() + lifetime, payload)
    }

    /// Opens what [`Keys::seal`] sealed, here or on a replica sharing the ring.
    fn open(&self, sealed: &str, binding: &Binding<'_>) -> Result<Vec<u8>, OpenError> {
        self.ring().open(sealed, binding, self.now())
    }
}

/// A ring that never changes, on the system clock: one process's random key, or a fixed one.
#[derive(Debug, Clone)]
pub struct FixedKeys(pub Arc<KeyRing>);

impl FixedKeys {
    /// A random key of this process alone.
    pub fn ephemeral() -> Self {
        Self(Arc::new(KeyRing::ephemeral()))
    }
}

impl Keys for FixedKeys {
    fn ring(&self) -> Arc<KeyRing> {
        self.0.clone()
    }

    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_key_seals_and_every_key_opens() {
        let old = SealKey::new(1, &[1; 32]);
        let binding = Binding {
            purpose: Purpose::Session,
            agent: "",
            route: "/mcp",
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let before = KeyRing::new(vec![SealKey::new(1, &[1; 32])]).expect("one key");
        let sealed_old = before.seal(&binding, now + Duration::from_secs(60), b"old");
        let rotated = KeyRing::new(vec![old, SealKey::new(2, &[2; 32])]).expect("two keys");
        assert_eq!(rotated.current().id(), 2);
        assert!(rotated.holds(1) && !before.holds(2));
        let sealed_new = rotated.seal(&binding, now + Duration::from_secs(60), b"new");
        assert_eq!(blob::key_of(&sealed_new), Ok(2));
        assert_eq!(
            rotated.open(&sealed_old, &binding, now),
            Ok(b"old".to_vec())
        );
        assert_eq!(
            before.open(&sealed_new, &binding, now),
            Err(OpenError::UnknownKey("00000002".into()))
        );
        assert!(KeyRing::new(Vec::new()).is_none());
    }

    #[test]
    fn one_secret_gives_one_key_everywhere() {
        let a = KeyRing::from_secret(b"shared");
        let b = KeyRing::from_secret(b"shared");
        let binding = Binding {
            purpose: Purpose::RequestState,
            agent: "qa",
            route: "call",
        };
        let now = SystemTime::now();
        let sealed = a.seal(&binding, now + Duration::from_secs(5), b"x");
        assert_eq!(b.open(&sealed, &binding, now), Ok(b"x".to_vec()));
        assert!(
            KeyRing::from_secret(b"other")
                .open(&sealed, &binding, now)
                .is_err()
        );
    }
}
