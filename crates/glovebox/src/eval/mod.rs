//! `glovebox eval`: the diagnostic task set of `004_…` (应用任务集与同条件对比) run as a user runs
//! it — against their own model and configuration, or the tasks' scripted planners.
//!
//! - Every task has a case that can be done and a known-infeasible one; each runs `--runs`
//!   times from a fresh reset (a new session — a new browser context — and the apps' records
//!   cleared). Every attempt is kept: none leaves the denominator.
//! - The runtime decides each run's status from its own checks (`verify`); the harness judges
//!   the attempt from the apps' records (`check`: what was submitted, requested, downloaded),
//!   which neither the runtime nor the planner sees. The runtime saying `succeeded` where that
//!   check fails is a *false success*: the command exits 1.
//! - A failure before the first run starts (the app does not load, the browser does not start)
//!   or the browser backend going away is an *environment* failure, kept apart from the task's.
//! - A case may span turns (`phases`): a popup the first run opened is linked by the person
//!   (`Runtime::link_tab`) for the next turn's run; a browser killed between turns is
//!   relaunched and the app opened again.
//! - Desktop tasks run on an X display of the eval's own (`desktop::Stack`) with a second runtime
//!   on the X11 adapter: each attempt starts the task's GTK app, the person offers its window and
//!   the session claims it; the app reports to the same loopback server, so the judge is the
//!   same.

mod apps;
mod report;
mod tasks;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::runtime::{ApprovalDecision, LogQuery, RunRequest, Runtime, ScriptedPlanner};
use anyhow::Context;
use protocol::{ReasonCode, RunResult};
use serde_json::Value;

use crate::cli::{EvalArgs, Global};
use apps::Apps;
use report::{Attempt, Report, Times};
use tasks::{Case, Expect, SurfaceKind, TaskSet, TaskSpec};

/// `glovebox eval`.
pub async fn eval(global: &Global, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    if let Some(pair) = &args.compare {
        let read = |p: &std::path::Path| -> anyhow::Result<Report> {
            let text = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            serde_json::from_slice(&text)
                .with_context(|| format!("{} is not a glovebox eval report", p.display()))
        };
        let (a, b) = (read(&pair[0])?, read(&pair[1])?);
        out!("{}", report::compare(&a, &b));
        return Ok(ExitCode::SUCCESS);
    }
    let set = match &args.set {
        Some(dir) => TaskSet::load(dir)?,
        None => TaskSet::builtin()?,
    };
    let picked = set.select(args.tasks.as_deref())?;
    let price = args
        .price
        .as_deref()
        .map(|p| -> anyhow::Result<(f64, f64)> {
            let (i, o) = p
                .split_once(',')
                .context("--price IN,OUT (USD per million tokens)")?;
            Ok((i.trim().parse()?, o.trim().parse()?))
        })
        .transpose()
        .context("--price IN,OUT (USD per million tokens, e.g. 3,15)")?;
    let settings = crate::config::resolve(global, None)?;
    let model = match &args.model.provider {
        Some(_) => Some(crate::task::choice(
            &args.model,
            settings.serve.mcp.model.clone(),
        )?),
        None => None,
    };
    // A provider that cannot start is said before anything runs.
    if let Some(choice) = &model {
        agent::ModelPlanner::for_choice(choice, Arc::default())
            .map_err(|e| anyhow::anyhow!("backend_unavailable: {e}"))?;
    }
    let apps = Apps::serve(&set).await?;
    // The eval's own data directory: nothing of the user's profile, store or artifacts is used.
    let work = std::env::temp_dir().join(format!(
        "glovebox-eval-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    ));
    std::fs::create_dir_all(work.join("uploads"))?;
    for (path, bytes) in &set.files {
        if let Some(name) = path.strip_prefix("files/") {
            std::fs::write(work.join("uploads").join(name), bytes)?;
        }
    }
    std::fs::create_dir_all(work.join("apps"))?;
    for (path, bytes) in &set.files {
        if let Some(name) = path.strip_prefix("apps/").filter(|n| n.ends_with(".py")) {
            std::fs::write(work.join("apps").join(name), bytes)?;
        }
    }
    let mut config = settings.runtime.clone();
    let desktop_config = {
        let mut c = config.clone();
        c.data_dir = work.join("desktop-data");
        c
    };
    config.data_dir = work.join("data");
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(apps.origin()).map_err(|e| anyhow::anyhow!("{e}"))?);
    config.uploads_dir = Some(work.join("uploads"));
    config.relaunch_dead_browser = true;
    let browser = match settings.browser.clone() {
        browser::BrowserSource::Launch(mut launch) => {
            launch.data_dir = work.join("browser");
            browser::BrowserSource::Launch(launch)
        }
        other => other,
    };
    let rt = Runtime::start(config, browser::Chromium::new(browser))
        .await
        .context("cannot start the runtime (try `glovebox doctor`)")?;
    let answer = match args.answer.as_str() {
        "task" => ApprovalDecision::ApproveForTask,
        "deny" => ApprovalDecision::Deny,
        _ => ApprovalDecision::ApproveOnce,
    };
    let person = crate::terminal::person_on_terminal(&rt, Some(answer), true);
    // The desktop tasks' X display (Xvfb, a session bus with accessibility, openbox) and a
    // runtime on it; one that cannot start makes those tasks' attempts environment failures.
    let desktop = if picked.iter().any(|t| t.surface == SurfaceKind::Desktop) {
        Some(Desktop::start(desktop_config.clone(), answer, &work).await)
    } else {
        None
    };
    // The VM tasks' guest (booted under QEMU) and a runtime on it; likewise.
    let guests = if picked.iter().any(|t| t.surface == SurfaceKind::Vm) {
        let mut config = desktop_config;
        config.data_dir = work.join("vm-data");
        Some(Guests::start(config, answer, &work, &settings.runtime.data_dir).await)
    } else {
        None
    };
    let started = Instant::now();
    let total = picked.len() * 2 * args.runs as usize;
    let mut progress = Progress::new(total);
    let mut attempts = Vec::new();
    for task in &picked {
        for (case_name, case, expect) in [
            ("feasible", &task.feasible, Expect::Succeeded),
            ("infeasible", &task.infeasible, Expect::Infeasible),
        ] {
            for run in 1..=args.runs {
                progress.show(&format!("{} ({case_name}) #{run}", task.id));
                let on = match (task.surface, &desktop, &guests) {
                    (SurfaceKind::Desktop, Some(Ok(d)), _) => On::Desktop(d),
                    (SurfaceKind::Desktop, Some(Err(why)), _) => On::Unavailable("desktop", why),
                    (SurfaceKind::Vm, _, Some(Ok(g))) => On::Vm(g),
                    (SurfaceKind::Vm, _, Some(Err(why))) => On::Unavailable("VM guest", why),
                    _ => On::Browser(&rt),
                };
                let mut attempt = attempt(on, &apps, task, case, expect, model.as_ref()).await;
                attempt.case = case_name.into();
                attempt.run = run;
                if let Some((input, output)) = price {
                    attempt.cost_usd = Some(
                        (attempt.input_tokens as f64 * input
                            + attempt.output_tokens as f64 * output)
                            / 1e6,
                    );
                }
                attempts.push(attempt);
                progress.step();
            }
        }
    }
    progress.finish();
    person.abort();
    if let Some(Ok(d)) = desktop {
        d.stop().await;
    }
    if let Some(Ok(g)) = guests {
        g.stop().await;
    }
    rt.shutdown(Duration::from_secs(5)).await;
    if args.keep {
        eprintln!("the eval's data directory: {}", work.join("data").display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    let planner = match &model {
        Some(choice) => report::PlannerInfo {
            kind: "model".into(),
            provider: Some(format!("{:?}", choice.provider).to_lowercase()),
            model: Some(choice.model.clone()),
        },
        None => report::PlannerInfo {
            kind: "scripted".into(),
            provider: None,
            model: None,
        },
    };
    let report = Report::build(
        &set.version,
        planner,
        args.runs,
        &args.answer,
        attempts,
        started.elapsed(),
        price.is_some(),
    );
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::html(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    out!("{}", report::text(&report));
    Ok(if report.overall.false_successes > 0 {
        ExitCode::from(1)
    } else if report.overall.environment_failures > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// One attempt of one case, from a fresh reset to the harness's judgement.
async fn attempt(
    on: On<'_>,
    apps: &Apps,
    task: &TaskSpec,
    case: &Case,
    expect: Expect,
    model: Option<&agent::ModelChoice>,
) -> Attempt {
    apps.reset();
    let started = Instant::now();
    let mut attempt = Attempt::new(task, expect);
    let rt = match on {
        On::Browser(rt) => rt,
        On::Desktop(d) => &d.rt,
        On::Vm(g) => &g.rt,
        On::Unavailable(what, why) => {
            attempt.environment(format!("no {what}: {why:#}"));
            return attempt;
        }
    };
    // A desktop task's application, stopped with the attempt.
    let mut app: Option<AppProcess> = None;
    let accounting = Arc::new(Mutex::new(agent::Accounting::default()));
    let session = match rt.create_session().await {
        Ok(s) => s,
        Err(e) => {
            attempt.environment(format!("no session: {e}"));
            return attempt;
        }
    };
    let url = apps.url(&task.app, &case.query);
    let text = case.task.clone().unwrap_or_else(|| task.task.clone());
    let ending = async {
        match on {
            On::Desktop(d) => {
                d.open(&session, task, case, apps, &mut app)
                    .await
                    .map_err(|e| {
                        Ending::Environment(format!("the app did not open: {}", crate::reason(&e)))
                    })?;
            }
            On::Vm(g) => {
                g.open(&session, task, case).await.map_err(|e| {
                    Ending::Environment(format!(
                        "the guest's app did not open: {}",
                        crate::reason(&e)
                    ))
                })?;
            }
            _ => {
                if let Err(e) = rt.open_tab(&session, &url, Duration::from_secs(30)).await {
                    return Err(Ending::Environment(format!("the app did not open: {e}")));
                }
            }
        }
        let mut summaries: Vec<String> = Vec::new();
        let last = case.phases.len() - 1;
        let mut result = None;
        for (i, phase) in case.phases.iter().enumerate() {
            let asked = phase.task.clone().unwrap_or_else(|| text.clone());
            let mut request = RunRequest::new(if summaries.is_empty() {
                asked
            } else {
                format!(
                    "{asked}\n\nEarlier turns of this conversation ended: {}",
                    summaries.join(" / ")
                )
            });
            request.max_steps = task.budget.max_steps;
            request.max_seconds = task.budget.max_seconds;
            request.assertions = phase.verify.clone();
            if let Some(name) = &phase.surface {
                request.surface =
                    Some(protocol::SurfaceName::new(name).map_err(|e| {
                        Ending::Failed(format!("turn {}: surface {name}: {e}", i + 1))
                    })?);
            }
            let planner: Box<dyn ::runtime::Planner> = match model {
                Some(choice) => match agent::ModelPlanner::for_choice(choice, accounting.clone()) {
                    Ok(p) => Box::new(p),
                    Err(e) => return Err(Ending::Environment(format!("the model: {e}"))),
                },
                None => Box::new(ScriptedPlanner::new(
                    phase.script.iter().map(tasks::Step::scripted),
                )),
            };
            let ran = match rt.run(&session, request, planner).await {
                Ok(r) => r,
                Err(e) if e.code() == protocol::ErrorCode::BackendUnavailable => {
                    return Err(Ending::Environment(format!("turn {}: {e}", i + 1)));
                }
                Err(e) => {
                    return Err(Ending::Refused(
                        e.code().as_str().to_owned(),
                        format!("turn {}: {e}", i + 1),
                    ));
                }
            };
            summaries.push(ran.summary().to_owned());
            if i < last {
                let want = phase.expect.as_deref().unwrap_or("verified");
                if reason_name(ran.reason_code()) != want {
                    return Ok(ran);
                }
                person_between_turns(rt, &session, phase.then.as_deref(), &url)
                    .await
                    .map_err(|e| Ending::Environment(crate::reason(&e)))?;
            }
            result = Some(ran);
        }
        result.ok_or_else(|| Ending::Failed("no turn ran".into()))
    }
    .await;
    // What the log kept of the session's runs: time, actions, approvals.
    let log = rt
        .log(&LogQuery {
            session: Some(session.as_str().to_owned()),
            run: None,
            limit: 0,
        })
        .unwrap_or_default();
    attempt.absorb_log(&log);
    {
        let a = accounting.lock().unwrap_or_else(|p| p.into_inner());
        attempt.model_requests = a.model_requests;
        attempt.input_tokens = a.input_tokens;
        attempt.output_tokens = a.output_tokens;
        attempt.image_tokens = a.image_tokens;
        attempt.tool_calls = a.tool_calls;
    }
    match ending {
        Err(Ending::Environment(why)) => attempt.environment(why),
        Err(Ending::Refused(code, why)) => {
            let mut failures = apps.judge(&case.check, &[]);
            if let On::Vm(g) = on {
                failures.extend(g.judge(&case.check).await);
            }
            attempt.judge_refused(&code, why, failures);
        }
        Err(Ending::Failed(why)) => attempt.fail("other", why),
        Ok(result) => {
            let downloads = downloads(rt, &result);
            let mut failures = apps.judge(&case.check, &downloads);
            if let On::Vm(g) = on {
                failures.extend(g.judge(&case.check).await);
            }
            attempt.judge(&result, expect, failures);
        }
    }
    attempt.submissions = apps.submissions().len() as u64;
    let restarts = case
        .phases
        .iter()
        .filter(|p| p.then.as_deref() == Some("restart_browser"))
        .count() as u64;
    attempt.faults = attempt.failed_actions + apps.refusals() + restarts.min(attempt.runs);
    let _ = rt.close_session(&session).await;
    drop(app);
    attempt.wall_ms = started.elapsed().as_millis() as u64;
    attempt
}

/// Where an attempt runs.
#[derive(Clone, Copy)]
enum On<'a> {
    Browser(&'a Runtime),
    Desktop(&'a Desktop),
    Vm(&'a Guests),
    /// The desktop or the guest (named) could not start (why).
    Unavailable(&'static str, &'a anyhow::Error),
}

/// The VM tasks' guest (one QEMU guest, booted once for the eval) and the runtime on it. Each
/// attempt starts from a reset guest: the apps of the attempt before are ended and the eval's
/// directory in the guest (`/root/eval`) is emptied.
struct Guests {
    guest: ::vm::qemu::Guest,
    rt: Runtime,
    person: tokio::task::JoinHandle<()>,
    /// Apps started in the guest by earlier attempts (their pids).
    launched: Mutex<Vec<u32>>,
}

impl Guests {
    async fn start(
        config: ::runtime::RuntimeConfig,
        answer: ApprovalDecision,
        work: &std::path::Path,
        data_dir: &std::path::Path,
    ) -> anyhow::Result<Guests> {
        let binary = ::vm::qemu::guest_binary()?;
        let cache = crate::vm::image_dir(data_dir);
        let image =
            tokio::task::spawn_blocking(move || ::vm::qemu::build_image(&cache, &binary)).await??;
        let mut guest = ::vm::qemu::Guest::boot(
            &image,
            &::vm::qemu::BootOptions {
                name: "eval".into(),
                dir: work.join("vm"),
                memory_mb: 384,
                screen: [1024, 768],
                token: Some(::vm::Token::generate()),
                port: None,
            },
            false,
        )?;
        guest.wait_ready(Duration::from_secs(180)).await?;
        let adapter = Arc::new(::vm::VmAdapter::new(vec![::vm::GuestConfig {
            name: "eval".into(),
            endpoint: guest.endpoint(),
            token: guest.token.clone(),
        }]));
        let rt = Runtime::start(config, adapter)
            .await
            .context("the runtime did not start on the VM adapter")?;
        let person = crate::terminal::person_on_terminal(&rt, Some(answer), true);
        Ok(Guests {
            guest,
            rt,
            person,
            launched: Mutex::new(Vec::new()),
        })
    }

    /// Resets the guest, starts the task's app there, waits for its window, and has the person
    /// offer the guest's screen and the session claim it.
    async fn open(
        &self,
        session: &protocol::SessionId,
        task: &TaskSpec,
        case: &Case,
    ) -> anyhow::Result<()> {
        let client = self.guest.client();
        let earlier: Vec<u32> =
            std::mem::take(&mut *self.launched.lock().unwrap_or_else(|p| p.into_inner()));
        let kill = earlier
            .iter()
            .map(|p| format!("kill {p} 2>/dev/null;"))
            .collect::<String>();
        let reset = client
            .execute(
                &format!("{kill} rm -rf /root/eval && mkdir -p /root/eval"),
                Duration::from_secs(20),
            )
            .await?;
        anyhow::ensure!(
            reset.returncode == 0,
            "the guest's reset failed: {}",
            reset.error
        );
        let args: Vec<String> = task
            .app
            .split_whitespace()
            .chain(case.query.split_whitespace())
            .map(str::to_owned)
            .collect();
        let pid = client.launch(&args).await?;
        self.launched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pid);
        let title = task.window.as_deref().unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let state = client.state().await?;
            if state.windows.iter().any(|w| w.name.starts_with(title)) {
                break;
            }
            if Instant::now() > deadline {
                anyhow::bail!("no window {title:?} in the guest within 20 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let tab = self.rt.offer_surface("vm:eval").await?;
        self.rt.claim_tab(session, &tab).await?;
        Ok(())
    }

    /// The checks on the guest's own files, read through its OSWorld endpoint.
    async fn judge(&self, checks: &[tasks::Check]) -> Vec<String> {
        let client = self.guest.client();
        let mut failed = Vec::new();
        for check in checks {
            let (path, want) = match check {
                tasks::Check::GuestFile { path, text } => (path, Some(text)),
                tasks::Check::NoGuestFile { path } => (path, None),
                _ => continue,
            };
            let read = client
                .execute(
                    &format!("cat '{}' 2>/dev/null || true", path.replace('\'', "")),
                    Duration::from_secs(20),
                )
                .await;
            let held = match read {
                Ok(a) => a.output,
                Err(e) => {
                    failed.push(format!("the guest's {path} could not be read: {e}"));
                    continue;
                }
            };
            match want {
                Some(text) if held.trim_end_matches('\n') != text => failed.push(format!(
                    "the guest's {path} holds {:?}, not {text:?}",
                    protocol::text::truncate_chars(&held, 200).0
                )),
                None if !held.is_empty() => failed.push(format!(
                    "the guest's {path} must not be written (it holds {:?})",
                    protocol::text::truncate_chars(&held, 200).0
                )),
                _ => {}
            }
        }
        failed
    }

    async fn stop(self) {
        self.person.abort();
        self.rt.shutdown(Duration::from_secs(5)).await;
        drop(self.guest);
    }
}

/// The desktop tasks' display and the runtime on it.
struct Desktop {
    stack: desktop::Stack,
    rt: Runtime,
    person: tokio::task::JoinHandle<()>,
    apps_dir: std::path::PathBuf,
}

impl Desktop {
    async fn start(
        config: ::runtime::RuntimeConfig,
        answer: ApprovalDecision,
        work: &std::path::Path,
    ) -> anyhow::Result<Desktop> {
        let stack =
            tokio::task::spawn_blocking(
                || desktop::Stack::start(&desktop::StackOptions::default()),
            )
            .await??;
        let adapter = Arc::new(desktop::DesktopAdapter::new(desktop::DesktopConfig {
            display: stack.display.clone(),
            session_bus: Some(stack.session_bus.clone()),
            foreground_input: true,
        }));
        let rt = Runtime::start(config, adapter)
            .await
            .context("the runtime did not start on the desktop")?;
        let person = crate::terminal::person_on_terminal(&rt, Some(answer), true);
        Ok(Desktop {
            stack,
            rt,
            person,
            apps_dir: work.join("apps"),
        })
    }

    /// Starts the task's application, waits for its window, and has the person offer it and
    /// the session claim it (then waits for its accessibility tree).
    async fn open(
        &self,
        session: &protocol::SessionId,
        task: &TaskSpec,
        case: &Case,
        apps: &Apps,
        app: &mut Option<AppProcess>,
    ) -> anyhow::Result<()> {
        let mut command = self.stack.command("/usr/bin/python3");
        command
            .arg(self.apps_dir.join(&task.app))
            .args(case.query.split_whitespace())
            .env("GLOVEBOX_EVAL_SUBMIT", format!("{}/submit", apps.origin()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", task.app))?;
        *app = Some(AppProcess(child));
        let title = task.window.as_deref().unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(20);
        let surface = loop {
            let surfaces = self.rt.surfaces_for_person().await?;
            if let Some(s) = surfaces.iter().find(|s| s["title"] == title) {
                break s["surface"].as_str().unwrap_or_default().to_owned();
            }
            if Instant::now() > deadline {
                anyhow::bail!("no window {title:?} within 20 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let tab = self.rt.offer_surface(&surface).await?;
        self.rt.claim_tab(session, &tab).await?;
        // The window's tree comes a moment after the window.
        while Instant::now() < deadline {
            if let Ok(o) = self.rt.observe(session, None, &Default::default()).await
                && o.aria_snapshot().lines().count() >= 3
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        anyhow::bail!("the window {title:?} showed no accessibility tree within 20 s")
    }

    async fn stop(self) {
        self.person.abort();
        self.rt.shutdown(Duration::from_secs(5)).await;
        drop(self.stack);
    }
}

/// A desktop task's application: its process group ends when this is dropped.
struct AppProcess(std::process::Child);

impl Drop for AppProcess {
    fn drop(&mut self) {
        let group = self.0.id() as libc::pid_t;
        // SAFETY: kill(2) on the process group this eval started (`Stack::command` puts each
        // program in a group of its own); no memory is involved.
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// How an attempt ended before the harness could judge a run's result.
enum Ending {
    Environment(String),
    /// A run the runtime refused to start (its code), e.g. a popup nobody linked.
    Refused(String, String),
    Failed(String),
}

fn reason_name(reason: ReasonCode) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The bytes of every download the run kept.
fn downloads(rt: &Runtime, result: &RunResult) -> Vec<Vec<u8>> {
    result
        .artifacts()
        .iter()
        .filter(|a| a.kind == protocol::ArtifactKind::Download)
        .filter_map(|a| rt.artifacts().read_by_id(&a.artifact_id).ok())
        .map(|(bytes, _)| bytes)
        .collect()
}

/// What the person does between two turns, and the turn's end.
async fn person_between_turns(
    rt: &Runtime,
    session: &protocol::SessionId,
    then: Option<&str>,
    url: &str,
) -> anyhow::Result<()> {
    match then {
        Some("link_popup") => {
            let status = rt.status(session)?;
            let popup = status
                .tabs
                .iter()
                .rev()
                .find(|t| t.opened_by.is_some())
                .context("the turn ended new_surface_created but no popup is open")?;
            rt.link_tab(&popup.resource).await?;
            rt.end_current_turn(session).await?;
        }
        Some("restart_browser") => {
            let before = rt.browser_pid().context("no browser process to restart")?;
            // SAFETY: kill(2) with a pid the runtime reported for its own child; no memory is
            // touched.
            unsafe {
                libc::kill(before as i32, libc::SIGKILL);
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            while rt.browser_pid().is_none_or(|p| p == before) {
                if Instant::now() > deadline {
                    anyhow::bail!("the browser was not relaunched within 60 s");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            rt.end_current_turn(session).await?;
            rt.open_tab(session, url, Duration::from_secs(30))
                .await
                .context("the app did not open after the restart")?;
        }
        _ => {
            rt.end_current_turn(session).await?;
        }
    }
    Ok(())
}

/// A progress line on stderr when it is a terminal.
struct Progress {
    total: usize,
    done: usize,
    tty: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        Progress {
            total,
            done: 0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn show(&self, what: &str) {
        if self.tty {
            let width = 30;
            let filled = width * self.done / self.total.max(1);
            eprint!(
                "\r\x1b[2K[{}{}] {}/{} {what}",
                "#".repeat(filled),
                " ".repeat(width - filled),
                self.done,
                self.total
            );
        }
    }

    fn step(&mut self) {
        self.done += 1;
    }

    fn finish(&self) {
        if self.tty {
            eprintln!("\r\x1b[2K{} attempts done", self.done);
        }
    }
}

/// The time a log's `run_ended` entries give, summed over the session's runs.
fn times_of(log: &[Value]) -> Times {
    let mut t = Times::default();
    for entry in log.iter().filter(|e| e["kind"] == "run_ended") {
        let time = &entry["accounting"]["time"];
        let ms = |k: &str| time[k].as_u64().unwrap_or(0);
        t.model_ms += ms("model_ms");
        t.capture_ms += ms("capture_ms");
        t.input_ms += ms("input_ms");
        t.page_wait_ms += ms("page_wait_ms");
        t.approval_ms += ms("approval_ms");
        t.person_ms += ms("person_ms");
        t.runtime_ms += ms("runtime_ms");
    }
    t
}
