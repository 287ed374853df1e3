//! Bearer tokens of agents, stored as salted SHA-256 hashes (`sha256$<salt>$<hash>`), in the
//! config (`[agents.X] tokens = [...]`) or in a token file that `switchboard token create`
//! appends to and `switchboard token revoke` (or the console) removes from. A token is shown
//! once, when it is created; only its hash is kept, named by an id (the first digits of its
//! salt). [`LiveTokens`] keeps a running gateway in step with the token file, or, with
//! `[storage] url`, with the token table every replica shares ([`shared`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;

use serde::{Deserialize, Serialize};

use crate::followed_file::FollowedFile;

pub mod shared;
use sha2::{Digest, Sha256};
pub use shared::{SharedTokenError, SharedTokens};
use switchboard_mcp::front::http::Authenticator;

/// One stored token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredToken {
    pub agent: String,
    /// `sha256$<salt hex>$<hash hex>`.
    pub hash: String,
    /// When it was created (RFC 3339), for operators.
    #[serde(default)]
    pub created: Option<String>,
}

impl StoredToken {
    /// The token's name for operators: the first 12 hex digits of its salt (not secret,
    /// and says nothing of the token).
    pub fn id(&self) -> String {
        token_id(&self.hash)
    }
}

/// The id of a stored hash (see [`StoredToken::id`]).
pub fn token_id(hash: &str) -> String {
    hash.split('$')
        .nth(1)
        .unwrap_or("")
        .chars()
        .take(12)
        .collect()
}

/// The tokens the config itself holds (`[agents.X] tokens`).
pub fn config_tokens(config: &switchboard_core::config::Config) -> Vec<StoredToken> {
    config
        .agents
        .iter()
        .flat_map(|(agent, settings)| {
            settings.tokens.iter().map(|hash| StoredToken {
                agent: agent.clone(),
                hash: hash.clone(),
                created: None,
            })
        })
        .collect()
}

/// The token file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenFile {
    pub tokens: Vec<StoredToken>,
}

/// Every token the gateway accepts.
#[derive(Debug, Clone, Default)]
pub struct TokenStore {
    tokens: Vec<StoredToken>,
}

use switchboard_core::hex::encode as hex;

fn digest(salt: &str, token: &str) -> String {
    hex(&Sha256::new()
        .chain_update(salt.as_bytes())
        .chain_update(token.as_bytes())
        .finalize())
}

/// A new token and its stored form.
pub fn new_token(agent: &str) -> (String, StoredToken) {
    let token = format!(
        "sbt_{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let salt = format!("{:032x}", rand::random::<u128>());
    let stored = StoredToken {
        agent: agent.to_owned(),
        hash: format!("sha256${salt}${}", digest(&salt, &token)),
        created: Some(humantime_now()),
    };
    (token, stored)
}

fn humantime_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("unix:{now}")
}

/// Whether `token` matches a stored `sha256$salt$hash`.
pub fn matches(stored: &str, token: &str) -> bool {
    let mut parts = stored.split('$');
    let (Some("sha256"), Some(salt), Some(hash), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    // Hex digits in either case (a hand-written config may carry upper case); `digest`
    // writes lower case.
    same_secret(&digest(salt, token), &hash.to_ascii_lowercase())
}

/// Whether two secrets are equal, in a time that does not depend on where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Whether text is a stored token's form (the config validator's rule).
pub use switchboard_core::config::is_token_hash as is_stored_form;

impl TokenFile {
    /// Reads a token file; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|error| format!("token file {} is not valid: {error}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(format!(
                "cannot read token file {}: {error}",
                path.display()
            )),
        }
    }

    /// Writes the file, readable by its owner only.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        crate::private_file::write(path, text.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    }

    /// Loads the file at `path`, lets `change` change it, and writes it back, all under the
    /// file's lock: a token created or revoked at the same moment by another writer (the CLI,
    /// the console) is never lost, nor a revoked one brought back. `change`'s error leaves the
    /// file as it was.
    pub fn update<T>(
        path: &Path,
        change: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        crate::private_file::locked(path, || {
            let mut file = Self::load(path)?;
            let changed = change(&mut file)?;
            file.save(path)?;
            Ok(changed)
        })
        .map_err(|error| format!("cannot lock {}: {error}", path.display()))?
    }

    /// Removes the one token whose id starts with `id` (at least 4 digits), and returns it.
    pub fn revoke(&mut self, id: &str) -> Result<StoredToken, String> {
        let at = pick(&self.tokens, id, "the token file")?;
        Ok(self.tokens.remove(at))
    }
}

/// Where in `tokens` the one token is whose id starts with `id` (at least 4 digits); an
/// error naming `kept` (where they are kept) when none or several are.
pub(crate) fn pick(tokens: &[StoredToken], id: &str, kept: &str) -> Result<usize, String> {
    if id.len() < 4 {
        return Err(format!(
            "'{id}' is too short to name a token: give at least 4 digits of its id"
        ));
    }
    let found: Vec<usize> = (0..tokens.len())
        .filter(|at| tokens[*at].id().starts_with(id))
        .collect();
    match found.as_slice() {
        [at] => Ok(*at),
        [] => Err(format!("no token in {kept} has an id starting '{id}'")),
        _ => Err(format!(
            "{} tokens have ids starting '{id}': give more digits",
            found.len()
        )),
    }
}

impl TokenStore {
    pub fn new(tokens: Vec<StoredToken>) -> Self {
        Self { tokens }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Authenticator for TokenStore {
    fn agent_for(&self, token: &str) -> Option<String> {
        self.tokens
            .iter()
            .find(|stored| matches(&stored.hash, token))
            .map(|stored| stored.agent.clone())
    }
}

/// How often a running gateway looks whether the token file changed.
pub use crate::followed_file::RECHECK;

/// The tokens a running gateway accepts, in step with the token file: at most every
/// [`RECHECK`] the file's change time, size and inode are looked at, and a changed file is
/// read again — a token created or revoked (`switchboard token`, the console) takes effect
/// within a second, without a restart. The config's own tokens stay as the gateway started
/// with them. A file that cannot be read or parsed keeps the tokens last read (and says why
/// in the log); tokens of agents the config does not define are ignored.
pub struct LiveTokens {
    fixed: Vec<StoredToken>,
    file: Option<FollowedFile>,
    agents: BTreeSet<String>,
    store: ArcSwap<TokenStore>,
    /// With `[storage] url`: the shared tokens, in place of the file.
    shared: Option<SharedFollow>,
}

/// The shared tokens' view and the task that keeps it fresh (stopped with it).
struct SharedFollow {
    view: Arc<shared::View>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SharedFollow {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for LiveTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTokens")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl LiveTokens {
    /// The config's tokens (`fixed`) and those of `file` for `agents`; an error when the
    /// file exists and cannot be read (a gateway should not start with tokens missing).
    pub fn load(
        fixed: Vec<StoredToken>,
        file: Option<PathBuf>,
        agents: BTreeSet<String>,
    ) -> Result<Self, String> {
        let followed = file
            .as_deref()
            .map(|path| FollowedFile::new(path, tokio::time::Instant::now()));
        let from_file = match &file {
            Some(path) => TokenFile::load(path)?.tokens,
            None => Vec::new(),
        };
        let live = Self {
            store: ArcSwap::from_pointee(TokenStore::new(Vec::new())),
            fixed,
            file: followed,
            agents,
            shared: None,
        };
        live.store.store(Arc::new(live.combined(from_file)));
        Ok(live)
    }

    /// The config's tokens (`fixed`) and the live ones of the shared `store` for `agents`,
    /// read now (an error when the database cannot be read) and followed from then on (see
    /// [`shared`]: a revoked token is refused within [`shared::STALE_AFTER`]). Needs a
    /// tokio runtime; the follower stops when this is dropped.
    pub async fn shared(
        fixed: Vec<StoredToken>,
        store: SharedTokens,
        agents: BTreeSet<String>,
    ) -> Result<Self, SharedTokenError> {
        let (view, task) = shared::start(store, fixed.clone(), agents.clone()).await?;
        Ok(Self {
            store: ArcSwap::from_pointee(TokenStore::new(Vec::new())),
            fixed,
            file: None,
            agents,
            shared: Some(SharedFollow { view, task }),
        })
    }

    /// The tokens accepted now.
    pub fn current(&self) -> Arc<TokenStore> {
        if let Some(shared) = &self.shared {
            return shared.view.at(tokio::time::Instant::now());
        }
        self.refresh();
        self.store.load_full()
    }

    /// Reads the file again if it changed and the last look is [`RECHECK`] old. Whoever
    /// finds another caller looking goes on with the tokens as they are.
    fn refresh(&self) {
        let Some(file) = &self.file else { return };
        file.reread(tokio::time::Instant::now(), |path| {
            match TokenFile::load(path) {
                Ok(read) => {
                    self.store.store(Arc::new(self.combined(read.tokens)));
                    tracing::info!("token file {} changed: tokens read again", path.display());
                    Ok(())
                }
                Err(error) => {
                    tracing::warn!("{error}; the tokens read before stay in force");
                    Err(())
                }
            }
        });
    }

    fn combined(&self, from_file: Vec<StoredToken>) -> TokenStore {
        // The file is read only when it changed: worth a warning each time.
        for token in from_file.iter().filter(|t| !self.agents.contains(&t.agent)) {
            tracing::warn!(
                "ignoring a token of agent '{}', which the config does not define",
                token.agent
            );
        }
        combine(&self.fixed, &self.agents, from_file)
    }
}

/// The config's tokens and those `stored` (in the file or the database) of known `agents`
/// (the shared tokens are read every few hundred milliseconds: the others are only
/// debug-logged here).
fn combine(
    fixed: &[StoredToken],
    agents: &BTreeSet<String>,
    stored: Vec<StoredToken>,
) -> TokenStore {
    let mut tokens = fixed.to_vec();
    for token in stored {
        if agents.contains(&token.agent) {
            tokens.push(token);
        } else {
            tracing::debug!(
                "ignoring a token of agent '{}', which the config does not define",
                token.agent
            );
        }
    }
    TokenStore::new(tokens)
}

impl Authenticator for LiveTokens {
    fn agent_for(&self, token: &str) -> Option<String> {
        self.current().agent_for(token)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_token_is_revoked_by_a_unique_prefix_of_its_id() {
        let (_, first) = new_token("a");
        let (_, second) = new_token("b");
        let mut file = TokenFile {
            tokens: vec![first.clone(), second.clone()],
        };
        assert!(file.revoke("ab").is_err_and(|e| e.contains("too short")));
        assert!(file.revoke("zzzz").is_err_and(|e| e.contains("no token")));
        let revoked = file.revoke(&first.id()[..6]).expect("revoked");
        assert_eq!(revoked, first);
        assert_eq!(file.tokens, [second]);
    }

    #[test]
    fn live_tokens_follow_the_token_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.json");
        let (kept, kept_stored) = new_token("npc");
        let (stranger, stranger_stored) = new_token("ghost");
        TokenFile {
            tokens: vec![kept_stored.clone(), stranger_stored],
        }
        .save(&path)
        .expect("save");
        let agents = BTreeSet::from(["npc".to_owned()]);
        let live = LiveTokens::load(Vec::new(), Some(path.clone()), agents).expect("load");
        assert_eq!(live.agent_for(&kept).as_deref(), Some("npc"));
        assert_eq!(
            live.agent_for(&stranger),
            None,
            "not an agent of the config"
        );
        let (added, added_stored) = new_token("npc");
        let mut file = TokenFile::load(&path).expect("load");
        file.revoke(&kept_stored.id()).expect("revoke");
        file.tokens.push(added_stored);
        file.save(&path).expect("save");
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert_eq!(live.agent_for(&kept), None, "revoked");
        assert_eq!(live.agent_for(&added).as_deref(), Some("npc"), "created");
        std::fs::write(&path, "not json").expect("write");
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert_eq!(
            live.agent_for(&added).as_deref(),
            Some("npc"),
            "a broken file keeps the tokens read before"
        );
    }

    #[test]
    fn tokens_match_only_their_salted_hash() {
        let (token, stored) = new_token("npc");
        assert!(token.starts_with("sbt_") && token.len() == 68);
        assert!(is_stored_form(&stored.hash), "{}", stored.hash);
        assert!(!stored.hash.contains(&token), "only the hash is kept");
        let store = TokenStore::new(vec![stored.clone()]);
        assert_eq!(store.agent_for(&token).as_deref(), Some("npc"));
        assert_eq!(store.agent_for("sbt_wrong"), None);
        assert!(!matches("sha256$x", &token) && !matches("md5$a$b", &token));
        let (other, _) = new_token("npc");
        assert_ne!(token, other);
        // The hex digits of a hand-written hash may be upper case.
        let (salt, hash) = stored.hash["sha256$".len()..]
            .split_once('$')
            .expect("salt and hash");
        let upper = format!("sha256${salt}${}", hash.to_ascii_uppercase());
        assert!(switchboard_core::config::is_token_hash(&upper) && matches(&upper, &token));
    }
}
