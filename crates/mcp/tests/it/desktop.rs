//! The desktop through MCP: a real X server and session bus, the GTK test app, a runtime on the
//! desktop adapter served over streamable HTTP, and the official Python MCP client as the agent.
//! A person offers the window over the host API; the client claims it, sees it in the turn's
//! surfaces as a window with its input routes, and fills and submits the app's form after the
//! person grants the app — the app's own log proves what arrived.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use desktop::{DesktopAdapter, DesktopConfig, Stack, StackOptions};
use mcp::McpOptions;
use runtime::{ApprovalDecision, Runtime, RuntimeConfig};
use serde_json::{Value, json};
use server::HttpOptions;

use crate::Client;

fn events(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A stack with the GTK test app titled `title`, a runtime on its display served over HTTP, and
/// the app's window offered by the person over the host API.
struct DesktopEnv {
    stack: Stack,
    runtime: Runtime,
    server: server::HttpServer,
    log: PathBuf,
}

/// A request to the person's host API (with the person token).
async fn person_http(
    server: &server::HttpServer,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let addr = server.local_addr;
    crate::raw_http(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            server.person.token,
            body.len()
        ),
    )
    .await
}

async fn desktop_env(name: &str, title: &str) -> DesktopEnv {
    let mut stack = Stack::start(&StackOptions::default())
        .unwrap_or_else(|e| panic!("the desktop stack did not start: {e}"));
    let log = stack.runtime_dir.join("app.log");
    let mut app = stack.command("/usr/bin/python3");
    app.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../desktop/tests/apps/gtk_app.py"))
        .args(["--title", title])
        .env("GLOVEBOX_APP_LOG", &log);
    stack.spawn(app).unwrap();
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let adapter = Arc::new(DesktopAdapter::new(DesktopConfig {
        display: stack.display.clone(),
        session_bus: Some(stack.session_bus.clone()),
        foreground_input: true,
    }));
    let runtime = Runtime::start(RuntimeConfig::new(&data_dir), adapter)
        .await
        .expect("the runtime starts on the desktop");
    let server = server::serve(
        runtime.clone(),
        HttpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            mcp: McpOptions::default(),
            ..HttpOptions::default()
        },
    )
    .await
    .expect("serve");

    // The person lists the display's windows over the host API and offers the app's.
    let started = Instant::now();
    let window = loop {
        let (status, body) = person_http(&server, "GET", "/api/surfaces", None).await;
        assert_eq!(status, 200, "{body}");
        let listed: Value = serde_json::from_str(&body).unwrap();
        let found = listed["surfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["title"] == title)
            .cloned();
        if let Some(w) = found
            && w["input"] == json!(["background_ax", "foreground_input"])
            && events(&log).iter().any(|e| e["event"] == "ready")
        {
            assert_eq!(w["kind"], "x11_window");
            break w["surface"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no window: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (status, body) = person_http(
        &server,
        "POST",
        "/api/user-tabs",
        Some(json!({"surface": window})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    DesktopEnv {
        stack,
        runtime,
        server,
        log,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_claims_a_window_a_person_offered_and_fills_its_form() {
    let DesktopEnv {
        stack,
        runtime,
        server,
        log,
    } = desktop_env("desktop-mcp", "MCP app").await;
    let mut client = Client::start("desktop", &["--url".into(), server.mcp_url()], &[]);
    let first = client.next().await;
    assert_eq!(
        first["offered"].as_array().map(Vec::len),
        Some(1),
        "{first}"
    );
    let entry = &first["surfaces"]["surfaces"][0];
    assert_eq!(entry["kind"], "x11_window", "{first}");
    assert_eq!(entry["aliases"][0], "window:1", "{first}");
    assert_eq!(
        entry["input"],
        json!(["background_ax", "foreground_input"]),
        "{first}"
    );
    assert!(
        first["observed"]
            .as_str()
            .is_some_and(|s| s.contains("button \"Submit\"")),
        "{first}"
    );
    // The first write to the app waits for a person.
    assert_eq!(first["pending"]["error"], "needs_approval", "{first}");
    let pending = runtime.pending_approvals();
    let asked = pending.first().expect("an approval is pending");
    assert_eq!(asked.origin, "app://gtk-app.py");
    runtime
        .resolve_approval(&asked.approval_id, ApprovalDecision::ApproveForTask)
        .unwrap();
    client.send("granted").await;

    let second = client.next().await;
    assert_eq!(second["typed"]["receipt_state"], "confirmed", "{second}");
    assert_eq!(second["clicked"]["receipt_state"], "confirmed", "{second}");
    assert_eq!(second["stale"]["error"], "stale_observation", "{second}");
    // A window is never navigated: it was offered without that capability.
    assert_eq!(second["navigate"]["error"], "capability_denied", "{second}");
    client.finish().await;
    let started = Instant::now();
    while !events(&log)
        .iter()
        .any(|e| e["event"] == "submit" && e["text"] == "Ada")
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the app never saw the submit: {:?}",
            events(&log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    runtime.shutdown(Duration::from_secs(2)).await;
    drop(server);
    drop(stack);
}

/// The console in a real browser shows the offered window and its live view through the same
/// person-view path as a tab's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_a_window_and_its_live_view() {
    let env = desktop_env("desktop-console", "Console app").await;
    let person = crate::console::Person::open(
        "desktop",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until(
            "the window is listed with a preview",
            "[...document.querySelectorAll('.row')].some(r => r.textContent.includes('Console app') && r.querySelector('[data-action=preview]'))",
        )
        .await;
    person
        .eval("[...document.querySelectorAll('.row')].find(r => r.textContent.includes('Console app')).querySelector('[data-action=preview]').click()")
        .await;
    person
        .until(
            "the window's live view shows an image",
            "(() => { const i = document.getElementById('preview-img'); return !i.hidden && i.complete && i.naturalWidth > 0 && document.getElementById('frame-label').textContent === 'live'; })()",
        )
        .await;
    // The image is the window (the app asked for 420×360), not the whole 1280×800 screen.
    let size = person
        .eval("(() => { const i = document.getElementById('preview-img'); return [i.naturalWidth, i.naturalHeight]; })()")
        .await;
    let (w, h) = (size[0].as_u64().unwrap(), size[1].as_u64().unwrap());
    assert!(
        (400..=600).contains(&w) && (300..=500).contains(&h),
        "{size}"
    );
    person.shot("desktop-live-view").await;
    env.runtime.shutdown(Duration::from_secs(2)).await;
    drop(env.server);
    drop(env.stack);
}

/// `gui_exec` drives a desktop window the same way as a tab: the broker reaches the window only
/// through the runtime (the adapter seam), the app grant is asked of a person exactly as for
/// `act`, and the app's own log proves what arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gui_exec_script_fills_and_submits_a_desktop_window() {
    let env = desktop_env("desktop-gui-exec", "Script app").await;
    let runtime = env.runtime.clone();
    let session = runtime.create_session().await.unwrap();
    let offered = runtime.user_tabs().unwrap();
    runtime
        .claim_tab(&session, offered[0].tab.as_str())
        .await
        .unwrap();
    // A person grants the app while the script waits at its first write.
    let approver = {
        let runtime = runtime.clone();
        tokio::spawn(async move {
            for _ in 0..300 {
                if let Some(r) = runtime.pending_approvals().first() {
                    runtime
                        .resolve_approval(&r.approval_id, ApprovalDecision::ApproveForTask)
                        .unwrap();
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            false
        })
    };
    let code = r#"
import re
w = ui.page()
obs = None
for _ in range(100):
    obs = await w.observe()
    if 'textbox "Name"' in obs.text:
        break
    await sleep(0.05)
name = re.search(r'textbox "Name" \[(e\d+)', obs.text).group(1)
await w.ref(name).fill("Grace")
after = await w.observe()
submit = re.search(r'button "Submit" \[(e\d+)', after.text).group(1)
r = await w.ref(submit).click()
print(w.name, r.state)
"#;
    let result = runtime
        .gui_exec(&session, None, code, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(approver.await.unwrap(), "a person was asked for the app");
    assert_eq!(result.status, script::ExecStatus::Ok, "{result:#?}");
    assert_eq!(result.printed().trim(), "s1 applied", "{result:#?}");
    let started = Instant::now();
    while !events(&env.log)
        .iter()
        .any(|e| e["event"] == "submit" && e["text"] == "Grace")
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the app never saw the submit: {:?}",
            events(&env.log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    runtime.shutdown(Duration::from_secs(2)).await;
    drop(env.server);
    drop(env.stack);
}
