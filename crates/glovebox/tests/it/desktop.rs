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

/// A stack with one logging GTK app window per title, a runtime on its display, and the
/// windows' surface ids once the apps are ready.
async fn desktop_runtime(
    name: &str,
    titles: &[&str],
    extra: &[&str],
) -> (Stack, Runtime, PathBuf, Vec<String>) {
    let mut stack = Stack::start(&StackOptions::default())
        .unwrap_or_else(|e| panic!("the desktop stack did not start: {e}"));
    let dir = crate::data_dir(name);
    let log = stack.runtime_dir.join("app.log");
    for (i, title) in titles.iter().enumerate() {
        let mut app = stack.command("/usr/bin/python3");
        app.arg(app_script())
            .args([
                "--title",
                title,
                "--x",
                &(20 + 440 * i).to_string(),
                "--y",
                "20",
            ])
            .args(extra)
            .env("GLOVEBOX_APP_LOG", &log);
        stack.spawn(app).unwrap();
    }
    let adapter = Arc::new(DesktopAdapter::new(DesktopConfig {
        display: stack.display.clone(),
        session_bus: Some(stack.session_bus.clone()),
        foreground_input: true,
    }));
    let rt = Runtime::start(RuntimeConfig::new(&dir), adapter)
        .await
        .expect("the runtime starts on the desktop");
    // The person sees the display's windows.
    let started = Instant::now();
    let windows = loop {
        let surfaces = rt.surfaces_for_person().await.unwrap();
        let found: Vec<String> = titles
            .iter()
            .filter_map(|t| surfaces.iter().find(|s| s["title"] == *t))
            .map(|s| {
                assert_eq!(s["kind"], "x11_window");
                assert_eq!(s["url"], "app://gtk-app.py");
                s["surface"].as_str().unwrap().to_owned()
            })
            .collect();
        let ready = events(&log)
            .iter()
            .filter(|e| e["event"] == "ready")
            .count();
        if found.len() == titles.len() && ready >= titles.len() {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no windows: {surfaces:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    (stack, rt, log, windows)
}

/// Observes until the window's tree is there (it comes a moment after the window).
async fn observe_tree(rt: &Runtime, session: &protocol::SessionId) -> protocol::Observation {
    observe_until(rt, session, "textbox \"Name\"").await
}

/// Observes until the snapshot shows `marker`.
async fn observe_until(
    rt: &Runtime,
    session: &protocol::SessionId,
    marker: &str,
) -> protocol::Observation {
    let started = Instant::now();
    loop {
        let o = rt
            .observe(session, None, &ObserveOptions::default())
            .await
            .expect("observe the window");
        if o.aria_snapshot().contains(marker) {
            return o;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            o.aria_snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn element(o: &protocol::Observation, role: &str) -> String {
    o.interactive_elements()
        .iter()
        .find(|e| e.role() == role)
        .unwrap_or_else(|| panic!("no {role}: {}", o.aria_snapshot()))
        .element()
        .as_str()
        .to_owned()
}

fn type_into(o: &protocol::Observation, field: &str, text: &str) -> ExtendedAction {
    serde_json::from_value(json!({"type": "type",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": field},
        "text": text, "intent": "fill the name"}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_offers_a_window_and_the_first_write_waits_for_their_grant_of_the_app() {
    let (stack, rt, log, windows) = desktop_runtime("desktop-runtime", &["Runtime app"], &[]).await;
    let window = windows[0].clone();
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

    let o = observe_tree(&rt, &session).await;
    assert_eq!(o.origin(), "app://gtk-app.py");
    let field = element(&o, "textbox");

    // The turn's Surface Context names the window as a window, with how input reaches it.
    let context =
        serde_json::to_value(rt.surface_context(&session, "turn_1", 1).await.unwrap()).unwrap();
    let entry = &context["surfaces"][0];
    assert_eq!(entry["kind"], "x11_window", "{context}");
    assert_eq!(
        entry["aliases"],
        json!(["window:1", "focused"]),
        "{context}"
    );
    assert_eq!(
        entry["input"],
        json!(["background_ax", "foreground_input"]),
        "{context}"
    );
    assert_eq!(entry["capabilities"], json!(["observe", "interact"]));
    // The turn-start preview did not make the agent's frame stale (it is acted on below).

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
    let action = type_into(&o, &field, "Ada");
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

    // The grant covers the app for the task: the next write asks nothing. (By locator: the
    // runtime judges what it resolves to on the window as it is now.)
    let action: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": o.frame_id().as_str(),
        "target": {"kind": "role", "role": "button", "name": "Submit"}, "intent": "submit"}))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_on_the_same_display_is_refused_while_reads_go_on() {
    let (stack, rt, _log, windows) =
        desktop_runtime("desktop-leases", &["Left app", "Right app"], &[]).await;
    let (a, b) = (
        rt.create_session().await.unwrap(),
        rt.create_session().await.unwrap(),
    );
    for (session, window) in [(&a, &windows[0]), (&b, &windows[1])] {
        let tab = rt.offer_surface(window).await.expect("offer");
        rt.claim_tab(session, &tab).await.expect("claim");
    }
    let (oa, ob) = (observe_tree(&rt, &a).await, observe_tree(&rt, &b).await);

    // A's first write waits for a person, holding the display's input the while.
    let mut bus = rt.subscribe_events();
    let writer = spawn_type(&rt, &a, &oa, "Left");
    let approval = next_approval(&mut bus).await;
    // B writes another window of the same display: one keyboard and mouse, so it is refused…
    let err = rt
        .act(
            &b,
            None,
            &type_into(&ob, &element(&ob, "textbox"), "Right"),
            &ActOptions::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseConflict, "{err}");
    assert!(err.to_string().contains("keyboard and mouse"), "{err}");
    // …and told it is another session's writing, never by that session's id (issue 35).
    let said = err.to_string();
    assert!(said.contains("another session"), "{said}");
    assert!(
        !said.contains(a.as_str()) && !said.contains("session_"),
        "{said}"
    );
    // …while its reads go on.
    let read = rt
        .observe(&b, None, &ObserveOptions::default())
        .await
        .expect("B still observes");
    assert!(read.aria_snapshot().contains("textbox \"Name\""));

    // A's write finishes once the person grants the app; then the display is free for B.
    rt.resolve_approval(&approval, ApprovalDecision::ApproveForTask)
        .unwrap();
    let out = writer.await.unwrap().expect("A types after the grant");
    assert_eq!(out.receipt.state(), ReceiptState::Confirmed);
    let ob = rt
        .observe(&b, None, &ObserveOptions::default())
        .await
        .unwrap();
    let writer = spawn_type(&rt, &b, &ob, "Right");
    // B's own first write asks the person too (grants are per task), and is then written.
    let approval = next_approval(&mut bus).await;
    rt.resolve_approval(&approval, ApprovalDecision::ApproveForTask)
        .unwrap();
    let out = writer.await.unwrap().expect("B types once A is done");
    assert_eq!(out.receipt.state(), ReceiptState::Confirmed);
    rt.shutdown(Duration::from_secs(2)).await;
    drop(stack);
}

/// Types `text` into the observed window's field from a task of its own (it may wait for a person).
fn spawn_type(
    rt: &Runtime,
    session: &protocol::SessionId,
    o: &protocol::Observation,
    text: &str,
) -> tokio::task::JoinHandle<Result<surface::ActOutcome, runtime::RuntimeError>> {
    let (rt, session, action) = (
        rt.clone(),
        session.clone(),
        type_into(o, &element(o, "textbox"), text),
    );
    tokio::spawn(async move {
        rt.act(
            &session,
            None,
            &action,
            &ActOptions::default(),
            Duration::from_secs(30),
        )
        .await
    })
}

/// The id of the next approval a person is asked for.
async fn next_approval(
    bus: &mut tokio::sync::broadcast::Receiver<runtime::Event>,
) -> protocol::ApprovalId {
    loop {
        if let EventKind::ApprovalRequested { approval_id, .. } = bus.recv().await.unwrap().kind {
            return approval_id;
        }
    }
}

/// Enter activates a window's default button wherever focus is: pressing it where that button is
/// `Delete all` is high-impact (R3) by structure, asked every time even under the app's grant,
/// and a person's refusal sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_on_a_window_whose_default_button_deletes_asks_every_time() {
    let (stack, rt, log, windows) =
        desktop_runtime("desktop-default-button", &["Confirm app"], &["--confirm"]).await;
    let session = rt.create_session().await.unwrap();
    let tab = rt.offer_surface(&windows[0]).await.expect("offer");
    rt.claim_tab(&session, &tab).await.expect("claim");
    let o = observe_until(&rt, &session, "textbox \"Note\"").await;
    assert!(
        o.aria_snapshot()
            .lines()
            .any(|l| l.contains("\"Delete all\"") && l.contains("default")),
        "the default button is shown as such: {}",
        o.aria_snapshot()
    );
    let note = element(&o, "textbox");

    // The app is granted for the task by the person (an ordinary write first).
    let mut bus = rt.subscribe_events();
    let writer = spawn_type(&rt, &session, &o, "tidy up");
    let approval = next_approval(&mut bus).await;
    rt.resolve_approval(&approval, ApprovalDecision::ApproveForTask)
        .unwrap();
    let out = writer.await.unwrap().expect("typed under the grant");
    let o = out.observation.expect("observation");

    // Enter in the note: the default button it activates deletes, so the person is asked again.
    let press: ExtendedAction = serde_json::from_value(json!({"type": "press",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": note},
        "key": "Enter", "intent": "confirm"}))
    .unwrap();
    let presser = {
        let (rt, session) = (rt.clone(), session.clone());
        tokio::spawn(async move {
            rt.act(
                &session,
                None,
                &press,
                &ActOptions::default(),
                Duration::from_secs(30),
            )
            .await
        })
    };
    let approval = next_approval(&mut bus).await;
    let asked = rt
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval)
        .expect("the pending approval");
    assert_eq!(asked.tier, policy::RiskTier::R3, "{asked:?}");
    assert!(asked.target.contains("Delete all"), "{}", asked.target);
    rt.resolve_approval(&approval, ApprovalDecision::Deny)
        .unwrap();
    let err = presser.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::ApprovalDenied, "{err}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !events(&log).iter().any(|e| e["event"] == "delete"),
        "nothing was deleted"
    );
    rt.shutdown(Duration::from_secs(2)).await;
    drop(stack);
}

/// A dialog the app opens during an action is bound as a new surface of the session, opened by
/// the window (never taken for the window itself); the agent acts on it by its own key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_an_action_opens_is_a_new_surface_of_the_session() {
    let (stack, rt, log, windows) =
        desktop_runtime("desktop-dialog", &["Dialog app"], &["--dialog"]).await;
    let session = rt.create_session().await.unwrap();
    let tab = rt.offer_surface(&windows[0]).await.expect("offer");
    rt.claim_tab(&session, &tab).await.expect("claim");
    let o = observe_tree(&rt, &session).await;
    let opener = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Open dialog")
        .expect("the button")
        .element()
        .as_str()
        .to_owned();
    let mut bus = rt.subscribe_events();
    let click: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": opener},
        "intent": "open the dialog"}))
    .unwrap();
    let clicking = {
        let (rt, session) = (rt.clone(), session.clone());
        tokio::spawn(async move {
            rt.act(
                &session,
                None,
                &click,
                &ActOptions::default(),
                Duration::from_secs(30),
            )
            .await
        })
    };
    let approval = next_approval(&mut bus).await;
    rt.resolve_approval(&approval, ApprovalDecision::ApproveForTask)
        .unwrap();
    let out = clicking.await.unwrap().expect("the click");
    assert_eq!(out.opened.len(), 1, "{:?}", out.opened);
    assert!(
        events(&log).iter().any(|e| e["event"] == "dialog_opened"),
        "{:?}",
        events(&log)
    );

    // The dialog is s2, opened by s1, a window of the same app.
    let context =
        serde_json::to_value(rt.surface_context(&session, "turn_2", 2).await.unwrap()).unwrap();
    let dialog = context["surfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["surface_key"] == "s2")
        .unwrap_or_else(|| panic!("no s2: {context}"));
    assert_eq!(dialog["opened_by"], "s1", "{context}");
    assert_eq!(dialog["kind"], "x11_window", "{context}");
    let s2 = protocol::SurfaceName::new("s2").unwrap();
    let started = Instant::now();
    let d = loop {
        let d = rt
            .observe(&session, Some(&s2), &ObserveOptions::default())
            .await
            .expect("observe the dialog");
        if d.aria_snapshot().contains("button \"OK\"") {
            break d;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            d.aria_snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(d.title(), "Confirm");
    let ok = d
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "OK")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let click: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": d.frame_id().as_str(), "target": {"kind": "element", "ref": ok},
        "intent": "confirm"}))
    .unwrap();
    // The grant covers the app: its dialog needs no new one.
    rt.act(
        &session,
        Some(&s2),
        &click,
        &ActOptions::default(),
        Duration::ZERO,
    )
    .await
    .expect("click OK in the dialog");
    let started = Instant::now();
    while !events(&log)
        .iter()
        .any(|e| e["event"] == "dialog" && e["response"] == "ok")
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            events(&log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rt.shutdown(Duration::from_secs(2)).await;
    drop(stack);
}

/// A person who takes over one window holds the display's keyboard and mouse: an agent's write
/// to another window of the same display is refused until they hand back, then goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_take_over_of_one_window_pauses_writes_to_the_whole_display() {
    let (stack, rt, log, windows) =
        desktop_runtime("desktop-take-over", &["Agent app", "Person app"], &[]).await;
    let session = rt.create_session().await.unwrap();
    let agents = rt.offer_surface(&windows[0]).await.expect("offer");
    rt.claim_tab(&session, &agents).await.expect("claim");
    let persons = rt
        .offer_surface(&windows[1])
        .await
        .expect("offer the other");
    let o = observe_tree(&rt, &session).await;

    // The app is granted first (an ordinary write that waits for a person).
    let mut bus = rt.subscribe_events();
    let writer = spawn_type(&rt, &session, &o, "before");
    let approval = next_approval(&mut bus).await;
    rt.resolve_approval(&approval, ApprovalDecision::ApproveForTask)
        .unwrap();
    let o = writer
        .await
        .unwrap()
        .expect("typed")
        .observation
        .expect("observation");

    assert_eq!(
        rt.take_over(&persons).await.unwrap(),
        runtime::Control::Paused
    );
    // The agent's window shows the person's hold too: it is the same keyboard and mouse.
    assert_eq!(rt.control_of(&agents), runtime::Control::Paused);
    let err = rt
        .act(
            &session,
            None,
            &type_into(&o, &element(&o, "textbox"), "during the hold"),
            &ActOptions::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseConflict, "{err}");
    assert!(err.to_string().contains("a person"), "{err}");
    assert!(
        !events(&log)
            .iter()
            .any(|e| e["window"] == "Agent app" && e["event"] == "changed" && e["length"] == 15),
        "nothing was typed while the person held the display"
    );

    rt.hand_back(&persons).unwrap();
    let o = rt
        .observe(&session, None, &ObserveOptions::default())
        .await
        .unwrap();
    let out = rt
        .act(
            &session,
            None,
            &type_into(&o, &element(&o, "textbox"), "after"),
            &ActOptions::default(),
            Duration::ZERO,
        )
        .await
        .expect("typed after the hand-back");
    assert_eq!(out.receipt.state(), ReceiptState::Confirmed);
    rt.shutdown(Duration::from_secs(2)).await;
    drop(stack);
}
