//! Agents' bearer tokens from the console: `POST /console/agents/{agent}/tokens` makes one and
//! shows it this once (only its salted hash is kept, in the token file), and
//! `POST /console/tokens/{id}/revoke` removes one from the token file. A gateway that started
//! with tokens follows the file within a second (`switchboard::tokens::LiveTokens`); one that
//! started without any needs a restart before it asks for tokens at all, and the page says so.
//! With `[storage] url` both work on the tokens in PostgreSQL instead, shared by every replica
//! (`switchboard::tokens::shared`: every replica follows within a second).

use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{Markup, html};
use switchboard::tokens::{SharedTokenError, TokenFile, new_token};

use super::done;
use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::layout;

fn token_file(console: &Console) -> Result<&std::path::Path, ConsoleError> {
    console.shared.token_file.as_deref().ok_or_else(|| {
        ConsoleError::Invalid("this gateway has no token file (gateway.token_file)".to_owned())
    })
}

/// The shared store's error as the console shows it: an unknown id is not found, the
/// database's trouble is a failure to reach the store (shown as is, never the URL).
pub(crate) fn shared_error(error: SharedTokenError) -> ConsoleError {
    match error {
        SharedTokenError::NotFound(why) => ConsoleError::NotFound(why),
        other => ConsoleError::Ledger(other.to_string()),
    }
}

/// Makes a token for `agent` and shows it once.
pub(crate) async fn create(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(agent): Path<String>,
) -> Result<Markup, ConsoleError> {
    let known = console
        .shared
        .host
        .config()
        .is_some_and(|config| config.agents.contains_key(&agent));
    if !known {
        return Err(ConsoleError::NotFound(format!(
            "the configuration defines no agent '{agent}'"
        )));
    }
    let (token, stored) = new_token(&agent);
    let id = stored.id();
    if let Some(store) = &console.shared.shared_tokens {
        store.insert(&[stored]).await.map_err(shared_error)?;
    } else {
        let path = token_file(&console)?;
        TokenFile::update(path, |file| {
            file.tokens.push(stored);
            Ok(())
        })
        .map_err(ConsoleError::Invalid)?;
    }
    tracing::info!(agent, id, operator = %session.operator, "console: token created");
    Ok(layout::page(
        &session,
        "/console/agents",
        &format!("A new token for {agent}"),
        html! {
            p { "Copy it now: it is shown only this once. Its id is " code { (id) } "." }
            pre class="token" { (token) }
            p class="hint" { "A gateway that started with tokens accepts it within a second; one that started without any asks for none until it restarts." }
            p { a href="/console/agents" { "← Back to the agents" } }
        },
    ))
}

/// Revokes the token with this id.
pub(crate) async fn revoke(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ConsoleError> {
    let revoked = if let Some(store) = &console.shared.shared_tokens {
        store
            .revoke(&id, Some(&session.operator))
            .await
            .map_err(shared_error)?
    } else {
        let path = token_file(&console)?;
        let mut unknown = None;
        let revoked = TokenFile::update(path, |file| {
            file.revoke(&id)
                .inspect_err(|why| unknown = Some(why.clone()))
        });
        match (revoked, unknown) {
            (Ok(revoked), _) => revoked,
            (Err(_), Some(why)) => return Err(ConsoleError::NotFound(why)),
            (Err(why), None) => return Err(ConsoleError::Invalid(why)),
        }
    };
    tracing::info!(agent = revoked.agent, id, operator = %session.operator, "console: token revoked");
    Ok(done(&headers, "/console/agents"))
}
