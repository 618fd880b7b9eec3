//! `glovebox demo`: a scripted task run by the real runner against a built-in page, with the
//! person's approvals asked on the terminal (the CLI approval channel).

use std::process::ExitCode;
use std::time::Duration;

use ::runtime::{ApprovalDecision, Assertion, RunRequest, Runtime, Scripted, ScriptedPlanner};

use crate::cli::Global;
use crate::pages::LoopbackPages;

const FORM_PAGE: &str = include_str!("../../browser/tests/fixtures/form.html");

/// Runs the demo task. `answer` decides approvals without asking (`None` = ask on the terminal).
pub async fn run(global: &Global, answer: Option<ApprovalDecision>) -> anyhow::Result<ExitCode> {
    let pages = LoopbackPages::serve([("/".to_owned(), FORM_PAGE.to_owned())].into()).await?;
    let settings = crate::config::resolve(global, None)?;
    let config = settings.runtime.clone();
    let rt = Runtime::start(config, settings.adapter()).await?;
    let session = rt.create_session().await?;
    eprintln!(
        "demo: signing up \"Ada\" on {} (an origin nobody trusted yet, so a person is asked)",
        pages.url("/")
    );

    let printer = crate::terminal::person_on_terminal(&rt, answer, false);
    // Opening the page is a navigation to an untrusted origin: the person is asked first.
    rt.open_tab(&session, &pages.url("/"), Duration::from_secs(300))
        .await?;
    let steps = vec![
        Scripted::Type("Name".into(), "Ada".into()),
        Scripted::Click("Create account".into()),
        Scripted::Done("signed up Ada".into()),
    ];
    let mut request = RunRequest::new("Sign up as Ada");
    request.assertions = vec![Assertion::TextPresent {
        text: "Welcome, Ada!".into(),
    }];
    let result = rt
        .run(&session, request, Box::new(ScriptedPlanner::new(steps)))
        .await?;
    printer.abort();
    out!("{}", serde_json::to_string_pretty(&result)?);
    rt.close_session(&session).await?;
    Ok(if result.status() == protocol::RunStatus::Succeeded {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
