//! The operator's console: server-rendered pages on the gateway's loopback admin listener,
//! under `/console`.
//!
//! Seven pages, each useful on its own: approvals (the first page, live over server-sent
//! events), servers, tools (with a latency chart per tool drawn as SVG here), audit (the
//! ledger in keyset pages, verified with live progress), agents (with their tokens, made and
//! revoked here), and the background work: the server manager's operations and the MCP
//! tasks clients started, each cancellable. The HTML is built with maud at compile time, so every
//! value is escaped by construction; the only script and style are `console.js` and
//! `console.css`, written for this crate and compiled into the binary (no vendored or
//! fetched code, no CDN), served under `/console/static/`.
//!
//! Security (docs/console.md): the admin token is exchanged once — a sign-in form, or a
//! short-lived single-use code minted with the token by `switchboard console` — for a
//! session cookie (`HttpOnly; SameSite=Strict; Path=/console`, a random 256-bit id held
//! here with an expiry); every POST carries the session's CSRF token; every request's `Host`
//! must be a loopback name or the listener's own address and its `Origin`, when present
//! (required on a POST), that same origin (DNS rebinding); every answer carries a CSP of
//! `default-src 'self'; frame-ancestors 'none'` and `X-Content-Type-Options: nosniff`.
//!
//! This crate never changes the gateway by other means than the library's own operations:
//! `PendingApprovals` for decisions, `Host::apply` for servers, the manager's `cancel` and
//! `Host::cancel_task_as_operator` for work, the token file through `switchboard::tokens`
//! (which the running gateway follows); the ledger it only reads.

mod assets;
mod auth;
mod chart;
mod error;
mod export;
mod form;
mod guard;
mod layout;
mod ledger;
mod pages;
mod time;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use switchboard::Host;

pub use chart::{Ceiling, latency_chart};
pub use error::ConsoleError;

/// What the console needs from the gateway that serves it.
#[derive(Clone)]
pub struct ConsoleOptions {
    pub host: Host,
    /// The admin endpoint's bearer token: what signs an operator in.
    pub admin_token: String,
    /// The audit ledger's SQLite file, read for the audit, servers, tools and agents pages
    /// (`None`: those parts say there is no ledger).
    pub ledger: Option<PathBuf>,
    /// The audit ledger on PostgreSQL (`[storage] url`), read instead of `ledger` by the
    /// audit page and the running figures.
    pub postgres: Option<switchboard_ledger::postgres::Pool>,
    /// The token file agents' tokens are kept in, listed on the agents page.
    pub token_file: Option<PathBuf>,
    /// With `[storage] url`: the tokens shared by every replica, kept in PostgreSQL — made,
    /// listed and revoked there instead of the token file.
    pub shared_tokens: Option<Arc<switchboard::tokens::SharedTokens>>,
    /// The address the admin listener is bound to: the only non-loopback-name `Host` taken.
    pub listen: SocketAddr,
    /// Where a trace is viewed, `{trace_id}` in it (`[telemetry] trace_url`): ledger rows
    /// link to their traces.
    pub trace_url: Option<String>,
}

/// The console: its sessions and what it serves. Cheap to clone.
#[derive(Clone)]
pub struct Console {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) host: Host,
    pub(crate) admin_token: String,
    pub(crate) ledger: Option<PathBuf>,
    pub(crate) postgres: Option<switchboard_ledger::postgres::Pool>,
    pub(crate) token_file: Option<PathBuf>,
    pub(crate) shared_tokens: Option<Arc<switchboard::tokens::SharedTokens>>,
    pub(crate) listen: SocketAddr,
    pub(crate) trace_url: Option<String>,
    pub(crate) sessions: auth::Sessions,
    /// The ledger's running figures, brought up to date by each page that shows them.
    pub(crate) tally: std::sync::Mutex<switchboard_ledger::tally::Tally>,
    /// Held while a walk of the whole chain runs: one at a time, however many ask.
    pub(crate) verifying: tokio::sync::Mutex<()>,
}

impl Console {
    /// The console of `options`; on a tokio runtime, its tally of the ledger starts reading
    /// at once, so the first page that needs it does not wait for the whole window.
    pub fn new(options: ConsoleOptions) -> Self {
        let console = Self {
            shared: Arc::new(Shared {
                host: options.host,
                admin_token: options.admin_token,
                ledger: options.ledger,
                postgres: options.postgres,
                token_file: options.token_file,
                shared_tokens: options.shared_tokens,
                listen: options.listen,
                trace_url: options.trace_url,
                sessions: auth::Sessions::default(),
                tally: std::sync::Mutex::default(),
                verifying: tokio::sync::Mutex::new(()),
            }),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let warm = console.clone();
            runtime.spawn(async move {
                if let Err(error) = ledger::tally(&warm, |_| ()).await {
                    tracing::warn!("console: cannot read the ledger: {error}");
                }
            });
        }
        console
    }

    /// Every console route, under `/console`, guarded (hosts, origins, sessions, headers).
    pub fn router(&self) -> Router {
        let pages = Router::new()
            .route("/console", get(pages::home))
            .route("/console/", get(pages::home))
            .route("/console/approvals", get(pages::approvals::page))
            .route("/console/approvals/live", get(pages::approvals::live))
            .route("/console/approvals/{id}", post(pages::approvals::decide))
            .route("/console/grants/revoke", post(pages::approvals::revoke))
            .route("/console/servers", get(pages::servers::page))
            .route("/console/servers/{name}", post(pages::servers::act))
            .route("/console/tools", get(pages::tools::page))
            .route("/console/tools/{name}", get(pages::tools::detail))
            .route("/console/tools/{name}/chart.svg", get(pages::tools::chart))
            .route("/console/audit", get(pages::audit::page))
            .route("/console/audit/export.jsonl", get(pages::audit::export))
            .route("/console/audit/verify", post(pages::audit::verify))
            .route("/console/audit/verify/live", get(pages::audit::verify_live))
            .route("/console/audit/{id}", get(pages::audit::detail))
            .route("/console/agents", get(pages::agents::page))
            .route("/console/operations", get(pages::work::operations))
            .route(
                "/console/operations/{id}/cancel",
                post(pages::work::cancel_operation),
            )
            .route("/console/tasks", get(pages::work::tasks))
            .route("/console/tasks/{id}/cancel", post(pages::work::cancel_task))
            .route(
                "/console/agents/{agent}/tokens",
                post(pages::tokens::create),
            )
            .route("/console/tokens/{id}/revoke", post(pages::tokens::revoke))
            .route("/console/sign-out", post(auth::sign_out))
            .route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                guard::signed_in,
            ));
        Router::new()
            .merge(pages)
            .route("/console/sign-in", get(auth::form).post(auth::sign_in))
            .route("/console/sign-in/{code}", get(auth::redeem))
            .route("/console/codes", post(auth::mint))
            .route("/console/static/{file}", get(assets::serve))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                guard::same_origin,
            ))
            .with_state(self.clone())
    }

    /// Mints a single-use sign-in code (what `POST /console/codes` answers), valid for
    /// [`auth::CODE_LIFETIME`]; `operator` names who signs in with it.
    pub fn mint_code(&self, operator: &str) -> String {
        self.shared.sessions.mint_code(operator)
    }
}
