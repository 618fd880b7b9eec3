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
    let fake = FakeAdapter::new();
    let mut config = RuntimeConfig::new(crate::data_dir(name));
    config.relaunch_dead_browser = false;
    let runtime = Runtime::start(config, fake.clone()).await.expect("the runtime starts on the fake adapter");
    (runtime, fake)
}

#[tokio::test]
async fn the_one_path_runs_on_an_adapter_with_no_browser() {
    let (rt, fake) = start("fake-one-path").await;
    let s = rt.create_session().await.unwrap();
    let surface = rt.open_tab(&s, "about:blank", Duration::ZERO).await.unwrap();
    let id = fake.log().opened[0].clone();
    let first = rt.observe(&s, None, &Default::default()).await.unwrap();
    let second = rt.observe(&s, None, &Default::default()).await.unwrap();
    assert_ne!(first.frame_id(), second.frame_id(), "every observation is a new frame");

    // Freshness: an action planned on an older frame is refused before the adapter sees it.
    let stale = rt.act(&s, None, &click(&first, "Add one"), &Default::default(), Duration::ZERO).await.unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleObservation, "{stale}");
    assert!(fake.log().acted.is_empty(), "a stale action reached the adapter");

    // An untrusted origin: the click waits for a person, and nothing is sent meanwhile.
    let action = click(&second, "Add one");
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = rt.act(&s, None, &action, &Default::default(), Duration::ZERO).await else {
        panic!("a click on an untrusted origin needs a person");
    };
    let pending = rt.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].origin, "https://fake.example", "the approval names the origin the click reaches");
    assert!(fake.log().acted.is_empty(), "nothing was sent while the approval is pending");

    // The person approves once: the identical action proceeds exactly once, with its receipt.
    rt.resolve_approval(&approval_id, ApprovalDecision::ApproveOnce).unwrap();
    let outcome = rt.act(&s, None, &action, &Default::default(), Duration::ZERO).await.unwrap();
    assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
    assert_eq!(fake.log().acted, ["click"]);
    assert_eq!(fake.count(&id), Some(1));
    let fresh = outcome.observation.expect("a fresh observation after the action");
    assert!(fresh.aria_snapshot().contains("1 clicks"), "{}", fresh.aria_snapshot());
    // The approval was for once: the next click on the new frame asks again.
    let again = rt.act(&s, None, &click(&fresh, "Add one"), &Default::default(), Duration::ZERO).await.unwrap_err();
    assert_eq!(again.code(), ErrorCode::NeedsApproval, "{again}");
    assert_eq!(fake.count(&id), Some(1));

    // A person takes the write capability away: the runtime refuses, the adapter is not asked.
    rt.set_access(&s, surface, runtime::Access::Observe).unwrap();
    let denied = rt.act(&s, None, &click(&fresh, "Add one"), &Default::default(), Duration::ZERO).await.unwrap_err();
    assert_eq!(denied.code(), ErrorCode::CapabilityDenied, "{denied}");

    // The turn's end closes the agent's unmarked tab through the adapter.
    rt.end_current_turn(&s).await.unwrap();
    assert_eq!(fake.log().closed, std::slice::from_ref(&id), "the turn end closed the agent's tab");
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
    let surface = rt.open_tab(&s, "about:blank", Duration::ZERO).await.unwrap();
    let refused = rt.release_tab(&s, surface).await.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidAction, "{refused}");
    assert!(refused.to_string().contains("not a claimed tab"), "{refused}");
    assert_eq!(rt.surface_ids(&s).unwrap(), [surface], "the tab stays the session's");
    let status = rt.status(&s).unwrap();
    assert!(status.tabs.iter().all(|t| t.ownership == runtime::Ownership::AgentCreated), "{status:?}");
    assert!(fake.log().closed.is_empty());
}
