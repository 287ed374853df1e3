//! TLS to PostgreSQL: the one place every connection of the process gets its connector
//! ([`Target`]), for the pools ([`super::pool`]) and the LISTEN connections alike.
//!
//! The URL decides, as libpq users expect: `sslmode=disable` plain text; `prefer` (the
//! default) TLS when the server offers it, plain text when it does not; `require` TLS or no
//! connection. The server's certificate is always verified (chain and host name) against the
//! webpki roots and the system's CA store plus, when the URL names one, a private CA: libpq's `sslrootcert=PATH` (PEM),
//! which `[storage] tls_ca` is folded into when the config is read. tokio-postgres does not
//! know that key, so it is taken out of the URL here before the rest is parsed; nor libpq's
//! `sslmode=verify-ca` and `verify-full`, read here as `require`, which verifies the chain and
//! the host name (as `verify-full`; stricter than `verify-ca`).
//!
//! A client certificate (for `pg_hba.conf`'s `cert` and `clientcert=verify-full`): libpq's
//! `sslcert=PATH` and `sslkey=PATH` (PEM; `[storage] tls_cert`/`tls_key` are folded into them),
//! both or neither, also taken out of the URL here. They are read when the [`Target`] is made,
//! so a gateway refuses to start — not its first query — when one is unreadable, the key is
//! not the certificate's, or the key file may be read by its group or the world (refused as
//! libpq refuses it: a key others could read is no longer only this client's). Unlike libpq
//! there is no default file (`~/.postgresql/postgresql.crt`): a certificate is sent only when
//! named.
//!
//! rustls with the `ring` provider, like the upstream HTTPS client. No channel binding is
//! offered (SCRAM's `channel_binding=prefer` then goes without). TLS is not used over a unix
//! socket (the server refuses it there; `prefer` goes on in plain text).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use switchboard_tls::{FileError, Role};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

use crate::LedgerError;

/// The URL key that names a private CA (libpq's name for it).
const ROOT_CERT_KEY: &str = "sslrootcert";
/// The URL key that names the client's certificate (libpq's).
const CERT_KEY: &str = "sslcert";
/// The URL key that names the client certificate's private key (libpq's).
const KEY_KEY: &str = "sslkey";

/// What connecting to the `[storage] url` takes: tokio-postgres's settings and the TLS
/// connector. Cheap to clone.
#[derive(Clone)]
pub struct Target {
    config: tokio_postgres::Config,
    tls: MakeRustls,
}

impl Target {
    /// Reads `url` (`sslrootcert` taken out and its CA loaded); a connect timeout, the
    /// application name `switchboard`, the server-side timeouts ([`SESSION_TIMEOUTS`]) and
    /// TCP keepalives ([`KEEPALIVE_IDLE`]) unless the URL sets them. The URL is never
    /// repeated in an error: it may hold a password.
    pub fn parse(url: &str) -> Result<Self, LedgerError> {
        let (url, files) = take_files(url)?;
        let mut config = tokio_postgres::Config::from_str(&url).map_err(|error| {
            LedgerError::Postgres(format!("[storage] url does not parse: {error}"))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(super::CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("switchboard");
        }
        bound_sessions(&mut config, &url);
        let client = match (files.cert, files.key) {
            (Some(cert), Some(key)) => Some(ClientCert { cert, key }),
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(LedgerError::Postgres(format!(
                    "[storage] url: {CERT_KEY} and {KEY_KEY} (tls_cert and tls_key) go together: \
                     a client certificate needs its key"
                )));
            }
        };
        let tls = MakeRustls::new(files.root_cert.as_deref(), client.as_ref())?;
        Ok(Self { config, tls })
    }

    /// tokio-postgres's settings.
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The connector, for a pool's manager.
    pub fn connector(&self) -> MakeRustls {
        self.tls.clone()
    }

    /// One connection (not pooled: LISTEN). Its driver is the caller's to poll.
    pub async fn connect(
        &self,
    ) -> Result<
        (
            tokio_postgres::Client,
            tokio_postgres::Connection<tokio_postgres::Socket, TlsStream<tokio_postgres::Socket>>,
        ),
        tokio_postgres::Error,
    > {
        self.config.connect(self.tls.clone()).await
    }
}

/// The server settings each session gets (`options=-c name=value`) unless the URL's
/// `options` names them: a replica frozen inside a transaction (holding the ledger's head,
/// say) is cut off after `idle_in_transaction_session_timeout` instead of blocking every
/// other replica until TCP gives up, and a writer waiting behind such a lock, or a statement
/// stuck on the server, fails and is retried instead of hanging. Migrations, which may take
/// longer, lift the last two for their own transaction ([`super::migrate`]).
pub const SESSION_TIMEOUTS: [(&str, &str); 3] = [
    ("lock_timeout", "10s"),
    ("statement_timeout", "30s"),
    ("idle_in_transaction_session_timeout", "30s"),
];

/// How long a connection may be silent before TCP probes the server (unless the URL sets
/// `keepalives_idle`); with [`KEEPALIVE_INTERVAL`] and [`KEEPALIVE_RETRIES`] a server gone
/// without a word (a host powered off, a dropped route) is noticed within about a minute
/// instead of the system's two hours.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Between unanswered keepalive probes (unless the URL sets `keepalives_interval`).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the connection is dropped (unless the URL sets
/// `keepalives_retries`).
pub const KEEPALIVE_RETRIES: u32 = 3;

/// Adds to `config` the [`SESSION_TIMEOUTS`] its `options` lack and, unless `url` sets them,
/// the keepalive settings.
fn bound_sessions(config: &mut tokio_postgres::Config, url: &str) {
    let given = config.get_options().unwrap_or_default().to_owned();
    let mut options = given.clone();
    for (name, value) in SESSION_TIMEOUTS {
        if !given.contains(name) {
            if !options.is_empty() {
                options.push(' ');
            }
            options.push_str(&format!("-c {name}={value}"));
        }
    }
    config.options(options);
    if !url.contains("keepalives_idle") {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(KEEPALIVE_RETRIES);
    }
}

/// The files libpq's URL keys name (percent-decoded).
#[derive(Debug, Default, PartialEq)]
struct Files {
    /// `sslrootcert`: a private CA.
    root_cert: Option<PathBuf>,
    /// `sslcert`: the client's certificate.
    cert: Option<PathBuf>,
    /// `sslkey`: its private key.
    key: Option<PathBuf>,
}

/// The URL as tokio-postgres reads it — without `sslrootcert`, `sslcert` and `sslkey`, and
/// with libpq's `sslmode=verify-ca`/`verify-full` as `require` — and the files those named.
fn take_files(url: &str) -> Result<(String, Files), LedgerError> {
    let Some((head, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Files::default()));
    };
    let mut files = Files::default();
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let slot = match pair.split_once('=') {
            Some((ROOT_CERT_KEY, value)) => Some((&mut files.root_cert, ROOT_CERT_KEY, value)),
            Some((CERT_KEY, value)) => Some((&mut files.cert, CERT_KEY, value)),
            Some((KEY_KEY, value)) => Some((&mut files.key, KEY_KEY, value)),
            // libpq's stricter modes: `require` here verifies as `verify-full` does.
            Some(("sslmode", "verify-ca" | "verify-full")) => {
                kept.push("sslmode=require");
                None
            }
            _ => {
                kept.push(pair);
                None
            }
        };
        if let Some((slot, key, value)) = slot {
            let path = percent_encoding::percent_decode_str(value)
                .decode_utf8()
                .map_err(|_| {
                    LedgerError::Postgres(format!("[storage] url: {key} is not UTF-8 once decoded"))
                })?;
            *slot = Some(PathBuf::from(path.as_ref()));
        }
    }
    let url = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    Ok((url, files))
}

/// A client certificate's PEM files.
struct ClientCert {
    cert: PathBuf,
    key: PathBuf,
}

/// Makes a rustls connector per connection, for the host being connected to.
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<rustls::ClientConfig>,
}

impl MakeRustls {
    /// Trusts the webpki roots, the system's CA store and, when given, the certificates of
    /// the PEM file `root_cert`; offers `client`'s certificate when the server asks for one.
    fn new(root_cert: Option<&Path>, client: Option<&ClientCert>) -> Result<Self, LedgerError> {
        let files = switchboard_tls::ClientFiles {
            ca: root_cert,
            identity: client.map(|client| (client.cert.as_path(), client.key.as_path())),
        };
        let config = switchboard_tls::client_config(files).map_err(|error| {
            LedgerError::Postgres(match error {
                FileError::Unusable { role, path, why } => {
                    let (what, key) = match role {
                        Role::Ca => ("the CA file", "tls_ca"),
                        Role::Cert => ("the client certificate", "tls_cert"),
                        Role::Key => ("the client key", "tls_key"),
                    };
                    format!(
                        "{what} {} for PostgreSQL ([storage] {key}): {why}",
                        path.display()
                    )
                }
                FileError::Mismatch { cert, key, why } => format!(
                    "the client certificate {} and key {} for PostgreSQL ([storage] tls_cert, \
                     tls_key): {why}",
                    cert.display(),
                    key.display()
                ),
                FileError::Setup(why) => format!("cannot set up TLS: {why}"),
                FileError::System(error) => format!("TLS to PostgreSQL: {error}"),
            })
        })?;
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, Self::Error> {
        // A bad name is reported when TLS is actually used: over a unix socket it is not.
        Ok(RustlsConnect {
            config: self.config.clone(),
            host: domain.to_owned(),
        })
    }
}

/// The connector for one connection to `host`.
pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
    host: String,
}

/// Why the TLS handshake with PostgreSQL failed, in an operator's words.
#[derive(Debug, thiserror::Error)]
#[error("PostgreSQL at {host}: {why}")]
pub struct TlsError {
    host: String,
    why: String,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = TlsError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream<S>, TlsError>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = ServerName::try_from(self.host.clone()).map_err(|_| TlsError {
                host: self.host.clone(),
                why: "not a host name TLS can verify".to_owned(),
            })?;
            let connector = tokio_rustls::TlsConnector::from(self.config);
            match connector.connect(name, stream).await {
                Ok(stream) => Ok(TlsStream(stream)),
                Err(error) => Err(TlsError {
                    why: handshake_failure(&error, &self.host),
                    host: self.host,
                }),
            }
        })
    }
}

/// The cause of a failed handshake, readably.
fn handshake_failure(error: &std::io::Error, host: &str) -> String {
    use rustls::CertificateError as Cert;
    if let Some(refused) = client_cert_refusal(error) {
        return refused;
    }
    let Some(cert) = switchboard_tls::refused_certificate(error) else {
        return format!("the TLS handshake failed: {error}");
    };
    match cert {
        Cert::UnknownIssuer | Cert::BadSignature => {
            "the server's certificate is not trusted (add its CA with [storage] tls_ca)".to_owned()
        }
        Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
            format!("the server's certificate is not for the name {host}")
        }
        Cert::Expired | Cert::ExpiredContext { .. } => {
            "the server's certificate has expired".to_owned()
        }
        other => format!("the server's certificate is refused: {other:?}"),
    }
}

/// The server's word on the client certificate we sent (or did not) when `error` is its TLS
/// alert, readably. With TLS 1.3 it arrives after the handshake, on the first read.
pub(super) fn client_cert_refusal(error: &std::io::Error) -> Option<String> {
    let alert = switchboard_tls::refused_by_server(error)?;
    Some(format!(
        "the server refused our client certificate ({alert:?}): check [storage] tls_cert \
         and tls_key, and that the server's ssl_ca_file holds their CA"
    ))
}

/// A TLS connection to PostgreSQL.
pub struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S> tokio_postgres::tls::TlsStream for TlsStream<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S> tokio::io::AsyncRead for TlsStream<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S> tokio::io::AsyncWrite for TlsStream<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_root_cert_out_of_the_url() {
        let (url, files) =
            take_files("postgres://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Fca%20x.pem")
                .expect("parses");
        assert_eq!(url, "postgres://u@h/db?sslmode=require");
        assert_eq!(files.root_cert, Some(PathBuf::from("/etc/ca x.pem")));
        let (url, files) = take_files("postgres://u@h/db?sslrootcert=/ca.pem").expect("parses");
        assert_eq!(
            (url.as_str(), files.root_cert),
            ("postgres://u@h/db", Some("/ca.pem".into()))
        );
        let (url, _) = take_files("postgres://u@h/db?sslmode=verify-full").expect("parses");
        assert_eq!(url, "postgres://u@h/db?sslmode=require");
        let (url, files) = take_files("postgres://u@h/db").expect("parses");
        assert_eq!(
            (url.as_str(), files),
            ("postgres://u@h/db", Files::default())
        );
    }

    #[test]
    fn takes_the_client_certificate_and_key_out_of_the_url() {
        let (url, files) =
            take_files("postgres://u@h/db?sslcert=%2Fc%20x.crt&sslmode=require&sslkey=/c.key")
                .expect("parses");
        assert_eq!(url, "postgres://u@h/db?sslmode=require");
        assert_eq!(files.cert, Some(PathBuf::from("/c x.crt")));
        assert_eq!(files.key, Some(PathBuf::from("/c.key")));
        assert_eq!(files.root_cert, None);
    }

    #[test]
    fn sessions_get_the_timeouts_and_keepalives_the_url_does_not_set() {
        let target = Target::parse("postgres://u@h/db").expect("parses");
        let config = target.config();
        assert_eq!(
            config.get_options(),
            Some(
                "-c lock_timeout=10s -c statement_timeout=30s \
                 -c idle_in_transaction_session_timeout=30s"
            )
        );
        assert_eq!(config.get_keepalives_idle(), KEEPALIVE_IDLE);
        assert_eq!(config.get_keepalives_interval(), Some(KEEPALIVE_INTERVAL));
        assert_eq!(config.get_keepalives_retries(), Some(KEEPALIVE_RETRIES));
        let target = Target::parse(
            "postgres://u@h/db?options=-c%20statement_timeout%3D0&keepalives_idle=90\
             &keepalives_retries=5",
        )
        .expect("parses");
        let config = target.config();
        assert_eq!(
            config.get_options(),
            Some(
                "-c statement_timeout=0 -c lock_timeout=10s \
                 -c idle_in_transaction_session_timeout=30s"
            )
        );
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(90));
        assert_eq!(config.get_keepalives_retries(), Some(5));
    }

    #[test]
    fn a_certificate_without_its_key_is_refused_before_connecting() {
        for url in [
            "postgres://u@h/db?sslcert=/c.crt",
            "postgres://u@h/db?sslkey=/c.key",
        ] {
            let Err(error) = Target::parse(url) else {
                panic!("{url} was accepted");
            };
            let error = error.to_string();
            assert!(
                error.contains("sslcert and sslkey (tls_cert and tls_key) go together"),
                "{error}"
            );
        }
    }
}
