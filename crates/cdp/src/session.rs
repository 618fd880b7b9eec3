//! Sessions: a command target on a connection (the browser itself, or one attached target) and typed commands.

use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domains::target;
use crate::{CdpError, Connection, EventFilter, EventStream};

/// A flattened CDP session id (`sessionId` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub String);

/// A CDP target id (a tab, an out-of-process iframe, a worker…).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TargetId(pub String);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A typed CDP command: its params are `Self`, its reply is `Response`.
pub trait Command: Serialize {
    /// The CDP method name, e.g. `Runtime.evaluate`.
    const METHOD: &'static str;
    /// The decoded `result` of the reply. Lenient: unknown fields are ignored.
    type Response: DeserializeOwned;
}

/// Where commands go: the browser endpoint (`id() == None`) or exactly one attached target.
///
/// Cloning is cheap; clones address the same session.
#[derive(Clone)]
pub struct Session {
    conn: Connection,
    id: Option<SessionId>,
    target_id: Option<TargetId>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("target_id", &self.target_id)
            .finish()
    }
}

impl Session {
    pub(crate) fn new(
        conn: Connection,
        id: Option<SessionId>,
        target_id: Option<TargetId>,
    ) -> Self {
        Session {
            conn,
            id,
            target_id,
        }
    }

    /// The session id, or `None` for the browser-level session.
    pub fn id(&self) -> Option<&SessionId> {
        self.id.as_ref()
    }

    /// The target this session is attached to, when known.
    pub fn target_id(&self) -> Option<&TargetId> {
        self.target_id.as_ref()
    }

    /// The connection this session lives on.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Sends a typed command with the connection's default deadline.
    pub async fn call<C: Command>(&self, command: C) -> Result<C::Response, CdpError> {
        self.call_with(command, self.conn.default_timeout()).await
    }

    /// Sends a typed command with an explicit deadline.
    pub async fn call_with<C: Command>(
        &self,
        command: C,
        timeout: Duration,
    ) -> Result<C::Response, CdpError> {
        let params = serde_json::to_value(&command).map_err(|e| CdpError::Decode {
            method: C::METHOD.to_owned(),
            reason: e.to_string(),
        })?;
        let raw = self
            .conn
            .send_for_raw(self.id.as_ref(), C::METHOD, params, timeout)
            .await?;
        crate::connection::decode_reply(C::METHOD, &raw)
    }

    /// The escape hatch for methods without typed structs.
    pub async fn send_raw(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.conn
            .send(self.id.as_ref(), method, params, timeout)
            .await
    }

    /// Subscribes to this session's events (only this session's), optionally limited to some methods.
    pub fn subscribe(&self, methods: &[&str]) -> EventStream {
        self.conn
            .subscribe(EventFilter::session(self.id.clone()).methods(methods.iter().copied()))
    }

    /// Attaches to a target with a flattened session on the same connection.
    pub async fn attach(&self, target_id: &TargetId) -> Result<Session, CdpError> {
        let reply = self
            .call(target::AttachToTarget {
                target_id: target_id.clone(),
                flatten: true,
            })
            .await?;
        Ok(Session::new(
            self.conn.clone(),
            Some(reply.session_id),
            Some(target_id.clone()),
        ))
    }

    /// Creates a new tab (optionally in an isolated browser context) and attaches to it.
    ///
    /// Each tab gets a window of its own, so no tab is ever a background tab: background tabs
    /// throttle timers, skip animation frames and defer dialogs, which would stall parallel runs.
    /// Only targets created or attached this way are ever touched; other tabs of the browser are not.
    pub async fn create_page(
        &self,
        url: &str,
        browser_context_id: Option<String>,
    ) -> Result<Session, CdpError> {
        self.create_page_sized(url, browser_context_id, None).await
    }

    /// [`Session::create_page`] in a window of `window` (width, height) DIP, its browser frame
    /// included; `None` leaves the browser's default size.
    pub async fn create_page_sized(
        &self,
        url: &str,
        browser_context_id: Option<String>,
        window: Option<(u32, u32)>,
    ) -> Result<Session, CdpError> {
        let created = self
            .call(target::CreateTarget {
                url: url.to_owned(),
                browser_context_id,
                new_window: Some(true),
                background: None,
                width: window.map(|w| w.0),
                height: window.map(|w| w.1),
            })
            .await?;
        self.attach(&created.target_id).await
    }

    /// Closes this session's target (a no-op error for the browser session).
    pub async fn close_target(&self) -> Result<bool, CdpError> {
        let Some(target_id) = self.target_id.clone() else {
            return Err(CdpError::Protocol {
                method: "Target.closeTarget".into(),
                code: -32602,
                message: "the browser session has no target to close".into(),
                data: None,
            });
        };
        Ok(self
            .conn
            .browser()
            .call(target::CloseTarget { target_id })
            .await?
            .success)
    }

    /// A session object for an already attached session id (e.g. one announced by `Target.attachedToTarget`).
    pub fn child(&self, id: SessionId, target_id: Option<TargetId>) -> Session {
        Session::new(self.conn.clone(), Some(id), target_id)
    }
}
