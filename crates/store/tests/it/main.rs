//! Integration tests for `store`: the whole suite of record rules runs on both engines — real
//! SQLite files under the target's tmp dir, and a real PostgreSQL server (one per test
//! process, a schema per test; `test_support::postgres`). Migrations, crash safety and the
//! benchmark of the SQLite file are SQLite's own.

// The rules' files are compiled twice on purpose, once per engine.
#![allow(clippy::duplicate_mod)]

mod bench;
#[cfg(unix)]
mod crash;
mod migrate;
mod pg;

use std::path::{Path, PathBuf};

use store::{NewResource, Ownership, ResourceId, ResourceKind, ResourceState, SessionId, Store};

/// The record rules on SQLite.
#[path = "rules"]
mod sqlite {
    pub use super::{new_tab, session, user_tab};
    use std::path::PathBuf;

    pub type TheStore = store::SqliteStore;

    /// A fresh database file for one test.
    pub fn db_path(name: &str) -> PathBuf {
        super::db_path(name)
    }

    pub fn open(path: &std::path::Path) -> store::Result<TheStore> {
        TheStore::open(path)
    }

    /// A private in-memory database.
    pub fn fresh() -> store::Result<TheStore> {
        TheStore::open_in_memory()
    }

    pub fn file_store(name: &str) -> (TheStore, PathBuf) {
        super::file_store(name)
    }

    /// Whether the database refuses one statement run on a connection of its own, around the
    /// store.
    pub fn refuses(path: &std::path::Path, sql: &str) -> bool {
        let conn = rusqlite::Connection::open(path).expect("raw open");
        conn.execute(sql, []).is_err()
    }

    mod audit;
    mod claim;
    mod instance;
    mod record;
    mod recovery;
    mod resource;
    mod restore;
    mod session;
}

/// The same record rules on PostgreSQL: a database is a schema of the test server.
#[cfg(unix)]
#[path = "rules"]
mod postgres {
    pub use super::{new_tab, session, user_tab};

    pub type TheStore = store::PgStore;

    /// A fresh, empty schema's address.
    pub fn db_path(name: &str) -> String {
        test_support::postgres::server().fresh_url(name)
    }

    pub fn open(url: &str) -> store::Result<TheStore> {
        TheStore::connect(url)
    }

    /// A store on a fresh schema.
    pub fn fresh() -> store::Result<TheStore> {
        open(&db_path("fresh"))
    }

    pub fn file_store(name: &str) -> (TheStore, String) {
        let url = db_path(name);
        (open(&url).expect("connect"), url)
    }

    /// Whether the database refuses one statement run on a connection of its own, around the
    /// store.
    pub fn refuses(url: &str, sql: &str) -> bool {
        let schema = url.rsplit("%3D").next().unwrap_or_default();
        let server = test_support::postgres::server();
        std::panic::catch_unwind(|| server.psql(&format!("SET search_path = {schema}; {sql}")))
            .is_err()
    }

    mod audit;
    mod claim;
    mod instance;
    mod record;
    mod recovery;
    mod resource;
    mod restore;
    mod session;
}

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
pub fn file_store(name: &str) -> (store::SqliteStore, PathBuf) {
    let path = db_path(name);
    let store = store::SqliteStore::open(&path).expect("open store");
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
