//! The direct action path (the MCP `act` tool): policy, approvals that only a person gives, and
//! the extended set with authorised uploads and receipts that name the action as sent.

use protocol::ErrorCode;
use runtime::ApprovalDecision;
use serde_json::json;

use crate::env;

fn first_ref(o: &protocol::Observation, name: &str) -> String {
    o.interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .unwrap()
        .element()
        .as_str()
        .to_owned()
}

#[tokio::test]
async fn a_direct_action_needing_approval_does_nothing_until_a_person_approves() {
    let env = env("direct-approval", false).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let action = protocol::validate_extended_action(&json!({"type": "type", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": first_ref(&o, "Name")}, "text": "Ada", "intent": "name"})).unwrap();
    let err = env
        .runtime
        .act(
            &env.session,
            None,
            &action,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NeedsApproval);
    let pending = env.runtime.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert!(err.to_string().contains(pending[0].approval_id.as_str()));
    let o2 = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    assert!(
        o2.aria_snapshot().contains("textbox \"Name\" [e1]\n"),
        "nothing was typed"
    );
    // A person approves this one action; sent again, it runs once.
    env.runtime
        .resolve_approval(&pending[0].approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &action,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), protocol::ReceiptState::Confirmed);
    // The approval is used up: the next write asks again.
    let o3 = outcome.observation.unwrap();
    let next = protocol::validate_extended_action(&json!({"type": "click", "expected_frame_id": o3.frame_id().as_str(), "target": {"kind": "element", "ref": first_ref(&o3, "Create account")}, "intent": "submit"})).unwrap();
    assert_eq!(
        env.runtime
            .act(
                &env.session,
                None,
                &next,
                &Default::default(),
                std::time::Duration::ZERO
            )
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
    assert!(env.server.writes().is_empty());
    assert!(
        env.runtime
            .resolve_approval(
                &protocol::ApprovalId::new("approval_forged").unwrap(),
                ApprovalDecision::ApproveForTask
            )
            .is_err()
    );
}

#[tokio::test]
async fn extended_actions_go_through_the_same_policy_and_uploads_only_from_the_allowed_directory() {
    let env = env("direct-extended", true).await;
    crate::open(
        &env.runtime,
        &env.session,
        &env.server.url("/extended-forms.html"),
    )
    .await
    .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let upload = protocol::validate_extended_action(&json!({
        "type": "upload", "expected_frame_id": o.frame_id().as_str(),
        "target": {"kind": "element", "ref": first_ref(&o, "Attachment")}, "files": ["report.csv"], "intent": "attach"
    }))
    .unwrap();
    // Uploads are R3: a person is asked every time, even on a trusted origin.
    let err = env
        .runtime
        .act(
            &env.session,
            None,
            &upload,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NeedsApproval, "{err}");
    assert!(env.server.writes().is_empty());
    let pending = env.runtime.pending_approvals();
    assert_eq!(pending[0].tier, policy::RiskTier::R3);
    env.runtime
        .resolve_approval(&pending[0].approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    // No upload directory is configured: the upload is refused and nothing is sent.
    let err = env
        .runtime
        .act(
            &env.session,
            None,
            &upload,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
    assert!(env.server.writes().is_empty());
    // A locator-targeted click on a trusted origin runs without approval.
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let save = protocol::validate_extended_action(&json!({
        "type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "test_id", "id": "save-btn"}, "intent": "save"
    }))
    .unwrap();
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &save,
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
            .contains("saved")
    );
    // A delete-like locator is high-impact whatever the origin.
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let delete = protocol::validate_extended_action(&json!({
        "type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "role", "role": "button", "name": "Delete"}, "intent": "delete"
    }))
    .unwrap();
    assert_eq!(
        env.runtime
            .act(
                &env.session,
                None,
                &delete,
                &Default::default(),
                std::time::Duration::ZERO
            )
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NeedsApproval
    );
}

#[tokio::test]
async fn a_drag_receipt_says_drag_and_a_v1_click_receipt_says_click() {
    let env = env("direct-receipts", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/pointer.html"))
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let drag = protocol::validate_extended_action(&json!({
        "type": "drag", "expected_frame_id": o.frame_id().as_str(),
        "source": {"kind": "text", "text": "Alpha", "exact": true}, "destination": {"kind": "text", "text": "Delta", "exact": true},
        "end_offset": {"x": 0, "y": 8}, "intent": "reorder"
    }))
    .unwrap();
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &drag,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(outcome.receipt.action(), protocol::ExtendedKind::Drag);
    assert_eq!(outcome.receipt.v1_action(), None);
    let wire = serde_json::to_value(&outcome.receipt).unwrap();
    assert_eq!(wire["action"], "drag", "{wire}");
    // A v1 action's receipt keeps its v1 name.
    let o = outcome.observation.unwrap();
    let click = protocol::validate_extended_action(&json!({
        "type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": first_ref(&o, "Clicker")}, "intent": "click"
    }))
    .unwrap();
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &click,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.receipt.v1_action(),
        Some(protocol::ActionKind::Click)
    );
    assert_eq!(
        serde_json::to_value(&outcome.receipt).unwrap()["action"],
        "click"
    );
}

/// A click that opens `confirm()` is reported at once, with its receipt (issue 14 found it took
/// ~20 s and ended in `timeout`); while the dialog is open an observation is the dialog instead of
/// blocking; a `dialog` action answers it on that frame; inside a run the planner sees the dialog,
/// answers it, and the run goes on. The observation deadlines are set to minutes, so a read that
/// blocked on the dialog would hang the test past its guard instead of passing late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_is_reported_at_once_and_answered_directly_and_inside_a_run() {
    use std::time::Duration;
    let env = crate::env("dialog-direct", true).await;
    let s = &env.session;
    crate::open(&env.runtime, s, &env.server.url("/widgets.html"))
        .await
        .unwrap();
    let patient = browser::ObserveOptions {
        deadline: Duration::from_secs(300),
        ..Default::default()
    };
    let act_options = browser::ActOptions {
        deadline: Duration::from_secs(300),
        observe: patient.clone(),
        ..Default::default()
    };
    let o = env.runtime.observe(s, None, &patient).await.unwrap();
    let mut after = o;
    for round in 0..2 {
        let confirm = crate::click(&after, "Confirm me");
        let click = env
            .runtime
            .act(s, None, &confirm, &act_options, Duration::ZERO);
        let outcome = tokio::time::timeout(Duration::from_secs(60), click)
            .await
            .expect("the click does not block on the dialog")
            .unwrap();
        let dialog = outcome.dialog.expect("the confirm is reported");
        assert_eq!(
            (dialog.kind.as_str(), dialog.message.as_str()),
            ("confirm", "Sure?"),
            "round {round}"
        );
        assert!(
            outcome.observation.is_none(),
            "the blocked page has no observation of its own"
        );
        // An observation of the blocked page is the dialog, with a frame to answer on.
        let observe = env.runtime.observe(s, None, &patient);
        let blocked = tokio::time::timeout(Duration::from_secs(60), observe)
            .await
            .expect("the observation does not block on the dialog")
            .unwrap();
        assert!(
            blocked
                .aria_snapshot()
                .starts_with("alertdialog \"Sure?\" [confirm modal]"),
            "{}",
            blocked.aria_snapshot()
        );
        assert!(blocked.interactive_elements().is_empty());
        let answer = protocol::validate_extended_action(
            &json!({"type": "dialog", "expected_frame_id": blocked.frame_id().as_str(), "accept": true, "intent": "confirm"}),
        )
        .unwrap();
        let answered = env
            .runtime
            .act(s, None, &answer, &act_options, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(answered.receipt.state(), protocol::ReceiptState::Confirmed);
        after = answered
            .observation
            .expect("a fresh observation once the dialog is answered");
        assert_eq!(after.title(), "confirmed");
    }

    // Inside a run: the planner sees the dialog as the page and answers it; the run goes on.
    let steps = vec![
        runtime::Scripted::Click("Confirm me".into()),
        runtime::Scripted::Dialog(false),
        runtime::Scripted::Done("answered".into()),
    ];
    let result = env
        .runtime
        .run(
            s,
            runtime::RunRequest::new("decline the confirm"),
            Box::new(runtime::ScriptedPlanner::new(steps)),
        )
        .await
        .unwrap();
    assert_eq!(result.steps_taken(), 2, "{result:?}");
    assert_eq!(
        result.reason_code(),
        protocol::ReasonCode::VerificationFailed,
        "done without checks: {result:?}"
    );
    assert_eq!(
        env.runtime
            .observe(s, None, &patient)
            .await
            .unwrap()
            .title(),
        "declined",
        "the run answered the dialog"
    );
}
