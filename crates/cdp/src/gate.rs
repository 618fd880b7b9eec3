//! The new-page gate: every page target the browser creates from now on is paused before it
//! runs (browser-level `Target.setAutoAttach` with `waitForDebuggerOnStart`, pages only), and a
//! page one of the watched openers opened (a popup: `window.open`, a `target=_blank` link or form,
//! `noopener` ones included — Chromium names the opener of each) runs only once its opener's
//! hook has set it up — request interception above all — so not even its first request goes out
//! unseen. Every other new page is resumed at once and let go.
//!
//! It is for a browser the caller owns: turned on, it attaches to every page target of the
//! browser for a moment (the ones already open are let go at once). A shared browser is never
//! gated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::json;

use crate::attach::{ChildTarget, Prepare};
use crate::connection::Inner;
use crate::domains::target::AttachedToTarget;
use crate::{CdpError, Connection, EventFilter, Session, TargetId};

/// The openers watched on one connection, each with the hook that sets up its popups.
#[derive(Default)]
pub(crate) struct Openers {
    hooks: Mutex<HashMap<TargetId, (u64, Prepare)>>,
    next: AtomicU64,
    /// Set once the gate is on.
    gated: std::sync::atomic::AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A watched opener: its hook is removed when this is dropped (unless another watch of the
/// same target replaced it meanwhile).
pub struct OpenerWatch {
    openers: Weak<Inner>,
    target: TargetId,
    generation: u64,
}

impl std::fmt::Debug for OpenerWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenerWatch")
            .field("target", &self.target)
            .finish()
    }
}

impl Drop for OpenerWatch {
    fn drop(&mut self) {
        if let Some(inner) = self.openers.upgrade() {
            let mut hooks = lock(&inner.openers.hooks);
            if hooks
                .get(&self.target)
                .is_some_and(|(g, _)| *g == self.generation)
            {
                hooks.remove(&self.target);
            }
        }
    }
}

/// How long a new page may wait for its opener's hook before it is resumed anyway (the hook
/// logs why it could not finish; a page is never left paused).
const HOOK_DEADLINE: Duration = Duration::from_secs(10);

impl Connection {
    /// Turns the new-page gate on (see the module docs). Idempotent.
    pub async fn gate_new_pages(&self) -> Result<(), CdpError> {
        if self.inner.openers.gated.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let mut events =
            self.subscribe(EventFilter::session(None).methods(["Target.attachedToTarget"]));
        let weak = Arc::downgrade(&self.inner);
        // Told once `Target.setAutoAttach` has answered: the pages already open were announced
        // before that answer (not waiting), and their sessions are let go. Later announcements
        // that do not wait are explicit attaches, not the gate's.
        let (on_tx, mut on_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let mut on = false;
            loop {
                let item = tokio::select! {
                    // What was announced before the answer is in the stream before the signal.
                    biased;
                    item = events.recv() => item,
                    _ = &mut on_rx, if !on => {
                        on = true;
                        continue;
                    }
                };
                let Some(item) = item else { return };
                let Ok(event) = item else { continue };
                let Some(attached) = event.parse::<AttachedToTarget>() else {
                    continue;
                };
                let Some(inner) = weak.upgrade() else { return };
                let conn = Connection { inner };
                let session = Session::new(
                    conn.clone(),
                    Some(attached.session_id.clone()),
                    attached.target_info.target_id.clone(),
                );
                if !attached.waiting_for_debugger {
                    if !on {
                        tokio::spawn(async move {
                            let _ = detach(&session).await;
                        });
                    }
                    continue;
                }
                let hook = attached
                    .target_info
                    .opener_id
                    .as_ref()
                    .and_then(|opener| lock(&conn.inner.openers.hooks).get(opener).cloned())
                    .map(|(_, hook)| hook);
                let child = ChildTarget {
                    session: session.clone(),
                    info: attached.target_info,
                    parent: None,
                };
                tokio::spawn(async move {
                    let kept = hook.is_some();
                    if let Some(hook) = hook
                        && tokio::time::timeout(HOOK_DEADLINE, hook(child))
                            .await
                            .is_err()
                    {
                        tracing::warn!("a popup's opener did not finish setting it up in time");
                    }
                    let _ = session
                        .send_raw(
                            "Runtime.runIfWaitingForDebugger",
                            json!({}),
                            Duration::from_secs(5),
                        )
                        .await;
                    if !kept {
                        let _ = detach(&session).await;
                    }
                });
            }
        });
        let on = self
            .browser()
            .send_raw(
                "Target.setAutoAttach",
                json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
                       "filter": [{"type": "page", "exclude": false}]}),
                Duration::from_secs(5),
            )
            .await;
        let _ = on_tx.send(());
        if let Err(e) = on {
            self.inner.openers.gated.store(false, Ordering::SeqCst);
            return Err(e);
        }
        Ok(())
    }

    /// Whether new pages are gated on this connection ([`Connection::gate_new_pages`]).
    pub fn gates_new_pages(&self) -> bool {
        self.inner.openers.gated.load(Ordering::SeqCst)
    }

    /// Runs `hook` for every page `opener` opens from now on, before the page runs; the page
    /// stays attached on the session the hook got. Only with the gate on; a later watch of the
    /// same target replaces this one.
    pub fn watch_opener(&self, opener: TargetId, hook: Prepare) -> OpenerWatch {
        let generation = self.inner.openers.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.openers.hooks).insert(opener.clone(), (generation, hook));
        OpenerWatch {
            openers: Arc::downgrade(&self.inner),
            target: opener,
            generation,
        }
    }
}

async fn detach(session: &Session) -> Result<(), CdpError> {
    let Some(id) = session.id() else {
        return Ok(());
    };
    session
        .connection()
        .browser()
        .send_raw(
            "Target.detachFromTarget",
            json!({"sessionId": id.0}),
            Duration::from_secs(5),
        )
        .await
        .map(|_| ())
}
