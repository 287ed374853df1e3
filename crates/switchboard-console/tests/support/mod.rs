//! Shared by the console's tests: a real gateway (a Host from a config file, with the
//! `switchboard-fixture` echo server over stdio and a real ledger) with the console served
//! on 127.0.0.1, and a browser-like client that signs in, keeps its cookie and reads the
//! CSRF token off the page.

#![allow(dead_code)]

pub mod webdriver;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{COOKIE, HOST, ORIGIN, SET_COOKIE};
use reqwest::redirect::Policy;
use serde_json::{Map, Value, json};
use switchboard::Host;
use switchboard_console::{Console, ConsoleOptions};
use switchboard_core::CallContext;
use switchboard_core::config::{Config, GatewayEnvironment};
use switchboard_ledger::Ledger;

pub const ADMIN_TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The fixture servers' binary, built with the workspace's binaries.
pub fn fixture() -> PathBuf {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .expect("the test's directory");
    let path = dir.join("switchboard-fixture");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// A TOML string literal.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("string")
}

/// A gateway with the console on a port of its own.
pub struct Gateway {
    pub host: Host,
    pub console: Console,
    pub ledger: Ledger,
    pub url: String,
    pub addr: SocketAddr,
    pub config: PathBuf,
    pub dir: tempfile::TempDir,
    /// The PostgreSQL the ledger is on, for [`Gateway::start_on_postgres`].
    pub postgres: Option<switchboard_testkit::postgres::Postgres>,
}

/// The config: agent `qa` asks before destructive calls (`fx__add` declares no hints;
/// `fx__fail` is auto-approved),
/// `npc` sees only `fx__echo`; the default tiers (fast 500 ms, standard 1.5 s, deep 4 s).
pub fn config_text(fixture: &Path, token_file: &Path) -> String {
    format!(
        "[gateway]\napproval_timeout = \"30s\"\ntoken_file = {token_file}\n\n\
         [agents.qa]\napproval = \"destructive\"\nauto_approve = [\"fx__fail\"]\n\n\
         [agents.npc]\nallow = [\"fx__echo\"]\n\n\
         [servers.fx]\ncommand = {fixture}\nargs = [\"echo\"]\n",
        fixture = quoted(&fixture.display().to_string()),
        token_file = quoted(&token_file.display().to_string()),
    )
}

impl Gateway {
    pub async fn start() -> Self {
        Self::start_with(None, switchboard::HostOptions::default()).await
    }

    /// A gateway whose Host starts from `options` (the recorder is the test's ledger): a
    /// replica given its shared parts (the event bus, the tasks on Redis).
    pub async fn start_with_options(options: switchboard::HostOptions) -> Self {
        Self::start_with(None, options).await
    }

    /// A gateway whose ledger is on a PostgreSQL of its own (`[storage] url`), migrated,
    /// and a console that reads the audit there.
    pub async fn start_on_postgres() -> Self {
        let postgres =
            switchboard_testkit::postgres::Postgres::start().unwrap_or_else(|e| panic!("{e}"));
        let pool = switchboard_ledger::postgres::pool(&postgres.url(), 2).expect("pool");
        let mut client = switchboard_ledger::postgres::connect(&pool)
            .await
            .expect("connect");
        switchboard_ledger::postgres::migrate::migrate(&mut client)
            .await
            .expect("migrate");
        Self::start_with(Some((postgres, pool)), switchboard::HostOptions::default()).await
    }

    async fn start_with(
        postgres: Option<(
            switchboard_testkit::postgres::Postgres,
            switchboard_ledger::postgres::Pool,
        )>,
        options: switchboard::HostOptions,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("switchboard.toml");
        let token_file = dir.path().join("tokens.json");
        let mut text = config_text(&fixture(), &token_file);
        if let Some((server, _)) = &postgres {
            text += &format!("\n[storage]\nurl = {}\n", quoted(&server.url()));
        }
        std::fs::write(&config_path, text).expect("config");
        let config = Config::load(&config_path, &GatewayEnvironment::new()).expect("valid config");
        let ledger = match &postgres {
            Some((server, _)) => {
                Ledger::open_postgres(&server.url(), &dir.path().join("pg-ledger"))
                    .expect("ledger on PostgreSQL")
            }
            None => Ledger::open(&dir.path().join("ledger.db")).expect("ledger"),
        };
        let options = switchboard::HostOptions {
            recorder: Arc::new(ledger.clone()),
            ..options
        };
        let host = Host::from_config_with(&config, options).expect("host");
        host.ready().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let console = Console::new(ConsoleOptions {
            host: host.clone(),
            admin_token: ADMIN_TOKEN.to_owned(),
            ledger: postgres.is_none().then(|| ledger.path().to_owned()),
            postgres: postgres.as_ref().map(|(_, pool)| pool.clone()),
            token_file: Some(token_file),
            shared_tokens: postgres.as_ref().map(|(server, _)| {
                Arc::new(switchboard::tokens::SharedTokens::new(&server.url()).expect("tokens"))
            }),
            listen: addr,
            trace_url: None,
        });
        let router = console.router();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            host,
            console,
            ledger,
            url: format!("http://{addr}"),
            addr,
            config: config_path,
            dir,
            postgres: postgres.map(|(server, _)| server),
        }
    }

    /// Calls `tool` as `agent` through the pipeline; the result's text.
    pub async fn call(&self, agent: &str, tool: &str, arguments: Value) -> (bool, String) {
        let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
        let outcome = self
            .host
            .call(&CallContext::default().with_agent(agent), tool, arguments)
            .await
            .expect("the call reached the pipeline");
        (outcome.is_error, outcome.text_content())
    }

    /// The id of the first call waiting for an operator, once there is one.
    pub async fn first_waiting(&self) -> String {
        let pending = self.host.pending_approvals().expect("approvals are set up");
        until(Duration::from_secs(10), || {
            pending.list().first().map(|waiting| waiting.id.clone())
        })
        .await
    }

    /// Waits until the writer has put every recorded row in the database.
    pub fn flush(&self) {
        self.ledger.flush();
    }

    /// A client that is not signed in.
    pub fn client(&self) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(Policy::none())
                .timeout(Duration::from_secs(20))
                .build()
                .expect("client"),
            base: self.url.clone(),
            cookie: None,
            csrf: None,
        }
    }

    /// A client signed in as `alice` with the sign-in form.
    pub async fn signed_in(&self) -> Browser {
        let mut browser = self.client();
        let answer = browser
            .post_form_unchecked(
                "/console/sign-in",
                &[("token", ADMIN_TOKEN), ("operator", "alice")],
            )
            .await;
        assert_eq!(answer.status(), 303, "signed in");
        browser.take_cookie(&answer);
        browser.load_csrf().await;
        browser
    }
}

/// A client that behaves as the console's page does: its cookie, its origin, its CSRF token.
pub struct Browser {
    pub http: reqwest::Client,
    pub base: String,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
}

/// The `content` of `<meta name="csrf-token">`.
pub fn csrf_of(page: &str) -> Option<String> {
    let at = page.find("name=\"csrf-token\" content=\"")? + "name=\"csrf-token\" content=\"".len();
    Some(page[at..].split('"').next()?.to_owned())
}

impl Browser {
    pub fn take_cookie(&mut self, answer: &reqwest::Response) {
        let set = answer
            .headers()
            .get(SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .expect("a session cookie");
        self.cookie = Some(set.split(';').next().expect("pair").to_owned());
    }

    pub async fn load_csrf(&mut self) {
        let page = self.page("/console/approvals").await;
        self.csrf = Some(csrf_of(&page).expect("the page carries a CSRF token"));
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie);
        }
        request
    }

    /// The status a GET of `path` is answered with.
    pub async fn status_of(&self, path: &str) -> reqwest::StatusCode {
        self.get(path).send().await.expect("GET").status()
    }

    /// A page's HTML, which must be answered 200.
    pub async fn page(&self, path: &str) -> String {
        let answer = self.get(path).send().await.expect("GET");
        let status = answer.status();
        let text = answer.text().await.expect("body");
        assert_eq!(status, 200, "GET {path}: {text}");
        text
    }

    /// A POST as the console's own page sends it (its Origin), without adding a token.
    pub async fn post_form_unchecked(
        &self,
        path: &str,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header(ORIGIN, &self.base)
            .form(fields);
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie);
        }
        request.send().await.expect("POST")
    }

    /// A POST of a console form, with the session's CSRF token.
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let csrf = self.csrf.clone().expect("signed in");
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("_csrf", &csrf));
        self.post_form_unchecked(path, &all).await
    }

    /// Answers the waiting call `id` with the approvals page's form.
    pub async fn answer(&self, id: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        self.post_form(&format!("/console/approvals/{id}"), fields)
            .await
    }

    /// A request naming another `Host` (as a DNS-rebinding page would).
    pub fn get_as_host(&self, path: &str, host: &str) -> reqwest::RequestBuilder {
        self.get(path).header(HOST, host)
    }
}

/// Waits for `check` to give a value, at most `limit` (polling every 20 ms).
pub async fn until<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn args(value: Value) -> Value {
    value
}

pub fn add_args() -> Value {
    json!({"a": 2, "b": 3})
}
