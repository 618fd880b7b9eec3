//! A guest's screen through the runtime's one checked path: a person offers it, a session
//! claims it, the first write waits for a person's grant of `vm://<name>`, and what the guest
//! applied is what was approved.

use std::sync::Arc;
use std::time::Duration;

use protocol::{ErrorCode, ExtendedAction, ImageMime};
use runtime::{ApprovalDecision, Runtime, RuntimeConfig};
use surface::{ActOptions, ObserveOptions};

use crate::fixture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_screen_is_offered_claimed_and_acted_on_after_a_persons_grant() {
    let f = fixture();
    let _a = f.a.lock.lock().await;
    let client = f.a.client();
    let data_dir = crate::tempdir().join("runtime");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).expect("data dir");
    let adapter = Arc::new(vm::VmAdapter::new(vec![f.a.config()]));
    let runtime = Runtime::start(RuntimeConfig::new(&data_dir), adapter)
        .await
        .expect("the runtime starts on the VM adapter");
    let listed = runtime.surfaces_for_person().await.expect("surfaces");
    let text = serde_json::to_string(&listed).expect("json");
    assert!(
        text.contains("vm:alpha") && text.contains("vm_screen"),
        "{text}"
    );
    let tab = runtime.offer_surface("vm:alpha").await.expect("offer");
    let session = runtime.create_session().await.expect("session");
    runtime.claim_tab(&session, &tab).await.expect("claim");
    let o = runtime
        .observe(
            &session,
            None,
            &ObserveOptions {
                screenshot: Some(ImageMime::Png),
                deadline: Duration::from_secs(20),
                ..ObserveOptions::default()
            },
        )
        .await
        .expect("observe");
    assert_eq!(o.origin(), "vm://alpha");
    let click: ExtendedAction = serde_json::from_value(serde_json::json!({
        "type": "click",
        "expected_frame_id": o.frame_id().as_str(),
        "target": {"kind": "point", "x": 70, "y": 75},
        "intent": "click in the guest"
    }))
    .expect("action");
    let options = ActOptions {
        deadline: Duration::from_secs(20),
        ..ActOptions::default()
    };
    let before = client.log().await.expect("log").len();
    // The guest was never granted: a person is asked, and nothing reaches the guest meanwhile.
    let e = runtime
        .act(&session, None, &click, &options, Duration::ZERO)
        .await
        .expect_err("needs a person");
    assert_eq!(e.code(), ErrorCode::NeedsApproval, "{e}");
    assert_eq!(client.log().await.expect("log").len(), before);
    let asked = runtime.pending_approvals();
    let asked = asked.first().expect("pending");
    assert_eq!(asked.origin, "vm://alpha");
    runtime
        .resolve_approval(&asked.approval_id, ApprovalDecision::ApproveOnce)
        .expect("approve");
    let done = runtime
        .act(&session, None, &click, &options, Duration::ZERO)
        .await
        .expect("approved once");
    assert_eq!(done.receipt.state(), protocol::ReceiptState::Dispatched);
    let log = client.log().await.expect("log");
    assert_eq!(log.len(), before + 1, "{log:?}");
    assert!(log[before].points.contains(&[70, 75]));
    // A guest's screen is not navigated.
    let o = done.observation.expect("observation");
    let go: ExtendedAction = serde_json::from_value(serde_json::json!({
        "type": "navigate",
        "expected_frame_id": o.frame_id().as_str(),
        "url": "http://example.test/",
        "intent": "leave"
    }))
    .expect("action");
    let e = runtime
        .act(&session, None, &go, &options, Duration::ZERO)
        .await
        .expect_err("no navigation");
    assert_eq!(e.code(), ErrorCode::CapabilityDenied, "{e}");
    // The operator's view of it: the guest's requests timed, the backend up, the click counted
    // and the refused navigation by its code; `/readyz` would say ready.
    let metrics = runtime.metrics_text();
    let count = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("glovebox_backend_round_trip_seconds_count{protocol=\"guest_http\"} ")
        })
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(count > 3.0, "{metrics}");
    assert!(
        metrics.contains("glovebox_backend_up{kind=\"vm_screen\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("glovebox_action_errors_total{code=\"capability_denied\"} 1"),
        "{metrics}"
    );
    assert!(runtime.readiness().is_ok());
    runtime.shutdown(Duration::from_secs(2)).await;
    // The guest's token is in nothing the runtime wrote: store, records, artifacts.
    let token = f.a.token.clone().expect("alpha has a token");
    let mut stack = vec![data_dir.clone()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files += 1;
                assert!(
                    !bytes
                        .windows(token.expose().len())
                        .any(|w| w == token.expose().as_bytes()),
                    "the token is in {}",
                    path.display()
                );
            }
        }
    }
    assert!(files > 0, "the runtime wrote its store");
}
