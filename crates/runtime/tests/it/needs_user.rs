//! `000_…` case 27: a login (or a CAPTCHA) is a person's. A run that would type a password it
//! does not have pauses `needs_user` with the reason instead; a person signs in in the page and
//! continues the run, which observes afresh — the paused action is never sent. Without a person
//! the run ends `needs_user` (`login_required`) at its deadline.

use std::time::Duration;

use protocol::{ReasonCode, RunStatus};
use runtime::{Assertion, EventKind, RunRequest, Scripted, ScriptedPlanner};
use serde_json::Value;

use crate::env;

/// Evaluates `expression` in the page whose URL contains `url_part`, as a person's own browser
/// session would (a CDP session of its own, not the run's).
async fn in_page(env: &crate::Env, url_part: &str, expression: &str) -> Value {
    let browser = env.browser.connection().unwrap().browser();
    let targets = browser
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    let target = targets
        .into_iter()
        .find(|t| t.url.contains(url_part))
        .and_then(|t| t.target_id)
        .expect("the page is open");
    let page = browser.attach(&target).await.unwrap();
    let value = page
        .call(cdp::domains::runtime::Evaluate::value(expression))
        .await
        .unwrap()
        .result
        .value
        .unwrap_or(Value::Null);
    if let Some(id) = page.id() {
        let _ = browser
            .call(cdp::domains::target::DetachFromTarget {
                session_id: id.clone(),
            })
            .await;
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_27_a_login_pauses_the_run_for_a_person_who_continues_it() {
    let env = env("case27", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/login.html"))
        .await
        .unwrap();
    let mut events = env.runtime.subscribe_events();
    let mut request = RunRequest::new("sign in and open the dashboard");
    request.assertions = vec![Assertion::TextPresent {
        text: "Signed in as alice".into(),
    }];
    let planner = ScriptedPlanner::new(vec![
        Scripted::Type("Password".into(), "a-guess".into()),
        Scripted::Done("signed in".into()),
    ]);
    let (handle, join) = env
        .runtime
        .start_run(&env.session, request, Box::new(planner))
        .unwrap();

    // The run waits for a person, and says why.
    let reason = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let event = events.recv().await.unwrap();
            if let EventKind::NeedsUser { reason } = event.kind {
                return reason;
            }
        }
    })
    .await
    .expect("the run asks for a person");
    assert!(reason.contains("secret"), "{reason}");
    let waiting = env.runtime.waiting_runs();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0]["run_id"], handle.run_id.as_str());

    // The person signs in in the page itself, then continues the run.
    in_page(
        &env,
        "login.html",
        "document.getElementById('msg').textContent = 'Signed in as alice'",
    )
    .await;
    env.runtime.continue_run(handle.run_id.as_str()).unwrap();
    assert!(
        env.runtime.continue_run("run_nobody").is_err(),
        "only a waiting run can be continued"
    );
    let result = tokio::time::timeout(Duration::from_secs(30), join)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(result.steps_taken(), 0, "the paused action was never sent");
    assert_eq!(
        in_page(&env, "login.html", "document.getElementById('pw').value").await,
        "hunter2-secret",
        "the password the run guessed was never typed"
    );
    assert!(env.runtime.waiting_runs().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_27_without_a_person_the_run_ends_needs_user_at_its_deadline() {
    let env = env("case27-alone", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/login.html"))
        .await
        .unwrap();
    let mut request = RunRequest::new("sign in");
    request.max_seconds = 2;
    request.assertions = vec![Assertion::TextPresent {
        text: "Signed in".into(),
    }];
    let planner = ScriptedPlanner::new(vec![Scripted::Type("Password".into(), "a-guess".into())]);
    let result = env
        .runtime
        .run(&env.session, request, Box::new(planner))
        .await
        .unwrap();
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::NeedsUser, ReasonCode::LoginRequired),
        "{result:?}"
    );
    assert!(
        result.summary().contains("no person continued"),
        "{result:?}"
    );
    assert_eq!(
        in_page(&env, "login.html", "document.getElementById('pw').value").await,
        "hunter2-secret"
    );
}

/// `004_…` 让出控制的规则: "pause agent, I'll take over" on a running agent's tab blocks its next
/// dispatch at once and is `paused` only once confirmed; the action the agent planned meanwhile is
/// never sent; "let the agent continue" works only when paused, and the run looks afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_takes_over_a_running_agents_tab_and_hands_it_back() {
    use runtime::Control;
    let env = env("takeover", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/counter.html"))
        .await
        .unwrap();
    let resource = env.runtime.tabs_for_person().unwrap()[0]["tab"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        env.runtime.control_of(&resource),
        Control::Idle,
        "no agent holds it yet"
    );
    let mut events = env.runtime.subscribe_events();
    let mut request = RunRequest::new("add two");
    request.assertions = vec![Assertion::TextPresent {
        text: "2 clicks".into(),
    }];
    let steps = vec![
        Scripted::Click("Add one".into()),
        Scripted::Think(Duration::from_millis(800)),
        Scripted::Click("Add one".into()),
        Scripted::Click("Add one".into()),
        Scripted::Done("added".into()),
    ];
    let (_handle, join) = env
        .runtime
        .start_run(&env.session, request, Box::new(ScriptedPlanner::new(steps)))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !matches!(events.recv().await.unwrap().kind, EventKind::Receipt { .. }) {}
    })
    .await
    .expect("the first click lands");
    assert_eq!(env.runtime.control_of(&resource), Control::InUse);
    assert!(
        env.runtime.hand_back(&resource).is_err(),
        "nothing to hand back while the agent has it"
    );

    // The person takes over while the agent thinks about its next click.
    assert_eq!(
        env.runtime.take_over(&resource).await.unwrap(),
        Control::Paused
    );
    assert_eq!(env.runtime.control_of(&resource), Control::Paused);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        in_page(
            &env,
            "counter.html",
            "document.getElementById('count').textContent"
        )
        .await,
        "1 clicks",
        "nothing the agent planned reached the page"
    );
    // The person uses the page meanwhile (it was never blocked for them).
    in_page(
        &env,
        "counter.html",
        "document.querySelector('button').click()",
    )
    .await;

    env.runtime.hand_back(&resource).unwrap();
    assert!(
        env.runtime.hand_back(&resource).is_err(),
        "continue is only for a paused tab"
    );
    let result = tokio::time::timeout(Duration::from_secs(30), join)
        .await
        .unwrap()
        .unwrap();
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(format!("{:?}", e.kind));
    }
    // The run waited (it was told, whether it was planning or about to send) and went on only
    // after the hand-back: the agent's first click, the person's, then the agent's again.
    assert!(
        seen.iter().any(|e| e.contains("a person took over"))
            && seen.iter().any(|e| e == "Continued"),
        "{seen:#?}"
    );
    let count = in_page(
        &env,
        "counter.html",
        "document.getElementById('count').textContent",
    )
    .await;
    assert!(
        count == "3 clicks" || count == "4 clicks",
        "{count}: {seen:#?}"
    );
    assert_ne!(
        result.status(),
        RunStatus::Succeeded,
        "its check (2 clicks) no longer holds after the person's click: {result:?}"
    );
    assert_eq!(env.runtime.control_of(&resource), Control::Idle);
}
