//! One MCP session's Glovebox session: created on the first tool call, closed once when the MCP
//! session ends (explicitly, or when the handler is dropped on disconnect).

use std::sync::Mutex;
use std::time::Instant;

use runtime::{Runtime, RuntimeError};

use crate::rate::{Bucket, RateLimit};
use crate::wrap::Untrusted;

pub(crate) struct SessionSlot {
    runtime: Runtime,
    id: tokio::sync::Mutex<Option<protocol::SessionId>>,
    pub(crate) untrusted: Untrusted,
    /// The revision of the session's surface contexts (each `surfaces`/`tabs` call is one).
    pub(crate) revision: std::sync::atomic::AtomicU64,
    rate: Mutex<Bucket>,
    limit: RateLimit,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SessionSlot {
    pub(crate) fn new(runtime: Runtime, limit: RateLimit) -> Self {
        SessionSlot {
            runtime,
            id: tokio::sync::Mutex::new(None),
            untrusted: crate::wrap::fresh(),
            revision: std::sync::atomic::AtomicU64::new(0),
            rate: Mutex::new(Bucket::new(limit, Instant::now())),
            limit,
        }
    }

    /// The Glovebox session id, created on first use for the client `client` says.
    pub(crate) async fn id(
        &self,
        client: impl FnOnce() -> runtime::SessionClient,
    ) -> Result<protocol::SessionId, RuntimeError> {
        let mut id = self.id.lock().await;
        if let Some(id) = &*id {
            return Ok(id.clone());
        }
        let client = client();
        let created = self.runtime.create_client_session(client.clone()).await?;
        tracing::info!(session = %created, client = ?client.name, client_pid = ?client.pid, "MCP session started a Glovebox session");
        *id = Some(created.clone());
        Ok(created)
    }

    /// The Glovebox session id if one was created (never creates one).
    pub(crate) async fn existing(&self) -> Option<protocol::SessionId> {
        self.id.lock().await.clone()
    }

    /// Takes one tool call from the bucket, or says how long to wait.
    pub(crate) fn admit(&self) -> Result<(), std::time::Duration> {
        lock(&self.rate).take(self.limit, Instant::now())
    }

    /// Runs the session's disposal cleanup (tabs, browser context) once.
    pub(crate) async fn close(&self) {
        let id = self.id.lock().await.take();
        if let Some(id) = id {
            let _ = close_detached(self.runtime.clone(), id).await;
        }
    }
}

/// Runs the cleanup on a blocking thread of the current Tokio runtime: the cleanup future is not
/// `Send` (it holds a lock guard across an await), so it cannot be `tokio::spawn`ed, and it must
/// also run after the handler is gone.
fn close_detached(runtime: Runtime, id: protocol::SessionId) -> tokio::task::JoinHandle<()> {
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || handle.block_on(close(&runtime, &id)))
}

async fn close(runtime: &Runtime, id: &protocol::SessionId) {
    match runtime.close_session(id).await {
        Ok(_) => tracing::info!(session = %id, "MCP session ended; Glovebox session closed"),
        Err(e) => tracing::warn!(session = %id, error = %e, "closing the Glovebox session failed"),
    }
}

impl Drop for SessionSlot {
    /// A disconnect drops the handler: the cleanup runs on the Tokio runtime if one is there.
    fn drop(&mut self) {
        if let Some(id) = self.id.get_mut().take() {
            match tokio::runtime::Handle::try_current() {
                Ok(_) => {
                    close_detached(self.runtime.clone(), id);
                }
                Err(_) => {
                    tracing::warn!(session = %id, "no async runtime at disconnect; the session's tabs close with the browser")
                }
            }
        }
    }
}
