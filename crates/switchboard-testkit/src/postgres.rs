//! A throw-away PostgreSQL 15 for one test: `initdb` and `pg_ctl` in a temporary directory,
//! listening on a unix socket in that directory only (no TCP), `fsync` off, one database
//! created; stopped (`pg_ctl stop -m immediate`) and removed when the [`Postgres`] is dropped,
//! also when the test panics.
//!
//! [`Postgres::start_tcp`] also listens on 127.0.0.1 (TLS is not used over a unix socket),
//! with `ssl=on` and a certificate for `localhost` signed by a CA made for the test (the
//! `openssl` CLI), or with `ssl=off`. [`Postgres::start_client_cert`] also makes a client
//! certificate (CN = [`SUPERUSER`]) from that CA and lets TCP in only with one
//! (`hostssl all all 127.0.0.1/32 cert`); the unix socket stays `trust`.
//!
//! `initdb` refuses to run as root, so under root the server runs as the `postgres` user
//! (`runuser -u postgres`), which owns the directory. Missing binaries are an error that says
//! how to install them (`scripts/install-test-deps.sh`), never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::certs::{self, CommandError, TestCa};

/// Where Debian's `postgresql-15` puts its binaries; `SWITCHBOARD_PG_BIN` overrides it.
const DEFAULT_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The superuser `initdb` creates (trust authentication on the socket).
pub const SUPERUSER: &str = "switchboard";
/// The database created for the test.
pub const DATABASE: &str = "switchboard";

/// Why a PostgreSQL could not be started.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error(
        "PostgreSQL 15 is not installed ({0} is missing): run scripts/install-test-deps.sh \
         (apt-get install postgresql-15), or point SWITCHBOARD_PG_BIN at its bin directory"
    )]
    Missing(PathBuf),
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error("cannot make a temporary directory: {0}")]
    TempDir(std::io::Error),
    #[error("cannot find a free TCP port on 127.0.0.1: {0}")]
    Port(std::io::Error),
}

/// How a server started by [`Postgres::start_tcp`] listens on 127.0.0.1 besides its socket.
struct Tcp {
    port: u16,
    /// The CA of the server's certificate when `ssl=on`.
    ca: Option<TestCa>,
    /// The client's certificate when TCP requires one ([`Postgres::start_client_cert`]).
    client: Option<ClientCert>,
}

/// TLS on the server's TCP listener.
#[derive(Clone, Copy, PartialEq)]
enum Tls {
    Off,
    On,
    /// On, and a client certificate is the only way in (`pg_hba.conf`'s `cert`).
    ClientCert,
}

/// A client certificate the test CA signed, and its key (PEM files; the key readable by its
/// owner only).
pub use crate::certs::Issued as ClientCert;

/// A running PostgreSQL, stopped and removed on drop.
pub struct Postgres {
    bin: PathBuf,
    /// The server's `-o` options, kept to start it again.
    options: String,
    /// Holds `data/`, the log and the socket; removed on drop.
    dir: tempfile::TempDir,
    as_postgres: bool,
    tcp: Option<Tcp>,
}

impl Postgres {
    /// Initializes a cluster in a new temporary directory, starts it and creates the
    /// database [`DATABASE`].
    pub fn start() -> Result<Self, PostgresError> {
        Self::start_with(false, Tls::Off)
    }

    /// Like [`Self::start`], also listening on 127.0.0.1 on a free port: with `ssl=on` and a
    /// certificate for `localhost` and 127.0.0.1 from a CA made here ([`Self::ca_file`]) when
    /// `tls`, `ssl=off` otherwise.
    pub fn start_tcp(tls: bool) -> Result<Self, PostgresError> {
        Self::start_with(true, if tls { Tls::On } else { Tls::Off })
    }

    /// Like [`Self::start_tcp`] with TLS, but TCP lets in only a client certificate from the
    /// test CA whose CN is the user (`ssl_ca_file` and a `pg_hba.conf` of `hostssl all all
    /// 127.0.0.1/32 cert`); [`Self::client_cert`] is one for [`SUPERUSER`].
    pub fn start_client_cert() -> Result<Self, PostgresError> {
        Self::start_with(true, Tls::ClientCert)
    }

    fn start_with(tcp: bool, tls: Tls) -> Result<Self, PostgresError> {
        let bin = std::env::var_os("SWITCHBOARD_PG_BIN")
            .map_or_else(|| PathBuf::from(DEFAULT_BIN), PathBuf::from);
        for tool in ["initdb", "pg_ctl", "psql"] {
            let path = bin.join(tool);
            if !path.exists() {
                return Err(PostgresError::Missing(path));
            }
        }
        // Short and in /tmp: a unix socket's path must fit in 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("sbpg")
            .tempdir_in("/tmp")
            .map_err(PostgresError::TempDir)?;
        let tcp = match tcp {
            true => {
                let ca = match tls {
                    Tls::Off => None,
                    Tls::On | Tls::ClientCert => Some(make_certificates(dir.path())?),
                };
                let client = match (&ca, tls) {
                    (Some(ca), Tls::ClientCert) => Some(make_client_cert(ca, dir.path())?),
                    _ => None,
                };
                Some(Tcp {
                    port: free_port()?,
                    ca,
                    client,
                })
            }
            false => None,
        };
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:")
                .arg(dir.path()))?;
        }
        let mut options = format!(
            // fsync off: the machine does not crash in a test, the server may (`stop`), and
            // then what it acknowledged must survive, so commits stay synchronous.
            "-c unix_socket_directories='{}' -c fsync=off -c full_page_writes=off",
            dir.path().display()
        );
        match &tcp {
            None => options.push_str(" -c listen_addresses=''"),
            Some(tcp) => {
                let ssl = match tcp.ca {
                    Some(_) => format!(
                        "on -c ssl_cert_file='{0}/server.crt' -c ssl_key_file='{0}/server.key'",
                        dir.path().display()
                    ),
                    None => "off".to_owned(),
                };
                if tcp.client.is_some() {
                    options.push_str(&format!(
                        " -c ssl_ca_file='{0}/ca.pem' -c hba_file='{0}/pg_hba.conf'",
                        dir.path().display()
                    ));
                }
                options.push_str(&format!(
                    " -c listen_addresses='127.0.0.1' -c port={} -c ssl={ssl}",
                    tcp.port
                ));
            }
        }
        let postgres = Self {
            bin,
            options,
            dir,
            as_postgres,
            tcp,
        };
        let data = postgres.data_dir();
        postgres.tool(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
        )?;
        postgres.resume()?;
        postgres.psql("postgres", &format!("CREATE DATABASE {DATABASE}"))?;
        Ok(postgres)
    }

    /// Stops the server at once (`-m immediate`, like a crash), keeping its data: clients
    /// lose their connections until [`Self::resume`].
    pub fn stop(&self) -> Result<(), PostgresError> {
        let data = self.data_dir();
        self.tool("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .map(drop)
    }

    /// Starts the server (again, after [`Self::stop`]) and waits until it accepts connections.
    pub fn resume(&self) -> Result<(), PostgresError> {
        let data = self.data_dir();
        let log = self.dir.path().join("pg.log").display().to_string();
        self.tool(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-o", &self.options, "start"],
        )
        .map(drop)
    }

    /// The directory that holds the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `postgres://` URL of the test database, over the unix socket.
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// A `postgres://` URL of another database of this server (create it with [`Self::psql`]).
    pub fn url_of(&self, database: &str) -> String {
        match &self.tcp {
            None => format!(
                "postgres://{SUPERUSER}@/{database}?host={}",
                self.socket_dir().display()
            ),
            Some(tcp) => format!(
                "postgres://{SUPERUSER}@/{database}?host={}&port={}",
                self.socket_dir().display(),
                tcp.port
            ),
        }
    }

    /// A `postgres://` URL of the test database over TCP to `localhost` (the name on the
    /// certificate), `params` as its query (e.g. `sslmode=require`). None unless started with
    /// [`Self::start_tcp`].
    pub fn tcp_url(&self, params: &str) -> Option<String> {
        let tcp = self.tcp.as_ref()?;
        Some(format!(
            "postgres://{SUPERUSER}@localhost:{}/{DATABASE}?{params}",
            tcp.port
        ))
    }

    /// The PEM file of the CA that signed the server's certificate ([`Self::start_tcp`] with
    /// TLS).
    pub fn ca_file(&self) -> Option<&Path> {
        self.tcp.as_ref()?.ca.as_ref().map(TestCa::ca_file)
    }

    /// The client certificate for [`SUPERUSER`] ([`Self::start_client_cert`]).
    pub fn client_cert(&self) -> Option<&ClientCert> {
        self.tcp.as_ref()?.client.as_ref()
    }

    /// Another client certificate from the test CA, for the user `cn` (`NAME.crt`,
    /// `NAME.key`): one the server refuses for [`SUPERUSER`]. None unless started with
    /// [`Self::start_client_cert`].
    pub fn issue_client_cert(
        &self,
        name: &str,
        cn: &str,
    ) -> Option<Result<ClientCert, PostgresError>> {
        self.client_cert()?;
        let ca = self.tcp.as_ref()?.ca.as_ref()?;
        Some(ca.issue_client(name, cn).map_err(PostgresError::from))
    }

    /// Runs SQL through `psql` as the superuser in `database`; returns its output (unaligned,
    /// tuples only). An SQL error is an error.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, PostgresError> {
        let socket = self.socket_dir().display().to_string();
        let port = self.tcp.as_ref().map_or(5432, |tcp| tcp.port).to_string();
        let output = self.tool(
            "psql",
            &[
                "-h",
                &socket,
                "-p",
                &port,
                "-U",
                SUPERUSER,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-At",
                "-c",
                sql,
            ],
        )?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pg.log")).unwrap_or_default()
    }

    fn data_dir(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// Runs one of PostgreSQL's programs, as `postgres` under root.
    fn tool(&self, name: &str, args: &[&str]) -> Result<Output, PostgresError> {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&program);
            command
        } else {
            Command::new(&program)
        };
        // A working directory the `postgres` user may enter.
        command.args(args).current_dir(self.dir.path());
        run(&mut command)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data_dir();
        if let Err(error) = self.tool("pg_ctl", &["-D", &data, "-m", "immediate", "stop"]) {
            // Nothing to return to: say so, and let the directory go anyway.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("switchboard-testkit: cannot stop PostgreSQL: {error}\n").as_bytes(),
            );
        }
    }
}

/// A port nobody listens on now (the server takes it a moment later).
fn free_port() -> Result<u16, PostgresError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(PostgresError::Port)?;
    Ok(listener.local_addr().map_err(PostgresError::Port)?.port())
}

/// A CA (`ca.pem`) and a server certificate it signed for `localhost` and 127.0.0.1
/// (`server.crt`, `server.key` readable by its owner only, as PostgreSQL demands), in `dir`.
fn make_certificates(dir: &Path) -> Result<TestCa, PostgresError> {
    let ca = TestCa::make(dir)?;
    ca.issue_server("server")?;
    Ok(ca)
}

/// A client certificate for [`SUPERUSER`] signed by `ca` (`client.crt`, `client.key`
/// readable by its owner only, as libpq demands), and a `pg_hba.conf` in `dir` that lets TCP
/// in with such a certificate only (the socket stays `trust`).
fn make_client_cert(ca: &TestCa, dir: &Path) -> Result<ClientCert, PostgresError> {
    let issued = ca.issue_client("client", SUPERUSER)?;
    std::fs::write(
        dir.join("pg_hba.conf"),
        "local all all trust\nhostssl all all 127.0.0.1/32 cert\n",
    )
    .map_err(PostgresError::TempDir)?;
    Ok(issued)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn run(command: &mut Command) -> Result<Output, PostgresError> {
    Ok(certs::run(command)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_and_stops() {
        let postgres = match Postgres::start() {
            Ok(postgres) => postgres,
            Err(error) => panic!("{error}"),
        };
        let socket = postgres.socket_dir().join(".s.PGSQL.5432");
        assert!(postgres.url().starts_with("postgres://"));
        match postgres.psql(DATABASE, "SELECT 40 + 2") {
            Ok(answer) => assert_eq!(answer, "42"),
            Err(error) => panic!("{error}\n{}", postgres.log()),
        }
        assert!(socket.exists());
        let dir = postgres.socket_dir().to_owned();
        drop(postgres);
        assert!(!dir.exists(), "the directory is removed on drop");
    }

    #[test]
    fn starts_with_tls_on_loopback() {
        let postgres = match Postgres::start_tcp(true) {
            Ok(postgres) => postgres,
            Err(error) => panic!("{error}"),
        };
        let ca = postgres.ca_file().map(Path::to_owned);
        assert!(ca.is_some_and(|ca| ca.exists()));
        let url = postgres.tcp_url("sslmode=require").unwrap_or_default();
        assert!(
            url.starts_with("postgres://switchboard@localhost:"),
            "{url}"
        );
        match postgres.psql(DATABASE, "SHOW ssl") {
            Ok(answer) => assert_eq!(answer, "on"),
            Err(error) => panic!("{error}\n{}", postgres.log()),
        }
    }

    #[test]
    fn starts_requiring_a_client_certificate() {
        let postgres = match Postgres::start_client_cert() {
            Ok(postgres) => postgres,
            Err(error) => panic!("{error}"),
        };
        let client = postgres.client_cert().cloned();
        assert!(client.is_some_and(|c| c.cert.exists() && c.key.exists()));
        match postgres.psql(DATABASE, "SHOW hba_file") {
            Ok(answer) => assert!(answer.ends_with("/pg_hba.conf"), "{answer}"),
            Err(error) => panic!("{error}\n{}", postgres.log()),
        }
    }
}
