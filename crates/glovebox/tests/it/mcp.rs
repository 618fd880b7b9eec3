//! `glovebox mcp` over stdio, driven by the official Python MCP client (the venv comes from
//! `scripts/ensure-python-mcp.sh`; the scenarios live in crates/mcp/tests/client.py).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use test_support::FixtureServer;

pub fn python() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh");
    let out = Command::new(script).output().expect("run ensure-python-mcp.sh");
    assert!(out.status.success(), "ensure-python-mcp.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

async fn scenario(name: &str, data_dir: &std::path::Path, trust: &str, fixtures: &[String]) -> Value {
    let mut command = tokio::process::Command::new(python());
    command.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py")).arg(name);
    for f in fixtures {
        command.arg("--fixture").arg(f);
    }
    command
        .arg("--stdio")
        .arg(env!("CARGO_BIN_EXE_glovebox"))
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--trust")
        .arg(trust)
        .arg("mcp")
        .env_remove("GLOVEBOX_BROWSER_ENDPOINT")
        .env("GLOVEBOX_CONFIG", "/dev/null");
    let out = tokio::time::timeout(std::time::Duration::from_secs(90), command.output()).await.expect("client finishes").unwrap();
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(stdout.lines().next().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_initialises_lists_tools_and_drives_a_form() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir("/", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"));
    let data_dir = crate::data_dir("mcp-stdio");

    let tools = scenario("tools", &data_dir, &fixtures.origin(), &[]).await;
    assert_eq!(tools["server"], "glovebox");
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["surfaces", "observe", "act", "tabs", "tab_open", "tab_close", "tab_claim", "tab_release", "tab_mark", "status", "cleanup"]);

    let flow = scenario("flow", &data_dir, &fixtures.origin(), &[fixtures.url("/form.html")]).await;
    assert_eq!(flow["clicked_error"], false, "{flow}");
    assert!(flow["welcome"].as_bool().unwrap(), "{flow}");
    assert_eq!(flow["stale"]["error"], "stale_observation");
    assert_eq!(fixtures.writes().len(), 1);
}
