//! `[shared]`: the key ring's path (read in both formats, resolved against the config's
//! directory) and Redis (defaults, values in both formats); mistakes at their place.

use std::path::PathBuf;

use super::problems::toml;
use super::*;
use crate::limits::WhenUnreachable;

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

#[test]
fn shared_redis_defaults_and_is_read_in_both_formats() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert_eq!(config.shared, SharedConfig::default());
    assert_eq!(config.shared.deployment(), "default");
    let config = check_ok(
        "[shared]\nredis = \"unix:///run/redis.sock\"\nredis_unavailable = \"fail_closed\"\ndeployment = \"prod\"\n",
        Format::Toml,
    );
    assert_eq!(
        config.shared.redis.as_deref(),
        Some("unix:///run/redis.sock")
    );
    assert_eq!(config.shared.redis_unavailable, WhenUnreachable::FailClosed);
    assert_eq!(config.shared.deployment(), "prod");
    let config = check_ok(
        r#"{"shared": {"redis": "redis://127.0.0.1:6379", "replicas": 3}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert_eq!(config.shared.redis_unavailable, WhenUnreachable::FailOpen);
    assert_eq!(config.shared.replicas, Some(3));
}

#[test]
fn shared_redis_mistakes_are_located() {
    toml(
        "[shared]\nredis = \"http://x\"\nreplicas = 2\n",
        &[(
            2,
            9,
            "shared.redis must be a redis://, rediss:// or unix:// URL",
        )],
    );
    toml(
        "[shared]\nredis = \"redis://x\"\nredis_unavailable = \"fail_opn\"\nreplicas = 2\n",
        &[(3, 21, "shared.redis_unavailable 'fail_opn' is not known")],
    );
    toml(
        "[shared]\nredis = \"redis://x\"\nreplicas = 0\nredis_unavailable = \"fail_closed\"\n",
        &[(3, 12, "shared.replicas must be a positive integer")],
    );
    toml(
        "[shared]\nredis = \"redis://x\"\n",
        &[(
            1,
            1,
            "shared.replicas is missing: with redis_unavailable = \"fail_open\" (the default)",
        )],
    );
    toml(
        "[shared]\nredis = \"redis://x\"\nreplicas = 2\ndeployment = \"a b\"\n",
        &[(4, 14, "shared.deployment 'a b' must be 1-64 characters")],
    );
    toml(
        "[shared]\nredis_unavailable = \"fail_closed\"\n",
        &[(
            1,
            1,
            "shared.redis_unavailable has no effect without shared.redis",
        )],
    );
    toml(
        "[shared]\nredis = \"redis://x\"\nreplicas = 2\nreplica = 1\n",
        &[(4, 1, "unknown key 'replica'")],
    );
}
