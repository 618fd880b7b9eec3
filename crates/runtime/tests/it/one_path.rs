//! One path for every side effect (issue 13): direct calls and runs share one approval mechanism
//! and one action path. Each test is named after what the two mechanisms got wrong.

use std::time::Duration;

use protocol::ErrorCode;
use runtime::{ApprovalDecision, Assertion, EventKind, Mark};
use serde_json::json;
use test_support::FixtureServer;

use crate::{click, env, env_with, eventually, wait_for};

fn navigate(o: &protocol::Observation, url: &str) -> protocol::ExtendedAction {
    protocol::validate_extended_action(&json!({"type": "navigate", "expected_frame_id": o.frame_id().as_str(), "url": url, "intent": "go"})).unwrap()
}

fn type_name(o: &protocol::Observation, text: &str) -> protocol::ExtendedAction {
    let element = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Name")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    protocol::validate_extended_action(
        &json!({"type": "type", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": element}, "text": text, "intent": "name"}),
    )
    .unwrap()
}

async fn fixture_origin() -> FixtureServer {
    let other = FixtureServer::start().await.unwrap();
    other.dir(
        "/",
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    other
}

const NOW: Duration = Duration::ZERO;

/// The old direct path granted the page's origin when a person allowed a navigation "for this
/// site"; the person had been shown the destination.
#[tokio::test]
async fn allow_for_this_site_on_a_navigation_grants_the_destination_not_the_page_left() {
    let env = env("one-path-grant", false).await;
    let other = fixture_origin().await;
    let (s, rt) = (&env.session, &env.runtime);
    crate::open(rt, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let go = navigate(&o, &other.url("/counter.html"));
    let err = rt
        .act(s, None, &go, &Default::default(), NOW)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NeedsApproval, "{err}");
    let pending = rt.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].origin,
        other.origin(),
        "the person is shown the destination"
    );
    rt.resolve_approval(&pending[0].approval_id, ApprovalDecision::ApproveForTask)
        .unwrap();
    // The decision applied before resolve returned: the same action proceeds at once, no sleep.
    rt.act(s, None, &go, &Default::default(), NOW)
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    assert_eq!(o.origin(), other.origin());
    rt.act(s, None, &click(&o, "Add one"), &Default::default(), NOW)
        .await
        .expect("the destination is granted");
    assert!(rt.pending_approvals().is_empty());
    // The origin the tab left was never granted.
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let back = navigate(&o, &env.server.url("/counter.html"));
    assert_eq!(
        rt.act(s, None, &back, &Default::default(), NOW)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    let id = rt.pending_approvals()[0].approval_id.clone();
    assert_eq!(rt.pending_approvals()[0].origin, env.server.origin());
    rt.resolve_approval(&id, ApprovalDecision::ApproveOnce)
        .unwrap();
    rt.act(s, None, &back, &Default::default(), NOW)
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    assert_eq!(
        rt.act(s, None, &click(&o, "Add one"), &Default::default(), NOW)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    // Every approval leaves a durable trace with its outcome (never the text typed); the one
    // still waiting is withdrawn when the session ends.
    rt.close_session(s).await.unwrap();
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    let records = store::Store::list_approvals(&store, &store::SessionId::new(s.as_str())).unwrap();
    let trace: Vec<_> = records
        .iter()
        .map(|r| {
            (
                r.request.action.as_str(),
                r.request.origin.clone(),
                r.outcome.map(|o| o.as_str()),
            )
        })
        .collect();
    assert_eq!(
        trace[trace.len() - 3..],
        [
            ("navigate", other.origin(), Some("approve_for_task")),
            ("navigate", env.server.origin(), Some("approve_once")),
            ("click", env.server.origin(), Some("withdrawn")),
        ],
        "{trace:?}"
    );
}

/// Direct approvals carried an `expires_at` nobody enforced: they stayed listed and approvable.
#[tokio::test]
async fn an_expired_approval_is_neither_listed_nor_approvable() {
    // Short, but long enough that opening the page (approved, then sent again) finishes within it
    // on a loaded two-core machine.
    let env = env_with("one-path-expiry", false, |c| {
        c.approval_timeout = Duration::from_millis(2000)
    })
    .await;
    let (s, rt) = (&env.session, &env.runtime);
    crate::open(rt, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let action = type_name(&o, "Ada");
    assert_eq!(
        rt.act(s, None, &action, &Default::default(), NOW)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    let id = rt.pending_approvals()[0].approval_id.clone();
    eventually("the approval expires", || rt.pending_approvals().is_empty()).await;
    let err = rt
        .resolve_approval(&id, ApprovalDecision::ApproveOnce)
        .unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    // Sent again, the action asks afresh (a new approval), and nothing was typed.
    assert_eq!(
        rt.act(s, None, &action, &Default::default(), NOW)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    assert_ne!(rt.pending_approvals()[0].approval_id, id);
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    assert!(
        o.interactive_elements()
            .iter()
            .find(|e| e.name() == "Name")
            .unwrap()
            .value()
            .is_none_or(str::is_empty)
    );
}

/// `glovebox approve` listed the requests of dead sessions, approvable hours later.
#[tokio::test]
async fn a_closed_sessions_approvals_are_withdrawn() {
    let env = env("one-path-dead-session", false).await;
    let rt = &env.runtime;
    let gone = rt.create_session().await.unwrap();
    crate::open(rt, &gone, &env.server.url("/form.html"))
        .await
        .unwrap();
    let o = rt.observe(&gone, None, &Default::default()).await.unwrap();
    assert_eq!(
        rt.act(&gone, None, &type_name(&o, "Ada"), &Default::default(), NOW)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    let id = rt.pending_approvals()[0].approval_id.clone();
    assert_eq!(rt.pending_approvals()[0].session, gone.as_str());
    rt.close_session(&gone).await.unwrap();
    assert!(
        rt.pending_approvals().is_empty(),
        "{:?}",
        rt.pending_approvals()
    );
    assert!(
        rt.resolve_approval(&id, ApprovalDecision::ApproveOnce)
            .is_err()
    );
}

/// Approval was asked before the frame's freshness was checked, so a person could be asked about
/// an element of a frame the action could never act on.
#[tokio::test]
async fn no_approval_is_asked_for_a_stale_frame() {
    let env = env("one-path-stale", false).await;
    let (s, rt) = (&env.session, &env.runtime);
    crate::open(rt, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let old = rt.observe(s, None, &Default::default()).await.unwrap();
    // A newer observation (its screenshot is part of its frame id) makes `old` stale.
    let options = browser::ObserveOptions {
        screenshot: Some(protocol::ImageMime::Png),
        ..Default::default()
    };
    let new = rt.observe(s, None, &options).await.unwrap();
    assert_ne!(old.frame_id(), new.frame_id());
    let err = rt
        .act(s, None, &type_name(&old, "Ada"), &Default::default(), NOW)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert!(
        rt.pending_approvals().is_empty(),
        "nobody is asked about a stale frame"
    );
}

/// Concurrent direct acts of one session shared the lease holder `{session}/direct`: the second
/// took the first's lease and one reported `target_lost`.
#[tokio::test]
async fn two_direct_acts_of_one_session_queue_for_the_tab() {
    let env = env("one-path-concurrent", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    crate::open(rt, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let add = click(&o, "Add one");
    let options = browser::ActOptions::default();
    let (a, b) = tokio::join!(
        rt.act(s, None, &add, &options, NOW),
        rt.act(s, None, &add, &options, NOW)
    );
    let mut done = 0;
    for result in [a, b] {
        match result {
            Ok(_) => done += 1,
            // The second may find the page changed by the first: stale, never lost.
            Err(e) => assert_eq!(e.code(), ErrorCode::StaleObservation, "{e}"),
        }
    }
    assert!(done >= 1);
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    assert!(
        o.aria_snapshot().contains(&format!("{done} clicks")),
        "{}",
        o.aria_snapshot()
    );
}

/// A call that waits for a person proceeds exactly once when the person approves, with no retry.
#[tokio::test]
async fn a_waiting_call_proceeds_once_when_a_person_approves() {
    let env = env("one-path-waiting", false).await;
    let (s, rt) = (env.session.clone(), env.runtime.clone());
    crate::open(&rt, &s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let o = rt.observe(&s, None, &Default::default()).await.unwrap();
    let action = type_name(&o, "Ada");
    let mut events = rt.subscribe_events();
    let acting = {
        let (rt, s, action) = (rt.clone(), s.clone(), action.clone());
        tokio::spawn(async move {
            rt.act(
                &s,
                None,
                &action,
                &Default::default(),
                Duration::from_secs(20),
            )
            .await
        })
    };
    wait_for(&mut events, |e| {
        matches!(e, EventKind::ApprovalRequested { .. })
    })
    .await;
    let pending = rt.pending_approvals();
    assert_eq!(pending.len(), 1);
    rt.resolve_approval(&pending[0].approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let outcome = acting.await.unwrap().expect("the waiting call proceeds");
    assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
    assert!(rt.pending_approvals().is_empty());
    // The decision was used by that call: the same action again asks again.
    let again = rt
        .act(
            &s,
            None,
            &type_name(&outcome.observation.unwrap(), "Ada"),
            &Default::default(),
            NOW,
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::NeedsApproval);
}

/// A mark took no lock, so it could land after a turn end had read the marks and be lost.
#[tokio::test]
async fn a_mark_never_races_a_turn_end() {
    let env = env("one-path-mark", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    for round in 0..3 {
        let surface = crate::open(rt, s, &env.server.url("/counter.html"))
            .await
            .unwrap();
        let turn = format!("turn_{round}");
        let (marked, ended) = tokio::join!(
            rt.mark(s, surface, Mark::Deliverable, &turn),
            rt.end_turn(s, &turn)
        );
        ended.unwrap();
        let open = rt.surface_ids(s).unwrap().contains(&surface);
        match marked {
            // Marked before the turn end read the marks: the tab is kept.
            Ok(()) => assert!(open, "round {round}: a mark that succeeded was lost"),
            // The turn end came first and closed the tab: the mark says so.
            Err(e) => {
                assert!(!open);
                assert_eq!(e.code(), ErrorCode::UnknownSurface, "{e}");
            }
        }
        rt.finalize(s).await.unwrap();
    }
}

/// `text_present` matched the snapshot's syntax, so "button" passed on any page with a button.
#[tokio::test]
async fn text_present_matches_page_text_not_snapshot_syntax() {
    let env = env("one-path-text", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    crate::open(rt, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    assert!(
        o.aria_snapshot().contains("button \"Add one\" [e1]"),
        "{}",
        o.aria_snapshot()
    );
    let holds = |text: &str| Assertion::TextPresent { text: text.into() }.check(&o).0;
    assert!(holds("Add one") && holds("0 clicks") && holds("Counter"));
    for syntax in ["button", "[e1]", "e1", "heading", "\"Add one\"", "level=1"] {
        assert!(!holds(syntax), "{syntax:?} is syntax, not page text");
    }
}

/// `tab_open` loaded any origin at once while `act navigate` to it asked: opening a tab is now a
/// navigation on the one path, judged by its destination.
#[tokio::test]
async fn opening_a_tab_is_judged_like_navigating_to_its_page() {
    let env = env("one-path-open", false).await;
    let (s, rt) = (&env.session, &env.runtime);
    let url = env.server.url("/form.html");
    let blank_before = crate::page_targets(&env, "about:blank").await.0;
    let err = rt.open_tab(s, &url, NOW).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NeedsApproval, "{err}");
    let pending = rt.pending_approvals();
    assert_eq!(
        (pending[0].action.as_str(), pending[0].origin.as_str()),
        ("navigate", env.server.origin().as_str())
    );
    assert!(
        env.server.requests_to("/form.html").is_empty(),
        "nothing was loaded before a person decided"
    );
    assert!(
        rt.surface_ids(s).unwrap().is_empty(),
        "the waiting tab was closed again"
    );
    assert_eq!(
        crate::page_targets(&env, "about:blank").await.0,
        blank_before,
        "no tab left behind"
    );
    // Denied: the same open is refused, and again nothing is left.
    rt.resolve_approval(&pending[0].approval_id, ApprovalDecision::Deny)
        .unwrap();
    assert_eq!(
        rt.open_tab(s, &url, NOW).await.unwrap_err().code(),
        ErrorCode::ApprovalDenied
    );
    assert!(rt.surface_ids(s).unwrap().is_empty());
    // Approved once: the same open proceeds, once.
    assert_eq!(
        rt.open_tab(s, &url, NOW).await.unwrap_err().code(),
        ErrorCode::NeedsApproval
    );
    rt.resolve_approval(
        &rt.pending_approvals()[0].approval_id,
        ApprovalDecision::ApproveOnce,
    )
    .unwrap();
    let surface = rt.open_tab(s, &url, NOW).await.unwrap();
    assert_eq!(rt.surface_ids(s).unwrap(), [surface]);
    assert_eq!(env.server.requests_to("/form.html").len(), 1);
    // Too long a URL is refused before any tab exists (navigate's own limit).
    let long = format!("{}?q={}", env.server.url("/form.html"), "x".repeat(3000));
    assert_eq!(
        rt.open_tab(s, &long, NOW).await.unwrap_err().code(),
        ErrorCode::InvalidAction
    );
    assert_eq!(rt.surface_ids(s).unwrap(), [surface]);
}

/// On a trusted origin a tab opens without asking, as a navigation there would.
#[tokio::test]
async fn opening_a_tab_on_a_trusted_origin_asks_nobody() {
    let env = env("one-path-open-trusted", true).await;
    env.runtime
        .open_tab(&env.session, &env.server.url("/form.html"), NOW)
        .await
        .unwrap();
    assert!(env.runtime.pending_approvals().is_empty());
}

/// One decision table for direct calls and runs: the same action on the same page asks (or not),
/// at the same tier, whichever way it is sent — there is one path.
#[tokio::test]
async fn the_approval_decision_table_is_the_same_for_direct_calls_and_runs() {
    use runtime::{RunRequest, Scripted, ScriptedPlanner};
    const PAGE: &str = "<!doctype html><title>Table</title><main><button onclick=\"this.textContent='Added'\">Add one</button>\
        <button>Delete everything</button><label>Password <input type=password></label>\
        <div style=\"height:3000px\">tall</div></main>";
    // (trusted origin, step, the tier a person is asked at; None: nobody is asked)
    let cases: Vec<(bool, Scripted, Option<policy::RiskTier>)> = vec![
        (false, Scripted::Scroll(200), None),
        (true, Scripted::Scroll(200), None),
        (
            false,
            Scripted::Click("Add one".into()),
            Some(policy::RiskTier::R2),
        ),
        (true, Scripted::Click("Add one".into()), None),
        (
            false,
            Scripted::Click("Delete everything".into()),
            Some(policy::RiskTier::R3),
        ),
        (
            true,
            Scripted::Click("Delete everything".into()),
            Some(policy::RiskTier::R3),
        ),
        (
            true,
            Scripted::Type("Password".into(), "hunter2".into()),
            Some(policy::RiskTier::R3),
        ),
    ];
    for trusted in [false, true] {
        let env = env(
            if trusted {
                "one-path-table-trusted"
            } else {
                "one-path-table"
            },
            trusted,
        )
        .await;
        env.server.html("/table", PAGE);
        let (s, rt) = (&env.session, &env.runtime);
        crate::open(rt, s, &env.server.url("/table")).await.unwrap();
        for (case, (_, step, want)) in cases.iter().enumerate().filter(|(_, c)| c.0 == trusted) {
            // Direct: the step as one action on the latest frame; a pending approval is denied.
            let o = rt.observe(s, None, &Default::default()).await.unwrap();
            let mut planner = ScriptedPlanner::new([step.clone()]);
            let input = runtime::PlanInput {
                task: "t".into(),
                observation: o,
                step: 0,
                last: None,
                screenshot: None,
            };
            let runtime::PlannerStep::Act(action) =
                runtime::Planner::next(&mut planner, input).await.unwrap()
            else {
                panic!("a step")
            };
            let direct = match rt.act(s, None, &action, &Default::default(), NOW).await {
                Err(e) if e.code() == ErrorCode::NeedsApproval => {
                    let pending = rt.pending_approvals();
                    rt.resolve_approval(&pending[0].approval_id, ApprovalDecision::Deny)
                        .unwrap();
                    Some(pending[0].tier)
                }
                Ok(_) => None,
                Err(e) => panic!("case {case}: {e}"),
            };
            // A run of the same step; the test is the person, and denies.
            let mut events = rt.subscribe_events();
            let planner = Box::new(ScriptedPlanner::new([
                step.clone(),
                Scripted::GiveUp("end".into()),
            ]));
            // The person's task carries the password the run types (a run types no other secret).
            let (handle, join) = rt
                .start_run(s, RunRequest::new("t hunter2"), planner)
                .unwrap();
            let mut run = None;
            while let Ok(event) = events.recv().await {
                match event.kind {
                    EventKind::ApprovalRequested {
                        approval_id, tier, ..
                    } if event.run_id == handle.run_id.as_str() => {
                        run = Some(tier);
                        rt.resolve_approval(&approval_id, ApprovalDecision::Deny)
                            .unwrap();
                    }
                    EventKind::RunEnded { .. } if event.run_id == handle.run_id.as_str() => break,
                    _ => {}
                }
            }
            assert_ne!(join.await.unwrap().status(), protocol::RunStatus::Succeeded);
            assert_eq!(
                (direct, run),
                (*want, *want),
                "case {case} (trusted {trusted}): direct and run decide alike"
            );
        }
    }
}

/// An unreachable page was `internal` ("report it if it repeats") and left its tab behind: it is
/// a navigation failure the model can act on, named by the browser's net error, and the tab goes.
#[tokio::test]
async fn an_unreachable_page_is_a_named_navigation_failure_and_leaves_no_tab() {
    let env = env("one-path-unreachable", false).await;
    let (s, rt) = (&env.session, &env.runtime);
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = crate::open(rt, s, &format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
    assert!(err.to_string().contains("ERR_CONNECTION_REFUSED"), "{err}");
    assert!(
        rt.surface_ids(s).unwrap().is_empty(),
        "the tab was closed again"
    );
}

/// A tab closed from outside (a person, a crash) was still listed as owned, and the next call
/// said `ambiguous_surface` with an empty list of names.
#[tokio::test]
async fn a_tab_closed_from_outside_leaves_the_session_and_is_not_described_as_alive() {
    let env = env("one-path-outside-close", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    let surface = crate::open(rt, s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let target = o.target().tab_id.as_str().to_owned();
    env.browser
        .connection()
        .unwrap()
        .browser()
        .call(cdp::domains::target::CloseTarget {
            target_id: cdp::TargetId(target),
        })
        .await
        .unwrap();
    let err = rt
        .act(s, None, &click(&o, "Add one"), &Default::default(), NOW)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TargetLost, "{err}");
    assert!(
        !rt.surface_ids(s).unwrap().contains(&surface),
        "the dead tab left the session"
    );
    let status = rt.status(s).unwrap();
    assert!(
        status
            .tabs
            .iter()
            .all(|t| t.state != runtime::ResourceState::Owned),
        "nothing dead is owned: {status:?}"
    );
    // The next call says what to do, not "name one of: " with nothing after it.
    let err = rt.observe(s, None, &Default::default()).await.unwrap_err();
    assert!(err.to_string().contains("tab_open"), "{err}");
}

/// A call dropped while it waits for a person (a client that went away) still lets the tab's
/// lease go, and an open leaves no blank tab behind.
#[tokio::test]
async fn a_call_dropped_while_it_waits_for_a_person_leaves_nothing_held() {
    let env = env("one-path-dropped", false).await;
    let (s, rt) = (env.session.clone(), env.runtime.clone());
    crate::open(&rt, &s, &env.server.url("/form.html"))
        .await
        .unwrap();
    let o = rt.observe(&s, None, &Default::default()).await.unwrap();
    let action = type_name(&o, "Ada");
    let mut events = rt.subscribe_events();
    let waiting = {
        let (rt, s, action) = (rt.clone(), s.clone(), action.clone());
        tokio::spawn(async move {
            rt.act(
                &s,
                None,
                &action,
                &Default::default(),
                Duration::from_secs(60),
            )
            .await
        })
    };
    wait_for(&mut events, |e| {
        matches!(e, EventKind::ApprovalRequested { .. })
    })
    .await;
    waiting.abort();
    let _ = waiting.await;
    // The lease went with the call: the same action finds its approval pending, not the tab held.
    let again = rt
        .act(&s, None, &action, &Default::default(), NOW)
        .await
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::NeedsApproval, "{again}");

    let opening = {
        let (rt, s, url) = (rt.clone(), s.clone(), env.server.url("/login.html"));
        tokio::spawn(async move { rt.open_tab(&s, &url, Duration::from_secs(60)).await })
    };
    wait_for(&mut events, |e| {
        matches!(e, EventKind::ApprovalRequested { .. })
    })
    .await;
    assert_eq!(
        rt.surface_ids(&s).unwrap().len(),
        2,
        "the new tab waits for its page"
    );
    opening.abort();
    let _ = opening.await;
    crate::eventually("the waiting tab is closed", || {
        rt.surface_ids(&s).unwrap().len() == 1
    })
    .await;
}

/// Issue 35: an act whose tab died while it waited answered `ambiguous_surface` (the tab had
/// left the session by the time the answer was made); the act's own tab is lost: `target_lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_that_dies_during_a_wait_is_target_lost() {
    let env = env("one-path-dies-waiting", true).await;
    let (s, rt) = (env.session.clone(), env.runtime.clone());
    crate::open(&rt, &s, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let o = rt.observe(&s, None, &Default::default()).await.unwrap();
    let target = o.target().tab_id.as_str().to_owned();
    let wait = protocol::validate_extended_action(&serde_json::json!({"type": "wait",
        "expected_frame_id": o.frame_id().as_str(), "duration_ms": 3000, "intent": "wait"}))
    .unwrap();
    let acting = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.act(&s, None, &wait, &Default::default(), NOW).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    env.browser
        .connection()
        .unwrap()
        .browser()
        .call(cdp::domains::target::CloseTarget {
            target_id: cdp::TargetId(target),
        })
        .await
        .unwrap();
    let err = acting.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::TargetLost, "{err}");
}

/// Issue 35: the time a locator took to resolve passed before the act's deadline began (30 s
/// against 10). A page that stops answering fails the act within its deadline, `timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locator_on_a_page_that_stops_answering_holds_the_acts_deadline() {
    let env = env("one-path-locator-deadline", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    env.server.html(
        "/freezes.html",
        "<!doctype html><title>Freezes</title><button>Go</button><script>setTimeout(() => { const t = Date.now(); while (Date.now() - t < 20000) {} }, 1500);</script>",
    );
    crate::open(rt, s, &env.server.url("/freezes.html"))
        .await
        .unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let click = protocol::validate_extended_action(&serde_json::json!({"type": "click",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "role", "role": "button", "name": "Go"}, "intent": "go"}))
    .unwrap();
    let options = runtime::ActOptions {
        deadline: std::time::Duration::from_secs(2),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let err = rt.act(s, None, &click, &options, NOW).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
    assert!(
        took < std::time::Duration::from_secs(8),
        "the act's 2 s deadline held: it took {took:?}"
    );
}
