//! TLS client settings from PEM files, for every TLS client of the gateway (PostgreSQL,
//! upstream MCP servers, token endpoints, the MCP Registry, the web built-ins): the public
//! (webpki) roots and the system's CA store ([`system_roots`]), plus a private CA when one is
//! named, and a client certificate when one is named, its key file kept by its owner alone.
//! rustls with the `ring` provider.
//!
//! A file that cannot be used is a [`FileError`] saying which file and why; each caller words
//! it with the name of its own setting (`[storage] tls_ca`, `servers.ID.tls.ca`). After a
//! failed handshake, [`refused_certificate`] and [`refused_by_server`] say whose certificate
//! was refused.

mod system;

pub use system::{SystemRootsError, system_roots};

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The PEM files a TLS client is given; `None`: not named.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFiles<'a> {
    /// A CA trusted besides the public roots.
    pub ca: Option<&'a Path>,
    /// A client certificate (its chain) and its private key.
    pub identity: Option<(&'a Path, &'a Path)>,
}

/// Which of the files a [`FileError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Ca,
    Cert,
    Key,
}

/// Why the files did not make a TLS client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileError {
    /// One file cannot be used.
    Unusable {
        role: Role,
        path: PathBuf,
        why: String,
    },
    /// The certificate and the key do not go together.
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        why: String,
    },
    /// rustls refused the settings themselves.
    Setup(String),
    /// The CA store the environment names (`SSL_CERT_FILE`, `SSL_CERT_DIR`) cannot be used.
    System(SystemRootsError),
}

impl std::fmt::Display for FileError {
    /// The error in words that name the file by its role (`ca`, `cert`, `key`); callers
    /// that have a setting's name for each role word it themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unusable { role, path, why } => {
                let role = match role {
                    Role::Ca => "ca",
                    Role::Cert => "cert",
                    Role::Key => "key",
                };
                write!(f, "{role} {}: {why}", path.display())
            }
            Self::Mismatch { cert, key, why } => {
                write!(
                    f,
                    "cert {} and key {}: {why}",
                    cert.display(),
                    key.display()
                )
            }
            Self::Setup(why) => write!(f, "cannot set up TLS: {why}"),
            Self::System(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for FileError {}

/// A client configuration trusting the public roots, the system's store and `files.ca`,
/// offering `files.identity` when the server asks for a certificate.
pub fn client_config(files: ClientFiles<'_>) -> Result<rustls::ClientConfig, FileError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let system = system_roots().map_err(|error| FileError::System(error.clone()))?;
    roots.add_parsable_certificates(system.iter().cloned());
    if let Some(ca) = files.ca {
        add_ca(&mut roots, ca)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| FileError::Setup(error.to_string()))?
        .with_root_certificates(roots);
    let Some((cert, key)) = files.identity else {
        return Ok(builder.with_no_client_auth());
    };
    let chain = chain(cert)?;
    let private = private_key(key)?;
    builder
        .with_client_auth_cert(chain, private)
        .map_err(|error| FileError::Mismatch {
            cert: cert.to_owned(),
            key: key.to_owned(),
            why: match error {
                rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                    "the key is not the certificate's (they are from different pairs)".to_owned()
                }
                other => other.to_string(),
            },
        })
}

fn unusable(role: Role, path: &Path) -> impl Fn(String) -> FileError + '_ {
    move |why| FileError::Unusable {
        role,
        path: path.to_owned(),
        why,
    }
}

/// Adds every certificate of the PEM file at `path` to `roots`; none is an error.
fn add_ca(roots: &mut rustls::RootCertStore, path: &Path) -> Result<(), FileError> {
    let unusable = unusable(Role::Ca, path);
    let mut added = 0;
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| unusable(e.to_string()))? {
        let cert = cert.map_err(|e| unusable(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| unusable(format!("not a usable CA certificate: {e}")))?;
        added += 1;
    }
    if added == 0 {
        return Err(unusable("holds no PEM certificate".to_owned()));
    }
    Ok(())
}

/// The certificate chain of the PEM file at `path`.
fn chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, FileError> {
    let unusable = unusable(Role::Cert, path);
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| unusable(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(e.to_string()))?;
    if chain.is_empty() {
        return Err(unusable("holds no PEM certificate".to_owned()));
    }
    Ok(chain)
}

/// The private key of the PEM file at `path`, its permissions checked first (no access for
/// its group or the world, as libpq demands).
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, FileError> {
    let unusable = unusable(Role::Key, path);
    switchboard_core::config::check_private_key_file(path).map_err(&unusable)?;
    PrivateKeyDer::from_pem_file(path).map_err(|error| match error {
        rustls::pki_types::pem::Error::NoItemsFound => {
            unusable("holds no PEM private key".to_owned())
        }
        other => unusable(other.to_string()),
    })
}

/// The server's certificate, as the client refused it, when `error` is that refusal.
pub fn refused_certificate(error: &io::Error) -> Option<&rustls::CertificateError> {
    match rustls_error(error)? {
        rustls::Error::InvalidCertificate(refused) => Some(refused),
        _ => None,
    }
}

/// The server's alert when `error` is the server refusing the client's certificate (or its
/// lack of one). With TLS 1.3 it comes after the handshake, on the first read.
pub fn refused_by_server(error: &io::Error) -> Option<rustls::AlertDescription> {
    use rustls::AlertDescription as Alert;
    match rustls_error(error)? {
        rustls::Error::AlertReceived(
            alert @ (Alert::UnknownCA
            | Alert::BadCertificate
            | Alert::CertificateExpired
            | Alert::CertificateRevoked
            | Alert::CertificateUnknown
            | Alert::CertificateRequired
            | Alert::UnsupportedCertificate
            | Alert::AccessDenied),
        ) => Some(*alert),
        _ => None,
    }
}

fn rustls_error(error: &io::Error) -> Option<&rustls::Error> {
    error.get_ref()?.downcast_ref::<rustls::Error>()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use switchboard_testkit::certs::TestCa;

    use super::*;

    #[test]
    fn each_unusable_file_is_named_with_its_role() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::make(dir.path()).unwrap_or_else(|error| panic!("{error}"));
        let one = ca
            .issue_client("one", "a")
            .unwrap_or_else(|e| panic!("{e}"));
        let two = ca
            .issue_client("two", "b")
            .unwrap_or_else(|e| panic!("{e}"));
        let files = |ca: Option<&'static Path>| ClientFiles { ca, identity: None };
        assert!(client_config(files(None)).is_ok());
        let missing = client_config(files(Some(Path::new("/nonexistent/ca.pem"))));
        assert!(
            matches!(&missing, Err(FileError::Unusable { role: Role::Ca, path, .. })
                if path == Path::new("/nonexistent/ca.pem")),
            "{missing:?}"
        );
        let not_pem = dir.path().join("ca.key");
        let refused = client_config(ClientFiles {
            ca: Some(&not_pem),
            identity: None,
        });
        assert!(
            matches!(&refused, Err(FileError::Unusable { role: Role::Ca, why, .. })
                if why == "holds no PEM certificate"),
            "{refused:?}"
        );

        let mixed = client_config(ClientFiles {
            ca: Some(ca.ca_file()),
            identity: Some((&one.cert, &two.key)),
        });
        assert!(
            matches!(&mixed, Err(FileError::Mismatch { why, .. }) if why.contains("not the certificate's")),
            "{mixed:?}"
        );
        let paired = client_config(ClientFiles {
            ca: Some(ca.ca_file()),
            identity: Some((&one.cert, &one.key)),
        });
        assert!(paired.is_ok(), "{:?}", paired.err());

        std::fs::set_permissions(&one.key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let open = client_config(ClientFiles {
            ca: None,
            identity: Some((&one.cert, &one.key)),
        });
        assert!(
            matches!(&open, Err(FileError::Unusable { role: Role::Key, why, .. }) if why.contains("chmod 600")),
            "{open:?}"
        );
    }
}
