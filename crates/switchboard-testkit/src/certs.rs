//! Certificates for TLS tests, made with the `openssl` CLI in a directory the caller owns: a
//! CA (`ca.pem`), server certificates for `localhost` and 127.0.0.1, client certificates.
//! Keys are P-256, unencrypted, and readable by their owner only (`chmod 600`), as PostgreSQL,
//! libpq and the gateway demand. Valid for two days. A missing `openssl` is an error that
//! says how to install it, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Why a certificate, or a command of a test server, could not be made or run.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("cannot run {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{command} failed ({status}): {output}")]
    Failed {
        command: String,
        status: String,
        output: String,
    },
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
    #[error(
        "openssl is not installed (the TLS tests make their certificates with it): run \
         scripts/install-test-deps.sh (apt-get install openssl)"
    )]
    MissingOpenssl,
}

/// A certificate and its private key (PEM files).
#[derive(Clone, Debug)]
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A CA made for one test, in its directory.
#[derive(Clone, Debug)]
pub struct TestCa {
    dir: PathBuf,
    ca: PathBuf,
}

/// A server certificate's X.509 extensions (an extfile's lines).
const SERVER_EXTENSIONS: &str = "subjectAltName=DNS:localhost,IP:127.0.0.1\n\
                                 basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
/// A client certificate's X.509 extensions.
const CLIENT_EXTENSIONS: &str = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n";

/// `openssl req`'s options for a new P-256 key, unencrypted.
const EC_KEY: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

impl TestCa {
    /// A new CA (`ca.pem`, `ca.key`) in `dir`, named `/CN=test CA`.
    pub fn make(dir: &Path) -> Result<Self, CommandError> {
        if Command::new("openssl").arg("version").output().is_err() {
            return Err(CommandError::MissingOpenssl);
        }
        let ca = [
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=test CA",
        ];
        openssl(dir, &[&["req", "-x509"][..], &EC_KEY, &ca].concat())?;
        Ok(Self {
            dir: dir.to_owned(),
            ca: dir.join("ca.pem"),
        })
    }

    /// The CA's certificate (PEM).
    pub fn ca_file(&self) -> &Path {
        &self.ca
    }

    /// `NAME.crt` and `NAME.key`: a server certificate for `localhost` and 127.0.0.1.
    pub fn issue_server(&self, name: &str) -> Result<Issued, CommandError> {
        self.issue(name, "/CN=localhost", SERVER_EXTENSIONS)
    }

    /// `NAME.crt` and `NAME.key`: a client certificate whose subject's CN is `cn`.
    pub fn issue_client(&self, name: &str, cn: &str) -> Result<Issued, CommandError> {
        self.issue(name, &format!("/CN={cn}"), CLIENT_EXTENSIONS)
    }

    /// `NAME.crt` for `subject` with the X.509 `extensions` (an extfile's lines), signed by
    /// this CA, and its new key `NAME.key`, readable by its owner only.
    fn issue(&self, name: &str, subject: &str, extensions: &str) -> Result<Issued, CommandError> {
        let dir = &self.dir;
        let (key, csr, ext, crt) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.ext"),
            format!("{name}.crt"),
        );
        let request = ["-keyout", &key, "-out", &csr, "-subj", subject];
        openssl(dir, &[&["req"][..], &EC_KEY, &request].concat())?;
        let ext_path = dir.join(&ext);
        std::fs::write(&ext_path, extensions)
            .map_err(|error| CommandError::Write(ext_path, error))?;
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ],
        )?;
        run(Command::new("chmod").arg("600").arg(dir.join(&key)))?;
        Ok(Issued {
            cert: dir.join(crt),
            key: dir.join(key),
        })
    }
}

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) -> Result<(), CommandError> {
    run(Command::new("openssl").args(args).current_dir(dir)).map(drop)
}

/// Runs `command` to its end; an error unless it succeeded, with what it printed.
pub(crate) fn run(command: &mut Command) -> Result<Output, CommandError> {
    let shown = format!("{command:?}");
    let output = command.output().map_err(|source| CommandError::Spawn {
        command: shown.clone(),
        source,
    })?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(CommandError::Failed {
            command: shown,
            status: output.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        })
    }
}
