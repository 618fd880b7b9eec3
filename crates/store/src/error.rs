//! The store's error type. Variants name the failure so the runtime can match on them; none
//! of them is classified by its text.

use crate::id::{InstanceId, RecoveryId, ResourceId, SessionId};
use crate::resource::Ownership;

/// A store result.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Which kind of record an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    /// A session.
    Session,
    /// A resource (tab).
    Resource,
    /// A recovery record.
    Recovery,
    /// A process instance.
    Instance,
    /// An approval record.
    Approval,
    /// A run record.
    Run,
    /// An operation record.
    Operation,
}

impl std::fmt::Display for Entity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Entity::Session => "session",
            Entity::Resource => "resource",
            Entity::Recovery => "recovery record",
            Entity::Instance => "instance",
            Entity::Approval => "approval",
            Entity::Run => "run",
            Entity::Operation => "operation",
        })
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No record with this id.
    #[error("{what} {id:?} not found")]
    NotFound {
        /// The kind of record.
        what: Entity,
        /// The id looked for.
        id: String,
    },
    /// A record with this id already exists.
    #[error("{what} {id:?} already exists")]
    AlreadyExists {
        /// The kind of record.
        what: Entity,
        /// The id.
        id: String,
    },
    /// The resource is owned by a session (possibly the caller's own).
    #[error("resource already claimed by {by}")]
    AlreadyClaimed {
        /// The owning session.
        by: SessionId,
    },
    /// The resource is unowned but not a user tab, so it cannot be claimed.
    #[error("resource with ownership {ownership} cannot be claimed")]
    NotClaimable {
        /// Its recorded ownership.
        ownership: Ownership,
    },
    /// The caller's session does not own the resource.
    #[error("session {session} does not own resource {resource} (owner: {owner:?})")]
    NotOwner {
        /// The resource.
        resource: ResourceId,
        /// The session that asked.
        session: SessionId,
        /// The actual owner, if any.
        owner: Option<SessionId>,
    },
    /// Compare-and-swap failed: the resource's version moved.
    #[error("version conflict: expected {expected_version}, found {actual}")]
    Conflict {
        /// The version the caller read.
        expected_version: u64,
        /// The version now stored.
        actual: u64,
    },
    /// A handle was offered for an instance that has ended (or never began).
    #[error("instance {given} has ended or never began (latest: {current:?})")]
    StaleInstance {
        /// The instance given.
        given: InstanceId,
        /// The latest instance, if any has begun.
        current: Option<InstanceId>,
    },
    /// Another resource already holds this live handle.
    #[error("the target is already the live handle of resource {by}")]
    HandleInUse {
        /// The resource holding it.
        by: ResourceId,
    },
    /// The resource's handle is not lost (any more): another instance restored it first, or it
    /// was never lost.
    #[error("resource {id} is not waiting for a restore (live in instance {instance:?})")]
    NotLost {
        /// The resource.
        id: ResourceId,
        /// The instance whose handle it has, if any.
        instance: Option<InstanceId>,
    },
    /// The recovery record is resolved; it takes no more attempts.
    #[error("recovery record {id} is already resolved")]
    AlreadyResolved {
        /// The record.
        id: RecoveryId,
    },
    /// An audit payload is not valid JSON.
    #[error("audit payload is not valid JSON")]
    InvalidJson,
    /// A number does not fit the store's 63-bit integers.
    #[error("{field} is out of range")]
    OutOfRange {
        /// The field.
        field: &'static str,
    },
    /// A landed migration's text differs from the one applied to this database.
    #[error("migration {version} was edited after it was applied; add a new migration instead")]
    MigrationEdited {
        /// The migration's number.
        version: u32,
    },
    /// The database has migrations this binary does not know (it is newer than the binary).
    #[error("database schema version {found} is newer than this binary's {known}")]
    SchemaTooNew {
        /// The highest applied migration.
        found: u32,
        /// The highest migration this binary knows.
        known: u32,
    },
    /// A stored value cannot be decoded.
    #[error("corrupt {what}: {value:?}")]
    Corrupt {
        /// The column or value kind.
        what: &'static str,
        /// The offending value, as text.
        value: String,
    },
    /// The database directory could not be created.
    #[error("cannot create the database directory: {0}")]
    Io(#[from] std::io::Error),
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL failed (a statement, or the connection under it).
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The database cannot be reached (or its address is not valid).
    #[error("{0}")]
    Unavailable(String),
}

impl StoreError {
    /// The database cannot be reached now (its server is down or the connection broke); a
    /// later call may succeed.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Unavailable(_) => true,
            StoreError::Postgres(e) => {
                e.is_closed()
                    || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
                    || e.code().is_some_and(|c| {
                        c.code().starts_with("08") // connection exceptions
                            || c.code().starts_with("57P") // the server shut down
                    })
            }
            _ => false,
        }
    }

    /// The disk under the store is full.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Io(e) => e.kind() == std::io::ErrorKind::StorageFull,
            StoreError::Sqlite(e) => e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            StoreError::Postgres(e) => {
                e.code() == Some(&tokio_postgres::error::SqlState::DISK_FULL)
            }
            _ => false,
        }
    }
}
