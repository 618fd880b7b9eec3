//! The trusted side of every primitive: the runner hands each parsed request to a [`Broker`]
//! (the runtime's, in `runtime/src/script.rs`), which holds the real surfaces, leases and
//! permissions and runs the request through the runtime's one checked path. The script only
//! ever holds names and tokens; the broker re-validates each use.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use protocol::ErrorCode;
use serde::Serialize;
use serde_json::Value;

use crate::wire::Method;

/// A boxed future, as the broker trait returns them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One primitive to run, after the runner checked its generation, id, method and budget.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub operation_id: &'a str,
    pub method: Method,
    /// The surface the request names, or none for the call's surface.
    pub resource: Option<&'a str>,
    pub arguments: &'a serde_json::Map<String, Value>,
    /// The observation token the request was planned against.
    pub observation: Option<&'a str>,
    /// When the whole `gui_exec` call ends; a wait never runs past it.
    pub deadline: Instant,
}

/// Whether a write took effect, as its receipt says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    /// Sent and taken (a `dispatched` or `confirmed` receipt).
    Applied,
    /// Not taken (refused before dispatch, or sent and seen not to take).
    Failed,
    /// Sent, and whether it took cannot be known.
    Unknown,
}

/// A write's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub state: EffectState,
    pub effect_uncertain: bool,
}

/// A primitive's answer.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// What the script gets back (a JSON object).
    pub value: Value,
    /// A PNG the script gets as an image frame after the reply.
    pub image: Option<Vec<u8>>,
    /// For a write: its effect.
    pub effect: Option<Effect>,
    /// The surface the primitive ran on, and its observation token after it.
    pub surface: Option<String>,
    pub observation: Option<String>,
}

/// A primitive refused or failed, with a code of the closed set.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    /// For a write that was sent before it failed.
    pub effect: Option<Effect>,
    /// Details the script may read (e.g. a pending approval's id).
    pub details: Value,
}

impl Refusal {
    /// A refusal before anything ran.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            effect: None,
            details: Value::Null,
        }
    }
}

/// The trusted holder of every real object a script's primitives reach.
pub trait Broker: Send + Sync {
    /// Runs one primitive.
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Answer, Refusal>>;

    /// The call is over its time or was cancelled: no write may start from here on, and any key
    /// or button a primitive left held is released. Called before the runner's process is
    /// killed.
    fn revoke(&self) -> BoxFuture<'_, ()>;
}
