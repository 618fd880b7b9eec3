//! MCP overhead: the same `observe` of the form fixture through MCP (streamable HTTP, the Python
//! SDK as client) and as a direct runtime call. `cargo run --release -p mcp --example overhead`.
//! A measurement, not a test: nothing is asserted.

use std::path::PathBuf;
use std::time::Instant;

use browser::ObserveOptions;
use runtime::{Runtime, RuntimeConfig};
use test_support::FixtureServer;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations = 50;
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir("/", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"));
    let data_dir = std::env::temp_dir().join("glovebox-mcp-overhead");
    let runtime = Runtime::start(RuntimeConfig::new(&data_dir)).await.expect("runtime");

    let session = runtime.create_session().await.unwrap();
    runtime.open_tab(&session, &fixtures.url("/form.html")).await.unwrap();
    let mut direct = Vec::new();
    for i in 0..iterations + 5 {
        let t = Instant::now();
        let o = runtime.observe(&session, None, &ObserveOptions::default()).await.unwrap();
        // What the tool does besides the call: serialise the observation.
        let _ = serde_json::to_string(&o).unwrap();
        if i >= 5 {
            direct.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    direct.sort_by(f64::total_cmp);

    let server = mcp::serve_http(runtime.clone(), mcp::HttpOptions { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() }).await.unwrap();
    let python = std::process::Command::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh")).output().unwrap();
    let python = String::from_utf8(python.stdout).unwrap();
    let out = tokio::process::Command::new(python.trim())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/client.py"))
        .args(["bench", "--url", &server.mcp_url(), "--fixture", &fixtures.url("/form.html"), "--iterations", &iterations.to_string()])
        .output()
        .await
        .unwrap();
    let mcp: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let median = direct[direct.len() / 2];
    println!("observe form.html, {iterations} iterations");
    println!("  direct runtime call  median {median:.2} ms  p90 {:.2} ms", direct[direct.len() * 9 / 10]);
    println!("  via MCP (HTTP, Python SDK client)  median {:.2} ms  p90 {:.2} ms", mcp["observe_ms_median"].as_f64().unwrap(), mcp["observe_ms_p90"].as_f64().unwrap());
    println!("  MCP overhead (median difference)  {:.2} ms", mcp["observe_ms_median"].as_f64().unwrap() - median);
    server.shutdown().await.unwrap();
}
