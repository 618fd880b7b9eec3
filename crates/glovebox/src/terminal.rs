//! The terminal as a person's channel: each approval a run asks for is put to the person on
//! stderr and answered from stdin (or by a fixed answer, for scripts); run events are printed as
//! progress.

use std::io::Write;
use std::time::Duration;

use ::runtime::{ApprovalDecision, EventKind, Runtime};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Asks the person about every approval of `rt` until aborted, and prints the runs' events as
/// progress lines (unless `quiet`).
pub fn person_on_terminal(
    rt: &Runtime,
    answer: Option<ApprovalDecision>,
    quiet: bool,
) -> tokio::task::JoinHandle<()> {
    let mut events = rt.subscribe_events();
    let approver = rt.clone();
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(event) = events.recv().await {
            match &event.kind {
                EventKind::ApprovalRequested { approval_id, .. } => {
                    let Some(request) = approver
                        .pending_approvals()
                        .into_iter()
                        .find(|r| &r.approval_id == approval_id)
                    else {
                        continue;
                    };
                    let decision = match answer {
                        Some(decision) => decision,
                        None => {
                            eprint!(
                                "{} asks: approve {} {} on {} ({}: {})? [o]nce, for the [t]ask, [d]eny: ",
                                match &request.client {
                                    Some(client) => format!("{client} ({})", request.session),
                                    None => request.session.clone(),
                                },
                                request.action,
                                request.target,
                                request.origin,
                                request.tier,
                                request.reason
                            );
                            let _ = std::io::stderr().flush();
                            match tokio::time::timeout(Duration::from_secs(300), stdin.next_line())
                                .await
                            {
                                Ok(Ok(Some(line))) => match line.trim() {
                                    "o" | "once" => ApprovalDecision::ApproveOnce,
                                    "t" | "task" => ApprovalDecision::ApproveForTask,
                                    _ => ApprovalDecision::Deny,
                                },
                                _ => ApprovalDecision::Deny,
                            }
                        }
                    };
                    let _ = approver.resolve_approval(approval_id, decision);
                }
                EventKind::NeedsUser { reason } if answer.is_none() => {
                    eprint!(
                        "the run needs you: {reason}. Do it in the browser, then press Enter to let the run continue: "
                    );
                    let _ = std::io::stderr().flush();
                    if let Ok(Ok(Some(_))) =
                        tokio::time::timeout(Duration::from_secs(300), stdin.next_line()).await
                    {
                        let _ = approver.continue_run(&event.run_id);
                    }
                }
                other if !quiet => eprintln!(
                    "event: {}",
                    serde_json::to_string(other).unwrap_or_default()
                ),
                _ => {}
            }
        }
    })
}
