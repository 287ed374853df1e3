//! The system's CA store, trusted by every TLS client beside webpki's roots, so a CA an
//! operator installed on the machine (`update-ca-certificates`) or names for the process
//! reaches the gateway as it reaches curl and OpenSSL.
//!
//! Where the store is, as OpenSSL has it: `SSL_CERT_FILE` (one PEM bundle) and
//! `SSL_CERT_DIR` (directories of PEM files, `:`-separated) when either is set, in place of
//! the system's own; else the bundle and directory the system keeps (on Debian
//! `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`), which may be missing (a
//! minimal container has none, and webpki's roots remain). The store is read once per
//! process, at its first TLS client; a CA added later needs a restart.
//!
//! A store the environment names must be usable: a file that cannot be read or holds no
//! certificate is a [`SystemRootsError`] naming the variable, and every TLS client fails
//! with it rather than quietly trusting less than the operator asked. Unusable entries of
//! the system's own store are passed over, as OpenSSL does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustls::pki_types::CertificateDer;

const FILE_VARIABLE: &str = "SSL_CERT_FILE";
const DIR_VARIABLE: &str = "SSL_CERT_DIR";

/// Why the CA store the environment names cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemRootsError {
    /// The variables set, as `NAME=value`.
    pub named: String,
    /// What went wrong with them.
    pub why: String,
}

impl std::fmt::Display for SystemRootsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the CA store the environment names ({}) cannot be used: {}; fix or unset it",
            self.named, self.why
        )
    }
}

impl std::error::Error for SystemRootsError {}

/// The certificates of the system's CA store, read at the first call.
pub fn system_roots() -> Result<&'static [CertificateDer<'static>], &'static SystemRootsError> {
    static ROOTS: OnceLock<Result<Vec<CertificateDer<'static>>, SystemRootsError>> =
        OnceLock::new();
    ROOTS
        .get_or_init(|| {
            load(
                std::env::var_os(FILE_VARIABLE).map(PathBuf::from),
                std::env::var_os(DIR_VARIABLE),
            )
        })
        .as_ref()
        .map(Vec::as_slice)
}

/// The store `file` and `dirs` name (the variables' values), or the system's own when both
/// are unset.
fn load(
    file: Option<PathBuf>,
    dirs: Option<OsString>,
) -> Result<Vec<CertificateDer<'static>>, SystemRootsError> {
    let dirs: Vec<PathBuf> = dirs
        .as_deref()
        .map(|dirs| std::env::split_paths(dirs).filter(|d| !d.as_os_str().is_empty()))
        .into_iter()
        .flatten()
        .collect();
    if file.is_none() && dirs.is_empty() {
        return Ok(rustls_native_certs::load_native_certs().certs);
    }
    let mut named = Vec::new();
    if let Some(file) = &file {
        named.push(format!("{FILE_VARIABLE}={}", file.display()));
    }
    if !dirs.is_empty() {
        let joined: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        named.push(format!("{DIR_VARIABLE}={}", joined.join(":")));
    }
    let refused = |why: String| SystemRootsError {
        named: named.join(", "),
        why,
    };
    let mut certs = Vec::new();
    if let Some(file) = &file {
        let loaded = rustls_native_certs::load_certs_from_paths(Some(file), None);
        if let Some(error) = loaded.errors.first() {
            return Err(refused(error.to_string()));
        }
        if loaded.certs.is_empty() {
            return Err(refused(format!(
                "{} holds no PEM certificate",
                file.display()
            )));
        }
        certs.extend(loaded.certs);
    }
    for dir in &dirs {
        certs.extend(from_dir(dir).map_err(refused)?);
    }
    Ok(certs)
}

/// The certificates of the PEM files in `dir`; a directory that cannot be listed is an
/// error, a file in it that is not a certificate is passed over (OpenSSL's hashed
/// directories hold CRLs and other files too).
fn from_dir(dir: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    std::fs::read_dir(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let loaded = rustls_native_certs::load_certs_from_paths(None, Some(dir));
    Ok(loaded.certs)
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::pem::PemObject;
    use switchboard_testkit::certs::TestCa;

    use super::*;

    #[test]
    fn a_named_bundle_or_directory_is_read_and_an_unusable_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::make(dir.path()).unwrap_or_else(|error| panic!("{error}"));
        let bundle = ca.ca_file().to_owned();
        let expected = CertificateDer::from_pem_file(&bundle).expect("the test CA's PEM");

        let from_file = load(Some(bundle.clone()), None).expect("the bundle loads");
        assert_eq!(from_file, vec![expected.clone()]);

        let store = dir.path().join("store");
        std::fs::create_dir(&store).expect("store dir");
        std::fs::copy(&bundle, store.join("test-ca.pem")).expect("copy");
        std::fs::write(store.join("README"), "not a certificate").expect("write");
        let both = std::env::join_paths([store.as_path(), Path::new("")]).expect("join");
        let from_dir = load(None, Some(both)).expect("the directory loads");
        assert_eq!(from_dir, vec![expected]);

        let missing = load(Some(dir.path().join("nowhere.pem")), None)
            .expect_err("a missing bundle is refused");
        assert!(
            missing.named.starts_with("SSL_CERT_FILE=") && missing.why.contains("nowhere.pem"),
            "{missing}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").expect("write");
        let refused = load(Some(empty), None).expect_err("an empty bundle is refused");
        assert!(
            refused.why.ends_with("holds no PEM certificate"),
            "{refused}"
        );
        let no_dir = load(None, Some(dir.path().join("no-dir").into_os_string()))
            .expect_err("a missing directory is refused");
        assert!(
            no_dir.named.starts_with("SSL_CERT_DIR=") && no_dir.to_string().contains("unset it"),
            "{no_dir}"
        );
    }

    /// Debian's ca-certificates (scripts/install-test-deps.sh installs it) is found without
    /// being named.
    #[test]
    fn without_the_variables_the_systems_own_store_is_read() {
        let bundle = Path::new("/etc/ssl/certs/ca-certificates.crt");
        let expected = CertificateDer::pem_file_iter(bundle)
            .unwrap_or_else(|error| {
                panic!(
                    "{}: {error}; run scripts/install-test-deps.sh (apt-get install ca-certificates)",
                    bundle.display()
                )
            })
            .count();
        let own = load(None, None).expect("the system store never fails");
        assert!(
            expected > 0 && own.len() >= expected,
            "{} holds {expected} CAs, the store read {}",
            bundle.display(),
            own.len()
        );
    }
}
