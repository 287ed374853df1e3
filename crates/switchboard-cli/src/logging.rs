//! Logs go to stderr (stdout belongs to the protocol on stdio), filtered by `--log`,
//! `$SWITCHBOARD_LOG` or a per-command default. A log line that cannot be written (stderr
//! closed by whoever started the gateway) is dropped: tracing's own report of that failure
//! would `eprintln!` to the same closed stderr, and that panic killed whichever task was
//! logging — an upstream's supervisor among them.

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
        .log_internal_errors(false)
        .try_init();
}
