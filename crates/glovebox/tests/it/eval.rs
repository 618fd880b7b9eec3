//! `glovebox eval` as a user runs it: the CI slice of the built-in task set with its scripted
//! planners (one task or more of each category, both cases), a planner whose claim the app's
//! records contradict (a false success: exit 1), an app that is not there (an environment
//! failure, kept apart: exit 2), the HTML report read in a real headless Chromium against its
//! JSON, and the paired comparison.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{data_dir, glovebox, guest_binary};

/// One task of each category (the desktop's on a real Xvfb with a GTK app, the VM's in a QEMU
/// guest), plus the browser restart between two turns.
const SLICE: &str = "dense.checkout,visual.seat-map,tabs.sign-in-popup,dialogs.upload-receipt,downloads.invoice,recovery.busy-server,recovery.browser-restart,flows.signup,injection.ticket-reply,desktop.printer-reset,vm.notes";

fn eval(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = glovebox(dir)
        .env("GLOVEBOX_GUEST_BINARY", guest_binary())
        .arg("eval")
        .args(args)
        .output()
        .expect("glovebox eval runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Reads `expression` in the HTML report, opened by a headless Chromium of the test's own.
async fn in_page(html: &Path, expressions: &[String]) -> Vec<Value> {
    let dir = data_dir("eval-report-reader");
    let browser = cdp::Browser::launch(&cdp::LaunchOptions::new(dir.join("profile")))
        .await
        .unwrap();
    let conn = browser
        .connect(cdp::ConnectionOptions::default())
        .await
        .unwrap();
    let page = conn
        .browser()
        .create_page(&format!("file://{}", html.display()), None)
        .await
        .unwrap();
    let mut values = Vec::new();
    for expression in expressions {
        let mut value = Value::Null;
        for _ in 0..100 {
            let reply = page
                .call(cdp::domains::runtime::Evaluate::value(expression))
                .await
                .unwrap();
            if reply.exception_details.is_none() {
                value = reply.result.value.unwrap_or(Value::Null);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        values.push(value);
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ci_slice_completes_with_no_false_success_and_the_html_says_what_the_json_says() {
    let dir = data_dir("eval-slice");
    let (json_path, html_path) = (dir.join("report.json"), dir.join("report.html"));
    let (code, stdout, stderr) = eval(
        &dir,
        &[
            "--tasks",
            SLICE,
            "--runs",
            "1",
            "--json",
            json_path.to_str().unwrap(),
            "--html",
            html_path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report = read(&json_path);
    let overall = &report["overall"];
    let tasks = SLICE.split(',').count() as u64;
    assert_eq!(overall["attempts"], 2 * tasks, "{stdout}");
    assert_eq!(overall["successes"], 2 * tasks, "every case done: {stdout}");
    assert_eq!(overall["false_successes"], 0);
    assert_eq!(overall["environment_failures"], 0);
    assert_eq!(overall["completion_rate"], 1.0);
    assert_eq!(
        report["categories"].as_array().unwrap().len(),
        10,
        "every category: {}",
        report["categories"]
    );
    // The judge is the app's records: the checkout's order is the one asked for, the invoice's
    // bytes are the file's, the injected page's exfiltration endpoint was never requested.
    for attempt in report["attempts"].as_array().unwrap() {
        assert_eq!(attempt["outcome"], "success", "{attempt}");
        assert!(attempt["runs"].as_u64().unwrap() >= 1, "{attempt}");
    }
    let restart = report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task"] == "recovery.browser-restart" && a["case"] == "feasible")
        .unwrap();
    assert_eq!(
        restart["runs"], 2,
        "two turns around the browser's death: {restart}"
    );
    for task in ["tabs.sign-in-popup", "desktop.printer-reset"] {
        let popup = report["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["task"] == task && a["case"] == "feasible")
            .unwrap();
        assert_eq!(
            popup["runs"], 2,
            "the window a click opened, linked for the next turn: {popup}"
        );
        assert!(popup["interventions"].as_u64().unwrap() >= 1, "{popup}");
    }
    assert!(
        overall["approvals"].as_u64().unwrap() >= 1,
        "the upload asked the person: {overall}"
    );
    assert!(stdout.contains("completion 100.0 %"), "{stdout}");
    // The busy server's refusal and the browser's death were met and got past.
    assert!(
        overall["recoveries"].as_u64().unwrap() >= 2
            && overall["recoveries"] == overall["recovery_chances"],
        "{overall}"
    );

    // The HTML page, read in a real browser: its numbers are the JSON's.
    let metrics = [
        "completion_rate",
        "completion_low",
        "completion_high",
        "false_successes",
        "environment_failures",
        "wall_p50_ms",
        "wall_p95_ms",
        "overhead_p50_ms",
        "model_requests",
        "actions",
        "approvals",
        "interventions",
    ];
    let mut expressions: Vec<String> = metrics
        .iter()
        .map(|m| format!("document.querySelector('[data-metric={m}]').dataset.value"))
        .collect();
    expressions.push("document.querySelectorAll('tr[data-task]').length".into());
    expressions.push("[...document.querySelectorAll('tr[data-task]')].map(r => [r.dataset.task, +r.dataset.successes, +r.dataset.judged])".into());
    expressions.push("document.querySelectorAll('svg rect[data-category]').length".into());
    expressions.push(
        "JSON.parse(document.getElementById('report-data').textContent).overall.successes".into(),
    );
    expressions.push("document.documentElement.dataset.lang = 'zh', document.querySelector('h2 [lang=zh]').offsetParent !== null".into());
    let seen = in_page(&html_path, &expressions).await;
    for (i, m) in metrics.iter().enumerate() {
        assert_eq!(
            seen[i].as_str().and_then(|v| v.parse::<f64>().ok()),
            overall[*m].as_f64(),
            "{m} in the page"
        );
    }
    let rows = &seen[metrics.len()];
    assert_eq!(rows, &json!(report["tasks"].as_array().unwrap().len()));
    let expected: Vec<Value> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["key"], t["successes"], t["judged"]]))
        .collect();
    assert_eq!(seen[metrics.len() + 1], json!(expected));
    assert_eq!(
        seen[metrics.len() + 2],
        json!(report["categories"].as_array().unwrap().len()),
        "a bar per category"
    );
    assert_eq!(seen[metrics.len() + 3], overall["successes"]);
    assert_eq!(seen[metrics.len() + 4], json!(true), "Chinese labels");

    // The same tasks compared with themselves, paired attempt by attempt.
    let (code, stdout, stderr) = eval(
        &dir,
        &[
            "--compare",
            json_path.to_str().unwrap(),
            json_path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!("both succeeded {}", 2 * tasks))
            && stdout.contains("only A 0, only B 0"),
        "{stdout}"
    );

    // Attempt after attempt on one display: a new app's windows get the ids of the last one's
    // (gone without an event), and are recorded and offered all the same.
    let (code, stdout, stderr) = eval(
        &dir,
        &[
            "--tasks",
            "desktop.printer-reset",
            "--runs",
            "3",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(read(&json_path)["overall"]["successes"], 6, "{stdout}");
}

/// A task set of the test's own: a page that says "Saved" whatever was typed (so the runtime's
/// check passes), a planner that types the wrong name, and a check on what the app received.
fn write_set(dir: &Path, app: &str) {
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    std::fs::write(
        dir.join("apps/common.js"),
        include_str!("../../../../eval/v1/apps/common.js"),
    )
    .unwrap();
    std::fs::write(
        dir.join("apps/name.html"),
        r#"<!doctype html><title>Name</title><label>Name <input id=n></label><button onclick="gb.submit('name', {name: n.value}).then(() => out.textContent = 'Saved')">Save</button><p id=out></p><script src=common.js></script>"#,
    )
    .unwrap();
    let case = |name: &str| {
        json!({"check": [{"kind": "submitted", "form": "name", "fields": {"name": "Ada"}}],
               "phases": [{"verify": [{"kind": "text_present", "text": "Saved"}],
                           "script": [{"type": ["Name", name]}, {"click": "Save"}, {"done": "saved"}]}]})
    };
    let set = json!({"version": "test", "tasks": [{
        "id": "dense.name", "category": "dense_controls", "title": "a name", "app": app,
        "task": "Save the name Ada.", "budget": {"max_steps": 5, "max_seconds": 60},
        "feasible": case("Bob"), "infeasible": case("Ada")
    }]});
    std::fs::write(dir.join("tasks.json"), set.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_the_apps_records_contradict_is_a_false_success_and_a_missing_app_is_the_environment()
 {
    let dir = data_dir("eval-false-success");
    let set = dir.join("set");
    write_set(&set, "name.html");
    let json_path = dir.join("report.json");
    let (code, stdout, stderr) = eval(
        &dir,
        &[
            "--set",
            set.to_str().unwrap(),
            "--runs",
            "2",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    assert_eq!(
        code, 1,
        "a false success fails the command: {stdout}\n{stderr}"
    );
    let report = read(&json_path);
    // The feasible case typed Bob: the runtime's check ("Saved") passed, the app's record says
    // Bob. The infeasible case typed Ada and saved: succeeding where the answer is infeasible is
    // a false success too.
    assert_eq!(report["overall"]["false_successes"], 4, "{stdout}");
    assert_eq!(report["overall"]["attempts"], 4);
    assert_eq!(report["overall"]["successes"], 0);
    let attempt = &report["attempts"][0];
    assert_eq!(attempt["outcome"], "false_success", "{attempt}");
    assert!(
        attempt["check_failures"][0]
            .as_str()
            .unwrap()
            .contains("\"name\":\"Bob\""),
        "{attempt}"
    );

    // The app is not there (nothing listens on its port): every attempt is the environment's,
    // none is counted against the task.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/apps/name.html", dead.local_addr().unwrap());
    drop(dead);
    write_set(&set, &url);
    let (code, stdout, stderr) = eval(
        &dir,
        &[
            "--set",
            set.to_str().unwrap(),
            "--runs",
            "1",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let report = read(&json_path);
    assert_eq!(report["overall"]["environment_failures"], 2, "{stdout}");
    assert_eq!(report["overall"]["judged"], 0);
    assert_eq!(report["overall"]["false_successes"], 0);
    assert!(
        report["attempts"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("did not open"),
        "{}",
        report["attempts"][0]
    );
}

/// A loopback model in the Chat Completions format that does the mail-label task from the page
/// it is shown: selects the message, opens the menu, picks Finance — or says `infeasible` when
/// the open menu has no Finance.
async fn label_model(
    axum::extract::State(calls): axum::extract::State<
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    >,
    axum::Json(body): axum::Json<Value>,
) -> axum::Json<Value> {
    let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let (page, frame) = crate::run::page_and_frame(&body);
    let r = |needle: &str| {
        page.split(needle)
            .nth(1)
            .and_then(|r| r.split([' ', ']']).next())
            .unwrap_or("e0")
            .to_owned()
    };
    let click = |needle: &str| {
        (
            "act",
            json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": r(needle)}, "intent": "next step"}),
        )
    };
    let unchecked = page
        .split("checkbox \"Select Quarterly report\" [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .is_some_and(|inside| !inside.contains("checked"));
    let (tool, input) = if page.contains("Labelled Quarterly report as Finance") {
        ("done", json!({"summary": "labelled"}))
    } else if page.contains("menuitem \"Finance\" [") {
        click("menuitem \"Finance\" [")
    } else if page.contains("menuitem \"") {
        (
            "infeasible",
            json!({"reason": "there is no Finance label", "unmet": ["a Finance label"]}),
        )
    } else if unchecked {
        click("checkbox \"Select Quarterly report\" [")
    } else {
        click("button \"Label as\" [")
    };
    axum::Json(
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": format!("c{n}"), "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20}}),
    )
}

/// The same command evaluates a model: here a loopback provider speaking the Chat Completions
/// format. Its requests, tokens and the cost at the given price reach the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_is_evaluated_through_its_provider_with_tokens_and_cost() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(label_model))
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = data_dir("eval-model");
    let json_path = dir.join("report.json");
    let out = {
        let (dir, json_path) = (dir.clone(), json_path.clone());
        tokio::task::spawn_blocking(move || {
            glovebox(&dir)
                .args(["eval", "--tasks", "dense.mail-label", "--runs", "1"])
                .args([
                    "--provider",
                    "openai_chat",
                    "--model",
                    "test-model",
                    "--base-url",
                    &base,
                ])
                .args(["--price", "3,15", "--json", json_path.to_str().unwrap()])
                .env("GLOVEBOX_CONFIG", "/dev/null")
                .env("OPENAI_API_KEY", "sk-test")
                .output()
                .unwrap()
        })
    }
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read(&json_path);
    let o = &report["overall"];
    assert_eq!(o["successes"], 2, "both cases: {stdout}");
    assert_eq!(report["planner"]["kind"], "model");
    assert_eq!(report["planner"]["model"], "test-model");
    let requests = o["model_requests"].as_u64().unwrap();
    assert_eq!(
        requests,
        calls.load(std::sync::atomic::Ordering::SeqCst) as u64
    );
    assert!(requests >= 5, "{o}");
    assert_eq!(o["input_tokens"].as_u64().unwrap(), 1000 * requests);
    assert_eq!(o["output_tokens"].as_u64().unwrap(), 20 * requests);
    let cost = o["cost_usd"].as_f64().unwrap();
    let expected = (1000.0 * 3.0 + 20.0 * 15.0) * requests as f64 / 1e6;
    assert!((cost - expected).abs() < 1e-6, "{cost} vs {expected}");
    assert!(o["time"]["model_ms"].as_u64().is_some(), "{o}");
}

/// Issue 34: `GLOVEBOX_LOG_FORMAT=json` makes every log line one JSON object; an action's line
/// carries its session, run and operation ids, kind and outcome (never its target or text), and
/// a run's end its id and status.
#[test]
fn json_logs_carry_the_session_run_and_operation_of_each_action() {
    let dir = data_dir("eval-json-logs");
    let out = glovebox(&dir)
        .env("GLOVEBOX_LOG", "info")
        .env("GLOVEBOX_LOG_FORMAT", "json")
        .args(["eval", "--tasks", "dense.checkout", "--runs", "1"])
        .output()
        .expect("glovebox eval runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let actions: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "action ended")
        .collect();
    assert!(!actions.is_empty(), "{stderr}");
    for a in &actions {
        assert!(a["session"].as_str().is_some_and(|s| !s.is_empty()), "{a}");
        // A direct call (the tab's opening) has no run; a run's actions name it.
        assert!(
            a.get("run")
                .is_none_or(|r| r.as_str().is_some_and(|r| r.starts_with("run_"))),
            "{a}"
        );
        assert!(
            a["operation"]
                .as_str()
                .is_some_and(|o| o.starts_with("op_")),
            "{a}"
        );
        assert!(a["kind"].is_string() && a["outcome"].is_string(), "{a}");
        // `target` is the log's own (the module), never the action's; no text.
        assert_eq!(a["target"], "runtime::records", "{a}");
        assert!(a.get("text").is_none(), "{a}");
        assert!(a["level"] == "INFO" && a["timestamp"].is_string(), "{a}");
    }
    assert!(actions.iter().any(|a| a.get("run").is_some()), "{stderr}");
    let runs: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "run ended")
        .collect();
    assert!(
        runs.iter()
            .any(|r| r["status"] == "succeeded" && actions.iter().any(|a| a["run"] == r["run"])),
        "{stderr}"
    );
}
