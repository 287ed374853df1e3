//! `[auth]`: how HTTP callers prove who they are. Static bearer tokens (`mode = "tokens"`, the
//! default: `[agents.X] tokens` and the token file), OAuth 2.1 access tokens (`mode = "oauth"`:
//! JWTs from an authorization server, checked against its JWKS), or both
//! (`mode = ["tokens", "oauth"]`). This module only describes; the checks live in
//! `switchboard-mcp::oauth`.
//!
//! ```toml
//! [auth]
//! mode = "oauth"                          # "tokens" (default) | "oauth" | ["tokens", "oauth"]
//! issuer = "https://login.example.com"    # the `iss` every token must carry, exactly
//! jwks_uri = "https://login.example.com/jwks"   # default: from the issuer's metadata
//! resource = "https://gw.example.com/mcp" # the endpoint's canonical URL (default: from Host)
//! audience = ["https://gw.example.com/mcp"]     # accepted `aud` values (default: resource)
//! algorithms = ["RS256", "ES256"]         # default: RS256..512, PS256..512, ES256, ES384, EdDSA
//! leeway = "60s"                          # clock skew allowed on exp/nbf
//! scopes = ["mcp"]                        # scopes every token needs (403 insufficient_scope)
//! agent_claim = "client_id"               # the claim that names the agent (sub, azp, ...)
//! default_agent = "guest"                 # for identities no agent matches (default: refused)
//! introspection_endpoint = "https://login.example.com/introspect"  # opaque tokens (RFC 7662)
//! client_id = "switchboard"               # the gateway's own credentials there
//! client_secret = "${INTROSPECTION_SECRET}"
//!
//! [auth.identities]                       # claim value → agent, where they differ
//! "3f2c9a" = "planner"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use super::model::SecretString;
use super::transport::check_url;
use super::tree::{Node, Pos, Value};
use super::validate::Walk;

pub(super) const AUTH_KEYS: [&str; 14] = [
    "mode",
    "issuer",
    "jwks_uri",
    "resource",
    "audience",
    "algorithms",
    "leeway",
    "scopes",
    "agent_claim",
    "default_agent",
    "identities",
    "introspection_endpoint",
    "client_id",
    "client_secret",
];

/// The signature algorithms accepted by default: asymmetric only, so a token can never be
/// signed with a key the gateway publishes (the HS256-with-the-public-key attack).
pub const DEFAULT_ALGORITHMS: [&str; 10] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "Ed25519",
];

/// How HTTP callers authenticate.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// Static bearer tokens are accepted (`mode` names "tokens"; the default).
    pub tokens: bool,
    /// OAuth access tokens are accepted, checked as this says.
    pub oauth: Option<OAuthConfig>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            tokens: true,
            oauth: None,
        }
    }
}

/// The OAuth 2.1 resource server's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier; `iss` must equal it.
    pub issuer: String,
    /// Where its keys are; `None`: from its metadata document.
    pub jwks_uri: Option<String>,
    /// The canonical URL of the `/mcp` endpoint; `None`: `http://<Host>/mcp` per request.
    pub resource: Option<String>,
    /// Accepted `aud` values; empty: the endpoint's resource URL.
    pub audience: Vec<String>,
    /// Accepted `alg` values.
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
    /// The claim whose value names the agent.
    pub agent_claim: String,
    /// Claim value → agent name, where they differ.
    pub identities: BTreeMap<String, String>,
    /// The agent of identities that name none; `None`: they are refused.
    pub default_agent: Option<String>,
    /// Where tokens that are not JWTs are asked about (RFC 7662), if anywhere.
    pub introspection: Option<Introspection>,
}

/// An RFC 7662 introspection endpoint and the gateway's credentials there (HTTP Basic).
#[derive(Debug, Clone, PartialEq)]
pub struct Introspection {
    pub endpoint: String,
    pub client_id: String,
    pub client_secret: SecretString,
}

impl OAuthConfig {
    fn new(issuer: String) -> Self {
        Self {
            issuer,
            jwks_uri: None,
            resource: None,
            audience: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.iter().map(|&a| a.to_owned()).collect(),
            leeway: Duration::from_secs(60),
            scopes: Vec::new(),
            agent_claim: "client_id".to_owned(),
            identities: BTreeMap::new(),
            default_agent: None,
            introspection: None,
        }
    }
}

/// Every algorithm name the validator knows (HS* deliberately absent: a shared secret has no
/// place at a resource server that reads a public JWKS).
const KNOWN_ALGORITHMS: [&str; 10] = DEFAULT_ALGORITHMS;

impl Walk<'_> {
    pub(super) fn auth(&mut self, node: &Node) -> AuthConfig {
        let mut auth = AuthConfig::default();
        let mut oauth = OAuthConfig::new(String::new());
        let mut wants_oauth = false;
        let mut issuer_seen = false;
        let (mut endpoint, mut client_id, mut client_secret) = (None, None, None);
        // The first OAuth key written, to point at when the mode leaves OAuth off.
        let mut first_oauth_key = None;
        for (key, key_pos, value) in self.table(node, "auth") {
            let what = format!("auth.{key}");
            if key != "mode" && AUTH_KEYS.contains(&key.as_str()) {
                first_oauth_key = first_oauth_key.or(Some((*key_pos, key.clone())));
            }
            match key.as_str() {
                "mode" => {
                    if let Some((tokens, with_oauth)) = self.auth_mode(value, &what) {
                        auth.tokens = tokens;
                        wants_oauth = with_oauth;
                    }
                }
                "issuer" => {
                    issuer_seen = true;
                    if let Some(url) = self.fetched_url(value, &what) {
                        oauth.issuer = url;
                    }
                }
                "jwks_uri" => oauth.jwks_uri = self.fetched_url(value, &what),
                "resource" => oauth.resource = self.auth_url(value, &what),
                "audience" => {
                    oauth.audience = match &value.value {
                        Value::Array(_) => self.strings(value, &what),
                        _ => self.string(value, &what).into_iter().collect(),
                    }
                }
                "algorithms" => oauth.algorithms = self.algorithms(value, &what),
                "leeway" => {
                    if let Some(leeway) = self.duration(value, &what) {
                        oauth.leeway = leeway;
                    }
                }
                "scopes" => oauth.scopes = self.strings(value, &what),
                "agent_claim" => {
                    if let Some(claim) = self.string(value, &what) {
                        oauth.agent_claim = claim;
                    }
                }
                "default_agent" => oauth.default_agent = self.string(value, &what),
                "identities" => oauth.identities = self.string_map(value, &what),
                "introspection_endpoint" => {
                    endpoint = Some((value.pos, self.fetched_url(value, &what)));
                }
                "client_id" => client_id = Some((value.pos, self.string(value, &what))),
                "client_secret" => client_secret = Some((value.pos, self.string(value, &what))),
                other => self.unknown(*key_pos, other, "[auth]", &AUTH_KEYS),
            }
        }
        oauth.introspection = self.introspection(node.pos, endpoint, client_id, client_secret);
        if let (false, Some((pos, key))) = (wants_oauth, first_oauth_key) {
            // Silently ignoring them could leave an endpoint the operator believes protected
            // open to anyone.
            self.problem(
                pos,
                format!("[auth] {key} is an OAuth setting, but mode does not include \"oauth\""),
                Some("add mode = \"oauth\" (or [\"tokens\", \"oauth\"])".to_owned()),
            );
        }
        if wants_oauth {
            if !issuer_seen {
                self.problem(
                    node.pos,
                    "[auth] mode \"oauth\" needs an issuer",
                    Some("e.g. issuer = \"https://login.example.com\"".to_owned()),
                );
            }
            auth.oauth = Some(oauth);
        }
        auth
    }

    /// The three introspection keys, all or none.
    fn introspection(
        &mut self,
        section: Pos,
        endpoint: Option<(Pos, Option<String>)>,
        client_id: Option<(Pos, Option<String>)>,
        client_secret: Option<(Pos, Option<String>)>,
    ) -> Option<Introspection> {
        let given = [&endpoint, &client_id, &client_secret];
        if given.iter().all(|key| key.is_none()) {
            return None;
        }
        if given.iter().any(|key| key.is_none()) {
            let pos = given
                .iter()
                .find_map(|key| key.as_ref().map(|(pos, _)| *pos));
            self.problem(
                pos.unwrap_or(section),
                "[auth] introspection needs introspection_endpoint, client_id and client_secret together",
                Some("client_secret = \"${INTROSPECTION_SECRET}\" keeps the secret out of the file".to_owned()),
            );
            return None;
        }
        Some(Introspection {
            endpoint: endpoint?.1?,
            client_id: client_id?.1?,
            client_secret: SecretString(client_secret?.1?),
        })
    }

    /// `"tokens"`, `"oauth"` or an array of them → (tokens, oauth).
    fn auth_mode(&mut self, node: &Node, what: &str) -> Option<(bool, bool)> {
        let items: Vec<&Node> = match &node.value {
            Value::Array(items) => items.iter().collect(),
            _ => vec![node],
        };
        let (mut tokens, mut oauth, mut bad) = (false, false, false);
        for item in items {
            match self.string(item, what).as_deref() {
                Some("tokens") => tokens = true,
                Some("oauth") => oauth = true,
                Some(other) => {
                    bad = true;
                    self.problem(
                        item.pos,
                        format!("{what}: unknown mode '{other}'"),
                        Some("use \"tokens\", \"oauth\" or [\"tokens\", \"oauth\"]".to_owned()),
                    );
                }
                None => bad = true,
            }
        }
        if tokens || oauth {
            Some((tokens, oauth))
        } else if bad {
            None
        } else {
            self.problem(
                node.pos,
                format!("{what} names no mode"),
                Some("use \"tokens\", \"oauth\" or [\"tokens\", \"oauth\"]".to_owned()),
            );
            None
        }
    }

    fn auth_url(&mut self, node: &Node, what: &str) -> Option<String> {
        let url = self.string(node, what)?;
        match check_url(&url) {
            Ok(()) => Some(url),
            Err(message) => {
                let url = super::redacted_url(&url);
                self.problem(node.pos, format!("{what} '{url}' {message}"), None);
                None
            }
        }
    }

    /// A URL the gateway fetches keys, metadata or introspection answers from: `https://`,
    /// or `http://` on loopback only — over plain HTTP anyone on the path could hand the
    /// gateway signing keys of their own.
    pub(super) fn fetched_url(&mut self, node: &Node, what: &str) -> Option<String> {
        let url = self.auth_url(node, what)?;
        let Some(authority) = plain_http_off_loopback(&url) else {
            return Some(url);
        };
        self.problem(
            node.pos,
            format!(
                "{what} '{}' must use https:// (plain http:// only on loopback)",
                super::redacted_url(&url)
            ),
            Some(format!("e.g. \"https://{authority}\"")),
        );
        None
    }

    fn algorithms(&mut self, node: &Node, what: &str) -> Vec<String> {
        let mut accepted = Vec::new();
        let items: Vec<(Pos, Option<String>)> = match &node.value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| (item.pos, self.string(item, &format!("{what}[{i}]"))))
                .collect(),
            _ => vec![(node.pos, self.string(node, what))],
        };
        for (pos, name) in items {
            let Some(name) = name else { continue };
            if KNOWN_ALGORITHMS.contains(&name.as_str()) {
                accepted.push(name);
            } else if name.starts_with("HS") || name.eq_ignore_ascii_case("none") {
                self.problem(
                    pos,
                    format!("{what}: '{name}' is not accepted"),
                    Some(
                        "a resource server checks tokens with the issuer's public keys: \
                         symmetric (HS*) and unsigned (none) tokens are refused"
                            .to_owned(),
                    ),
                );
            } else {
                let hint = super::suggest::hint(&name, &KNOWN_ALGORITHMS, "known algorithms");
                self.problem(
                    pos,
                    format!("{what}: unknown algorithm '{name}'"),
                    Some(hint),
                );
            }
        }
        if accepted.is_empty() {
            self.problem(node.pos, format!("{what} accepts no algorithm"), None);
        }
        accepted
    }

    /// `[agents.X.scopes]` narrows what OAuth tokens open: without OAuth on, it would
    /// narrow nothing while looking as if it did.
    pub(super) fn check_scopes_need_oauth(&mut self, auth: &AuthConfig, agents: &Node) {
        if auth.oauth.is_some() {
            return;
        }
        let Value::Table(entries) = &agents.value else {
            return;
        };
        for (name, _, agent) in entries {
            if let Some(scopes) = agent.get("scopes") {
                self.problem(
                    scopes.pos,
                    format!("agents.{name}.scopes gates tools by OAuth scope, but [auth] mode does not include \"oauth\""),
                    Some("set [auth] mode = \"oauth\" (or [\"tokens\", \"oauth\"]) with its issuer, or remove the scopes".to_owned()),
                );
            }
        }
    }

    /// The agents `[auth]` names must exist, when agents are configured.
    pub(super) fn check_auth_agents(
        &mut self,
        auth: &AuthConfig,
        agents: &BTreeMap<String, super::model::AgentConfig>,
        pos: Pos,
    ) {
        let Some(oauth) = &auth.oauth else { return };
        if agents.is_empty() {
            return;
        }
        let named = oauth.identities.values().chain(oauth.default_agent.iter());
        let missing: Vec<String> = named
            .filter(|agent| !agents.contains_key(*agent))
            .cloned()
            .collect();
        for agent in missing {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            let hint = super::suggest::hint(&agent, &known, "agents");
            self.problem(
                pos,
                format!("[auth] names agent '{agent}', which [agents] does not define"),
                Some(hint),
            );
        }
    }
}

/// The authority of `url` when it is plain `http://` to a host off loopback, which no URL the
/// gateway fetches keys, metadata or introspection answers from may be (configured or
/// discovered): over plain HTTP anyone on the path could hand the gateway signing keys of
/// their own. `None`: not plain HTTP, or to loopback.
pub fn plain_http_off_loopback(url: &str) -> Option<&str> {
    let rest = url
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .and_then(|_| url.get(7..))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host),
    };
    (!crate::loopback::is_loopback_host(host)).then_some(authority)
}
