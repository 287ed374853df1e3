//! TLS to upstream servers, by rustls: the public roots (webpki's and the system's CA store,
//! `switchboard_tls::system_roots`), and what a server's `[servers.ID.tls]` adds — a
//! private CA its certificate is checked against, a client certificate and key offered when
//! it asks for one (mutual TLS).
//!
//! Each set of settings has an id, a digest of its files' contents, part of the pool's key
//! (`client::Origin`): a connection made with one server's client certificate never carries
//! the request of a server with other files, even to the same host and port, and a server
//! that reconnects finds the connections it left. The files are read each time the server's
//! connection is opened (a renewed certificate is taken at its next start), so a bad one
//! fails that server's start, naming the file; a handshake refused says which side refused
//! what.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard_tls::{FileError, Role};
use tokio_rustls::TlsConnector;

/// The id of the settings every server without `[servers.ID.tls]` shares.
pub(super) const PUBLIC_ROOTS: u64 = 0;

/// How the gateway speaks TLS to one server (or, [`PUBLIC_ROOTS`], to all the others).
pub(super) struct UpstreamTls {
    id: u64,
    connector: TlsConnector,
}

impl std::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTls").field("id", &self.id).finish()
    }
}

/// The PEM files of a server's `[servers.ID.tls]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// A CA trusted for this server besides the public roots.
    pub ca: Option<PathBuf>,
    /// A client certificate (chain) and its private key.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl UpstreamTls {
    /// Trusts the public roots and every certificate of `files.ca`; offers the certificate
    /// chain and private key of `files.client` when the server asks for one. An unreadable
    /// or unusable file is an error naming it.
    pub(super) fn load(files: &TlsFiles) -> Result<Self, String> {
        let client = files
            .client
            .as_ref()
            .map(|(cert, key)| (cert.as_path(), key.as_path()));
        Self::build(settings_id(files)?, files.ca.as_deref(), client)
    }

    /// The public roots alone.
    pub(super) fn public() -> Result<Self, String> {
        Self::build(PUBLIC_ROOTS, None, None)
    }

    fn build(id: u64, ca: Option<&Path>, client: Option<(&Path, &Path)>) -> Result<Self, String> {
        let files = switchboard_tls::ClientFiles {
            ca,
            identity: client,
        };
        let mut config = switchboard_tls::client_config(files).map_err(|error| match error {
            FileError::Unusable { role, path, why } => {
                let key = match role {
                    Role::Ca => "ca",
                    Role::Cert => "cert",
                    Role::Key => "key",
                };
                format!("tls.{key} {}: {why}", path.display())
            }
            FileError::Mismatch { cert, key, why } => format!(
                "tls.cert {} and tls.key {}: {why}",
                cert.display(),
                key.display()
            ),
            FileError::Setup(why) => format!("cannot set up TLS: {why}"),
            FileError::System(error) => error.to_string(),
        })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            id,
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Which settings these are, for the pool's key.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    pub(super) fn connector(&self) -> &TlsConnector {
        &self.connector
    }
}

/// The id of the settings `files` make: the same for the same contents, so a server that
/// reconnects (or another server with the same files) finds the connections it left in the
/// pool; another for any other contents. Never [`PUBLIC_ROOTS`].
fn settings_id(files: &TlsFiles) -> Result<u64, String> {
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let named = [
        ("ca", files.ca.as_deref()),
        (
            "cert",
            files.client.as_ref().map(|(cert, _)| cert.as_path()),
        ),
        ("key", files.client.as_ref().map(|(_, key)| key.as_path())),
    ];
    for (key, path) in named {
        digest.update(key.as_bytes());
        if let Some(path) = path {
            let contents = std::fs::read(path)
                .map_err(|error| format!("tls.{key} {}: {error}", path.display()))?;
            digest.update(&(contents.len() as u64).to_le_bytes());
            digest.update(&contents);
        }
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest.finish().as_ref()[..8]);
    Ok(u64::from_le_bytes(id).max(PUBLIC_ROOTS + 1))
}

/// A server's own settings when it names `files`; `None` (the public roots) when not.
pub(super) fn load(files: Option<&TlsFiles>) -> Result<Option<Arc<UpstreamTls>>, String> {
    files
        .map(|files| UpstreamTls::load(files).map(Arc::new))
        .transpose()
}

/// Why the handshake with `address` failed, readably: which certificate was refused, by
/// whom, and, for an MCP server (`upstream`), the setting that changes it.
pub(super) fn handshake_failure(error: &io::Error, address: &str, upstream: bool) -> String {
    use rustls::CertificateError as Cert;
    if let Some(refused) = client_cert_refusal(error) {
        return refused;
    }
    let Some(cert) = switchboard_tls::refused_certificate(error) else {
        return format!(
            "TLS with {address} failed: {}",
            super::client::error_chain(error)
        );
    };
    let why = match cert {
        Cert::UnknownIssuer | Cert::BadSignature if upstream => {
            "its certificate is not signed by a CA the gateway trusts (a private CA: name it \
             in the server's tls.ca, or add it to the system's CA store)"
                .to_owned()
        }
        Cert::UnknownIssuer | Cert::BadSignature => {
            "its certificate is not signed by a public CA or one in the system's CA store"
                .to_owned()
        }
        Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
            "its certificate is not for this host name".to_owned()
        }
        Cert::Expired | Cert::ExpiredContext { .. } => "its certificate has expired".to_owned(),
        Cert::NotValidYet | Cert::NotValidYetContext { .. } => {
            "its certificate is not valid yet (is this machine's clock right?)".to_owned()
        }
        Cert::Revoked => "its certificate has been revoked".to_owned(),
        other => format!("its certificate is refused: {other:?}"),
    };
    format!("TLS with {address} failed: {why}")
}

/// The server's word on the client certificate the gateway sent (or did not) when `error`
/// is its TLS alert. With TLS 1.3 it comes after the handshake, on the first read.
pub(super) fn client_cert_refusal(error: &io::Error) -> Option<String> {
    let alert = switchboard_tls::refused_by_server(error)?;
    Some(format!(
        "the server refused the gateway's client certificate, or its lack of one ({alert:?}): \
         an MCP server's is set by its tls.cert and tls.key"
    ))
}
