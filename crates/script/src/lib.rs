//! `gui_exec`'s runner (`004_…` 持续运行器与代码契约): one persistent Python process per
//! session, started in a mandatory OS sandbox (`sandbox.rs`: bubblewrap namespaces, no host
//! files but the interpreter and the SDK, `seccomp.rs`'s filter), keeping its namespace across
//! calls, speaking a framed JSON protocol (`frame.rs`, `wire.rs`) to the host; every primitive a
//! script asks for is checked here (bounds, generation, operation id, budget) and then run by a
//! [`Broker`] the runtime implements, through its one checked path.
//!
//! Not here: any page, tab, lease or policy (the broker's, in the runtime); the transports (MCP,
//! the host API). This crate never reaches a surface itself.

pub mod broker;
pub mod frame;
pub mod result;
pub mod runner;
pub mod sandbox;
pub mod seccomp;
pub mod wire;

pub use broker::{Answer, BoxFuture, Broker, Call, Effect, EffectState, Refusal};
pub use result::{Block, ExecResult, ExecStatus};
pub use runner::{Limits, Runner};
pub use sandbox::{Sandbox, Unavailable};
pub use wire::Method;
