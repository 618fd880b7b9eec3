//! Glovebox's HTTP house: everything a person, a desktop host or an MCP client reaches over
//! HTTP or a WebSocket is served here, on one listener, over [`runtime::Runtime`].
//!
//! - `listener.rs`: [`serve`], the listener and its one guard (Host, Origin, who may call what,
//!   body limits); it mounts MCP's `/mcp` router ([`mcp::router`]) beside the routes below.
//! - `person.rs`: the person channel (approvals, a person's tabs, access, take-over and hand-back,
//!   runs waiting for a person, turns, the operation log, artifacts, host window registration)
//!   and the console's page, script and style (`console/`).
//! - `person_view.rs`: the live view WebSocket (a page's frames out, a person's input in).
//! - `operator.rs`: `/metrics`, `/healthz` and `/readyz` for an operator's tools.
//! - `host.rs`: the host API's renderer WebSocket (registry events, chat turns, tool calls, turn
//!   ends). The host API's state and rules are the runtime's (`runtime/src/host.rs`).
//!
//! Transports are thin: every message is deserialised into the runtime's types and handed to the
//! runtime; no route decides what the runtime decides.

mod host;
mod listener;
mod operator;
mod person;
mod person_view;

pub use host::{HostOptions, MAX_MESSAGE_BYTES, RENDERER_PATH};
pub use listener::{HttpOptions, HttpServer, ServeError, serve};
pub use person::PersonDecision;
