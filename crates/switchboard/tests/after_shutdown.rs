//! A Host after `shutdown()`: every call, batch, change, reload and manager request is
//! refused with a typed error at once — none hangs, none starts a server again.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Map;
use switchboard::manager::{ManagerError, Request, Work};
use switchboard::{Change, ChangeError, ChangeRequest, Host, Surface};
use switchboard_core::CallContext;
use switchboard_core::config::Config;
use switchboard_core::pipeline::CallError;

/// Longer than any refusal may take; far shorter than a hang.
const PROMPT: Duration = Duration::from_secs(5);

fn config(dir: &Path, servers: &str) -> Config {
    let path = dir.join("switchboard.toml");
    let text = format!(
        "[gateway]\npins = \"pins.json\"\n\n[manager]\ndatabase = \"ops.db\"\nregistries = []\n\n{servers}"
    );
    std::fs::write(&path, &text).expect("write config");
    support::parse_config(&text, &path)
}

async fn shut_down_host(dir: &Path) -> Host {
    let servers = format!(
        "[servers.dice]\nbuiltin = \"dice\"\nseed = 7\n\n[servers.fx]\ncommand = {:?}\nargs = [\"echo\"]\n",
        support::fixture()
    );
    let host = Host::from_config(&config(dir, &servers)).expect("host");
    host.ready().await;
    assert!(!host.is_shut_down());
    tokio::time::timeout(PROMPT * 4, host.shutdown())
        .await
        .expect("shutdown ends");
    assert!(host.is_shut_down());
    host
}

#[tokio::test]
async fn calls_after_shutdown_are_refused_as_shut_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = shut_down_host(dir.path()).await;
    let ctx = CallContext::default();
    let mut arguments = Map::new();
    arguments.insert("message".into(), "hi".into());
    let answer = tokio::time::timeout(PROMPT, host.call(&ctx, "fx__echo", arguments.clone()))
        .await
        .expect("no hang");
    assert_eq!(answer, Err(CallError::ShutDown));
    let answers = tokio::time::timeout(
        PROMPT,
        host.call_all(
            &ctx,
            vec![
                ("dice__roll".to_owned(), Map::new()),
                ("fx__echo".to_owned(), arguments),
            ],
        ),
    )
    .await
    .expect("no hang");
    assert_eq!(
        answers,
        [Err(CallError::ShutDown), Err(CallError::ShutDown)]
    );
    // A second shutdown stops nothing more, and ends.
    tokio::time::timeout(PROMPT, host.shutdown())
        .await
        .expect("a second shutdown ends");
}

#[tokio::test]
async fn changes_and_reloads_after_shutdown_start_no_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = shut_down_host(dir.path()).await;
    let revision = host.revision();
    for change in [
        Change::Restart {
            server: "fx".to_owned(),
        },
        Change::Disable {
            server: "dice".to_owned(),
        },
    ] {
        let refused = tokio::time::timeout(
            PROMPT,
            host.apply(ChangeRequest::new(change, Surface::Library)),
        )
        .await
        .expect("no hang");
        assert!(matches!(refused, Err(ChangeError::ShutDown)), "{refused:?}");
    }
    let more =
        "[servers.dice]\nbuiltin = \"dice\"\nseed = 7\n\n[servers.clock]\nbuiltin = \"clock\"\n";
    let refused = tokio::time::timeout(
        PROMPT,
        host.reload(config(dir.path(), more), Surface::Library),
    )
    .await
    .expect("no hang");
    assert!(matches!(refused, Err(ChangeError::ShutDown)), "{refused:?}");
    let refused = tokio::time::timeout(PROMPT, host.reload_file(Surface::Library))
        .await
        .expect("no hang");
    assert!(matches!(refused, Err(ChangeError::ShutDown)), "{refused:?}");
    assert_eq!(host.revision(), revision, "nothing was applied");
    assert!(
        host.catalog()
            .entries()
            .iter()
            .all(|entry| !entry.exposed.starts_with("clock")),
        "no server was started"
    );
    let code = ChangeError::ShutDown;
    assert_eq!((code.code(), code.http_status()), ("shut_down", 503));
}

#[tokio::test]
async fn manager_requests_after_shutdown_are_refused_as_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = shut_down_host(dir.path()).await;
    let manager = host.manager().expect("the manager");
    let refused = tokio::time::timeout(
        PROMPT,
        manager.queue(Request::new(Work::Remove {
            server: "fx".to_owned(),
        })),
    )
    .await
    .expect("no hang");
    assert!(matches!(refused, Err(ManagerError::Gone)), "{refused:?}");
}
