//! A Host built from a config whose servers say `trust = "pinned"`, with no place for pins —
//! no `gateway.pins`, no `gateway.ledger`, and no data directory because neither
//! `XDG_DATA_HOME` nor `HOME` is set — is refused, naming those servers, rather than run
//! with their definitions unpinned (`AssembleError::NoPlaceForPins`).
//!
//! A test cannot unset `HOME` in its own process safely (other test threads read the
//! environment), and the CLI refuses earlier (its ledger needs the same data directory), so
//! the test runs this test binary again with an empty environment, asking for this one test,
//! and that child builds the Host.

use std::process::Command;

use switchboard::{AssembleError, Host};
use switchboard_core::config::{Config, Format, MapEnvironment, Origin};

/// Set in the child's environment: there, the test builds the Host.
const CHILD: &str = "SWITCHBOARD_TEST_PINS_WITHOUT_DATA_DIR";

/// What the child prints once it has seen the refusal (a filter that matched no test would
/// also exit 0).
const REFUSED: &str = "refused: no place for pins";

const TEST: &str = "pinned_servers_without_a_place_for_pins_are_refused_by_name";

#[test]
fn pinned_servers_without_a_place_for_pins_are_refused_by_name() {
    if std::env::var_os(CHILD).is_some() {
        build_the_host_without_a_data_dir();
        return;
    }
    let me = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(me)
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env(CHILD, "1")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(REFUSED),
        "the child did not see the refusal ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// In the child: no `HOME`, no `XDG_DATA_HOME`.
fn build_the_host_without_a_data_dir() {
    assert!(
        std::env::var_os("HOME").is_none() && std::env::var_os("XDG_DATA_HOME").is_none(),
        "the child runs without a data directory"
    );
    assert_eq!(switchboard::data_dir::data_dir(), None);
    let text = "[servers.lore]\ncommand = \"lore-server\"\ntrust = \"pinned\"\n\n\
                [servers.dice]\ncommand = \"dice-server\"\n\n\
                [servers.vault]\ncommand = \"vault-server\"\ntrust = \"pinned\"\n";
    let config = Config::parse(
        text,
        Origin::from(std::path::Path::new("/nowhere/switchboard.toml")),
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid config");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _entered = runtime.enter();
    let error = match Host::from_config(&config) {
        Err(error) => error,
        Ok(_) => panic!("a Host with pinned servers and no place for pins was built"),
    };
    let message = error.to_string();
    let AssembleError::NoPlaceForPins { mut servers } = error else {
        panic!("refused for another reason: {message}");
    };
    servers.sort();
    assert_eq!(servers, ["lore", "vault"], "only the pinned servers");
    assert!(
        message.contains("lore") && message.contains("vault") && !message.contains("dice"),
        "the refusal names the pinned servers: {message}"
    );
    println!("{REFUSED}");
}
