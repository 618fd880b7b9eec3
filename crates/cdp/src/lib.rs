//! A thin Chrome DevTools Protocol client and Chromium launcher; it knows nothing about runs, policy or models.
//!
//! One [`Connection`] is one WebSocket to a browser. Targets are reached through flattened sessions
//! ([`Session`]), so a single socket serves many tabs and out-of-process iframes, and every command is
//! addressed to exactly one session. Every command has a deadline; when the socket closes, every
//! pending command fails at once with [`CdpError::Closed`].
//!
//! [`launch`] finds and starts a local Chromium that dies with this process; [`endpoint`] resolves a
//! remote browser (`ws://…` or `http://host:port`).

mod attach;
mod cbor;
mod connection;
pub mod domains;
pub mod endpoint;
mod error;
mod events;
mod gate;
pub mod launch;
mod session;

pub use attach::{ChildTarget, ChildTargets, ChildView, Prepare};
pub use connection::{Connection, ConnectionOptions, DEFAULT_COMMAND_TIMEOUT, RoundTripHook};
pub use error::CdpError;
pub use events::{Event, EventFilter, EventStream, Lagged};
pub use gate::OpenerWatch;
pub use launch::{Browser, LaunchError, LaunchOptions};
pub use session::{Command, Session, SessionId, TargetId};
