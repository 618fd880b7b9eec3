//! The task set `glovebox eval` runs: versioned, frozen inputs (the apps and files it serves),
//! checks and budgets, read from `eval/<version>/` (built into the binary) or a directory of the
//! same shape (`--set DIR`). Every field is checked when the set is read: an unknown field or a
//! task that cannot be judged is an error before anything runs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use runtime::{Assertion, Scripted};
use serde::{Deserialize, Serialize};

/// The set built into the binary (`eval/v1/` in the repository).
const BUILTIN: &[(&str, &str)] = &[
    ("tasks.json", include_str!("../../../../eval/v1/tasks.json")),
    (
        "apps/common.js",
        include_str!("../../../../eval/v1/apps/common.js"),
    ),
    (
        "apps/checkout.html",
        include_str!("../../../../eval/v1/apps/checkout.html"),
    ),
    (
        "apps/mail.html",
        include_str!("../../../../eval/v1/apps/mail.html"),
    ),
    (
        "apps/seats.html",
        include_str!("../../../../eval/v1/apps/seats.html"),
    ),
    (
        "apps/chart.html",
        include_str!("../../../../eval/v1/apps/chart.html"),
    ),
    (
        "apps/signin.html",
        include_str!("../../../../eval/v1/apps/signin.html"),
    ),
    (
        "apps/plans.html",
        include_str!("../../../../eval/v1/apps/plans.html"),
    ),
    (
        "apps/drafts.html",
        include_str!("../../../../eval/v1/apps/drafts.html"),
    ),
    (
        "apps/expense.html",
        include_str!("../../../../eval/v1/apps/expense.html"),
    ),
    (
        "apps/reports.html",
        include_str!("../../../../eval/v1/apps/reports.html"),
    ),
    (
        "apps/orders.html",
        include_str!("../../../../eval/v1/apps/orders.html"),
    ),
    (
        "apps/profile.html",
        include_str!("../../../../eval/v1/apps/profile.html"),
    ),
    (
        "apps/survey.html",
        include_str!("../../../../eval/v1/apps/survey.html"),
    ),
    (
        "apps/signup.html",
        include_str!("../../../../eval/v1/apps/signup.html"),
    ),
    (
        "apps/flights.html",
        include_str!("../../../../eval/v1/apps/flights.html"),
    ),
    (
        "apps/ticket.html",
        include_str!("../../../../eval/v1/apps/ticket.html"),
    ),
    (
        "apps/review.html",
        include_str!("../../../../eval/v1/apps/review.html"),
    ),
    (
        "apps/newsletter.py",
        include_str!("../../../../eval/v1/apps/newsletter.py"),
    ),
    (
        "apps/settings.py",
        include_str!("../../../../eval/v1/apps/settings.py"),
    ),
    (
        "apps/evalapp.py",
        include_str!("../../../../eval/v1/apps/evalapp.py"),
    ),
    (
        "files/invoice-042.csv",
        include_str!("../../../../eval/v1/files/invoice-042.csv"),
    ),
    (
        "downloads/sales-2026-03.csv",
        include_str!("../../../../eval/v1/downloads/sales-2026-03.csv"),
    ),
    (
        "downloads/invoice-1042.txt",
        include_str!("../../../../eval/v1/downloads/invoice-1042.txt"),
    ),
];

/// The categories of `004_…`'s diagnostic set: the eight of the browser, and the desktop's (X11
/// windows of real applications). VM guests join with their adapter.
pub const CATEGORIES: [&str; 10] = [
    "dense_controls",
    "visual",
    "multi_tab",
    "dialogs_files",
    "downloads",
    "recovery",
    "long_flows",
    "injection",
    "desktop",
    "vm",
];

/// A task set: its version, its tasks, and the files it serves (apps, uploads, downloads).
#[derive(Debug, Clone)]
pub struct TaskSet {
    pub version: String,
    pub tasks: Vec<TaskSpec>,
    /// `apps/…`, `files/…` and `downloads/…`, by path relative to the set.
    pub files: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetFile {
    version: String,
    tasks: Vec<TaskSpec>,
}

/// One task: an app, what the user asks, budgets, and two cases — one that can be done and a
/// known-infeasible one whose right answer is `infeasible`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub id: String,
    pub category: String,
    pub title: String,
    /// Where the task runs: a browser tab (the default), a desktop window, or a VM guest's
    /// screen.
    #[serde(default)]
    pub surface: SurfaceKind,
    /// The app's page under `apps/` (a path, optionally with a query), or an absolute URL; for a
    /// desktop task, its program under `apps/` (a Python GTK script, the case's query its
    /// arguments); for a VM task, the program and arguments started in the guest (the case's
    /// query appended).
    pub app: String,
    /// A desktop or VM task's window title (how the person finds the window to offer, or the
    /// harness knows the guest's app is up).
    #[serde(default)]
    pub window: Option<String>,
    /// What the user asks, in their words.
    pub task: String,
    pub budget: Budget,
    pub feasible: Case,
    pub infeasible: Case,
}

/// Where a task runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceKind {
    #[default]
    Browser,
    Desktop,
    Vm,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_steps: u32,
    pub max_seconds: u32,
}

/// One case of a task: the app's query, the task text when it differs, the ground truth, and
/// its turns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Appended to the app's URL (`soldout=M`).
    #[serde(default)]
    pub query: String,
    /// The task text for this case, when it is not the task's.
    #[serde(default)]
    pub task: Option<String>,
    /// What must hold in the app's own records afterwards — judged by the harness, never by
    /// the runtime or the planner.
    pub check: Vec<Check>,
    /// The turns of the conversation: one run each, a person's action between them.
    pub phases: Vec<Phase>,
}

/// One turn: a run on the session's focused tab (or `surface`), what its ending must be when it
/// is not the last, the checks the runtime verifies, and the scripted planner's steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// What the user asks in this turn, when it is not the case's task.
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub surface: Option<String>,
    /// The reason an earlier turn must end with (`new_surface_created`); the last turn's is the
    /// case's (`verified`, or `infeasible`).
    #[serde(default)]
    pub expect: Option<String>,
    /// What the person does after this turn: `link_popup` or `restart_browser`.
    #[serde(default)]
    pub then: Option<String>,
    /// The runtime's completion checks (what the user would state as done).
    #[serde(default)]
    pub verify: Vec<Assertion>,
    /// The scripted planner's steps (used without `--provider`).
    pub script: Vec<Step>,
}

/// What the harness checks in the app's records after an attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The app received a submission of `form` whose fields include these values.
    Submitted {
        form: String,
        fields: BTreeMap<String, String>,
    },
    /// The app received no submission of `form` (of any form when absent).
    NotSubmitted {
        #[serde(default)]
        form: Option<String>,
    },
    /// Nothing requested a path starting with this (an injection's exfiltration endpoint).
    NoRequest { path_prefix: String },
    /// One of the run's downloads has exactly the bytes of `downloads/<name>`.
    Downloaded { name: String },
    /// A file in the VM guest holds exactly this text (read by the harness through the guest
    /// server's OSWorld endpoint).
    GuestFile { path: String, text: String },
    /// No such file in the VM guest (or an empty one).
    NoGuestFile { path: String },
}

/// A scripted planner's step, by the element's name as the observation shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Click(String),
    Type(String, String),
    Select(String, String),
    Press(String, String),
    Scroll(i32),
    Wait(u32),
    Dialog(bool),
    Look(bool),
    /// An action of the act schema without `expected_frame_id`.
    Act(serde_json::Value),
    Done(String),
    Infeasible(String),
    GiveUp(String),
}

impl Step {
    pub fn scripted(&self) -> Scripted {
        match self.clone() {
            Step::Click(n) => Scripted::Click(n),
            Step::Type(n, t) => Scripted::Type(n, t),
            Step::Select(n, v) => Scripted::Select(n, v),
            Step::Press(n, k) => Scripted::Press(n, k),
            Step::Scroll(dy) => Scripted::Scroll(dy),
            Step::Wait(ms) => Scripted::Wait(ms),
            Step::Dialog(accept) => Scripted::Dialog(accept),
            Step::Look(_) => Scripted::Look,
            Step::Act(value) => Scripted::Act(value),
            Step::Done(summary) => Scripted::Done(summary),
            Step::Infeasible(summary) => Scripted::Infeasible(summary.clone(), vec![summary]),
            Step::GiveUp(summary) => Scripted::GiveUp(summary),
        }
    }
}

/// What a case's last turn must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Succeeded,
    Infeasible,
}

impl TaskSet {
    /// The built-in set.
    pub fn builtin() -> anyhow::Result<TaskSet> {
        let files = BUILTIN
            .iter()
            .filter(|(path, _)| *path != "tasks.json")
            .map(|(path, text)| ((*path).to_owned(), text.as_bytes().to_vec()))
            .collect();
        Self::parse(BUILTIN[0].1, files).context("the built-in task set")
    }

    /// A set in a directory: `tasks.json` and the `apps/`, `files/` and `downloads/` it names.
    pub fn load(dir: &Path) -> anyhow::Result<TaskSet> {
        let text = std::fs::read_to_string(dir.join("tasks.json"))
            .with_context(|| format!("cannot read {}", dir.join("tasks.json").display()))?;
        let mut files = BTreeMap::new();
        for sub in ["apps", "files", "downloads"] {
            let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_file()) {
                    let name = format!("{sub}/{}", entry.file_name().to_string_lossy());
                    files.insert(name, std::fs::read(entry.path())?);
                }
            }
        }
        Self::parse(&text, files).with_context(|| format!("the task set in {}", dir.display()))
    }

    fn parse(text: &str, files: BTreeMap<String, Vec<u8>>) -> anyhow::Result<TaskSet> {
        let set: SetFile = serde_json::from_str(text).context("tasks.json")?;
        let mut seen = std::collections::BTreeSet::new();
        for task in &set.tasks {
            if !seen.insert(task.id.clone()) {
                bail!("task {} is listed twice", task.id);
            }
            if !CATEGORIES.contains(&task.category.as_str()) {
                bail!(
                    "task {}: unknown category {:?} (one of {})",
                    task.id,
                    task.category,
                    CATEGORIES.join(", ")
                );
            }
            let page = task.app.split('?').next().unwrap_or_default();
            if task.surface != SurfaceKind::Vm
                && !task.app.contains("://")
                && !files.contains_key(&format!("apps/{page}"))
            {
                bail!("task {}: no app apps/{page} in the set", task.id);
            }
            match task.surface {
                SurfaceKind::Desktop if !task.app.ends_with(".py") || task.window.is_none() => {
                    bail!(
                        "task {}: a desktop task's app is a Python script under apps/ and it names its window",
                        task.id
                    )
                }
                SurfaceKind::Vm if task.window.is_none() => {
                    bail!("task {}: a VM task names its app's window", task.id)
                }
                SurfaceKind::Browser if task.window.is_some() => {
                    bail!("task {}: only a desktop or VM task names a window", task.id)
                }
                _ => {}
            }
            for (name, case) in [
                ("feasible", &task.feasible),
                ("infeasible", &task.infeasible),
            ] {
                if case.phases.is_empty() {
                    bail!("task {} ({name}): no phases", task.id);
                }
                if case.check.is_empty() {
                    bail!(
                        "task {} ({name}): no check: a case the harness cannot judge",
                        task.id
                    );
                }
                for check in &case.check {
                    if let Check::Downloaded { name: file } = check
                        && !files.contains_key(&format!("downloads/{file}"))
                    {
                        bail!("task {} ({name}): no downloads/{file} in the set", task.id);
                    }
                }
                let last = case.phases.len() - 1;
                for (i, phase) in case.phases.iter().enumerate() {
                    if i < last && phase.expect.is_none() {
                        bail!(
                            "task {} ({name}): turn {} is not the last and says no `expect`",
                            task.id,
                            i + 1
                        );
                    }
                    if let Some(then) = &phase.then
                        && !matches!(then.as_str(), "link_popup" | "restart_browser")
                    {
                        bail!(
                            "task {} ({name}): turn {}: unknown `then` {then:?} (link_popup or restart_browser)",
                            task.id,
                            i + 1
                        );
                    }
                    for check in &phase.verify {
                        check
                            .check_bounds()
                            .map_err(|e| anyhow::anyhow!("task {} ({name}): {e}", task.id))?;
                    }
                }
            }
        }
        Ok(TaskSet {
            version: set.version,
            tasks: set.tasks,
            files,
        })
    }

    /// The tasks `filter` names: ids, id prefixes (`dense.`) or categories, comma-separated; all
    /// when `None`. Naming nothing known is an error.
    pub fn select(&self, filter: Option<&str>) -> anyhow::Result<Vec<TaskSpec>> {
        let Some(filter) = filter else {
            return Ok(self.tasks.clone());
        };
        let wanted: Vec<&str> = filter
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        let picked: Vec<TaskSpec> = self
            .tasks
            .iter()
            .filter(|t| {
                wanted.iter().any(|w| {
                    t.id == *w || t.category == *w || (w.ends_with('.') && t.id.starts_with(w))
                })
            })
            .cloned()
            .collect();
        if picked.is_empty() {
            bail!(
                "--tasks {filter}: no task matches (ids: {}; categories: {})",
                self.tasks
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                CATEGORIES.join(", ")
            );
        }
        Ok(picked)
    }
}
