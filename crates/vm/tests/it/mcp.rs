//! A guest's screen through MCP over streamable HTTP, with the official Python MCP client as
//! the agent: a person offers the guest over the host API, the client claims it, sees it in the
//! turn's surfaces as a guest screen, observes it with its image, and clicks once the person
//! grants the guest; the guest's own log proves what arrived.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use runtime::{ApprovalDecision, Runtime, RuntimeConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::fixture;

fn python() -> PathBuf {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh");
    let out = std::process::Command::new(script)
        .output()
        .expect("run ensure-python-mcp.sh");
    assert!(
        out.status.success(),
        "ensure-python-mcp.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_claims_a_guest_a_person_offered_and_clicks_in_it() {
    let f = fixture();
    let _a = f.a.lock.lock().await;
    let guest = f.a.client();
    crate::probe(&guest, "probe-alpha").await;
    let data_dir = crate::tempdir().join("mcp");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).expect("data dir");
    let adapter = Arc::new(vm::VmAdapter::new(vec![f.a.config()]));
    let runtime = Runtime::start(RuntimeConfig::new(&data_dir), adapter)
        .await
        .expect("the runtime starts on the VM adapter");
    let server = server::serve(
        runtime.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse().expect("addr"),
            mcp: mcp::McpOptions::default(),
            ..server::HttpOptions::default()
        },
    )
    .await
    .expect("serve");
    // The person lists the surfaces over the host API and offers the guest.
    let http = reqwest::Client::new();
    let base = &server.person.base_url;
    let listed: Value = http
        .get(format!("{base}/api/surfaces"))
        .bearer_auth(&server.person.token)
        .send()
        .await
        .expect("surfaces")
        .json()
        .await
        .expect("json");
    let entry = listed["surfaces"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["surface"] == "vm:alpha"))
        .unwrap_or_else(|| panic!("no guest listed: {listed}"));
    assert_eq!(entry["kind"], "vm_screen", "{listed}");
    let offered = http
        .post(format!("{base}/api/user-tabs"))
        .bearer_auth(&server.person.token)
        .json(&json!({"surface": "vm:alpha"}))
        .send()
        .await
        .expect("offer");
    assert!(offered.status().is_success(), "{:?}", offered.text().await);

    let before = guest.log().await.expect("log").len();
    let mut child = tokio::process::Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
        .arg("vm")
        .arg("--url")
        .arg(server.mcp_url())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the python client");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(90), lines.next_line())
            .await
            .expect("the client answers")
            .expect("read")
            .expect("the client exited early");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let first = next().await;
    let surface = &first["surfaces"]["surfaces"][0];
    assert_eq!(surface["kind"], "vm_screen", "{first}");
    assert_eq!(surface["aliases"][0], "guest:1", "{first}");
    assert_eq!(first["images"], json!(["image/png"]), "{first}");
    assert!(
        first["observed"]
            .as_str()
            .is_some_and(|s| s.contains("window \"probe-alpha\"")),
        "{first}"
    );
    // The first write waits for a person, and nothing reached the guest meanwhile.
    assert_eq!(first["pending"]["error"], "needs_approval", "{first}");
    assert_eq!(guest.log().await.expect("log").len(), before);
    let pending = runtime.pending_approvals();
    let asked = pending.first().expect("an approval is pending");
    assert_eq!(asked.origin, "vm://alpha");
    runtime
        .resolve_approval(&asked.approval_id, ApprovalDecision::ApproveForTask)
        .expect("grant");
    let stdin = child.stdin.as_mut().expect("stdin");
    stdin.write_all(b"granted\n").await.expect("write");
    stdin.flush().await.expect("flush");
    let second = next().await;
    assert_eq!(second["clicked"]["receipt_state"], "dispatched", "{second}");
    assert_eq!(second["stale"]["error"], "stale_observation", "{second}");
    assert_eq!(second["navigate"]["error"], "capability_denied", "{second}");
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("client exits")
        .expect("status");
    assert!(status.success());
    let log = guest.log().await.expect("log");
    assert_eq!(log.len(), before + 1, "exactly the one click: {log:?}");
    assert!(log[before].points.contains(&[81, 91]), "{log:?}");
    runtime.shutdown(Duration::from_secs(2)).await;
    drop(server);
}
