//! `bench store`, `bench runtime`, `bench restore`: what the runtime itself costs.

use super::*;

pub(super) fn bench_store(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    let path = browser::data_dir(global)
        .join("bench")
        .join(format!("store-{}.sqlite", std::process::id()));
    let mut samples = store::bench::bench_ownership_changes(&path, 2000)?;
    let _ = std::fs::remove_file(&path);
    let ops_path = path.with_extension("ops.sqlite");
    let (mut receipts, bytes_per_1000) = store::bench::bench_operations(&ops_path, 2000)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = ops_path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    ratios.push((
        "operation log: KiB per 1,000 actions".to_owned(),
        bytes_per_1000 as f64 / 1024.0,
    ));
    let reconcile_path = path.with_extension("reconcile.sqlite");
    let mut reconcile = store::bench::bench_reconcile(&reconcile_path, 20)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = reconcile_path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    let mut results = vec![
        (
            "store: ownership change (claim or release), fsynced".to_owned(),
            Stats::of(&mut samples),
        ),
        (
            "store: one action's record (attempted, then ended), fsynced".to_owned(),
            Stats::of(&mut receipts),
        ),
        (
            "restart: reconcile 100 tab records + 25 approvals of a dead instance".to_owned(),
            Stats::of(&mut reconcile),
        ),
    ];
    // With `--store postgres://…`: the same writes on the shared database, side by side.
    if let Some(url) = crate::config::resolve(global, None)?.runtime.store_url {
        let pg = store::PgStore::connect(&url.0)?;
        let mut changes = store::bench::ownership_changes(&pg, 2000)?;
        let mut records = store::bench::operation_records(&pg, 2000)?;
        let (pg_change, pg_record) = (Stats::of(&mut changes), Stats::of(&mut records));
        ratios.push((
            "PostgreSQL / SQLite: ownership change, median".to_owned(),
            pg_change.median.as_secs_f64()
                / results[0].1.median.as_secs_f64().max(f64::MIN_POSITIVE),
        ));
        ratios.push((
            "PostgreSQL / SQLite: one action's record, median".to_owned(),
            pg_record.median.as_secs_f64()
                / results[1].1.median.as_secs_f64().max(f64::MIN_POSITIVE),
        ));
        results.push((
            "store on PostgreSQL: ownership change (claim or release), committed".to_owned(),
            pg_change,
        ));
        results.push((
            "store on PostgreSQL: one action's record (attempted, then ended), committed"
                .to_owned(),
            pg_record,
        ));
    }
    Ok(results)
}

pub(super) async fn bench_runtime(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{RunRequest, Runtime, Scripted, ScriptedPlanner};
    let pages = crate::pages::LoopbackPages::serve(
        [("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into(),
    )
    .await?;
    let (settings, config) = super::trusting(global, &pages)?;
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    let mut results = Vec::new();

    // Stop → no further side effect: from the cancel request to the run's end.
    rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO)
        .await?;
    let mut stops = Vec::new();
    let mut events = rt.subscribe_events();
    for _ in 0..30 {
        let steps = vec![
            Scripted::Think(Duration::from_secs(30)),
            Scripted::Click("Add one".into()),
        ];
        let (handle, join) = rt.start_run(
            &session,
            RunRequest::new("stop me"),
            Box::new(ScriptedPlanner::new(steps)),
        )?;
        loop {
            let event = events.recv().await?;
            if event.run_id == handle.run_id.as_str()
                && matches!(event.kind, ::runtime::EventKind::Observed { .. })
            {
                break;
            }
        }
        let started = Instant::now();
        handle.cancel();
        join.await?;
        stops.push(started.elapsed());
    }
    results.push((
        "stop request → run ended, no side effect".to_owned(),
        Stats::of(&mut stops),
    ));

    // Per-step overhead: 20 waits through the runner vs the same observe+act directly.
    let step_script = || {
        (0..20)
            .map(|_| Scripted::Wait(0))
            .chain([Scripted::GiveUp("done".into())])
            .collect::<Vec<_>>()
    };
    let mut through_runtime = Vec::new();
    let mut direct = Vec::new();
    let tab_session = rt.create_session().await?;
    rt.open_tab(&tab_session, &pages.url("/act"), std::time::Duration::ZERO)
        .await?;
    for _ in 0..8 {
        let started = Instant::now();
        rt.run(
            &tab_session,
            RunRequest::new("wait"),
            Box::new(ScriptedPlanner::new(step_script())),
        )
        .await?;
        through_runtime.push(started.elapsed() / 21);
        let started = Instant::now();
        for _ in 0..21 {
            let o = rt.observe(&tab_session, None, &Default::default()).await?;
            if direct.len() < usize::MAX {
                let wait = protocol::validate_action(
                    &json!({"type": "wait", "expected_frame_id": o.frame_id().as_str(), "duration_ms": 0, "intent": "w"}),
                )?;
                rt.act(
                    &tab_session,
                    None,
                    &wait.into(),
                    &Default::default(),
                    std::time::Duration::ZERO,
                )
                .await?;
            }
        }
        direct.push(started.elapsed() / 21);
    }
    let runner = Stats::of(&mut through_runtime);
    let plain = Stats::of(&mut direct);
    ratios.push((
        "runner overhead per step vs observe+act (ms, medians)".to_owned(),
        ms(runner.median) - ms(plain.median),
    ));
    results.push((
        "runner step (observe, plan, policy, act)".to_owned(),
        runner,
    ));
    results.push(("observe + act through the runtime API".to_owned(), plain));

    // 8 tabs × the same 20-step task: in parallel vs one after another.
    let parallel_session = rt.create_session().await?;
    for _ in 0..8 {
        rt.open_tab(
            &parallel_session,
            &pages.url("/act"),
            std::time::Duration::ZERO,
        )
        .await?;
    }
    let task = || {
        let mut steps: Vec<Scripted> = (0..19).map(|_| Scripted::Click("Add one".into())).collect();
        steps.push(Scripted::Done("counted".into()));
        steps
    };
    let request = |i: usize| {
        let mut r = RunRequest::new("count");
        r.surface = Some(protocol::SurfaceName::new(format!("s{}", i + 1)).expect("a valid key"));
        r.assertions = vec![::runtime::Assertion::TextPresent {
            text: "clicks".into(),
        }];
        r
    };
    let started = Instant::now();
    for i in 0..8 {
        rt.run(
            &parallel_session,
            request(i),
            Box::new(ScriptedPlanner::new(task())),
        )
        .await?;
    }
    let sequential = started.elapsed();
    let started = Instant::now();
    let mut joins = Vec::new();
    for i in 0..8 {
        let (_, join) = rt.start_run(
            &parallel_session,
            request(i),
            Box::new(ScriptedPlanner::new(task())),
        )?;
        joins.push(join);
    }
    for join in joins {
        let result = join.await?;
        anyhow::ensure!(
            result.status() == protocol::RunStatus::Succeeded,
            "a parallel run failed: {result:?}"
        );
    }
    let parallel = started.elapsed();
    ratios.push((
        "8 tabs × 20 steps: sequential s".to_owned(),
        sequential.as_secs_f64(),
    ));
    ratios.push((
        "8 tabs × 20 steps: parallel s".to_owned(),
        parallel.as_secs_f64(),
    ));
    ratios.push((
        "8 tabs × 20 steps: speed-up".to_owned(),
        sequential.as_secs_f64() / parallel.as_secs_f64(),
    ));

    // Turn-end cleanup with 10 agent tabs and 5 claimed user tabs.
    let mut turn_ends = Vec::new();
    for _ in 0..5 {
        let session = rt.create_session().await?;
        for _ in 0..10 {
            rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO)
                .await?;
        }
        for _ in 0..5 {
            let user = rt.register_user_tab(&pages.url("/act")).await?;
            rt.claim_tab(&session, &user).await?;
        }
        let started = Instant::now();
        let (_, report) = rt.end_current_turn(&session).await?;
        turn_ends.push(started.elapsed());
        anyhow::ensure!(
            report.ok && report.closed.len() == 10 && report.released.len() == 5,
            "turn end did not clean up: {report:?}"
        );
        rt.close_session(&session).await?;
    }
    results.push((
        "turn end: close 10 agent tabs, release 5 claims".to_owned(),
        Stats::of(&mut turn_ends),
    ));

    // What an idle detach costs the next operation: observe on an attached tab vs. observe that
    // must attach first (the tab kept by a mark, detached by the turn's end).
    let session = rt.create_session().await?;
    let surface = rt
        .open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO)
        .await?;
    let (mut attached, mut reattach) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        let turn = rt.current_turn(&session)?;
        rt.mark(&session, surface, ::runtime::Mark::Deliverable, &turn)
            .await?;
        rt.end_current_turn(&session).await?;
        let started = Instant::now();
        rt.observe(&session, None, &Default::default()).await?;
        reattach.push(started.elapsed());
        let started = Instant::now();
        rt.observe(&session, None, &Default::default()).await?;
        attached.push(started.elapsed());
    }
    results.push((
        "observe, debugger lease attached".to_owned(),
        Stats::of(&mut attached),
    ));
    results.push((
        "observe after a detach (attach + observe)".to_owned(),
        Stats::of(&mut reattach),
    ));

    // Browser death → the first structured error: kill the launched browser, then observe at
    // once; the time until the call fails with its code. Then reconnect for the next round.
    if rt.browser_pid().is_some() {
        let mut death = Vec::new();
        for _ in 0..10 {
            let session = rt.create_session().await?;
            rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO)
                .await?;
            rt.observe(&session, None, &Default::default()).await?;
            let pid = rt.browser_pid().unwrap_or_default();
            let started = Instant::now();
            std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()?;
            let failed = rt.observe(&session, None, &Default::default()).await;
            death.push(started.elapsed());
            if failed.is_ok() {
                anyhow::bail!("an observe after the browser died succeeded");
            }
            rt.reconnect().await?;
            let _ = rt.close_session(&session).await;
        }
        results.push((
            "browser killed → first structured error (observe)".to_owned(),
            Stats::of(&mut death),
        ));
    }

    // Issue 34: a session's start (its isolation context) on one browser against a pool of
    // three: the pool's scheduling overhead per session start.
    let mut single = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let s = rt.create_session().await?;
        single.push(started.elapsed());
        rt.close_session(&s).await?;
    }
    let pool = ::browser::Pool::new(
        (0..3)
            .map(|_| ::browser::Chromium::new(settings.browser.clone()))
            .collect(),
        ::browser::PoolLimits::default(),
    );
    let pooled_dir = settings.runtime.data_dir.join("bench-pool");
    let _ = std::fs::remove_dir_all(&pooled_dir);
    let pooled = Runtime::start(::runtime::RuntimeConfig::new(&pooled_dir), pool).await?;
    let mut spread = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let s = pooled.create_session().await?;
        spread.push(started.elapsed());
        pooled.close_session(&s).await?;
    }
    pooled.shutdown(Duration::from_secs(5)).await;
    let (one, three) = (Stats::of(&mut single), Stats::of(&mut spread));
    ratios.push((
        "session start: pool of three / one browser (medians)".to_owned(),
        three.median.as_secs_f64() / one.median.as_secs_f64().max(1e-9),
    ));
    results.push(("session start, one browser".to_owned(), one));
    results.push(("session start, a pool of three browsers".to_owned(), three));
    // An act on a frozen browser answers within its deadline and a grace (issue 35).
    let mut overruns = frozen_overrun(global, 12, Duration::from_secs(1)).await?;
    overruns.sort();
    ratios.push((
        "act on a frozen browser: p99 of act time minus its 1 s deadline (ms)".to_owned(),
        ms(overruns[((overruns.len() - 1) as f64 * 0.99).round() as usize]),
    ));
    results.push((
        "act on a frozen browser: act time past its 1 s deadline".to_owned(),
        Stats::of(&mut overruns),
    ));
    Ok(results)
}

/// Kept tabs after a browser death: ten deliverable tabs on a loopback page; the browser is
/// SIGKILLed and the runtime relaunches it and restores them (the same restore a restart runs).
/// Measures from the kill until all ten are open again with new handles, and the restore pass.
pub(super) async fn bench_restore(
    global: &Global,
    iterations: usize,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{Mark, Runtime};
    let pages = crate::pages::LoopbackPages::serve(
        [("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into(),
    )
    .await?;
    let mut settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config.data_dir = config
        .data_dir
        .join("bench")
        .join(format!("restore-{}", std::process::id()));
    if let ::browser::BrowserSource::Launch(launch) = &mut settings.browser {
        launch.data_dir = config.data_dir.clone();
    }
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&pages.url("/"))?);
    let data_dir = config.data_dir.clone();
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    let turn = rt.current_turn(&session)?;
    for i in 0..10 {
        let surface = rt
            .open_tab(
                &session,
                &pages.url(&format!("/act?n={i}")),
                std::time::Duration::ZERO,
            )
            .await?;
        rt.mark(&session, surface, Mark::Deliverable, &turn).await?;
    }
    let mut back = Vec::new();
    let mut pass = Vec::new();
    for _ in 0..iterations.max(1) {
        let killed_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let pid = rt.browser_pid().unwrap_or_default();
        let started = Instant::now();
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()?;
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let tabs = rt.tabs_for_person()?;
            let restored = tabs
                .iter()
                .filter(|t| {
                    t["state"] == "open"
                        && t["restored_at"].as_u64().is_some_and(|at| at >= killed_at)
                })
                .count();
            if restored == 10 {
                break;
            }
            if Instant::now() > deadline {
                anyhow::bail!("only {restored} of 10 kept tabs came back within 60 s");
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        back.push(started.elapsed());
        if let Some(report) = rt.last_restore() {
            pass.push(std::time::Duration::from_millis(report.took_ms));
        }
    }
    rt.shutdown(std::time::Duration::from_secs(5)).await;
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(vec![
        (
            "restore: browser killed → 10 kept tabs open again".to_owned(),
            Stats::of(&mut back),
        ),
        (
            "restore: the restore pass alone (10 tabs)".to_owned(),
            Stats::of(&mut pass),
        ),
    ])
}

/// The p95 act latency a person would see at which the sessions-per-instance figure is read.
const SESSIONS_P95_TARGET: Duration = Duration::from_millis(250);

/// Sessions per instance: N sessions at once on one runtime (one browser, or the pool of
/// `--browser-pool`), each in its own tab clicking with a fresh observation through the
/// runtime's one path (records, leases, policy, verification); the p95 of those acts at each N,
/// and the most sessions whose p95 stays within [`SESSIONS_P95_TARGET`].
pub(super) async fn bench_sessions(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{ActOptions, Runtime};
    let pages = crate::pages::LoopbackPages::serve(
        [("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into(),
    )
    .await?;
    let (settings, config) = super::trusting(global, &pages)?;
    let rt = Runtime::start(config, settings.adapter()).await?;
    let mut results = Vec::new();
    let mut within = 0;
    for n in [1_usize, 2, 4, 8, 16, 32] {
        let mut sessions = Vec::new();
        for _ in 0..n {
            let session = rt.create_session().await?;
            rt.open_tab(&session, &pages.url("/act"), Duration::ZERO)
                .await?;
            sessions.push(session);
        }
        let mut clicking = tokio::task::JoinSet::new();
        for session in sessions.clone() {
            let rt = rt.clone();
            clicking.spawn(async move {
                let mut samples = Vec::new();
                let mut observation = rt.observe(&session, None, &Default::default()).await?;
                for i in 0..43 {
                    let target = observation
                        .interactive_elements()
                        .iter()
                        .find(|e| e.name() == "Add one")
                        .map(|e| e.element().as_str().to_owned())
                        .ok_or_else(|| anyhow::anyhow!("no Add one on the benchmark page"))?;
                    let action = protocol::validate_action(&json!({
                        "type": "click", "expected_frame_id": observation.frame_id().as_str(),
                        "target": {"kind": "element", "ref": target}, "intent": "count"
                    }))?;
                    let started = Instant::now();
                    let outcome = rt
                        .act(
                            &session,
                            None,
                            &action.into(),
                            &ActOptions::default(),
                            Duration::ZERO,
                        )
                        .await?;
                    if i >= 3 {
                        samples.push(started.elapsed());
                    }
                    observation = outcome
                        .observation
                        .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
                }
                anyhow::Ok(samples)
            });
        }
        let mut samples = Vec::new();
        while let Some(done) = clicking.join_next().await {
            samples.extend(done??);
        }
        samples.sort();
        let p95 = samples
            .get(((samples.len() as f64 - 1.0) * 0.95).round() as usize)
            .copied()
            .unwrap_or_default();
        ratios.push((format!("{n} sessions at once: click p95 (ms)"), ms(p95)));
        if p95 <= SESSIONS_P95_TARGET {
            within = n;
        }
        results.push((
            format!("{n} sessions at once: click with a fresh observation, each"),
            Stats::of(&mut samples),
        ));
        for session in &sessions {
            rt.close_session(session).await?;
        }
    }
    ratios.push((
        format!(
            "sessions per instance with click p95 ≤ {} ms",
            SESSIONS_P95_TARGET.as_millis()
        ),
        within as f64,
    ));
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(results)
}

/// Issue 35's figure: how far past its deadline an act on a frozen browser (SIGSTOPped while
/// the act runs) answers — act time minus deadline, per act. Each round resumes the browser and
/// takes a fresh observation first (a new tab if the runtime had to give the old one up).
pub(super) async fn frozen_overrun(
    global: &Global,
    rounds: usize,
    deadline: Duration,
) -> anyhow::Result<Vec<Duration>> {
    use ::runtime::{ActOptions, Runtime};
    let pages = crate::pages::LoopbackPages::serve(
        [("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into(),
    )
    .await?;
    let (settings, mut config) = super::trusting(global, &pages)?;
    config.debugger_idle_detach = Duration::from_secs(3600);
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    rt.open_tab(&session, &pages.url("/act"), Duration::ZERO)
        .await?;
    let signal = |pid: u32, sig: i32| {
        // SAFETY: a signal to the browser this benchmark's runtime launched.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
    };
    let mut overruns = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let observation = match rt.observe(&session, None, &Default::default()).await {
            Ok(o) => o,
            Err(_) => {
                rt.open_tab(&session, &pages.url("/act"), Duration::ZERO)
                    .await?;
                rt.observe(&session, None, &Default::default()).await?
            }
        };
        let target = observation
            .interactive_elements()
            .iter()
            .find(|e| e.name() == "Add one")
            .map(|e| e.element().as_str().to_owned())
            .ok_or_else(|| anyhow::anyhow!("no Add one on the benchmark page"))?;
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": target}, "intent": "count"
        }))?;
        let options = ActOptions {
            deadline,
            ..Default::default()
        };
        let pid = rt.browser_pid().ok_or_else(|| {
            anyhow::anyhow!("no launched browser to freeze (not with --browser-endpoint)")
        })?;
        signal(pid, libc::SIGSTOP);
        let started = Instant::now();
        let _ = rt
            .act(&session, None, &action.into(), &options, Duration::ZERO)
            .await;
        let took = started.elapsed();
        signal(pid, libc::SIGCONT);
        overruns.push(took.saturating_sub(deadline));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(overruns)
}
