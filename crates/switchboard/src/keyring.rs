//! The key ring file (`[shared] keys = "FILE"`): the AES-256-GCM keys that seal session ids
//! and `requestState` (`switchboard_mcp::seal`), shared by every replica of a deployment.
//!
//! The file is JSON, readable by its owner only (a file that group or others may read is
//! refused): `{"version": 1, "keys": [{"id": "0a1b2c3d", "created": 1795000000, "secret":
//! "<64 hex digits>", "seals_from"?: 1795000120}]}`, oldest first; every key opens, and a
//! running gateway seals with the newest key whose `seals_from` (default: `created`) has come,
//! so a rotation can give the file time to reach every replica before any seals with the new
//! key. `create` writes a new ring and never overwrites one; `rotate` appends a key;
//! `retire` removes old keys: never the newest, the one that seals now, nor the one due to
//! seal next ([`InUse`]), so retiring during a rotation's grace cannot defeat it. [`LiveKeys`] keeps a running gateway in step with the file: it looks again at
//! most every 500 ms, so a rotation on disk reaches every replica without a restart, and a
//! file that turns bad leaves the keys read before in force.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use switchboard_core::clock::Clock;
use switchboard_mcp::seal::{KeyRing, Keys, SealKey, key_id_text};

use crate::followed_file::FollowedFile;

/// The file format's version.
const FORMAT: u32 = 1;

/// How long a key `switchboard keys rotate` adds only opens before it seals, by default: the
/// time a ring file copied to every replica (a secret manager, a config push) may take to
/// reach the last of them.
pub const ROTATION_GRACE: Duration = Duration::from_secs(120);

/// What is wrong with a key ring file or an operation on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyRingError {
    #[error("key ring {path} does not exist (make one with `switchboard keys create {path}`)")]
    Missing { path: PathBuf },
    #[error("cannot read key ring {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write key ring {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "key ring {path} already exists: refusing to overwrite it (use `switchboard keys rotate`)"
    )]
    Exists { path: PathBuf },
    #[error(
        "key ring {path} has mode {mode:03o}: group and others must not read it (chmod 600 {path})"
    )]
    Permissions { path: PathBuf, mode: u32 },
    #[error("key ring {path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("key ring {path}: {message}")]
    Content { path: PathBuf, message: String },
    #[error("key ring {path} has no key {id} (`switchboard keys list {path}` shows them)")]
    NoSuchKey { path: PathBuf, id: String },
    #[error("key ring {path}: {id} is the newest key; rotate first, then retire it")]
    Newest { path: PathBuf, id: String },
    #[error("key ring {path}: {id} {why}; it cannot be retired yet")]
    InUse {
        path: PathBuf,
        id: String,
        why: InUse,
    },
}

/// Why a key must stay in the ring now, whatever `retire` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InUse {
    /// Running gateways seal with it (a newer key may be in its grace: until it ends, this
    /// key seals, and removing it would make the newer one seal before every replica has it).
    Seals,
    /// It starts sealing after its grace, in this many seconds.
    SealsNext { in_seconds: u64 },
}

impl std::fmt::Display for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Seals => write!(
                f,
                "is the key that seals now (a newer key's grace has not ended, or there is none)"
            ),
            Self::SealsNext { in_seconds } => write!(
                f,
                "is due to seal next, in {in_seconds}s, once its grace ends"
            ),
        }
    }
}

/// What `retire --keep N` did: the keys removed, and the older keys it kept because they
/// are in use ([`InUse`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retired {
    pub removed: Vec<String>,
    pub kept: Vec<(String, InUse)>,
}

/// One key as stored. `Debug` shows its id and age, never the secret.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredKey {
    /// 8 hex digits, unique in the ring.
    pub id: String,
    /// When it was made, in seconds since the Unix epoch.
    pub created: u64,
    /// From when it seals, in seconds since the Unix epoch (until then it only opens);
    /// absent: from when it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seals_from: Option<u64>,
    /// 32 bytes as 64 hex digits.
    secret: String,
}

impl StoredKey {
    /// From when the key seals, in seconds since the Unix epoch.
    pub fn seals_from(&self) -> u64 {
        self.seals_from.unwrap_or(self.created)
    }
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey")
            .field("id", &self.id)
            .field("created", &self.created)
            .field("seals_from", &self.seals_from)
            .field("secret", &"***")
            .finish()
    }
}

/// A key ring file's contents, oldest key first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RingFile {
    pub version: u32,
    pub keys: Vec<StoredKey>,
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl StoredKey {
    fn generate(taken: &[StoredKey], now: SystemTime) -> Self {
        let id = loop {
            let id = key_id_text(rand::random());
            if !taken.iter().any(|key| key.id == id) {
                break id;
            }
        };
        Self {
            id,
            created: seconds(now),
            seals_from: None,
            secret: switchboard_core::hex::encode(&rand::random::<[u8; 32]>()),
        }
    }

    /// How old the key is at `now`.
    pub fn age(&self, now: SystemTime) -> Duration {
        Duration::from_secs(seconds(now).saturating_sub(self.created))
    }

    fn to_key(&self) -> Option<SealKey> {
        let id = u32::from_str_radix(&self.id, 16)
            .ok()
            .filter(|_| self.id.len() == 8)?;
        let secret: [u8; 32] = switchboard_core::hex::decode(&self.secret)?
            .try_into()
            .ok()?;
        Some(SealKey::new(id, &secret))
    }
}

impl RingFile {
    /// A ring of one new key.
    pub fn generate(now: SystemTime) -> Self {
        Self {
            version: FORMAT,
            keys: vec![StoredKey::generate(&[], now)],
        }
    }

    /// Reads and checks `path`: owner-only permissions, valid JSON, every key well formed.
    pub fn load(path: &Path) -> Result<Self, KeyRingError> {
        let read = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound => KeyRingError::Missing {
                path: path.to_owned(),
            },
            _ => KeyRingError::Read {
                path: path.to_owned(),
                source,
            },
        };
        let metadata = std::fs::metadata(path).map_err(read)?;
        let mode = metadata.mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyRingError::Permissions {
                path: path.to_owned(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(read)?;
        let ring: Self = serde_json::from_str(&text).map_err(|error| KeyRingError::Syntax {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        })?;
        ring.check(path)?;
        Ok(ring)
    }

    fn check(&self, path: &Path) -> Result<(), KeyRingError> {
        let content = |message: String| KeyRingError::Content {
            path: path.to_owned(),
            message,
        };
        if self.version != FORMAT {
            return Err(content(format!(
                "format version {} (this gateway reads {FORMAT})",
                self.version
            )));
        }
        if self.keys.is_empty() {
            return Err(content("it holds no key".to_owned()));
        }
        for (index, key) in self.keys.iter().enumerate() {
            if key.to_key().is_none() {
                return Err(content(format!(
                    "keys[{index}] (id '{}'): the id must be 8 hex digits and the secret 64",
                    key.id
                )));
            }
            if self.keys[..index].iter().any(|other| other.id == key.id) {
                return Err(content(format!(
                    "keys[{index}]: id {} appears twice",
                    key.id
                )));
            }
        }
        Ok(())
    }

    /// The ring the keys make, the newest sealing (`None` only for a file that failed
    /// [`RingFile::load`]'s checks).
    pub fn ring(&self) -> Option<KeyRing> {
        KeyRing::new(self.keys.iter().filter_map(StoredKey::to_key).collect())
    }

    /// The ring in force at `now`, as a running gateway uses it: every key opens; the newest
    /// key whose `seals_from` has come seals (the oldest while none has). With it, when the
    /// next key starts sealing (the ring is to be taken again then).
    pub fn ring_at(&self, now: SystemTime) -> Option<(KeyRing, Option<SystemTime>)> {
        let mut usable: Vec<(u64, SealKey)> = self
            .keys
            .iter()
            .filter_map(|key| Some((key.seals_from(), key.to_key()?)))
            .collect();
        let now = seconds(now);
        let sealing = usable
            .iter()
            .rposition(|(from, _)| *from <= now)
            .unwrap_or(0);
        let switch_at = usable[sealing + 1..]
            .iter()
            .map(|(from, _)| *from)
            .filter(|from| *from > now)
            .min()
            .map(|from| UNIX_EPOCH + Duration::from_secs(from));
        // The ring seals with its last key.
        let seals = usable.remove(sealing);
        usable.push(seals);
        let ring = KeyRing::new(usable.into_iter().map(|(_, key)| key).collect())?;
        Some((ring, switch_at))
    }

    /// Writes a new ring to `path`, mode 0600, whole or not at all (a crash mid-write never
    /// leaves a truncated ring that gateways would refuse); refuses to overwrite any file.
    pub fn create(&self, path: &Path) -> Result<(), KeyRingError> {
        crate::private_file::create_new(path, self.text().as_bytes()).map_err(|source| match source
            .kind()
        {
            std::io::ErrorKind::AlreadyExists => KeyRingError::Exists {
                path: path.to_owned(),
            },
            _ => KeyRingError::Write {
                path: path.to_owned(),
                source,
            },
        })
    }

    /// Loads the ring at `path`, lets `change` change it, and writes it back, all under the
    /// ring's lock, so two rotations or retirements at once both count. `change`'s error
    /// leaves the ring as it was.
    pub fn update<T>(
        path: &Path,
        change: impl FnOnce(&mut Self) -> Result<T, KeyRingError>,
    ) -> Result<T, KeyRingError> {
        crate::private_file::locked(path, || {
            let mut ring = Self::load(path)?;
            let changed = change(&mut ring)?;
            ring.save(path)?;
            Ok(changed)
        })
        .map_err(|source| KeyRingError::Write {
            path: path.to_owned(),
            source,
        })?
    }

    /// Replaces the ring at `path` whole (a 0600 file renamed over it).
    pub fn save(&self, path: &Path) -> Result<(), KeyRingError> {
        crate::private_file::write(path, self.text().as_bytes()).map_err(|source| {
            KeyRingError::Write {
                path: path.to_owned(),
                source,
            }
        })
    }

    fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Adds a key that seals from now on; the others still open. Returns its id.
    pub fn rotate(&mut self, now: SystemTime) -> String {
        self.rotate_sealing_after(now, Duration::ZERO)
    }

    /// Adds a key that opens from now on and seals after `grace` (the time the file takes to
    /// reach every replica: none seals with a key another cannot open yet). Returns its id.
    pub fn rotate_sealing_after(&mut self, now: SystemTime, grace: Duration) -> String {
        let mut key = StoredKey::generate(&self.keys, now);
        if !grace.is_zero() {
            key.seals_from = Some(seconds(now + grace));
        }
        let id = key.id.clone();
        self.keys.push(key);
        id
    }

    /// Which keys are in use at `now`, by index: the one that seals and the one due to seal
    /// next (as [`RingFile::ring_at`] chooses them).
    fn in_use(&self, now: SystemTime) -> Vec<(usize, InUse)> {
        let now = seconds(now);
        let sealing = self
            .keys
            .iter()
            .rposition(|key| key.seals_from() <= now)
            .unwrap_or(0);
        let mut in_use = vec![(sealing, InUse::Seals)];
        let next = self
            .keys
            .iter()
            .enumerate()
            .skip(sealing + 1)
            .filter(|(_, key)| key.seals_from() > now)
            .min_by_key(|(_, key)| key.seals_from());
        if let Some((index, key)) = next {
            in_use.push((
                index,
                InUse::SealsNext {
                    in_seconds: key.seals_from() - now,
                },
            ));
        }
        in_use
    }

    /// Removes all but the newest `keep` keys (at least one stays), keeping as well any
    /// older key in use at `now` ([`InUse`]).
    pub fn retire_keeping(&mut self, keep: usize, now: SystemTime) -> Retired {
        let cut = self.keys.len().saturating_sub(keep.max(1));
        let in_use = self.in_use(now);
        let mut retired = Retired::default();
        let mut index = 0;
        self.keys.retain(|key| {
            let at = index;
            index += 1;
            if at >= cut {
                return true;
            }
            match in_use.iter().find(|(used, _)| *used == at) {
                Some((_, why)) => {
                    retired.kept.push((key.id.clone(), *why));
                    true
                }
                None => {
                    retired.removed.push(key.id.clone());
                    false
                }
            }
        });
        retired
    }

    /// Removes the key `id`, unless it is the newest or in use at `now` ([`InUse`]).
    /// (Retiring every older key once the newest seals leaves it alone.)
    pub fn retire(&mut self, path: &Path, id: &str, now: SystemTime) -> Result<(), KeyRingError> {
        let index = self
            .keys
            .iter()
            .position(|key| key.id == id)
            .ok_or_else(|| KeyRingError::NoSuchKey {
                path: path.to_owned(),
                id: id.to_owned(),
            })?;
        if let Some((_, why)) = self
            .in_use(now)
            .into_iter()
            .find(|(used, _)| *used == index)
        {
            return Err(KeyRingError::InUse {
                path: path.to_owned(),
                id: id.to_owned(),
                why,
            });
        }
        if index + 1 == self.keys.len() {
            return Err(KeyRingError::Newest {
                path: path.to_owned(),
                id: id.to_owned(),
            });
        }
        self.keys.remove(index);
        Ok(())
    }
}

/// The keys of a running gateway: the ring file's, followed as it changes, or one random
/// key of this process when there is no file.
pub struct LiveKeys {
    file: Option<FollowedFile>,
    ring: RwLock<InForce>,
    /// Whether the ring in force awaits a key's time to seal: without one (the usual case),
    /// taking the ring reads no clock.
    switching: AtomicBool,
    clock: Arc<dyn Clock>,
}

/// The ring in force, and what it was made from.
struct InForce {
    ring: Arc<KeyRing>,
    /// The file's keys (none for a fixed ring).
    keys: Option<RingFile>,
    /// When a newer key starts sealing ([`RingFile::ring_at`]).
    switch_at: Option<SystemTime>,
}

impl InForce {
    /// The ring `keys` make at `now`.
    fn of(keys: RingFile, now: SystemTime) -> Option<Self> {
        let (ring, switch_at) = keys.ring_at(now)?;
        Some(Self {
            ring: Arc::new(ring),
            keys: Some(keys),
            switch_at,
        })
    }
}

impl std::fmt::Debug for LiveKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveKeys")
            .field("file", &self.file.as_ref().map(FollowedFile::path))
            .finish_non_exhaustive()
    }
}

impl LiveKeys {
    /// Follows the ring at `path`; an error when it cannot be read or is invalid (a gateway
    /// should not start unable to open its replicas' sessions).
    pub fn follow(path: &Path, clock: Arc<dyn Clock>) -> Result<Self, KeyRingError> {
        let file = FollowedFile::new(path, clock.now());
        let ring = Self::read(path, clock.wall())?;
        Ok(Self {
            file: Some(file),
            switching: AtomicBool::new(ring.switch_at.is_some()),
            ring: RwLock::new(ring),
            clock,
        })
    }

    /// A fixed ring (one random key of this process, or one derived from a secret).
    pub fn fixed(ring: KeyRing, clock: Arc<dyn Clock>) -> Self {
        Self {
            file: None,
            ring: RwLock::new(InForce {
                ring: Arc::new(ring),
                keys: None,
                switch_at: None,
            }),
            switching: AtomicBool::new(false),
            clock,
        }
    }

    fn read(path: &Path, now: SystemTime) -> Result<InForce, KeyRingError> {
        let file = RingFile::load(path)?;
        InForce::of(file, now).ok_or_else(|| KeyRingError::Content {
            path: path.to_owned(),
            message: "it holds no key".to_owned(),
        })
    }

    /// Reads the file again if it changed (see [`FollowedFile`]).
    fn refresh(&self) {
        let Some(file) = &self.file else { return };
        file.reread(self.clock.now(), |path| {
            match Self::read(path, self.clock.wall()) {
                Ok(ring) => {
                    if let Ok(mut current) = self.ring.write() {
                        self.switching
                            .store(ring.switch_at.is_some(), Ordering::Release);
                        *current = ring;
                    }
                    tracing::info!("key ring {} changed: keys read again", path.display());
                    Ok(())
                }
                Err(error) => {
                    tracing::warn!("{error}; the keys read before stay in force");
                    Err(())
                }
            }
        });
    }
}

impl LiveKeys {
    /// Takes the ring again when a newer key's grace has ended, so that it seals.
    fn switch_if_due(&self) {
        if !self.switching.load(Ordering::Acquire) {
            return;
        }
        let now = self.clock.wall();
        let due = |in_force: &InForce| in_force.switch_at.is_some_and(|at| at <= now);
        let is_due = match self.ring.read() {
            Ok(in_force) => due(&in_force),
            Err(poisoned) => due(&poisoned.into_inner()),
        };
        if !is_due {
            return;
        }
        let mut in_force = match self.ring.write() {
            Ok(in_force) => in_force,
            Err(poisoned) => poisoned.into_inner(),
        };
        if due(&in_force)
            && let Some(next) = in_force
                .keys
                .clone()
                .and_then(|keys| InForce::of(keys, now))
        {
            self.switching
                .store(next.switch_at.is_some(), Ordering::Release);
            *in_force = next;
        }
    }
}

impl Keys for LiveKeys {
    fn ring(&self) -> Arc<KeyRing> {
        self.refresh();
        self.switch_if_due();
        match self.ring.read() {
            Ok(in_force) => in_force.ring.clone(),
            Err(poisoned) => poisoned.into_inner().ring.clone(),
        }
    }

    fn now(&self) -> SystemTime {
        self.clock.wall()
    }
}

#[cfg(test)]
mod tests;
