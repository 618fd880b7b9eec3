//! `glovebox mcp` over stdio, driven by the official Python MCP client (the venv comes from
//! `scripts/ensure-python-mcp.sh`; the scenarios live in crates/mcp/tests/client.py).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use test_support::FixtureServer;

pub fn python() -> PathBuf {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh");
    let out = Command::new(script)
        .output()
        .expect("run ensure-python-mcp.sh");
    assert!(
        out.status.success(),
        "ensure-python-mcp.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

async fn scenario(
    name: &str,
    data_dir: &std::path::Path,
    trust: &str,
    fixtures: &[String],
) -> Value {
    let mut command = tokio::process::Command::new(python());
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
        .arg(name);
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
    let out = tokio::time::timeout(std::time::Duration::from_secs(90), command.output())
        .await
        .expect("client finishes")
        .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_initialises_lists_tools_and_drives_a_form() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = crate::data_dir("mcp-stdio");

    let tools = scenario("tools", &data_dir, &fixtures.origin(), &[]).await;
    assert_eq!(tools["server"], "glovebox");
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "surfaces",
            "observe",
            "act",
            "tabs",
            "tab_open",
            "tab_close",
            "tab_claim",
            "tab_release",
            "tab_mark",
            "status",
            "cleanup",
            "context_reset",
            "gui_exec"
        ]
    );

    let flow = scenario(
        "flow",
        &data_dir,
        &fixtures.origin(),
        &[fixtures.url("/form.html")],
    )
    .await;
    assert_eq!(flow["clicked_error"], false, "{flow}");
    assert!(flow["welcome"].as_bool().unwrap(), "{flow}");
    assert_eq!(flow["stale"]["error"], "stale_observation");
    assert_eq!(fixtures.writes().len(), 1);
}

/// A client of `glovebox mcp` over stdio whose turn-complete hook runs `glovebox turn-end` as
/// its own child (the `turn_hook` scenario), driven line by line.
struct HookClient {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    kept: Value,
}

impl HookClient {
    async fn start(fixtures: &FixtureServer, data_dir: &std::path::Path) -> HookClient {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
            .arg("turn_hook")
            .args([
                "--fixture",
                &fixtures.url("/table.html"),
                "--fixture",
                &fixtures.url("/form.html"),
            ])
            .arg("--stdio")
            .arg(env!("CARGO_BIN_EXE_glovebox"))
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--trust", &fixtures.origin(), "mcp"])
            .env_remove("GLOVEBOX_BROWSER_ENDPOINT")
            .env("GLOVEBOX_CONFIG", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut client = HookClient {
            child,
            lines,
            kept: Value::Null,
        };
        client.kept = client.next().await["kept"].clone();
        client
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("the client answers")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// Runs the client's hook with `args`: its exit code, stdout and stderr.
    async fn hook(&mut self, args: &str) -> (i64, String, String) {
        self.send(&format!("hook {args}")).await;
        let ran = self.next().await;
        (
            ran["code"].as_i64().unwrap(),
            ran["stdout"].as_str().unwrap().to_owned(),
            ran["stderr"].as_str().unwrap().to_owned(),
        )
    }

    async fn tabs(&mut self) -> Value {
        self.send("tabs").await;
        self.next().await["tabs"].clone()
    }

    async fn done(mut self) {
        self.send("done").await;
        let status = tokio::time::timeout(std::time::Duration::from_secs(60), self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success());
    }
}

/// The turn end a client hook runs (`glovebox turn-end`, for Claude Code's `Stop` hook or Codex's
/// `notify`) ends the turn of that client only (issue 29: it ended every session on the data
/// directory). Two clients, each with its own stdio server on one data directory, two tabs each
/// (one marked): client A's hook closes A's unmarked tab and leaves B's tabs alone; B's hook
/// then ends B's. A hook run by a process that is no session's client ends nothing and says so;
/// a notification that is not a turn's end ends nothing; with no server running the hook does
/// nothing and succeeds; `--all` is a person's way to end every client's turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hook_ends_the_turn_of_its_own_client_only() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = crate::data_dir("mcp-turn-hook");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    // The test process runs this one: it is no session's client.
    let outside = |args: &[&str]| {
        let out = crate::glovebox(&data_dir)
            .arg("turn-end")
            .args(args)
            .env("GLOVEBOX_CONFIG", "/dev/null")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = outside(&[]);
    assert_eq!(
        code,
        Some(0),
        "no server: nothing to end, and a hook must not fail: {stderr}"
    );

    let mut a = HookClient::start(&fixtures, &data_dir).await;
    let mut b = HookClient::start(&fixtures, &data_dir).await;
    let (code, stdout, stderr) = outside(&[]);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), ""),
        "a process that is no client's ends nothing: {stderr}"
    );
    assert!(stderr.contains("nothing ended"), "{stderr}");

    let (code, stdout, stderr) = a.hook(r#"{"type":"approval-requested"}"#).await;
    assert_eq!(
        (code, stdout.as_str()),
        (0, ""),
        "not a turn's end: {stderr}"
    );
    let (code, stdout, stderr) = a
        .hook(r#"{"type":"agent-turn-complete","turn-id":"12"}"#)
        .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().count(),
        1,
        "one client's one session: {stdout}"
    );
    assert!(
        stdout.contains("turn_1: 1 closed, 0 released, 1 kept"),
        "{stdout}"
    );
    assert_eq!(a.tabs().await, serde_json::json!([a.kept.clone()]));
    assert_eq!(
        b.tabs().await.as_array().unwrap().len(),
        2,
        "the other client's turn goes on"
    );

    let (code, stdout, stderr) = b.hook("").await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("turn_1: 1 closed, 0 released, 1 kept"),
        "B's own first turn: {stdout}"
    );
    assert_eq!(b.tabs().await, serde_json::json!([b.kept.clone()]));

    let (code, _, stderr) = a.hook("--session session_nope").await;
    assert_eq!(code, 1, "an unknown session is named as such: {stderr}");
    assert!(
        stderr.contains("no running server has the session"),
        "{stderr}"
    );
    let (code, stdout, stderr) = outside(&["--all"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout.matches(" turn_2: ").count(),
        2,
        "a person's --all ends both clients' second turns: {stdout}"
    );
    a.done().await;
    b.done().await;
}

/// Issue 29: with `GLOVEBOX_LOG=debug` the MCP library logged every request whole, so a tool
/// call's arguments — text an agent types — reached the operator log. They never do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_logging_never_carries_a_tool_calls_arguments() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let data_dir = crate::data_dir("mcp-debug-log");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut child = tokio::process::Command::from(crate::glovebox(&data_dir))
        .arg("mcp")
        .env("GLOVEBOX_LOG", "debug")
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let marker = "typed-by-the-agent-4f2a9";
    for message in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "act", "arguments": {"action": {"type": "type", "expected_frame_id": "frame_00", "target": {"kind": "element", "ref": "e1"}, "text": marker, "intent": "t"}}}}),
    ] {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        if message.get("id") == Some(&serde_json::json!(2))
            || message.get("id") == Some(&serde_json::json!(1))
        {
            let want = message["id"].clone();
            loop {
                let line =
                    tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
                        .await
                        .unwrap()
                        .unwrap()
                        .unwrap();
                if serde_json::from_str::<serde_json::Value>(&line).is_ok_and(|v| v["id"] == want) {
                    break;
                }
            }
        }
    }
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("DEBUG"), "debug logging is on: {log:.400}");
    assert!(
        !log.contains(marker),
        "a tool call's arguments reached the log"
    );
}

/// A line-at-a-time JSON-RPC client of `glovebox mcp` over its stdio (the start-up itself is
/// under test, so the bytes on the pipe are what is checked).
struct Stdio {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Stdio {
    async fn call(&mut self, method: &str, params: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        self.next_id += 1;
        let id = self.next_id;
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        loop {
            let line =
                tokio::time::timeout(std::time::Duration::from_secs(60), self.lines.next_line())
                    .await
                    .expect("an answer in time")
                    .unwrap()
                    .expect("the server is still running");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn notify(&mut self, method: &str) {
        use tokio::io::AsyncWriteExt;
        let line = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": {}});
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }
}

/// Issue 36: `initialize` is answered at once while Chromium starts in the background (every MCP
/// client waits for that answer before anything else). A start that fails answers the call that
/// needed the browser `backend_unavailable` with its reason, and the next call starts it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_does_not_wait_for_chromium_and_a_failed_start_is_tried_again() {
    use tokio::io::AsyncBufReadExt;
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = crate::data_dir("mcp-background-start");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let chromium = cdp::launch::find_chromium(None).unwrap();
    // A Chromium whose first two starts (a start is tried twice) fail, the first after a pause.
    let count = data_dir.join("starts");
    let failed = data_dir.join("first-start-failed");
    let script = data_dir.join("chromium-failing-twice");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(cat '{count}' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '{count}'\nif [ $n -eq 1 ]; then sleep 3; touch '{failed}'; exit 1; fi\nif [ $n -eq 2 ]; then exit 1; fi\nexec '{chromium}' \"$@\"\n",
            count = count.display(),
            failed = failed.display(),
            chromium = chromium.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_glovebox"))
        .arg("--data-dir")
        .arg(data_dir.join("data"))
        .arg("--trust")
        .arg(fixtures.origin())
        .arg("mcp")
        .env_remove("GLOVEBOX_BROWSER_ENDPOINT")
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .env("GLOVEBOX_CHROMIUM", &script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut mcp = Stdio {
        child,
        lines,
        next_id: 0,
    };
    let init = mcp
        .call(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "glovebox", "{init}");
    // (The start may not even have run the script yet: nothing waits for it.)
    assert!(
        !failed.exists(),
        "answered while the browser's first start was still under way"
    );
    mcp.notify("notifications/initialized").await;
    let page = fixtures.url("/counter.html");
    let first = mcp
        .call(
            "tools/call",
            serde_json::json!({"name": "tab_open", "arguments": {"url": page}}),
        )
        .await;
    assert_eq!(first["result"]["isError"], true, "{first}");
    let header: Value =
        serde_json::from_str(first["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(header["error"], "backend_unavailable", "{first}");
    assert!(
        first["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("the browser did not start"),
        "the reason is told: {first}"
    );
    let second = mcp
        .call(
            "tools/call",
            serde_json::json!({"name": "tab_open", "arguments": {"url": page}}),
        )
        .await;
    assert_eq!(second["result"]["isError"], false, "{second}");
    let header: Value =
        serde_json::from_str(second["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(header["opened"], "s1", "{second}");
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "3");
}
