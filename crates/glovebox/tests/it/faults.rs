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
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
    serve_with(dir, trust, &[])
}

/// [`serve`] with more arguments to `serve`.
fn serve_with(dir: &Path, trust: &str, more: &[&str]) -> (Reaped, u16, String) {
    serve_env(dir, trust, more, &[])
}

/// [`serve_with`] with more environment.
fn serve_env(
    dir: &Path,
    trust: &str,
    more: &[&str],
    env: &[(&str, &str)],
) -> (Reaped, u16, String) {
    let port = free_port();
    let mut child = glovebox(dir)
        .args([
            "--trust",
            trust,
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
        ])
        .args(more)
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .envs(env.iter().copied())
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
    assert!(
        printed.contains("listening"),
        "serve did not start: {printed}"
    );
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Reaped(child), port, printed)
}

/// The data directory's MCP token, which `serve` requires by default.
fn mcp_token(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("mcp-token"))
        .unwrap()
        .trim()
        .to_owned()
}

fn discovery(dir: &Path, pid: u32) -> PathBuf {
    dir.join("approvals").join(format!("{pid}.json"))
}

/// One HTTP POST to the person channel with the token from the discovery file.
fn person_post(dir: &Path, pid: u32, path: &str, body: &Value) -> Value {
    person(dir, pid, "POST", path, &body.to_string())
}

/// One HTTP request to the person channel with the token from the discovery file.
fn person(dir: &Path, pid: u32, method: &str, path: &str, body: &str) -> Value {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(discovery(dir, pid)).unwrap()).unwrap();
    let base = file["url"]
        .as_str()
        .unwrap()
        .strip_prefix("http://")
        .unwrap()
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&base).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {base}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let dir = data_dir("faults-sigkill");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let (mut first, port, _) = serve(&dir, &fixtures.origin());
    let first_pid = first.0.id();
    person_post(
        &dir,
        first_pid,
        "/api/user-tabs",
        &serde_json::json!({"url": fixtures.url("/counter.html")}),
    );
    // A client mid-task: a claimed tab, a deliverable, an unmarked tab, an unanswered approval.
    let untrusted = fixtures.url("/form.html").replace("127.0.0.1", "localhost");
    let mut client = Reaped(
        std::process::Command::new(crate::mcp::python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
            .args(["hold", "--url", &format!("http://127.0.0.1:{port}/mcp")])
            .args(["--token", &mcp_token(&dir)])
            .args([
                "--fixture",
                &fixtures.url("/table.html"),
                "--fixture",
                &fixtures.url("/login.html"),
                "--fixture",
                &untrusted,
            ])
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
    let browser: Vec<u32> = processes_mentioning(&dir.display().to_string())
        .into_iter()
        .filter(|p| *p != first_pid)
        .collect();
    assert!(!browser.is_empty(), "the server's browser runs");
    signal_all(&browser, libc::SIGSTOP);
    let mut to_client = client.0.stdin.take().unwrap();
    writeln!(to_client).unwrap();
    line.clear();
    from_client.read_line(&mut line).unwrap();
    assert!(line.contains("sent"), "{line}");
    let db = dir.join("glovebox.sqlite");
    let in_flight = (0..100).any(|_| {
        let ops = store::SqliteStore::open(&db)
            .unwrap()
            .list_operations(&Default::default())
            .unwrap();
        let found = ops
            .iter()
            .any(|o| o.operation.action == "click" && o.state == store::OperationState::Attempted);
        if !found {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        found
    });
    assert!(in_flight, "the click is on record before its answer");

    kill(&mut first, libc::SIGKILL);
    signal_all(&browser, libc::SIGKILL);
    drop(client);
    assert!(
        discovery(&dir, first_pid).exists(),
        "a SIGKILLed server cannot remove its own file"
    );

    let (mut second, _, printed) = serve(&dir, &fixtures.origin());
    assert!(
        printed.contains("reconciled 1 earlier server(s) that ended without cleaning up: 1 session(s) abandoned, 1 tab(s) closed, 1 given back, 1 kept for the person, 1 approval(s) abandoned, 1 action(s) in flight recorded unknown (not replayed), 0 run(s) abandoned"),
        "{printed}"
    );
    assert!(
        !discovery(&dir, first_pid).exists(),
        "the dead server's person token is gone"
    );
    kill(&mut second, libc::SIGTERM);

    // Every record of the dead server is terminal or recoverable; the second ended in order.
    let store = store::SqliteStore::open(dir.join("glovebox.sqlite")).unwrap();
    assert!(
        store.open_instances().unwrap().is_empty(),
        "both instances ended"
    );
    let sessions = store.list_sessions().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(
        (sessions[0].state, sessions[0].tools_active),
        (store::SessionState::Abandoned, false)
    );
    let resources = store.list_resources(&sessions[0].id).unwrap();
    let states: Vec<_> = resources
        .iter()
        .map(|r| (r.ownership, r.mark, r.state, r.cdp_target_id.is_some()))
        .collect();
    // The deliverable is kept for a restore; the unmarked tab is closed. The blank tab of the open
    // that waited for a person left no row (issue 35: a tab that never came to be is nobody's).
    assert_eq!(
        states[0],
        (
            store::Ownership::AgentCreated,
            store::Mark::Deliverable,
            store::ResourceState::Retained,
            false
        )
    );
    assert_eq!(
        states[1..],
        [(
            store::Ownership::AgentCreated,
            store::Mark::None,
            store::ResourceState::Released,
            false
        )]
    );
    assert!(resources[0].handle_lost);
    let given_back: Vec<_> = store
        .list_unowned_resources()
        .unwrap()
        .into_iter()
        .filter(|r| r.claimed_at.is_some())
        .collect();
    assert_eq!(
        given_back.len(),
        1,
        "the claimed tab went back to the person"
    );
    assert_eq!(
        (given_back[0].state, given_back[0].ownership),
        (store::ResourceState::Released, store::Ownership::User)
    );
    let approvals = store.list_approvals(&sessions[0].id).unwrap();
    assert_eq!(
        approvals.iter().map(|a| a.outcome).collect::<Vec<_>>(),
        [Some(store::ApprovalOutcome::Abandoned)]
    );
    assert_eq!(approvals[0].request.action, "navigate");

    // The operation log, as a person reads it after the crash: the typed email as its length
    // only, the click whose answer was lost as unknown; nothing was replayed.
    let log = glovebox(&dir)
        .args(["log", "--json"])
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert!(log.status.success());
    let entries: Vec<Value> = String::from_utf8_lossy(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let op = |action: &str| {
        entries
            .iter()
            .find(|e| e["kind"] == "operation" && e["action"] == action)
            .unwrap_or_else(|| panic!("no {action} in {entries:?}"))
    };
    assert_eq!(
        (
            op("type")["state"].as_str(),
            op("type")["text_chars"].as_u64()
        ),
        (Some("confirmed"), Some(25))
    );
    assert_eq!(
        (
            op("click")["state"].as_str(),
            op("click")["effect_uncertain"].as_bool()
        ),
        (Some("unknown"), Some(true))
    );
    assert!(
        op("click")["target"]
            .as_str()
            .is_some_and(|t| t.contains("Remember me")),
        "{entries:?}"
    );
    let refused = entries.iter().find(|e| {
        e["kind"] == "operation" && e["action"] == "navigate" && e["error"] == "needs_approval"
    });
    assert!(
        refused.is_some(),
        "the open that waited for a person is on record: {entries:?}"
    );
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(
        !text.contains("ada-typed-7f3"),
        "typed text never reaches the log"
    );
    let mut file = std::fs::read(&db).unwrap();
    file.extend(std::fs::read(dir.join("glovebox.sqlite-wal")).unwrap_or_default());
    assert!(
        !String::from_utf8_lossy(&file).contains("ada-typed-7f3"),
        "nor the store"
    );
    assert!(
        fixtures.writes().iter().all(|w| !w.path.contains("login")),
        "the lost click was not replayed: {:?}",
        fixtures.writes()
    );
}

fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle)
            && String::from_utf8_lossy(&cmdline).contains("chrom")
        {
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

/// What a client scenario printed (its one JSON line), after it exits.
fn scenario(name: &str, token: &str, port: u16, fixtures: &[String]) -> Value {
    let mut command = std::process::Command::new(crate::mcp::python());
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
        .args([name, "--url", &format!("http://127.0.0.1:{port}/mcp")])
        .args(["--token", token]);
    for f in fixtures {
        command.args(["--fixture", f]);
    }
    let out = command.stderr(Stdio::inherit()).output().unwrap();
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default(),
    )
    .unwrap()
}

/// The `keep` client scenario against a server: it keeps tabs for the person, prints what it
/// holds, and waits to be killed with its server.
fn keep_client(port: u16, token: &str, kept: &[String]) -> (Reaped, Value) {
    let mut client = Reaped(
        std::process::Command::new(crate::mcp::python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/client.py"))
            .args(["keep", "--url", &format!("http://127.0.0.1:{port}/mcp")])
            .args(["--token", token])
            .args(kept.iter().flat_map(|k| ["--fixture", k.as_str()]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(client.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let held: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    (client, held)
}

/// Polls the person channel's tab list until `done` holds (or 20 s pass); returns the last list.
fn tabs_until(dir: &Path, pid: u32, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let tabs = person(dir, pid, "GET", "/api/tabs", "")["tabs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if done(&tabs) || std::time::Instant::now() > until {
            return tabs;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The seed's restart contract (`004_…` 浏览器重启恢复): three tabs kept for the person — one
/// navigated later to a URL with a query and a fragment, one opened with a `?token=`, one the
/// person closes. After a SIGKILL of the server, the next one brings the two back at their last
/// confirmed URLs with their cookies and local storage, the closed one stays closed, the token
/// is in no record, and a frame id from before is refused; after a kill of the browser alone the
/// same happens without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_tabs_come_back_after_a_sigkill_and_after_the_browser_dies() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.html(
        "/keep",
        "<!doctype html><title>Kept</title><p id=c></p><p id=l></p><script>\
         if (!document.cookie.includes('site=')) document.cookie = 'site=tok-7a1; max-age=3600; path=/';\
         localStorage.n = String(Number(localStorage.n || 0) + 1);\
         document.getElementById('c').textContent = 'cookie ' + (document.cookie || 'none');\
         document.getElementById('l').textContent = 'visits ' + localStorage.n;</script>",
    );
    fixtures.html(
        "/other",
        "<!doctype html><title>Other</title><p>other page</p>",
    );
    let dir = data_dir("faults-restore");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (mut first, port, _) = serve(&dir, &fixtures.origin());
    let first_pid = first.0.id();
    let later = fixtures.url("/keep?page=2&sort=asc#part");
    let kept = [
        fixtures.url("/keep"),
        fixtures.url("/keep?token=SECRETVALUE123abc"),
        fixtures.url("/other"),
        later.clone(),
    ];
    let (client, held) = keep_client(port, &mcp_token(&dir), &kept);
    let old_frame = held["old_frame"]
        .as_str()
        .unwrap_or_else(|| panic!("{held}"))
        .to_owned();

    // The person closes one; the location of the navigated one is on record.
    let tabs = tabs_until(&dir, first_pid, |t| {
        t.iter()
            .any(|t| t["url"].as_str().is_some_and(|u| u.contains("page=")))
    });
    let url_of = |t: &Value| t["url"].as_str().unwrap_or_default().to_owned();
    let other = tabs
        .iter()
        .find(|t| url_of(t).contains("/other"))
        .unwrap_or_else(|| panic!("{tabs:?}"))["tab"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        person(
            &dir,
            first_pid,
            "POST",
            &format!("/api/tabs/{other}/close"),
            "{}"
        )["closed"],
        other.as_str()
    );
    let navigated = tabs.iter().find(|t| url_of(t).contains("page=")).unwrap()["tab"]
        .as_str()
        .unwrap()
        .to_owned();

    let browser: Vec<u32> = processes_mentioning(&dir.display().to_string())
        .into_iter()
        .filter(|p| *p != first_pid)
        .collect();
    kill(&mut first, libc::SIGKILL);
    signal_all(&browser, libc::SIGKILL);
    drop(client);

    let (mut second, port, _) = serve(&dir, &fixtures.origin());
    let second_pid = second.0.id();
    let open = |t: &[Value]| t.iter().filter(|t| t["state"] == "open").count() == 2;
    let tabs = tabs_until(&dir, second_pid, open);
    assert!(open(&tabs), "two kept tabs are open again: {tabs:?}");
    let state_of = |tabs: &[Value], id: &str| {
        tabs.iter()
            .find(|t| t["tab"] == id)
            .map(|t| t["state"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(
        state_of(&tabs, &other).as_deref(),
        Some("closed"),
        "the closed one stays closed: {tabs:?}"
    );
    let failed: Vec<_> = tabs
        .iter()
        .filter(|t| t["state"] == "restore_failed")
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "the blank one is listed as restore failed, not recreated: {tabs:?}"
    );
    assert!(
        failed[0]["restore_error"]
            .as_str()
            .is_some_and(|e| e.contains("can be reopened")),
        "{failed:?}"
    );
    let store = store::SqliteStore::open(dir.join("glovebox.sqlite")).unwrap();
    let record = store
        .get_resource(&store::ResourceId::new(&navigated))
        .unwrap();
    assert_eq!(
        record.url.as_deref(),
        Some(fixtures.url("/keep?page=2&sort=asc#part").as_str()),
        "its last confirmed URL, query and fragment kept"
    );
    let titled = tabs_until(&dir, second_pid, |t| {
        t.iter()
            .any(|t| t["tab"] == navigated.as_str() && t["title"] == "Kept")
    });
    assert!(
        titled
            .iter()
            .any(|t| t["tab"] == navigated.as_str() && t["title"] == "Kept"),
        "its title with it: {titled:?}"
    );
    let mut bytes = std::fs::read(dir.join("glovebox.sqlite")).unwrap();
    bytes.extend(std::fs::read(dir.join("glovebox.sqlite-wal")).unwrap_or_default());
    assert!(
        !String::from_utf8_lossy(&bytes).contains("SECRETVALUE123abc"),
        "the token is in no record"
    );
    for file in std::fs::read_dir(dir.join("webtabs")).unwrap().flatten() {
        assert!(
            !std::fs::read_to_string(file.path())
                .unwrap()
                .contains("SECRETVALUE123abc"),
            "nor in the saved site storage"
        );
    }

    let check = |seen: &Value| {
        let pages = seen["pages"].as_array().unwrap_or_else(|| panic!("{seen}"));
        assert_eq!(pages.len(), 2, "both kept tabs are offered again: {seen}");
        for page in pages {
            let text = page["page"].as_str().unwrap_or_default();
            assert!(
                text.contains("cookie site=tok-7a1"),
                "its cookie survived: {text}"
            );
            let visits: u32 = text
                .split("visits ")
                .nth(1)
                .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            assert!(
                visits >= 2,
                "its local storage survived (a fresh one counts 1): {text}"
            );
        }
        assert!(
            seen["stale"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e == "stale_observation"),
            "a frame from before is refused: {seen}"
        );
    };
    // Kept by a session that is gone, with its cookies: nobody's to claim until the person
    // offers them (issue 29: a new client claimed them with no person involved).
    let unoffered = person(&dir, second_pid, "GET", "/api/user-tabs", "");
    assert_eq!(
        unoffered["user_tabs"].as_array().map(Vec::len),
        Some(0),
        "no session may claim a restored kept tab yet: {unoffered}"
    );
    for t in tabs.iter().filter(|t| t["state"] == "open") {
        let id = t["tab"].as_str().unwrap();
        assert_eq!(t["offerable"], true, "the console offers it: {t}");
        let offered = person(
            &dir,
            second_pid,
            "POST",
            &format!("/api/tabs/{id}/offer"),
            "{}",
        );
        assert_eq!(offered["offered"], id, "{offered}");
    }
    let token = mcp_token(&dir);
    let t = token.clone();
    let seen = tokio::task::spawn_blocking(move || scenario("restored", &t, port, &[old_frame]))
        .await
        .unwrap();
    check(&seen);
    let restored_at = |tabs: &[Value], id: &str| {
        tabs.iter()
            .find(|t| t["tab"] == id)
            .and_then(|t| t["restored_at"].as_u64())
            .unwrap_or(0)
    };
    let before = restored_at(&tabs_until(&dir, second_pid, |_| true), &navigated);

    // The browser alone dies: the server relaunches it and brings the kept tabs back.
    let browser: Vec<u32> = processes_mentioning(&dir.display().to_string())
        .into_iter()
        .filter(|p| *p != second_pid)
        .collect();
    signal_all(&browser, libc::SIGKILL);
    let tabs = tabs_until(&dir, second_pid, |t| {
        restored_at(t, &navigated) > before && open(t)
    });
    assert!(
        restored_at(&tabs, &navigated) > before && open(&tabs),
        "restored again without a restart: {tabs:?}"
    );
    assert_eq!(state_of(&tabs, &other).as_deref(), Some("closed"));
    let frame = seen["pages"][0]["frame"].as_str().unwrap().to_owned();
    let again = tokio::task::spawn_blocking(move || scenario("restored", &token, port, &[frame]))
        .await
        .unwrap();
    check(&again);
    kill(&mut second, libc::SIGTERM);
}

/// The status of an MCP `initialize` POSTed to a server's `/mcp`, with `token` if given.
fn mcp_initialize_status(port: u16, token: Option<&str>) -> u16 {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
    })
    .to_string();
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{authorization}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

/// Issue 29: `serve` let every local process call MCP (and so drive the agent's browser), and
/// printed the person token to whatever read its output. It requires the data directory's
/// token by default (made once, 0600, the same at the next start, shown in the printed client
/// config); `--no-token` opens it on loopback for a person who decides so; the person token is
/// printed only to a terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_requires_its_token_by_default_and_prints_the_person_token_only_to_a_terminal() {
    use std::os::unix::fs::PermissionsExt;
    let dir = data_dir("serve-token");
    let _ = std::fs::remove_file(dir.join("mcp-token"));
    let trust = "http://127.0.0.1:9";
    let (mut first, port, printed) = serve(&dir, trust);
    let token = mcp_token(&dir);
    let mode = std::fs::metadata(dir.join("mcp-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        printed.contains(&format!("\"Authorization\": \"Bearer {token}\"")),
        "the client config carries the header: {printed}"
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(discovery(&dir, first.0.id())).unwrap())
            .unwrap();
    let person_token = file["token"].as_str().unwrap();
    assert!(
        !printed.contains(person_token),
        "the person token went to a pipe: {printed}"
    );
    assert_eq!(mcp_initialize_status(port, None), 401);
    assert_eq!(mcp_initialize_status(port, Some("not-the-token")), 401);
    assert_eq!(mcp_initialize_status(port, Some(&token)), 200);
    kill(&mut first, libc::SIGTERM);

    let (mut second, port, printed) = serve_with(&dir, trust, &["--no-token"]);
    assert!(printed.contains("without a token"), "{printed}");
    assert_eq!(mcp_initialize_status(port, None), 200);
    kill(&mut second, libc::SIGTERM);
    assert_eq!(
        mcp_token(&dir),
        token,
        "the token stays the data directory's"
    );
    let refused = glovebox(&dir)
        .args(["serve", "--bind", "0.0.0.0:1", "--no-token"])
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("loopback addresses only"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// Issue 34: three instances on one PostgreSQL database, each with its own data directory and
/// browser. The first keeps tabs for a person and is SIGKILLed with its browser; of the two
/// left, exactly one takes its sessions over (after the takeover time without a heartbeat) and
/// brings the kept tabs back in its own browser — each tab open in exactly one browser — where
/// a person offers them and a new session claims them; a frame from before is refused. No
/// record is lost: the dead instance's operations are in the shared log, none left in flight.
/// An instance that stalls past the takeover time is taken over as well and, running again,
/// is fenced: it reports not ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_instance_is_taken_over_once_by_another_on_the_same_database() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.html(
        "/keep",
        "<!doctype html><title>Kept</title><p>kept page</p>",
    );
    fixtures.html(
        "/other",
        "<!doctype html><title>Other</title><p>other page</p>",
    );
    let url = test_support::postgres::server().fresh_url("takeover-serve");
    let root = data_dir("shared-store");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        "[store]\nheartbeat_ms = 200\ntakeover_after_seconds = 2\n",
    )
    .unwrap();
    let env = [
        ("GLOVEBOX_STORE", url.as_str()),
        ("GLOVEBOX_CONFIG", config.to_str().unwrap()),
    ];
    let dirs: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| root.join(n)).collect();
    let (mut a, a_port, _) = serve_env(&dirs[0], &fixtures.origin(), &[], &env);
    let (mut b, b_port, _) = serve_env(&dirs[1], &fixtures.origin(), &[], &env);
    let (mut c, c_port, _) = serve_env(&dirs[2], &fixtures.origin(), &[], &env);
    let pids = [a.0.id(), b.0.id(), c.0.id()];
    let ports = [a_port, b_port, c_port];

    let later = fixtures.url("/keep?page=2");
    let kept = [
        fixtures.url("/keep"),
        fixtures.url("/keep?token=SECRETVALUE123abc"),
        fixtures.url("/other"),
        later.clone(),
    ];
    let (client, held) = keep_client(a_port, &mcp_token(&dirs[0]), &kept);
    let old_frame = held["old_frame"]
        .as_str()
        .unwrap_or_else(|| panic!("{held}"))
        .to_owned();
    tabs_until(&dirs[0], pids[0], |t| {
        t.iter()
            .any(|t| t["url"].as_str().is_some_and(|u| u.contains("page=")))
    });

    let browser: Vec<u32> = processes_mentioning(&dirs[0].display().to_string())
        .into_iter()
        .filter(|p| *p != pids[0])
        .collect();
    let killed = std::time::Instant::now();
    kill(&mut a, libc::SIGKILL);
    signal_all(&browser, libc::SIGKILL);
    drop(client);

    // Each kept tab that can be reopened comes back in exactly one of the two browsers.
    // (Their cookies and storage stay in the dead instance's data directory.)
    let open_on = |i: usize| -> Vec<String> {
        person(&dirs[i], pids[i], "GET", "/api/tabs", "")["tabs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|t| t["state"] == "open")
            .map(|t| t["tab"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(40);
    let (on_b, on_c) = loop {
        let (on_b, on_c) = (open_on(1), open_on(2));
        if on_b.len() + on_c.len() >= 3 || std::time::Instant::now() > until {
            break (on_b, on_c);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let took = killed.elapsed();
    eprintln!(
        "takeover: the kept tabs were open again {} ms after the SIGKILL (takeover after 2 s, heartbeat 200 ms)",
        took.as_millis()
    );
    // The navigated one, the one with a token and the other; the blank one has no address.
    assert_eq!(on_b.len() + on_c.len(), 3, "b {on_b:?} c {on_c:?}");
    assert!(
        on_b.is_empty() || on_c.is_empty(),
        "one instance took the sessions over, not both: b {on_b:?} c {on_c:?}"
    );
    // Stays so: the other never restores them too.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(open_on(1).len() + open_on(2).len(), 3);
    let host = if on_b.is_empty() { 2 } else { 1 };

    // The records: the dead instance ended as abandoned, its operations are all in the shared
    // log with an outcome, the token is in none of them.
    let shared = store::PgStore::connect(&url).unwrap();
    let open = shared.open_instances().unwrap();
    assert_eq!(open.len(), 2, "{open:?}");
    let log = glovebox(&dirs[1])
        .args(["log", "--json"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        log.status.success(),
        "{}",
        String::from_utf8_lossy(&log.stderr)
    );
    let text = String::from_utf8_lossy(&log.stdout);
    let operations: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "operation")
        .collect();
    assert_eq!(
        operations.len(),
        4,
        "three opened pages and one navigation: {text}"
    );
    assert!(
        operations.iter().all(|o| o["state"] != "attempted"),
        "none left in flight: {text}"
    );
    assert!(!text.contains("SECRETVALUE123abc"), "{text}");

    // The session moves: a person offers the kept tabs on the instance that has them, and a
    // new session there claims them; a frame from before is refused.
    for id in open_on(host) {
        let offered = person(
            &dirs[host],
            pids[host],
            "POST",
            &format!("/api/tabs/{id}/offer"),
            "{}",
        );
        assert_eq!(offered["offered"], id.as_str(), "{offered}");
    }
    let token = mcp_token(&dirs[host]);
    let port = ports[host];
    let seen =
        tokio::task::spawn_blocking(move || scenario("restored", &token, port, &[old_frame]))
            .await
            .unwrap();
    let pages = seen["pages"].as_array().unwrap_or_else(|| panic!("{seen}"));
    assert_eq!(
        pages.len(),
        3,
        "the kept tabs are claimed by the new session: {seen}"
    );
    assert!(
        seen["stale"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e == "stale_observation"),
        "a frame from before is refused: {seen}"
    );

    // An instance that stalls past the takeover time (SIGSTOP) is taken over too, and when it
    // runs again it finds itself ended: it serves nothing more and says so.
    let (idle, idle_port) = if host == 1 {
        (&mut c, ports[2])
    } else {
        (&mut b, ports[1])
    };
    // SAFETY: signals to a process this test spawned.
    unsafe { libc::kill(idle.0.id() as libc::pid_t, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_millis(3500));
    unsafe { libc::kill(idle.0.id() as libc::pid_t, libc::SIGCONT) };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let ready = loop {
        let answer = http_get(idle_port, "/readyz");
        if answer.contains(" 503 ") || std::time::Instant::now() > until {
            break answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        ready.contains(" 503 ") && ready.contains("another instance took"),
        "a fenced instance reports not ready: {ready}"
    );
    assert_eq!(
        shared.open_instances().unwrap().len(),
        1,
        "only the host is left running on the database"
    );
    kill(&mut b, libc::SIGTERM);
    kill(&mut c, libc::SIGTERM);
}

/// One plain HTTP GET on loopback: the status line and the body.
fn http_get(port: u16, path: &str) -> String {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let _ = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}
