//! The managed configuration on a real PostgreSQL 15 (`switchboard-testkit`), through the
//! library: the store's compare-and-set refuses a second writer of one revision, and two
//! Hosts, each on its own file of built-in servers, follow each other's changes. A server
//! naming TLS files (this machine's) is refused there, and nothing is shared.

use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard::live::managed::ManagedDocument;
use switchboard::live::{ChangeError, ManagedStore};
use switchboard::{Change, ChangeRequest, Host, Surface};
use switchboard_core::config::edit::{EntryTls, EntryTransport, ServerEntry};
use switchboard_core::config::{Config, Format, MapEnvironment, Origin};
use switchboard_testkit::postgres::Postgres;

const FILE: &str = "# this replica's file\n[servers.clock]\nbuiltin = \"clock\"\n";

async fn migrated() -> Postgres {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let pool = switchboard_ledger::postgres::pool(&postgres.url(), 1).expect("pool");
    let mut client = pool.get().await.expect("connect");
    switchboard_ledger::postgres::migrate::migrate(&mut client)
        .await
        .expect("migrate");
    postgres
}

fn add_dice() -> Change {
    Change::Add {
        server: "dice".into(),
        entry: ServerEntry {
            transport: EntryTransport::Builtin {
                name: "dice".into(),
            },
            enabled: None,
            trust: None,
            sandbox: None,
        },
    }
}

async fn replica(dir: &Path, postgres: &Postgres) -> (Host, PathBuf) {
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, FILE).expect("write");
    let config = Config::parse(
        FILE,
        Origin::from(path.as_path()),
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid config");
    let host = Host::from_config(&config).expect("host");
    host.ready().await;
    let store = ManagedStore::new(&postgres.url()).expect("store");
    // The follower runs for as long as the test's runtime.
    let _follower = host.manage(store).await.expect("manage");
    (host, path)
}

/// A migrated PostgreSQL and two Hosts on it, `a` and `b`, each on its own file.
async fn two_replicas() -> (
    Postgres,
    tempfile::TempDir,
    (Host, PathBuf),
    (Host, PathBuf),
) {
    let postgres = migrated().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let a = replica(&dir.path().join("a"), &postgres).await;
    let b = replica(&dir.path().join("b"), &postgres).await;
    (postgres, dir, a, b)
}

fn has(host: &Host, tool: &str) -> bool {
    host.catalog().entries().iter().any(|e| e.exposed == tool)
}

async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_refuses_a_second_writer_of_one_revision() {
    let postgres = migrated().await;
    let store = ManagedStore::new(&postgres.url()).expect("store");
    assert_eq!(
        store.head().await.expect("head"),
        (0, ManagedDocument::default())
    );
    let document = ManagedDocument::default().changed(&add_dice());
    let revision = store
        .commit(0, &document, &add_dice(), Surface::Library, Some("test"))
        .await
        .expect("first writer");
    assert_eq!(revision, 1);
    let second = store
        .commit(0, &document, &add_dice(), Surface::Library, None)
        .await
        .expect_err("the same revision again");
    assert!(matches!(second, ChangeError::Conflict(_)), "{second}");
    assert_eq!(store.head().await.expect("head"), (1, document));
    assert_eq!(store.head_revision().await.expect("head"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_host_reaches_the_other_and_no_file_is_rewritten() {
    let (_postgres, _dir, (a, file_a), (b, file_b)) = two_replicas().await;

    a.apply(ChangeRequest::new(add_dice(), Surface::Library))
        .await
        .expect("add on A");
    assert!(has(&a, "dice__roll"));
    eventually("dice on B", || has(&b, "dice__roll")).await;
    // The catalog is published before the revision it came from is noted: wait for both.
    eventually("B runs revision 1", || {
        b.live_status().managed.map(|m| m.revision) == Some(1)
    })
    .await;

    let remove = Change::Remove {
        server: "clock".into(),
    };
    b.apply(ChangeRequest::new(remove, Surface::Library))
        .await
        .expect("remove on B");
    eventually("clock gone from A", || !has(&a, "clock__now")).await;
    eventually("A runs revision 2", || {
        a.live_status().managed.map(|m| m.revision) == Some(2)
    })
    .await;
    let status = a.live_status().managed.expect("managed");
    // The file still has clock: the managed removal overrides it, and says so.
    assert!(
        status.notes.iter().any(|n| n.contains("servers.clock")),
        "{:?}",
        status.notes
    );
    for file in [file_a, file_b] {
        assert_eq!(std::fs::read_to_string(file).expect("read"), FILE);
    }
}

/// PostgreSQL away: a change is refused and nothing changes; back, changes apply again and
/// the other Host catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgresql_away_changes_are_refused_and_replicas_catch_up_after() {
    let (postgres, _dir, (a, _), (b, _)) = two_replicas().await;
    postgres.stop().expect("stop postgres");
    let refused = a
        .apply(ChangeRequest::new(add_dice(), Surface::Library))
        .await
        .expect_err("no store");
    assert!(
        refused
            .to_string()
            .contains("managed configuration on PostgreSQL"),
        "{refused}"
    );
    assert!(!has(&a, "dice__roll") && has(&a, "clock__now"));
    postgres.resume().expect("resume postgres");
    a.apply(ChangeRequest::new(add_dice(), Surface::Library))
        .await
        .expect("add once PostgreSQL is back");
    eventually("dice on B", || has(&b, "dice__roll")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_naming_tls_files_is_not_shared() {
    let postgres = migrated().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, file) = replica(&dir.path().join("a"), &postgres).await;
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, "PEM").expect("write");
    let internal = Change::Add {
        server: "internal".into(),
        entry: ServerEntry {
            transport: EntryTransport::Http {
                url: "https://127.0.0.1:9/mcp".into(),
                headers: Default::default(),
                tls: Some(EntryTls {
                    ca: Some(ca.display().to_string()),
                    ..EntryTls::default()
                }),
                public_only: false,
            },
            enabled: None,
            trust: None,
            sandbox: None,
        },
    };
    let refused = a
        .apply(ChangeRequest::new(internal, Surface::Library))
        .await
        .expect_err("refused");
    assert!(
        matches!(&refused, ChangeError::Invalid(problems)
            if problems.iter().any(|p| p.contains("each replica's config file"))),
        "{refused}"
    );
    let store = ManagedStore::new(&postgres.url()).expect("store");
    assert_eq!(
        store.head_revision().await.expect("head"),
        0,
        "nothing shared"
    );
    assert_eq!(std::fs::read_to_string(file).expect("read"), FILE);
}
