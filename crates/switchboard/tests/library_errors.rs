//! What `Host::from_config` says when a config that validated cannot be run: a typed
//! `AssembleError` whose variant names the server or the section at fault, with the same
//! words the gateway prints.

mod support;

use switchboard::{AssembleError, Host};

fn refused(text: &str) -> AssembleError {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = support::parse_config(text, &dir.path().join("switchboard.toml"));
    match Host::from_config(&config) {
        Ok(_) => panic!("a config that cannot run was built:\n{text}"),
        Err(error) => error,
    }
}

#[tokio::test]
async fn a_sandbox_without_a_launcher_names_its_server() {
    let error = refused(
        "[gateway]\npins = \"pins.json\"\n\n[gateway.sandbox]\nfiles = 64\n\n\
         [servers.boxed]\ncommand = \"x\"\n",
    );
    assert!(
        matches!(&error, AssembleError::SandboxWithoutLauncher { server } if server == "boxed"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.starts_with("server 'boxed' has a sandbox")
            && text.contains("HostOptions::sandbox_launcher"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_key_ring_is_a_keys_error() {
    let error = refused(
        "[gateway]\npins = \"pins.json\"\n\n[shared]\nkeys = \"missing.keys\"\n\n\
         [servers.dice]\nbuiltin = \"dice\"\n",
    );
    assert!(matches!(&error, AssembleError::Keys(_)), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with("[shared] keys: key ring") && text.contains("missing.keys"),
        "{text}"
    );
}
