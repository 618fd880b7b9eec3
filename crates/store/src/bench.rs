//! Write latency of ownership changes on a file database, for `glovebox bench store`. This
//! is the one place in the crate that reads a clock, and it reads it only to time calls.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::Store;
use crate::error::Result;
use crate::id::{ResourceId, SessionId};
use crate::resource::{NewResource, Ownership, ResourceKind, ResourceState};
use crate::sqlite::SqliteStore;

/// Opens (or creates) the database at `path` and performs `n` ownership changes on one user
/// tab, alternating `claim_resource` and `release_resource`, each a committed (fsynced)
/// transaction. Returns one duration per change, in order. Records go under ids derived from
/// a fresh instance, so running it again on the same file never collides with earlier runs.
pub fn bench_ownership_changes(path: &Path, n: usize) -> Result<Vec<Duration>> {
    ownership_changes(&SqliteStore::open(path)?, n)
}

/// [`bench_ownership_changes`] on any store (a PostgreSQL one included).
pub fn ownership_changes(store: &dyn Store, n: usize) -> Result<Vec<Duration>> {
    // Logical time: the store needs `now_ms` only to record it.
    let mut now = 1_u64;
    let instance = store.begin_instance(now, None)?;
    let session = SessionId::new(format!("bench-session-{instance}"));
    let resource = ResourceId::new(format!("bench-tab-{instance}"));
    store.create_session(&session, now)?;
    store.insert_resource(&NewResource {
        id: resource.clone(),
        session_id: None,
        kind: ResourceKind::Tab,
        ownership: Ownership::User,
        state: ResourceState::Released,
        created_by_run: None,
        handle: None,
        url: None,
        title: None,
        now_ms: now,
    })?;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        now += 1;
        let start = Instant::now();
        if i % 2 == 0 {
            store.claim_resource(&resource, &session, now)?;
        } else {
            store.release_resource(&resource, &session, now)?;
        }
        samples.push(start.elapsed());
    }
    Ok(samples)
}

/// Median and 99th percentile of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    /// The median (nearest rank).
    pub median: Duration,
    /// The 99th percentile (nearest rank).
    pub p99: Duration,
}

/// The nearest-rank median and p99 of `samples`; `None` when there are none.
pub fn percentiles(samples: &[Duration]) -> Option<Percentiles> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = |p: usize| {
        // Nearest rank: ceil(p/100 * n), 1-based.
        let r = (p * sorted.len()).div_ceil(100).max(1);
        sorted[r - 1]
    };
    Some(Percentiles {
        median: rank(50),
        p99: rank(99),
    })
}

/// Reconciling a dead instance: `rounds` times, a fresh database at `path` gets an instance that
/// leaves 25 active sessions with 4 tab records each (a claimed tab, a deliverable, two unmarked
/// agent tabs: 100 tab records) and an approval each; a second instance then ends the first
/// (`end_instance`, one fsynced transaction). Returns one duration per round.
pub fn bench_reconcile(path: &Path, rounds: usize) -> Result<Vec<Duration>> {
    use crate::instance::InstanceEnd;
    use crate::resource::Mark;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
        let dead = {
            let store = SqliteStore::open(path)?;
            let dead = store.begin_instance(1, None)?;
            for s in 0..25 {
                let session = SessionId::new(format!("s{s}"));
                store.create_session(&session, 2)?;
                let tab =
                    |id: String, ownership: Ownership, owner: Option<&SessionId>| NewResource {
                        id: ResourceId::new(id),
                        session_id: owner.cloned(),
                        kind: ResourceKind::Tab,
                        ownership,
                        state: ResourceState::Owned,
                        created_by_run: None,
                        handle: None,
                        url: None,
                        title: None,
                        now_ms: 3,
                    };
                let user = store.insert_resource(&tab(format!("u{s}"), Ownership::User, None))?;
                store.claim_resource(&user.id, &session, 4)?;
                let kept = store.insert_resource(&tab(
                    format!("k{s}"),
                    Ownership::AgentCreated,
                    Some(&session),
                ))?;
                store.set_mark(
                    &kept.id,
                    &session,
                    Mark::Deliverable,
                    &crate::id::TurnId::new("t"),
                    5,
                )?;
                for t in 0..2 {
                    store.insert_resource(&tab(
                        format!("a{s}-{t}"),
                        Ownership::AgentCreated,
                        Some(&session),
                    ))?;
                }
                store.record_approval(&crate::approval::NewApproval {
                    id: format!("ap{s}"),
                    session_id: session.clone(),
                    instance: dead,
                    run_id: crate::id::RunId::new(session.as_str()),
                    action: "click".into(),
                    origin: "https://example.test".into(),
                    tier: "R2".into(),
                    requested_at: 6,
                    expires_at: 1_000_000,
                })?;
            }
            dead
        };
        let store = SqliteStore::open(path)?;
        store.begin_instance(10, None)?;
        let start = Instant::now();
        let report = store.end_instance(dead, InstanceEnd::Abandoned, 11)?;
        samples.push(start.elapsed());
        debug_assert_eq!(
            report.closed.len() + report.released.len() + report.kept.len(),
            100
        );
    }
    Ok(samples)
}

/// The operation log's cost per action: `n` operations of a typical shape, each recorded
/// `attempted` and then ended `confirmed` — the two fsynced commits one action costs. Returns one
/// duration per operation (both writes) and how many bytes the database grew per 1,000
/// operations (measured after a checkpoint folds the WAL into the file).
pub fn bench_operations(path: &Path, n: usize) -> Result<(Vec<Duration>, u64)> {
    let store = SqliteStore::open(path)?;
    let size = || -> Result<u64> {
        let conn = rusqlite::Connection::open(path)?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(std::fs::metadata(path)?.len())
    };
    let before = size()?;
    let samples = operation_records(&store, n)?;
    let after = size()?;
    Ok((
        samples,
        after.saturating_sub(before) * 1000 / n.max(1) as u64,
    ))
}

/// The operation log's two writes per action ([`bench_operations`]) on any store.
pub fn operation_records(store: &dyn Store, n: usize) -> Result<Vec<Duration>> {
    use crate::record::{NewOperation, OperationEnd, OperationState};
    let instance = store.begin_instance(1, None)?;
    let session = SessionId::new(format!("bench-ops-{instance}"));
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let now = 10 + i as u64;
        let id = format!("op-{instance}-{i}");
        let start = Instant::now();
        store.begin_operation(&NewOperation {
            id: id.clone(),
            session_id: session.clone(),
            run_id: Some(crate::id::RunId::new(format!("run-{instance}"))),
            surface: "s1".into(),
            resource_id: Some("tab-1".into()),
            action: "click".into(),
            target: Some("button \"Create account\" [e12]".into()),
            text_chars: None,
            secret: false,
            url: Some("https://shop.example/checkout?step=&cart=".into()),
            frame_before: "frame_0123456789abcdef".into(),
            started_at: now,
        })?;
        store.end_operation(
            &id,
            &OperationEnd {
                state: OperationState::Confirmed,
                effect_uncertain: false,
                error: None,
                detail: None,
                frame_after: Some("frame_fedcba9876543210".into()),
                marker: Some(r#"{"kind":"click","points":[[640.0,360.0]],"viewport":[1280.0,720.0],"scroll":[0.0,0.0]}"#.into()),
                ended_at: now,
            },
        )?;
        samples.push(start.elapsed());
    }
    Ok(samples)
}
