//! Glovebox's durable records: sessions, tab resources (ownership, marks, lifecycle state,
//! last confirmed location), recovery records and an append-only audit, behind the [`Store`]
//! trait, implemented once ([`SqlStore`], over a small SQL seam) on two engines: [`SqliteStore`],
//! the embedded default, and [`PgStore`], PostgreSQL, for several instances on one database.
//!
//! This is the only crate with SQL, and it holds no business rules: the runtime decides what
//! happens to a tab at a turn's end (`002_…` "资源所有权", "生命周期状态"); the store records
//! it and enforces only atomicity — first-claim-wins, owner-only release and marks, and
//! compare-and-swap on a resource's `version`. Time is always passed in (`now_ms`,
//! milliseconds since the Unix epoch); nothing here reads a clock, except [`mod@bench`], which
//! measures latency.
//!
//! Handles of a previous process (CDP target ids) are never reused: every process start calls
//! [`Store::begin_instance`], holding a lock file while it lives; when an instance ends (its
//! own shutdown, or a later process that finds its lock free) [`Store::end_instance`] clears
//! its handles, marks those resources `handle_lost` and brings every record it left to a
//! terminal or recoverable state.

#![warn(missing_docs)]

#[macro_use]
mod text_enum;

pub mod approval;
pub mod audit;
pub mod bench;
pub mod error;
pub mod id;
pub mod instance;
mod migrate;
pub mod postgres;
pub mod record;
pub mod recovery;
pub mod resource;
pub mod session;
pub mod sql;
pub mod sqlite;

pub use approval::{ApprovalOutcome, ApprovalRecord, ApprovalScope, NewApproval};
pub use audit::{AuditEntry, NewAudit};
pub use error::{Entity, Result, StoreError};
pub use id::{AuditSeq, InstanceId, RecoveryId, ResourceId, RunId, SessionId, TargetId, TurnId};
pub use instance::{EndReport, InstanceEnd, InstanceRecord};
pub use migrate::{MIGRATIONS, Migration, PG_MIGRATIONS};
pub use postgres::PgStore;
pub use record::{
    NewOperation, NewRun, OperationEnd, OperationFilter, OperationRecord, OperationState,
    PruneReport, RunEnd, RunRecord,
};
pub use recovery::{NewRecovery, RecoveryKind, RecoveryRecord};
pub use resource::{Mark, NewResource, Ownership, Resource, ResourceKind, ResourceState};
pub use session::{Session, SessionState};
pub use sql::SqlStore;
pub use sqlite::SqliteStore;

/// Durable records for the runtime. Every method is one atomic unit: it commits entirely or
/// not at all, and a method that checks a condition (ownership, version, claim) checks it in
/// the same statement or transaction that writes.
///
/// Methods are synchronous; an implementation serialises its own writers. Ids are plain
/// strings chosen by the caller; the store does not validate their shape.
pub trait Store: Send + Sync {
    // --- process instances ---

    /// Records a process start at `now_ms` and returns its id, greater than every earlier one.
    /// `lock_name` names the lock file the process holds while it lives (the caller's
    /// convention; a lock that can be taken means the process is gone). Sessions this store
    /// creates from now on belong to this instance. Other instances' handles are left alone:
    /// their processes may still run.
    fn begin_instance(&self, now_ms: u64, lock_name: Option<&str>) -> Result<InstanceId>;

    /// The latest instance, if any process has started against this store.
    fn current_instance(&self) -> Result<Option<InstanceId>>;

    /// Instances that have not ended (the caller's own among them), oldest first.
    fn open_instances(&self) -> Result<Vec<InstanceRecord>>;

    /// Records that the instance lives (every few seconds while it runs); `false` once it has
    /// ended — another instance found it dead and took its records over, so it must no longer
    /// write as their owner.
    fn heartbeat(&self, id: InstanceId, now_ms: u64) -> Result<bool>;

    /// Takes a dead instance's records over: in one transaction, only if it has not ended and
    /// its last heartbeat (its start, without one) is before `stale_before_ms`, ends it as
    /// [`InstanceEnd::Abandoned`] exactly as [`Store::end_instance`] does. `None` when it lives
    /// or has ended: of several instances that find it dead at once, exactly one reconciles.
    fn take_over_instance(
        &self,
        id: InstanceId,
        stale_before_ms: u64,
        now_ms: u64,
    ) -> Result<Option<EndReport>>;

    /// The resources whose live handle the instance recorded.
    fn instance_handles(&self, id: InstanceId) -> Result<Vec<Resource>>;

    /// Ends an instance and, in one transaction, reconciles every record it left: its sessions
    /// still `active` become `abandoned` with tools inactive; of their tabs, agent tabs without
    /// a mark are `released` (closed), marked agent tabs `retained` (kept for the person, handle
    /// lost: what a restore starts from), claimed user tabs go back to the person; their
    /// pending recovery records are resolved; every other handle of the instance is lost; its
    /// pending approvals are `withdrawn` (stopped) or `abandoned`; each abandoned session gets
    /// an `abandoned` audit entry. Idempotent: an ended instance reports nothing.
    fn end_instance(&self, id: InstanceId, how: InstanceEnd, now_ms: u64) -> Result<EndReport>;

    // --- sessions ---

    /// Creates an `active` session with tools inactive, belonging to the instance this store
    /// began (if any). `AlreadyExists` if the id is taken.
    fn create_session(&self, id: &SessionId, now_ms: u64) -> Result<Session>;

    /// One session, or `NotFound`.
    fn get_session(&self, id: &SessionId) -> Result<Session>;

    /// Every session, oldest first.
    fn list_sessions(&self) -> Result<Vec<Session>>;

    /// Records whether the session's browser tools are active.
    fn set_tools_active(&self, id: &SessionId, active: bool, now_ms: u64) -> Result<Session>;

    /// Records the session's lifecycle state.
    fn set_session_state(
        &self,
        id: &SessionId,
        state: SessionState,
        now_ms: u64,
    ) -> Result<Session>;

    /// Records the session's latest turn.
    fn set_last_turn(&self, id: &SessionId, turn: &TurnId, now_ms: u64) -> Result<Session>;

    // --- resources ---

    /// Inserts a resource at version 1. `AlreadyExists` if the id is taken, `NotFound` if its
    /// session is unknown, `StaleInstance`/`HandleInUse` as for [`Store::attach_handle`].
    fn insert_resource(&self, new: &NewResource) -> Result<Resource>;

    /// One resource, or `NotFound`.
    fn get_resource(&self, id: &ResourceId) -> Result<Resource>;

    /// The resources a session owns, oldest first.
    fn list_resources(&self, session: &SessionId) -> Result<Vec<Resource>>;

    /// The session's resources that are not released (its open tabs), oldest first: what a
    /// cleanup or a status reads, however many tabs the session closed before.
    fn list_open_resources(&self, session: &SessionId) -> Result<Vec<Resource>>;

    /// How many of the session's resources are released (its closed tabs), counted by the store.
    fn count_released_resources(&self, session: &SessionId) -> Result<u64>;

    /// The resources no session owns (user tabs, released tabs), oldest first.
    fn list_unowned_resources(&self) -> Result<Vec<Resource>>;

    /// The resource whose live handle is `target` in this store's instance (the latest, if it
    /// began none). A handle recorded by another instance is never returned.
    fn find_by_handle(&self, target: &TargetId) -> Result<Option<Resource>>;

    /// First claim wins: one conditional write gives an unowned `user` resource — or a
    /// `retained` one whose session is no longer active (kept for the person after a restart) —
    /// to `session`
    /// (ownership `agent_claimed`, state `owned`, `claimed_at = now_ms`). `AlreadyClaimed` if
    /// any session (including this one) owns it, `NotClaimable` if it is unowned but not a
    /// user tab, `NotFound` if the resource or session is unknown.
    fn claim_resource(&self, id: &ResourceId, session: &SessionId, now_ms: u64)
    -> Result<Resource>;

    /// Only the owner may release: the resource becomes an unowned `user` resource in state
    /// `released`, its mark cleared, `released_at = now_ms`; provenance is kept. `NotOwner`
    /// otherwise.
    fn release_resource(
        &self,
        id: &ResourceId,
        session: &SessionId,
        now_ms: u64,
    ) -> Result<Resource>;

    /// Only the owner may mark. Marks are turn-scoped and the latest write wins: this
    /// overwrites both the mark and its turn. `NotOwner` otherwise.
    fn set_mark(
        &self,
        id: &ResourceId,
        session: &SessionId,
        mark: Mark,
        turn: &TurnId,
        now_ms: u64,
    ) -> Result<Resource>;

    /// Compare-and-swap of the lifecycle state: succeeds only while the resource is at
    /// `expected_version`, and returns the new version. `Conflict` when it moved.
    fn transition(
        &self,
        id: &ResourceId,
        expected_version: u64,
        state: ResourceState,
        now_ms: u64,
    ) -> Result<u64>;

    /// Records the last confirmed URL and title, as given (the caller redacts). This does not
    /// move the version: no lifecycle decision may read a title or URL (`002_…` "Tab 分类").
    fn update_location(&self, id: &ResourceId, url: &str, title: &str, now_ms: u64) -> Result<()>;

    /// A person closed the page (the console's close, or the browser reported it gone without
    /// Glovebox closing it): it stays closed — `released`, handle cleared, never restored.
    fn close_by_person(&self, id: &ResourceId, now_ms: u64) -> Result<Resource>;

    /// The live handle is gone with its browser (a relaunch): cleared and marked `handle_lost`,
    /// so a restore brings the tab back if it is one to keep.
    fn lose_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource>;

    /// The tabs a restore brings back, oldest first: handle lost, not closed by a person, not in
    /// a failed cleanup, and either kept (`retained`, or marked deliverable/handoff) or a
    /// person's own (a `user` tab, or one a session claimed).
    fn restorable_resources(&self) -> Result<Vec<Resource>>;

    /// Records why a restore failed; the tab is not tried again (it stays listed as failed).
    fn restore_failed(&self, id: &ResourceId, why: &str, now_ms: u64) -> Result<()>;

    /// Records the new live handle of a restored tab (as [`Store::attach_handle`]) and when —
    /// only while its handle is lost: `NotLost` when another instance restored it first (the
    /// caller closes the page it made).
    fn restored(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource>;

    /// Records the preview preferences (JSON); no lifecycle decision reads them.
    fn set_preview(&self, id: &ResourceId, preview: &str, now_ms: u64) -> Result<()>;

    /// Records the branch (the host's turn lineage) a tab was opened or claimed in.
    fn set_branch(&self, id: &ResourceId, branch: &str, now_ms: u64) -> Result<()>;

    /// Every resource, oldest first (the person's view of everything, closed ones included).
    fn list_all_resources(&self) -> Result<Vec<Resource>>;

    /// Records the resource's live handle in `instance`, clearing `handle_lost`.
    /// `StaleInstance` unless `instance` is the current one; `HandleInUse` if another
    /// resource holds the same target id.
    fn attach_handle(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource>;

    /// Forgets the resource's live handle (the target closed or was detached for good).
    fn clear_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource>;

    /// Deletes a tab that never came to be (its page was refused, waited for a person or failed
    /// to load, and the browser confirmed the close): only while it is `released` and no
    /// recovery record names it. Whether a row was deleted.
    fn discard_resource(&self, id: &ResourceId) -> Result<bool>;

    // --- recovery records ---

    /// Records a failed operation that must be retried; the failure counts as attempt 1.
    fn add_recovery(&self, new: &NewRecovery) -> Result<RecoveryId>;

    /// One recovery record, or `NotFound`.
    fn get_recovery(&self, id: RecoveryId) -> Result<RecoveryRecord>;

    /// The session's unresolved recovery records, oldest first.
    fn pending_recoveries(&self, session: &SessionId) -> Result<Vec<RecoveryRecord>>;

    /// Counts one more attempt, replacing the detail when one is given. `AlreadyResolved` if
    /// the record is resolved.
    fn record_attempt(
        &self,
        id: RecoveryId,
        detail: Option<&str>,
        now_ms: u64,
    ) -> Result<RecoveryRecord>;

    /// Marks the record resolved. Idempotent: resolving again keeps the first `resolved_at`.
    fn resolve_recovery(&self, id: RecoveryId, now_ms: u64) -> Result<RecoveryRecord>;

    // --- audit (append-only: there is no update or delete) ---

    /// Appends one entry and returns its sequence number, greater than every earlier one.
    /// `InvalidJson` if the payload is not JSON.
    fn append_audit(&self, entry: &NewAudit<'_>) -> Result<AuditSeq>;

    /// The session's entries with `seq > after`, in order, at most `limit` of them.
    fn audit_since(
        &self,
        session: &SessionId,
        after: AuditSeq,
        limit: usize,
    ) -> Result<Vec<AuditEntry>>;

    // --- approvals ---

    /// Records an approval a person is being asked for (pending). `AlreadyExists` if the id is taken.
    fn record_approval(&self, new: &NewApproval) -> Result<()>;

    /// Records how a pending approval ended; `false` if it was not pending (already settled or unknown).
    fn settle_approval(&self, id: &str, outcome: ApprovalOutcome, now_ms: u64) -> Result<bool>;

    /// Ends every pending approval of a run, session or instance with `outcome`; returns how many.
    fn settle_approvals(
        &self,
        scope: ApprovalScope<'_>,
        outcome: ApprovalOutcome,
        now_ms: u64,
    ) -> Result<u64>;

    /// The session's approvals, oldest first.
    fn list_approvals(&self, session: &SessionId) -> Result<Vec<ApprovalRecord>>;

    // --- runs and the operation log ---

    /// Records a run at its start, belonging to the instance this store began (if any).
    /// `AlreadyExists` if the id is taken.
    fn begin_run(&self, new: &NewRun) -> Result<()>;

    /// Records how a run ended; `false` if it had already ended or is unknown.
    fn end_run(&self, id: &RunId, end: &RunEnd) -> Result<bool>;

    /// One run, or `NotFound`.
    fn get_run(&self, id: &RunId) -> Result<RunRecord>;

    /// Runs (of one session, or all), oldest first: the latest `limit` of them (0 = all).
    fn list_runs(&self, session: Option<&SessionId>, limit: usize) -> Result<Vec<RunRecord>>;

    /// Records an operation as `attempted`, before its action is sent, belonging to the
    /// instance this store began; returns its log position. `AlreadyExists` if the id is taken.
    fn begin_operation(&self, new: &NewOperation) -> Result<u64>;

    /// Records how an operation ended; `false` if it had already ended or is unknown.
    fn end_operation(&self, id: &str, end: &OperationEnd) -> Result<bool>;

    /// Operations matching `filter`, in log order.
    fn list_operations(&self, filter: &OperationFilter) -> Result<Vec<OperationRecord>>;

    /// Retention: removes ended operations and runs that ended before `before_ms`, then the
    /// oldest ended operations beyond the latest `max_operations`, with runs left without any.
    /// Records still open are never removed.
    fn prune_records(&self, before_ms: u64, max_operations: u64) -> Result<PruneReport>;
}
