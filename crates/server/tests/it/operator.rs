//! Issue 34's operator surface on the real listener: `/healthz` and `/readyz` answer whatever
//! `Host` an orchestrator uses; `/metrics` needs the bearer token when one is set (and then
//! accepts the name a scraper reaches the pod by), and what it says — parsed by Prometheus' own
//! Python parser — counts the one path's actions by kind and outcome, refusals by error code,
//! their time, the CDP round trips beneath them, sessions, surfaces and the backend's state.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::env;

/// GET with a chosen Host header; returns the status and the body.
async fn get(addr: std::net::SocketAddr, path: &str, host: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    super::exchange(addr, &request).await
}

/// Scrapes with the Python client's parser (`tests/metrics.py`).
fn scrape(url: &str, token: &str, host: Option<&str>) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let ensure = Command::new(root.join("../../scripts/ensure-python-mcp.sh"))
        .output()
        .expect("run ensure-python-mcp.sh");
    assert!(ensure.status.success(), "ensure-python-mcp.sh failed");
    let python = String::from_utf8(ensure.stdout).unwrap().trim().to_owned();
    let mut command = Command::new(python);
    command
        .arg(root.join("tests/metrics.py"))
        .arg(url)
        .arg(token);
    if let Some(host) = host {
        command.arg(host);
    }
    let out = command.output().expect("metrics.py runs");
    assert!(
        out.status.success(),
        "metrics.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample named `name` whose labels include `labels` (summed over the rest).
fn value(scraped: &Value, name: &str, labels: &[(&str, &str)]) -> f64 {
    scraped["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == name)
        .filter(|s| labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_any_host_and_metrics_count_the_one_path_for_the_token_holder() {
    let env = env("operator").await;
    // A second listener on the same runtime, with a bearer token, as `glovebox serve` has.
    let token = "operator-test-token-0123456789abcdef";
    let guarded = server::serve(
        env.runtime.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(token.into()),
            ..server::HttpOptions::default()
        },
    )
    .await
    .unwrap();
    let addr = guarded.local_addr;

    // Probes: whatever the Host (a kubelet uses the pod's address), no token needed.
    assert_eq!(
        get(addr, "/healthz", "10.1.2.3:7777").await,
        (200, "ok\n".into())
    );
    assert_eq!(
        get(addr, "/readyz", "10.1.2.3:7777").await,
        (200, "ready\n".into())
    );
    // The rest still judges the Host.
    assert_eq!(get(addr, "/api/sessions", "10.1.2.3:7777").await.0, 403);

    // Work on the one path: typing that lands, and a click refused on the frame it spent.
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&session, None, &Default::default())
        .await
        .unwrap();
    let name = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Name")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let action = |kind: &str, frame: &str| {
        let mut action = json!({"type": kind, "expected_frame_id": frame,
            "target": {"kind": "element", "ref": name}, "intent": "t"});
        if kind == "type" {
            action["text"] = json!("Ada");
        }
        protocol::validate_extended_action(&action).unwrap()
    };
    // Typing changes the page: the frame it was sent on is spent.
    let done = env
        .runtime
        .act(
            &session,
            None,
            &action("type", o.frame_id().as_str()),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let state = serde_json::to_value(done.receipt.state()).unwrap();
    let stale = env
        .runtime
        .act(
            &session,
            None,
            &action("click", o.frame_id().as_str()),
            &Default::default(),
            Duration::ZERO,
        )
        .await;
    assert!(stale.is_err(), "the spent frame is refused");

    let url = format!("http://{addr}/metrics");
    // No token, a wrong token: refused; never the metrics.
    assert_eq!(scrape(&url, "", None)["status"], 401);
    assert_eq!(scrape(&url, "not-it", None)["status"], 401);
    // The token holder, by any name (a scraper reaches the pod by its address).
    let m = scrape(&url, token, Some("10.1.2.3:7777"));
    assert_eq!(m["status"], 200, "{m}");
    assert!(
        m["content_type"]
            .as_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{m}"
    );
    assert_eq!(
        value(&m, "glovebox_backend_up", &[("kind", "web_tab")]),
        1.0
    );
    assert_eq!(value(&m, "glovebox_sessions", &[]), 1.0);
    assert_eq!(value(&m, "glovebox_surfaces", &[]), 1.0);
    assert_eq!(value(&m, "glovebox_approvals_waiting", &[]), 0.0);
    assert_eq!(
        value(
            &m,
            "glovebox_actions_total",
            &[("kind", "type"), ("outcome", state.as_str().unwrap())]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        value(
            &m,
            "glovebox_actions_total",
            &[("kind", "click"), ("outcome", "refused")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &m,
            "glovebox_action_errors_total",
            &[("code", "stale_observation")]
        ),
        1.0
    );
    assert_eq!(
        value(&m, "glovebox_action_errors_total", &[("code", "internal")]),
        0.0
    );
    // Every action but the refused is timed (the refusal was never dispatched), and CDP
    // beneath them.
    let dispatched = value(&m, "glovebox_actions_total", &[])
        - value(&m, "glovebox_actions_total", &[("outcome", "refused")]);
    assert!(dispatched >= 1.0, "{m}");
    assert_eq!(
        value(&m, "glovebox_action_seconds_count", &[]),
        dispatched,
        "{m}"
    );
    assert!(value(&m, "glovebox_action_seconds_sum", &[]) > 0.0);
    let cdp = value(
        &m,
        "glovebox_backend_round_trip_seconds_count",
        &[("protocol", "cdp")],
    );
    assert!(cdp > 10.0, "CDP round trips counted: {cdp}: {m}");
    // No label carries a page's text, a URL or a session id.
    let text = m["samples"].to_string();
    assert!(!text.contains(session.as_str()), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");

    guarded.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_not_ready_once_the_browser_is_gone() {
    let env = env("operator-dead").await;
    let addr = env.server.local_addr;
    let host = format!("127.0.0.1:{}", addr.port());
    assert_eq!(get(addr, "/readyz", &host).await.0, 200);
    // The default listener has no token: the metrics are guarded by the Host alone.
    assert_eq!(get(addr, "/metrics", &host).await.0, 200);
    assert_eq!(get(addr, "/metrics", "evil.example:80").await.0, 403);
    let pid = env.runtime.browser_pid().expect("a local browser");
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut answer = (0, String::new());
    for _ in 0..100 {
        answer = get(addr, "/readyz", &host).await;
        if answer.0 == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer.0, 503, "{answer:?}");
    assert!(answer.1.starts_with("not ready: "), "{answer:?}");
    let (_, metrics) = get(addr, "/metrics", &host).await;
    assert!(
        metrics.contains("glovebox_backend_up{kind=\"web_tab\"} 0"),
        "{metrics}"
    );
    // The liveness probe is about the process, which is fine.
    assert_eq!(get(addr, "/healthz", &host).await.0, 200);
}
