//! Resource records: one per tab the runtime tracks, with its live handle, recorded ownership
//! and provenance, turn-scoped mark, lifecycle state and last confirmed location. Ownership
//! comes only from these records, never from titles or chat text (`002_…` "Tab 分类").

use crate::id::{InstanceId, ResourceId, RunId, SessionId, TargetId, TurnId};

text_enum!(
    /// What kind of surface a resource is.
    ResourceKind {
        /// A browser tab.
        Tab => "tab",
    }
);

text_enum!(
    /// Who a resource belongs to, from recorded provenance.
    Ownership {
        /// The user's own tab; no session holds it unless claimed.
        User => "user",
        /// Created by an agent run of the owning session.
        AgentCreated => "agent_created",
        /// A user tab that the owning session claimed.
        AgentClaimed => "agent_claimed",
        /// Created or managed by a session outside this store's runtime; never claimable.
        OtherSession => "other_session",
    }
);

text_enum!(
    /// A turn-scoped retention mark (`002_…` "模型表达资源保留意图").
    Mark {
        /// No mark.
        None => "none",
        /// A result delivered to the user.
        Deliverable => "deliverable",
        /// Waiting for the user (login, approval, payment, CAPTCHA).
        Handoff => "handoff",
    }
);

text_enum!(
    /// A resource's lifecycle state (`002_…` "任务资源状态").
    ResourceState {
        /// Owned by a session and in use.
        Owned => "owned",
        /// Kept past a turn's cleanup by a mark.
        Retained => "retained",
        /// A close or release is in progress.
        Finalizing => "finalizing",
        /// Closed or released successfully.
        Released => "released",
        /// A cleanup failed; ownership is kept until a retry succeeds.
        CleanupUnknown => "cleanup_unknown",
    }
);

/// A resource as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Stable id.
    pub id: ResourceId,
    /// The owning session; `None` for unowned (user or released) tabs.
    pub session_id: Option<SessionId>,
    /// What it is.
    pub kind: ResourceKind,
    /// The live handle, if the current process holds one.
    pub cdp_target_id: Option<TargetId>,
    /// The instance that recorded `cdp_target_id`.
    pub instance: Option<InstanceId>,
    /// Set when a restart invalidated the handle; cleared when a new one is attached or the
    /// handle is cleared deliberately.
    pub handle_lost: bool,
    /// Recorded ownership.
    pub ownership: Ownership,
    /// The run that created the tab, for `agent_created` resources.
    pub created_by_run: Option<RunId>,
    /// When it was last claimed (ms).
    pub claimed_at: Option<u64>,
    /// When it was last released (ms).
    pub released_at: Option<u64>,
    /// The latest mark.
    pub mark: Mark,
    /// The turn the mark belongs to.
    pub mark_turn_id: Option<TurnId>,
    /// Lifecycle state.
    pub state: ResourceState,
    /// Last confirmed URL, as the caller gave it (already redacted).
    pub url: Option<String>,
    /// Last confirmed title, as the caller gave it.
    pub title: Option<String>,
    /// When the location was confirmed (ms).
    pub location_at: Option<u64>,
    /// When the record was created (ms).
    pub created_at: u64,
    /// When the record last changed (ms).
    pub updated_at: u64,
    /// Moves on every change of ownership, mark, state or handle; the compare-and-swap token.
    pub version: u64,
    /// A person closed the page: it stays closed (listed as closed, never restored).
    pub closed_by_person: bool,
    /// When it was closed by a person (ms).
    pub closed_at: Option<u64>,
    /// The host's or console's preview preferences (JSON), as given.
    pub preview: Option<String>,
    /// The branch (turn lineage) it belongs to, if the host named one.
    pub branch: Option<String>,
    /// When it was last restored after a restart or a browser relaunch (ms).
    pub restored_at: Option<u64>,
    /// Why its last restore failed (it stays listed, as "restore failed").
    pub restore_error: Option<String>,
}

/// What [`crate::Store::insert_resource`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewResource {
    /// Stable id chosen by the caller.
    pub id: ResourceId,
    /// The owning session, or `None` for an unowned tab.
    pub session_id: Option<SessionId>,
    /// What it is.
    pub kind: ResourceKind,
    /// Recorded ownership.
    pub ownership: Ownership,
    /// Initial lifecycle state.
    pub state: ResourceState,
    /// The run that created it, if an agent did.
    pub created_by_run: Option<RunId>,
    /// A live handle seen by `instance`, if any; must be given together.
    pub handle: Option<(TargetId, InstanceId)>,
    /// Initial URL (redacted by the caller).
    pub url: Option<String>,
    /// Initial title.
    pub title: Option<String>,
    /// Creation time (ms).
    pub now_ms: u64,
}
