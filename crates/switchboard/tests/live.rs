//! The live-configuration operation through the library, on built-in servers (in-process, no
//! network): reconcile keeps what did not change, applies naming live, removes what left;
//! `Host::apply` persists, refuses stale revisions and read-only changes, and a dry run
//! writes nothing.

mod support;

use std::path::Path;

use switchboard::live::Action;
use switchboard::{Change, ChangeError, ChangeRequest, Host, LiveOptions, Surface};
use switchboard_core::config::Config;
use switchboard_core::config::edit::{EntryTransport, ServerEntry};

const START: &str = "# two built-ins\n[servers.clock]\nbuiltin = \"clock\"\n\n[servers.dice]   # rolls\nbuiltin = \"dice\"\nseed = 7\n";

fn parse(text: &str, path: &Path) -> Config {
    support::parse_config(text, path)
}

fn names(host: &Host) -> Vec<String> {
    host.catalog()
        .entries()
        .iter()
        .map(|e| e.exposed.clone())
        .collect()
}

async fn started(dir: &Path) -> (Host, std::path::PathBuf) {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, START).expect("write");
    let host = Host::from_config(&parse(START, &path)).expect("host");
    host.ready().await;
    (host, path)
}

#[tokio::test]
async fn a_reload_applies_naming_live_and_removes_what_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (host, path) = started(dir.path()).await;
    assert!(names(&host).contains(&"clock__now".to_owned()));
    let mut version = host.catalog_version();
    version.mark_unchanged();

    let next = "[servers.dice]\nbuiltin = \"dice\"\nseed = 7\nprefix = \"d\"\n";
    let report = host
        .reload(parse(next, &path), Surface::Library)
        .await
        .expect("reload");
    let action = |server: &str| {
        report
            .servers
            .iter()
            .find(|s| s.server == server)
            .map(|s| s.action)
    };
    assert_eq!(action("dice"), Some(Action::Updated));
    assert_eq!(action("clock"), Some(Action::Removed));
    let now = names(&host);
    assert!(now.contains(&"d__roll".to_owned()), "{now:?}");
    assert!(!now.iter().any(|n| n.starts_with("clock__")), "{now:?}");
    assert!(version.has_changed().expect("host alive"));
    let dice = host
        .status()
        .into_iter()
        .find(|s| s.server == "dice")
        .expect("dice");
    assert_eq!(dice.generation, 2);
    let call = host
        .call(
            &Default::default(),
            "d__roll",
            serde_json::from_str(r#"{"expression": "1d6"}"#).expect("json"),
        )
        .await
        .expect("a call under the new name");
    assert!(!call.is_error, "{call:?}");
    let unknown = host
        .call(&Default::default(), "clock__now", Default::default())
        .await;
    assert!(unknown.is_err(), "a removed server's tool is unknown");
    host.shutdown().await;
}

#[tokio::test]
async fn apply_persists_one_entry_and_refuses_stale_revisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (host, path) = started(dir.path()).await;
    let base = host.revision();
    let add = Change::Add {
        server: "clock2".into(),
        entry: ServerEntry {
            transport: EntryTransport::Builtin {
                name: "clock".into(),
            },
            enabled: None,
            trust: None,
            sandbox: None,
        },
    };

    // A dry run shows the diff and writes nothing.
    let mut dry = ChangeRequest::new(add.clone(), Surface::Library);
    dry.dry_run = true;
    let report = host.apply(dry).await.expect("dry run");
    assert!(report.diff.contains("+[servers.clock2]"), "{}", report.diff);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), START);
    assert_eq!(host.revision(), base);

    let mut request = ChangeRequest::new(add.clone(), Surface::Library);
    request.base_revision = Some(base.clone());
    let report = host.apply(request).await.expect("add");
    assert_eq!(report.servers[0].action, Action::Added);
    assert_eq!(report.servers[0].state, "up");
    let written = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        written,
        format!("{START}\n[servers.clock2]\nbuiltin = \"clock\"\n")
    );
    assert!(names(&host).contains(&"clock2__now".to_owned()));
    assert_ne!(host.revision(), base);

    // The same base revision again: a conflict, nothing changes.
    let mut stale = ChangeRequest::new(
        Change::Remove {
            server: "dice".into(),
        },
        Surface::Library,
    );
    stale.base_revision = Some(base);
    let refused = host.apply(stale).await.expect_err("stale");
    assert_eq!(refused.code(), "conflict", "{refused}");
    assert!(names(&host).iter().any(|n| n.starts_with("dice__")));

    // An id already taken, and one that is not there.
    let exists = host
        .apply(ChangeRequest::new(add, Surface::Library))
        .await
        .expect_err("exists");
    assert!(matches!(exists, ChangeError::Exists(_)), "{exists}");
    let missing = host
        .apply(ChangeRequest::new(
            Change::Disable {
                server: "nope".into(),
            },
            Surface::Library,
        ))
        .await
        .expect_err("missing");
    assert_eq!(missing.code(), "not_found");

    // Read-only: refused, whatever the change.
    host.set_live_options(LiveOptions {
        read_only: true,
        ..LiveOptions::default()
    });
    let refused = host
        .apply(ChangeRequest::new(
            Change::Remove {
                server: "clock".into(),
            },
            Surface::Library,
        ))
        .await
        .expect_err("read-only");
    assert_eq!(refused.code(), "read_only");
    host.shutdown().await;
}

#[tokio::test]
async fn a_change_that_would_make_the_file_invalid_is_refused_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (host, path) = started(dir.path()).await;
    let add = Change::Add {
        server: "bad".into(),
        entry: ServerEntry {
            transport: EntryTransport::Builtin {
                name: "clok".into(),
            },
            enabled: None,
            trust: None,
            sandbox: None,
        },
    };
    let refused = host
        .apply(ChangeRequest::new(add, Surface::Library))
        .await
        .expect_err("invalid");
    let ChangeError::Invalid(problems) = &refused else {
        panic!("{refused}");
    };
    let text = problems.join("\n");
    assert!(
        text.contains("switchboard.toml:") && text.contains("clok"),
        "{text}"
    );
    assert!(text.contains("did you mean 'clock'"), "{text}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), START);
    host.shutdown().await;
}

const LIMITED: &str =
    "[gateway]\nlimits = { per_minute = 1, burst = 1 }\n\n[servers.clock]\nbuiltin = \"clock\"\n";

async fn now(host: &Host) -> switchboard_core::ToolOutcome {
    host.call(&Default::default(), "clock__now", Default::default())
        .await
        .expect("an outcome")
}

#[tokio::test]
async fn a_change_elsewhere_keeps_the_rate_limiters_state_and_a_change_of_limits_resets_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    std::fs::write(&path, LIMITED).expect("write");
    let host = Host::from_config(&parse(LIMITED, &path)).expect("host");
    host.ready().await;
    assert!(
        !now(&host).await.is_error,
        "the first call is within the limit"
    );
    assert!(now(&host).await.is_error, "the second is over it");

    // Another server added: the limiter still remembers the calls made.
    let more = format!("{LIMITED}\n[servers.dice]\nbuiltin = \"dice\"\n");
    host.reload(parse(&more, &path), Surface::Library)
        .await
        .expect("reload");
    assert!(
        now(&host).await.is_error,
        "a reload elsewhere reset the limit"
    );

    // The limit itself changed: it starts afresh under the new rule.
    let raised = more.replace("per_minute = 1, burst = 1", "per_minute = 600, burst = 5");
    host.reload(parse(&raised, &path), Surface::Library)
        .await
        .expect("reload");
    assert!(
        !now(&host).await.is_error,
        "the raised limit does not apply"
    );
    host.shutdown().await;
}

/// A change of governance elsewhere (a cost) rebuilds the limits, and the gateway's
/// unchanged rate keeps what it counted.
#[tokio::test]
async fn a_change_of_costs_keeps_the_state_of_unchanged_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    std::fs::write(&path, LIMITED).expect("write");
    let host = Host::from_config(&parse(LIMITED, &path)).expect("host");
    host.ready().await;
    assert!(!now(&host).await.is_error, "the first call is within it");

    let costed = format!("{LIMITED}cost = 1\n");
    host.reload(parse(&costed, &path), Surface::Library)
        .await
        .expect("reload");
    assert!(
        now(&host).await.is_error,
        "a change of costs gave the gateway's rate a fresh burst"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_change_of_an_agents_view_alone_is_announced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    let with_agent = |allow: &str| format!("{START}\n[agents.npc]\nallow = [{allow:?}]\n");
    let text = with_agent("clock__*");
    std::fs::write(&path, &text).expect("write");
    let host = Host::from_config(&parse(&text, &path)).expect("host");
    host.ready().await;
    let listed = |host: &Host| host.listing_json(Some("npc")).to_string();
    assert!(listed(&host).contains("clock__now") && !listed(&host).contains("dice__roll"));
    let mut version = host.catalog_version();
    version.mark_unchanged();

    host.reload(parse(&with_agent("dice__*"), &path), Surface::Library)
        .await
        .expect("reload");
    assert!(
        version.has_changed().expect("alive"),
        "no list_changed for a new view"
    );
    let now = listed(&host);
    assert!(
        now.contains("dice__roll") && !now.contains("clock__now"),
        "{now}"
    );
    host.shutdown().await;
}

/// A file edited after the gateway read it but before its watcher started (no event the
/// watcher could hear) is still applied: the watcher looks once when it starts, against
/// the text the running config was read from.
#[tokio::test]
async fn an_edit_made_while_the_gateway_started_is_applied_by_the_watcher() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (host, path) = started(dir.path()).await;
    let edited = "[servers.dice]\nbuiltin = \"dice\"\nseed = 7\n";
    std::fs::write(&path, edited).expect("edit");
    let watcher = switchboard::live::watch::watch(host.clone(), &path).expect("watch");
    let started = std::time::Instant::now();
    while names(&host).contains(&"clock__now".to_owned()) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the edit made before the watch is not applied: {:?}",
            names(&host)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    watcher.abort();
}
