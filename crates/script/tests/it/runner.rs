//! The runner's contract: a namespace that persists, top-level await, each limit, fencing.

use std::time::{Duration, Instant};

use protocol::ErrorCode;
use script::{ExecStatus, Limits, Method};

use crate::{Seen, run_once, sandbox, text};

#[tokio::test]
async fn variables_and_proxies_made_in_one_call_are_there_in_the_next() {
    let recorder = std::sync::Arc::new(crate::Recorder::default());
    let mut runner = script::Runner::new(sandbox().await, Limits::default());
    let first = runner
        .exec(
            "page = ui.page()\nsave = page.get_by_role('button', name='Save')\nobs = await page.observe()\ncount = 41\nobs.frame_id",
            Some("s1"),
            &*recorder,
        )
        .await;
    assert_eq!(first.status, ExecStatus::Ok, "{first:?}");
    assert!(first.environment.fresh_namespace);
    assert_eq!(text(&first).trim(), "frame_0", "a last expression is shown");
    let second = runner
        .exec(
            "r = await save.click()\ncount += 1\nprint(count, r.state, page._token)",
            None,
            &*recorder,
        )
        .await;
    assert_eq!(second.status, ExecStatus::Ok, "{second:?}");
    assert!(!second.environment.fresh_namespace);
    assert_eq!(second.generation, first.generation + 1);
    assert_eq!(text(&second).trim(), "42 applied frame_1");
    assert_eq!(second.last_applied_index, Some(0));
    assert_eq!(
        second.observations.get("s1").map(String::as_str),
        Some("frame_1")
    );
    assert_eq!(recorder.calls(Method::Act), 1);
}

#[tokio::test]
async fn a_script_error_names_the_last_completed_primitive_and_keeps_the_namespace() {
    let (result, _recorder, mut runner) = run_once(
        "page = ui.page()\nawait page.observe()\nawait page.get_by_text('Save').click()\nawait page.close()",
        Limits::default(),
    )
    .await;
    assert_eq!(result.status, ExecStatus::Error);
    let error = result.error.clone().unwrap();
    assert_eq!(error.code, Some(ErrorCode::CapabilityDenied), "{error:?}");
    assert_eq!(error.last_completed.as_deref(), Some("op-2 act"));
    assert_eq!(error.exception.as_ref().unwrap().kind, "GloveboxError");
    assert!(
        error
            .exception
            .as_ref()
            .unwrap()
            .traceback
            .contains("<gui_exec>")
    );
    let recorder = crate::Recorder::default();
    let next = runner.exec("print(page)", None, &recorder).await;
    assert_eq!(text(&next).trim(), "<Page s1>");
    // A syntax error is the script's, with nothing run.
    let bad = runner.exec("def (:", None, &recorder).await;
    assert_eq!(bad.status, ExecStatus::Error);
    assert_eq!(bad.error.unwrap().exception.unwrap().kind, "SyntaxError");
}

#[tokio::test]
async fn the_operation_budget_ends_the_call_with_step_limit() {
    let limits = Limits {
        operations: 5,
        ..Limits::default()
    };
    let (result, recorder, _runner) = run_once(
        "page = ui.page()\nfor i in range(20):\n    await page.observe()",
        limits,
    )
    .await;
    assert_eq!(result.status, ExecStatus::Limit, "{result:?}");
    assert_eq!(result.error_code(), Some(ErrorCode::StepLimit));
    assert_eq!(
        recorder.calls(Method::Observe),
        5,
        "the sixth never reached the broker"
    );
}

#[tokio::test]
async fn text_past_its_bound_is_cut_and_images_past_their_count_are_left_out() {
    let limits = Limits {
        text_bytes: 1000,
        images: 2,
        ..Limits::default()
    };
    let (result, _, _) = run_once(
        "print('x' * 5000)\npage = ui.page()\nshot = await page.screenshot()\ndisplay(shot)\ndisplay(shot)\ntry:\n    display(shot)\nexcept Exception as e:\n    caught = str(e)",
        limits,
    )
    .await;
    assert_eq!(result.status, ExecStatus::Ok, "{result:?}");
    assert!(result.truncated);
    assert_eq!(text(&result).len(), 1000);
    let images = result
        .blocks
        .iter()
        .filter(|b| matches!(b, script::Block::Image { .. }))
        .count();
    assert_eq!(images, 2);
}

#[tokio::test]
async fn a_timeout_revokes_writes_before_the_runner_is_killed_and_nothing_runs_after() {
    let limits = Limits {
        timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let recorder = std::sync::Arc::new(crate::Recorder::default());
    *recorder.act_delay.lock().unwrap() = Duration::from_millis(100);
    let mut runner = script::Runner::new(sandbox().await, limits);
    let started = Instant::now();
    let result = runner
        .exec(
            "page = ui.page()\nwhile True:\n    try:\n        await page.get_by_text('Save').click()\n    except Exception:\n        await sleep(0.05)",
            Some("s1"),
            &*recorder,
        )
        .await;
    assert_eq!(result.status, ExecStatus::Timeout, "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let seen = recorder.seen();
    assert_eq!(
        seen.last(),
        Some(&Seen::Revoke),
        "revoked, then nothing: {seen:?}"
    );
    let before = seen.len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(recorder.seen().len(), before, "no request after the revoke");
    assert!(!runner.is_running(), "the runner was killed");
    // The next call starts a fresh namespace and says so.
    let next = runner
        .exec("print('page' in globals())", Some("s1"), &*recorder)
        .await;
    assert!(next.environment.fresh_namespace);
    assert_eq!(text(&next).trim(), "False");
}

#[tokio::test]
async fn a_busy_loop_without_primitives_is_stopped_too() {
    let limits = Limits {
        timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let (result, recorder, mut runner) = run_once("while True:\n    pass", limits).await;
    assert_eq!(result.status, ExecStatus::Timeout);
    assert_eq!(recorder.seen(), vec![Seen::Revoke]);
    assert!(!runner.is_running());
}

#[tokio::test]
async fn unknown_methods_oversize_messages_forged_generations_and_replayed_ids_are_refused_before_they_run()
 {
    // The script talks to the channel itself, as generated code could.
    let code = r#"
import glovebox, json
ch = glovebox._State.channel
g = glovebox._State.generation
def ask(msg):
    ch.send(msg)
    kind, reply = ch.read()
    return reply
out = []
out.append(ask({"type": "request", "operation_id": "x1", "generation": g, "method": "evaluate", "arguments": {"js": "1"}}))
out.append(ask({"type": "request", "operation_id": "x2", "generation": g, "method": "observe", "arguments": {}, "cdp": "Runtime.evaluate"}))
out.append(ask({"type": "request", "operation_id": "x3", "generation": g + 7, "method": "observe", "arguments": {}}))
out.append(ask({"type": "request", "operation_id": "x4", "generation": g, "method": "observe", "arguments": {}}))
out.append(ask({"type": "request", "operation_id": "x4", "generation": g, "method": "observe", "arguments": {}}))
ch.send({"type": "request", "operation_id": "x5", "generation": g, "method": "observe", "arguments": {"pad": "y" * (2 << 20)}})
out.append(ch.read()[1])
for r in out:
    print(r["ok"], (r.get("error") or {}).get("code"))
"#;
    let (result, recorder, _) = run_once(code, Limits::default()).await;
    assert_eq!(result.status, ExecStatus::Ok, "{result:?}");
    let lines: Vec<_> = text(&result).lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        [
            "False invalid_action",
            "False invalid_action",
            "False stale_observation",
            "True None",
            "False invalid_action",
            "False invalid_action"
        ]
    );
    assert_eq!(
        recorder.seen(),
        vec![Seen::Call("x4".into(), Method::Observe)],
        "only the one well-formed, fresh request ran"
    );
}

#[tokio::test]
async fn an_image_past_the_pixel_bound_or_not_a_png_is_left_out() {
    let limits = Limits {
        image_max_edge: 100,
        ..Limits::default()
    };
    // The script makes its own images: a PNG too wide, bytes that are no PNG, and a small one.
    let wide = crate::tiny_png(200, 2);
    let small = crate::tiny_png(10, 10);
    let code = format!(
        "import glovebox\ndisplay(glovebox.Image(bytes({wide:?})))\ndisplay(glovebox.Image(b'not a png'))\ndisplay(glovebox.Image(bytes({small:?})))"
    );
    let (result, _, _) = crate::run_once(&code, limits).await;
    assert_eq!(result.status, ExecStatus::Ok, "{result:?}");
    assert!(result.truncated);
    let images: Vec<_> = result
        .blocks
        .iter()
        .filter_map(|b| match b {
            script::Block::Image { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(images, vec![small]);
}
