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
    let store = SqliteStore::open(path)?;
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
    Some(Percentiles { median: rank(50), p99: rank(99) })
}
