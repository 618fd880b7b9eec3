//! The latency measurement `glovebox bench store` calls.

use std::time::Duration;

use store::bench::{Percentiles, bench_ownership_changes, percentiles};
use store::{SqliteStore, Store};

use crate::db_path;

#[test]
fn bench_performs_n_committed_ownership_changes() {
    let path = db_path("bench");
    let samples = bench_ownership_changes(&path, 11).expect("bench");
    assert_eq!(samples.len(), 11);
    // A second run on the same file uses fresh ids instead of colliding.
    assert_eq!(bench_ownership_changes(&path, 2).expect("again").len(), 2);

    let store = SqliteStore::open(&path).expect("reopen");
    let first = store
        .get_resource(&"bench-tab-1".into())
        .expect("first run's tab");
    // Eleven alternating changes end claimed; version 1 + 11.
    assert_eq!(first.version, 12);
    assert_eq!(
        first.session_id.map(|s| s.to_string()).as_deref(),
        Some("bench-session-1")
    );
    let second = store
        .get_resource(&"bench-tab-2".into())
        .expect("second run's tab");
    assert_eq!((second.session_id, second.version), (None, 3));
}

#[test]
fn percentiles_use_nearest_rank() {
    let ms = Duration::from_millis;
    assert_eq!(percentiles(&[]), None);
    assert_eq!(
        percentiles(&[ms(7)]),
        Some(Percentiles {
            median: ms(7),
            p99: ms(7)
        })
    );
    let hundred: Vec<Duration> = (1..=100).rev().map(ms).collect();
    assert_eq!(
        percentiles(&hundred),
        Some(Percentiles {
            median: ms(50),
            p99: ms(99)
        })
    );
    let two_hundred: Vec<Duration> = (1..=200).map(ms).collect();
    assert_eq!(
        percentiles(&two_hundred),
        Some(Percentiles {
            median: ms(100),
            p99: ms(198)
        })
    );
}
