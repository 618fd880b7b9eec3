//! `bench desktop`: the X11 adapter on a stack of its own (Xvfb, a session bus with AT-SPI, the
//! GTK test app the desktop tests use): stack start-up, observation of the test app and of a
//! window of about 1,000 accessible nodes, click round trips with verification, and the
//! input-to-event latency the application itself logs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::desktop::{DesktopAdapter, DesktopConfig, Stack, StackOptions};
use protocol::{ExtendedAction, ImageMime, Observation, ReceiptState};
use surface::{ActOptions, ObserveOptions, Surface, SurfaceAdapter};

use super::*;

/// The test app, shipped inside the binary so a release build can measure it anywhere.
const APP: &str = include_str!("../../../desktop/tests/apps/gtk_app.py");

/// Lines the app logged (one JSON object each).
fn events(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn start_stack() -> anyhow::Result<Stack> {
    Stack::start(&StackOptions::default()).map_err(|e| {
        anyhow::anyhow!("the desktop stack did not start: {e} (make deps installs its packages)")
    })
}

/// Starts the app (with `extra` arguments) and attaches to its window once its tree shows a
/// control named `marker`.
async fn start_app(
    stack: &mut Stack,
    adapter: &DesktopAdapter,
    title: &str,
    extra: &[&str],
    marker: &str,
) -> anyhow::Result<(Arc<dyn Surface>, PathBuf)> {
    let script = stack.runtime_dir.join("gtk_app.py");
    std::fs::write(&script, APP)?;
    let log = stack
        .runtime_dir
        .join(format!("{}.log", title.replace(' ', "_")));
    let mut app = stack.command("/usr/bin/python3");
    app.arg(&script)
        .args(["--title", title, "--x", "10", "--y", "10"])
        .args(extra)
        .env("GLOVEBOX_APP_LOG", &log);
    stack.spawn(app)?;
    let started = Instant::now();
    loop {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "the app window {title:?} did not appear with its tree (is python3-gi installed? make deps)"
        );
        let listed = adapter.list().await?;
        if let Some(w) = listed.iter().find(|w| w.title == title) {
            let surface = adapter.attach(w.id.clone(), None).await?;
            if let Ok(o) = surface.observe(&ObserveOptions::default()).await
                && o.aria_snapshot().contains(marker)
            {
                return Ok((surface, log));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn adapter_for(stack: &Stack) -> DesktopAdapter {
    DesktopAdapter::new(DesktopConfig {
        display: stack.display.clone(),
        session_bus: Some(stack.session_bus.clone()),
        foreground_input: true,
    })
}

fn action(value: serde_json::Value) -> anyhow::Result<ExtendedAction> {
    Ok(serde_json::from_value(value)?)
}

fn element(o: &Observation, name: &str) -> anyhow::Result<String> {
    o.interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .map(|e| e.element().as_str().to_owned())
        .ok_or_else(|| anyhow::anyhow!("no control named {name:?}"))
}

pub(super) async fn bench_desktop(iterations: usize) -> anyhow::Result<Vec<(String, Stats)>> {
    let mut results = Vec::new();

    // Start-up: Xvfb + session bus; then the whole way to an app window read through AT-SPI.
    let mut bare = Vec::new();
    let mut ready = Vec::new();
    for i in 0..iterations {
        let started = Instant::now();
        let mut stack = start_stack()?;
        bare.push(started.elapsed());
        let adapter = adapter_for(&stack);
        adapter.connect().await?;
        start_app(
            &mut stack,
            &adapter,
            &format!("Start {i}"),
            &[],
            "textbox \"Name\"",
        )
        .await?;
        ready.push(started.elapsed());
    }
    results.push((
        "stack start-up: Xvfb + session bus".to_owned(),
        Stats::of(&mut bare),
    ));
    results.push((
        "stack start-up → app window read via AT-SPI".to_owned(),
        Stats::of(&mut ready),
    ));

    let mut stack = start_stack()?;
    let adapter = adapter_for(&stack);
    adapter.connect().await?;
    let (app, log) = start_app(&mut stack, &adapter, "Bench app", &[], "textbox \"Name\"").await?;

    // Observe: the tree alone, and the tree with a JPEG of the window.
    let shot = ObserveOptions {
        screenshot: Some(ImageMime::Jpeg),
        ..ObserveOptions::default()
    };
    for (name, options) in [
        ("observe test app: AT-SPI tree", ObserveOptions::default()),
        ("observe test app: tree + JPEG screenshot", shot.clone()),
    ] {
        let mut samples = Vec::new();
        for _ in 0..40 {
            let started = Instant::now();
            app.observe(&options).await?;
            samples.push(started.elapsed());
        }
        results.push((name.to_owned(), Stats::of(&mut samples)));
    }

    // Click round trip with verification: a checkbox by ref (AT-SPI action, its checked state
    // read back) and a canvas point by XTest (occlusion and focus checks), each to the fresh
    // observation the action returns.
    let mut o = app.observe(&ObserveOptions::default()).await?;
    let mut by_ref = Vec::new();
    for _ in 0..30 {
        let check = element(&o, "Subscribe")?;
        let click = action(
            json!({"type": "click", "expected_frame_id": o.frame_id().as_str(),
            "target": {"kind": "element", "ref": check}, "intent": "toggle"}),
        )?;
        let started = Instant::now();
        let out = app.act(&click, &ActOptions::default()).await?;
        by_ref.push(started.elapsed());
        anyhow::ensure!(
            out.receipt.state() == ReceiptState::Confirmed,
            "the checkbox click was not confirmed: {:?}",
            out.receipt
        );
        o = out
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
    }
    results.push((
        "click by ref (AT-SPI), verified, fresh observation".to_owned(),
        Stats::of(&mut by_ref),
    ));
    let mut by_point = Vec::new();
    let presses = |log: &Path| {
        events(log)
            .iter()
            .filter(|e| e["event"] == "canvas_press")
            .count()
    };
    let before = presses(&log);
    for _ in 0..30 {
        let click = action(
            json!({"type": "click", "expected_frame_id": o.frame_id().as_str(),
            "target": {"kind": "point", "x": 200, "y": 300}, "intent": "press the canvas"}),
        )?;
        let started = Instant::now();
        let out = app.act(&click, &ActOptions::default()).await?;
        by_point.push(started.elapsed());
        o = out
            .observation
            .ok_or_else(|| anyhow::anyhow!("no observation after the click"))?;
    }
    let started = Instant::now();
    while presses(&log) < before + 30 && started.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::ensure!(
        presses(&log) >= before + 30,
        "the app saw {} of 30 canvas presses",
        presses(&log) - before
    );
    results.push((
        "click at a point (XTest), checked, fresh observation".to_owned(),
        Stats::of(&mut by_point),
    ));

    // Input to event: an XTest press sent on the display, to the app's own log line of it.
    let window = u32::from_str_radix(
        app.id()
            .rsplit_once(":0x")
            .map(|(_, w)| w)
            .unwrap_or_default(),
        16,
    )?;
    let display = ::desktop::x11::Display::connect(&stack.display)?;
    let rect = display
        .now(|c| Ok(c.facts(window)))?
        .ok_or_else(|| anyhow::anyhow!("the window is gone"))?
        .rect;
    let (x, y) = (rect.x + 200, rect.y + 300);
    let mut latency = Vec::new();
    for _ in 0..40 {
        let seen = presses(&log);
        let sent = std::time::SystemTime::now();
        display
            .run(move |c| {
                c.move_to(x, y)?;
                c.button(::desktop::x11::Button::LEFT, true)?;
                c.flush()
            })
            .await?;
        let started = Instant::now();
        let t = loop {
            if let Some(e) = events(&log)
                .iter()
                .filter(|e| e["event"] == "canvas_press")
                .nth(seen)
            {
                break e["t"].as_f64();
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(5),
                "the app never logged the press"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        display
            .run(|c| {
                c.button(::desktop::x11::Button::LEFT, false)?;
                c.flush()
            })
            .await?;
        let sent = sent.duration_since(std::time::UNIX_EPOCH)?.as_secs_f64();
        if let Some(t) = t {
            latency.push(Duration::from_secs_f64((t - sent).max(0.0)));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    results.push((
        "input → event (XTest press → the app's log)".to_owned(),
        Stats::of(&mut latency),
    ));

    // A window of about 1,000 accessible nodes.
    let (big, _) = start_app(
        &mut stack,
        &adapter,
        "Big app",
        &["--grid", "1000"],
        "\"Cell 999\"",
    )
    .await?;
    let first = big.observe(&ObserveOptions::default()).await?;
    let nodes = first.aria_snapshot().lines().count();
    let mut samples = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        big.observe(&shot).await?;
        samples.push(started.elapsed());
    }
    results.push((
        format!("observe 1,000-checkbox window (snapshot cut at {nodes} lines): tree + JPEG"),
        Stats::of(&mut samples),
    ));
    drop(stack);
    Ok(results)
}
