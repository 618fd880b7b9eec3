//! The runtime on the desktop adapter (issue 30): a real X server, a real session bus with
//! AT-SPI, a real GTK app that logs what it receives, and the runtime's one checked path — a
//! person offers a window, a session claims it, observes it, and its first write waits for a
//! person's grant of the application's identity (`app://…`), like an origin's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use desktop::{DesktopAdapter, DesktopConfig, Stack, StackOptions};
use protocol::{ErrorCode, ExtendedAction, ReceiptState};
use runtime::{ApprovalDecision, EventKind, Runtime, RuntimeConfig};
use serde_json::json;
use surface::{ActOptions, ObserveOptions};

fn app_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../desktop/tests/apps/gtk_app.py")
}

fn events(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_offers_a_window_and_the_first_write_waits_for_their_grant_of_the_app() {
    let mut stack = Stack::start(&StackOptions::default())
        .unwrap_or_else(|e| panic!("the desktop stack did not start: {e}"));
    let dir = crate::data_dir("desktop-runtime");
    let log = stack.runtime_dir.join("app.log");
    let mut app = stack.command("/usr/bin/python3");
    app.arg(app_script())
        .args(["--title", "Runtime app"])
        .env("GLOVEBOX_APP_LOG", &log);
    stack.spawn(app).unwrap();
    let adapter = Arc::new(DesktopAdapter::new(DesktopConfig {
        display: stack.display.clone(),
        session_bus: Some(stack.session_bus.clone()),
    }));
    let rt = Runtime::start(RuntimeConfig::new(&dir), adapter)
        .await
        .expect("the runtime starts on the desktop");

    // The person sees the display's windows and offers the app's.
    let started = Instant::now();
    let window = loop {
        let surfaces = rt.surfaces_for_person().await.unwrap();
        if let Some(s) = surfaces.iter().find(|s| s["title"] == "Runtime app")
            && events(&log).iter().any(|e| e["event"] == "ready")
        {
            assert_eq!(s["kind"], "x11_window");
            assert_eq!(s["url"], "app://gtk-app.py");
            break s["surface"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no window: {surfaces:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // A surface the display does not list cannot be offered.
    let err = rt.offer_surface("x11:nowhere:0x1").await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnknownSurface);
    let tab = rt.offer_surface(&window).await.expect("offer the window");
    assert!(rt.user_tabs().unwrap().iter().any(|t| t.tab == tab));

    let session = rt.create_session().await.unwrap();
    rt.claim_tab(&session, &tab)
        .await
        .expect("claim the window");
    // First claim wins.
    let other = rt.create_session().await.unwrap();
    assert_eq!(
        rt.claim_tab(&other, &tab).await.unwrap_err().code(),
        ErrorCode::LeaseConflict
    );

    let mut o = rt
        .observe(&session, None, &ObserveOptions::default())
        .await
        .expect("observe the window");
    // The tree comes a moment after the window.
    let started = Instant::now();
    while !o.aria_snapshot().contains("textbox \"Name\"") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            o.aria_snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        o = rt
            .observe(&session, None, &ObserveOptions::default())
            .await
            .unwrap();
    }
    assert_eq!(o.origin(), "app://gtk-app.py");
    let field = o
        .interactive_elements()
        .iter()
        .find(|e| e.role() == "textbox")
        .unwrap()
        .element()
        .as_str()
        .to_owned();

    // A person answers the approval the first write asks for.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let rt = rt.clone();
        let seen = seen.clone();
        let mut bus = rt.subscribe_events();
        tokio::spawn(async move {
            while let Ok(event) = bus.recv().await {
                if let EventKind::ApprovalRequested { approval_id, .. } = event.kind {
                    if let Some(r) = rt
                        .pending_approvals()
                        .iter()
                        .find(|r| r.approval_id == approval_id)
                    {
                        seen.lock().unwrap().push(r.origin.clone());
                    }
                    let _ = rt.resolve_approval(&approval_id, ApprovalDecision::ApproveForTask);
                }
            }
        });
    }
    let action: ExtendedAction = serde_json::from_value(json!({"type": "type",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": field},
        "text": "Ada", "intent": "fill the name"}))
    .unwrap();
    let out = rt
        .act(
            &session,
            None,
            &action,
            &ActOptions::default(),
            Duration::from_secs(20),
        )
        .await
        .expect("type after the person's grant");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    assert_eq!(*seen.lock().unwrap(), vec!["app://gtk-app.py".to_owned()]);
    let o = out.observation.expect("observation");
    assert!(
        o.aria_snapshot().contains(": \"Ada\""),
        "{}",
        o.aria_snapshot()
    );

    // The grant covers the app for the task: the next write asks nothing.
    let submit = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Submit")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let action: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": submit},
        "intent": "submit"}))
    .unwrap();
    rt.act(
        &session,
        None,
        &action,
        &ActOptions::default(),
        Duration::ZERO,
    )
    .await
    .expect("click submit without asking again");
    let started = Instant::now();
    while !events(&log)
        .iter()
        .any(|e| e["event"] == "submit" && e["text"] == "Ada")
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            events(&log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.lock().unwrap().len(), 1);
    rt.shutdown(Duration::from_secs(2)).await;
    drop(stack);
}
