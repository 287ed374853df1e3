//! `[shared]`: the key ring's path, read in both formats and resolved against the config's
//! directory; mistakes at their place.

use std::path::PathBuf;

use super::problems::toml;
use super::*;

#[test]
fn the_key_ring_path_is_read_in_both_formats() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert_eq!(config.shared.keys, None);
    let config = check_ok("[shared]\nkeys = \"/etc/sb/keys.json\"\n", Format::Toml);
    assert_eq!(config.shared.keys, Some(PathBuf::from("/etc/sb/keys.json")));
    let config = check_ok(
        r#"{"shared": {"keys": "/k.json"}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert_eq!(config.shared.keys, Some(PathBuf::from("/k.json")));
}

#[test]
fn key_ring_mistakes_are_located() {
    toml("[shared]\nkeys = \"\"\n", &[(2, 8, "shared.keys is empty")]);
    toml("[shared]\nkeys = 3\n", &[(2, 8, "shared.keys")]);
    toml(
        "[shared]\nkey = \"k.json\"\n",
        &[(2, 1, "unknown key 'key' in shared")],
    );
}
