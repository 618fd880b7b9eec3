//! Glovebox as MCP tools: a thin [rmcp] tool router on top of [`runtime::Runtime`], served over
//! stdio ([`serve_stdio`]) or as the `/mcp` route ([`router`]) that `server` mounts on its HTTP
//! listener. It holds no logic the runtime lacks (design invariant 7): it translates tool calls
//! into runtime calls, wraps page-derived text as untrusted, maps errors to the closed error
//! codes with a next step, bounds the rate of tool calls, and carries approvals to a person
//! (elicitation, or by naming the person channel, [`PersonChannel`]). It never approves anything
//! itself, and it serves no HTTP of its own.
//!
//! One MCP session is one Glovebox session with its own browser context; the session is created
//! on the first tool call and closed (`Runtime::close_session`) when the MCP session ends.

mod args;
mod client;
mod errors;
mod http;
mod jsonrpc;
mod person;
mod rate;
mod sampling;
mod server;
mod session;
pub mod stdio;
pub mod tools;
mod wrap;

pub use http::{MCP_PATH, McpRouter, RouterOptions, router};
pub use person::PersonChannel;
pub use rate::RateLimit;
pub use server::{GloveboxMcp, McpOptions};
pub use stdio::serve_stdio;
pub use wrap::Untrusted;

/// Why the MCP server stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The transport failed.
    #[error("MCP transport failed: {0}")]
    Transport(String),
    /// I/O while serving.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A random token of `bytes` bytes, hex-encoded (session nonces, bearer and person tokens).
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The OS generator does not fail on Linux after boot; if it ever does, refuse to hand out a
    // predictable token by panicking at start rather than continuing insecurely.
    getrandom::fill(&mut buf).expect("the OS random number generator is unavailable");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
