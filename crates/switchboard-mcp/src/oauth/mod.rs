//! The OAuth 2.1 resource server: an access token (a JWT) turned into the agent it acts for.
//!
//! [`OAuthVerifier::verify`] parses the token ([`jwt`]), finds its key in the issuer's JWK set
//! ([`keys`]: cached, fetched again on an unknown `kid` at most every [`keys::REFETCH_EVERY`]),
//! checks the signature with an algorithm from the allow-list, then the claims ([`claims`]).
//! A token whose signature verified is remembered by its SHA-256 ([`cache`], until its `exp`,
//! at most a minute), so the next call with it only checks the claims again.
//! A token that is not a JWT goes, when `[auth]` names one, to the introspection endpoint
//! ([`introspect`]), and its answer is checked like a JWT's claims.
//! Each refusal is a [`TokenError`], which the HTTP front turns into 401 `invalid_token` or
//! 403 `insufficient_scope` (`front::http::guard`).
//!
//! Must never: accept a token without checking its signature, accept an algorithm outside the
//! configured list, log or keep a token, or send a token anywhere.

mod cache;
mod claims;
mod introspect;
pub(crate) use introspect::{client_basic, form_escape};
mod jwt;
mod keys;

use std::collections::BTreeSet;
use std::sync::Arc;

use switchboard_core::clock::Clock;
use switchboard_core::config::OAuthConfig;

/// Who a valid token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The agent the call runs as.
    pub agent: String,
    /// `sub`: the user (or client) the token was issued for.
    pub subject: Option<String>,
    /// `client_id` (or `azp`): the OAuth client that holds it.
    pub client_id: Option<String>,
    /// The scopes it carries.
    pub scopes: Vec<String>,
}

/// Why a token was refused. Every variant but [`TokenError::InsufficientScope`] and
/// [`TokenError::NoIdentity`] means "get a new token" (401); those two mean the token is fine
/// but not enough (403).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    #[error("the token is malformed: {0}")]
    Malformed(&'static str),
    #[error("the token's algorithm '{0}' is not accepted")]
    Algorithm(String),
    #[error("the token's signing key is unknown")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token was not issued by the configured issuer")]
    WrongIssuer,
    #[error("the token is not for this resource (aud)")]
    WrongAudience,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token's typ '{0}' is not an access token's")]
    NotAnAccessToken(String),
    /// The issuer's keys could not be had: the gateway's problem, still a 401 for the caller.
    #[error("the issuer's keys are unavailable: {0}")]
    Keys(String),
    /// The introspection endpoint could not be asked: the gateway's problem, still a 401.
    #[error("the token could not be introspected: {0}")]
    Introspection(String),
    #[error("the token is not active")]
    Inactive,
    #[error("the token lacks the scope '{0}'")]
    InsufficientScope(String),
    #[error("{0}")]
    NoIdentity(String),
}

impl TokenError {
    /// Whether the token itself is fine but does not allow this (403 rather than 401).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Self::InsufficientScope(_) | Self::NoIdentity(_))
    }
}

/// Checks access tokens for one issuer.
pub struct OAuthVerifier {
    config: OAuthConfig,
    /// The configured agents' names (empty: any identity is an agent).
    agents: BTreeSet<String>,
    clock: Arc<dyn Clock>,
    keys: keys::KeyCache,
    /// Where tokens that are not JWTs are asked about, if anywhere.
    introspector: Option<introspect::Introspector>,
    /// Tokens whose signature verified: their header's `typ` and their claims. A client
    /// sends one token with every call of a session; the signature is checked once.
    verified: cache::TokenCache<Arc<Verified>>,
    /// Scopes the metadata offers beside the required ones: those `[agents.X.scopes]` gate
    /// tools with, so a client knows what it may ask the authorization server for.
    offered: Vec<String>,
}

/// A token whose signature verified; its claims are still checked at every use.
struct Verified {
    typ: Option<String>,
    claims: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("issuer", &self.config.issuer)
            .finish_non_exhaustive()
    }
}

impl OAuthVerifier {
    /// A verifier for `config`; `agents` are the configured agents' names. An error: the
    /// config names neither `resource` nor `audience` (the audience a token must carry
    /// would otherwise come from the request's `Host` header, which a client chooses: a
    /// token minted for another server of the issuer could be replayed here, RFC 8707), or
    /// the introspection credentials cannot be sent.
    pub fn new(
        config: OAuthConfig,
        agents: BTreeSet<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, String> {
        if config.resource.is_none() && config.audience.is_empty() {
            return Err(
                "name the resource tokens must be for: `resource` (the URL clients use for /mcp) \
                 or `audience`"
                    .to_owned(),
            );
        }
        let keys = keys::KeyCache::new(config.issuer.clone(), config.jwks_uri.clone());
        let introspector = config
            .introspection
            .as_ref()
            .map(introspect::Introspector::new)
            .transpose()?;
        Ok(Self {
            config,
            agents,
            clock,
            keys,
            introspector,
            verified: cache::TokenCache::new(),
            offered: Vec::new(),
        })
    }

    /// The same verifier, offering `scopes` too in its resource metadata.
    pub fn offering(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.offered = scopes.into_iter().collect();
        self
    }

    /// The scopes the resource metadata names (`scopes_supported`): the required ones, then
    /// the offered ones, each once.
    pub fn scopes_supported(&self) -> Vec<String> {
        let mut scopes = self.config.scopes.clone();
        for scope in &self.offered {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        scopes
    }

    /// A verifier that starts with the issuer's JWK set already in hand (`jwks`, the
    /// document), as if just fetched: for benchmarks, and tests without an issuer to ask.
    pub fn with_key_set(
        config: OAuthConfig,
        agents: BTreeSet<String>,
        clock: Arc<dyn Clock>,
        jwks: serde_json::Value,
    ) -> Result<Self, String> {
        let set: jwt::JwkSet =
            serde_json::from_value(jwks).map_err(|error| format!("not a JWK set: {error}"))?;
        let keys = keys::KeyCache::preloaded(
            config.issuer.clone(),
            config.jwks_uri.clone(),
            set.usable(),
            clock.now(),
        );
        let mut verifier = Self::new(config, agents, clock)?;
        verifier.keys = keys;
        Ok(verifier)
    }

    /// The settings it checks by.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The values `aud` may hold for an endpoint whose resource URLs are `resources` (the
    /// endpoint's own and the gateway's `/mcp`): the configured audience, else those.
    pub fn audiences(&self, resources: &[String]) -> Vec<String> {
        if self.config.audience.is_empty() {
            resources.to_vec()
        } else {
            self.config.audience.clone()
        }
    }

    /// The identity `token` proves, for an endpoint whose resource URLs are `resources`.
    pub async fn verify(&self, token: &str, resources: &[String]) -> Result<Identity, TokenError> {
        let wall = self
            .clock
            .wall()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if let Some(introspector) = &self.introspector
            && token.split('.').count() != 3
        {
            // Not a JWT: an opaque token, which only its issuer can judge.
            let answer = introspector
                .introspect(token, self.clock.now(), wall)
                .await?;
            return claims::check(
                &self.config,
                &self.agents,
                None,
                &answer,
                &self.audiences(resources),
                wall,
            );
        }
        let now = self.clock.now();
        let digest = cache::digest(token);
        if let Some(verified) = self.verified.get(&digest, now) {
            return self.check_claims(&verified, resources, wall);
        }
        let jws = jwt::parse(token)?;
        if jws.header.crit.is_some() {
            return Err(TokenError::Malformed("a critical header extension"));
        }
        let alg = jws.header.alg.as_str();
        if !self
            .config
            .algorithms
            .iter()
            .any(|accepted| accepted == alg)
        {
            return Err(TokenError::Algorithm(alg.to_owned()));
        }
        let candidates = self
            .keys
            .keys_for(jws.header.kid.as_deref(), alg, now)
            .await?;
        if !candidates.iter().any(|key| jwt::verify(&jws, key).is_ok()) {
            return Err(TokenError::BadSignature);
        }
        let verified = Arc::new(Verified {
            typ: jws.header.typ,
            claims: jws.claims,
        });
        let identity = self.check_claims(&verified, resources, wall)?;
        let keep = cache::keep_for(&verified.claims, wall);
        self.verified.put(digest, verified, now, keep);
        Ok(identity)
    }

    fn check_claims(
        &self,
        verified: &Verified,
        resources: &[String],
        wall: u64,
    ) -> Result<Identity, TokenError> {
        claims::check(
            &self.config,
            &self.agents,
            verified.typ.as_deref(),
            &verified.claims,
            &self.audiences(resources),
            wall,
        )
    }
}

/// A server on 127.0.0.1 that accepts every connection and never answers, until the
/// returned task is aborted: how a stalled issuer or endpoint looks.
#[cfg(test)]
pub(crate) async fn stalled_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let stall = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (address, stall)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use switchboard_core::clock::SystemClock;
    use switchboard_core::config::{Config, Format, MapEnvironment, Origin};

    use super::OAuthVerifier;

    /// A verifier must know what tokens are for: without `resource` or `audience` the
    /// audience would come from the request's Host header, which the client chooses.
    #[test]
    fn a_verifier_needs_a_resource_or_an_audience() {
        let oauth = |extra: &str| {
            Config::parse(
                &format!("[auth]\nmode = \"oauth\"\nissuer = \"https://as\"\n{extra}"),
                Origin::Inline,
                Format::Toml,
                &MapEnvironment(std::collections::BTreeMap::new()),
            )
            .expect("valid")
            .auth
            .oauth
            .expect("oauth")
        };
        let verifier = |config| OAuthVerifier::new(config, BTreeSet::new(), Arc::new(SystemClock));
        let refused = verifier(oauth("")).err().unwrap_or_default();
        assert!(refused.contains("`resource`"), "{refused}");
        assert!(verifier(oauth("resource = \"https://gw/mcp\"\n")).is_ok());
        assert!(verifier(oauth("audience = \"gw\"\n")).is_ok());
    }
}
