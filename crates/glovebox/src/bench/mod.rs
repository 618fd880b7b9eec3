//! `glovebox bench`: the project's own measurements, reported as medians and percentiles.
//!
//! Benchmarks never run as part of `make test`; `make bench` runs them all. By what they
//! measure: `surfaces.rs` (CDP, the protocol, observe, act), `overheads.rs` (the store, the
//! runtime's overheads, restore), `host.rs` (the host API, the console's live view),
//! `models.rs` (a model-driven run against the providers' reference loops), `desktop.rs` (the X11
//! adapter on a stack of its own), `script.rs` (gui_exec against act calls, the sandbox's
//! start-up), `vm.rs` (QEMU guests: image, boot, round trips, two guests at once).

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::browser;
use crate::cli::{BenchArgs, BenchTarget, Global};

mod desktop;
mod host;
mod models;
mod overheads;
mod script;
mod surfaces;
mod vm;

use desktop::bench_desktop;
use host::{bench_console, bench_host};
use models::bench_agent;
use overheads::{bench_restore, bench_runtime, bench_sessions, bench_store};
use surfaces::{bench_act, bench_cdp, bench_observe, bench_protocol};

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
        Stats {
            n: samples.len(),
            median: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            min: at(0.0),
        }
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
        let (unit, scale) = if self.median < Duration::from_millis(1) {
            ("µs", 1000.0)
        } else {
            ("ms", 1.0)
        };
        format!(
            "{name:<48} median {:>9.3} {unit}   p90 {:>9.3} {unit}   p99 {:>9.3} {unit}   (n={})",
            ms(self.median) * scale,
            ms(self.p90) * scale,
            ms(self.p99) * scale,
            self.n
        )
    }
}

/// The configured settings (one resolution for every command), and their runtime configuration
/// with the bench's loopback pages trusted (R1), so nothing waits for a person.
fn trusting(
    global: &Global,
    pages: &crate::pages::LoopbackPages,
) -> anyhow::Result<(crate::config::Settings, ::runtime::RuntimeConfig)> {
    let settings = crate::config::resolve(global, None)?;
    let mut config = settings.runtime.clone();
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&pages.url("/"))?);
    Ok((settings, config))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(global: &Global, args: BenchArgs) -> anyhow::Result<ExitCode> {
    // A benchmark's runtimes keep their state in a directory of their own under the data
    // directory, removed when it ends: a benchmark neither reads the person's store nor leaves
    // anything in it (kept tabs of earlier runs, restored into the next, made `bench runtime`
    // time out). `bench vm` keeps using the data directory for its cached guest images.
    let scratch = (!matches!(args.what, BenchTarget::Vm))
        .then(|| crate::config::resolve(global, None))
        .transpose()?
        .map(|settings| {
            settings
                .runtime
                .data_dir
                .join("bench")
                .join(format!("run-{}", std::process::id()))
        });
    let mut own = global.clone();
    if let Some(dir) = &scratch {
        let _ = std::fs::remove_dir_all(dir);
        own.data_dir = Some(dir.clone());
    }
    let measured = measure(&own, &args).await;
    if let Some(dir) = &scratch {
        let _ = std::fs::remove_dir_all(dir);
    }
    let (results, ratios) = measured?;
    if args.json {
        let mut object: serde_json::Map<String, serde_json::Value> =
            results.iter().map(|(k, s)| (k.clone(), s.json())).collect();
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

/// Named figures, and ratios between them.
type Measured = (Vec<(String, Stats)>, Vec<(String, f64)>);

async fn measure(global: &Global, args: &BenchArgs) -> anyhow::Result<Measured> {
    let mut ratios = Vec::new();
    let results = match args.what {
        BenchTarget::Cdp => bench_cdp(global, args.iterations).await?,
        BenchTarget::Protocol => bench_protocol()?,
        BenchTarget::Observe => bench_observe(global, &mut ratios).await?,
        BenchTarget::Act => bench_act(global).await?,
        BenchTarget::Runtime => bench_runtime(global, &mut ratios).await?,
        BenchTarget::Store => bench_store(global, &mut ratios)?,
        BenchTarget::Sessions => bench_sessions(global, &mut ratios).await?,
        BenchTarget::Restore => bench_restore(global, args.iterations).await?,
        BenchTarget::Host => bench_host(global, &mut ratios).await?,
        BenchTarget::Console => bench_console(global, &mut ratios).await?,
        BenchTarget::Agent => bench_agent(global, args.iterations, &mut ratios).await?,
        BenchTarget::Desktop => bench_desktop(args.iterations).await?,
        BenchTarget::Script => script::bench_script(global, args.iterations, &mut ratios).await?,
        BenchTarget::Vm => vm::bench_vm(global, args.iterations, &mut ratios).await?,
    };
    Ok((results, ratios))
}

/// A realistic mid-size page: a shop's listing with navigation, filters and twelve products.
const STORE_PAGE: &str = include_str!("../../../browser/tests/fixtures/store.html");
