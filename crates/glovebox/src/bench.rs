//! `glovebox bench`: the project's own measurements, reported as medians and percentiles.
//!
//! Benchmarks never run as part of `make test`; `make bench` runs them all.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::browser;
use crate::cli::{BenchArgs, BenchTarget, Global};

/// Summary statistics of a set of durations.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub n: usize,
    pub median: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub min: Duration,
}

impl Stats {
    pub fn of(samples: &mut [Duration]) -> Stats {
        samples.sort();
        let at = |q: f64| {
            if samples.is_empty() {
                return Duration::ZERO;
            }
            let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples[index.min(samples.len() - 1)]
        };
        Stats { n: samples.len(), median: at(0.5), p90: at(0.9), p99: at(0.99), min: at(0.0) }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "n": self.n,
            "median_ms": ms(self.median),
            "p90_ms": ms(self.p90),
            "p99_ms": ms(self.p99),
            "min_ms": ms(self.min),
        })
    }

    fn line(&self, name: &str) -> String {
        let (unit, scale) = if self.median < Duration::from_millis(1) { ("µs", 1000.0) } else { ("ms", 1.0) };
        format!(
            "{name:<48} median {:>9.3} {unit}   p90 {:>9.3} {unit}   p99 {:>9.3} {unit}   (n={})",
            ms(self.median) * scale,
            ms(self.p90) * scale,
            ms(self.p99) * scale,
            self.n
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(global: &Global, args: BenchArgs) -> anyhow::Result<ExitCode> {
    let mut ratios = Vec::new();
    let results = match args.what {
        BenchTarget::Cdp => bench_cdp(global, args.iterations).await?,
        BenchTarget::Protocol => bench_protocol()?,
        BenchTarget::Observe => bench_observe(global, &mut ratios).await?,
        BenchTarget::Act => bench_act(global).await?,
        BenchTarget::Runtime => bench_runtime(global, &mut ratios).await?,
        BenchTarget::Store => bench_store(global, &mut ratios)?,
        BenchTarget::Restore => bench_restore(global, args.iterations).await?,
        BenchTarget::Host => bench_host(global, &mut ratios).await?,
        BenchTarget::Console => bench_console(global, &mut ratios).await?,
        BenchTarget::Agent => bench_agent(global, args.iterations, &mut ratios).await?,
    };
    if args.json {
        let mut object: serde_json::Map<String, serde_json::Value> = results.iter().map(|(k, s)| (k.clone(), s.json())).collect();
        for (name, value) in &ratios {
            object.insert(name.clone(), json!(value));
        }
        out!("{}", serde_json::Value::Object(object));
    } else {
        for (name, stats) in &results {
            out!("{}", stats.line(name));
        }
        for (name, value) in &ratios {
            out!("{name:<48} {value:.3}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn bench_cdp(global: &Global, iterations: usize) -> anyhow::Result<Vec<(String, Stats)>> {
    let mut results = Vec::new();

    // Cold start inside the process: launch, connect, open a tab, see it loaded.
    let mut cold = Vec::new();
    for _ in 0..iterations {
        let started = Instant::now();
        let handle = browser::open(global).await?;
        let tab = handle.chromium.scratch_page().await?;
        let state = tab.eval("document.readyState").await?;
        anyhow::ensure!(state == Some(json!("complete")), "about:blank did not load");
        cold.push(started.elapsed());
        drop(handle);
    }
    results.push(("cold start: launch → loaded about:blank".to_owned(), Stats::of(&mut cold)));

    // Cold start of the whole binary: `glovebox observe about:blank`, process start to exit.
    let exe = std::env::current_exe()?;
    let mut whole = Vec::new();
    for _ in 0..iterations {
        let mut command = tokio::process::Command::new(&exe);
        command.args(["observe", "about:blank"]).stdout(Stdio::null()).stderr(Stdio::inherit());
        if let Some(dir) = &global.data_dir {
            command.arg("--data-dir").arg(dir);
        }
        if let Some(chromium) = &global.chromium {
            command.arg("--chromium").arg(chromium);
        }
        if let Some(endpoint) = &global.browser_endpoint {
            command.arg("--browser-endpoint").arg(endpoint);
        }
        let started = Instant::now();
        let status = command.status().await?;
        anyhow::ensure!(status.success(), "`glovebox observe about:blank` failed: {status}");
        whole.push(started.elapsed());
    }
    results.push(("cold start: `glovebox observe about:blank`".to_owned(), Stats::of(&mut whole)));

    // Round trip of Runtime.evaluate("1+1") on an idle tab.
    let handle = browser::open(global).await?;
    let tab = handle.chromium.scratch_page().await?;
    for _ in 0..200 {
        tab.eval("1+1").await?;
    }
    let mut rtt = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let started = Instant::now();
        let reply = tab.eval("1+1").await?;
        rtt.push(started.elapsed());
        anyhow::ensure!(reply == Some(json!(2)), "1+1 evaluated to {reply:?}");
    }
    results.push(("Runtime.evaluate(\"1+1\") round trip".to_owned(), Stats::of(&mut rtt)));
    Ok(results)
}

fn bench_protocol() -> anyhow::Result<Vec<(String, Stats)>> {
    let action = json!({
        "type": "click",
        "expected_frame_id": "frame_0123456789abcdef",
        "target": { "kind": "element", "ref": "e12" },
        "intent": "Submit the sign-in form"
    });
    anyhow::ensure!(protocol::validate_action(&action).is_ok(), "the typical action must be valid");
    let mut per_call = Vec::new();
    for batch in 0..=50 {
        let started = Instant::now();
        for _ in 0..1000 {
            std::hint::black_box(protocol::validate_action(std::hint::black_box(&action)).is_ok());
        }
        // The first batch warms caches and the lazily compiled schema.
        if batch > 0 {
            per_call.push(started.elapsed() / 1000);
        }
    }
    Ok(vec![("validate_action(click) per call".to_owned(), Stats::of(&mut per_call))])
}

/// A realistic mid-size page: a shop's listing with navigation, filters and twelve products.
const STORE_PAGE: &str = include_str!("../../browser/tests/fixtures/store.html");

async fn bench_observe(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::ObserveOptions;
    let pages = crate::pages::LoopbackPages::serve(
        [
            ("/login".to_owned(), crate::pages::LOGIN_PAGE.to_owned()),
            ("/store".to_owned(), STORE_PAGE.to_owned()),
            ("/big".to_owned(), crate::pages::big_page()),
        ]
        .into(),
    )
    .await?;
    let handle = browser::open(global).await?;
    let mut results = Vec::new();
    for (path, n) in [("/login", 60usize), ("/store", 40), ("/big", 20)] {
        let tab = handle.chromium.open_tab().await?;
        tab.goto(&pages.url(path), Duration::from_secs(30)).await?;
        let options = ObserveOptions::default();
        let mut ours = Vec::new();
        let mut raw = Vec::new();
        let mut size = 0;
        for i in 0..n + 3 {
            // Alternate the two so drift on a noisy machine hits both alike.
            let started = Instant::now();
            let observation = tab.observe(&options).await?;
            let ours_took = started.elapsed();
            let started = Instant::now();
            tab.raw_capture_calls().await?;
            let raw_took = started.elapsed();
            if i >= 3 {
                ours.push(ours_took);
                raw.push(raw_took);
            }
            size = observation.aria_snapshot().len();
        }
        let ours = Stats::of(&mut ours);
        let raw = Stats::of(&mut raw);
        ratios.push((format!("observe {path}: ours / raw CDP (medians)"), ms(ours.median) / ms(raw.median)));
        ratios.push((format!("observe {path}: aria_snapshot bytes"), size as f64));
        results.push((format!("observe {path}"), ours));
        results.push((format!("raw CDP calls of observe {path}"), raw));
        // The same page through Chromium's AX tree, for comparison with the DOM model.
        let options = ObserveOptions { model: ::runtime::PageModel::Accessibility, ..ObserveOptions::default() };
        let mut times = Vec::new();
        for i in 0..(n / 2).max(8) {
            let started = Instant::now();
            tab.observe(&options).await?;
            if i >= 2 {
                times.push(started.elapsed());
            }
        }
        results.push((format!("observe {path} with the AX-tree model (comparison)"), Stats::of(&mut times)));
        if path == "/login" {
            let mut preview = Vec::new();
            for i in 0..n + 3 {
                let started = Instant::now();
                let p = tab.preview(Duration::from_secs(5)).await;
                anyhow::ensure!(p.preview_status() == protocol::PreviewStatus::Ready, "preview unavailable");
                if i >= 3 {
                    preview.push(started.elapsed());
                }
            }
            results.push(("preview /login".to_owned(), Stats::of(&mut preview)));
            // Screenshots: observe with one, whose password field is masked before it leaves,
            // and the masking alone (decode, paint, encode) on that 1280×720 capture.
            let visual = ObserveOptions { screenshot: Some(protocol::ImageMime::Png), ..ObserveOptions::default() };
            let (mut with_shot, mut masking) = (Vec::new(), Vec::new());
            for i in 0..(n / 2).max(8) + 2 {
                let started = Instant::now();
                let observation = tab.observe(&visual).await?;
                let took = started.elapsed();
                let shot = observation.screenshot().ok_or_else(|| anyhow::anyhow!("no screenshot"))?;
                let started = Instant::now();
                ::runtime::mask_screenshot(shot, &[(100.0, 100.0, 300.0, 40.0)])?;
                if i >= 2 {
                    with_shot.push(took);
                    masking.push(started.elapsed());
                }
            }
            results.push(("observe /login with a masked screenshot".to_owned(), Stats::of(&mut with_shot)));
            results.push(("screenshot masking per image (1280×720 PNG)".to_owned(), Stats::of(&mut masking)));
        }
        if path == "/store" {
            // A typical click (issue 16): what the model reads after it, the whole text against
            // the changes since the observation the click named (`act`'s default over MCP).
            let (mut whole, mut changes) = (Vec::new(), Vec::new());
            let mut o = tab.observe(&options).await?;
            for _ in 0..10 {
                let add = o.interactive_elements().iter().find(|e| e.name() == "Add to cart").ok_or_else(|| anyhow::anyhow!("no Add to cart"))?;
                let action = protocol::validate_action(&json!({
                    "type": "click", "expected_frame_id": o.frame_id().as_str(),
                    "target": {"kind": "element", "ref": add.element().as_str()}, "intent": "add"
                }))?;
                o = tab.act(&action.into(), &::runtime::ActOptions::default()).await?.observation.ok_or_else(|| anyhow::anyhow!("no observation"))?;
                anyhow::ensure!(o.snapshot_diff().is_some(), "a click on the same document has a diff");
                whole.push(::runtime::observation_text(&o).len() as f64);
                changes.push(::runtime::observation_text_or_changes(&o).len() as f64);
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (whole, changes) = (median(&mut whole), median(&mut changes));
            ratios.push(("click on /store: model text bytes, whole snapshot".to_owned(), whole));
            ratios.push(("click on /store: model text bytes, changes (act's default)".to_owned(), changes));
            ratios.push(("click on /store: changes / whole".to_owned(), changes / whole));
        }
    }
    Ok(results)
}

async fn bench_act(global: &Global) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{ActOptions, ObserveOptions};
    let pages = crate::pages::LoopbackPages::serve([("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into()).await?;
    let handle = browser::open(global).await?;
    let tab = handle.chromium.open_tab().await?;
    tab.goto(&pages.url("/act"), Duration::from_secs(30)).await?;
    let mut observation = tab.observe(&ObserveOptions::default()).await?;
    let find = |o: &protocol::Observation, name: &str| -> anyhow::Result<String> {
        o.interactive_elements()
            .iter()
            .find(|e| e.name() == name)
            .map(|e| e.element().as_str().to_owned())
            .ok_or_else(|| anyhow::anyhow!("no {name} on the benchmark page"))
    };
    let options = ActOptions::default();
    let mut clicks = Vec::new();
    for i in 0..43 {
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&observation, "Add one")?}, "intent": "count"
        }))?;
        let started = Instant::now();
        let outcome = tab.act(&action.into(), &options).await?;
        let took = started.elapsed();
        observation = outcome.observation.ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
        if i >= 3 {
            clicks.push(took);
        }
    }
    anyhow::ensure!(observation.aria_snapshot().contains("43 clicks"), "every click landed");
    let text: String = "The quick brown fox jumps over the lazy dog. 0123456789 ".repeat(2).chars().take(100).collect();
    let mut typing = Vec::new();
    for i in 0..43 {
        let action = protocol::validate_action(&json!({
            "type": "type", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&observation, "Notes")?}, "text": format!("{i:02}{}", &text[2..]), "intent": "note"
        }))?;
        let started = Instant::now();
        let outcome = tab.act(&action.into(), &options).await?;
        let took = started.elapsed();
        anyhow::ensure!(outcome.receipt.state() == protocol::ReceiptState::Confirmed, "typing was verified");
        observation = outcome.observation.ok_or_else(|| anyhow::anyhow!("no observation after typing"))?;
        if i >= 3 {
            typing.push(took);
        }
    }
    // The same click with the network boundary armed (the runtime always arms it): Fetch
    // interception during the action and its tail, every request of the page judged. Blocks of
    // each, twice; an unguarded block starts after the last tail ended (Fetch disabled).
    let guarded_options = ActOptions { allowed_origins: Some(vec![policy::Origin::parse(&pages.url("/"))?]), ..ActOptions::default() };
    let (mut plain, mut guarded) = (Vec::new(), Vec::new());
    for round in 0..4 {
        let is_guarded = round % 2 == 1;
        if !is_guarded {
            tokio::time::sleep(::browser::GUARD_TAIL + Duration::from_millis(500)).await;
        }
        for i in 0..23 {
            let action = protocol::validate_action(&json!({
                "type": "click", "expected_frame_id": observation.frame_id().as_str(),
                "target": {"kind": "element", "ref": find(&observation, "Add one")?}, "intent": "count"
            }))?;
            let started = Instant::now();
            let outcome = tab.act(&action.into(), if is_guarded { &guarded_options } else { &options }).await?;
            let took = started.elapsed();
            observation = outcome.observation.ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
            if i >= 3 {
                if is_guarded { guarded.push(took) } else { plain.push(took) }
            }
        }
    }
    let (plain, guarded) = (Stats::of(&mut plain), Stats::of(&mut guarded));
    // A busy page (issue 16): a 10 Hz clock, a CSS animation, a request polled every 250 ms and
    // a carousel; a click must not wait for quiet that never comes.
    let busy_pages = crate::pages::LoopbackPages::serve([("/busy".to_owned(), BUSY_PAGE.to_owned()), ("/poll".to_owned(), "ok".to_owned())].into()).await?;
    let busy = handle.chromium.open_tab().await?;
    busy.goto(&busy_pages.url("/busy"), Duration::from_secs(30)).await?;
    let mut o = busy.observe(&ObserveOptions::default()).await?;
    let mut busy_clicks = Vec::new();
    for i in 0..43 {
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": o.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&o, "Add one")?}, "intent": "count"
        }))?;
        let started = Instant::now();
        let outcome = match busy.act(&action.into(), &options).await {
            Ok(outcome) => outcome,
            // The page changed between the observation and the click (its clock): observe again.
            Err(::browser::BrowserError::Stale { .. }) => {
                o = busy.observe(&ObserveOptions::default()).await?;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let took = started.elapsed();
        o = match outcome.observation {
            Some(o) => o,
            None => busy.observe(&ObserveOptions::default()).await?,
        };
        if i >= 3 {
            busy_clicks.push(took);
        }
    }
    Ok(vec![
        ("click + settle + fresh observation".to_owned(), Stats::of(&mut clicks)),
        ("type 100 chars + verify + fresh observation".to_owned(), Stats::of(&mut typing)),
        ("click round trip, network boundary off".to_owned(), plain),
        ("click round trip, network boundary on".to_owned(), guarded),
        ("click round trip on a busy page (10 Hz clock, animation, polling)".to_owned(), Stats::of(&mut busy_clicks)),
    ])
}

fn bench_store(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    let path = browser::data_dir(global).join("bench").join(format!("store-{}.sqlite", std::process::id()));
    let mut samples = store::bench::bench_ownership_changes(&path, 2000)?;
    let _ = std::fs::remove_file(&path);
    let ops_path = path.with_extension("ops.sqlite");
    let (mut receipts, bytes_per_1000) = store::bench::bench_operations(&ops_path, 2000)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = ops_path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    ratios.push(("operation log: KiB per 1,000 actions".to_owned(), bytes_per_1000 as f64 / 1024.0));
    let reconcile_path = path.with_extension("reconcile.sqlite");
    let mut reconcile = store::bench::bench_reconcile(&reconcile_path, 20)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = reconcile_path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    Ok(vec![
        ("store: ownership change (claim or release), fsynced".to_owned(), Stats::of(&mut samples)),
        ("store: one action's record (attempted, then ended), fsynced".to_owned(), Stats::of(&mut receipts)),
        ("restart: reconcile 100 tab records + 25 approvals of a dead instance".to_owned(), Stats::of(&mut reconcile)),
    ])
}

async fn bench_runtime(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{RunRequest, Runtime, Scripted, ScriptedPlanner};
    let pages = crate::pages::LoopbackPages::serve([("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into()).await?;
    // The configured browser, viewport and lists (one resolution for every command).
    let settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config.trust.trusted_origins.push(policy::Origin::parse(&pages.url("/"))?);
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    let mut results = Vec::new();

    // Stop → no further side effect: from the cancel request to the run's end.
    rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO).await?;
    let mut stops = Vec::new();
    let mut events = rt.subscribe_events();
    for _ in 0..30 {
        let steps = vec![Scripted::Think(Duration::from_secs(30)), Scripted::Click("Add one".into())];
        let (handle, join) = rt.start_run(&session, RunRequest::new("stop me"), Box::new(ScriptedPlanner::new(steps)))?;
        loop {
            let event = events.recv().await?;
            if event.run_id == handle.run_id.as_str() && matches!(event.kind, ::runtime::EventKind::Observed { .. }) {
                break;
            }
        }
        let started = Instant::now();
        handle.cancel();
        join.await?;
        stops.push(started.elapsed());
    }
    results.push(("stop request → run ended, no side effect".to_owned(), Stats::of(&mut stops)));

    // Per-step overhead: 20 waits through the runner vs the same observe+act directly.
    let step_script = || (0..20).map(|_| Scripted::Wait(0)).chain([Scripted::GiveUp("done".into())]).collect::<Vec<_>>();
    let mut through_runtime = Vec::new();
    let mut direct = Vec::new();
    let tab_session = rt.create_session().await?;
    rt.open_tab(&tab_session, &pages.url("/act"), std::time::Duration::ZERO).await?;
    for _ in 0..8 {
        let started = Instant::now();
        rt.run(&tab_session, RunRequest::new("wait"), Box::new(ScriptedPlanner::new(step_script()))).await?;
        through_runtime.push(started.elapsed() / 21);
        let started = Instant::now();
        for _ in 0..21 {
            let o = rt.observe(&tab_session, None, &Default::default()).await?;
            if direct.len() < usize::MAX {
                let wait = protocol::validate_action(&json!({"type": "wait", "expected_frame_id": o.frame_id().as_str(), "duration_ms": 0, "intent": "w"}))?;
                rt.act(&tab_session, None, &wait.into(), &Default::default(), std::time::Duration::ZERO).await?;
            }
        }
        direct.push(started.elapsed() / 21);
    }
    let runner = Stats::of(&mut through_runtime);
    let plain = Stats::of(&mut direct);
    ratios.push(("runner overhead per step vs observe+act (ms, medians)".to_owned(), ms(runner.median) - ms(plain.median)));
    results.push(("runner step (observe, plan, policy, act)".to_owned(), runner));
    results.push(("observe + act through the runtime API".to_owned(), plain));

    // 8 tabs × the same 20-step task: in parallel vs one after another.
    let parallel_session = rt.create_session().await?;
    for _ in 0..8 {
        rt.open_tab(&parallel_session, &pages.url("/act"), std::time::Duration::ZERO).await?;
    }
    let task = || {
        let mut steps: Vec<Scripted> = (0..19).map(|_| Scripted::Click("Add one".into())).collect();
        steps.push(Scripted::Done("counted".into()));
        steps
    };
    let request = |i: usize| {
        let mut r = RunRequest::new("count");
        r.surface = Some(protocol::SurfaceName::new(format!("s{}", i + 1)).expect("a valid key"));
        r.assertions = vec![::runtime::Assertion::TextPresent { text: "clicks".into() }];
        r
    };
    let started = Instant::now();
    for i in 0..8 {
        rt.run(&parallel_session, request(i), Box::new(ScriptedPlanner::new(task()))).await?;
    }
    let sequential = started.elapsed();
    let started = Instant::now();
    let mut joins = Vec::new();
    for i in 0..8 {
        let (_, join) = rt.start_run(&parallel_session, request(i), Box::new(ScriptedPlanner::new(task())))?;
        joins.push(join);
    }
    for join in joins {
        let result = join.await?;
        anyhow::ensure!(result.status() == protocol::RunStatus::Succeeded, "a parallel run failed: {result:?}");
    }
    let parallel = started.elapsed();
    ratios.push(("8 tabs × 20 steps: sequential s".to_owned(), sequential.as_secs_f64()));
    ratios.push(("8 tabs × 20 steps: parallel s".to_owned(), parallel.as_secs_f64()));
    ratios.push(("8 tabs × 20 steps: speed-up".to_owned(), sequential.as_secs_f64() / parallel.as_secs_f64()));

    // Turn-end cleanup with 10 agent tabs and 5 claimed user tabs.
    let mut turn_ends = Vec::new();
    for round in 0..5 {
        let session = rt.create_session().await?;
        for _ in 0..10 {
            rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO).await?;
        }
        for _ in 0..5 {
            let user = rt.register_user_tab(&pages.url("/act")).await?;
            rt.claim_tab(&session, &user).await?;
        }
        let started = Instant::now();
        let report = rt.end_turn(&session, &format!("turn_{round}")).await?;
        turn_ends.push(started.elapsed());
        anyhow::ensure!(report.ok && report.closed.len() == 10 && report.released.len() == 5, "turn end did not clean up: {report:?}");
        rt.close_session(&session).await?;
    }
    results.push(("turn end: close 10 agent tabs, release 5 claims".to_owned(), Stats::of(&mut turn_ends)));

    // What an idle detach costs the next operation: observe on an attached tab vs. observe that
    // must attach first (the tab kept by a mark, detached by the turn's end).
    let session = rt.create_session().await?;
    let surface = rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO).await?;
    let (mut attached, mut reattach) = (Vec::new(), Vec::new());
    for round in 0..30 {
        let turn = format!("turn_{round}");
        rt.mark(&session, surface, ::runtime::Mark::Deliverable, &turn).await?;
        rt.end_turn(&session, &turn).await?;
        let started = Instant::now();
        rt.observe(&session, None, &Default::default()).await?;
        reattach.push(started.elapsed());
        let started = Instant::now();
        rt.observe(&session, None, &Default::default()).await?;
        attached.push(started.elapsed());
    }
    results.push(("observe, debugger lease attached".to_owned(), Stats::of(&mut attached)));
    results.push(("observe after a detach (attach + observe)".to_owned(), Stats::of(&mut reattach)));

    // Browser death → the first structured error: kill the launched browser, then observe at
    // once; the time until the call fails with its code. Then reconnect for the next round.
    if rt.browser_pid().is_some() {
        let mut death = Vec::new();
        for _ in 0..10 {
            let session = rt.create_session().await?;
            rt.open_tab(&session, &pages.url("/act"), std::time::Duration::ZERO).await?;
            rt.observe(&session, None, &Default::default()).await?;
            let pid = rt.browser_pid().unwrap_or_default();
            let started = Instant::now();
            std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
            let failed = rt.observe(&session, None, &Default::default()).await;
            death.push(started.elapsed());
            if failed.is_ok() {
                anyhow::bail!("an observe after the browser died succeeded");
            }
            rt.reconnect().await?;
            let _ = rt.close_session(&session).await;
        }
        results.push(("browser killed → first structured error (observe)".to_owned(), Stats::of(&mut death)));
    }
    Ok(results)
}

/// The resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm").ok().and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()));
    pages.unwrap_or(0) * 4096
}

/// The host API end to end: a renderer WebSocket on the server's own listener.
async fn bench_host(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let pages =
        crate::pages::LoopbackPages::serve([("/login".to_owned(), crate::pages::LOGIN_PAGE.to_owned()), ("/shop".to_owned(), STORE_PAGE.to_owned())].into())
            .await?;
    let settings = crate::config::resolve(global, None)?;
    let config = settings.runtime.clone();
    let rt = ::runtime::Runtime::start(config, settings.adapter()).await?;
    let options = server::HttpOptions { bind: "127.0.0.1:0".parse()?, ..server::HttpOptions::default() };
    let http = server::serve(rt.clone(), options).await?;
    let url = format!("ws://{}{}", http.local_addr, server::RENDERER_PATH);
    type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
    async fn call(ws: &mut Ws, message: serde_json::Value) -> anyhow::Result<serde_json::Value> {
        ws.send(Message::Text(message.to_string().into())).await?;
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(&t)?),
                Some(Ok(_)) => continue,
                _ => anyhow::bail!("the renderer socket closed"),
            }
        }
    }
    async fn window(rt: &::runtime::Runtime, url: &str, id: &str, tabs: &[String]) -> anyhow::Result<Ws> {
        let ticket = rt.register_window(id, &format!("{id}-r"))?;
        // The clients' own buffers small too: the figure is meant to be the server's.
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(8 << 10).write_buffer_size(8 << 10);
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false).await?;
        let welcome = call(&mut ws, json!({"type": "hello", "nonce": ticket.nonce})).await?;
        anyhow::ensure!(welcome["type"] == "welcome", "{welcome}");
        let mut events = vec![json!({"op": "open", "registry_surface_id": "chat", "surface_revision": 1, "kind": "chat", "group_id": "g"})];
        for (i, tab) in tabs.iter().enumerate() {
            let region = if i == 0 { "right" } else { "center" };
            events.push(json!({"op": "open", "registry_surface_id": format!("web{i}"), "surface_revision": 1, "kind": "web_tab", "group_id": "g", "local_surface_id": tab, "region": region, "order": i}));
        }
        for (n, mut event) in events.into_iter().enumerate() {
            event["window_revision"] = json!(n + 1);
            event["layout_revision"] = json!(n + 1);
            let ack = call(&mut ws, json!({"type": "registry", "id": n, "event": event})).await?;
            anyhow::ensure!(ack["type"] == "ack", "{ack}");
        }
        Ok(ws)
    }
    let login = rt.register_user_tab(&pages.url("/login")).await?;
    let shop = rt.register_user_tab(&pages.url("/shop")).await?;
    tokio::time::sleep(Duration::from_millis(500)).await; // both pages load
    let tabs = vec![login, shop];
    let mut ws = window(&rt, &url, "bench-1", &tabs).await?;
    let refs = |revision: u64| {
        json!({"type": "chat_turn", "id": "t", "surface_refs": {"chat_session_id": "bench-chat", "chat_surface_id": "chat", "window_revision": revision, "layout_revision": revision,
            "visible": [{"registry_surface_id": "web0", "surface_revision": 1}, {"registry_surface_id": "web1", "surface_revision": 1}]}})
    };
    let mut results = Vec::new();
    // The first command of a turn binds the tabs (claims); later ones of the turn reuse them.
    let first = call(&mut ws, refs(3)).await?;
    anyhow::ensure!(first["type"] == "surface_context", "{first}");
    for s in first["context"]["surfaces"].as_array().into_iter().flatten() {
        anyhow::ensure!(s["preview"]["preview_status"] == "ready", "a preview was not ready: {first}");
    }
    let mut turns = Vec::new();
    for _ in 0..60 {
        let started = Instant::now();
        let turn = call(&mut ws, refs(3)).await?;
        turns.push(started.elapsed());
        anyhow::ensure!(turn["type"] == "surface_context", "{turn}");
    }
    results.push(("chat command → Surface Context (2 tabs, previews)".to_owned(), Stats::of(&mut turns)));
    let mut fresh = Vec::new();
    for _ in 0..15 {
        let turn_id = call(&mut ws, refs(3)).await?["context"]["turn_id"].clone();
        call(&mut ws, json!({"type": "turn_end", "id": "e", "chat_session_id": "bench-chat", "turn_id": turn_id})).await?;
        let started = Instant::now();
        let turn = call(&mut ws, refs(3)).await?;
        fresh.push(started.elapsed());
        anyhow::ensure!(turn["type"] == "surface_context", "{turn}");
    }
    results.push(("first chat command of a turn (binds 2 tabs)".to_owned(), Stats::of(&mut fresh)));
    let mut events = Vec::new();
    for n in 0..200u64 {
        let revision = 4 + n;
        let event = json!({"op": "update", "registry_surface_id": "web1", "window_revision": revision, "layout_revision": revision, "surface_revision": 2 + n, "order": n % 5});
        let started = Instant::now();
        let ack = call(&mut ws, json!({"type": "registry", "id": n, "event": event})).await?;
        events.push(started.elapsed());
        anyhow::ensure!(ack["type"] == "ack", "{ack}");
    }
    results.push(("registry event round trip (WebSocket)".to_owned(), Stats::of(&mut events)));
    // Memory: 200 more windows, each with a chat and two tabs registered.
    let before = rss_bytes();
    let mut windows = Vec::new();
    for i in 0..200 {
        windows.push(window(&rt, &url, &format!("bench-w{i}"), &tabs).await?);
    }
    let after = rss_bytes();
    ratios.push(("memory per registered window, 3 surfaces, client included (KiB)".to_owned(), after.saturating_sub(before) as f64 / 200.0 / 1024.0));
    drop(windows);
    drop(ws);
    http.shutdown().await?;
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(results)
}

/// CPU time (user + system) of this process and of every Chromium process, in seconds.
fn cpu_seconds() -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let of = |stat: &str| -> f64 {
        // Fields after the command name (which may hold spaces) start at state (field 3).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let utime = fields.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let stime = fields.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (utime + stime) / ticks
    };
    let mut total = std::fs::read_to_string("/proc/self/stat").map(|s| of(&s)).unwrap_or(0.0);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.starts_with("chrom") {
            total += std::fs::read_to_string(entry.path().join("stat")).map(|s| of(&s)).unwrap_or(0.0);
        }
    }
    total
}

/// The console's live view end to end: the view WebSocket on the server's own listener, a page
/// changed over CDP, a session holding the tab for the pause figures.
async fn bench_console(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    const PAGE: &str = "<!doctype html><title>Live</title><body style='margin:0;font:40px sans-serif'><p id=n>0</p><button style='width:200px;height:80px'>Press</button>\
        <script>let on = false; function tick() { if (on) document.getElementById('n').textContent = String(performance.now() | 0); requestAnimationFrame(tick); } tick();</script>";
    let pages = crate::pages::LoopbackPages::serve([("/live".to_owned(), PAGE.to_owned())].into()).await?;
    let settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config.trust.trusted_origins.push(policy::Origin::parse(&pages.url("/"))?);
    let chromium = settings.adapter();
    let rt = ::runtime::Runtime::start(config, chromium.clone()).await?;
    let http = server::serve(rt.clone(), server::HttpOptions { bind: "127.0.0.1:0".parse()?, ..server::HttpOptions::default() }).await?;
    let session = rt.create_session().await?;
    rt.open_tab(&session, &pages.url("/live"), Duration::from_secs(10)).await?;
    let tabs = rt.tabs_for_person()?;
    let live = pages.url("/live");
    let resource = tabs.iter().find(|t| t["url"] == live.as_str() && t["state"] == "open").and_then(|t| t["tab"].as_str()).unwrap_or_default().to_owned();
    anyhow::ensure!(!resource.is_empty(), "the page's tab record is missing: {tabs:?}");
    let page = chromium.scratch_attach("/live").await?;
    let eval = async |expression: &str| page.eval(expression).await;

    let url = format!("ws://{}/api/tabs/{resource}/view", http.local_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await?;
    ws.send(Message::Text(json!({"type": "hello", "token": http.person.token}).to_string().into())).await?;
    ws.send(Message::Text(json!({"type": "show"}).to_string().into())).await?;
    type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
    /// The next message of `kind` within `within`.
    async fn next_of(ws: &mut Ws, kind: &str, within: Duration) -> Option<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let message = tokio::time::timeout_at(deadline, ws.next()).await.ok()??;
            if let Ok(Message::Text(t)) = message
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&t)
            {
                if v["type"] == kind {
                    return Some(v);
                }
                if v["type"] == "error" {
                    tracing::warn!(%v, "the view refused something");
                }
            }
        }
    }
    let bound = next_of(&mut ws, "bound", Duration::from_secs(10)).await;
    anyhow::ensure!(bound.is_some(), "the view did not bind");
    anyhow::ensure!(next_of(&mut ws, "frame", Duration::from_secs(10)).await.is_some(), "no first frame");
    let mut results = Vec::new();

    // Page change → the frame showing it at the viewer (the frame after a quiet page).
    let mut latency = Vec::new();
    for i in 0..30 {
        while next_of(&mut ws, "frame", Duration::from_millis(300)).await.is_some() {}
        let started = Instant::now();
        eval(&format!("document.getElementById('n').textContent = 'change {i}'; 1")).await?;
        if next_of(&mut ws, "frame", Duration::from_secs(5)).await.is_some() {
            latency.push(started.elapsed());
        }
    }
    results.push(("page change → frame at the viewer".to_owned(), Stats::of(&mut latency)));

    // A page that changes every animation frame: frames per second and CPU, shown vs hidden.
    eval("on = true; 1").await?;
    let window = Duration::from_secs(5);
    let cpu = cpu_seconds();
    let started = Instant::now();
    let mut frames = 0u32;
    while started.elapsed() < window {
        if next_of(&mut ws, "frame", window.saturating_sub(started.elapsed())).await.is_some() {
            frames += 1;
        }
    }
    let shown_cpu = (cpu_seconds() - cpu) / started.elapsed().as_secs_f64();
    ratios.push(("frames per second of one live preview (cap 10)".to_owned(), f64::from(frames) / started.elapsed().as_secs_f64()));
    ws.send(Message::Text(json!({"type": "hide"}).to_string().into())).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu = cpu_seconds();
    let started = Instant::now();
    while started.elapsed() < window {
        let _ = next_of(&mut ws, "frame", window.saturating_sub(started.elapsed())).await;
    }
    let hidden_cpu = (cpu_seconds() - cpu) / started.elapsed().as_secs_f64();
    ratios.push(("CPU (cores) with the preview shown, animating page".to_owned(), shown_cpu));
    ratios.push(("CPU (cores) with the preview hidden, same page".to_owned(), hidden_cpu));
    ratios.push(("CPU cost of one live preview (cores)".to_owned(), shown_cpu - hidden_cpu));
    eval("on = false; 1").await?;
    ws.send(Message::Text(json!({"type": "show"}).to_string().into())).await?;

    // A person's press in the real entry → agent dispatch blocked, → pause confirmed.
    let mut blocked = Vec::new();
    let mut paused = Vec::new();
    for i in 0..20 {
        let started = Instant::now();
        let press = json!({"type": "input", "id": i, "input": "pointer", "event": "down", "x": 100.0, "y": 120.0, "button": "left", "click_count": 1});
        ws.send(Message::Text(press.to_string().into())).await?;
        loop {
            match rt.control_of(&resource) {
                ::runtime::Control::Pausing => {
                    blocked.push(started.elapsed());
                    break;
                }
                ::runtime::Control::Paused | ::runtime::Control::PauseFailed => {
                    // Confirmed before the first look: blocked no later than now.
                    blocked.push(started.elapsed());
                    break;
                }
                _ if started.elapsed() > Duration::from_secs(5) => anyhow::bail!("the press never blocked the agent"),
                _ => tokio::task::yield_now().await,
            }
        }
        while !matches!(rt.control_of(&resource), ::runtime::Control::Paused) {
            anyhow::ensure!(started.elapsed() < Duration::from_secs(10), "the pause was never confirmed ({:?})", rt.control_of(&resource));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        paused.push(started.elapsed());
        let release = json!({"type": "input", "id": 1000 + i, "input": "pointer", "event": "up", "x": 100.0, "y": 120.0, "button": "left", "click_count": 1});
        ws.send(Message::Text(release.to_string().into())).await?;
        next_of(&mut ws, "input_done", Duration::from_secs(5)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        rt.hand_back(&resource)?;
    }
    results.push(("person's press → agent dispatch blocked".to_owned(), Stats::of(&mut blocked)));
    results.push(("person's press → pause confirmed".to_owned(), Stats::of(&mut paused)));
    drop(ws);
    http.shutdown().await?;
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(results)
}

/// Kept tabs after a browser death: ten deliverable tabs on a loopback page; the browser is
/// SIGKILLed and the runtime relaunches it and restores them (the same restore a restart runs).
/// Measures from the kill until all ten are open again with new handles, and the restore pass.
async fn bench_restore(global: &Global, iterations: usize) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{Mark, Runtime};
    let pages = crate::pages::LoopbackPages::serve([("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into()).await?;
    let mut settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config.data_dir = config.data_dir.join("bench").join(format!("restore-{}", std::process::id()));
    if let ::browser::BrowserSource::Launch(launch) = &mut settings.browser {
        launch.data_dir = config.data_dir.clone();
    }
    config.trust.trusted_origins.push(policy::Origin::parse(&pages.url("/"))?);
    let data_dir = config.data_dir.clone();
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    let turn = rt.current_turn(&session)?;
    for i in 0..10 {
        let surface = rt.open_tab(&session, &pages.url(&format!("/act?n={i}")), std::time::Duration::ZERO).await?;
        rt.mark(&session, surface, Mark::Deliverable, &turn).await?;
    }
    let mut back = Vec::new();
    let mut pass = Vec::new();
    for _ in 0..iterations.max(1) {
        let killed_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let pid = rt.browser_pid().unwrap_or_default();
        let started = Instant::now();
        std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let tabs = rt.tabs_for_person()?;
            let restored = tabs.iter().filter(|t| t["state"] == "open" && t["restored_at"].as_u64().is_some_and(|at| at >= killed_at)).count();
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
        ("restore: browser killed → 10 kept tabs open again".to_owned(), Stats::of(&mut back)),
        ("restore: the restore pass alone (10 tabs)".to_owned(), Stats::of(&mut pass)),
    ])
}

/// `bench act`'s busy page: the counter with a 10 Hz clock, a CSS animation, a request polled
/// every 250 ms and a carousel turning every second.
const BUSY_PAGE: &str = r#"<!doctype html><html><head><meta charset=utf-8><title>Busy</title>
<style>@keyframes spin{to{transform:rotate(360deg)}} .spin{display:inline-block;animation:spin 1s linear infinite}</style></head>
<body><main><h1>Counter</h1><p>Time: <span id=clock>0</span> <span class=spin>*</span></p>
<div id=carousel><p class=slide>Slide A</p></div>
<p id=count>0 clicks</p>
<button onclick="const p = document.getElementById('count'); p.textContent = (parseInt(p.textContent) + 1) + ' clicks'">Add one</button>
</main><script>
let n = 0;
setInterval(() => { document.getElementById('clock').textContent = String(++n); }, 100);
setInterval(() => { fetch('/poll').catch(() => 0); }, 250);
setInterval(() => { const s = document.querySelector('.slide'); s.textContent = s.textContent === 'Slide A' ? 'Slide B' : 'Slide A'; }, 1000);
</script></body></html>"#;

/// The agent bench's task: four fields at fixed places and a button (a 1280×720 viewport).
const SHIPPING_PAGE: &str = r#"<!doctype html><html><head><meta charset=utf-8><title>Shipping</title>
<style>body{margin:0;font:16px sans-serif} label{position:absolute;left:40px;width:140px} input{position:absolute;left:200px;width:300px;height:30px;font:16px sans-serif}
button{position:absolute;left:200px;top:340px;width:160px;height:40px}</style></head><body>
<h1 style="position:absolute;left:40px;top:10px;margin:0">Shipping address</h1>
<label for=name style="top:105px">Name</label><input id=name style="top:100px">
<label for=email style="top:165px">Email</label><input id=email type=email style="top:160px">
<label for=city style="top:225px">City</label><input id=city style="top:220px">
<label for=zip style="top:285px">Zip</label><input id=zip style="top:280px">
<button id=ship>Ship it</button><p id=out style="position:absolute;left:40px;top:400px"></p>
<script>document.getElementById('ship').onclick = () => { const v = (id) => document.getElementById(id).value;
document.getElementById('out').textContent = (v('name') === 'Ada' && v('email') === 'ada@example.com' && v('city') === 'London' && v('zip') === 'N1 9GU') ? 'Order placed for Ada' : 'Something is missing'; };</script>
</body></html>"#;

/// The fields the task fills: (label, value, the field's centre in CSS pixels).
const SHIPPING_FIELDS: [(&str, &str, (f64, f64)); 4] =
    [("Name", "Ada", (350.0, 115.0)), ("Email", "ada@example.com", (350.0, 175.0)), ("City", "London", (350.0, 235.0)), ("Zip", "N1 9GU", (350.0, 295.0))];

/// Prefixes in the scripted model's prompt cache (hashes of their content).
static PROMPT_CACHE: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// What Anthropic's prompt cache would make of `body`, as (tokens read, tokens written): each
/// breakpoint's prefix (tools and system, then the messages up to a marked block) of at least
/// 1,024 tokens is written; a later request reads the longest cached prefix that ends at one of
/// its breakpoints or at a message boundary before one (the cache looks back from each
/// breakpoint), and writes the rest up to its last breakpoint. Markers are not content.
fn cache_usage(body: &serde_json::Value) -> (u64, u64) {
    fn unmarked(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => m.iter().filter(|(k, _)| *k != "cache_control").map(|(k, v)| (k.clone(), unmarked(v))).collect(),
            serde_json::Value::Array(a) => a.iter().map(unmarked).collect(),
            other => other.clone(),
        }
    }
    let marked = |v: &serde_json::Value| v.to_string().contains("\"cache_control\"");
    // Every prefix at a message boundary, and whether a breakpoint ends it.
    let mut prefix = unmarked(&json!([body["tools"], body["system"]])).to_string();
    let mut boundaries = vec![(prefix.clone(), marked(&body["system"]))];
    for m in body["messages"].as_array().into_iter().flatten() {
        prefix.push_str(&unmarked(m).to_string());
        boundaries.push((prefix.clone(), marked(m)));
    }
    let last = boundaries.iter().rposition(|(_, marked)| *marked).map_or(0, |i| i + 1);
    boundaries.truncate(last);
    let hash = |text: &str| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    let mut cache = PROMPT_CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let sized: Vec<(u64, u64, bool)> =
        boundaries.iter().map(|(b, marked)| (hash(b), b.len() as u64 / 4, *marked)).filter(|(_, tokens, _)| *tokens >= 1024).collect();
    let read = sized.iter().filter(|(h, _, _)| cache.contains(h)).map(|(_, t, _)| *t).max().unwrap_or(0);
    let write = sized.iter().filter(|(_, _, marked)| *marked).map(|(_, t, _)| *t).max().unwrap_or(0).saturating_sub(read);
    for (h, _, marked) in sized {
        if marked && !cache.contains(&h) {
            cache.push(h);
        }
    }
    (read, write)
}

/// A scripted model behind the Anthropic Messages wire format. With Glovebox's tools it reads
/// the outline (as a model reads text): it types each empty field by ref, then clicks the
/// button. With only the computer tool and screenshots it is a perfect vision model that knows
/// where the page's fields are in the picture: click a field, type, next, click the button.
/// Either says done with the check the page shows. Usage is counted as the provider would bill
/// it: text at four characters a token, images at width × height / 750, and the prompt cache's
/// share apart ([`cache_usage`]).
async fn scripted_model(axum::Json(body): axum::Json<serde_json::Value>) -> axum::Json<serde_json::Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut image_tokens = 0u64;
    let mut text = body.clone();
    for m in text["messages"].as_array_mut().into_iter().flatten() {
        for block in m["content"].as_array_mut().into_iter().flatten() {
            if block["type"] == "image" {
                let data = block["source"]["data"].as_str().unwrap_or_default();
                if let Some(h) = ::runtime::decode_base64(&data[..data.len().min(44)]).filter(|h| h.len() >= 24) {
                    let (w, hh) = (u32::from_be_bytes([h[16], h[17], h[18], h[19]]), u32::from_be_bytes([h[20], h[21], h[22], h[23]]));
                    image_tokens += (u64::from(w) * u64::from(hh)).div_ceil(750);
                }
                block["source"]["data"] = json!("");
            }
        }
    }
    let input_tokens = text.to_string().len() as u64 / 4 + image_tokens;
    let (read, write) = cache_usage(&text);
    let latest: String = messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().or(b["content"].as_str()).map(str::to_owned))
        .find(|t| t.contains("frame_id: "))
        .unwrap_or_default();
    let frame = latest.split("frame_id: ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or_default().to_owned();
    let computer = body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "computer"));
    let done = json!({"summary": "shipped", "checks": [{"kind": "text_present", "text": "Order placed for Ada"}]});
    let (tool, input) = if latest.contains("Order placed for Ada") {
        ("done", done)
    } else if computer {
        // The plan a vision model follows, one action per answer, by what it already did.
        let acted = messages.iter().filter(|m| m["role"] == "assistant").count();
        let scale = 1.0; // the bench's viewport is captured at 1:1
        match acted {
            n if n < 8 && n % 2 == 0 => {
                let (x, y) = SHIPPING_FIELDS[n / 2].2;
                ("computer", json!({"action": "left_click", "coordinate": [x * scale, y * scale]}))
            }
            n if n < 8 => ("computer", json!({"action": "type", "text": SHIPPING_FIELDS[n / 2].1})),
            8 => ("computer", json!({"action": "left_click", "coordinate": [280.0 * scale, 360.0 * scale]})),
            _ => ("done", done),
        }
    } else {
        let reference = |role: &str, name: &str| {
            let needle = format!("{role} \"{name}\" [");
            latest.split(&needle).nth(1).and_then(|r| r.split([' ', ']']).next()).map(str::to_owned)
        };
        let empty = SHIPPING_FIELDS
            .iter()
            .find(|(label, value, _)| !latest.lines().any(|l| l.contains(&format!("textbox \"{label}\"")) && l.contains(&format!(": \"{value}\""))));
        match empty {
            Some((label, value, _)) => match reference("textbox", label) {
                Some(r) => (
                    "act",
                    json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": r}, "text": value, "intent": format!("fill in {label}")}),
                ),
                None => ("give_up", json!({"reason": format!("no {label} field")})),
            },
            None => match reference("button", "Ship it") {
                Some(b) => ("act", json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": b}, "intent": "ship"})),
                None => ("give_up", json!({"reason": "no button"})),
            },
        }
    };
    let output_tokens = input.to_string().len() as u64 / 4 + 10;
    axum::Json(json!({
        "id": "msg_bench", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "tool_use", "id": format!("toolu_{}", messages.len()), "name": tool, "input": input}],
        "stop_reason": "tool_use", "usage": {"input_tokens": input_tokens.saturating_sub(read + write), "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write, "output_tokens": output_tokens},
    }))
}

async fn bench_agent(global: &Global, iterations: usize, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{Assertion, RunRequest, Runtime};
    let pages = crate::pages::LoopbackPages::serve([("/ship".to_owned(), SHIPPING_PAGE.to_owned())].into()).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new().route("/v1/messages", axum::routing::post(scripted_model));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config.trust.trusted_origins.push(policy::Origin::parse(&pages.url("/"))?);
    let rt = Runtime::start(config, settings.adapter()).await?;
    let mut results = Vec::new();
    for (label, screenshots) in [("glovebox dom-first", false), ("screenshot-only", true)] {
        let (mut requests, mut tokens, mut steps_taken, mut images) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut billed = Vec::new();
        let mut per_step = Vec::new();
        for _ in 0..iterations.max(1) {
            let session = rt.create_session().await?;
            rt.open_tab(&session, &pages.url("/ship"), Duration::ZERO).await?;
            let choice = agent::ModelChoice {
                provider: agent::ProviderKind::Anthropic,
                model: "scripted".into(),
                base_url: Some(base_url.clone()),
                api_key_env: Some(String::new()),
                computer_tool: screenshots,
                computer_tool_version: None,
            };
            let accounting = std::sync::Arc::new(std::sync::Mutex::new(agent::Accounting::default()));
            let mut planner = agent::ModelPlanner::for_choice(&choice, accounting.clone())?;
            if screenshots {
                planner = planner.screenshot_only();
            }
            let mut request = RunRequest::new("Fill in the shipping address for Ada (ada@example.com, London, N1 9GU) and ship it");
            request.max_steps = 16;
            request.max_seconds = 120;
            request.assertions = vec![Assertion::TextPresent { text: "Order placed for Ada".into() }];
            let result = rt.run(&session, request, Box::new(planner)).await?;
            anyhow::ensure!(result.status() == protocol::RunStatus::Succeeded, "{label}: the task did not complete: {result:?}");
            let query = ::runtime::LogQuery { session: Some(session.as_str().to_owned()), run: None, limit: 0 };
            let time = rt.log(&query)?.into_iter().rev().find(|e| e["kind"] == "run_ended").map(|e| e["accounting"]["time"].clone()).unwrap_or_default();
            let a = accounting.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let steps = u64::from(result.steps_taken()).max(1);
            let without_model = time["total_ms"].as_u64().unwrap_or(0).saturating_sub(time["model_ms"].as_u64().unwrap_or(0));
            per_step.push(Duration::from_micros(without_model * 1000 / steps));
            requests.push(a.model_requests as f64);
            tokens.push((a.input_tokens + a.output_tokens) as f64);
            // Input as billed: cache reads at a tenth of the base price, writes at 1.25 times it.
            let uncached = a.input_tokens.saturating_sub(a.cache_read_tokens + a.cache_write_tokens) as f64;
            billed.push(uncached + 0.1 * a.cache_read_tokens as f64 + 1.25 * a.cache_write_tokens as f64);
            images.push(a.image_tokens as f64);
            steps_taken.push(steps as f64);
            rt.close_session(&session).await?;
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let (r, t, s, i) = (median(&mut requests), median(&mut tokens), median(&mut steps_taken), median(&mut images));
        ratios.push((format!("{label}: model requests per run"), r));
        ratios.push((format!("{label}: model requests per step"), r / s));
        ratios.push((format!("{label}: tokens per run (image tokens {i:.0})"), t));
        ratios.push((format!("{label}: tokens per step"), t / s));
        ratios.push((format!("{label}: input tokens per run as billed with the prompt cache"), median(&mut billed)));
        results.push((format!("{label}: runtime per step without the model"), Stats::of(&mut per_step)));
    }
    let value = |name: &str| ratios.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v);
    let request_ratio = value("screenshot-only: model requests per run") / value("glovebox dom-first: model requests per run").max(1.0);
    ratios.push(("screenshot-only ÷ glovebox: model requests".into(), request_ratio));
    let token_key = |label: &str| ratios.iter().find(|(n, _)| n.starts_with(&format!("{label}: tokens per run"))).map_or(0.0, |(_, v)| *v);
    ratios.push(("screenshot-only ÷ glovebox: tokens".into(), token_key("screenshot-only") / token_key("glovebox dom-first").max(1.0)));
    rt.shutdown(Duration::from_secs(5)).await;
    server.abort();
    Ok(results)
}
