//! Integration tests for `store`: real SQLite files under the target's tmp dir, one binary.

mod audit;
mod bench;
mod claim;
#[cfg(unix)]
mod crash;
mod instance;
mod migrate;
mod record;
mod recovery;
mod resource;
mod restore;
mod session;

use std::path::{Path, PathBuf};

use store::{
    NewResource, Ownership, ResourceId, ResourceKind, ResourceState, SessionId, SqliteStore, Store,
};

/// A fresh database path for one test: unique per test name and process, with any file left
/// by an earlier run (and its WAL and shared-memory files) removed.
pub fn db_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("store-it");
    let path = dir.join(format!("{name}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        // Absent files are the normal case.
        let _ = std::fs::remove_file(file);
    }
    path
}

/// A fresh file store for one test.
pub fn file_store(name: &str) -> (SqliteStore, PathBuf) {
    let path = db_path(name);
    let store = SqliteStore::open(&path).expect("open store");
    (store, path)
}

/// Creates a session.
pub fn session(store: &dyn Store, id: &str, now: u64) -> SessionId {
    let id = SessionId::new(id);
    store.create_session(&id, now).expect("create session");
    id
}

/// A new resource with the given owner and ownership, no handle, state `owned`.
pub fn new_tab(id: &str, owner: Option<&SessionId>, ownership: Ownership, now: u64) -> NewResource {
    NewResource {
        id: ResourceId::new(id),
        session_id: owner.cloned(),
        kind: ResourceKind::Tab,
        ownership,
        state: ResourceState::Owned,
        created_by_run: None,
        handle: None,
        url: None,
        title: None,
        now_ms: now,
    }
}

/// Inserts an unowned user tab.
pub fn user_tab(store: &dyn Store, id: &str, now: u64) -> ResourceId {
    store
        .insert_resource(&new_tab(id, None, Ownership::User, now))
        .expect("insert user tab")
        .id
}
