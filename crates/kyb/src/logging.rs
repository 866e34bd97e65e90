//! Logs go to stderr through `tracing`; `RUST_LOG` wins over `--log-level`.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

pub fn init(level: Option<&str>) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.is_empty() => EnvFilter::new(directives),
        _ => EnvFilter::new(level.unwrap_or("info")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}
