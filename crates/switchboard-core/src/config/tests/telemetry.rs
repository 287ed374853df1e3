//! `[telemetry]`: metrics counted unless turned off, and a mistake at its place.

use super::problems::toml;
use super::*;

#[test]
fn calls_are_counted_for_metrics_unless_turned_off() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert!(!config.telemetry.metrics_off);
    let config = check_ok("[telemetry]\nmetrics = false\n", Format::Toml);
    assert!(config.telemetry.metrics_off);
    let config = check_ok(
        r#"{"telemetry": {"metrics": true}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert!(!config.telemetry.metrics_off);
    toml(
        "[telemetry]\nmetrics = \"off\"\n",
        &[(2, 11, "telemetry.metrics")],
    );
}
