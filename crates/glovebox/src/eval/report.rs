//! The eval's report: every attempt, summaries per task case, category and overall, the JSON
//! behind it, a text summary, a self-contained HTML page (English and Chinese labels, plots as
//! inline SVG) and the paired comparison of two reports.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use protocol::{ReasonCode, RunResult, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tasks::{Expect, TaskSpec};

/// How an attempt ended, as the harness judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The runtime's ending was the right one and the app's records agree.
    Success,
    /// Not done (the failure says how).
    Failure,
    /// The runtime said `succeeded` and the app's records say otherwise (or the right answer was
    /// `infeasible`). Must never happen.
    FalseSuccess,
    /// The environment failed (the app did not load, the browser went away): not the task's.
    Environment,
}

/// The closed failure taxonomy.
pub const FAILURES: [&str; 11] = [
    "wrong_target",
    "stale",
    "blocked_by_policy",
    "needs_user",
    "timeout",
    "model_error",
    "verification_failed",
    "check_failed",
    "wrong_answer",
    "gave_up",
    "other",
];

/// Where an attempt's time went (ms), from the runtime's records of its runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Times {
    pub model_ms: u64,
    pub capture_ms: u64,
    pub input_ms: u64,
    pub page_wait_ms: u64,
    pub approval_ms: u64,
    pub person_ms: u64,
    /// Everything but the model and people: the runtime's own share.
    pub runtime_ms: u64,
}

/// One attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attempt {
    pub task: String,
    pub category: String,
    pub case: String,
    pub run: u32,
    pub expect: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub failure: Option<String>,
    /// The last run's reason (or the refused call's code).
    #[serde(default)]
    pub reason: Option<String>,
    pub detail: String,
    pub check_failures: Vec<String>,
    pub wall_ms: u64,
    pub time: Times,
    pub runs: u64,
    pub steps: u64,
    pub model_requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub image_tokens: u64,
    pub tool_calls: u64,
    /// Actions the runtime was asked to perform (its operation records).
    pub actions: u64,
    /// Of those, refused or failed ones.
    pub failed_actions: u64,
    pub approvals: u64,
    /// A person's part: approvals answered and actions between turns.
    pub interventions: u64,
    pub submissions: u64,
    /// Faults the attempt met and had to get past: refused or failed actions, submissions the
    /// app refused, a browser that died between turns.
    #[serde(default)]
    pub faults: u64,
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

impl Attempt {
    pub fn new(task: &TaskSpec, expect: Expect) -> Attempt {
        Attempt {
            task: task.id.clone(),
            category: task.category.clone(),
            case: String::new(),
            run: 0,
            expect: match expect {
                Expect::Succeeded => "succeeded".into(),
                Expect::Infeasible => "infeasible".into(),
            },
            outcome: Outcome::Failure,
            failure: None,
            reason: None,
            detail: String::new(),
            check_failures: Vec::new(),
            wall_ms: 0,
            time: Times::default(),
            runs: 0,
            steps: 0,
            model_requests: 0,
            input_tokens: 0,
            output_tokens: 0,
            image_tokens: 0,
            tool_calls: 0,
            actions: 0,
            failed_actions: 0,
            approvals: 0,
            interventions: 0,
            submissions: 0,
            faults: 0,
            cost_usd: None,
        }
    }

    /// The attempt's key in the per-task table: `task` or `task~infeasible`.
    pub fn key(&self) -> String {
        if self.case == "infeasible" {
            format!("{}~infeasible", self.task)
        } else {
            self.task.clone()
        }
    }

    pub fn environment(&mut self, why: String) {
        self.outcome = Outcome::Environment;
        self.failure = None;
        self.detail = why;
    }

    pub fn fail(&mut self, failure: &str, why: String) {
        self.outcome = Outcome::Failure;
        self.failure = Some(failure.into());
        self.detail = why;
    }

    /// A run the runtime refused to start: a failure by its code (nothing ran, so no success).
    pub fn judge_refused(&mut self, code: &str, why: String, check_failures: Vec<String>) {
        self.reason = Some(code.into());
        self.check_failures = check_failures;
        let failure = match code {
            "stale_observation" => "stale",
            "capability_denied" | "origin_denied" | "approval_denied" => "blocked_by_policy",
            "needs_approval" | "new_surface_created" => "needs_user",
            "timeout" | "step_limit" => "timeout",
            "unknown_surface" | "ambiguous_surface" | "target_lost" => "wrong_target",
            _ => "other",
        };
        self.fail(failure, why);
    }

    /// Judges the last run's result against the case and the app's records.
    pub fn judge(&mut self, result: &RunResult, expect: Expect, check_failures: Vec<String>) {
        let reason = result.reason_code();
        self.reason = Some(super::reason_name(reason));
        self.detail = result.summary().to_owned();
        self.check_failures = check_failures;
        let checked = self.check_failures.is_empty();
        let said_succeeded = result.status() == RunStatus::Succeeded;
        if said_succeeded && (!checked || expect == Expect::Infeasible) {
            self.outcome = Outcome::FalseSuccess;
            self.failure = None;
            return;
        }
        if reason == ReasonCode::BackendUnavailable {
            self.environment(format!(
                "the browser backend went away: {}",
                result.summary()
            ));
            return;
        }
        let right_ending = match expect {
            Expect::Succeeded => said_succeeded,
            Expect::Infeasible => reason == ReasonCode::Infeasible,
        };
        if right_ending && checked {
            self.outcome = Outcome::Success;
            self.failure = None;
            return;
        }
        let failure = if right_ending {
            "check_failed"
        } else {
            match reason {
                ReasonCode::VerificationFailed => "verification_failed",
                ReasonCode::StepLimit | ReasonCode::Timeout => "timeout",
                ReasonCode::InvalidPlan => "model_error",
                ReasonCode::NeedsApproval
                | ReasonCode::NewSurfaceCreated
                | ReasonCode::LoginRequired => "needs_user",
                ReasonCode::ApprovalDenied
                | ReasonCode::OriginDenied
                | ReasonCode::CapabilityDenied => "blocked_by_policy",
                ReasonCode::TargetLost | ReasonCode::LeaseConflict => "wrong_target",
                ReasonCode::ActionFailed => {
                    if self.detail.contains("stale") || self.detail.contains("observe again") {
                        "stale"
                    } else {
                        "wrong_target"
                    }
                }
                ReasonCode::Infeasible => "wrong_answer",
                _ if result.summary().contains("gave up") => "gave_up",
                _ => "other",
            }
        };
        self.outcome = Outcome::Failure;
        self.failure = Some(failure.into());
    }

    /// What the runtime's log says of the session: its runs' time and steps, the actions and
    /// approvals.
    pub fn absorb_log(&mut self, log: &[Value]) {
        self.time = super::times_of(log);
        for entry in log {
            match entry["kind"].as_str() {
                Some("run_ended") => {
                    self.runs += 1;
                    self.steps += entry["steps"].as_u64().unwrap_or(0);
                }
                Some("operation") => {
                    self.actions += 1;
                    let state = entry["state"].as_str().unwrap_or_default();
                    if !entry["error"].is_null() || matches!(state, "failed" | "refused") {
                        self.failed_actions += 1;
                    }
                }
                Some("approval") => self.approvals += 1,
                _ => {}
            }
        }
        self.interventions = self.approvals + self.runs.saturating_sub(1);
    }
}

/// Completion, false successes, latency and cost over a group of attempts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub attempts: u64,
    pub environment_failures: u64,
    /// Attempts judged on the task (all but environment failures).
    pub judged: u64,
    pub successes: u64,
    pub completion_rate: f64,
    /// The 95 % Wilson interval of the completion rate.
    pub completion_low: f64,
    pub completion_high: f64,
    pub false_successes: u64,
    pub false_success_rate: f64,
    pub wall_p50_ms: u64,
    pub wall_p95_ms: u64,
    /// The wall time without the model's and people's (the runtime's overhead), median.
    pub overhead_p50_ms: u64,
    pub time: Times,
    pub model_requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub image_tokens: u64,
    pub cost_usd: Option<f64>,
    pub tool_calls: u64,
    pub actions: u64,
    pub approvals: u64,
    pub interventions: u64,
    /// Attempts that met a fault (a refused or failed action, a refusal of the app, a browser
    /// that died) and still succeeded, of those that met one.
    pub recoveries: u64,
    pub recovery_chances: u64,
    pub failures: BTreeMap<String, u64>,
}

/// The 95 % Wilson score interval of `k` successes in `n`.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let (k, n, z) = (k as f64, n as f64, 1.96_f64);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * ((p * (1.0 - p) + z * z / (4.0 * n)) / n).sqrt() / (1.0 + z * z / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The `q` quantile (nearest rank) of `values`.
pub fn quantile(values: &[u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

impl Summary {
    pub fn of<'a>(attempts: impl IntoIterator<Item = &'a Attempt>, priced: bool) -> Summary {
        let attempts: Vec<&Attempt> = attempts.into_iter().collect();
        let mut s = Summary {
            attempts: attempts.len() as u64,
            ..Summary::default()
        };
        let mut walls = Vec::new();
        let mut overheads = Vec::new();
        let mut cost = 0.0;
        for a in &attempts {
            if a.outcome == Outcome::Environment {
                s.environment_failures += 1;
                continue;
            }
            s.judged += 1;
            match a.outcome {
                Outcome::Success => s.successes += 1,
                Outcome::FalseSuccess => s.false_successes += 1,
                _ => {}
            }
            if let Some(f) = &a.failure {
                *s.failures.entry(f.clone()).or_default() += 1;
            }
            if a.faults > 0 {
                s.recovery_chances += 1;
                if a.outcome == Outcome::Success {
                    s.recoveries += 1;
                }
            }
            walls.push(a.wall_ms);
            overheads.push(
                a.wall_ms
                    .saturating_sub(a.time.model_ms + a.time.approval_ms + a.time.person_ms),
            );
            let t = &mut s.time;
            t.model_ms += a.time.model_ms;
            t.capture_ms += a.time.capture_ms;
            t.input_ms += a.time.input_ms;
            t.page_wait_ms += a.time.page_wait_ms;
            t.approval_ms += a.time.approval_ms;
            t.person_ms += a.time.person_ms;
            t.runtime_ms += a.time.runtime_ms;
            s.model_requests += a.model_requests;
            s.input_tokens += a.input_tokens;
            s.output_tokens += a.output_tokens;
            s.image_tokens += a.image_tokens;
            s.tool_calls += a.tool_calls;
            s.actions += a.actions;
            s.approvals += a.approvals;
            s.interventions += a.interventions;
            cost += a.cost_usd.unwrap_or(0.0);
        }
        s.completion_rate = if s.judged == 0 {
            0.0
        } else {
            round(s.successes as f64 / s.judged as f64)
        };
        let (low, high) = wilson(s.successes, s.judged);
        (s.completion_low, s.completion_high) = (round(low), round(high));
        s.false_success_rate = if s.judged == 0 {
            0.0
        } else {
            round(s.false_successes as f64 / s.judged as f64)
        };
        s.wall_p50_ms = quantile(&walls, 0.5);
        s.wall_p95_ms = quantile(&walls, 0.95);
        s.overhead_p50_ms = quantile(&overheads, 0.5);
        s.cost_usd = priced.then_some((cost * 1e6).round() / 1e6);
        s
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannerInfo {
    pub kind: String,
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// One row per task case, category or the whole set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub key: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(flatten)]
    pub summary: Summary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub format: String,
    pub set_version: String,
    pub planner: PlannerInfo,
    pub runs_per_case: u32,
    pub answer: String,
    pub wall_ms: u64,
    pub overall: Summary,
    pub categories: Vec<Row>,
    pub tasks: Vec<Row>,
    pub attempts: Vec<Attempt>,
}

impl Report {
    pub fn build(
        set_version: &str,
        planner: PlannerInfo,
        runs: u32,
        answer: &str,
        attempts: Vec<Attempt>,
        wall: Duration,
        priced: bool,
    ) -> Report {
        let mut keys: Vec<(String, String)> = Vec::new();
        for a in &attempts {
            if !keys.iter().any(|(k, _)| *k == a.key()) {
                keys.push((a.key(), a.category.clone()));
            }
        }
        let tasks = keys
            .iter()
            .map(|(key, category)| Row {
                key: key.clone(),
                category: Some(category.clone()),
                summary: Summary::of(attempts.iter().filter(|a| a.key() == *key), priced),
            })
            .collect();
        let categories = super::tasks::CATEGORIES
            .iter()
            .filter(|c| attempts.iter().any(|a| a.category == **c))
            .map(|c| Row {
                key: (*c).to_owned(),
                category: None,
                summary: Summary::of(attempts.iter().filter(|a| a.category == *c), priced),
            })
            .collect();
        Report {
            format: "glovebox-eval-report/1".into(),
            set_version: set_version.into(),
            planner,
            runs_per_case: runs,
            answer: answer.into(),
            wall_ms: wall.as_millis() as u64,
            overall: Summary::of(&attempts, priced),
            categories,
            tasks,
            attempts,
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The text summary on stdout.
pub fn text(r: &Report) -> String {
    let o = &r.overall;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "glovebox eval {} — {} planner{}, {} attempt(s) per case, approvals answered {}",
        r.set_version,
        r.planner.kind,
        r.planner
            .model
            .as_ref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default(),
        r.runs_per_case,
        r.answer
    );
    let _ = writeln!(
        s,
        "completion {} [{} – {}] of {} judged ({} successes), false successes {}, environment failures {}",
        pct(o.completion_rate),
        pct(o.completion_low),
        pct(o.completion_high),
        o.judged,
        o.successes,
        o.false_successes,
        o.environment_failures
    );
    let _ = writeln!(
        s,
        "wall time p50 {} ms, p95 {} ms (runtime overhead p50 {} ms); whole set {} ms",
        o.wall_p50_ms, o.wall_p95_ms, o.overhead_p50_ms, r.wall_ms
    );
    let _ = writeln!(
        s,
        "model: {} requests, {} input / {} output / {} image tokens, cost {}; {} tool calls, {} actions, {} approvals, {} interventions, recoveries {}/{}",
        o.model_requests,
        o.input_tokens,
        o.output_tokens,
        o.image_tokens,
        o.cost_usd.map_or("unknown".into(), |c| format!("${c:.4}")),
        o.tool_calls,
        o.actions,
        o.approvals,
        o.interventions,
        o.recoveries,
        o.recovery_chances
    );
    let _ = writeln!(
        s,
        "{:<34} {:>6} {:>6} {:>8} {:>8}  failures",
        "task", "done", "false", "p50 ms", "p95 ms"
    );
    for t in &r.tasks {
        let x = &t.summary;
        let failures: Vec<String> = x.failures.iter().map(|(k, v)| format!("{k}×{v}")).collect();
        let _ = writeln!(
            s,
            "{:<34} {:>6} {:>6} {:>8} {:>8}  {}{}",
            t.key,
            format!("{}/{}", x.successes, x.judged),
            x.false_successes,
            x.wall_p50_ms,
            x.wall_p95_ms,
            failures.join(" "),
            if x.environment_failures > 0 {
                format!(" environment×{}", x.environment_failures)
            } else {
                String::new()
            }
        );
    }
    s.trim_end().to_owned()
}

/// The paired comparison of two reports: each attempt of A against the same task, case and
/// attempt number of B.
pub fn compare(a: &Report, b: &Report) -> String {
    let mut s = String::new();
    let name = |r: &Report| {
        format!(
            "{}{}",
            r.planner.kind,
            r.planner
                .model
                .as_ref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default()
        )
    };
    let _ = writeln!(
        s,
        "A: {} ({}), B: {} ({})",
        name(a),
        a.set_version,
        name(b),
        b.set_version
    );
    let (mut both, mut only_a, mut only_b, mut neither, mut unpaired) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut rows = Vec::new();
    for key in a.tasks.iter().map(|t| t.key.clone()) {
        let Some(tb) = b.tasks.iter().find(|t| t.key == key) else {
            unpaired += 1;
            continue;
        };
        let ta = a.tasks.iter().find(|t| t.key == key).map(|t| &t.summary);
        let Some(ta) = ta else { continue };
        for x in a.attempts.iter().filter(|x| x.key() == key) {
            let Some(y) = b.attempts.iter().find(|y| y.key() == key && y.run == x.run) else {
                continue;
            };
            if x.outcome == Outcome::Environment || y.outcome == Outcome::Environment {
                continue;
            }
            match (x.outcome == Outcome::Success, y.outcome == Outcome::Success) {
                (true, true) => both += 1,
                (true, false) => only_a += 1,
                (false, true) => only_b += 1,
                (false, false) => neither += 1,
            }
        }
        rows.push(format!(
            "{:<34} {:>7} {:>7} {:>9} {:>9}",
            key,
            format!("{}/{}", ta.successes, ta.judged),
            format!("{}/{}", tb.summary.successes, tb.summary.judged),
            ta.wall_p50_ms,
            tb.summary.wall_p50_ms
        ));
    }
    let n = both + only_a + only_b + neither;
    let diff = if n == 0 {
        0.0
    } else {
        (only_b as f64 - only_a as f64) / n as f64
    };
    // The paired difference's 95 % interval (Wald on the discordant pairs).
    let se = if n == 0 {
        0.0
    } else {
        let nf = n as f64;
        ((only_a + only_b) as f64 - (only_b as f64 - only_a as f64).powi(2) / nf)
            .max(0.0)
            .sqrt()
            / nf
    };
    let _ = writeln!(
        s,
        "{n} paired attempts: both succeeded {both}, only A {only_a}, only B {only_b}, neither {neither}; completion B − A = {:+.1} points [{:+.1}, {:+.1}]",
        diff * 100.0,
        (diff - 1.96 * se) * 100.0,
        (diff + 1.96 * se) * 100.0
    );
    let _ = writeln!(
        s,
        "false successes: A {}, B {}; wall p50: A {} ms, B {} ms; model requests: A {}, B {}; tokens in/out: A {}/{}, B {}/{}",
        a.overall.false_successes,
        b.overall.false_successes,
        a.overall.wall_p50_ms,
        b.overall.wall_p50_ms,
        a.overall.model_requests,
        b.overall.model_requests,
        a.overall.input_tokens,
        a.overall.output_tokens,
        b.overall.input_tokens,
        b.overall.output_tokens
    );
    if unpaired > 0 {
        let _ = writeln!(s, "{unpaired} task case(s) of A are not in B (left out)");
    }
    let _ = writeln!(
        s,
        "{:<34} {:>7} {:>7} {:>9} {:>9}",
        "task", "A done", "B done", "A p50 ms", "B p50 ms"
    );
    for row in rows {
        let _ = writeln!(s, "{row}");
    }
    s.trim_end().to_owned()
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A label in both languages; the page shows one.
fn l(en: &str, zh: &str) -> String {
    format!("<span lang=en>{en}</span><span lang=zh>{zh}</span>")
}

/// A number the page shows, with its exact value in `data-value` (what the JSON says).
fn metric(name: &str, value: impl std::fmt::Display, shown: &str) -> String {
    format!(
        "<span data-metric=\"{name}\" data-value=\"{value}\">{}</span>",
        esc(shown)
    )
}

/// The report as one self-contained HTML page.
pub fn html(r: &Report) -> String {
    let o = &r.overall;
    let mut h = String::new();
    h.push_str("<!doctype html><html lang=en data-lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width\">");
    let _ = write!(h, "<title>Glovebox eval {}</title>", esc(&r.set_version));
    h.push_str("<style>body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;max-width:1100px}h1{font-size:20px}h2{font-size:16px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:right}td:first-child,th:first-child{text-align:left}.bad{color:#b00020;font-weight:600}.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:150px}.card b{display:block;font-size:20px}html[data-lang=en] [lang=zh],html[data-lang=zh] [lang=en]{display:none}svg text{font:11px system-ui,sans-serif}button{margin-right:6px}</style></head><body>");
    h.push_str("<div><button type=button onclick=\"document.documentElement.dataset.lang='en'\">English</button><button type=button onclick=\"document.documentElement.dataset.lang='zh'\">中文</button></div>");
    let _ = write!(
        h,
        "<h1>{} {}</h1><p>{}: <b>{}</b>{} · {}: {} · {}: {} · {}: {} ms</p>",
        l("Glovebox eval", "Glovebox 评估"),
        esc(&r.set_version),
        l("Planner", "规划器"),
        esc(&r.planner.kind),
        r.planner
            .model
            .as_deref()
            .map(|m| format!(" ({})", esc(m)))
            .unwrap_or_default(),
        l("attempts per case", "每个用例的尝试次数"),
        r.runs_per_case,
        l("approvals answered", "审批回答"),
        esc(&r.answer),
        l("whole set", "全部用时"),
        metric("wall_ms", r.wall_ms, &r.wall_ms.to_string())
    );
    let card = |label: String, body: String| format!("<div class=card>{label}<b>{body}</b></div>");
    h.push_str("<div class=cards>");
    h.push_str(&card(
        l("Completion", "完成率"),
        format!(
            "{} <small>[{} – {}]</small>",
            metric(
                "completion_rate",
                o.completion_rate,
                &pct(o.completion_rate)
            ),
            metric("completion_low", o.completion_low, &pct(o.completion_low)),
            metric(
                "completion_high",
                o.completion_high,
                &pct(o.completion_high)
            )
        ),
    ));
    h.push_str(&card(
        l("False successes", "误报成功"),
        format!(
            "<span class=\"{}\">{}</span>",
            if o.false_successes > 0 { "bad" } else { "" },
            metric(
                "false_successes",
                o.false_successes,
                &o.false_successes.to_string()
            )
        ),
    ));
    h.push_str(&card(
        l("Environment failures", "环境故障"),
        metric(
            "environment_failures",
            o.environment_failures,
            &o.environment_failures.to_string(),
        ),
    ));
    h.push_str(&card(
        l("Wall time p50 / p95", "耗时 p50 / p95"),
        format!(
            "{} / {} ms",
            metric("wall_p50_ms", o.wall_p50_ms, &o.wall_p50_ms.to_string()),
            metric("wall_p95_ms", o.wall_p95_ms, &o.wall_p95_ms.to_string())
        ),
    ));
    h.push_str(&card(
        l("Runtime overhead p50", "运行时开销 p50"),
        format!(
            "{} ms",
            metric(
                "overhead_p50_ms",
                o.overhead_p50_ms,
                &o.overhead_p50_ms.to_string()
            )
        ),
    ));
    h.push_str(&card(
        l("Model requests", "模型请求"),
        metric(
            "model_requests",
            o.model_requests,
            &o.model_requests.to_string(),
        ),
    ));
    h.push_str(&card(
        l("Tokens in / out / image", "输入 / 输出 / 图片 token"),
        format!(
            "{} / {} / {}",
            metric("input_tokens", o.input_tokens, &o.input_tokens.to_string()),
            metric(
                "output_tokens",
                o.output_tokens,
                &o.output_tokens.to_string()
            ),
            metric("image_tokens", o.image_tokens, &o.image_tokens.to_string())
        ),
    ));
    h.push_str(&card(
        l("Known API cost", "已知 API 成本"),
        match o.cost_usd {
            Some(c) => metric("cost_usd", c, &format!("${c:.4}")),
            None => format!(
                "<span data-metric=cost_usd data-value=null>{}</span>",
                l("unknown", "未知")
            ),
        },
    ));
    h.push_str(&card(
        l("Tool calls / actions", "工具调用 / 动作"),
        format!(
            "{} / {}",
            metric("tool_calls", o.tool_calls, &o.tool_calls.to_string()),
            metric("actions", o.actions, &o.actions.to_string())
        ),
    ));
    h.push_str(&card(
        l("Approvals / interventions", "审批 / 干预"),
        format!(
            "{} / {}",
            metric("approvals", o.approvals, &o.approvals.to_string()),
            metric(
                "interventions",
                o.interventions,
                &o.interventions.to_string()
            )
        ),
    ));
    h.push_str(&card(
        l("Recoveries", "恢复成功"),
        format!(
            "{} / {}",
            metric("recoveries", o.recoveries, &o.recoveries.to_string()),
            metric(
                "recovery_chances",
                o.recovery_chances,
                &o.recovery_chances.to_string()
            )
        ),
    ));
    h.push_str("</div>");

    // Completion by category, with its interval.
    let _ = write!(
        h,
        "<h2>{}</h2>",
        l("Completion by category", "各类别完成率")
    );
    let bar_w = 420.0;
    let row_h = 22.0;
    let height = row_h * r.categories.len() as f64 + 20.0;
    let _ = write!(
        h,
        "<svg role=img aria-label=\"completion by category\" width=640 height={height}>"
    );
    for (i, c) in r.categories.iter().enumerate() {
        let y = 10.0 + i as f64 * row_h;
        let x0 = 160.0;
        let _ = write!(
            h,
            "<text x=0 y={}>{}</text><rect x={x0} y={y} width={bar_w} height=14 fill=#eee /><rect data-category=\"{}\" x={x0} y={y} width={:.1} height=14 fill=#2e7d32 /><line x1={:.1} x2={:.1} y1={} y2={} stroke=#000 /><text x={} y={}>{}</text>",
            y + 11.0,
            esc(&c.key),
            esc(&c.key),
            bar_w * c.summary.completion_rate,
            x0 + bar_w * c.summary.completion_low,
            x0 + bar_w * c.summary.completion_high,
            y + 7.0,
            y + 7.0,
            x0 + bar_w + 8.0,
            y + 11.0,
            pct(c.summary.completion_rate)
        );
    }
    h.push_str("</svg>");

    // Latency: every judged attempt's wall time, by category, with the p50 and p95 marks.
    let _ = write!(
        h,
        "<h2>{}</h2>",
        l(
            "Latency distribution (wall time per attempt)",
            "耗时分布（每次尝试）"
        )
    );
    let max = r
        .attempts
        .iter()
        .map(|a| a.wall_ms)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let _ = write!(
        h,
        "<svg role=img aria-label=\"latency\" width=640 height={height}>"
    );
    for (i, c) in r.categories.iter().enumerate() {
        let y = 10.0 + i as f64 * row_h;
        let x0 = 160.0;
        let _ = write!(h, "<text x=0 y={}>{}</text>", y + 11.0, esc(&c.key));
        for a in r
            .attempts
            .iter()
            .filter(|a| a.category == c.key && a.outcome != Outcome::Environment)
        {
            let color = match a.outcome {
                Outcome::Success => "#2e7d32",
                Outcome::FalseSuccess => "#b00020",
                _ => "#ef6c00",
            };
            let _ = write!(
                h,
                "<circle cx={:.1} cy={} r=3 fill={color} fill-opacity=0.7 />",
                x0 + bar_w * a.wall_ms as f64 / max,
                y + 7.0
            );
        }
        for (q, dash) in [
            (c.summary.wall_p50_ms, ""),
            (c.summary.wall_p95_ms, " stroke-dasharray=2"),
        ] {
            let x = x0 + bar_w * q as f64 / max;
            let _ = write!(
                h,
                "<line x1={x:.1} x2={x:.1} y1={y} y2={} stroke=#000{dash} />",
                y + 14.0
            );
        }
    }
    let _ = write!(
        h,
        "<text x=160 y={}>0</text><text x={} y={}>{} ms</text></svg>",
        height - 2.0,
        160.0 + bar_w - 30.0,
        height - 2.0,
        max as u64
    );

    // Tokens per task case.
    let _ = write!(
        h,
        "<h2>{}</h2>",
        l(
            "Tokens per task (all attempts)",
            "每个任务的 token（全部尝试）"
        )
    );
    let max_tokens = r
        .tasks
        .iter()
        .map(|t| t.summary.input_tokens + t.summary.output_tokens)
        .max()
        .unwrap_or(0);
    if max_tokens == 0 {
        let _ = write!(
            h,
            "<p>{}</p>",
            l(
                "No model tokens: the scripted planners ask no model.",
                "没有模型 token：脚本规划器不调用模型。"
            )
        );
    } else {
        let th = row_h * r.tasks.len() as f64 + 10.0;
        let _ = write!(
            h,
            "<svg role=img aria-label=\"tokens per task\" width=640 height={th}>"
        );
        for (i, t) in r.tasks.iter().enumerate() {
            let y = 5.0 + i as f64 * row_h;
            let x0 = 220.0;
            let wi = 360.0 * t.summary.input_tokens as f64 / max_tokens as f64;
            let wo = 360.0 * t.summary.output_tokens as f64 / max_tokens as f64;
            let _ = write!(
                h,
                "<text x=0 y={}>{}</text><rect x={x0} y={y} width={wi:.1} height=14 fill=#1565c0 /><rect x={:.1} y={y} width={wo:.1} height=14 fill=#90caf9 /><text x={:.1} y={}>{}</text>",
                y + 11.0,
                esc(&t.key),
                x0 + wi,
                x0 + wi + wo + 6.0,
                y + 11.0,
                t.summary.input_tokens + t.summary.output_tokens
            );
        }
        h.push_str("</svg>");
    }

    // Per task case.
    let _ = write!(
        h,
        "<h2>{}</h2><table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>",
        l("Tasks", "任务"),
        l("task", "任务"),
        l("category", "类别"),
        l("done", "完成"),
        l("false success", "误报成功"),
        l("environment", "环境故障"),
        l("p50 ms", "p50 毫秒"),
        l("p95 ms", "p95 毫秒"),
        l("model requests", "模型请求"),
        l("failures", "失败")
    );
    for t in &r.tasks {
        let x = &t.summary;
        let failures: Vec<String> = x.failures.iter().map(|(k, v)| format!("{k}×{v}")).collect();
        let _ = write!(
            h,
            "<tr data-task=\"{}\" data-successes={} data-judged={} data-false-successes={}><td>{}</td><td>{}</td><td>{}/{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.key),
            x.successes,
            x.judged,
            x.false_successes,
            esc(&t.key),
            esc(t.category.as_deref().unwrap_or_default()),
            x.successes,
            x.judged,
            if x.false_successes > 0 { "bad" } else { "" },
            x.false_successes,
            x.environment_failures,
            x.wall_p50_ms,
            x.wall_p95_ms,
            x.model_requests,
            esc(&failures.join(" "))
        );
    }
    h.push_str("</tbody></table>");

    // Failure taxonomy and time split.
    let _ = write!(
        h,
        "<h2>{}</h2><table><tbody>",
        l("Failures by kind", "失败分类")
    );
    for kind in FAILURES {
        let n = o.failures.get(kind).copied().unwrap_or(0);
        let _ = write!(
            h,
            "<tr><td>{kind}</td><td>{}</td></tr>",
            metric(&format!("failure_{kind}"), n, &n.to_string())
        );
    }
    h.push_str("</tbody></table>");
    let t = &o.time;
    let _ = write!(
        h,
        "<h2>{}</h2><table><tbody><tr><td>{}</td><td>{} ms</td></tr><tr><td>{}</td><td>{} ms</td></tr><tr><td>{}</td><td>{} ms</td></tr><tr><td>{}</td><td>{} ms</td></tr><tr><td>{}</td><td>{} ms</td></tr><tr><td>{}</td><td>{} ms</td></tr></tbody></table>",
        l(
            "Where the time went (all attempts)",
            "时间花在哪里（全部尝试）"
        ),
        l("model", "模型"),
        metric("time_model_ms", t.model_ms, &t.model_ms.to_string()),
        l("page capture", "页面采集"),
        metric("time_capture_ms", t.capture_ms, &t.capture_ms.to_string()),
        l("input", "输入"),
        metric("time_input_ms", t.input_ms, &t.input_ms.to_string()),
        l("page wait", "页面等待"),
        metric(
            "time_page_wait_ms",
            t.page_wait_ms,
            &t.page_wait_ms.to_string()
        ),
        l("approvals", "审批"),
        metric(
            "time_approval_ms",
            t.approval_ms,
            &t.approval_ms.to_string()
        ),
        l(
            "runtime (all but model and people)",
            "运行时（除模型与人之外）"
        ),
        metric("time_runtime_ms", t.runtime_ms, &t.runtime_ms.to_string())
    );

    // Every attempt.
    let _ = write!(
        h,
        "<h2>{}</h2><table><thead><tr><th>{}</th><th>#</th><th>{}</th><th>{}</th><th>{}</th><th>ms</th><th>{}</th></tr></thead><tbody>",
        l("Attempts", "全部尝试"),
        l("task", "任务"),
        l("outcome", "结果"),
        l("failure", "失败"),
        l("runtime's reason", "运行时原因"),
        l("detail", "详情")
    );
    for a in &r.attempts {
        let outcome = serde_json::to_value(a.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut detail = a.detail.clone();
        if !a.check_failures.is_empty() {
            detail = format!("{detail} — {}", a.check_failures.join("; "));
        }
        let _ = write!(
            h,
            "<tr data-attempt=\"{}#{}\"><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&a.key()),
            a.run,
            esc(&a.key()),
            a.run,
            if a.outcome == Outcome::FalseSuccess {
                "bad"
            } else {
                ""
            },
            outcome,
            esc(a.failure.as_deref().unwrap_or("")),
            esc(a.reason.as_deref().unwrap_or("")),
            a.wall_ms,
            esc(&detail)
        );
    }
    h.push_str("</tbody></table>");
    // The JSON behind the page.
    let json = serde_json::to_string(r)
        .unwrap_or_default()
        .replace("</", "<\\/");
    let _ = write!(
        h,
        "<script type=application/json id=report-data>{json}</script>"
    );
    h.push_str("<script>if((navigator.language||'').startsWith('zh'))document.documentElement.dataset.lang='zh'</script></body></html>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_and_quantiles() {
        let (low, high) = wilson(3, 3);
        assert!(low > 0.43 && low < 0.45 && high == 1.0, "{low} {high}");
        assert_eq!(wilson(0, 0), (0.0, 0.0));
        assert_eq!(quantile(&[5, 1, 3], 0.5), 3);
        assert_eq!(quantile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95), 10);
        assert_eq!(quantile(&[], 0.5), 0);
    }
}
