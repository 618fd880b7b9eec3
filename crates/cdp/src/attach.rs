//! Auto-attaching to a page's child targets (out-of-process iframes, workers) as flattened sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::domains::runtime::RunIfWaitingForDebugger;
use crate::domains::target::{AttachedToTarget, DetachedFromTarget, SetAutoAttach, TargetInfo};
use crate::{CdpError, EventFilter, Session, SessionId};

/// A child target attached under a page, with its own session.
#[derive(Debug, Clone)]
pub struct ChildTarget {
    pub session: Session,
    pub info: TargetInfo,
    /// The session it was announced on (the page, or another child for nested frames).
    pub parent: Option<SessionId>,
}

type Children = Arc<Mutex<HashMap<SessionId, ChildTarget>>>;

/// Run for each child as it attaches, before a child that waits for the debugger is resumed
/// (so whatever it sets up — request interception — is in place before the child's first
/// request).
pub type Prepare = Arc<
    dyn Fn(ChildTarget) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// A shared view of a page's live child sessions ([`ChildTargets::view`]).
#[derive(Clone)]
pub struct ChildView(Children);

impl std::fmt::Debug for ChildView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ChildView")
            .field(&lock(&self.0).len())
            .finish()
    }
}

impl ChildView {
    /// The children attached right now.
    pub fn list(&self) -> Vec<ChildTarget> {
        lock(&self.0).values().cloned().collect()
    }

    /// The attached child with this session, if it is one of the page's.
    pub fn get(&self, session: &SessionId) -> Option<ChildTarget> {
        lock(&self.0).get(session).cloned()
    }
}

/// The live set of a page's child sessions. Dropping it stops tracking (the sessions stay attached).
#[derive(Debug)]
pub struct ChildTargets {
    children: Children,
    revision: watch::Receiver<u64>,
    task: AbortHandle,
}

impl Drop for ChildTargets {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ChildTargets {
    /// Turns on flattened auto-attach for `page`, resuming each child that waits for the debugger and
    /// enabling auto-attach inside it too, so nested out-of-process frames are reached.
    pub async fn enable(page: &Session) -> Result<ChildTargets, CdpError> {
        Self::enable_with(page, None).await
    }

    /// [`ChildTargets::enable`], running `prepare` for each child before it is resumed.
    pub async fn enable_with(
        page: &Session,
        prepare: Option<Prepare>,
    ) -> Result<ChildTargets, CdpError> {
        let conn = page.connection().clone();
        // Subscribe before asking, so no announcement is missed.
        let mut events = conn.subscribe(
            EventFilter::default()
                .methods(["Target.attachedToTarget", "Target.detachedFromTarget"]),
        );
        let children: Children = Arc::default();
        let (revision_tx, revision) = watch::channel(0u64);
        let root = page.clone();
        let tracked = children.clone();
        let task = tokio::spawn(async move {
            while let Some(item) = events.recv().await {
                let Ok(event) = item else { continue };
                let ours = event.session_id.as_ref() == root.id()
                    || event
                        .session_id
                        .as_ref()
                        .is_some_and(|s| lock(&tracked).contains_key(s));
                if !ours {
                    continue;
                }
                match event.method.as_str() {
                    "Target.attachedToTarget" => {
                        let Some(attached) = event.parse::<AttachedToTarget>() else {
                            continue;
                        };
                        let session = root.child(
                            attached.session_id.clone(),
                            attached.target_info.target_id.clone(),
                        );
                        let child = ChildTarget {
                            session: session.clone(),
                            info: attached.target_info,
                            parent: event.session_id,
                        };
                        lock(&tracked).insert(attached.session_id, child.clone());
                        let waiting = attached.waiting_for_debugger;
                        let prepare = prepare.clone();
                        tokio::spawn(async move {
                            let _ = session
                                .call(SetAutoAttach {
                                    auto_attach: true,
                                    wait_for_debugger_on_start: true,
                                    flatten: true,
                                })
                                .await;
                            if let Some(prepare) = prepare {
                                prepare(child).await;
                            }
                            if waiting {
                                let _ = session.call(RunIfWaitingForDebugger {}).await;
                            }
                        });
                    }
                    _ => {
                        let Some(detached) = event.parse::<DetachedFromTarget>() else {
                            continue;
                        };
                        lock(&tracked).remove(&detached.session_id);
                    }
                }
                revision_tx.send_modify(|r| *r += 1);
            }
        })
        .abort_handle();
        page.call(SetAutoAttach {
            auto_attach: true,
            wait_for_debugger_on_start: true,
            flatten: true,
        })
        .await?;
        Ok(ChildTargets {
            children,
            revision,
            task,
        })
    }

    /// The children attached right now.
    pub fn list(&self) -> Vec<ChildTarget> {
        self.view().list()
    }

    /// A view of the same live set that others can keep (it stops changing when this is dropped).
    pub fn view(&self) -> ChildView {
        ChildView(self.children.clone())
    }

    /// Waits until `ready` holds for the current children, or the deadline passes (returns false).
    pub async fn wait_until(
        &self,
        deadline: Duration,
        ready: impl Fn(&[ChildTarget]) -> bool,
    ) -> bool {
        let mut revision = self.revision.clone();
        let check = || ready(&self.list());
        tokio::time::timeout(deadline, async {
            loop {
                if check() {
                    return true;
                }
                if revision.changed().await.is_err() {
                    return check();
                }
            }
        })
        .await
        .unwrap_or(false)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
