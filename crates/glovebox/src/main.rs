//! The `glovebox` binary: command line, configuration and tracing set-up; no runtime logic of its own.

/// `println!` that never panics: a reader that closed its end of stdout (`glovebox launch | head
/// -1`, a test that read what it needed) must not kill glovebox with the browser still running.
macro_rules! out {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout());
    }};
    ($($arg:tt)+) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)+);
    }};
}

/// `print!` that never panics (see [`out!`]).
macro_rules! out_part {
    ($($arg:tt)+) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)+);
    }};
}

/// An error with its causes on one line, each said once: a message that already quotes its cause
/// (`cannot listen on {addr}: {source}`) is not followed by that cause again, as `{:#}` would.
fn reason(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

mod bench;
mod browser;
mod cli;
mod commands;
mod config;
mod demo;
mod desktop;
mod eval;
mod log;
mod pages;
mod serve;
mod task;
mod terminal;
mod vm;

use clap::Parser;

/// `GLOVEBOX_LOG` (default `warn`), with the libraries that log whole messages — a tool call's
/// arguments, the text an agent types, a provider's request — held at `info` whatever it asks:
/// operator logs never carry what was typed into a field.
fn log_filter() -> tracing_subscriber::EnvFilter {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("GLOVEBOX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    for quiet in [
        "rmcp=info",
        "tungstenite=info",
        "tokio_tungstenite=info",
        "hyper=info",
        "hyper_util=info",
        "h2=info",
        "reqwest=info",
        "axum=info",
        "tower_http=info",
    ] {
        if let Ok(directive) = quiet.parse() {
            filter = filter.add_directive(directive);
        }
    }
    filter
}

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    // Operator logs go to stderr: stdout is reserved for command output (and MCP in stdio mode).
    // GLOVEBOX_LOG_FORMAT=json: one JSON object per line (its fields at the top level: the
    // session, run and operation ids of an action's line) for a log collector.
    if std::env::var("GLOVEBOX_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_writer(std::io::stderr)
            .with_env_filter(log_filter())
            .init();
    } else {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(log_filter())
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("glovebox: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("glovebox: {}", reason(&e));
            std::process::ExitCode::FAILURE
        }
    }
}
