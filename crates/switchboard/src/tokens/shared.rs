//! Agents' tokens on PostgreSQL (`agent_tokens`, migration 4), for replicas that share a
//! `[storage] url`: a token created through any replica (the CLI, the console) is accepted by
//! every replica, and a revoked one is refused by every replica within [`STALE_AFTER`].
//!
//! Only salted hashes are stored, as in the token file. Creating and revoking write a row
//! and `NOTIFY switchboard_tokens` in one transaction; every replica's follower reads the
//! live tokens again when notified, and polls every [`POLL`] in case a notification is lost.
//!
//! When the database cannot be read, a replica keeps the tokens of its last successful
//! read for at most [`STALE_AFTER`] (counted from when that read *began*), then refuses
//! every stored token — the config's own `[agents.X] tokens` stay accepted — until a read
//! succeeds again. So a revoked token is never accepted longer than [`STALE_AFTER`] after
//! the revocation committed, whether or not this replica could hear of it. This module never
//! reads or writes the token file (`switchboard token import` copies one in).

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use switchboard_ledger::postgres::Pool;
use tokio::time::Instant;

use super::{StoredToken, TokenStore, combine, pick};

/// The channel changes are announced on.
pub const CHANNEL: &str = "switchboard_tokens";

/// How often a replica reads the tokens when no notification came.
pub const POLL: Duration = Duration::from_millis(250);

/// How long a replica trusts its last successful read: the bound on how long a revoked token
/// can still be accepted anywhere.
pub const STALE_AFTER: Duration = Duration::from_secs(1);

/// How long a read of the tokens may wait for PostgreSQL's answer (the quotas' exchange
/// has the same bound): a stalled connection would otherwise stop the follower for good.
/// Its answer is trusted for [`STALE_AFTER`] from the read's start anyway.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong with the shared tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedTokenError {
    /// The database could not be reached or refused a statement (the URL is never repeated:
    /// it may hold a password).
    #[error("tokens on PostgreSQL: {0}")]
    Postgres(String),
    /// No live token, or more than one, has the id given: the operator's mistake.
    #[error("{0}")]
    NotFound(String),
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> SharedTokenError {
    move |error| {
        SharedTokenError::Postgres(format!(
            "{what}: {}",
            switchboard_ledger::postgres::describe(&error)
        ))
    }
}

/// The token table of a `[storage] url`.
pub struct SharedTokens {
    pool: Pool,
    config: switchboard_ledger::postgres::Target,
}

impl std::fmt::Debug for SharedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTokens").finish_non_exhaustive()
    }
}

impl SharedTokens {
    /// A store on `url` (nothing is connected yet).
    pub fn new(url: &str) -> Result<Self, SharedTokenError> {
        let pool = switchboard_ledger::postgres::pool(url, 2)
            .map_err(|error| SharedTokenError::Postgres(error.to_string()))?;
        let config = switchboard_ledger::postgres::Target::parse(url)
            .map_err(|error| SharedTokenError::Postgres(error.to_string()))?;
        Ok(Self { pool, config })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, SharedTokenError> {
        self.pool
            .get()
            .await
            .map_err(|error| SharedTokenError::Postgres(format!("connect: {error}")))
    }

    /// The tokens not revoked, oldest first; an error when PostgreSQL has not answered
    /// within [`READ_TIMEOUT`] (that connection is then closed, not put back in the pool:
    /// it may be stalled).
    pub async fn live(&self) -> Result<Vec<StoredToken>, SharedTokenError> {
        let client = self.client().await?;
        let read = tokio::time::timeout(
            READ_TIMEOUT,
            client.query(
                "SELECT agent, hash, created FROM agent_tokens WHERE revoked_at IS NULL \
                 ORDER BY created_at, hash",
                &[],
            ),
        )
        .await;
        let Ok(rows) = read else {
            drop(deadpool_postgres::Object::take(client));
            return Err(SharedTokenError::Postgres(format!(
                "read the tokens: no answer within {READ_TIMEOUT:?}; the connection was closed"
            )));
        };
        rows.map_err(pg("read the tokens"))?
            .iter()
            .map(token_of)
            .collect()
    }

    /// Stores `tokens` (those already stored, revoked or not, are left as they are: a revoked
    /// token is never brought back) and announces them; how many were new.
    pub async fn insert(&self, tokens: &[StoredToken]) -> Result<u64, SharedTokenError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        let mut added = 0;
        for token in tokens {
            added += tx
                .execute(
                    "INSERT INTO agent_tokens (hash, id, agent, created) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (hash) DO NOTHING",
                    &[&token.hash, &token.id(), &token.agent, &token.created],
                )
                .await
                .map_err(pg("store a token"))?;
        }
        announce(&tx).await?;
        tx.commit().await.map_err(pg("commit the tokens"))?;
        Ok(added)
    }

    /// Revokes the one live token whose id starts with `id` (at least 4 digits) and returns
    /// it; `by` is recorded (who revoked it).
    pub async fn revoke(
        &self,
        id: &str,
        by: Option<&str>,
    ) -> Result<StoredToken, SharedTokenError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        // Candidates by prefix, locked so two revocations at once decide once.
        let rows = tx
            .query(
                "SELECT agent, hash, created FROM agent_tokens \
                 WHERE revoked_at IS NULL AND starts_with(id, $1) FOR UPDATE",
                &[&id],
            )
            .await
            .map_err(pg("find the token"))?;
        let found = rows
            .iter()
            .map(token_of)
            .collect::<Result<Vec<_>, SharedTokenError>>()?;
        let at = pick(&found, id, "the shared token store").map_err(SharedTokenError::NotFound)?;
        let revoked = found[at].clone();
        tx.execute(
            "UPDATE agent_tokens SET revoked_at = now(), revoked_by = $2 WHERE hash = $1",
            &[&revoked.hash, &by],
        )
        .await
        .map_err(pg("revoke the token"))?;
        announce(&tx).await?;
        tx.commit().await.map_err(pg("commit the revocation"))?;
        Ok(revoked)
    }
}

/// A row of `agent, hash, created`.
fn token_of(row: &tokio_postgres::Row) -> Result<StoredToken, SharedTokenError> {
    Ok(StoredToken {
        agent: row.try_get(0).map_err(pg("read a token"))?,
        hash: row.try_get(1).map_err(pg("read a token"))?,
        created: row.try_get(2).map_err(pg("read a token"))?,
    })
}

async fn announce(tx: &deadpool_postgres::Transaction<'_>) -> Result<(), SharedTokenError> {
    tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])
        .await
        .map_err(pg("announce the change"))?;
    Ok(())
}

/// What a replica accepts now: the tokens of its last successful read and when that read
/// began.
pub(super) struct Snapshot {
    pub(super) read_at: Instant,
    pub(super) store: Arc<TokenStore>,
}

/// The replica's view of the shared tokens, kept fresh by [`follow`].
pub(super) struct View {
    pub(super) snapshot: ArcSwap<Snapshot>,
    /// The config's own tokens: what is accepted once the snapshot is stale.
    pub(super) fixed: Arc<TokenStore>,
}

impl View {
    /// The tokens to accept at `now`: the snapshot's, unless it is older than
    /// [`STALE_AFTER`] (then the config's only).
    pub(super) fn at(&self, now: Instant) -> Arc<TokenStore> {
        let snapshot = self.snapshot.load();
        if now.saturating_duration_since(snapshot.read_at) > STALE_AFTER {
            self.fixed.clone()
        } else {
            snapshot.store.clone()
        }
    }
}

/// Reads the tokens now (an error when the database cannot be read: a gateway should not
/// start with tokens missing) and returns the view, followed by a task (aborted when the view
/// is dropped) for as long as the gateway runs.
pub(super) async fn start(
    store: SharedTokens,
    fixed: Vec<StoredToken>,
    agents: BTreeSet<String>,
) -> Result<(Arc<View>, tokio::task::JoinHandle<()>), SharedTokenError> {
    let read_at = Instant::now();
    let tokens = store.live().await?;
    let view = Arc::new(View {
        snapshot: ArcSwap::from_pointee(Snapshot {
            read_at,
            store: Arc::new(combine(&fixed, &agents, tokens)),
        }),
        fixed: Arc::new(TokenStore::new(fixed.clone())),
    });
    let task = tokio::spawn(follow(
        Arc::new(store),
        Arc::downgrade(&view),
        fixed,
        agents,
    ));
    Ok((view, task))
}

/// Reads the tokens again at every notification and every [`POLL`], until the view is gone.
async fn follow(
    store: Arc<SharedTokens>,
    view: Weak<View>,
    fixed: Vec<StoredToken>,
    agents: BTreeSet<String>,
) {
    let wakeups = crate::live::shared_store::Wakeups::start(store.config.clone(), CHANNEL, POLL);
    let mut failing = false;
    loop {
        wakeups.next().await;
        let Some(view) = view.upgrade() else { break };
        let read_at = Instant::now();
        match store.live().await {
            Ok(tokens) => {
                if failing {
                    tracing::info!("tokens on PostgreSQL: read again");
                }
                failing = false;
                view.snapshot.store(Arc::new(Snapshot {
                    read_at,
                    store: Arc::new(combine(&fixed, &agents, tokens)),
                }));
            }
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(
                    "{error}; the tokens read before are accepted for at most {STALE_AFTER:?} after that read, then only the config's"
                );
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::new_token;
    use switchboard_mcp::front::http::Authenticator;

    #[test]
    fn a_snapshot_is_trusted_for_stale_after_and_then_only_the_config_tokens_are() {
        let (stored, stored_hash) = new_token("qa");
        let (fixed, fixed_hash) = new_token("qa");
        let read_at = Instant::now();
        let agents = BTreeSet::from(["qa".to_owned()]);
        let view = View {
            snapshot: ArcSwap::from_pointee(Snapshot {
                read_at,
                store: Arc::new(combine(
                    std::slice::from_ref(&fixed_hash),
                    &agents,
                    vec![stored_hash],
                )),
            }),
            fixed: Arc::new(TokenStore::new(vec![fixed_hash])),
        };
        for (after, stored_accepted) in [
            (Duration::ZERO, true),
            (POLL, true),
            (STALE_AFTER, true),
            (STALE_AFTER + Duration::from_millis(1), false),
            (STALE_AFTER * 60, false),
        ] {
            let store = view.at(read_at + after);
            assert_eq!(
                store.agent_for(&stored).is_some(),
                stored_accepted,
                "a stored token {after:?} after the read"
            );
            assert_eq!(
                store.agent_for(&fixed).as_deref(),
                Some("qa"),
                "the config's token {after:?} after the read"
            );
        }
        // A read that began before the snapshot's (a clock that went backwards) is not stale.
        assert!(
            view.at(read_at.checked_sub(POLL).unwrap_or(read_at))
                .agent_for(&stored)
                .is_some()
        );
    }
}
