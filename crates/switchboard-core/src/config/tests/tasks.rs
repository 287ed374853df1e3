//! `[gateway.tasks]`: defaults, values read in both formats, and mistakes at their place.

use std::time::Duration;

use super::problems::toml;
use super::*;

#[test]
fn task_bounds_default_and_are_read_in_both_formats() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert_eq!(config.gateway.tasks, TasksConfig::default());
    assert_eq!(config.gateway.tasks.max_per_caller, 100);
    let config = check_ok(
        "[gateway.tasks]\nmax_per_caller = 10000\ndefault_ttl = \"10m\"\nmax_ttl = \"2h\"\npoll_interval = 250\n",
        Format::Toml,
    );
    let tasks = &config.gateway.tasks;
    assert_eq!(tasks.max_per_caller, 10_000);
    assert_eq!(tasks.default_ttl, Duration::from_secs(600));
    assert_eq!(tasks.max_ttl, Duration::from_secs(7200));
    assert_eq!(tasks.poll_interval, Duration::from_millis(250));
    let config = check_ok(
        r#"{"gateway": {"tasks": {"max_per_caller": 5}}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert_eq!(config.gateway.tasks.max_per_caller, 5);
}

#[test]
fn task_bound_mistakes_are_located() {
    toml(
        "[gateway.tasks]\nmax_per_caller = 0\n",
        &[(2, 18, "gateway.tasks.max_per_caller")],
    );
    toml(
        "[gateway.tasks]\npoll_interval = \"0s\"\n",
        &[(
            2,
            17,
            "gateway.tasks.poll_interval must be longer than zero",
        )],
    );
    toml(
        "[gateway.tasks]\ndefault_ttl = \"2d\"\nmax_ttl = \"1h\"\n",
        &[(2, 15, "default_ttl")],
    );
    toml(
        "[gateway.tasks]\nmax_per_calller = 3\n",
        &[(2, 1, "unknown key 'max_per_calller' in gateway.tasks")],
    );
}

/// One agent's bound over all its sessions: a quarter of `max_tasks` unless set, read in
/// both formats, and a bad value located.
#[test]
fn the_per_agent_task_bound_defaults_to_a_quarter_and_is_read() {
    assert_eq!(TasksConfig::default().agent_limit(), 2_500);
    let config = check_ok("[gateway.tasks]\nmax_tasks = 400\n", Format::Toml);
    assert_eq!(config.gateway.tasks.agent_limit(), 100);
    let config = check_ok("[gateway.tasks]\nmax_tasks = 2\n", Format::Toml);
    assert_eq!(config.gateway.tasks.agent_limit(), 1);
    let config = check_ok("[gateway.tasks]\nmax_per_agent = 7\n", Format::Toml);
    assert_eq!(config.gateway.tasks.max_per_agent, Some(7));
    assert_eq!(config.gateway.tasks.agent_limit(), 7);
    let config = check_ok(
        r#"{"gateway": {"tasks": {"max_per_agent": 9}}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert_eq!(config.gateway.tasks.agent_limit(), 9);
    toml(
        "[gateway.tasks]\nmax_per_agent = 0\n",
        &[(
            2,
            17,
            "gateway.tasks.max_per_agent must be a positive integer",
        )],
    );
}
