//! The seam is real: the runtime's one path driven through `test_support::fake::FakeAdapter`, an
//! adapter with no browser behind it (issue 28). Freshness, the capability and origin checks, a
//! person's approval, the act and its receipt, the turn end's cleanup and a dead backend all
//! happen in the runtime; the fake only observes, acts and closes when told.

use std::time::Duration;

use protocol::ErrorCode;
use runtime::{ApprovalDecision, Runtime, RuntimeConfig, RuntimeError};
use test_support::fake::FakeAdapter;

use crate::click;

async fn start(name: &str) -> (Runtime, std::sync::Arc<FakeAdapter>) {
    start_with(name, |_| {}).await
}

#[tokio::test]
async fn the_one_path_runs_on_an_adapter_with_no_browser() {
    let (rt, fake) = start("fake-one-path").await;
    let s = rt.create_session().await.unwrap();
    let surface = rt
        .open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let id = fake.log().opened[0].clone();
    let first = rt.observe(&s, None, &Default::default()).await.unwrap();
    let second = rt.observe(&s, None, &Default::default()).await.unwrap();
    assert_ne!(
        first.frame_id(),
        second.frame_id(),
        "every observation is a new frame"
    );

    // Freshness: an action planned on an older frame is refused before the adapter sees it.
    let stale = rt
        .act(
            &s,
            None,
            &click(&first, "Add one"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleObservation, "{stale}");
    assert!(
        fake.log().acted.is_empty(),
        "a stale action reached the adapter"
    );

    // An untrusted origin: the click waits for a person, and nothing is sent meanwhile.
    let action = click(&second, "Add one");
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = rt
        .act(&s, None, &action, &Default::default(), Duration::ZERO)
        .await
    else {
        panic!("a click on an untrusted origin needs a person");
    };
    let pending = rt.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].origin, "https://fake.example",
        "the approval names the origin the click reaches"
    );
    assert!(
        fake.log().acted.is_empty(),
        "nothing was sent while the approval is pending"
    );

    // The person approves once: the identical action proceeds exactly once, with its receipt.
    rt.resolve_approval(&approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let outcome = rt
        .act(&s, None, &action, &Default::default(), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
    assert_eq!(fake.log().acted, ["click"]);
    assert_eq!(fake.count(&id), Some(1));
    let fresh = outcome
        .observation
        .expect("a fresh observation after the action");
    assert!(
        fresh.aria_snapshot().contains("1 clicks"),
        "{}",
        fresh.aria_snapshot()
    );
    // The approval was for once: the next click on the new frame asks again.
    let again = rt
        .act(
            &s,
            None,
            &click(&fresh, "Add one"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::NeedsApproval, "{again}");
    assert_eq!(fake.count(&id), Some(1));

    // A person takes the write capability away: the runtime refuses, the adapter is not asked.
    rt.set_access(&s, surface, runtime::Access::Observe)
        .unwrap();
    let denied = rt
        .act(
            &s,
            None,
            &click(&fresh, "Add one"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.code(), ErrorCode::CapabilityDenied, "{denied}");

    // The turn's end closes the agent's unmarked tab through the adapter.
    rt.end_current_turn(&s).await.unwrap();
    assert_eq!(
        fake.log().closed,
        std::slice::from_ref(&id),
        "the turn end closed the agent's tab"
    );
    assert!(rt.surface_ids(&s).unwrap().is_empty());

    // A dead backend is a structured error, not a panic or a hang.
    fake.set_down(true);
    let s2 = rt.create_session().await.unwrap_err();
    assert_eq!(s2.code(), ErrorCode::BackendUnavailable, "{s2}");
}

/// Regression (issue 28): `tab_release`'s "only a claimed tab" rule lived in MCP alone, so the
/// runtime (and the host API) handed an agent's own tab over as a person's.
#[tokio::test]
async fn an_agent_tab_is_never_released_as_a_persons() {
    let (rt, fake) = start("fake-release-own-tab").await;
    let s = rt.create_session().await.unwrap();
    let surface = rt
        .open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let refused = rt.release_tab(&s, surface).await.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidAction, "{refused}");
    assert!(
        refused.to_string().contains("not a claimed tab"),
        "{refused}"
    );
    assert_eq!(
        rt.surface_ids(&s).unwrap(),
        [surface],
        "the tab stays the session's"
    );
    let status = rt.status(&s).unwrap();
    assert!(
        status
            .tabs
            .iter()
            .all(|t| t.ownership == runtime::Ownership::AgentCreated),
        "{status:?}"
    );
    assert!(fake.log().closed.is_empty());
}

async fn start_with(
    name: &str,
    tune: impl FnOnce(&mut RuntimeConfig),
) -> (Runtime, std::sync::Arc<FakeAdapter>) {
    let fake = FakeAdapter::new();
    let mut config = RuntimeConfig::new(crate::data_dir(name));
    config.relaunch_dead_browser = false;
    tune(&mut config);
    let runtime = Runtime::start(config, fake.clone())
        .await
        .expect("the runtime starts on the fake adapter");
    (runtime, fake)
}

/// Waits until exactly one approval is pending and answers it.
async fn approve_when_asked(rt: &Runtime, after: Duration) {
    for _ in 0..200 {
        if let Some(p) = rt.pending_approvals().first() {
            tokio::time::sleep(after).await;
            rt.resolve_approval(&p.approval_id, ApprovalDecision::ApproveOnce)
                .unwrap();
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no approval was asked for");
}

/// Regression (issue 28): a direct call waiting for a person's approval longer than the lease's
/// time lost its lease, so the person's decision ended in `target_lost`.
#[tokio::test]
async fn a_lease_lives_while_a_direct_call_waits_for_a_person() {
    let (rt, fake) = start_with("fake-lease-approval", |c| {
        c.lease_ttl = Duration::from_millis(300)
    })
    .await;
    let s = rt.create_session().await.unwrap();
    rt.open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let id = fake.log().opened[0].clone();
    let o = rt.observe(&s, None, &Default::default()).await.unwrap();
    let action = click(&o, "Add one");
    let options = runtime::ActOptions::default();
    let (answered, outcome) = tokio::join!(
        approve_when_asked(&rt, Duration::from_millis(1_000)),
        rt.act(&s, None, &action, &options, Duration::from_secs(10))
    );
    let () = answered;
    let outcome =
        outcome.expect("the approved click goes through after a wait longer than the lease's time");
    assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
    assert_eq!(fake.count(&id), Some(1));
}

/// Regression (issue 28): a run waiting for its model (or a person) longer than the lease's time
/// lost its lease, and its next step failed `target_lost`; meanwhile another session could take
/// the tab's input.
#[tokio::test]
async fn a_runs_lease_lives_while_it_waits_for_its_model_and_a_person() {
    let (rt, fake) = start_with("fake-lease-run", |c| {
        c.lease_ttl = Duration::from_millis(300)
    })
    .await;
    let s = rt.create_session().await.unwrap();
    rt.open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let id = fake.log().opened[0].clone();
    let planner = runtime::ScriptedPlanner::new([
        runtime::Scripted::Think(Duration::from_millis(1_000)),
        runtime::Scripted::Click("Add one".into()),
        runtime::Scripted::GiveUp("clicked once".into()),
    ]);
    let mut request = runtime::RunRequest::new("click the button once");
    request.max_seconds = 30;
    let before = rt.observe(&s, None, &Default::default()).await.unwrap();
    let (_, join) = rt.start_run(&s, request, Box::new(planner)).unwrap();
    // Past the lease's time while the run waits for a person, the tab is still the run's: a
    // direct call of the same session is a conflict, not a taker of an expired lease.
    while rt.pending_approvals().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // (Observing would make the run's frame stale; the lease is checked before freshness.)
    let options = runtime::ActOptions {
        deadline: Duration::from_millis(200),
        ..Default::default()
    };
    let conflict = rt
        .act(
            &s,
            None,
            &click(&before, "Add one"),
            &options,
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(conflict.code(), ErrorCode::LeaseConflict, "{conflict}");
    approve_when_asked(&rt, Duration::ZERO).await;
    let result = join.await.unwrap();
    assert_ne!(
        result.reason_code(),
        protocol::ReasonCode::TargetLost,
        "{}",
        result.summary()
    );
    assert_eq!(
        fake.count(&id),
        Some(1),
        "the click was sent: {}",
        result.summary()
    );
}

/// Regression (issue 28): "approve once" on an action that reaches two origins (a link on one
/// page to another site) asked the person three times when nobody waited — the first origin's
/// decision was used up while the second was still asked, so the first was asked again. Each
/// origin is one decision, asked once.
#[tokio::test]
async fn an_action_reaching_two_origins_asks_once_per_origin() {
    let (rt, fake) = start("fake-two-origins").await;
    let s = rt.create_session().await.unwrap();
    rt.open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let o = rt.observe(&s, None, &Default::default()).await.unwrap();
    let action = click(&o, "Visit other");
    let mut asked = Vec::new();
    let options = runtime::ActOptions::default();
    for _ in 0..4 {
        match rt.act(&s, None, &action, &options, Duration::ZERO).await {
            Err(RuntimeError::NeedsApproval { .. }) => {
                for p in rt.pending_approvals() {
                    asked.push(p.origin.clone());
                    rt.resolve_approval(&p.approval_id, ApprovalDecision::ApproveOnce)
                        .unwrap();
                }
            }
            Ok(outcome) => {
                assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    asked.sort();
    assert_eq!(
        asked,
        ["https://fake.example", "https://other.example"],
        "each origin asked about once"
    );
    assert_eq!(
        fake.log().acted,
        ["click"],
        "the click went once, after both decisions"
    );
    // Used up: the same click on the next frame asks again.
    let fresh = rt.observe(&s, None, &Default::default()).await.unwrap();
    let again = rt
        .act(
            &s,
            None,
            &click(&fresh, "Visit other"),
            &options,
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::NeedsApproval, "{again}");
}

/// Issue 29: a person's access switch turned down while a run is under way holds from the run's
/// next write (a run judged by the capabilities the tab had when it started).
#[tokio::test]
async fn an_access_switch_turned_down_mid_run_holds_at_its_next_write() {
    let (rt, fake) = start("fake-access-mid-run").await;
    let s = rt.create_session().await.unwrap();
    let surface = rt
        .open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    let id = fake.log().opened[0].clone();
    let planner = runtime::ScriptedPlanner::new([
        runtime::Scripted::Think(Duration::from_millis(500)),
        runtime::Scripted::Click("Add one".into()),
        runtime::Scripted::GiveUp("done".into()),
    ]);
    let mut request = runtime::RunRequest::new("click once");
    request.max_seconds = 30;
    let (_, join) = rt.start_run(&s, request, Box::new(planner)).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    rt.set_access(&s, surface, runtime::Access::Observe)
        .unwrap();
    let result = join.await.unwrap();
    assert_eq!(
        result.reason_code(),
        protocol::ReasonCode::CapabilityDenied,
        "{}",
        result.summary()
    );
    assert!(
        rt.pending_approvals().is_empty(),
        "nobody is asked about a write the person switched off"
    );
    assert_eq!(fake.count(&id), Some(0), "nothing was sent");
}

/// Issue 35: a call made just after the backend was relaunched used a context of the dead
/// backend ("Failed to find browser context"): the relaunch installs its connection before it
/// recreates the sessions' contexts, and a call that saw an open connection did not wait. A call
/// waits for a reconnect in progress, and sees its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_a_relaunch_waits_for_the_sessions_contexts() {
    let (rt, fake) = start("fake-relaunch-contexts").await;
    let s = rt.create_session().await.unwrap();
    rt.open_tab(&s, "about:blank", Duration::ZERO)
        .await
        .unwrap();
    fake.crash();
    fake.set_context_delay(Duration::from_millis(500));
    let reconnecting = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.reconnect().await })
    };
    // The relaunch's connection is up at once; its contexts come half a second later.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let opened = rt.open_tab(&s, "about:blank", Duration::ZERO).await;
    reconnecting.await.unwrap().unwrap();
    assert!(opened.is_ok(), "{opened:?}");
}
