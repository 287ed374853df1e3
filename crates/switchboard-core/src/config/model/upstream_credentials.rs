//! How the gateway proves itself to one HTTP server: `[servers.ID.auth]` (an OAuth grant it
//! runs itself) and `[servers.ID.tls]` (its own CA and client certificate).

use std::path::PathBuf;

use super::SecretString;

/// `[servers.ID.tls]`: files for TLS with one `https://` server, resolved against the
/// config file's directory; `cert` and `key` are both set or both unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTlsConfig {
    /// A CA (PEM) trusted for this server besides the public ones.
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM, its chain) offered when the server asks for one.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM, readable by its owner only).
    pub key: Option<PathBuf>,
}

/// `[servers.ID.auth]`: an OAuth 2.1 client-credentials grant the gateway runs itself for
/// an HTTP server, so the server gets a token of the gateway's (never a client's).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamAuthConfig {
    /// Which grant the gateway runs.
    pub grant: UpstreamGrant,
    /// The authorization server's token endpoint (`https://`, or `http://` on loopback).
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: SecretString,
    /// The scope asked for, if any.
    pub scope: Option<String>,
    /// The RFC 8707 resource indicator: the server's canonical URL, which the token is for.
    pub resource: Option<String>,
    /// Token exchange: the logical name of the server the token is for (RFC 8693
    /// `audience`), where the authorization server wants one instead of (or with) `resource`.
    pub audience: Option<String>,
    /// Token exchange: whether the gateway's own requests (initialize, listings, pings)
    /// carry a client-credentials token of the same client (default), or nothing.
    pub gateway_token: bool,
    /// Whether the token endpoint is reached with the server's `[servers.ID.tls]` (its CA
    /// trusted, its client certificate offered) rather than the public CAs alone.
    pub server_tls: bool,
}

/// How the gateway gets the token it sends an HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamGrant {
    /// Its own token (RFC 6749 §4.4), for every request.
    ClientCredentials,
    /// Each caller's OAuth token exchanged for one for this server (RFC 8693), for that
    /// caller's calls; the gateway's own requests as `gateway_token` says.
    TokenExchange,
}
