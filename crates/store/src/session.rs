//! Session records: tool activation, lifecycle state and the latest turn. Not the rules for
//! when those change (that is the runtime's lifecycle, `002_…` "工具激活状态").

use crate::id::{InstanceId, SessionId, TurnId};

text_enum!(
    /// A session's lifecycle state as the runtime last recorded it.
    SessionState {
        /// In use; browser tools may be active.
        Active => "active",
        /// An explicit context reset completed.
        Reset => "reset",
        /// The agent/session was disposed.
        Disposed => "disposed",
        /// Its process ended without cleaning up; a later process reconciled its records
        /// ([`crate::Store::end_instance`]).
        Abandoned => "abandoned",
    }
);

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The caller's id.
    pub id: SessionId,
    /// When it was created (ms).
    pub created_at: u64,
    /// When it last changed (ms).
    pub updated_at: u64,
    /// Whether browser tools are active (sticky across turns; the runtime decides).
    pub tools_active: bool,
    /// Lifecycle state.
    pub state: SessionState,
    /// The latest turn recorded, if any.
    pub last_turn_id: Option<TurnId>,
    /// The process instance that created it (`None` for sessions recorded before instances
    /// were tracked, or by a store that began none).
    pub instance: Option<InstanceId>,
}
