//! What an operator scrapes (`/metrics`, Prometheus text format 0.0.4) and what an orchestrator
//! probes (`/readyz`). Counters are taken where the one path already records: an action's
//! operation record (`records.rs`: its kind, receipt state or error code, and time) and the
//! event stream (`Runtime::emit`: runs ended, approvals asked and answered). Gauges are read
//! when scraped. Label values are closed sets (action kinds, receipt states, error codes, run
//! statuses): no page text, URL, session id or secret is ever a label.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use protocol::ErrorCode;
use surface::metrics::{BUCKETS, Histogram, HistogramSnapshot};

use crate::events::EventKind;
use crate::runtime::Runtime;

/// The runtime's counters since its start.
pub(crate) struct Counters {
    started: Instant,
    /// Actions by (kind, outcome): a receipt state, or `refused` (refused before dispatch).
    actions: Mutex<BTreeMap<(String, &'static str), u64>>,
    /// Actions that ended with an error, by its code.
    errors: [AtomicU64; ErrorCode::ALL.len()],
    /// An action's time from its record to its outcome (refusals excluded).
    action_time: Histogram,
    /// Runs ended, by status.
    runs: Mutex<BTreeMap<String, u64>>,
    approvals_requested: AtomicU64,
    /// Approvals answered, by decision.
    approvals_resolved: Mutex<BTreeMap<String, u64>>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            started: Instant::now(),
            actions: Mutex::default(),
            errors: Default::default(),
            action_time: Histogram::default(),
            runs: Mutex::default(),
            approvals_requested: AtomicU64::new(0),
            approvals_resolved: Mutex::default(),
        }
    }
}

/// An enum's serde name (its closed snake_case code).
fn code_of<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".into())
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    *map.lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key)
        .or_default() += 1;
}

impl Counters {
    /// An action's outcome as its operation record has it.
    pub(crate) fn action(
        &self,
        kind: &str,
        outcome: &'static str,
        error: Option<ErrorCode>,
        took: Option<Duration>,
    ) {
        bump(&self.actions, (kind.to_owned(), outcome));
        if let Some(code) = error
            && let Some(i) = ErrorCode::ALL.iter().position(|c| *c == code)
        {
            self.errors[i].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(took) = took {
            self.action_time.observe(took);
        }
    }

    /// Runs and approvals, as the event stream tells them.
    pub(crate) fn event(&self, kind: &EventKind) {
        match kind {
            EventKind::RunEnded { status, .. } => bump(&self.runs, code_of(status)),
            EventKind::ApprovalRequested { .. } => {
                self.approvals_requested.fetch_add(1, Ordering::Relaxed);
            }
            EventKind::ApprovalResolved { outcome, .. } => {
                bump(&self.approvals_resolved, code_of(outcome))
            }
            _ => {}
        }
    }
}

/// A receipt state as an action's outcome label.
pub(crate) fn receipt_label(state: protocol::ReceiptState) -> &'static str {
    match state {
        // Recorded `failed`: nothing was sent after all.
        protocol::ReceiptState::Attempted | protocol::ReceiptState::Failed => "failed",
        protocol::ReceiptState::Dispatched => "dispatched",
        protocol::ReceiptState::Confirmed => "confirmed",
        protocol::ReceiptState::Unknown => "unknown",
    }
}

/// A label value in the exposition format's escaping.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes the text of one metric family.
struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        for (i, count) in h.cumulative.iter().enumerate() {
            let le = BUCKETS
                .get(i)
                .map(|b| b.to_string())
                .unwrap_or_else(|| "+Inf".into());
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &with_le, *count as f64);
        }
        self.sample(&format!("{name}_sum"), labels, h.sum_seconds);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// Why the runtime is not ready to serve (a probe's answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady(pub String);

impl Runtime {
    /// Counts an event (called by `emit`, the stream's one sender).
    pub(crate) fn count_event(&self, kind: &EventKind) {
        self.inner.counters.event(kind);
    }

    /// The backend connected (not starting, reconnecting or stopped) and its process alive.
    fn backend_up(&self) -> bool {
        self.adapter().backend_metrics().connected
            && self.bridge_state() == "connected"
            && !self.adapter().process_dead()
    }

    /// Ready to serve: its surfaces' backend connected and alive (a browser launched in the
    /// background is not ready until it is), the runtime not stopping, its records readable.
    pub fn readiness(&self) -> Result<(), NotReady> {
        if self.fenced() {
            return Err(NotReady(
                "another instance took this instance's sessions over".into(),
            ));
        }
        if self.bridge_state() == "stopped" {
            return Err(NotReady("stopping".into()));
        }
        if !self.backend_up() {
            return Err(NotReady("the surfaces' backend is not connected".into()));
        }
        self.inner
            .store
            .current_instance()
            .map(|_| ())
            .map_err(|_| NotReady("the records cannot be read".into()))
    }

    /// Every metric, in Prometheus' text exposition format.
    pub fn metrics_text(&self) -> String {
        let c = &self.inner.counters;
        let mut out = Exposition(String::with_capacity(8 * 1024));

        out.family(
            "glovebox_build_info",
            "gauge",
            "The running build (always 1).",
        );
        out.sample(
            "glovebox_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))],
            1.0,
        );
        out.family(
            "glovebox_uptime_seconds",
            "gauge",
            "Seconds since the runtime started.",
        );
        out.sample(
            "glovebox_uptime_seconds",
            &[],
            c.started.elapsed().as_secs_f64(),
        );

        let kind = code_of(&self.adapter().kind());
        out.family(
            "glovebox_backend_up",
            "gauge",
            "1 while the surfaces' backend is connected and alive (0 while it starts or reconnects).",
        );
        let up = self.backend_up();
        out.sample(
            "glovebox_backend_up",
            &[("kind", &kind)],
            if up { 1.0 } else { 0.0 },
        );

        let sessions = self.sessions();
        out.family("glovebox_sessions", "gauge", "Sessions open.");
        out.sample("glovebox_sessions", &[], sessions.len() as f64);
        out.family(
            "glovebox_surfaces",
            "gauge",
            "Surfaces (tabs, windows, guest screens) held by sessions.",
        );
        out.sample(
            "glovebox_surfaces",
            &[],
            sessions.iter().map(|s| s.tabs).sum::<usize>() as f64,
        );
        out.family(
            "glovebox_leases",
            "gauge",
            "Write leases held now (one per surface being written).",
        );
        out.sample(
            "glovebox_leases",
            &[],
            self.inner.leases.live(crate::runtime::now_ms()) as f64,
        );
        out.family(
            "glovebox_approvals_waiting",
            "gauge",
            "Approvals waiting for a person.",
        );
        out.sample(
            "glovebox_approvals_waiting",
            &[],
            self.pending_approvals().len() as f64,
        );
        out.family(
            "glovebox_runs_waiting_for_person",
            "gauge",
            "Runs paused for a person (a login, a CAPTCHA).",
        );
        out.sample(
            "glovebox_runs_waiting_for_person",
            &[],
            self.waiting_runs().len() as f64,
        );

        out.family(
            "glovebox_actions_total",
            "counter",
            "Actions on the one path by kind and outcome (a receipt state, or refused before dispatch).",
        );
        for ((kind, outcome), n) in c.actions.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.sample(
                "glovebox_actions_total",
                &[("kind", kind), ("outcome", outcome)],
                *n as f64,
            );
        }
        out.family(
            "glovebox_action_errors_total",
            "counter",
            "Actions that ended with an error, by its code (the design's closed set).",
        );
        for (code, n) in ErrorCode::ALL.iter().zip(&c.errors) {
            out.sample(
                "glovebox_action_errors_total",
                &[("code", code.as_str())],
                n.load(Ordering::Relaxed) as f64,
            );
        }
        out.family(
            "glovebox_action_seconds",
            "histogram",
            "An action's time from its record to its outcome (its fresh observation included).",
        );
        out.histogram("glovebox_action_seconds", &[], &c.action_time.snapshot());

        out.family("glovebox_runs_total", "counter", "Runs ended, by status.");
        for (status, n) in c.runs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.sample("glovebox_runs_total", &[("status", status)], *n as f64);
        }
        out.family(
            "glovebox_approvals_requested_total",
            "counter",
            "Approvals asked of a person.",
        );
        out.sample(
            "glovebox_approvals_requested_total",
            &[],
            c.approvals_requested.load(Ordering::Relaxed) as f64,
        );
        out.family(
            "glovebox_approvals_resolved_total",
            "counter",
            "Approvals a person answered, by decision.",
        );
        for (decision, n) in c
            .approvals_resolved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            out.sample(
                "glovebox_approvals_resolved_total",
                &[("decision", decision)],
                *n as f64,
            );
        }

        let backend = self.adapter().backend_metrics();
        if let Some(pool) = &backend.pool {
            out.family(
                "glovebox_pool_browser_up",
                "gauge",
                "1 while a browser of the pool is up.",
            );
            for (name, up, _, _) in &pool.members {
                out.sample(
                    "glovebox_pool_browser_up",
                    &[("browser", name)],
                    if *up { 1.0 } else { 0.0 },
                );
            }
            out.family(
                "glovebox_pool_sessions",
                "gauge",
                "Sessions on each browser of the pool.",
            );
            for (name, _, sessions, _) in &pool.members {
                out.sample(
                    "glovebox_pool_sessions",
                    &[("browser", name)],
                    *sessions as f64,
                );
            }
            out.family(
                "glovebox_pool_capacity",
                "gauge",
                "Sessions each browser of the pool takes.",
            );
            for (name, _, _, cap) in &pool.members {
                out.sample("glovebox_pool_capacity", &[("browser", name)], *cap as f64);
            }
            out.family(
                "glovebox_pool_waiting",
                "gauge",
                "Sessions waiting for room in the pool.",
            );
            out.sample("glovebox_pool_waiting", &[], pool.waiting as f64);
        }
        if let Some(round_trips) = &backend.round_trips {
            out.family(
                "glovebox_backend_round_trip_seconds",
                "histogram",
                "Round trips of requests to the surfaces' backend (a CDP command, a guest's HTTP request), replies and errors alike.",
            );
            out.histogram(
                "glovebox_backend_round_trip_seconds",
                &[("protocol", backend.protocol)],
                round_trips,
            );
        }
        out.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = Exposition(String::new());
        out.sample("m", &[("a", "x\"y\\z\nw")], 1.0);
        assert_eq!(out.0, "m{a=\"x\\\"y\\\\z\\nw\"} 1\n");
    }

    #[test]
    fn a_histogram_ends_with_inf_sum_and_count() {
        let h = Histogram::default();
        h.observe(Duration::from_millis(2));
        let mut out = Exposition(String::new());
        out.histogram("h", &[("p", "cdp")], &h.snapshot());
        let lines: Vec<&str> = out.0.lines().collect();
        assert_eq!(lines.len(), BUCKETS.len() + 3);
        assert_eq!(lines[0], "h_bucket{p=\"cdp\",le=\"0.0005\"} 0");
        assert_eq!(lines[2], "h_bucket{p=\"cdp\",le=\"0.0025\"} 1");
        assert_eq!(lines[BUCKETS.len()], "h_bucket{p=\"cdp\",le=\"+Inf\"} 1");
        assert_eq!(lines[BUCKETS.len() + 2], "h_count{p=\"cdp\"} 1");
    }
}
