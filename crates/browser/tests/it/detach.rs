//! Detach and resume: a tab the runtime detached from (an idle debugger lease, a turn's end) and
//! attached to again keeps what the model saw — the frame and its refs hold while the page is
//! unchanged, typed secrets stay redacted — and a page that changed meanwhile is stale.

use std::time::Duration;

use browser::{ActOptions, Tab};
use protocol::{ErrorCode, ExtendedAction, Observation, ReceiptState};
use serde_json::json;

use crate::{env, observe, observe_eval};

fn act_on(frame: &Observation, kind: &str, name: &str, text: Option<&str>) -> ExtendedAction {
    let element = frame
        .interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| panic!("no {name:?}"))
        .element()
        .as_str()
        .to_owned();
    let mut value = json!({"type": kind, "expected_frame_id": frame.frame_id().as_str(), "target": {"kind": "element", "ref": element}, "intent": "test"});
    if let Some(text) = text {
        value["text"] = json!(text);
    }
    protocol::validate_action(&value)
        .expect("a valid action")
        .into()
}

async fn detach_and_resume(env: &crate::Env, tab: Tab) -> Tab {
    let memory = tab.memory();
    tab.detach(Duration::from_secs(5)).await.expect("detached");
    let target = tab.target_id().clone();
    drop(tab);
    let session = env
        .conn
        .browser()
        .attach(&target)
        .await
        .expect("attach again");
    Tab::resume(session, memory).await.expect("resumed")
}

async fn sessions_attached_to(env: &crate::Env, tab: &Tab) -> usize {
    let targets = env
        .conn
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    targets
        .iter()
        .filter(|t| t.target_id.as_ref() == Some(tab.target_id()) && t.attached)
        .count()
}

#[tokio::test]
async fn a_frame_observed_before_a_detach_still_acts_after_resume() {
    let env = env().await;
    let tab = env.open("/counter.html").await;
    let frame = observe(&tab).await;
    let tab = detach_and_resume(&env, tab).await;
    let outcome = tab
        .act(
            &act_on(&frame, "click", "Add one", None),
            &ActOptions::default(),
        )
        .await
        .expect("the old frame still holds");
    assert!(
        matches!(
            outcome.receipt.state(),
            ReceiptState::Dispatched | ReceiptState::Confirmed
        ),
        "{:?}",
        outcome.receipt
    );
    assert_eq!(
        observe_eval(&tab, "document.getElementById('count').textContent").await,
        json!("1 clicks")
    );
}

#[tokio::test]
async fn a_page_that_navigated_while_detached_is_stale_after_resume() {
    let env = env().await;
    let tab = env.open("/counter.html").await;
    let frame = observe(&tab).await;
    let memory = tab.memory();
    tab.detach(Duration::from_secs(5)).await.unwrap();
    // Someone else (the user) reloads the page while Glovebox is detached.
    let other = env.conn.browser().attach(tab.target_id()).await.unwrap();
    let mut loads = other.subscribe(&["Page.loadEventFired"]);
    other.call(cdp::domains::page::Enable {}).await.unwrap();
    other
        .call(cdp::domains::page::Reload::default())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), loads.recv())
        .await
        .expect("reloaded");
    let target = tab.target_id().clone();
    drop(tab);
    let tab = Tab::resume(env.conn.browser().attach(&target).await.unwrap(), memory)
        .await
        .unwrap();
    let err = tab
        .act(
            &act_on(&frame, "click", "Add one", None),
            &ActOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert_eq!(
        observe_eval(&tab, "document.getElementById('count').textContent").await,
        json!("0 clicks"),
        "nothing was clicked"
    );
}

#[tokio::test]
async fn typed_secrets_stay_redacted_after_resume() {
    let env = env().await;
    let tab = env.open("/form.html").await;
    let frame = observe(&tab).await;
    tab.act(
        &act_on(&frame, "type", "Password", Some("correct-horse-battery")),
        &ActOptions::default(),
    )
    .await
    .unwrap();
    let tab = detach_and_resume(&env, tab).await;
    let o = observe(&tab).await;
    let json = serde_json::to_string(&o).unwrap();
    assert!(!json.contains("correct-horse-battery"), "{json}");
    assert!(
        o.aria_snapshot().contains("Echo: [redacted]"),
        "{}",
        o.aria_snapshot()
    );
}

#[tokio::test]
async fn detach_leaves_the_page_open_and_unattached_and_is_idempotent() {
    let env = env().await;
    let tab = env.open("/counter.html").await;
    assert_eq!(sessions_attached_to(&env, &tab).await, 1);
    tab.detach(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        sessions_attached_to(&env, &tab).await,
        0,
        "no session left on the target"
    );
    tab.detach(Duration::from_secs(5))
        .await
        .expect("detaching again is not an error");
    let targets = env
        .conn
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    assert!(
        targets
            .iter()
            .any(|t| t.target_id.as_ref() == Some(tab.target_id())),
        "the page stays open"
    );
}
