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
        format!(
            "{name:<44} median {:>9.3} ms   p90 {:>9.3} ms   p99 {:>9.3} ms   (n={})",
            ms(self.median),
            ms(self.p90),
            ms(self.p99),
            self.n
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(global: &Global, args: BenchArgs) -> anyhow::Result<ExitCode> {
    let results = match args.what {
        BenchTarget::Cdp => bench_cdp(global, args.iterations).await?,
    };
    if args.json {
        let object: serde_json::Map<String, serde_json::Value> = results.iter().map(|(k, s)| (k.clone(), s.json())).collect();
        println!("{}", serde_json::Value::Object(object));
    } else {
        for (name, stats) in &results {
            println!("{}", stats.line(name));
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
