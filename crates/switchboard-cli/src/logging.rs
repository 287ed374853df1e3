//! Logs go to stderr (stdout belongs to the protocol on stdio), filtered by `--log`,
//! `$SWITCHBOARD_LOG` or a per-command default.

use tracing_subscriber::EnvFilter;

pub fn init(flag: Option<&str>, default_level: &str) {
    let filter = flag
        .map(str::to_owned)
        .or_else(|| std::env::var("SWITCHBOARD_LOG").ok())
        .unwrap_or_else(|| default_level.to_owned());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
