//! `http-echo --tls-cert FILE --tls-key FILE [--client-ca FILE]`: the echo tools over
//! HTTPS (rustls), for the gateway's `[servers.ID.tls]` tests. With `--client-ca` every
//! client must present a certificate that CA signed (mutual TLS); one that does not is
//! refused in the handshake, with TLS's own alert.

use std::io::BufReader;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::http::{Request, serve_requests};

/// The PEM files of the server's TLS.
pub struct TlsFiles<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
    /// The CA whose client certificates are let in; `None`: none asked for.
    pub client_ca: Option<&'a Path>,
}

/// The server's TLS settings from its files; an error names the file.
pub(crate) fn server_config(files: &TlsFiles<'_>) -> Result<Arc<ServerConfig>, String> {
    let named = |path: &Path, why: String| format!("{}: {why}", path.display());
    let chain = CertificateDer::pem_file_iter(files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|error| named(files.cert, error.to_string()))?;
    let key = PrivateKeyDer::from_pem_file(files.key)
        .map_err(|error| named(files.key, error.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?;
    let builder = match files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in
                CertificateDer::pem_file_iter(ca).map_err(|error| named(ca, error.to_string()))?
            {
                let cert = cert.map_err(|error| named(ca, error.to_string()))?;
                roots
                    .add(cert)
                    .map_err(|error| named(ca, error.to_string()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| named(ca, error.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|error| named(files.cert, error.to_string()))?;
    Ok(Arc::new(config))
}

/// Answers one TLS connection's requests to `/mcp` with `answer` until it closes (or its
/// handshake fails).
pub(crate) fn serve_connection(
    stream: TcpStream,
    config: Arc<ServerConfig>,
    answer: impl FnMut(Request) -> String,
) {
    let _ = stream.set_nodelay(true);
    let Ok(connection) = ServerConnection::new(config) else {
        return;
    };
    serve_requests(
        &mut BufReader::new(StreamOwned::new(connection, stream)),
        answer,
    );
}
