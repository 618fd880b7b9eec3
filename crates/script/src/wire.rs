//! What the runner and the host say to each other, inside frames (`frame.rs`). The runner's
//! messages are parsed strictly (unknown fields and unknown methods refused) into closed types
//! before the host acts on any of them.
//!
//! Host → runner: `run {generation, code, surface, limits}`, `reply {operation_id, ok, value |
//! error}` (a reply whose `value.image` is true is followed by one image frame).
//! Runner → host: `ready {python}`, `request {operation_id, generation, resource, method,
//! arguments, observation}`, `output {text}`, `display {mime}` (then one image frame),
//! `done {ok, error}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The broker's methods: a closed set. Anything else is refused before it runs. None reaches a
/// raw page, CDP, cookies, a profile, a file of the host or a browser launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Opens a tab of the session at a URL (the runtime's `tab_open`, its policy included).
    Open,
    /// Lists the session's surfaces.
    Surfaces,
    /// Observes a surface (text, refs, a frame token).
    Observe,
    /// One action of the extended set on a surface, through the runtime's one checked path.
    Act,
    /// A screenshot of a surface (an image frame follows the reply).
    Screenshot,
    /// Waits, bounded, until a surface shows a text or an element.
    WaitFor,
    /// Closes a tab the session's agent opened.
    Close,
}

impl Method {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Surfaces => "surfaces",
            Self::Observe => "observe",
            Self::Act => "act",
            Self::Screenshot => "screenshot",
            Self::WaitFor => "wait_for",
            Self::Close => "close",
        }
    }

    /// Whether the method can change a page (what a revocation stops first).
    pub fn writes(self) -> bool {
        matches!(self, Self::Open | Self::Act | Self::Close)
    }
}

/// One broker request, as the runner sent it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Unique within the call (`op-1`, `op-2`, …); a repeated one is refused, never replayed.
    pub operation_id: String,
    /// The call's generation, as the host gave it in `run`; another is fenced.
    pub generation: u64,
    /// The surface (its key or alias), or none for the call's surface.
    #[serde(default)]
    pub resource: Option<String>,
    pub method: Method,
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
    /// The observation token (frame id) the request was planned against.
    #[serde(default)]
    pub observation: Option<String>,
}

/// What the runner reports when a script ends with an exception.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFailure {
    /// The exception's type, e.g. `NeedsApproval`, `ValueError`.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// The traceback's last lines (the script's own frames).
    #[serde(default)]
    pub traceback: String,
    /// When a primitive's refusal ended the script: its code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<protocol::ErrorCode>,
}

/// A message from the runner.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum FromRunner {
    Ready {
        python: String,
    },
    Request(Request),
    Output {
        text: String,
    },
    Display {
        mime: String,
    },
    Done {
        ok: bool,
        #[serde(default)]
        error: Option<ScriptFailure>,
    },
}

/// Parses a runner message; for a request that does not parse, the operation id it carried
/// (so the refusal reaches the waiting primitive).
pub(crate) fn parse(bytes: &[u8]) -> Result<FromRunner, (Option<String>, String)> {
    match serde_json::from_slice::<FromRunner>(bytes) {
        Ok(m) => Ok(m),
        Err(e) => {
            let op = serde_json::from_slice::<Value>(bytes).ok().and_then(|v| {
                v.get("operation_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            Err((op, e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_method_or_field_is_refused_with_its_operation_id() {
        let err = parse(br#"{"type":"request","operation_id":"op-3","generation":1,"method":"evaluate","arguments":{}}"#).unwrap_err();
        assert_eq!(err.0.as_deref(), Some("op-3"));
        assert!(err.1.contains("evaluate"), "{}", err.1);
        let err = parse(
            br#"{"type":"request","operation_id":"op-4","generation":1,"method":"act","cdp":true}"#,
        )
        .unwrap_err();
        assert_eq!(err.0.as_deref(), Some("op-4"));
        assert!(parse(br#"{"type":"shell","cmd":"id"}"#).is_err());
        let ok = parse(br#"{"type":"request","operation_id":"op-1","generation":2,"resource":"s1","method":"observe","arguments":{"near":"x"},"observation":null}"#).unwrap();
        assert!(matches!(
            ok,
            FromRunner::Request(Request {
                method: Method::Observe,
                generation: 2,
                ..
            })
        ));
    }
}
