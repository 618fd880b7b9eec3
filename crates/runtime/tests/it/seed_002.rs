//! The test plan of `002_b1585752cb0e1e46.txt` ("测试计划"), one test per item, against real
//! Chromium and a real SQLite file. The seed was written for Pi/DSH plugin hosts; here the host
//! is the runtime API every transport calls, and its words map as follows: a "Skill load" / tool
//! activation is the session's `activated` record (set by the first browser operation, audited
//! as `tools_activated`; its tools are usable, and `tools_active`, from its start: issue 35); hiding tools / calling the disposer is `tools_deactivated`; the Bridge is
//! the runtime's CDP connection (`status().bridge`); plugin disposal is `Runtime::shutdown`; agent
//! disposal and session switch are `Runtime::close_session`; a turn checkpoint is `end_turn`;
//! "model-visible output" is anything on the event stream an agent's progress log reads. Glovebox
//! has no tab groups: a group is any set of tabs of mixed ownership in one browser context.
//!
//! | seed item | test |
//! | --- | --- |
//! | 单元 1 tools stay active across turns | `unit_01_tools_stay_active_across_turns` |
//! | 单元 2 turn end closes temp tabs, releases claims, keeps the bridge | `unit_02_turn_end_closes_temporary_tabs_releases_claims_and_keeps_the_bridge` |
//! | 单元 3 only what this agent may handle | `unit_03_turn_end_and_finalize_touch_only_what_this_agent_may_handle` |
//! | 单元 4 claimed user tab released, not closed | `unit_04_a_claimed_user_tab_is_released_never_closed` |
//! | 单元 5 handoff and deliverable always kept | `unit_05_handoff_and_deliverable_tabs_are_always_kept` |
//! | 单元 6 mixed-ownership group never closed whole | `unit_06_a_mixed_ownership_group_is_never_closed_as_a_whole` |
//! | 单元 7 finalize keeps tools active | `unit_07_and_integration_03_finalize_leaves_tools_active` |
//! | 单元 8 only a successful reset deactivates | `unit_08_only_a_successful_context_reset_deactivates_tools` |
//! | 单元 9 failure keeps ownership, activation, recovery | `unit_09_a_failed_cleanup_keeps_ownership_activation_and_a_recovery_record` |
//! | 单元 10 released only after a successful retry | `unit_10_and_integration_06_released_only_after_a_retry_succeeds` |
//! | 单元 11 disposal closes temp tabs only | `unit_11_agent_disposal_closes_its_temporary_tabs_and_nothing_else` |
//! | 单元 12 bridge stays connected | `unit_12_the_bridge_stays_connected_after_turn_end_and_finalize` |
//! | 单元 13 plugin disposal waits, stops the bridge | `unit_13_plugin_disposal_waits_for_active_requests_and_stops_the_bridge` |
//! | 单元 14 concurrent finalize/checkpoint/disposal serialised | `unit_14_concurrent_finalize_checkpoint_and_disposal_are_serialised_per_session` |
//! | 集成 1 no Skill reload across turns | `integration_01_tools_are_activated_once_across_turns` |
//! | 集成 2 one model-visible load result | `integration_02_turn_cleanup_is_invisible_to_the_model` |
//! | 集成 3 finalize does not hide tools | `unit_07_and_integration_03_finalize_leaves_tools_active` |
//! | 集成 4 old tool snapshot refused after reset | `integration_04_after_a_context_reset_the_old_snapshot_is_refused` |
//! | 集成 5 session switch runs the final cleanup | `integration_05_a_session_switch_runs_the_final_cleanup_and_keeps_failed_records` |
//! | 集成 6 recovery keeps retrying | `unit_10_and_integration_06_released_only_after_a_retry_succeeds` |
//! | 集成 7 reconnect keeps ownership | `integration_07_a_reconnect_after_a_bridge_drop_keeps_the_sessions_ownership` |
//! | 集成 8 sibling calls never beside finalize | `integration_08_sibling_calls_never_run_beside_finalize` |
//! | 集成 9 disposer only at reset or disposal | `integration_09_tools_are_deactivated_only_by_reset_or_disposal` |
//! | 验收 1, 2 no tools until asked, activated once | `acceptance_1_and_2_no_tools_until_the_browser_is_asked_for_then_activated_once` |
//! | 验收 3 one tab across turns | `acceptance_3_one_tab_across_turns_stays_usable` |
//! | 验收 4 turn end: close, release, detach, no noise | `acceptance_4_turn_end_closes_releases_and_detaches_without_transcript_noise` |
//! | 验收 5 finalize by ownership, tools stay | `acceptance_5_finalize_handles_resources_by_ownership_and_tools_stay_usable` |
//! | 验收 6 context reset resets tool state | `acceptance_6_context_reset_resets_tool_state_as_asked` |
//! | 验收 7 disposal without finalize cleans up | `acceptance_7_disposal_without_finalize_cleans_up` |
//! | 验收 8 cleanup retried after a bridge drop | `acceptance_8_cleanup_retried_after_a_bridge_drop_keeps_ownership` |
//! | 验收 9 sessions cannot clean up each other | `acceptance_9_one_session_cannot_clean_up_another` |
//!
//! The debugger-lease rules of the same seed are in `debugger.rs`.

use std::sync::Arc;
use std::time::Duration;

use protocol::{ErrorCode, SurfaceName};
use runtime::{BrowserStatus, Mark, RunRequest, TabStatus};
use store::Store as _;
use tokio::sync::Notify;

use crate::{Env, Gate, click, env, env_with, page_targets};

fn db(env: &Env) -> store::SqliteStore {
    store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap()
}

/// The session's audit entries of `kind`, oldest first (payloads).
fn audit(env: &Env, session: &protocol::SessionId, kind: &str) -> Vec<String> {
    db(env)
        .audit_since(
            &store::SessionId::new(session.as_str()),
            store::AuditSeq(0),
            usize::MAX,
        )
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.payload)
        .collect()
}

/// `tools_activated` / `tools_deactivated` entries of the session, in order.
fn tool_changes(env: &Env, session: &protocol::SessionId) -> Vec<String> {
    db(env)
        .audit_since(
            &store::SessionId::new(session.as_str()),
            store::AuditSeq(0),
            usize::MAX,
        )
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.starts_with("tools_"))
        .map(|e| {
            if e.kind == "tools_deactivated" {
                format!("deactivated {}", e.payload)
            } else {
                "activated".into()
            }
        })
        .collect()
}

fn status(env: &Env, session: &protocol::SessionId) -> BrowserStatus {
    env.runtime.status(session).unwrap()
}

fn tab<'a>(status: &'a BrowserStatus, resource: &str) -> &'a TabStatus {
    status
        .tabs
        .iter()
        .find(|t| t.resource == resource)
        .unwrap_or_else(|| panic!("{resource} in {status:?}"))
}

/// What a tab's lifecycle record says (not whether it is attached right now, which idles on).
fn records(tabs: &[TabStatus]) -> Vec<(String, String, String, String)> {
    tabs.iter()
        .map(|t| {
            (
                t.resource.clone(),
                t.ownership.to_string(),
                t.mark.to_string(),
                t.state.to_string(),
            )
        })
        .collect()
}

fn resource(env: &Env, id: &str) -> store::Resource {
    db(env).get_resource(&store::ResourceId::new(id)).unwrap()
}

/// The resource id of a surface (the newest tab of the session).
fn newest(env: &Env, session: &protocol::SessionId) -> String {
    status(env, session).tabs.last().unwrap().resource.clone()
}

fn name(key: &str) -> SurfaceName {
    SurfaceName::new(key).unwrap()
}

/// Kills the launched browser: the connection drops, every close fails.
async fn kill_browser(env: &Env) {
    let pid = env.runtime.browser_pid().unwrap();
    // SAFETY: killing the browser this test's runtime launched.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    tokio::time::timeout(
        Duration::from_secs(5),
        env.browser.connection().unwrap().closed(),
    )
    .await
    .unwrap();
}

/// A runtime on a remote browser (its own process, which outlives the connection), with one
/// browser context for every session, so tabs survive a dropped connection.
async fn remote_env(name: &str) -> (Env, cdp::Browser) {
    let mut options = cdp::LaunchOptions::new(crate::data_dir(&format!("{name}-browser")));
    options.debugging_port = true;
    let browser = cdp::Browser::launch(&options).await.unwrap();
    let ws = browser.ws_url().unwrap().to_owned();
    let env = crate::env_on(
        name,
        true,
        Some(browser::BrowserSource::Endpoint(ws)),
        |c| {
            c.share_browser_context = true;
        },
    )
    .await;
    (env, browser)
}

// ---- 生命周期单元测试 ----

#[tokio::test]
async fn unit_01_tools_stay_active_across_turns() {
    let env = env("seed-u01", true).await;
    let s = &env.session;
    let fresh = status(&env, s);
    assert!(
        fresh.tools_active && !fresh.activated,
        "a fresh session's tools work, and status says so; the browser is not yet used: {fresh:?}"
    );
    for turn in 1..=3 {
        // Each turn uses the browser directly; nothing is re-activated.
        crate::open(&env.runtime, s, &env.server.url("/counter.html"))
            .await
            .unwrap();
        env.runtime
            .observe(s, None, &Default::default())
            .await
            .unwrap();
        let report = env
            .runtime
            .end_turn(s, &format!("turn_{turn}"))
            .await
            .unwrap();
        assert!(report.ok && report.tools_active, "{report:?}");
        assert!(status(&env, s).tools_active);
    }
    assert_eq!(tool_changes(&env, s), vec!["activated"]);
}

#[tokio::test]
async fn unit_02_turn_end_closes_temporary_tabs_releases_claims_and_keeps_the_bridge() {
    let env = env("seed-u02", true).await;
    let s = &env.session;
    let pid = env.runtime.browser_pid();
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let temp = newest(&env, s);
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    let report = env.runtime.end_turn(s, "turn_1").await.unwrap();
    assert_eq!(
        (report.closed.clone(), report.released.clone(), report.ok),
        (vec![temp], vec![user], true),
        "{report:?}"
    );
    assert_eq!(
        page_targets(&env, "/form.html").await.0,
        0,
        "the temporary tab is closed"
    );
    assert_eq!(
        page_targets(&env, "/table.html").await,
        (1, 0),
        "the claimed tab is open and let go"
    );
    assert_eq!(
        (report.bridge.as_str(), status(&env, s).bridge.as_str()),
        ("connected", "connected")
    );
    assert!(env.browser.connection().unwrap().closed_reason().is_none());
    assert_eq!(
        env.runtime.browser_pid(),
        pid,
        "the same browser, never restarted"
    );
}

#[tokio::test]
async fn unit_03_turn_end_and_finalize_touch_only_what_this_agent_may_handle() {
    let env = env("seed-u03", true).await;
    let a = &env.session;
    let b = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, a, &env.server.url("/form.html"))
        .await
        .unwrap();
    crate::open(&env.runtime, &b, &env.server.url("/login.html"))
        .await
        .unwrap();
    let b_tab = newest(&env, &b);
    let b_claim = env
        .runtime
        .register_user_tab(&env.server.url("/tree.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(&b, &b_claim).await.unwrap();
    let unclaimed = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    let before = status(&env, &b);
    let turn = env.runtime.end_turn(a, "turn_1").await.unwrap();
    crate::open(&env.runtime, a, &env.server.url("/form.html"))
        .await
        .unwrap();
    let finalize = env.runtime.finalize(a).await.unwrap();
    for report in [&turn, &finalize] {
        let touched: Vec<&String> = report
            .closed
            .iter()
            .chain(&report.released)
            .chain(&report.kept)
            .chain(&report.failed)
            .collect();
        assert!(
            !touched
                .iter()
                .any(|id| [&b_tab, &b_claim, &unclaimed].contains(id)),
            "{report:?}"
        );
        assert_eq!(report.closed.len(), 1);
    }
    assert_eq!(
        records(&status(&env, &b).tabs),
        records(&before.tabs),
        "b's records are untouched"
    );
    assert_eq!(page_targets(&env, "/login.html").await.0, 1);
    assert_eq!(page_targets(&env, "/tree.html").await.0, 1);
    assert_eq!(page_targets(&env, "/table.html").await.0, 1);
    assert!(
        resource(&env, &unclaimed).session_id.is_none(),
        "a user tab nobody claimed stays nobody's"
    );
    // What belongs to another session is refused, not handled.
    assert_eq!(
        env.runtime.claim_tab(a, &b_claim).await.unwrap_err().code(),
        ErrorCode::LeaseConflict
    );
    assert!(
        !status(&env, a)
            .tabs
            .iter()
            .any(|t| t.resource == b_tab || t.resource == b_claim),
        "a never sees b's tabs"
    );
    assert_eq!(
        env.runtime
            .observe(&b, Some(&name("s1")), &Default::default())
            .await
            .unwrap()
            .title(),
        "Sign in — Fixture Bank"
    );
}

#[tokio::test]
async fn unit_04_a_claimed_user_tab_is_released_never_closed() {
    let env = env("seed-u04", true).await;
    let s = &env.session;
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    // At a turn end, at finalize and at disposal alike.
    env.runtime.claim_tab(s, &user).await.unwrap();
    crate::observe_until(&env.runtime, s, "Contact us").await;
    assert_eq!(
        env.runtime.end_turn(s, "turn_1").await.unwrap().released,
        vec![user.clone()]
    );
    env.runtime.claim_tab(s, &user).await.unwrap();
    assert_eq!(
        env.runtime.finalize(s).await.unwrap().released,
        vec![user.clone()]
    );
    env.runtime.claim_tab(s, &user).await.unwrap();
    let report = env.runtime.close_session(s).await.unwrap();
    assert_eq!(
        (report.released, report.closed),
        (vec![user.clone()], vec![])
    );
    assert_eq!(
        page_targets(&env, "/table.html").await,
        (1, 0),
        "open, and nothing attached"
    );
    let record = resource(&env, &user);
    assert_eq!(
        (record.ownership, record.session_id, record.state),
        (store::Ownership::User, None, store::ResourceState::Released)
    );
    // Released means the user's again: another session may claim it now.
    let other = env.runtime.create_session().await.unwrap();
    env.runtime.claim_tab(&other, &user).await.unwrap();
}

#[tokio::test]
async fn unit_05_handoff_and_deliverable_tabs_are_always_kept() {
    let env = env("seed-u05", true).await;
    let s = &env.session;
    let handoff = crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    let handoff_id = newest(&env, s);
    let deliverable = crate::open(&env.runtime, s, &env.server.url("/table.html"))
        .await
        .unwrap();
    let deliverable_id = newest(&env, s);
    for turn in ["turn_1", "turn_2"] {
        env.runtime
            .mark(s, handoff, Mark::Handoff, turn)
            .await
            .unwrap();
        env.runtime
            .mark(s, deliverable, Mark::Deliverable, turn)
            .await
            .unwrap();
        let report = env.runtime.end_turn(s, turn).await.unwrap();
        assert_eq!(
            report.kept,
            vec![handoff_id.clone(), deliverable_id.clone()],
            "{report:?}"
        );
        assert!(report.closed.is_empty());
        assert_eq!(
            tab(&status(&env, s), &handoff_id).state.as_str(),
            "retained"
        );
    }
    // Finalize keeps the pages and hands them to the user (the old session's metadata goes).
    env.runtime
        .mark(s, handoff, Mark::Handoff, "turn_3")
        .await
        .unwrap();
    env.runtime
        .mark(s, deliverable, Mark::Deliverable, "turn_3")
        .await
        .unwrap();
    let report = env.runtime.finalize(s).await.unwrap();
    assert_eq!(
        (report.closed.len(), report.released.len()),
        (0, 2),
        "{report:?}"
    );
    assert_eq!(page_targets(&env, "/login.html").await.0, 1);
    assert_eq!(page_targets(&env, "/table.html").await.0, 1);
    assert_eq!(resource(&env, &handoff_id).session_id, None);
    // Disposal too.
    let other = env.runtime.create_session().await.unwrap();
    let kept = crate::open(&env.runtime, &other, &env.server.url("/tree.html"))
        .await
        .unwrap();
    env.runtime
        .mark(&other, kept, Mark::Deliverable, "turn_1")
        .await
        .unwrap();
    assert_eq!(
        env.runtime
            .close_session(&other)
            .await
            .unwrap()
            .released
            .len(),
        1
    );
    assert_eq!(page_targets(&env, "/tree.html").await.0, 1);
}

#[tokio::test]
async fn unit_06_a_mixed_ownership_group_is_never_closed_as_a_whole() {
    // One browser context holds everyone's tabs: the closest thing to a shared tab group.
    let env = env_with("seed-u06", true, |c| c.share_browser_context = true).await;
    let a = &env.session;
    let b = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, a, &env.server.url("/form.html"))
        .await
        .unwrap();
    let marked = crate::open(&env.runtime, a, &env.server.url("/counter.html"))
        .await
        .unwrap();
    env.runtime
        .mark(a, marked, Mark::Deliverable, "turn_1")
        .await
        .unwrap();
    let claimed = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(a, &claimed).await.unwrap();
    env.runtime
        .register_user_tab(&env.server.url("/tree.html"))
        .await
        .unwrap();
    crate::open(&env.runtime, &b, &env.server.url("/login.html"))
        .await
        .unwrap();
    let report = env.runtime.finalize(a).await.unwrap();
    assert!(
        report.ok && report.closed.len() == 1 && report.released.len() == 2,
        "{report:?}"
    );
    assert_eq!(
        page_targets(&env, "/form.html").await.0,
        0,
        "only the agent's own unmarked tab closed"
    );
    for kept in ["/counter.html", "/table.html", "/tree.html", "/login.html"] {
        assert_eq!(page_targets(&env, kept).await.0, 1, "{kept} stays open");
    }
    // An empty keep list closes no shared machinery: the connection and the other session go on.
    assert!(env.runtime.finalize(a).await.unwrap().ok);
    assert_eq!(status(&env, a).bridge, "connected");
    assert_eq!(
        env.runtime
            .observe(&b, None, &Default::default())
            .await
            .unwrap()
            .title(),
        "Sign in — Fixture Bank"
    );
}

#[tokio::test]
async fn unit_07_and_integration_03_finalize_leaves_tools_active() {
    let env = env("seed-u07", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let report = env.runtime.finalize(s).await.unwrap();
    assert!(report.ok && report.tools_active, "{report:?}");
    assert!(status(&env, s).tools_active);
    // The tools are used right away, with no activation in between.
    crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    env.runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    assert_eq!(tool_changes(&env, s), vec!["activated"]);
}

#[tokio::test]
async fn unit_08_only_a_successful_context_reset_deactivates_tools() {
    let env = env("seed-u08", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    kill_browser(&env).await;
    let failed = env.runtime.context_reset(s).await.unwrap();
    assert!(!failed.ok && failed.tools_active, "{failed:?}");
    assert!(
        status(&env, s).tools_active,
        "a failed reset deactivates nothing"
    );
    assert_eq!(
        db(&env)
            .get_session(&store::SessionId::new(s.as_str()))
            .unwrap()
            .state,
        store::SessionState::Active
    );
    env.runtime.reconnect().await.unwrap();
    let done = env.runtime.context_reset(s).await.unwrap();
    assert!(done.ok && !done.tools_active, "{done:?}");
    assert!(!status(&env, s).tools_active);
    assert_eq!(
        tool_changes(&env, s),
        vec![
            "activated".to_owned(),
            r#"deactivated {"by":"context_reset"}"#.to_owned()
        ]
    );
}

#[tokio::test]
async fn unit_09_a_failed_cleanup_keeps_ownership_activation_and_a_recovery_record() {
    let env = env("seed-u09", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let id = newest(&env, s);
    kill_browser(&env).await;
    let report = env.runtime.end_turn(s, "turn_1").await.unwrap();
    assert!(
        !report.ok && report.failed == vec![id.clone()] && report.closed.is_empty(),
        "never reported as clean: {report:?}"
    );
    let record = resource(&env, &id);
    assert_eq!(
        (record.ownership, record.state),
        (
            store::Ownership::AgentCreated,
            store::ResourceState::CleanupUnknown
        )
    );
    assert_eq!(
        record.session_id.map(|s| s.to_string()).as_deref(),
        Some(s.as_str()),
        "ownership is kept"
    );
    let current = status(&env, s);
    assert!(current.tools_active);
    assert_eq!(
        (current.pending_recoveries, current.bridge.as_str()),
        (1, "reconnecting")
    );
    let pending = db(&env)
        .pending_recoveries(&store::SessionId::new(s.as_str()))
        .unwrap();
    assert_eq!(
        (pending[0].kind.clone(), pending[0].resource_id.clone()),
        (
            store::RecoveryKind::CloseFailed,
            Some(store::ResourceId::new(&id))
        )
    );
}

#[tokio::test]
async fn unit_10_and_integration_06_released_only_after_a_retry_succeeds() {
    let env = env("seed-u10", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let id = newest(&env, s);
    kill_browser(&env).await;
    assert!(!env.runtime.finalize(s).await.unwrap().ok);
    // Retrying while the browser is still away fails again and changes nothing.
    assert!(!env.runtime.finalize(s).await.unwrap().ok);
    assert_eq!(
        resource(&env, &id).state,
        store::ResourceState::CleanupUnknown
    );
    let pending = db(&env)
        .pending_recoveries(&store::SessionId::new(s.as_str()))
        .unwrap();
    assert_eq!(pending.len(), 1, "one record, retried: {pending:?}");
    assert_eq!(pending[0].attempts, 2);
    // Once it can succeed, it does, and only then is the tab released.
    env.runtime.reconnect().await.unwrap();
    let report = env.runtime.finalize(s).await.unwrap();
    assert!(report.ok && report.closed == vec![id.clone()], "{report:?}");
    assert_eq!(resource(&env, &id).state, store::ResourceState::Released);
    let record = db(&env).get_recovery(pending[0].id).unwrap();
    assert!(
        record.resolved_at.is_some() && record.attempts == 3,
        "{record:?}"
    );
}

#[tokio::test]
async fn unit_11_agent_disposal_closes_its_temporary_tabs_and_nothing_else() {
    let env = env("seed-u11", true).await;
    let a = &env.session;
    let b = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, a, &env.server.url("/form.html"))
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(a, &user).await.unwrap();
    env.runtime
        .register_user_tab(&env.server.url("/tree.html"))
        .await
        .unwrap();
    crate::open(&env.runtime, &b, &env.server.url("/login.html"))
        .await
        .unwrap();
    let report = env.runtime.close_session(a).await.unwrap();
    assert!(
        report.ok && report.closed.len() == 1 && report.released == vec![user],
        "{report:?}"
    );
    assert_eq!(page_targets(&env, "/form.html").await.0, 0);
    assert_eq!(page_targets(&env, "/table.html").await.0, 1);
    assert_eq!(page_targets(&env, "/tree.html").await.0, 1);
    assert_eq!(
        env.runtime
            .observe(&b, None, &Default::default())
            .await
            .unwrap()
            .title(),
        "Sign in — Fixture Bank"
    );
    assert!(status(&env, &b).tools_active);
    assert_eq!(
        env.runtime.status(a).unwrap_err().code(),
        ErrorCode::UnknownSurface,
        "the disposed session is gone"
    );
}

#[tokio::test]
async fn unit_12_the_bridge_stays_connected_after_turn_end_and_finalize() {
    let env = env("seed-u12", true).await;
    let s = &env.session;
    let (pid, endpoint) = (
        env.runtime.browser_pid(),
        env.browser.connection().unwrap().endpoint().to_owned(),
    );
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    assert_eq!(
        env.runtime.end_turn(s, "turn_1").await.unwrap().bridge,
        "connected"
    );
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    assert_eq!(env.runtime.finalize(s).await.unwrap().bridge, "connected");
    crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    env.runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    assert!(env.browser.connection().unwrap().closed_reason().is_none());
    assert_eq!(
        (
            env.runtime.browser_pid(),
            env.browser.connection().unwrap().endpoint().to_owned()
        ),
        (pid, endpoint),
        "one connection throughout"
    );
}

#[tokio::test]
async fn unit_13_plugin_disposal_waits_for_active_requests_and_stops_the_bridge() {
    let env = env("seed-u13", true).await;
    let s = env.session.clone();
    crate::open(&env.runtime, &s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (_, run) = env
        .runtime
        .start_run(
            &s,
            RunRequest::new("busy"),
            Box::new(Gate {
                started: started.clone(),
                release: release.clone(),
            }),
        )
        .unwrap();
    started.notified().await;
    let pid = env.runtime.browser_pid().unwrap();
    let stopping = env.runtime.clone();
    let mut shutdown =
        tokio::spawn(async move { stopping.shutdown(Duration::from_secs(30)).await });
    // The active request holds the shutdown; new ones are refused meanwhile.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut shutdown)
            .await
            .is_err(),
        "shutdown waited for the run"
    );
    assert_eq!(
        env.runtime
            .observe(&s, None, &Default::default())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::BackendUnavailable
    );
    assert_eq!(
        env.browser.connection().unwrap().closed_reason(),
        None,
        "the bridge is up while the request runs"
    );
    release.notify_one();
    let result = run.await.unwrap();
    assert_eq!(
        result.reason_code(),
        protocol::ReasonCode::ActionFailed,
        "the run ended on its own, not cancelled: {result:?}"
    );
    let reports = shutdown.await.unwrap();
    assert!(
        reports.len() == 1 && reports[0].ok && reports[0].closed.len() == 1,
        "{reports:?}"
    );
    assert!(env.browser.connection().unwrap().closed_reason().is_some());
    assert!(env.runtime.browser_pid().is_none());
    // SAFETY: signal 0 only checks that the process exists.
    assert_eq!(
        unsafe { libc::kill(pid as libc::pid_t, 0) },
        -1,
        "the browser is gone"
    );
}

#[tokio::test]
async fn unit_14_concurrent_finalize_checkpoint_and_disposal_are_serialised_per_session() {
    let env = env("seed-u14", true).await;
    let s = env.session.clone();
    let other = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, &other, &env.server.url("/login.html"))
        .await
        .unwrap();
    for _ in 0..3 {
        crate::open(&env.runtime, &s, &env.server.url("/form.html"))
            .await
            .unwrap();
    }
    let options = browser::ObserveOptions::default();
    let (r1, r2, r3, b) = tokio::join!(
        env.runtime.finalize(&s),
        env.runtime.end_turn(&s, "turn_9"),
        env.runtime.close_session(&s),
        env.runtime.observe(&other, None, &options),
    );
    let reports = [r1.unwrap(), r2.unwrap(), r3.unwrap()];
    assert!(
        reports.iter().all(|r| r.ok && r.failed.is_empty()),
        "{reports:?}"
    );
    let mut closed: Vec<String> = reports.iter().flat_map(|r| r.closed.clone()).collect();
    closed.sort();
    closed.dedup();
    assert_eq!(
        (
            closed.len(),
            reports.iter().map(|r| r.closed.len()).sum::<usize>()
        ),
        (3, 3),
        "each tab closed exactly once: {reports:?}"
    );
    assert_eq!(page_targets(&env, "/form.html").await.0, 0);
    // Each cleanup ran whole: the audit has one complete entry per operation.
    let entries = db(&env)
        .audit_since(
            &store::SessionId::new(s.as_str()),
            store::AuditSeq(0),
            usize::MAX,
        )
        .unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e.kind.as_str())
        .filter(|k| ["finalize", "turn_end", "disposal"].contains(k))
        .collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    // The other session was never blocked or touched.
    assert_eq!(b.unwrap().title(), "Sign in — Fixture Bank");
    assert_eq!(page_targets(&env, "/login.html").await.0, 1);
}

// ---- 集成测试 (Pi/DSH → the runtime API) ----

#[tokio::test]
async fn integration_01_tools_are_activated_once_across_turns() {
    let env = env("seed-i01", true).await;
    let s = &env.session;
    let surface = crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    for turn in 1..=4 {
        let turn = format!("turn_{turn}");
        env.runtime.surface_context(s, &turn, 1).await.unwrap();
        env.runtime
            .observe(s, None, &Default::default())
            .await
            .unwrap();
        env.runtime
            .mark(s, surface, Mark::Deliverable, &turn)
            .await
            .unwrap();
        env.runtime.end_turn(s, &turn).await.unwrap();
    }
    assert_eq!(
        audit(&env, s, "tools_activated").len(),
        1,
        "activated once, reused by every later turn"
    );
    assert_eq!(audit(&env, s, "turn_end").len(), 4);
}

#[tokio::test]
async fn integration_02_turn_cleanup_is_invisible_to_the_model() {
    let env = env("seed-i02", true).await;
    let s = &env.session;
    let mut events = env.runtime.subscribe_events();
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    for turn in ["turn_1", "turn_2"] {
        crate::open(&env.runtime, s, &env.server.url("/form.html"))
            .await
            .unwrap();
        env.runtime.end_turn(s, turn).await.unwrap();
    }
    // No transcript message, no progress event: turn cleanup leaves only the operator's audit.
    assert!(only_the_agents_own_steps(&mut events));
    assert_eq!(
        audit(&env, s, "tools_activated").len(),
        1,
        "the one activation is the only load result"
    );
    assert_eq!(audit(&env, s, "turn_end").len(), 2);
}

#[tokio::test]
async fn integration_04_after_a_context_reset_the_old_snapshot_is_refused() {
    let env = env("seed-i04", true).await;
    let s = &env.session;
    let kept = crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let kept_id = newest(&env, s);
    let context = env.runtime.surface_context(s, "turn_1", 1).await.unwrap();
    let frame = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
    env.runtime
        .mark(s, kept, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    assert!(env.runtime.context_reset(s).await.unwrap().ok);
    // The snapshot the model still holds — its surface key and its frame — executes nothing.
    let key = context.surfaces()[0].surface_key().as_str().to_owned();
    for surface in [Some(name(&key)), Some(name("web:1")), None] {
        let err = env
            .runtime
            .act(
                s,
                surface.as_ref(),
                &click(&frame, "Add one"),
                &Default::default(),
                std::time::Duration::ZERO,
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            ErrorCode::CapabilityDenied,
            "the tools are off until activated again: {err}"
        );
        assert!(
            env.runtime
                .observe(s, surface.as_ref(), &Default::default())
                .await
                .is_err()
        );
    }
    // The handed-over page was not clicked.
    let target = resource(&env, &kept_id).cdp_target_id.unwrap();
    let page = env
        .browser
        .connection()
        .unwrap()
        .browser()
        .attach(&cdp::TargetId(target.to_string()))
        .await
        .unwrap();
    let text = page
        .call(cdp::domains::runtime::Evaluate::value(
            "document.getElementById('count').textContent",
        ))
        .await
        .unwrap();
    assert_eq!(text.result.value, Some(serde_json::json!("0 clicks")));
    assert!(!status(&env, s).tools_active);
}

#[tokio::test]
async fn integration_05_a_session_switch_runs_the_final_cleanup_and_keeps_failed_records() {
    let env = env("seed-i05", true).await;
    let old = env.session.clone();
    crate::open(&env.runtime, &old, &env.server.url("/form.html"))
        .await
        .unwrap();
    let kept = crate::open(&env.runtime, &old, &env.server.url("/login.html"))
        .await
        .unwrap();
    env.runtime
        .mark(&old, kept, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    // The switch: the old session is disposed, a new one takes over.
    env.runtime.close_session(&old).await.unwrap();
    let new = env.runtime.create_session().await.unwrap();
    assert_eq!(
        audit(&env, &old, "disposal").len(),
        1,
        "the final cleanup ran"
    );
    assert_eq!(page_targets(&env, "/form.html").await.0, 0);
    assert_eq!(
        page_targets(&env, "/login.html").await.0,
        1,
        "the handoff page stays for the user"
    );
    assert!(!status(&env, &new).activated && status(&env, &new).tabs.is_empty());
    // A switch whose cleanup fails keeps the old session's recovery record.
    crate::open(&env.runtime, &new, &env.server.url("/form.html"))
        .await
        .unwrap();
    kill_browser(&env).await;
    let report = env.runtime.close_session(&new).await.unwrap();
    assert!(!report.ok, "{report:?}");
    env.runtime.reconnect().await.unwrap();
    let third = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, &third, &env.server.url("/login.html"))
        .await
        .unwrap();
    let kept_records = db(&env)
        .pending_recoveries(&store::SessionId::new(new.as_str()))
        .unwrap();
    assert_eq!(
        kept_records.len(),
        1,
        "the old session's record survives the switch"
    );
    assert_eq!(kept_records[0].kind, store::RecoveryKind::CloseFailed);
}

#[tokio::test]
async fn integration_07_a_reconnect_after_a_bridge_drop_keeps_the_sessions_ownership() {
    let (env, _browser) = remote_env("seed-i07").await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    let before = records(&status(&env, s).tabs);
    env.browser.connection().unwrap().close();
    assert_eq!(status(&env, s).bridge, "reconnecting");
    assert_eq!(
        records(&status(&env, s).tabs),
        before,
        "ownership is kept while the bridge is down"
    );
    // The next operation reconnects; the same surfaces reach the same tabs.
    let observed = env
        .runtime
        .observe(s, Some(&name("s1")), &Default::default())
        .await
        .unwrap();
    assert_eq!(observed.title(), "Act");
    assert_eq!(
        env.runtime
            .observe(s, Some(&name("s2")), &Default::default())
            .await
            .unwrap()
            .title(),
        "Prices"
    );
    let after = status(&env, s);
    assert_eq!(after.bridge, "connected");
    assert_eq!(records(&after.tabs), before);
    let other = env.runtime.create_session().await.unwrap();
    assert_eq!(
        env.runtime
            .claim_tab(&other, &user)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::LeaseConflict,
        "the claim is still ours"
    );
}

#[tokio::test]
async fn integration_08_sibling_calls_never_run_beside_finalize() {
    let env = env("seed-i08", true).await;
    let s = env.session.clone();
    env.server.slow(
        "/slow",
        Duration::from_millis(1500),
        "<title>Slow</title><p>arrived</p>",
    );
    crate::open(&env.runtime, &s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let frame = env
        .runtime
        .observe(&s, None, &Default::default())
        .await
        .unwrap();
    let navigate = protocol::validate_extended_action(
        &serde_json::json!({"type": "navigate", "expected_frame_id": frame.frame_id().as_str(), "url": env.server.url("/slow"), "intent": "test"}),
    )
    .unwrap();
    let acting = env.runtime.clone();
    let session = s.clone();
    let act = tokio::spawn(async move {
        acting
            .act(
                &session,
                None,
                &navigate,
                &Default::default(),
                std::time::Duration::ZERO,
            )
            .await
    });
    crate::eventually("the navigation is in flight", || {
        !env.server.requests_to("/slow").is_empty()
    })
    .await;
    let report = env.runtime.finalize(&s).await.unwrap();
    // The finalize waited: the sibling call finished on an open tab, then the tab closed.
    let outcome = act
        .await
        .unwrap()
        .expect("the sibling call was not cut off by the finalize");
    assert_eq!(outcome.observation.unwrap().title(), "Slow");
    assert_eq!(report.closed.len(), 1, "{report:?}");
    // A call after the finalize sees its result, never a half-finished state.
    assert!(
        env.runtime
            .observe(&s, None, &Default::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn integration_09_tools_are_deactivated_only_by_reset_or_disposal() {
    let env = env("seed-i09", true).await;
    let s = env.session.clone();
    let surface = crate::open(&env.runtime, &s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    let claimed = env.runtime.claim_tab(&s, &user).await.unwrap();
    env.runtime.release_tab(&s, claimed).await.unwrap();
    env.runtime
        .mark(&s, surface, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    env.runtime.end_turn(&s, "turn_1").await.unwrap();
    env.runtime.finalize(&s).await.unwrap();
    crate::open(&env.runtime, &s, &env.server.url("/form.html"))
        .await
        .unwrap();
    kill_browser(&env).await;
    assert!(!env.runtime.context_reset(&s).await.unwrap().ok);
    env.runtime.reconnect().await.unwrap();
    assert_eq!(
        tool_changes(&env, &s),
        vec!["activated"],
        "turn end, finalize, a failed reset and a reconnect deactivate nothing"
    );
    assert!(env.runtime.context_reset(&s).await.unwrap().ok);
    env.runtime.activate_tools(&s).unwrap();
    crate::open(&env.runtime, &s, &env.server.url("/login.html"))
        .await
        .unwrap();
    env.runtime.close_session(&s).await.unwrap();
    assert_eq!(
        tool_changes(&env, &s),
        vec![
            "activated".to_owned(),
            r#"deactivated {"by":"context_reset"}"#.to_owned(),
            "activated".to_owned(),
            r#"deactivated {"by":"disposal"}"#.to_owned()
        ]
    );
}

// ---- 真实验收 ----

#[tokio::test]
async fn acceptance_1_and_2_no_tools_until_the_browser_is_asked_for_then_activated_once() {
    let env = env("seed-a01", true).await;
    let s = &env.session;
    let fresh = status(&env, s);
    assert!(
        !fresh.activated && fresh.tabs.is_empty() && fresh.debugger_leases.is_empty(),
        "{fresh:?}"
    );
    assert!(tool_changes(&env, s).is_empty());
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let frame = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
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
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    assert!(status(&env, s).tools_active);
    assert_eq!(tool_changes(&env, s), vec!["activated"]);
}

#[tokio::test]
async fn acceptance_3_one_tab_across_turns_stays_usable() {
    let env = env("seed-a03", true).await;
    let s = &env.session;
    let pid = env.runtime.browser_pid();
    let surface = crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let id = newest(&env, s);
    let target = resource(&env, &id).cdp_target_id;
    for turn in 1..=3 {
        let context = env
            .runtime
            .surface_context(s, &format!("turn_{turn}"), turn)
            .await
            .unwrap();
        assert_eq!(context.surfaces().len(), 1);
        let frame = env
            .runtime
            .observe(s, Some(&name("s1")), &Default::default())
            .await
            .unwrap();
        let outcome = env
            .runtime
            .act(
                s,
                Some(&name("s1")),
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
                .contains(&format!("{turn} clicks"))
        );
        env.runtime
            .mark(s, surface, Mark::Deliverable, &format!("turn_{turn}"))
            .await
            .unwrap();
        let report = env
            .runtime
            .end_turn(s, &format!("turn_{turn}"))
            .await
            .unwrap();
        assert_eq!(
            (
                report.kept.clone(),
                report.bridge.as_str(),
                report.tools_active
            ),
            (vec![id.clone()], "connected", true)
        );
    }
    assert_eq!(
        resource(&env, &id).cdp_target_id,
        target,
        "the same tab throughout"
    );
    assert_eq!(env.runtime.browser_pid(), pid);
}

#[tokio::test]
async fn acceptance_4_turn_end_closes_releases_and_detaches_without_transcript_noise() {
    let env = env_with("seed-a04", true, |c| {
        c.debugger_idle_detach = Duration::from_secs(3600)
    })
    .await;
    let s = &env.session;
    let mut events = env.runtime.subscribe_events();
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let kept = crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    crate::observe_until(&env.runtime, s, "Contact us").await;
    env.runtime
        .mark(s, kept, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    assert!(
        status(&env, s).debugger_leases.iter().all(|l| l.attached),
        "attached before the turn ends"
    );
    let report = env.runtime.end_turn(s, "turn_1").await.unwrap();
    assert!(
        report.ok
            && report.closed.len() == 1
            && report.released == vec![user]
            && report.kept.len() == 1,
        "{report:?}"
    );
    assert_eq!(page_targets(&env, "/form.html").await.0, 0);
    assert_eq!(
        page_targets(&env, "/login.html").await,
        (1, 0),
        "kept, and detached"
    );
    assert_eq!(
        page_targets(&env, "/table.html").await,
        (1, 0),
        "released, and detached"
    );
    assert!(
        status(&env, s)
            .debugger_leases
            .iter()
            .all(|l| !l.attached && l.refs == 0)
    );
    assert!(only_the_agents_own_steps(&mut events), "no lifecycle noise");
}

#[tokio::test]
async fn acceptance_5_finalize_handles_resources_by_ownership_and_tools_stay_usable() {
    let env = env("seed-a05", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let temp = newest(&env, s);
    let kept = crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    let kept_id = newest(&env, s);
    env.runtime
        .mark(s, kept, Mark::Deliverable, "turn_1")
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    let report = env.runtime.finalize(s).await.unwrap();
    assert_eq!(report.closed, vec![temp]);
    let mut released = report.released.clone();
    released.sort();
    let mut expected = vec![kept_id, user];
    expected.sort();
    assert_eq!(released, expected);
    assert!(report.ok && report.tools_active);
    crate::open(&env.runtime, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let frame = env
        .runtime
        .observe(s, None, &Default::default())
        .await
        .unwrap();
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
    assert_eq!(tool_changes(&env, s), vec!["activated"]);
}

#[tokio::test]
async fn acceptance_6_context_reset_resets_tool_state_as_asked() {
    let env = env("seed-a06", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let report = env.runtime.context_reset(s).await.unwrap();
    assert!(
        report.ok && !report.tools_active && report.closed.len() == 1,
        "{report:?}"
    );
    let current = status(&env, s);
    assert!(!current.tools_active && current.debugger_leases.is_empty());
    assert_eq!(
        current.bridge, "connected",
        "the bridge stays unless asked otherwise"
    );
    assert_eq!(
        db(&env)
            .get_session(&store::SessionId::new(s.as_str()))
            .unwrap()
            .state,
        store::SessionState::Reset
    );
    // Nothing runs with the tools off; asking for the browser again is a new, explicit activation.
    let refused = crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::CapabilityDenied, "{refused}");
    env.runtime.activate_tools(s).unwrap();
    assert_eq!(
        db(&env)
            .get_session(&store::SessionId::new(s.as_str()))
            .unwrap()
            .state,
        store::SessionState::Active
    );
    crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    assert_eq!(tool_changes(&env, s).len(), 3);
}

#[tokio::test]
async fn acceptance_7_disposal_without_finalize_cleans_up() {
    let env = env("seed-a07", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let kept = crate::open(&env.runtime, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    env.runtime
        .mark(s, kept, Mark::Handoff, "turn_1")
        .await
        .unwrap();
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    let report = env.runtime.close_session(s).await.unwrap();
    assert!(
        report.ok && report.closed.len() == 1 && report.released.len() == 2 && !report.tools_active,
        "{report:?}"
    );
    assert_eq!(page_targets(&env, "/form.html").await.0, 0);
    assert_eq!(page_targets(&env, "/login.html").await, (1, 0));
    assert_eq!(page_targets(&env, "/table.html").await, (1, 0));
    assert!(
        db(&env)
            .list_resources(&store::SessionId::new(s.as_str()))
            .unwrap()
            .iter()
            .all(|r| r.state == store::ResourceState::Released)
    );
    assert_eq!(
        db(&env)
            .get_session(&store::SessionId::new(s.as_str()))
            .unwrap()
            .state,
        store::SessionState::Disposed
    );
}

#[tokio::test]
async fn acceptance_8_cleanup_retried_after_a_bridge_drop_keeps_ownership() {
    let (env, _browser) = remote_env("seed-a08").await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let temp = newest(&env, s);
    let user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(s, &user).await.unwrap();
    env.browser.connection().unwrap().close();
    let failed = env.runtime.finalize(s).await.unwrap();
    assert!(
        !failed.ok && failed.failed == vec![temp.clone()],
        "{failed:?}"
    );
    let record = resource(&env, &temp);
    assert_eq!(
        (record.state, record.ownership),
        (
            store::ResourceState::CleanupUnknown,
            store::Ownership::AgentCreated
        ),
        "ownership kept while the bridge is down"
    );
    assert_eq!(
        record.session_id.map(|s| s.to_string()).as_deref(),
        Some(s.as_str())
    );
    env.runtime.reconnect().await.unwrap();
    let retried = env.runtime.finalize(s).await.unwrap();
    assert!(
        retried.ok && retried.closed == vec![temp.clone()],
        "{retried:?}"
    );
    assert_eq!(resource(&env, &temp).state, store::ResourceState::Released);
    assert_eq!(
        page_targets(&env, "/form.html").await.0,
        0,
        "the tab really closed on retry"
    );
    assert_eq!(
        page_targets(&env, "/table.html").await.0,
        1,
        "the user's tab was released, never closed"
    );
}

#[tokio::test]
async fn acceptance_9_one_session_cannot_clean_up_another() {
    let env = env("seed-a09", true).await;
    let a = env.session.clone();
    let b = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, &a, &env.server.url("/form.html"))
        .await
        .unwrap();
    crate::open(&env.runtime, &b, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let b_user = env
        .runtime
        .register_user_tab(&env.server.url("/table.html"))
        .await
        .unwrap();
    env.runtime.claim_tab(&b, &b_user).await.unwrap();
    // Both work at once while a cleans up every way it can.
    let frame = env
        .runtime
        .observe(&b, Some(&name("s1")), &Default::default())
        .await
        .unwrap();
    let (s1, add_one, options) = (
        name("s1"),
        click(&frame, "Add one"),
        browser::ActOptions::default(),
    );
    let (turn, b_act) = tokio::join!(
        env.runtime.end_turn(&a, "turn_1"),
        env.runtime
            .act(&b, Some(&s1), &add_one, &options, std::time::Duration::ZERO)
    );
    b_act.unwrap();
    assert_eq!(turn.unwrap().closed.len(), 1);
    env.runtime.finalize(&a).await.unwrap();
    // a names b's surfaces in vain: surface names are per session.
    let b_surface = env.runtime.surface_id(&b, &name("s1")).unwrap();
    assert_eq!(
        env.runtime
            .close_tab(&a, b_surface)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::UnknownSurface
    );
    assert!(
        env.runtime
            .observe(&a, Some(&name("s1")), &Default::default())
            .await
            .is_err()
    );
    assert_eq!(
        env.runtime.claim_tab(&a, &b_user).await.unwrap_err().code(),
        ErrorCode::LeaseConflict
    );
    env.runtime.close_session(&a).await.unwrap();
    let b_status = status(&env, &b);
    assert!(
        b_status
            .tabs
            .iter()
            .all(|t| t.state == runtime::ResourceState::Owned),
        "{b_status:?}"
    );
    assert_eq!(page_targets(&env, "/counter.html").await.0, 1);
    assert_eq!(page_targets(&env, "/table.html").await.0, 1);
    assert!(
        env.runtime
            .observe(&b, Some(&name("s1")), &Default::default())
            .await
            .unwrap()
            .aria_snapshot()
            .contains("1 clicks")
    );
}

/// Every event so far was a step the agent took itself (opening a tab loads its page on the one
/// path, with its action and receipt events); none came from a lifecycle operation.
fn only_the_agents_own_steps(
    events: &mut tokio::sync::broadcast::Receiver<runtime::Event>,
) -> bool {
    std::iter::from_fn(|| events.try_recv().ok()).all(|e| {
        matches!(
            e.kind,
            runtime::EventKind::ActionSummary { .. } | runtime::EventKind::Receipt { .. }
        )
    })
}
