//! Debugger leases (`002_…` "Debugger lease 生命周期"): a reference count across overlapping
//! operations, idle detach after the configured window, an operation inside the window
//! cancelling it, turn end detaching marked tabs too, one attachment however many operations
//! race, and a failed detach leaving a recovery record that the next operation or the disposal
//! retries. Attachment is checked from the browser's side too (`Target.getTargets`).

use std::sync::Arc;
use std::time::Duration;

use runtime::{DebuggerLeaseStatus, Mark, RunRequest};
use store::Store as _;
use tokio::sync::Notify;

use crate::{Gate, click, env_with, eventually, freeze_browser, page_targets};

fn lease(env: &crate::Env) -> DebuggerLeaseStatus {
    let status = env.runtime.status(&env.session).unwrap();
    assert_eq!(status.debugger_leases.len(), 1, "{status:?}");
    status.debugger_leases[0].clone()
}

#[tokio::test]
async fn the_reference_count_keeps_one_attachment_across_overlapping_operations() {
    let env = env_with("debugger-refcount", true, |c| {
        c.debugger_idle_detach = Duration::from_millis(100)
    })
    .await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (_, run) = env
        .runtime
        .start_run(
            s,
            RunRequest::new("hold"),
            Box::new(Gate {
                started: started.clone(),
                release: release.clone(),
            }),
        )
        .unwrap();
    started.notified().await;
    assert_eq!(lease(&env).refs, 1, "the run holds the lease");
    // Overlapping operations share the attachment, and its end leaves the run's hold in place.
    let options = browser::ObserveOptions::default();
    let (a, b) = tokio::join!(
        env.runtime.observe(s, None, &options),
        env.runtime.observe(s, None, &options)
    );
    a.unwrap();
    b.unwrap();
    // Well past the idle window: nothing detaches while the run holds the lease.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let held = lease(&env);
    assert_eq!(
        (held.refs, held.attached, held.attaches, held.detaches),
        (1, true, 1, 0),
        "{held:?}"
    );
    assert!(held.idle_since_ms.is_none());
    assert_eq!(page_targets(&env, "/counter.html").await, (1, 1));
    release.notify_one();
    run.await.unwrap();
    eventually("the idle detach after the run let go", || {
        lease(&env).detaches == 1
    })
    .await;
    let after = lease(&env);
    assert_eq!(
        (after.refs, after.attaches, after.detaches),
        (0, 1, 1),
        "{after:?}"
    );
    assert_eq!(
        page_targets(&env, "/counter.html").await,
        (1, 0),
        "open, and nothing attached"
    );
}

#[tokio::test]
async fn an_idle_lease_detaches_after_the_window_and_the_next_operation_attaches_again_with_its_frame()
 {
    let env = env_with("debugger-idle", true, |c| {
        c.debugger_idle_detach = Duration::from_millis(200)
    })
    .await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let frame = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    assert!(lease(&env).idle_since_ms.is_some(), "idle, detach pending");
    eventually("the idle detach", || lease(&env).detaches == 1).await;
    assert_eq!(page_targets(&env, "/counter.html").await, (1, 0));
    let status = env.runtime.status(s).unwrap();
    assert_eq!(
        status.tabs[0].state.as_str(),
        "owned",
        "the tab's lifecycle is untouched: {status:?}"
    );
    assert!(!status.tabs[0].attached);
    // The model acts on what it saw before the detach: attached on demand, the frame holds.
    let outcome = env
        .runtime
        .act(
            s,
            None,
            &click(&frame, "Add one"),
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert!(
        outcome
            .observation
            .unwrap()
            .aria_snapshot()
            .contains("1 clicks")
    );
    assert_eq!(lease(&env).attaches, 2);
}

#[tokio::test]
async fn an_operation_inside_the_idle_window_cancels_the_detach() {
    let env = env_with("debugger-window", true, |c| {
        c.debugger_idle_detach = Duration::from_secs(2)
    })
    .await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    // Operations 400 ms apart for well over one window: each lands inside the window the
    // previous one opened, so the first window's detach never happens.
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        env.runtime
            .observe(s, None, &Default::default())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let idle = lease(&env);
    assert_eq!(
        (idle.attached, idle.attaches, idle.detaches),
        (true, 1, 0),
        "{idle:?}"
    );
    eventually("the detach after the last window", || {
        lease(&env).detaches == 1
    })
    .await;
    assert_eq!(lease(&env).attaches, 1);
}

#[tokio::test]
async fn racing_operations_on_a_detached_tab_attach_it_once() {
    let env = env_with("debugger-race", true, |c| {
        c.debugger_idle_detach = Duration::from_millis(100)
    })
    .await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    eventually("the idle detach", || !lease(&env).attached).await;
    let options = browser::ObserveOptions::default();
    let observes = (0..8).map(|_| env.runtime.observe(s, None, &options));
    for result in futures_util::future::join_all(observes).await {
        result.unwrap();
    }
    assert_eq!(lease(&env).attaches, 2, "one attach for eight operations");
}

#[tokio::test]
async fn turn_end_detaches_marked_tabs_too_and_keeps_them_open_and_owned() {
    // An hour of idle window: only the turn end can detach here.
    let env = env_with("debugger-turn", true, |c| {
        c.debugger_idle_detach = Duration::from_secs(3600)
    })
    .await;
    let s = &env.session;
    let kept = crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let frame = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    env.runtime
        .mark(s, kept, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    let report = env.runtime.end_turn(s, "turn_1").await.unwrap();
    assert!(report.ok && report.kept.len() == 1, "{report:?}");
    let detached = lease(&env);
    assert_eq!(
        (detached.attached, detached.detaches),
        (false, 1),
        "{detached:?}"
    );
    assert_eq!(
        page_targets(&env, "/counter.html").await,
        (1, 0),
        "open, not attached"
    );
    let status = env.runtime.status(s).unwrap();
    assert_eq!(
        (
            status.tabs[0].state.as_str(),
            status.tabs[0].ownership.as_str()
        ),
        ("retained", "agent_created")
    );
    // Next turn: the same surface, attached on demand, and the frame seen last turn still holds.
    env.runtime
        .act(
            s,
            Some(&protocol::SurfaceName::new("s1").unwrap()),
            &click(&frame, "Add one"),
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(lease(&env).attaches, 2);
}

async fn failed_detach(name: &str) -> (crate::Env, String) {
    let env = env_with(name, true, |c| {
        c.debugger_idle_detach = Duration::from_secs(3600);
        c.debugger_detach_timeout = Duration::from_millis(500);
    })
    .await;
    let s = &env.session;
    let kept = crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    env.runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    env.runtime
        .mark(s, kept, Mark::Deliverable, "turn_1")
        .await
        .unwrap();
    freeze_browser(&env.runtime, true);
    let report = env.runtime.end_turn(s, "turn_1").await;
    freeze_browser(&env.runtime, false);
    let report = report.unwrap();
    assert!(
        !report.ok,
        "a detach without an answer is a failure, never a silent success: {report:?}"
    );
    assert_eq!(report.failed, report.kept);
    let status = env.runtime.status(s).unwrap();
    assert!(
        status.debugger_leases[0].detach_failed && !status.debugger_leases[0].attached,
        "{status:?}"
    );
    assert_eq!(status.pending_recoveries, 1);
    assert_eq!(
        status.tabs[0].state.as_str(),
        "retained",
        "the tab's lifecycle is recorded apart and untouched"
    );
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    let pending = store
        .pending_recoveries(&store::SessionId::new(s.as_str()))
        .unwrap();
    assert_eq!(
        (
            pending[0].kind.clone(),
            pending[0].resource_id.as_ref().map(|r| r.to_string())
        ),
        (
            store::RecoveryKind::DetachFailed,
            Some(report.kept[0].clone())
        )
    );
    let resource = report.kept[0].clone();
    (env, resource)
}

#[tokio::test]
async fn a_failed_detach_leaves_a_recovery_record_that_the_next_operation_retries() {
    let (env, _) = failed_detach("debugger-fail-op").await;
    let s = &env.session;
    let observed = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    assert!(observed.aria_snapshot().contains("Add one"));
    let status = env.runtime.status(s).unwrap();
    assert_eq!(status.pending_recoveries, 0, "{status:?}");
    let lease = &status.debugger_leases[0];
    assert!(!lease.detach_failed && lease.attached);
    assert_eq!(
        (lease.attaches, lease.detaches),
        (2, 1),
        "the retry detached the old session before the new attach"
    );
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    assert!(
        store
            .pending_recoveries(&store::SessionId::new(s.as_str()))
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_failed_detach_is_retried_at_disposal() {
    let (env, resource) = failed_detach("debugger-fail-dispose").await;
    let report = env.runtime.close_session(&env.session).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(
        page_targets(&env, "/counter.html").await,
        (1, 0),
        "the kept tab stays open, handed over and detached"
    );
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    assert!(
        store
            .pending_recoveries(&store::SessionId::new(env.session.as_str()))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .get_resource(&store::ResourceId::new(&resource))
            .unwrap()
            .state,
        store::ResourceState::Released
    );
}

#[tokio::test]
async fn a_debugger_detached_from_outside_clears_only_the_attachment_and_the_next_operation_attaches_again()
 {
    // `002_…`: "用户手动取消调试只清除 debugger attach 状态，不关闭 Tab、不 release claim、不清除
    // ownership"; here the session is ended behind the lease's back (as a user's "cancel" does).
    let env = env_with("debugger-cancelled", true, |c| {
        c.debugger_idle_detach = Duration::from_secs(3600)
    })
    .await;
    let s = &env.session;
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/counter.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    let frame = crate::observe_until(&env.runtime, s, "Add one").await;
    let target = db_target(&env, &user);
    let browser = env.browser.connection().unwrap().browser();
    browser
        .send_raw(
            "Target.detachFromTarget",
            serde_json::json!({ "targetId": target }),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    eventually("the lease sees its attachment gone", || {
        !lease(&env).attached
    })
    .await;
    let status = env.runtime.status(s).unwrap();
    assert_eq!(
        (
            status.tabs[0].ownership.as_str(),
            status.tabs[0].state.as_str()
        ),
        ("agent_claimed", "owned"),
        "claim and ownership stay: {status:?}"
    );
    assert_eq!(
        page_targets(&env, "/counter.html").await.0,
        1,
        "the tab stays open"
    );
    // Attached again on demand; the frame the model holds still acts.
    env.runtime
        .act(
            s,
            None,
            &click(&frame, "Add one"),
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(lease(&env).attaches, 2);
}

fn db_target(env: &crate::Env, resource: &str) -> String {
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    store
        .get_resource(&store::ResourceId::new(resource))
        .unwrap()
        .cdp_target_id
        .unwrap()
        .to_string()
}
