//! Faults a real user meets: the server SIGKILLed mid-task. The next server on the same data
//! directory reconciles every record the dead one left into a terminal or recoverable state,
//! says so, and removes its stale discovery file (which held a person token).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::Value;
use store::Store as _;
use test_support::FixtureServer;

use crate::{data_dir, glovebox};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process that is killed if the test fails before it ends it.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `glovebox serve` on a fresh port; returns the child and what it printed up to "Stop with".
fn serve(dir: &Path, trust: &str) -> (Reaped, u16, String) {
    let port = free_port();
    let mut child = glovebox(dir)
        .args(["--trust", trust, "serve", "--bind", &format!("127.0.0.1:{port}")])
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("Stop with") {
            break;
        }
    }
    assert!(printed.contains("listening"), "serve did not start: {printed}");
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Reaped(child), port, printed)
}

fn discovery(dir: &Path, pid: u32) -> PathBuf {
    dir.join("approvals").join(format!("{pid}.json"))
}

/// One HTTP request to the person channel with the token from the discovery file.
fn person_post(dir: &Path, pid: u32, path: &str, body: &Value) -> Value {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(discovery(dir, pid)).unwrap()).unwrap();
    let base = file["url"].as_str().unwrap().strip_prefix("http://").unwrap().to_owned();
    let mut stream = std::net::TcpStream::connect(&base).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {base}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        file["token"].as_str().unwrap(),
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap()
}

fn kill(child: &mut Reaped, signal: i32) {
    // SAFETY: a signal to a process this test spawned.
    unsafe { libc::kill(child.0.id() as libc::pid_t, signal) };
    child.0.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_server_leaves_nothing_that_never_ends() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir("/", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"));
    let dir = data_dir("faults-sigkill");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let (mut first, port, _) = serve(&dir, &fixtures.origin());
    let first_pid = first.0.id();
    person_post(&dir, first_pid, "/api/user-tabs", &serde_json::json!({"url": fixtures.url("/counter.html")}));
    // A client mid-task: a claimed tab, a deliverable, an unmarked tab, an unanswered approval.
    let untrusted = fixtures.url("/form.html").replace("127.0.0.1", "localhost");
    let mut client = Reaped(
        std::process::Command::new(crate::mcp::python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
            .args(["hold", "--url", &format!("http://127.0.0.1:{port}/mcp")])
            .args(["--fixture", &fixtures.url("/table.html"), "--fixture", &fixtures.url("/login.html"), "--fixture", &untrusted])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    let mut from_client = BufReader::new(client.0.stdout.take().unwrap());
    from_client.read_line(&mut line).unwrap();
    let held: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(held["pending"]["error"], "needs_approval", "{held}");
    assert_eq!(held["marked"]["mark"], "deliverable", "{held}");
    assert_eq!(held["typed"]["receipt_state"], "confirmed", "{held}");

    // Freeze the browser and send an action: its answer never comes, and the server dies with
    // it in flight (recorded `attempted` before anything was sent).
    let browser: Vec<u32> = processes_mentioning(&dir.display().to_string()).into_iter().filter(|p| *p != first_pid).collect();
    assert!(!browser.is_empty(), "the server's browser runs");
    signal_all(&browser, libc::SIGSTOP);
    let mut to_client = client.0.stdin.take().unwrap();
    writeln!(to_client).unwrap();
    line.clear();
    from_client.read_line(&mut line).unwrap();
    assert!(line.contains("sent"), "{line}");
    let db = dir.join("glovebox.sqlite");
    let in_flight = (0..100).any(|_| {
        let ops = store::SqliteStore::open(&db).unwrap().list_operations(&Default::default()).unwrap();
        let found = ops.iter().any(|o| o.operation.action == "click" && o.state == store::OperationState::Attempted);
        if !found {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        found
    });
    assert!(in_flight, "the click is on record before its answer");

    kill(&mut first, libc::SIGKILL);
    signal_all(&browser, libc::SIGKILL);
    drop(client);
    assert!(discovery(&dir, first_pid).exists(), "a SIGKILLed server cannot remove its own file");

    let (mut second, _, printed) = serve(&dir, &fixtures.origin());
    assert!(
        printed.contains("reconciled 1 earlier server(s) that ended without cleaning up: 1 session(s) abandoned, 1 tab(s) closed, 1 given back, 1 kept for the person, 1 approval(s) abandoned, 1 action(s) in flight recorded unknown (not replayed), 0 run(s) abandoned"),
        "{printed}"
    );
    assert!(!discovery(&dir, first_pid).exists(), "the dead server's person token is gone");
    kill(&mut second, libc::SIGTERM);

    // Every record of the dead server is terminal or recoverable; the second ended in order.
    let store = store::SqliteStore::open(dir.join("glovebox.sqlite")).unwrap();
    assert!(store.open_instances().unwrap().is_empty(), "both instances ended");
    let sessions = store.list_sessions().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!((sessions[0].state, sessions[0].tools_active), (store::SessionState::Abandoned, false));
    let resources = store.list_resources(&sessions[0].id).unwrap();
    let states: Vec<_> = resources.iter().map(|r| (r.ownership, r.mark, r.state, r.cdp_target_id.is_some())).collect();
    // The deliverable is kept for a restore; the unmarked tab and the blank tab of the refused
    // open are closed.
    assert_eq!(states[0], (store::Ownership::AgentCreated, store::Mark::Deliverable, store::ResourceState::Retained, false));
    assert_eq!(states[1..], [(store::Ownership::AgentCreated, store::Mark::None, store::ResourceState::Released, false); 2]);
    assert!(resources[0].handle_lost);
    let given_back: Vec<_> = store.list_unowned_resources().unwrap().into_iter().filter(|r| r.claimed_at.is_some()).collect();
    assert_eq!(given_back.len(), 1, "the claimed tab went back to the person");
    assert_eq!((given_back[0].state, given_back[0].ownership), (store::ResourceState::Released, store::Ownership::User));
    let approvals = store.list_approvals(&sessions[0].id).unwrap();
    assert_eq!(approvals.iter().map(|a| a.outcome).collect::<Vec<_>>(), [Some(store::ApprovalOutcome::Abandoned)]);
    assert_eq!(approvals[0].request.action, "navigate");

    // The operation log, as a person reads it after the crash: the typed email as its length
    // only, the click whose answer was lost as unknown; nothing was replayed.
    let log = glovebox(&dir).args(["log", "--json"]).env("GLOVEBOX_CONFIG", "/dev/null").output().unwrap();
    assert!(log.status.success());
    let entries: Vec<Value> = String::from_utf8_lossy(&log.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let op = |action: &str| entries.iter().find(|e| e["kind"] == "operation" && e["action"] == action).unwrap_or_else(|| panic!("no {action} in {entries:?}"));
    assert_eq!((op("type")["state"].as_str(), op("type")["text_chars"].as_u64()), (Some("confirmed"), Some(25)));
    assert_eq!((op("click")["state"].as_str(), op("click")["effect_uncertain"].as_bool()), (Some("unknown"), Some(true)));
    assert!(op("click")["target"].as_str().is_some_and(|t| t.contains("Sign in")), "{entries:?}");
    let refused = entries.iter().find(|e| e["kind"] == "operation" && e["action"] == "navigate" && e["error"] == "needs_approval");
    assert!(refused.is_some(), "the open that waited for a person is on record: {entries:?}");
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(!text.contains("ada-typed-7f3"), "typed text never reaches the log");
    let mut file = std::fs::read(&db).unwrap();
    file.extend(std::fs::read(dir.join("glovebox.sqlite-wal")).unwrap_or_default());
    assert!(!String::from_utf8_lossy(&file).contains("ada-typed-7f3"), "nor the store");
    assert!(fixtures.writes().iter().all(|w| !w.path.contains("login")), "the lost click was not replayed: {:?}", fixtures.writes());
}

fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).contains(needle) && String::from_utf8_lossy(&cmdline).contains("chrom") {
            pids.push(pid);
        }
    }
    pids
}

fn signal_all(pids: &[u32], signal: i32) {
    for pid in pids {
        // SAFETY: signalling the browser processes of a server this test spawned.
        unsafe { libc::kill(*pid as libc::pid_t, signal) };
    }
}
