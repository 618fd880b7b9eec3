//! `glovebox demo`: a scripted task run by the real runner against a built-in page, with the
//! person's approvals asked on the terminal (the CLI approval channel).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use ::runtime::{ApprovalDecision, Assertion, EventKind, RunRequest, Runtime, Scripted, ScriptedPlanner};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cli::Global;
use crate::pages::LoopbackPages;

const FORM_PAGE: &str = include_str!("../../browser/tests/fixtures/form.html");

/// Runs the demo task. `answer` decides approvals without asking (`None` = ask on the terminal).
pub async fn run(global: &Global, answer: Option<ApprovalDecision>) -> anyhow::Result<ExitCode> {
    let pages = LoopbackPages::serve([("/".to_owned(), FORM_PAGE.to_owned())].into()).await?;
    let config = crate::config::resolve(global, None)?.runtime;
    let rt = Runtime::start(config).await?;
    let session = rt.create_session().await?;
    eprintln!("demo: signing up \"Ada\" on {} (an origin nobody trusted yet, so a person is asked)", pages.url("/"));

    let mut events = rt.subscribe_events();
    let approver = rt.clone();
    let printer = tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(event) = events.recv().await {
            match &event.kind {
                EventKind::ApprovalRequested { approval_id, .. } => {
                    let Some(request) = approver.pending_approvals().into_iter().find(|r| &r.approval_id == approval_id) else { continue };
                    let decision = match answer {
                        Some(decision) => decision,
                        None => {
                            eprint!(
                                "approve {} {} on {} ({}: {})? [o]nce, for the [t]ask, [d]eny: ",
                                request.action, request.target, request.origin, request.tier, request.reason
                            );
                            let _ = std::io::stderr().flush();
                            match tokio::time::timeout(Duration::from_secs(300), stdin.next_line()).await {
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
                other => eprintln!("event: {}", serde_json::to_string(other).unwrap_or_default()),
            }
        }
    });
    // Opening the page is a navigation to an untrusted origin: the person is asked first.
    rt.open_tab(&session, &pages.url("/"), Duration::from_secs(300)).await?;
    let steps = vec![Scripted::Type("Name".into(), "Ada".into()), Scripted::Click("Create account".into()), Scripted::Done("signed up Ada".into())];
    let mut request = RunRequest::new("Sign up as Ada");
    request.assertions = vec![Assertion::TextPresent { text: "Welcome, Ada!".into() }];
    let result = rt.run(&session, request, Box::new(ScriptedPlanner::new(steps))).await?;
    printer.abort();
    out!("{}", serde_json::to_string_pretty(&result)?);
    rt.close_session(&session).await?;
    Ok(if result.status() == protocol::RunStatus::Succeeded { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
