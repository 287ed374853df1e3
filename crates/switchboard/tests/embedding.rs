//! What an agent embedding the Host relies on: a call made right after the Host is built
//! waits for its server's first connection, and the embedder's own hooks run beside the
//! config's and stay through a reload.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::Map;
use switchboard::{Host, HostOptions, Surface};
use switchboard_core::CallContext;
use switchboard_core::config::Config;
use switchboard_core::hooks::{Before, Hook, HookCall, HookFailure};
use switchboard_core::pipeline::Governance;

fn parse(text: &str, path: &Path) -> Config {
    support::parse_config(text, path)
}

#[tokio::test]
async fn a_call_right_after_the_host_is_built_waits_for_its_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    // A server that takes a moment to start.
    let text = format!(
        "[servers.fx]\ncommand = {:?}\nargs = [\"echo\", \"--start-delay-ms\", \"300\"]\n",
        support::fixture()
    );
    let host = Host::from_config(&parse(&text, &path)).expect("host");
    let mut arguments = Map::new();
    arguments.insert("message".into(), "hi".into());
    let answer = host
        .call(&CallContext::default(), "fx__echo", arguments)
        .await
        .expect("the tool is known once its server has connected");
    assert!(!answer.is_error, "{answer:?}");
    host.shutdown().await;
}

/// Denies every call of `dice__roll`, counting the calls it saw.
#[derive(Default)]
struct NoDice {
    seen: AtomicUsize,
}

impl Hook for NoDice {
    fn name(&self) -> &str {
        "no-dice"
    }

    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<Before, HookFailure>> {
        self.seen.fetch_add(1, Ordering::SeqCst);
        let denied = call.tool == "dice__roll";
        Box::pin(async move {
            Ok(if denied {
                Before::Deny {
                    reason: "no dice here".to_owned(),
                }
            } else {
                Before::Allow
            })
        })
    }
}

#[tokio::test]
async fn an_embedders_hooks_run_beside_the_configs_and_stay_through_a_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    let text =
        "[servers.clock]\nbuiltin = \"clock\"\n\n[servers.dice]\nbuiltin = \"dice\"\nseed = 7\n";
    std::fs::write(&path, text).expect("write");
    let hook = Arc::new(NoDice::default());
    let options = HostOptions {
        governance: Arc::new(Governance {
            hooks: vec![hook.clone() as Arc<dyn Hook>],
            ..Governance::default()
        }),
        ..HostOptions::default()
    };
    let host = Host::from_config_with(&parse(text, &path), options).expect("host");
    host.ready().await;
    let roll = || async {
        let mut arguments = Map::new();
        arguments.insert("expression".into(), "1d6".into());
        host.call(&CallContext::default(), "dice__roll", arguments)
            .await
            .expect("an answer")
    };
    let denied = roll().await;
    assert!(
        denied.is_error && denied.text_content().contains("no dice here"),
        "{denied:?}"
    );

    // A reload that changes the governance (a cost) builds it anew from the config.
    let next = text.replace("seed = 7\n", "seed = 7\ncost = 1\n");
    let reloaded = parse(&next, &path);
    host.reload(reloaded, Surface::Library)
        .await
        .expect("reload");
    let denied = roll().await;
    assert!(
        denied.is_error && denied.text_content().contains("no dice here"),
        "the embedder's hook was lost in the reload: {denied:?}"
    );
    assert_eq!(hook.seen.load(Ordering::SeqCst), 2);
    host.shutdown().await;
}
