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
    BufReader::new(client.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let held: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(held["pending"]["error"], "needs_approval", "{held}");
    assert_eq!(held["marked"]["mark"], "deliverable", "{held}");

    kill(&mut first, libc::SIGKILL);
    drop(client);
    assert!(discovery(&dir, first_pid).exists(), "a SIGKILLed server cannot remove its own file");

    let (mut second, _, printed) = serve(&dir, &fixtures.origin());
    assert!(
        printed.contains("reconciled 1 earlier server(s) that ended without cleaning up: 1 session(s) abandoned, 1 tab(s) closed, 1 given back, 1 kept for the person, 1 approval(s) abandoned"),
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
}
