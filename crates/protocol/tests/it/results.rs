//! Run results, receipts and ids: success needs verification evidence, status follows reason.

use protocol::{
    ActionKind, ArtifactId, ArtifactKind, ArtifactRef, CompletionEvidence, ElementRef, ErrorCode,
    EvidenceKind, ExtendedKind, FrameId, LeaseId, ReasonCode, Receipt, ReceiptState, RunId,
    RunResult, RunResultError, RunStatus, RunTarget, SurfaceKind, TabId,
};

fn target() -> RunTarget {
    RunTarget {
        kind: SurfaceKind::WebTab,
        tab_id: TabId::new("T1").expect("valid"),
        url: "https://shop.test/done".into(),
    }
}

fn frame() -> FrameId {
    FrameId::new("frame_9").expect("valid")
}

fn artifacts() -> Vec<ArtifactRef> {
    vec![
        ArtifactRef {
            kind: ArtifactKind::Screenshot,
            artifact_id: ArtifactId::new("artifact_1").expect("valid"),
            retained: true,
        },
        ArtifactRef {
            kind: ArtifactKind::Screenshot,
            artifact_id: ArtifactId::new("artifact_2").expect("valid"),
            retained: false,
        },
    ]
}

#[test]
fn success_needs_evidence_and_lists_only_retained_artifacts() {
    assert_eq!(
        RunResult::succeeded("done", target(), 3, vec![], vec![]),
        Err(RunResultError::NoEvidence)
    );
    let evidence = vec![CompletionEvidence::new(
        EvidenceKind::Assertion,
        "Order #42 is shown",
        frame(),
    )];
    let r = RunResult::succeeded("Placed the order.", target(), 7, evidence, artifacts())
        .expect("valid");
    assert_eq!(
        (r.status(), r.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified)
    );
    assert_eq!(r.artifacts().len(), 1);
    insta::assert_json_snapshot!("run_result_succeeded", r);
}

#[test]
fn only_succeeded_may_claim_verified_and_status_follows_reason() {
    assert_eq!(
        RunResult::ended(ReasonCode::Verified, "x", None, 1, vec![], vec![]),
        Err(RunResultError::VerifiedWithoutSuccess)
    );
    let cases = [
        (ReasonCode::StepLimit, RunStatus::Failed),
        (ReasonCode::Timeout, RunStatus::Failed),
        (ReasonCode::VerificationFailed, RunStatus::Failed),
        (ReasonCode::Cancelled, RunStatus::Cancelled),
        (ReasonCode::NeedsApproval, RunStatus::NeedsUser),
        (ReasonCode::NewSurfaceCreated, RunStatus::NeedsUser),
        (ReasonCode::LoginRequired, RunStatus::NeedsUser),
    ];
    for (reason, status) in cases {
        let r = RunResult::ended(reason, "s", Some(target()), 100, vec![], vec![]).expect("valid");
        assert_eq!(r.status(), status, "{reason:?}");
    }
}

#[test]
fn receipts_tie_uncertainty_to_state() {
    let rows = [
        (
            Receipt::attempted(ActionKind::Click, frame()),
            ReceiptState::Attempted,
            false,
        ),
        (
            Receipt::dispatched(ActionKind::Click, frame()),
            ReceiptState::Dispatched,
            true,
        ),
        (
            Receipt::confirmed(ActionKind::Click, frame()),
            ReceiptState::Confirmed,
            false,
        ),
        (
            Receipt::failed(
                ActionKind::Type,
                frame(),
                ErrorCode::StaleObservation,
                false,
                "",
            ),
            ReceiptState::Failed,
            false,
        ),
        (
            Receipt::failed(
                ActionKind::Type,
                frame(),
                ErrorCode::Timeout,
                true,
                "no ack",
            ),
            ReceiptState::Failed,
            true,
        ),
        (
            Receipt::unknown(ActionKind::Navigate, frame(), "connection closed"),
            ReceiptState::Unknown,
            true,
        ),
    ];
    for (receipt, state, uncertain) in rows {
        assert_eq!(
            (receipt.state(), receipt.effect_uncertain()),
            (state, uncertain)
        );
    }
    let failed = Receipt::failed(
        ActionKind::Type,
        frame(),
        ErrorCode::Timeout,
        true,
        "no ack",
    );
    insta::assert_json_snapshot!("receipt_failed_uncertain", failed);
}

#[test]
fn receipts_name_the_exact_action_kind_v1_names_unchanged() {
    // Every kind of the extended set is named as sent; none stands in for another.
    for kind in ExtendedKind::ALL {
        let receipt = Receipt::dispatched(kind, frame());
        assert_eq!(receipt.action(), kind);
        let json = serde_json::to_value(&receipt).expect("serializes");
        assert_eq!(json["action"], kind.as_str(), "{json}");
        assert_eq!(receipt.v1_action(), ActionKind::from_wire(kind.as_str()));
    }
    let drag =
        serde_json::to_value(Receipt::dispatched(ExtendedKind::Drag, frame())).expect("serializes");
    assert_eq!(drag["action"], "drag");
    assert_eq!(
        Receipt::confirmed(ExtendedKind::Upload, frame()).v1_action(),
        None
    );
    // A v1 receipt reads exactly as before: the v1 kind's own name, built from `ActionKind`.
    for kind in ActionKind::ALL {
        let from_v1 = serde_json::to_value(Receipt::confirmed(kind, frame())).expect("serializes");
        let from_extended =
            serde_json::to_value(Receipt::confirmed(ExtendedKind::from(kind), frame()))
                .expect("serializes");
        assert_eq!(from_v1, from_extended);
        assert_eq!(from_v1["action"], kind.as_str());
    }
}

#[test]
fn ids_check_their_shape() {
    assert!(RunId::new("run_01J8").is_ok());
    assert!(RunId::new("lease_1").is_err());
    assert!(RunId::new(format!("run_{}", "a".repeat(200))).is_err());
    assert!(LeaseId::new("lease_a-b_c").is_ok());
    assert!(ArtifactId::new("artifact_").is_err());
    assert!(ElementRef::new("e0").is_ok());
    assert!(ElementRef::new("e-1").is_err());
    assert!(FrameId::new("frame_ok").is_ok());
    assert!(TabId::new("has space").is_err());
    let f: FrameId = serde_json::from_str("\"frame_1\"").expect("parses");
    assert_eq!(
        serde_json::to_string(&f).expect("serializes"),
        "\"frame_1\""
    );
    assert!(serde_json::from_str::<FrameId>("\"frame\"").is_err());
}
