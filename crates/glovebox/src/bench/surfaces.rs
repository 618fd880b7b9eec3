//! `bench cdp`, `bench protocol`, `bench observe`, `bench act`: a surface, measured beneath the runtime.

use super::*;

pub(super) async fn bench_cdp(
    global: &Global,
    iterations: usize,
) -> anyhow::Result<Vec<(String, Stats)>> {
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
    results.push((
        "cold start: launch → loaded about:blank".to_owned(),
        Stats::of(&mut cold),
    ));

    // Cold start of the whole binary: `glovebox observe about:blank`, process start to exit.
    let exe = std::env::current_exe()?;
    let mut whole = Vec::new();
    for _ in 0..iterations {
        let mut command = tokio::process::Command::new(&exe);
        command
            .args(["observe", "about:blank"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
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
        anyhow::ensure!(
            status.success(),
            "`glovebox observe about:blank` failed: {status}"
        );
        whole.push(started.elapsed());
    }
    results.push((
        "cold start: `glovebox observe about:blank`".to_owned(),
        Stats::of(&mut whole),
    ));

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
    results.push((
        "Runtime.evaluate(\"1+1\") round trip".to_owned(),
        Stats::of(&mut rtt),
    ));
    Ok(results)
}

pub(super) fn bench_protocol() -> anyhow::Result<Vec<(String, Stats)>> {
    let action = json!({
        "type": "click",
        "expected_frame_id": "frame_0123456789abcdef",
        "target": { "kind": "element", "ref": "e12" },
        "intent": "Submit the sign-in form"
    });
    anyhow::ensure!(
        protocol::validate_action(&action).is_ok(),
        "the typical action must be valid"
    );
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
    Ok(vec![(
        "validate_action(click) per call".to_owned(),
        Stats::of(&mut per_call),
    )])
}

pub(super) async fn bench_observe(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
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
        ratios.push((
            format!("observe {path}: ours / raw CDP (medians)"),
            ms(ours.median) / ms(raw.median),
        ));
        ratios.push((format!("observe {path}: aria_snapshot bytes"), size as f64));
        results.push((format!("observe {path}"), ours));
        results.push((format!("raw CDP calls of observe {path}"), raw));
        // The same page through Chromium's AX tree, for comparison with the DOM model.
        let options = ObserveOptions {
            model: ::runtime::PageModel::Accessibility,
            ..ObserveOptions::default()
        };
        let mut times = Vec::new();
        for i in 0..(n / 2).max(8) {
            let started = Instant::now();
            tab.observe(&options).await?;
            if i >= 2 {
                times.push(started.elapsed());
            }
        }
        results.push((
            format!("observe {path} with the AX-tree model (comparison)"),
            Stats::of(&mut times),
        ));
        if path == "/login" {
            let mut preview = Vec::new();
            for i in 0..n + 3 {
                let started = Instant::now();
                let p = tab.preview(Duration::from_secs(5)).await;
                anyhow::ensure!(
                    p.preview_status() == protocol::PreviewStatus::Ready,
                    "preview unavailable"
                );
                if i >= 3 {
                    preview.push(started.elapsed());
                }
            }
            results.push(("preview /login".to_owned(), Stats::of(&mut preview)));
            // Screenshots: observe with one, whose password field is masked before it leaves,
            // and the masking alone (decode, paint, encode) on that 1280×720 capture.
            let visual = ObserveOptions {
                screenshot: Some(protocol::ImageMime::Png),
                ..ObserveOptions::default()
            };
            let (mut with_shot, mut masking) = (Vec::new(), Vec::new());
            for i in 0..(n / 2).max(8) + 2 {
                let started = Instant::now();
                let observation = tab.observe(&visual).await?;
                let took = started.elapsed();
                let shot = observation
                    .screenshot()
                    .ok_or_else(|| anyhow::anyhow!("no screenshot"))?;
                let started = Instant::now();
                ::runtime::mask_screenshot(shot, &[(100.0, 100.0, 300.0, 40.0)])?;
                if i >= 2 {
                    with_shot.push(took);
                    masking.push(started.elapsed());
                }
            }
            results.push((
                "observe /login with a masked screenshot".to_owned(),
                Stats::of(&mut with_shot),
            ));
            results.push((
                "screenshot masking per image (1280×720 PNG)".to_owned(),
                Stats::of(&mut masking),
            ));
        }
        if path == "/store" {
            // A typical click (issue 16): what the model reads after it, the whole text against
            // the changes since the observation the click named (`act`'s default over MCP).
            let (mut whole, mut changes) = (Vec::new(), Vec::new());
            let mut o = tab.observe(&options).await?;
            for _ in 0..10 {
                let add = o
                    .interactive_elements()
                    .iter()
                    .find(|e| e.name() == "Add to cart")
                    .ok_or_else(|| anyhow::anyhow!("no Add to cart"))?;
                let action = protocol::validate_action(&json!({
                    "type": "click", "expected_frame_id": o.frame_id().as_str(),
                    "target": {"kind": "element", "ref": add.element().as_str()}, "intent": "add"
                }))?;
                o = tab
                    .act(&action.into(), &::runtime::ActOptions::default())
                    .await?
                    .observation
                    .ok_or_else(|| anyhow::anyhow!("no observation"))?;
                anyhow::ensure!(
                    o.snapshot_diff().is_some(),
                    "a click on the same document has a diff"
                );
                whole.push(::runtime::observation_text(&o).len() as f64);
                changes.push(::runtime::observation_text_or_changes(&o).len() as f64);
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (whole, changes) = (median(&mut whole), median(&mut changes));
            ratios.push((
                "click on /store: model text bytes, whole snapshot".to_owned(),
                whole,
            ));
            ratios.push((
                "click on /store: model text bytes, changes (act's default)".to_owned(),
                changes,
            ));
            ratios.push((
                "click on /store: changes / whole".to_owned(),
                changes / whole,
            ));
        }
    }
    bench_widget_pages(&handle, &mut results, ratios).await?;
    Ok(results)
}

/// The widget-library fixtures (issue 36) — jQuery UI's date picker with delegated and icon
/// controls, its sortable, a folded tree — with the libraries from Debian's
/// `libjs-jquery`/`libjs-jquery-ui` (`scripts/ensure-test-libs.sh`): observe time, and the bytes
/// and estimated tokens (four characters each) of what the model reads.
async fn bench_widget_pages(
    handle: &browser::BrowserHandle,
    results: &mut Vec<(String, Stats)>,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<()> {
    use ::runtime::ObserveOptions;
    let lib = |path: &str| std::fs::read_to_string(format!("/usr/share/javascript/{path}"));
    let (Ok(jquery), Ok(jquery_ui)) = (
        lib("jquery/jquery.min.js"),
        lib("jquery-ui/jquery-ui.min.js"),
    ) else {
        eprintln!(
            "observe of the widget pages skipped: jQuery and jQuery UI are missing (scripts/ensure-test-libs.sh installs them)"
        );
        return Ok(());
    };
    // The pages load the libraries from `/lib/…`, as the test server serves them (a script sent
    // as text/html still runs); inlined, their text would be part of every DOM snapshot.
    let pages = crate::pages::LoopbackPages::serve(
        [
            ("/lib/jquery/jquery.min.js".to_owned(), jquery),
            ("/lib/jquery-ui/jquery-ui.min.js".to_owned(), jquery_ui),
            (
                "/widgets".to_owned(),
                include_str!("../../../browser/tests/fixtures/jquery-widgets.html").to_owned(),
            ),
            (
                "/sortable".to_owned(),
                include_str!("../../../browser/tests/fixtures/jquery-sortable.html").to_owned(),
            ),
            (
                "/tree".to_owned(),
                include_str!("../../../browser/tests/fixtures/random-tree.html").to_owned(),
            ),
        ]
        .into(),
    )
    .await?;
    for path in ["/widgets", "/sortable", "/tree"] {
        let tab = handle.chromium.open_tab().await?;
        tab.goto(&pages.url(path), Duration::from_secs(30)).await?;
        let mut times = Vec::new();
        let mut bytes = 0;
        for i in 0..23 {
            let started = Instant::now();
            let o = tab.observe(&ObserveOptions::default()).await?;
            if i >= 3 {
                times.push(started.elapsed());
            }
            bytes = ::runtime::observation_text(&o).len();
        }
        results.push((format!("observe widget page {path}"), Stats::of(&mut times)));
        ratios.push((
            format!("widget page {path}: model text bytes"),
            bytes as f64,
        ));
        ratios.push((
            format!("widget page {path}: est. tokens"),
            (bytes / 4) as f64,
        ));
    }
    Ok(())
}

pub(super) async fn bench_act(global: &Global) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{ActOptions, ObserveOptions};
    let pages = crate::pages::LoopbackPages::serve(
        [("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into(),
    )
    .await?;
    let handle = browser::open(global).await?;
    let tab = handle.chromium.open_tab().await?;
    tab.goto(&pages.url("/act"), Duration::from_secs(30))
        .await?;
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
    let (mut click_settle, mut click_observe, mut click_rest) =
        (Vec::new(), Vec::new(), Vec::new());
    for i in 0..43 {
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&observation, "Add one")?}, "intent": "count"
        }))?;
        let started = Instant::now();
        let outcome = tab.act(&action.into(), &options).await?;
        let took = started.elapsed();
        if i >= 3 {
            clicks.push(took);
            // Where the click's time goes: settling, the fresh observation, and the rest
            // (actionability, dispatch, verification).
            click_settle.push(outcome.timing.settle);
            click_observe.push(outcome.timing.observe);
            click_rest.push(took.saturating_sub(outcome.timing.settle + outcome.timing.observe));
        }
        observation = outcome
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
    }
    anyhow::ensure!(
        observation.aria_snapshot().contains("43 clicks"),
        "every click landed"
    );
    let text: String = "The quick brown fox jumps over the lazy dog. 0123456789 "
        .repeat(2)
        .chars()
        .take(100)
        .collect();
    let mut typing = Vec::new();
    for i in 0..43 {
        let action = protocol::validate_action(&json!({
            "type": "type", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&observation, "Notes")?}, "text": format!("{i:02}{}", &text[2..]), "intent": "note"
        }))?;
        let started = Instant::now();
        let outcome = tab.act(&action.into(), &options).await?;
        let took = started.elapsed();
        anyhow::ensure!(
            outcome.receipt.state() == protocol::ReceiptState::Confirmed,
            "typing was verified"
        );
        observation = outcome
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after typing"))?;
        if i >= 3 {
            typing.push(took);
        }
    }
    // The same click with the network boundary armed (the runtime always arms it): Fetch
    // interception during the action and its tail, every request of the page judged. Blocks of
    // each, twice; an unguarded block starts after the last tail ended (Fetch disabled).
    let guarded_options = ActOptions {
        allowed_origins: Some(vec![policy::Origin::parse(&pages.url("/"))?]),
        ..ActOptions::default()
    };
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
            let outcome = tab
                .act(
                    &action.into(),
                    if is_guarded {
                        &guarded_options
                    } else {
                        &options
                    },
                )
                .await?;
            let took = started.elapsed();
            observation = outcome
                .observation
                .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
            if i >= 3 {
                if is_guarded {
                    guarded.push(took)
                } else {
                    plain.push(took)
                }
            }
        }
    }
    let (plain, guarded) = (Stats::of(&mut plain), Stats::of(&mut guarded));
    // The same click on a held tab (issue 29): once an action typed into it, every request of
    // the page is judged between actions too, and the interception never pauses.
    let typed_options = ActOptions {
        guard_typed: true,
        ..guarded_options.clone()
    };
    let action = protocol::validate_action(&json!({
        "type": "type", "expected_frame_id": observation.frame_id().as_str(),
        "target": {"kind": "element", "ref": find(&observation, "Notes")?}, "text": "held", "intent": "note"
    }))?;
    observation = tab
        .act(&action.into(), &typed_options)
        .await?
        .observation
        .ok_or_else(|| anyhow::anyhow!("no observation after typing"))?;
    let mut held = Vec::new();
    for i in 0..23 {
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": find(&observation, "Add one")?}, "intent": "count"
        }))?;
        let started = Instant::now();
        let outcome = tab.act(&action.into(), &guarded_options).await?;
        let took = started.elapsed();
        observation = outcome
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
        if i >= 3 {
            held.push(took);
        }
    }
    let (loads_plain, loads_held) = held_page_loads(&handle).await?;
    // A busy page (issue 16): a 10 Hz clock, a CSS animation, a request polled every 250 ms and
    // a carousel; a click must not wait for quiet that never comes.
    let busy_pages = crate::pages::LoopbackPages::serve(
        [
            ("/busy".to_owned(), BUSY_PAGE.to_owned()),
            ("/poll".to_owned(), "ok".to_owned()),
        ]
        .into(),
    )
    .await?;
    let busy = handle.chromium.open_tab().await?;
    busy.goto(&busy_pages.url("/busy"), Duration::from_secs(30))
        .await?;
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
        (
            "click + settle + fresh observation".to_owned(),
            Stats::of(&mut clicks),
        ),
        (
            "  of which settling".to_owned(),
            Stats::of(&mut click_settle),
        ),
        (
            "  of which the fresh observation".to_owned(),
            Stats::of(&mut click_observe),
        ),
        (
            "  of which the rest (actionability, dispatch, verification)".to_owned(),
            Stats::of(&mut click_rest),
        ),
        (
            "type 100 chars + verify + fresh observation".to_owned(),
            Stats::of(&mut typing),
        ),
        ("click round trip, network boundary off".to_owned(), plain),
        ("click round trip, network boundary on".to_owned(), guarded),
        (
            "click round trip, held tab (typed into)".to_owned(),
            Stats::of(&mut held),
        ),
        (
            "page-side: 30 first- + 30 third-party fetches, tab not held".to_owned(),
            loads_plain,
        ),
        (
            "page-side: the same 60 fetches, tab held (typed into; both origins allowed)"
                .to_owned(),
            loads_held,
        ),
        (
            "click round trip on a busy page (10 Hz clock, animation, polling)".to_owned(),
            Stats::of(&mut busy_clicks),
        ),
    ])
}

/// What a hold costs a realistic page (issue 29): the page's own time to fetch 30 first-party
/// and 30 third-party resources, before anything was typed and once the tab is held (every
/// request intercepted and judged; both origins allowed, as a person would for a CDN). Timed by
/// the page itself, so the agent's round trip is not in it.
async fn held_page_loads(handle: &browser::BrowserHandle) -> anyhow::Result<(Stats, Stats)> {
    use ::runtime::{ActOptions, ObserveOptions};
    let cdn =
        crate::pages::LoopbackPages::serve([("/r".to_owned(), "ok".to_owned())].into()).await?;
    let page = format!(
        r#"<!doctype html><title>Load</title><input aria-label=Notes><button onclick="load()">Load</button><output id=o>idle</output>
<script>async function load() {{ o.textContent = 'loading'; const t = performance.now(); const all = [];
for (let i = 0; i < 30; i++) {{ all.push(fetch('/r', {{cache: 'no-store'}})); all.push(fetch('{cdn}/r', {{mode: 'no-cors', cache: 'no-store'}})); }}
await Promise.allSettled(all); o.textContent = 'loaded in ' + (performance.now() - t).toFixed(2) + ' ms'; }}</script>"#,
        cdn = cdn.url("")
    );
    let pages = crate::pages::LoopbackPages::serve(
        [
            ("/load".to_owned(), page),
            ("/r".to_owned(), "ok".to_owned()),
        ]
        .into(),
    )
    .await?;
    let tab = handle.chromium.open_tab().await?;
    tab.goto(&pages.url("/load"), Duration::from_secs(30))
        .await?;
    let allowed = ActOptions {
        allowed_origins: Some(vec![
            policy::Origin::parse(&pages.url("/"))?,
            policy::Origin::parse(&cdn.url("/"))?,
        ]),
        ..ActOptions::default()
    };
    let find = |o: &protocol::Observation, name: &str| -> anyhow::Result<String> {
        o.interactive_elements()
            .iter()
            .find(|e| e.name() == name)
            .map(|e| e.element().as_str().to_owned())
            .ok_or_else(|| anyhow::anyhow!("no {name} on the load page"))
    };
    let observation = tab.observe(&ObserveOptions::default()).await?;
    let (plain, mut observation) = load_rounds(&tab, observation, &ActOptions::default()).await?;
    let action = protocol::validate_action(&json!({
        "type": "type", "expected_frame_id": observation.frame_id().as_str(),
        "target": {"kind": "element", "ref": find(&observation, "Notes")?}, "text": "held", "intent": "note"
    }))?;
    let typed = ActOptions {
        guard_typed: true,
        ..allowed.clone()
    };
    tab.act(&action.into(), &typed).await?;
    // Past the action's tail: what is left is the hold.
    tokio::time::sleep(::browser::GUARD_TAIL + Duration::from_millis(500)).await;
    observation = tab.observe(&ObserveOptions::default()).await?;
    let (held, _) = load_rounds(&tab, observation, &allowed).await?;
    Ok((plain, held))
}

/// Clicks Load 23 times with `options`; the page's own times of the last 20.
async fn load_rounds(
    tab: &::browser::Tab,
    mut observation: protocol::Observation,
    options: &::runtime::ActOptions,
) -> anyhow::Result<(Stats, protocol::Observation)> {
    let mut samples = Vec::new();
    for i in 0..23 {
        let load = observation
            .interactive_elements()
            .iter()
            .find(|e| e.name() == "Load")
            .map(|e| e.element().as_str().to_owned())
            .ok_or_else(|| anyhow::anyhow!("no Load on the load page"))?;
        let action = protocol::validate_action(&json!({
            "type": "click", "expected_frame_id": observation.frame_id().as_str(),
            "target": {"kind": "element", "ref": load}, "intent": "load"
        }))?;
        let outcome = tab.act(&action.into(), options).await?;
        observation = outcome
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
        let mut took = None;
        for _ in 0..100 {
            if let Some(ms) = observation
                .aria_snapshot()
                .split("loaded in ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|t| t.parse::<f64>().ok())
            {
                took = Some(ms);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            observation = tab.observe(&::runtime::ObserveOptions::default()).await?;
        }
        let took = took.ok_or_else(|| anyhow::anyhow!("the page never loaded"))?;
        if i >= 3 {
            samples.push(Duration::from_secs_f64(took / 1000.0));
        }
    }
    Ok((Stats::of(&mut samples), observation))
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
