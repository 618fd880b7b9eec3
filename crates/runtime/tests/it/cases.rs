//! Acceptance cases 8, 12, 15, 18, 20, 24–31 of `000_…` §12.

use std::time::Duration;

use protocol::{ReasonCode, RunStatus};
use runtime::{ApprovalDecision, Assertion, EventKind, RunRequest, Scripted, ScriptedPlanner};
use serde_json::json;

use crate::{env, person, wait_for};

fn script(steps: Vec<Scripted>) -> Box<ScriptedPlanner> {
    Box::new(ScriptedPlanner::new(steps))
}

fn welcome(name: &str) -> Vec<Assertion> {
    vec![Assertion::TextPresent {
        text: format!("Welcome, {name}!"),
    }]
}

fn sign_up(name: &str) -> Vec<Scripted> {
    vec![
        Scripted::Type("Name".into(), name.into()),
        Scripted::Click("Create account".into()),
        Scripted::Done(format!("signed up {name}")),
    ]
}

#[tokio::test]
async fn case_21_local_dom_flow_succeeds_only_when_verified() {
    let env = env("case21", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let mut request = RunRequest::new("sign up as Ada");
    request.assertions = welcome("Ada");
    let result = env
        .runtime
        .run(&env.session, request, script(sign_up("Ada")))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::Verified);
    assert_eq!(result.steps_taken(), 2);
    assert!(!result.completion_evidence().is_empty());
}

#[tokio::test]
async fn a_confirmation_shown_just_after_the_click_settled_is_what_the_verdict_sees() {
    let env = env("late-confirm", true).await;
    crate::open(
        &env.runtime,
        &env.session,
        &env.server.url("/rt/late-confirm.html"),
    )
    .await
    .unwrap();
    let saved = || {
        vec![Assertion::TextPresent {
            text: "Profile saved.".into(),
        }]
    };
    // The page the planner saw after its click has no confirmation yet (it comes 450 ms after
    // the click, past the settle's quiet window); the runtime looks at the page again.
    let mut request = RunRequest::new("save the profile");
    request.assertions = saved();
    let result = env
        .runtime
        .run(
            &env.session,
            request,
            script(vec![
                Scripted::Click("Save".into()),
                Scripted::Done("saved".into()),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::Verified);
    // A claim the page never bears out is still refused, after that second.
    let mut request = RunRequest::new("save the profile");
    request.assertions = vec![Assertion::TextPresent {
        text: "Profile deleted.".into(),
    }];
    let started = std::time::Instant::now();
    let result = env
        .runtime
        .run(
            &env.session,
            request,
            script(vec![Scripted::Done("deleted".into())]),
        )
        .await
        .unwrap();
    assert_eq!(
        result.reason_code(),
        ReasonCode::VerificationFailed,
        "{result:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the page was looked at again before the verdict"
    );
    // A run stopped while its page is looked at again ends cancelled, not judged.
    let mut events = env.runtime.subscribe_events();
    let mut request = RunRequest::new("save the profile");
    request.assertions = vec![Assertion::TextPresent {
        text: "Profile deleted.".into(),
    }];
    let (handle, join) = env
        .runtime
        .start_run(
            &env.session,
            request,
            script(vec![Scripted::Done("deleted".into())]),
        )
        .unwrap();
    wait_for(&mut events, |k| matches!(k, EventKind::Observed { .. })).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle.cancel();
    assert_eq!(join.await.unwrap().reason_code(), ReasonCode::Cancelled);
}

#[tokio::test]
async fn case_24_two_tabs_in_parallel_and_a_second_writer_is_refused() {
    let env = env("case24", true).await;
    let a = crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let _b = crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let s1 = protocol::SurfaceName::new("s1").unwrap();
    let s2 = protocol::SurfaceName::new("s2").unwrap();
    let mut first = RunRequest::new("sign up Ada");
    first.surface = Some(s1.clone());
    first.assertions = welcome("Ada");
    let mut slow = sign_up("Ada");
    slow.insert(0, Scripted::Think(Duration::from_millis(400)));
    let (h1, j1) = env
        .runtime
        .start_run(&env.session, first, script(slow))
        .unwrap();
    // A second writer on the same tab is refused while the first holds the lease.
    let mut again = RunRequest::new("also sign up");
    again.surface = Some(s1.clone());
    let err = env
        .runtime
        .start_run(&env.session, again, script(vec![]))
        .unwrap_err();
    assert_eq!(err.code(), protocol::ErrorCode::LeaseConflict, "{err}");
    assert!(err.to_string().contains(h1.run_id.as_str()));
    let mut second = RunRequest::new("sign up Bob");
    second.surface = Some(s2);
    second.assertions = welcome("Bob");
    let (_h2, j2) = env
        .runtime
        .start_run(&env.session, second, script(sign_up("Bob")))
        .unwrap();
    let (r1, r2) = tokio::join!(j1, j2);
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(r1.status(), RunStatus::Succeeded, "{r1:?}");
    assert_eq!(r2.status(), RunStatus::Succeeded, "{r2:?}");
    assert_ne!(r1.target(), r2.target(), "each run kept its own tab");
    assert_eq!(env.server.writes().len(), 2);
    // The lease is free again.
    let mut after = RunRequest::new("again");
    after.surface = Some(s1);
    let (_, j) = env
        .runtime
        .start_run(
            &env.session,
            after,
            script(vec![Scripted::GiveUp("nothing".into())]),
        )
        .unwrap();
    j.await.unwrap();
    assert!(env.runtime.surface_ids(&env.session).unwrap().contains(&a));
}

#[tokio::test]
async fn case_25_external_origin_asks_denial_writes_nothing_task_approval_asks_once() {
    let env = env("case25", false).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    // Denied: nothing is typed, nothing is sent.
    let seen = person(&env.runtime, vec![ApprovalDecision::Deny]);
    let mut request = RunRequest::new("sign up");
    request.assertions = welcome("Ada");
    let result = env
        .runtime
        .run(
            &env.session,
            request,
            script(vec![
                Scripted::Type("Name".into(), "Ada".into()),
                Scripted::GiveUp("denied".into()),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Failed);
    assert!(env.server.writes().is_empty());
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let ask = &asked[0];
    assert_eq!(
        (ask.action.as_str(), ask.target.as_str(), ask.tier),
        ("type", "textbox \"Name\"", policy::RiskTier::R2)
    );
    assert_eq!(ask.origin, env.server.origin());
    assert_eq!(ask.text_chars, Some(3), "the text's length, never the text");
    let observed = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    assert!(
        observed.aria_snapshot().contains("textbox \"Name\" [e1]\n"),
        "{}",
        observed.aria_snapshot()
    );

    // Approved for the task: the next same-origin action does not ask again.
    let seen = person(&env.runtime, vec![ApprovalDecision::ApproveForTask]);
    let mut request = RunRequest::new("sign up");
    request.assertions = welcome("Ada");
    let result = env
        .runtime
        .run(&env.session, request, script(sign_up("Ada")))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(seen.lock().unwrap().len(), 1, "asked once for the task");
    assert_eq!(env.server.writes().len(), 1);
}

#[tokio::test]
async fn case_26_a_redirect_to_another_origin_voids_the_grant() {
    let env = env("case26", false).await;
    crate::open(
        &env.runtime,
        &env.session,
        &env.server.url("/rt/leave.html"),
    )
    .await
    .unwrap();
    let seen = person(
        &env.runtime,
        vec![ApprovalDecision::ApproveForTask, ApprovalDecision::Deny],
    );
    let steps = vec![
        Scripted::Type("Name".into(), "first".into()),
        Scripted::Click("Continue elsewhere".into()),
        Scripted::Type("Name".into(), "second".into()),
        Scripted::GiveUp("stop".into()),
    ];
    let result = env
        .runtime
        .run(&env.session, RunRequest::new("go"), script(steps))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Failed);
    let asked = seen.lock().unwrap().clone();
    let origins: Vec<_> = asked.iter().map(|a| a.origin.clone()).collect();
    // The click on the granted origin did not ask; the same task on the new origin did.
    assert_eq!(
        origins,
        vec![env.server.origin(), env.server.url_on_host("localhost", "")],
        "a new origin asks again"
    );
}

#[tokio::test]
async fn case_15_and_26_a_popup_ends_the_run_needs_user_new_surface_created() {
    let env = env("case15", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/widgets.html"))
        .await
        .unwrap();
    let steps = vec![
        Scripted::Click("Open help".into()),
        Scripted::Wait(300),
        Scripted::Done("done".into()),
    ];
    let result = env
        .runtime
        .run(&env.session, RunRequest::new("open help"), script(steps))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::NeedsUser, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::NewSurfaceCreated);
    // "用户关联新 tab 后，下一 turn 创建新 run 才能控制": a run naming the popup is refused
    // until a person links it, and in the turn it was linked.
    let s2 = protocol::SurfaceName::new("s2").unwrap();
    let on_popup = |steps: Vec<Scripted>| {
        let mut request = RunRequest::new("read the help");
        request.surface = Some(s2.clone());
        (request, script(steps))
    };
    let (request, planner) = on_popup(vec![Scripted::Done("read".into())]);
    let refused = env
        .runtime
        .run(&env.session, request, planner)
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        protocol::ErrorCode::NewSurfaceCreated,
        "{refused}"
    );
    assert!(refused.to_string().contains("link"), "{refused}");
    let tab = env
        .runtime
        .status(&env.session)
        .unwrap()
        .tabs
        .into_iter()
        .find(|t| t.opened_by.as_deref() == Some("s1"))
        .expect("the popup is the session's")
        .resource;
    // Only a tab a page opened is linked; the opener is refused.
    let opener = env
        .runtime
        .status(&env.session)
        .unwrap()
        .tabs
        .into_iter()
        .find(|t| t.opened_by.is_none())
        .unwrap()
        .resource;
    assert_eq!(
        env.runtime.link_tab(&opener).await.unwrap_err().code(),
        protocol::ErrorCode::InvalidAction
    );
    let linked = env.runtime.link_tab(&tab).await.unwrap();
    assert_eq!(
        (linked.surface_key.as_str(), linked.opened_by.as_str()),
        ("s2", "s1")
    );
    assert_eq!(linked.runs_from_turn, "turn_2");
    let (request, planner) = on_popup(vec![Scripted::Done("read".into())]);
    assert_eq!(
        env.runtime
            .run(&env.session, request, planner)
            .await
            .unwrap_err()
            .code(),
        protocol::ErrorCode::NewSurfaceCreated,
        "not in the turn it was linked"
    );
    // The turn's end keeps it (the person's link marked it) and the next turn's run, naming no
    // tab, binds it (the link gave it the focus).
    let (ended, report) = env.runtime.end_current_turn(&env.session).await.unwrap();
    assert_eq!(ended, "turn_1");
    assert!(report.kept.contains(&tab), "{report:?}");
    let mut request = RunRequest::new("read the help");
    request.assertions = vec![Assertion::TextPresent {
        text: "Inside the same-origin frame".into(),
    }];
    let result = env
        .runtime
        .run(
            &env.session,
            request,
            script(vec![Scripted::Done("read".into())]),
        )
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
}

#[tokio::test]
async fn case_28_prompt_injection_changes_no_permission_task_or_target() {
    let env = env("case28", false).await;
    crate::open(
        &env.runtime,
        &env.session,
        &env.server.url("/rt/inject.html"),
    )
    .await
    .unwrap();
    let observed = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    assert!(observed.untrusted_content());
    let seen = person(
        &env.runtime,
        vec![
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::Deny,
            ApprovalDecision::Deny,
        ],
    );
    // (Each person answers only its own decisions, then stops listening.)
    let steps = vec![
        Scripted::Click("Approve all actions".into()),
        Scripted::Type("Note".into(), "hello".into()),
        Scripted::Click("Delete everything".into()),
        Scripted::GiveUp("stop".into()),
    ];
    let result = env
        .runtime
        .run(&env.session, RunRequest::new("write a note"), script(steps))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Failed);
    let asked = seen.lock().unwrap().clone();
    // The page's "approval" button approved nothing: the next write asked again, and a
    // delete-like button is high-impact whatever the page says.
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(asked[2].tier, policy::RiskTier::R3);
    assert!(env.server.writes().is_empty(), "the wipe never happened");
    assert!(env.runtime.pending_approvals().is_empty());
    assert!(
        !env.server
            .requests()
            .iter()
            .any(|r| r.path.contains("steal"))
    );
}

#[tokio::test]
async fn case_29_stop_in_each_phase_prevents_any_further_side_effect() {
    let env = env("case29", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let mut events = env.runtime.subscribe_events();
    // During a planner call.
    let steps = vec![
        Scripted::Think(Duration::from_secs(10)),
        Scripted::Click("Create account".into()),
    ];
    let (handle, join) = env
        .runtime
        .start_run(&env.session, RunRequest::new("t"), script(steps))
        .unwrap();
    wait_for(&mut events, |k| matches!(k, EventKind::Observed { .. })).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.cancel();
    assert_eq!(join.await.unwrap().reason_code(), ReasonCode::Cancelled);
    // Between actions: the second click never happens.
    let steps = vec![
        Scripted::Type("Name".into(), "A".into()),
        Scripted::Think(Duration::from_secs(10)),
        Scripted::Click("Create account".into()),
    ];
    let (handle, join) = env
        .runtime
        .start_run(&env.session, RunRequest::new("t"), script(steps))
        .unwrap();
    wait_for(&mut events, |k| matches!(k, EventKind::Receipt { .. })).await;
    handle.cancel();
    assert_eq!(join.await.unwrap().reason_code(), ReasonCode::Cancelled);
    // During an approval wait (an untrusted R3 action): the approval is withdrawn.
    // (The password is the person's, in the task: a run types no secret it was not given.)
    let steps = vec![Scripted::Type("Password".into(), "secret-pw".into())];
    let (handle, join) = env
        .runtime
        .start_run(
            &env.session,
            RunRequest::new("sign up, password secret-pw"),
            script(steps),
        )
        .unwrap();
    wait_for(&mut events, |k| {
        matches!(k, EventKind::ApprovalRequested { .. })
    })
    .await;
    assert_eq!(env.runtime.pending_approvals().len(), 1);
    handle.cancel();
    assert_eq!(join.await.unwrap().reason_code(), ReasonCode::Cancelled);
    assert!(env.runtime.pending_approvals().is_empty());
    assert!(env.server.writes().is_empty(), "no submission happened");
    // During observation: the observation is abandoned.
    let (handle, join) = env
        .runtime
        .start_run(
            &env.session,
            RunRequest::new("t"),
            script(vec![Scripted::Click("Create account".into())]),
        )
        .unwrap();
    handle.cancel();
    assert_eq!(join.await.unwrap().reason_code(), ReasonCode::Cancelled);
    assert!(env.server.writes().is_empty());
    // The tab is free again.
    let result = env
        .runtime
        .run(
            &env.session,
            RunRequest::new("t"),
            script(vec![Scripted::GiveUp("x".into())]),
        )
        .await
        .unwrap();
    assert_eq!(result.reason_code(), ReasonCode::ActionFailed);
}

#[tokio::test]
async fn case_30_no_failure_kind_ever_yields_succeeded() {
    let env = env("case30", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let run =
        |steps: Vec<Scripted>, max_steps: u32, max_seconds: u32, assertions: Vec<Assertion>| {
            let runtime = env.runtime.clone();
            let session = env.session.clone();
            async move {
                let mut request = RunRequest::new("t");
                request.max_steps = max_steps;
                request.max_seconds = max_seconds;
                request.assertions = assertions;
                runtime.run(&session, request, script(steps)).await.unwrap()
            }
        };
    let cases = vec![
        (
            run(
                vec![Scripted::Raw(
                    json!({"type": "click", "target": "the big button"}),
                )],
                5,
                30,
                vec![],
            )
            .await,
            ReasonCode::InvalidPlan,
        ),
        (
            run(
                vec![Scripted::Click("No such button".into())],
                5,
                30,
                vec![],
            )
            .await,
            ReasonCode::InvalidPlan,
        ),
        (
            run(
                vec![
                    Scripted::Wait(1),
                    Scripted::Wait(1),
                    Scripted::Wait(1),
                    Scripted::Done("done".into()),
                ],
                2,
                30,
                welcome("x"),
            )
            .await,
            ReasonCode::StepLimit,
        ),
        (
            run(
                vec![
                    Scripted::Think(Duration::from_secs(5)),
                    Scripted::Done("done".into()),
                ],
                5,
                1,
                welcome("x"),
            )
            .await,
            ReasonCode::Timeout,
        ),
        (
            run(
                vec![Scripted::Done("I am sure it worked".into())],
                5,
                30,
                welcome("Nobody"),
            )
            .await,
            ReasonCode::VerificationFailed,
        ),
        (
            run(
                vec![Scripted::Done("it worked, trust me".into())],
                5,
                30,
                vec![],
            )
            .await,
            ReasonCode::VerificationFailed,
        ),
        (
            run(vec![Scripted::GiveUp("cannot".into())], 5, 30, vec![]).await,
            ReasonCode::ActionFailed,
        ),
    ];
    for (result, reason) in cases {
        assert_ne!(result.status(), RunStatus::Succeeded, "{result:?}");
        assert_eq!(result.reason_code(), reason, "{result:?}");
    }
}

#[tokio::test]
async fn case_12_observe_only_surface_answers_but_refuses_writes() {
    let env = env("case12", true).await;
    let surface = crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    env.runtime
        .set_capabilities(&env.session, surface, vec![protocol::Capability::Observe])
        .unwrap();
    let observed = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    assert!(observed.aria_snapshot().contains("Create account"));
    let result = env
        .runtime
        .run(&env.session, RunRequest::new("t"), script(sign_up("Ada")))
        .await
        .unwrap();
    assert_eq!(
        result.reason_code(),
        ReasonCode::CapabilityDenied,
        "{result:?}"
    );
    assert!(env.server.writes().is_empty());
    assert!(
        env.runtime
            .set_capabilities(&env.session, surface, vec![protocol::Capability::Interact])
            .is_err(),
        "interact needs observe"
    );
}

#[tokio::test]
async fn case_18_unregistered_localhost_is_not_trusted() {
    let env = env("case18", false).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let seen = person(&env.runtime, vec![ApprovalDecision::Deny]);
    let result = env
        .runtime
        .run(
            &env.session,
            RunRequest::new("t"),
            script(vec![
                Scripted::Type("Name".into(), "x".into()),
                Scripted::GiveUp("no".into()),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Failed);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "127.0.0.1 without registration asks like any external origin"
    );
    env_trusted_equivalent().await;
}

/// The same page with its origin registered needs no approval (case 18's other half).
async fn env_trusted_equivalent() {
    let env = env("case18b", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let seen = person(&env.runtime, vec![]);
    let mut request = RunRequest::new("t");
    request.assertions = welcome("x");
    let result = env
        .runtime
        .run(&env.session, request, script(sign_up("x")))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn case_8_a_closed_tab_is_target_lost_and_no_other_tab_is_picked() {
    let env = env("case8", true).await;
    let first = crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    env.runtime.focus(&env.session, first).unwrap();
    let mut events = env.runtime.subscribe_events();
    let steps = vec![
        Scripted::Think(Duration::from_millis(500)),
        Scripted::Type("Name".into(), "x".into()),
        Scripted::Done("d".into()),
    ];
    let (_, join) = env
        .runtime
        .start_run(&env.session, RunRequest::new("t"), script(steps))
        .unwrap();
    wait_for(&mut events, |k| matches!(k, EventKind::Observed { .. })).await;
    env.runtime.close_tab(&env.session, first).await.unwrap();
    let result = join.await.unwrap();
    assert_eq!(result.reason_code(), ReasonCode::TargetLost, "{result:?}");
    let other = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    assert!(
        other.aria_snapshot().contains("textbox \"Name\" [e1]\n"),
        "the other tab was never touched"
    );
}

#[tokio::test]
async fn case_20_and_31_artifacts_are_deleted_on_every_ending_and_swept_after_a_crash() {
    let env = env("case20", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let mut events = env.runtime.subscribe_events();
    for (steps, retain) in [
        (vec![Scripted::GiveUp("x".into())], false),
        (vec![Scripted::Think(Duration::from_secs(10))], false),
        (vec![Scripted::GiveUp("x".into())], true),
    ] {
        let mut request = RunRequest::new("t");
        request.screenshots = true;
        request.retain_screenshots = retain;
        let cancel_it = matches!(steps[0], Scripted::Think(_));
        let (handle, join) = env
            .runtime
            .start_run(&env.session, request, script(steps))
            .unwrap();
        if cancel_it {
            wait_for(&mut events, |k| matches!(k, EventKind::Observed { .. })).await;
            handle.cancel();
        }
        let result = join.await.unwrap();
        assert!(
            !env.runtime
                .artifacts()
                .has_unretained(handle.run_id.as_str()),
            "{:?}",
            result
        );
        assert_eq!(
            result.artifacts().len(),
            usize::from(retain),
            "only retained artifacts are listed"
        );
        if let Some(artifact) = result.artifacts().first() {
            let bytes = env
                .runtime
                .artifacts()
                .read(handle.run_id.as_str(), &artifact.artifact_id)
                .unwrap();
            assert!(bytes.starts_with(b"\x89PNG"));
            assert!(
                !serde_json::to_string(&result)
                    .unwrap()
                    .contains(env.data_dir.to_str().unwrap()),
                "no paths leave the runtime"
            );
        }
    }
    // A crash leaves a run directory behind; the next start sweeps it and keeps retained files.
    let orphan = env.data_dir.join("runs/run_orphan");
    std::fs::create_dir_all(orphan.join("retained")).unwrap();
    std::fs::write(orphan.join("artifact_run_orphan_1"), b"temp").unwrap();
    std::fs::write(orphan.join("retained/artifact_run_orphan_2"), b"keep").unwrap();
    let mut config = runtime::RuntimeConfig::new(&env.data_dir);
    config.artifact_ttl = Duration::ZERO;
    let _restarted = runtime::Runtime::start(config, browser::Chromium::local(&env.data_dir))
        .await
        .unwrap();
    assert!(!orphan.join("artifact_run_orphan_1").exists());
    assert!(orphan.join("retained/artifact_run_orphan_2").exists());
}

#[tokio::test]
async fn case_31_typed_secrets_never_reach_events() {
    let env = env("case31", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let mut events = env.runtime.subscribe_events();
    let seen = person(&env.runtime, vec![ApprovalDecision::ApproveOnce]);
    let steps = vec![
        Scripted::Type("Password".into(), "hunter2-very-secret".into()),
        Scripted::GiveUp("done".into()),
    ];
    let result = env
        .runtime
        .run(
            &env.session,
            RunRequest::new("sign up with the password hunter2-very-secret"),
            script(steps),
        )
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap()[0].tier,
        policy::RiskTier::R3,
        "typing a password asks every time"
    );
    let mut all = String::new();
    while let Ok(event) = events.try_recv() {
        all.push_str(&serde_json::to_string(&event).unwrap());
    }
    assert!(
        all.contains("\"text_chars\":19") && all.contains("\"secret\":true"),
        "{all}"
    );
    assert!(!all.contains("hunter2"), "{all}");
    assert!(!serde_json::to_string(&result).unwrap().contains("hunter2"));
    // Nor the run's record: the task is kept without the secret the run typed.
    use store::Store as _;
    let store = store::SqliteStore::open(env.data_dir.join("glovebox.sqlite")).unwrap();
    let runs = store.list_runs(None, 0).unwrap();
    assert_eq!(
        runs.last().map(|r| r.run.task.as_str()),
        Some("sign up with the password [redacted]")
    );
    let log = runtime::read_log(
        &runtime::RuntimeConfig::new(&env.data_dir),
        &Default::default(),
    )
    .unwrap();
    assert!(
        !serde_json::to_string(&log).unwrap().contains("hunter2"),
        "{log:?}"
    );
}

/// Case 30 with the planner's own completion checks (`004_…` 延迟、成本与验证策略): without a
/// caller's check, a `done` succeeds only on checks the runtime ran itself that hold now and did
/// not hold before the run acted; a claim whose check fails, or whose check held from the start,
/// is not a success; `infeasible` fails with its unmet conditions listed.
#[tokio::test]
async fn a_planners_own_checks_count_only_when_they_hold_now_and_did_not_before() {
    let env = env("proposed-checks", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let run = |steps: Vec<Scripted>| {
        let (runtime, session) = (env.runtime.clone(), env.session.clone());
        async move {
            runtime
                .run(&session, RunRequest::new("sign up as Ada"), script(steps))
                .await
                .unwrap()
        }
    };
    let sign_up_then = |checks: Vec<Assertion>| {
        vec![
            Scripted::Type("Name".into(), "Ada".into()),
            Scripted::Click("Create account".into()),
            Scripted::DoneWith("signed up".into(), checks),
        ]
    };

    let proven = run(sign_up_then(welcome("Ada"))).await;
    assert_eq!(
        (proven.status(), proven.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{proven:?}"
    );
    assert!(!proven.completion_evidence().is_empty());

    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let claimed = run(sign_up_then(welcome("Bob"))).await;
    assert_eq!(
        claimed.reason_code(),
        ReasonCode::VerificationFailed,
        "a claim whose check fails is no success: {claimed:?}"
    );

    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let trivial = run(sign_up_then(vec![Assertion::TextPresent {
        text: "Create account".into(),
    }]))
    .await;
    assert_eq!(
        trivial.reason_code(),
        ReasonCode::VerificationFailed,
        "{trivial:?}"
    );
    assert!(
        trivial.summary().contains("held before the run acted"),
        "{trivial:?}"
    );

    // A trivial check beside a real one still fails the whole claim.
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let mixed = run(sign_up_then(vec![
        Assertion::TextPresent {
            text: "Welcome, Ada!".into(),
        },
        Assertion::TextPresent {
            text: "Sign up".into(),
        },
    ]))
    .await;
    assert_eq!(
        mixed.reason_code(),
        ReasonCode::VerificationFailed,
        "{mixed:?}"
    );

    let infeasible = run(vec![Scripted::Infeasible(
        "this site has no account deletion".into(),
        vec!["a way to delete the account".into()],
    )])
    .await;
    assert_eq!(
        (infeasible.status(), infeasible.reason_code()),
        (RunStatus::Failed, ReasonCode::Infeasible),
        "{infeasible:?}"
    );
    assert!(
        infeasible.summary().contains("a way to delete the account"),
        "the unmet conditions are listed: {infeasible:?}"
    );

    // The command planner's answers carry the same shapes; anything else is refused.
    let step = runtime::parse_answer(
        r#"{"done": "ok", "checks": [{"kind": "url_contains", "text": "/done"}]}"#,
    )
    .unwrap();
    assert!(
        matches!(step, runtime::PlannerStep::Done { ref checks, .. } if checks.len() == 1),
        "{step:?}"
    );
    let step = runtime::parse_answer(r#"{"infeasible": "no", "unmet": ["  a   delete button "]}"#)
        .unwrap();
    assert!(
        matches!(step, runtime::PlannerStep::Infeasible { ref unmet, .. } if unmet == &["a delete button".to_owned()]),
        "{step:?}"
    );
    assert!(
        runtime::parse_answer(
            r#"{"give_up": "x", "checks": [{"kind": "text_present", "text": "a"}]}"#
        )
        .is_err(),
        "checks go with done"
    );
    assert!(
        runtime::parse_answer(r#"{"done": "x", "checks": [{"kind": "script", "code": "1"}]}"#)
            .is_err(),
        "only the runtime's check kinds"
    );
}

/// A run's record says where its time went (`004_…` 延迟、成本与验证策略): the planner, page
/// capture, input, settling, a person's approval and the runtime itself, each measured.
#[tokio::test]
async fn a_runs_record_splits_its_time_and_counts_a_persons_approval_apart() {
    let env = env("run-times", false).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    // A person who takes a moment before approving.
    let mut events = env.runtime.subscribe_events();
    let rt = env.runtime.clone();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let EventKind::ApprovalRequested { approval_id, .. } = event.kind {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let _ = rt.resolve_approval(&approval_id, ApprovalDecision::ApproveForTask);
            }
        }
    });
    let mut request = RunRequest::new("sign up");
    request.assertions = welcome("Ada");
    let result = env
        .runtime
        .run(&env.session, request, script(sign_up("Ada")))
        .await
        .unwrap();
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    let log = env
        .runtime
        .log(&runtime::LogQuery {
            session: Some(env.session.as_str().to_owned()),
            run: None,
            limit: 0,
        })
        .unwrap();
    let ended = log
        .iter()
        .rev()
        .find(|e| e["kind"] == "run_ended")
        .expect("the run's record");
    let time = &ended["accounting"]["time"];
    let ms = |k: &str| time[k].as_u64().unwrap_or_else(|| panic!("{k} in {time}"));
    assert!(
        ms("approval_ms") >= 300,
        "the person's moment is the approval's: {time}"
    );
    assert!(ms("capture_ms") > 0 && ms("input_ms") > 0, "{time}");
    assert!(
        ms("model_ms") + ms("capture_ms") + ms("input_ms") + ms("page_wait_ms") + ms("approval_ms")
            <= ms("total_ms") + 5,
        "{time}"
    );
    assert_eq!(
        ms("runtime_ms"),
        ms("total_ms") - ms("model_ms") - ms("approval_ms") - ms("person_ms"),
        "{time}"
    );
}

/// Records whether each step came with a screenshot, then says done.
struct Watching(std::sync::Arc<std::sync::Mutex<Vec<bool>>>);

impl runtime::Planner for Watching {
    fn next(&mut self, input: runtime::PlanInput) -> runtime::PlanFuture<'_> {
        self.0.lock().unwrap().push(input.screenshot.is_some());
        Box::pin(async {
            Ok(runtime::PlannerStep::Done {
                summary: "looked".into(),
                checks: Vec::new(),
            })
        })
    }
}

/// `000_…` §07: a page that is mostly canvas is a visual step without being asked (its outline
/// names nothing inside the picture); a form page is not (a screenshot only when asked).
#[tokio::test]
async fn a_mostly_canvas_page_comes_with_its_screenshot_and_a_form_does_not() {
    let env = env("canvas-visual", true).await;
    for (page, visual) in [
        ("/canvas.html", true),
        ("/form.html", false),
        ("/canvas-target.html", false),
    ] {
        crate::open(&env.runtime, &env.session, &env.server.url(page))
            .await
            .unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        env.runtime
            .run(
                &env.session,
                RunRequest::new("look"),
                Box::new(Watching(seen.clone())),
            )
            .await
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), [visual], "{page}");
    }
}
