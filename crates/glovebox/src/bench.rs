//! `glovebox bench`: the project's own measurements, reported as medians and percentiles.
//!
//! Benchmarks never run as part of `make test`; `make bench` runs them all.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use cdp::domains::runtime;
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
    };
    if args.json {
        let mut object: serde_json::Map<String, serde_json::Value> = results.iter().map(|(k, s)| (k.clone(), s.json())).collect();
        for (name, value) in &ratios {
            object.insert(name.clone(), json!(value));
        }
        println!("{}", serde_json::Value::Object(object));
    } else {
        for (name, stats) in &results {
            println!("{}", stats.line(name));
        }
        for (name, value) in &ratios {
            println!("{name:<48} {value:.3}");
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
        let tab = handle.conn.browser().create_page("about:blank", None).await?;
        let state = tab.call(runtime::Evaluate::value("document.readyState")).await?;
        anyhow::ensure!(state.result.value == Some(json!("complete")), "about:blank did not load");
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
    let tab = handle.conn.browser().create_page("about:blank", None).await?;
    for _ in 0..200 {
        tab.call(runtime::Evaluate::value("1+1")).await?;
    }
    let mut rtt = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let started = Instant::now();
        let reply = tab.call(runtime::Evaluate::value("1+1")).await?;
        rtt.push(started.elapsed());
        anyhow::ensure!(reply.result.value == Some(json!(2)), "1+1 evaluated to {:?}", reply.result.value);
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

async fn bench_observe(global: &Global, ratios: &mut Vec<(String, f64)>) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::browser::{ObserveOptions, Tab};
    let pages = crate::pages::LoopbackPages::serve(
        [("/login".to_owned(), crate::pages::LOGIN_PAGE.to_owned()), ("/big".to_owned(), crate::pages::big_page())].into(),
    )
    .await?;
    let handle = browser::open(global).await?;
    let mut results = Vec::new();
    for (path, n) in [("/login", 60usize), ("/big", 20)] {
        let tab = Tab::open(&handle.conn.browser(), None).await?;
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
        }
    }
    Ok(results)
}

async fn bench_act(global: &Global) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::browser::{ActOptions, ObserveOptions, Tab};
    let pages = crate::pages::LoopbackPages::serve([("/act".to_owned(), crate::pages::ACT_PAGE.to_owned())].into()).await?;
    let handle = browser::open(global).await?;
    let tab = Tab::open(&handle.conn.browser(), None).await?;
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
        let outcome = tab.act(&action, &options).await?;
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
        let outcome = tab.act(&action, &options).await?;
        let took = started.elapsed();
        anyhow::ensure!(outcome.receipt.state() == protocol::ReceiptState::Confirmed, "typing was verified");
        observation = outcome.observation.ok_or_else(|| anyhow::anyhow!("no observation after typing"))?;
        if i >= 3 {
            typing.push(took);
        }
    }
    Ok(vec![
        ("click + settle + fresh observation".to_owned(), Stats::of(&mut clicks)),
        ("type 100 chars + verify + fresh observation".to_owned(), Stats::of(&mut typing)),
    ])
}
