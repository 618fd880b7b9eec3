//! MCP overhead: the same `observe` of the form fixture as a direct runtime call, through the MCP
//! server over a byte stream with a minimal raw JSON-RPC client (what the server itself adds:
//! framing, dispatch, serialisation, untrusted markers), and over streamable HTTP with the Python
//! SDK as client (what a real client sees, the SDK's own cost included).
//! `cargo run --release -p mcp --example overhead`. A measurement, not a test: nothing is asserted.

use std::path::PathBuf;
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use browser::ObserveOptions;
use runtime::{Runtime, RuntimeConfig};
use test_support::FixtureServer;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let iterations = 50;
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = std::env::temp_dir().join("glovebox-mcp-overhead");
    // The fixtures' origin is trusted, as `--trust` makes it: opening it needs no approval.
    let mut config = RuntimeConfig::new(&data_dir);
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&fixtures.origin()).expect("an origin"));
    let runtime = Runtime::start(config, browser::Chromium::local(&data_dir))
        .await
        .expect("runtime");

    let session = runtime.create_session().await.unwrap();
    runtime
        .open_tab(
            &session,
            &fixtures.url("/form.html"),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();

    // The same over MCP on an in-process byte stream (as stdio carries it), raw JSON-RPC lines.
    let (client_io, server_io) = tokio::io::duplex(1 << 22);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(mcp::stdio::serve_io(
        runtime.clone(),
        mcp::McpOptions {
            rate: Some(mcp::RateLimit::UNLIMITED),
            ..Default::default()
        },
        (server_read, server_write),
    ));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let mut next_id = 0;
    let mut rpc =
        async |method: &str, params: serde_json::Value, notify: bool| -> serde_json::Value {
            let mut message =
                serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
            if !notify {
                next_id += 1;
                message["id"] = next_id.into();
            }
            client_write
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
            if notify {
                return serde_json::Value::Null;
            }
            loop {
                let line = lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the server answers");
                let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
                if reply["id"] == next_id {
                    return reply;
                }
            }
        };
    let init = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "overhead", "version": "0"}});
    rpc("initialize", init, false).await;
    rpc("notifications/initialized", serde_json::json!({}), true).await;
    let opened = rpc(
        "tools/call",
        serde_json::json!({"name": "tab_open", "arguments": {"url": fixtures.url("/form.html")}}),
        false,
    )
    .await;
    assert!(opened["result"]["isError"] != true, "{opened}");
    // Alternate the two so a noisy machine's drift hits both alike.
    let mut direct = Vec::new();
    let mut stdio = Vec::new();
    for i in 0..iterations + 5 {
        let t = Instant::now();
        let o = runtime
            .observe(&session, None, &ObserveOptions::default())
            .await
            .unwrap();
        // What the tool does besides the call: serialise the observation.
        let _ = serde_json::to_string(&o).unwrap();
        if i >= 5 {
            direct.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let t = Instant::now();
        let reply = rpc(
            "tools/call",
            serde_json::json!({"name": "observe", "arguments": {}}),
            false,
        )
        .await;
        if i >= 5 {
            stdio.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        assert!(reply["result"]["isError"] != true, "{reply}");
    }
    // A click on the counter page with its fresh observation, as a direct runtime call: the
    // runtime's one path (checks, records, guard) without any transport.
    let direct_tab = runtime.create_session().await.unwrap();
    runtime
        .open_tab(
            &direct_tab,
            &fixtures.url("/counter.html"),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    let mut frame = runtime
        .observe(&direct_tab, None, &ObserveOptions::default())
        .await
        .unwrap();
    let mut clicks = Vec::new();
    for i in 0..iterations + 3 {
        let add = frame
            .interactive_elements()
            .iter()
            .find(|e| e.name() == "Add one")
            .unwrap()
            .element()
            .as_str()
            .to_owned();
        let action = protocol::validate_extended_action(&serde_json::json!({
            "type": "click", "expected_frame_id": frame.frame_id().as_str(),
            "target": {"kind": "element", "ref": add}, "intent": "count"
        }))
        .unwrap();
        let t = Instant::now();
        let outcome = runtime
            .act(
                &direct_tab,
                None,
                &action,
                &runtime::ActOptions::default(),
                std::time::Duration::ZERO,
            )
            .await
            .unwrap();
        if i >= 3 {
            clicks.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        frame = outcome.observation.unwrap();
    }
    clicks.sort_by(f64::total_cmp);
    let mut paired: Vec<f64> = stdio.iter().zip(&direct).map(|(m, d)| m - d).collect();
    paired.sort_by(f64::total_cmp);
    direct.sort_by(f64::total_cmp);
    stdio.sort_by(f64::total_cmp);
    // Both halves gone: the server reads end of stream and closes its session.
    drop(client_write);
    drop(lines);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), serving).await;

    let server = server::serve(
        runtime.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let python = std::process::Command::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh"),
    )
    .output()
    .unwrap();
    let python = String::from_utf8(python.stdout).unwrap();
    let out = tokio::process::Command::new(python.trim())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/client.py"))
        .args([
            "bench",
            "--url",
            &server.mcp_url(),
            "--fixture",
            &fixtures.url("/form.html"),
            "--iterations",
            &iterations.to_string(),
        ])
        .output()
        .await
        .unwrap();
    let mcp: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let median = direct[direct.len() / 2];
    println!(
        "click on counter.html with its fresh observation, a direct runtime call  median {:.2} ms  p90 {:.2} ms",
        clicks[clicks.len() / 2],
        clicks[clicks.len() * 9 / 10]
    );
    println!("observe form.html, {iterations} iterations");
    println!(
        "  direct runtime call  median {median:.2} ms  p90 {:.2} ms",
        direct[direct.len() * 9 / 10]
    );
    let stdio_median = stdio[stdio.len() / 2];
    println!(
        "  via MCP (byte stream as stdio, raw JSON-RPC client)  median {stdio_median:.2} ms  p90 {:.2} ms",
        stdio[stdio.len() * 9 / 10]
    );
    println!(
        "  MCP server overhead (median difference)  {:.2} ms",
        stdio_median - median
    );
    println!(
        "  MCP server overhead (median of paired differences)  {:.2} ms",
        paired[paired.len() / 2]
    );
    println!(
        "  via MCP (HTTP, Python SDK client)  median {:.2} ms  p90 {:.2} ms",
        mcp["observe_ms_median"].as_f64().unwrap(),
        mcp["observe_ms_p90"].as_f64().unwrap()
    );
    println!(
        "  MCP overhead seen by the Python SDK over HTTP (median difference)  {:.2} ms",
        mcp["observe_ms_median"].as_f64().unwrap() - median
    );
    server.shutdown().await.unwrap();
}
