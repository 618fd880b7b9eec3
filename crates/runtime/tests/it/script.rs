//! `gui_exec` against real Chromium: a script's steps go through the one checked path, its
//! namespace persists, its time limit revokes writes before the kill, and neither page text nor
//! the script can widen what a session may do.

use std::time::{Duration, Instant};

use protocol::ErrorCode;
use runtime::ApprovalDecision;
use script::ExecStatus;

use crate::{env, env_with};

/// Opens `url` in a call of its own (variables `page`, and `ping` for its Ping button).
async fn open_with_ping(env: &crate::Env, url: &str) {
    let opened = env
        .runtime
        .gui_exec(
            &env.session,
            None,
            &format!("page = await ui.browser.open({url:?})\nping = page.get_by_role('button', name='Ping')"),
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(opened.status, ExecStatus::Ok, "{opened:#?}");
}

fn text(result: &script::ExecResult) -> String {
    result.printed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_step_form_is_one_call_and_its_page_and_locator_serve_the_next_call() {
    let env = env("script-form", true).await;
    let url = env.server.url("/rt/profile-form.html");
    let code = format!(
        r#"
page = await ui.browser.open({url:?})
await page.get_by_label("First name").fill("Ada")
await page.get_by_label("Last name").fill("Lovelace")
await page.get_by_label("Email").fill("ada@example.org")
await page.get_by_label("Phone").fill("+44 20 7946 0000")
await page.get_by_label("City").fill("London")
await page.get_by_label("Country").select("fr")
await page.get_by_label("Team").click()
await page.get_by_label("Monthly newsletter").click()
await page.get_by_label("Notes").fill("ten steps, one call")
save = page.get_by_role("button", name="Save profile")
r = await save.click()
obs = await page.wait_for_text("Saved for Ada")
print(r.state, "Saved for Ada" in obs)
"#
    );
    let first = env
        .runtime
        .gui_exec(&env.session, None, &code, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(first.status, ExecStatus::Ok, "{first:#?}");
    assert_eq!(text(&first).trim(), "applied True");
    let posts = env.server.requests_to("/profile");
    assert_eq!(posts.len(), 1);
    let body: serde_json::Value = serde_json::from_slice(&posts[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"first": "Ada", "last": "Lovelace", "email": "ada@example.org",
            "phone": "+44 20 7946 0000", "city": "London", "country": "fr", "plan": "team",
            "newsletter": "on", "notes": "ten steps, one call"})
    );
    // Every write applied, the save last of them.
    let acts: Vec<_> = first
        .operations
        .iter()
        .filter(|o| o.method == script::Method::Act)
        .collect();
    assert_eq!(acts.len(), 10, "{:#?}", first.operations);
    assert!(
        acts.iter()
            .all(|o| o.state == Some(script::EffectState::Applied))
    );
    let save_index = first
        .operations
        .iter()
        .rposition(|o| o.method == script::Method::Act)
        .unwrap();
    assert_eq!(first.last_applied_index, Some(save_index));
    // The next call uses the page and the locator the first one made.
    let second = env
        .runtime
        .gui_exec(
            &env.session,
            None,
            "r = await save.click()\nprint(page.name, r.state)",
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(second.status, ExecStatus::Ok, "{second:#?}");
    assert!(!second.environment.fresh_namespace);
    assert_eq!(text(&second).trim(), "s1 applied");
    assert_eq!(env.server.requests_to("/profile").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_revokes_writes_first_and_the_page_gets_none_after() {
    let env = env_with("script-timeout", true, |c| {
        c.script_limits.timeout = Duration::from_secs(5);
        c.script_limits.operations = 1000;
    })
    .await;
    let url = env.server.url("/rt/profile-form.html");
    // The page opens in a call of its own, so the loop has its call's whole time (a loaded
    // machine may take seconds to open a tab).
    open_with_ping(&env, &url).await;
    let code = "while True:\n    try:\n        await ping.click()\n    except Exception:\n        await sleep(0.05)";
    let result = env
        .runtime
        .gui_exec(&env.session, None, code, Duration::ZERO)
        .await
        .unwrap();
    let returned = Instant::now();
    assert_eq!(result.status, ExecStatus::Timeout, "{result:#?}");
    assert_eq!(result.error_code(), Some(ErrorCode::Timeout));
    let pings = env.server.requests_to("/ping").len();
    assert!(pings >= 2, "the loop ran: {pings}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let late: Vec<_> = env
        .server
        .requests_to("/ping")
        .into_iter()
        .filter(|r| r.at > returned)
        .collect();
    assert!(
        late.is_empty(),
        "{} writes after the call ended",
        late.len()
    );
    // Its last second started no write (one would have been cut off with its page still sending).
    let refused = result
        .operations
        .iter()
        .filter(|o| {
            o.error == Some(ErrorCode::Timeout) && o.state == Some(script::EffectState::Failed)
        })
        .count();
    assert!(refused >= 1, "{:#?}", result.operations);
    // A fresh namespace next time; the tab is still the session's.
    let next = env
        .runtime
        .gui_exec(
            &env.session,
            None,
            "print('page' in globals(), ui.page().name)",
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert!(next.environment.fresh_namespace);
    assert_eq!(text(&next).trim(), "False s1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_to_an_unapproved_origin_waits_for_a_person_exactly_like_act_and_page_text_cannot_approve_it()
 {
    let env = env("script-approval", true).await;
    let elsewhere = test_support::FixtureServer::start().await.unwrap();
    elsewhere.html("/other", "<title>Other</title><h1>another site</h1>");
    let url = env.server.url("/rt/profile-form.html");
    let other = elsewhere.url("/other");
    // The page says approval is granted; the script reads it and goes; a person is still asked.
    let code = format!(
        "page = await ui.browser.open({url:?})\nobs = await page.observe()\nprint('approval is granted' in obs.text)\nawait page.goto({other:?})"
    );
    let refused = env
        .runtime
        .gui_exec(&env.session, None, &code, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(refused.status, ExecStatus::Error, "{refused:#?}");
    assert_eq!(refused.error_code(), Some(ErrorCode::NeedsApproval));
    assert_eq!(text(&refused).trim(), "True");
    let error = refused.error.clone().unwrap();
    assert_eq!(error.exception.unwrap().kind, "NeedsApproval");
    let pending: Vec<_> = env
        .runtime
        .pending_approvals()
        .into_iter()
        .filter(|r| r.session == env.session.as_str())
        .collect();
    assert_eq!(pending.len(), 1);
    assert!(
        elsewhere.requests_to("/other").is_empty(),
        "nothing went there"
    );
    // The same step through `act` meets the same rule.
    let observed = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let navigate = protocol::validate_extended_action(&serde_json::json!({
        "type": "navigate", "expected_frame_id": observed.frame_id().as_str(), "url": other, "intent": "go"
    }))
    .unwrap();
    let by_act = env
        .runtime
        .act(
            &env.session,
            None,
            &navigate,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(by_act.code(), ErrorCode::NeedsApproval);
    // A person approves while the script waits: the step proceeds within the call, once.
    let person = {
        let runtime = env.runtime.clone();
        let session = env.session.clone();
        tokio::spawn(async move {
            let mut approved = 0;
            for _ in 0..200 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                for r in runtime.pending_approvals() {
                    if r.session == session.as_str()
                        && runtime
                            .resolve_approval(&r.approval_id, ApprovalDecision::ApproveOnce)
                            .is_ok()
                    {
                        approved += 1;
                    }
                }
                if approved > 0 && runtime.pending_approvals().is_empty() {
                    break;
                }
            }
            approved
        })
    };
    let waited = env
        .runtime
        .gui_exec(
            &env.session,
            None,
            &format!("obs = await page.observe()\nr = await page.goto({other:?})\nprint(r.state)"),
            Duration::from_secs(15),
        )
        .await
        .unwrap();
    assert_eq!(waited.status, ExecStatus::Ok, "{waited:#?}");
    assert_eq!(text(&waited).trim(), "applied");
    assert!(person.await.unwrap() >= 1, "a person was asked");
    assert_eq!(elsewhere.requests_to("/other").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_at_a_time_per_session_and_none_after_the_session_ends() {
    let env = env("script-one-at-a-time", true).await;
    let runtime = env.runtime.clone();
    let session = env.session.clone();
    let slow = tokio::spawn(async move {
        runtime
            .gui_exec(
                &session,
                None,
                "await sleep(2)\nprint('slept')",
                Duration::ZERO,
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let second = env
        .runtime
        .gui_exec(&env.session, None, "print(1)", Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(second.code(), ErrorCode::LeaseConflict, "{second}");
    let first = slow.await.unwrap().unwrap();
    assert_eq!(text(&first).trim(), "slept");
    env.runtime.close_session(&env.session).await.unwrap();
    let after = env
        .runtime
        .gui_exec(&env.session, None, "print(1)", Duration::ZERO)
        .await
        .unwrap_err();
    assert!(
        matches!(after, runtime::RuntimeError::UnknownSession(_)),
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_its_script_at_once_and_its_namespace_goes_with_it() {
    let env = env("script-cancel", true).await;
    let url = env.server.url("/rt/profile-form.html");
    open_with_ping(&env, &url).await;
    let runtime = env.runtime.clone();
    let session = env.session.clone();
    let looping = tokio::spawn(async move {
        runtime
            .gui_exec(
                &session,
                None,
                "while True:\n    await ping.click()",
                Duration::ZERO,
            )
            .await
    });
    crate::eventually("the loop clicks", || {
        env.server.requests_to("/ping").len() >= 2
    })
    .await;
    // The client cancels the tool call: its future is dropped.
    looping.abort();
    let _ = looping.await;
    // A click dispatched as the call was dropped may still be sending (a loaded machine takes its
    // time); then nothing more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let settled = env.server.requests_to("/ping").len();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        env.server.requests_to("/ping").len(),
        settled,
        "no write after the cancellation"
    );
    let next = env
        .runtime
        .gui_exec(
            &env.session,
            None,
            "print('ping' in globals())",
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert!(next.environment.fresh_namespace, "{next:#?}");
    assert_eq!(text(&next).trim(), "False");
}
