//! Latency histograms for the operator's `/metrics`: lock-free counters with fixed buckets (in
//! seconds, as Prometheus wants them), observed by whoever times something (an adapter its
//! backend's round trips, the runtime its actions) and read as a snapshot when scraped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds: from half a millisecond (a CDP call on a quiet
/// page) to ten seconds (an action's default deadline).
pub const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A histogram of durations, shared by reference and observed from any thread.
#[derive(Debug, Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); the last one is past the largest bound.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    /// Counts one duration.
    pub fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// What it has counted so far.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                running += b.load(Ordering::Relaxed);
                running
            })
            .collect::<Vec<u64>>();
        HistogramSnapshot {
            // The total is the last cumulative bucket, so `+Inf` and `_count` always agree
            // even while another thread observes.
            count: *cumulative.last().unwrap_or(&0),
            cumulative,
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

/// A histogram as read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Cumulative counts per bound of [`BUCKETS`], then `+Inf`.
    pub cumulative: Vec<u64>,
    pub sum_seconds: f64,
    pub count: u64,
}

/// What an adapter tells the operator about its backend.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendMetrics {
    /// The backend's protocol, as the metrics' label (`cdp`, `x11`, `guest_http`).
    pub protocol: &'static str,
    /// Connected now (not starting, not reconnecting).
    pub connected: bool,
    /// Round trips of requests to it (reply or error), when the adapter times them.
    pub round_trips: Option<HistogramSnapshot>,
    /// A pool's occupancy: each member backend, and the sessions waiting for room.
    pub pool: Option<PoolMetrics>,
}

/// How full a pool of backends is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolMetrics {
    /// Per member: its name (`m0`…), whether it is up, its sessions and its cap.
    pub members: Vec<(String, bool, usize, usize)>,
    /// Sessions waiting for room now.
    pub waiting: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_their_bucket_and_add_up() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_millis(1));
        h.observe(Duration::from_millis(7));
        h.observe(Duration::from_secs(60));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.cumulative.len(), BUCKETS.len() + 1);
        assert_eq!(s.cumulative[0], 1, "0.3 ms <= 0.5 ms");
        assert_eq!(s.cumulative[1], 2, "1 ms <= 1 ms");
        assert_eq!(s.cumulative[4], 3, "7 ms <= 10 ms");
        assert_eq!(s.cumulative[BUCKETS.len() - 1], 3);
        assert_eq!(
            s.cumulative[BUCKETS.len()],
            4,
            "a minute is past every bound"
        );
        assert!((s.sum_seconds - 60.0083).abs() < 1e-9);
    }
}
