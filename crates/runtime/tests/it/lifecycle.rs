//! The browser lifecycle across turns (`002_…`): ownership, turn-end cleanup, marks, finalize,
//! reset, disposal, reconnect, isolation between sessions, serialisation.

use protocol::ErrorCode;
use runtime::Mark;

use crate::env;

fn tab<'a>(status: &'a runtime::BrowserStatus, resource: &str) -> &'a runtime::TabStatus {
    status.tabs.iter().find(|t| t.resource == resource).unwrap_or_else(|| panic!("{resource} in {status:?}"))
}

async fn page_open(env: &crate::Env, target_count_of: &str) -> usize {
    let targets = env.runtime.connection().browser().call(cdp::domains::target::GetTargets {}).await.unwrap().target_infos;
    targets.iter().filter(|t| t.target_type == "page" && t.url.contains(target_count_of)).count()
}

#[tokio::test]
async fn turn_end_closes_unmarked_agent_tabs_releases_claims_keeps_marks_and_tools_stay_active() {
    let env = env("lifecycle-turns", true).await;
    let s = &env.session;
    let temp = env.runtime.open_tab(s, &env.server.url("/form.html")).await.unwrap();
    let kept = env.runtime.open_tab(s, &env.server.url("/login.html")).await.unwrap();
    let user = env.runtime.register_user_tab(&env.server.url("/table.html")).await.unwrap();
    let claimed = env.runtime.claim_tab(s, &user).await.unwrap();
    let untouched_user = env.runtime.register_user_tab(&env.server.url("/tree.html")).await.unwrap();
    env.runtime.mark(s, kept, Mark::Deliverable, "turn_1").unwrap();
    let report = env.runtime.end_turn(s, "turn_1").await.unwrap();
    assert!(report.ok && report.tools_active, "{report:?}");
    assert_eq!(report.closed.len(), 1);
    assert_eq!(report.released, vec![user.clone()]);
    assert_eq!(report.kept.len(), 1);
    assert_eq!(page_open(&env, "/form.html").await, 0, "the unmarked agent tab is closed");
    assert_eq!(page_open(&env, "/login.html").await, 1, "the marked tab is kept");
    assert_eq!(page_open(&env, "/table.html").await, 1, "a claimed user tab is released, never closed");
    assert_eq!(page_open(&env, "/tree.html").await, 1, "a user tab is never closed");
    let status = env.runtime.status(s).unwrap();
    assert!(status.tools_active);
    assert_eq!(status.bridge, "connected");
    assert_eq!(tab(&status, &report.kept[0]).state, "retained");
    assert!(!status.tabs.iter().any(|t| t.resource == untouched_user));
    // The kept tab is usable next turn (re-attached on demand).
    let observed = env.runtime.observe(s, None, &Default::default()).await.unwrap();
    assert_eq!(observed.title(), "Sign in — Fixture Bank");
    // A mark must be renewed to survive another turn.
    let report = env.runtime.end_turn(s, "turn_2").await.unwrap();
    assert_eq!(report.closed.len(), 1, "the unrenewed mark expired: {report:?}");
    assert_eq!(page_open(&env, "/login.html").await, 0);
    assert!(env.runtime.status(s).unwrap().tools_active, "tools stay active across turns");
    let _ = (temp, claimed);
}

#[tokio::test]
async fn finalize_keeps_tools_and_hands_marked_tabs_over_reset_deactivates() {
    let env = env("lifecycle-finalize", true).await;
    let s = &env.session;
    env.runtime.open_tab(s, &env.server.url("/form.html")).await.unwrap();
    let handoff = env.runtime.open_tab(s, &env.server.url("/login.html")).await.unwrap();
    env.runtime.mark(s, handoff, Mark::Handoff, "turn_1").unwrap();
    let report = env.runtime.finalize(s).await.unwrap();
    assert!(report.ok && report.tools_active, "{report:?}");
    assert_eq!((report.closed.len(), report.released.len()), (1, 1));
    assert_eq!(page_open(&env, "/login.html").await, 1, "the handoff tab stays open, now the user's");
    assert!(env.runtime.status(s).unwrap().tabs.iter().all(|t| t.state == "released" || t.ownership == "user"));
    // Finalize twice is harmless.
    assert!(env.runtime.finalize(s).await.unwrap().ok);
    env.runtime.open_tab(s, &env.server.url("/form.html")).await.unwrap();
    let report = env.runtime.context_reset(s).await.unwrap();
    assert!(report.ok && !report.tools_active);
    assert!(!env.runtime.status(s).unwrap().tools_active);
}

#[tokio::test]
async fn a_failed_cleanup_keeps_ownership_and_a_recovery_record_reset_clears_nothing_then_recovers() {
    let env = env("lifecycle-failure", true).await;
    let s = &env.session;
    let surface = env.runtime.open_tab(s, &env.server.url("/form.html")).await.unwrap();
    let _ = surface;
    // The browser dies: the connection is gone, closes fail.
    let pid = env.runtime.browser_pid().unwrap();
    // SAFETY: killing the browser this test's runtime launched.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    tokio::time::timeout(std::time::Duration::from_secs(5), env.runtime.connection().closed()).await.unwrap();
    let report = env.runtime.context_reset(s).await.unwrap();
    assert!(!report.ok, "{report:?}");
    assert_eq!(report.failed.len(), 1);
    let status = env.runtime.status(s).unwrap();
    assert!(status.tools_active, "a failed reset clears nothing");
    assert_eq!(status.tabs[0].state, "cleanup_unknown");
    assert_eq!(status.tabs[0].ownership, "agent_created", "ownership is kept");
    assert_eq!(status.pending_recoveries, 1);
    assert_eq!(status.bridge, "reconnecting");
    // Reconnect (a new browser); the retry succeeds: the old tab died with the old browser.
    env.runtime.reconnect().await.unwrap();
    assert_eq!(env.runtime.status(s).unwrap().bridge, "connected");
    let report = env.runtime.finalize(s).await.unwrap();
    assert!(report.ok, "{report:?}");
    let status = env.runtime.status(s).unwrap();
    assert_eq!(status.pending_recoveries, 0);
    assert_eq!(status.tabs[0].state, "released");
    // The session works again after the reconnect.
    env.runtime.open_tab(s, &env.server.url("/login.html")).await.unwrap();
    assert_eq!(env.runtime.observe(s, None, &Default::default()).await.unwrap().title(), "Sign in — Fixture Bank");
}

#[tokio::test]
async fn disposal_without_finalize_cleans_up_and_sessions_cannot_touch_each_others_tabs() {
    let env = env("lifecycle-dispose", true).await;
    let a = &env.session;
    let b = env.runtime.create_session().await.unwrap();
    let user = env.runtime.register_user_tab(&env.server.url("/table.html")).await.unwrap();
    env.runtime.claim_tab(a, &user).await.unwrap();
    let err = env.runtime.claim_tab(&b, &user).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseConflict, "first claim wins: {err}");
    env.runtime.open_tab(&b, &env.server.url("/login.html")).await.unwrap();
    env.runtime.open_tab(a, &env.server.url("/form.html")).await.unwrap();
    let report = env.runtime.close_session(a).await.unwrap();
    assert!(report.ok);
    assert_eq!(page_open(&env, "/form.html").await, 0, "a's agent tab closed");
    assert_eq!(page_open(&env, "/table.html").await, 1, "a's claimed tab released, still open");
    assert_eq!(page_open(&env, "/login.html").await, 1, "b's tab untouched");
    assert_eq!(env.runtime.observe(&b, None, &Default::default()).await.unwrap().title(), "Sign in — Fixture Bank");
    // Now b may claim the released user tab.
    env.runtime.claim_tab(&b, &user).await.unwrap();
}

#[tokio::test]
async fn concurrent_finalize_turn_end_and_disposal_are_serialised_and_idempotent() {
    let env = env("lifecycle-concurrent", true).await;
    let s = env.session.clone();
    for _ in 0..3 {
        env.runtime.open_tab(&s, &env.server.url("/form.html")).await.unwrap();
    }
    let (r1, r2, r3) = tokio::join!(env.runtime.finalize(&s), env.runtime.end_turn(&s, "turn_9"), env.runtime.finalize(&s));
    let closed: usize = [r1.unwrap(), r2.unwrap(), r3.unwrap()].iter().map(|r| r.closed.len()).sum();
    assert_eq!(closed, 3, "each tab closed exactly once");
    assert_eq!(page_open(&env, "/form.html").await, 0);
    let status = env.runtime.status(&s).unwrap();
    assert!(status.tabs.iter().all(|t| t.state == "released"), "{status:?}");
    let report = env.runtime.close_session(&s).await.unwrap();
    assert!(report.ok && report.closed.is_empty());
}

#[tokio::test]
async fn records_survive_a_runtime_restart_and_old_handles_are_never_reused() {
    let env = env("lifecycle-restart", true).await;
    let s = env.session.clone();
    let surface = env.runtime.open_tab(&s, &env.server.url("/form.html")).await.unwrap();
    env.runtime.mark(&s, surface, Mark::Deliverable, "turn_1").unwrap();
    drop(env.runtime);
    let restarted = runtime::Runtime::start(runtime::RuntimeConfig::new(&env.data_dir)).await.unwrap();
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    use store::Store as _;
    let resources = store.list_resources(&store::SessionId::new(&s)).unwrap();
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].mark, store::Mark::Deliverable, "the record survived");
    assert!(resources[0].handle_lost, "the old browser's handle is known gone");
    let _ = restarted;
}
