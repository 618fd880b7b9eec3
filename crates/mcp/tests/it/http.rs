//! MCP over streamable HTTP (`serve`), in process, with the Python SDK as the client.

use std::path::PathBuf;

use crate::{
    Client, Env, env, env_configured, env_with, over_http, page_count, raw_http, run, test_planner,
    until_pages,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_list_tools_over_http() {
    let env = env("tools", false, None).await;
    let out = run("tools", &over_http(&env), &[]).await;
    assert_eq!(out["server"], "glovebox");
    for tool in out["tools"].as_array().unwrap() {
        assert_eq!(
            tool["inputSchema"]["type"], "object",
            "{}: root must be type object",
            tool["name"]
        );
        assert!(
            tool["annotations"]["readOnlyHint"].is_boolean(),
            "{}",
            tool["name"]
        );
    }
    insta::assert_json_snapshot!("tools", out["tools"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_observe_type_click_and_a_stale_frame_is_refused() {
    let env = env("flow", true, None).await;
    let out = run("flow", &over_http(&env), &[env.fixtures.url("/form.html")]).await;
    assert_eq!(out["opened"]["opened"], "s1");
    assert_eq!(
        out["observe_images"],
        serde_json::json!(["image/png"]),
        "one viewport screenshot as image content"
    );
    assert!(
        out["wrapped_untrusted"].as_bool().unwrap(),
        "page text travels inside the markers"
    );
    assert!(
        out["typed_value_shown"].as_bool().unwrap(),
        "the fresh observation shows the typed name: {out}"
    );
    // The result of an action is its changes against the observation it named (refs stable, the
    // button clicked next found in what the client read before), the whole snapshot on request.
    assert_eq!(out["typed_snapshot"], "changes", "{out}");
    assert!(
        out["typed_changes"]
            .as_str()
            .unwrap()
            .starts_with("changes since frame_"),
        "{out}"
    );
    assert_eq!(out["full_on_request"], "full", "{out}");
    assert_eq!(out["clicked_error"], false, "{out}");
    assert!(
        out["welcome"].as_bool().unwrap(),
        "the new observation shows the submitted form: {out}"
    );
    assert_eq!(env.fixtures.writes().len(), 1, "exactly one form POST");
    // `near` reaches the page: a text nothing matches is said so; one past 200 characters is
    // refused by the schema's own type.
    assert_eq!(out["near_missing"], true, "{out}");
    assert_eq!(out["near_too_long"]["error"], "invalid_action", "{out}");
    assert_eq!(out["stale_error"], true);
    assert_eq!(out["stale"]["error"], "stale_observation");
    assert!(
        out["stale"]["next"]
            .as_str()
            .unwrap()
            .contains("observe again"),
        "{out}"
    );
    assert_eq!(out["invalid"]["error"], "invalid_action");
    // The argument types are the parser: a wrong type is refused, never read as a default.
    assert_eq!(out["ill_typed"]["error"], "invalid_action", "{out}");
    assert!(
        out["ill_typed"]["message"]
            .as_str()
            .unwrap()
            .contains("expected a boolean"),
        "{out}"
    );
    assert_eq!(out["unknown"]["error"], "invalid_action", "{out}");
    assert!(
        out["unknown"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `forever`"),
        "{out}"
    );
    assert_eq!(
        out["surfaces_header"]["surfaces"],
        serde_json::json!(["s1"])
    );
    // A scroll that moved nothing was a tool success whose receipt said `failed`: it is an error.
    assert_eq!(out["scroll_at_top_error"], true, "{out}");
    assert_eq!(
        (
            out["scroll_at_top"]["receipt_state"].as_str(),
            out["scroll_at_top"]["error"].as_str()
        ),
        (Some("failed"), Some("invalid_action")),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_needing_approval_waits_for_a_person() {
    let env = env("approval", false, None).await;
    let mut client = Client::start(
        "approval",
        &over_http(&env),
        &[env.fixtures.url("/form.html")],
    );
    let opening = client.next().await;
    assert_eq!(opening["open_error"], true, "{opening}");
    assert_eq!(
        (
            opening["open"]["error"].as_str(),
            opening["open"]["action"].as_str()
        ),
        (Some("needs_approval"), Some("navigate")),
        "{opening}"
    );
    assert!(
        env.fixtures.requests_to("/form.html").is_empty(),
        "the page was not loaded before a person decided"
    );
    let open_id =
        protocol::ApprovalId::new(opening["open"]["approval_id"].as_str().unwrap()).unwrap();
    env.runtime
        .resolve_approval(&open_id, runtime::ApprovalDecision::ApproveOnce)
        .unwrap();
    client.send("allowed").await;
    let first = client.next().await;
    assert_eq!(first["pending_error"], true);
    let pending = &first["pending"];
    assert_eq!(pending["error"], "needs_approval");
    assert_eq!(pending["action"], "click");
    assert_eq!(pending["tier"], "R2");
    assert_eq!(pending["origin"], env.fixtures.origin());
    assert!(
        pending["how_a_person_grants"]
            .as_str()
            .unwrap()
            .contains("glovebox approve")
    );
    let id = pending["approval_id"].as_str().unwrap().to_owned();
    assert!(
        env.fixtures.writes().is_empty(),
        "nothing was sent before a person decided"
    );

    // The model's side has no way to approve: the MCP bearer (none here) does not open the
    // person channel, and a wrong token is refused.
    let addr = env.server.local_addr;
    let post = |token: &str| {
        let body = r#"{"decision": "approve_once"}"#;
        format!(
            "POST /api/approvals/{id} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            addr.port(),
            body.len()
        )
    };
    assert_eq!(raw_http(addr, &post("not-the-person")).await.0, 401);
    let waiting = env.runtime.pending_approvals();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        waiting[0].client.as_deref(),
        Some("mcp"),
        "a person sees which client asks (the Python SDK's clientInfo name)"
    );
    assert!(env.fixtures.writes().is_empty());

    let (status, body) = raw_http(addr, &post(&env.server.person.token)).await;
    assert_eq!(status, 200, "{body}");
    client.send("granted").await;
    let second = client.next().await;
    client.finish().await;
    assert_eq!(second["again_error"], false, "{second}");
    assert!(second["welcome"].as_bool().unwrap(), "{second}");
    assert_eq!(
        env.fixtures.writes().len(),
        1,
        "the approved click submitted the form once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_supports_elicitation_asks_its_user() {
    let env = env("elicit", false, None).await;
    let out = run(
        "elicit",
        &over_http(&env),
        &[env.fixtures.url("/form.html")],
    )
    .await;
    let asked = out["asked"].as_array().unwrap();
    // Opening the page (a navigation to an untrusted origin), then the click.
    assert_eq!(asked.len(), 2, "{out}");
    assert!(
        asked
            .iter()
            .all(|a| a.as_str().unwrap().contains("not the model")),
        "{out}"
    );
    assert!(
        asked[0].as_str().unwrap().contains("allow navigate"),
        "{out}"
    );
    assert!(asked[1].as_str().unwrap().contains("allow click"), "{out}");
    assert_eq!(out["error"], false, "{out}");
    assert!(out["welcome"].as_bool().unwrap(), "{out}");
    assert_eq!(env.fixtures.writes().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_stay_isolated_and_disconnect_cleans_up() {
    let env = env("isolation", true, None).await;
    let baseline = page_count(&env.browser).await;
    let out = run(
        "isolation",
        &over_http(&env),
        &[env.fixtures.url("/set"), env.fixtures.url("/show")],
    )
    .await;
    let (a, b) = (&out["a"], &out["b"]);
    assert!(
        a["snapshot"].as_str().unwrap().contains("cookie: who=a"),
        "{a}"
    );
    assert!(
        b["snapshot"].as_str().unwrap().contains("cookie: none"),
        "B must not see A's cookie: {b}"
    );
    assert_eq!(a["tabs"], serde_json::json!(["s1", "s2"]));
    assert_eq!(
        b["tabs"],
        serde_json::json!(["s1"]),
        "B must not see A's tabs"
    );
    assert_eq!(
        a["act_error"], false,
        "no lease conflict across sessions: {a}"
    );
    assert_eq!(
        b["act_error"], false,
        "no lease conflict across sessions: {b}"
    );
    assert_eq!(
        until_pages(&env.browser, baseline).await,
        baseline,
        "both sessions' tabs closed when their clients left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_origin_and_missing_token_are_refused() {
    let env = env("guard", false, Some("s3cret")).await;
    let baseline = page_count(&env.browser).await;
    let addr = env.server.local_addr;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let request = |host: &str, extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let local = format!("127.0.0.1:{}", addr.port());
    let (status, _) = raw_http(
        addr,
        &request("evil.example", "Authorization: Bearer s3cret\r\n"),
    )
    .await;
    assert_eq!(status, 403, "DNS rebinding: a foreign Host is refused");
    // Our name on another port (a page served there) is not us.
    let other_port = format!(
        "127.0.0.1:{}",
        if addr.port() == 65535 {
            1
        } else {
            addr.port() + 1
        }
    );
    let (status, _) = raw_http(
        addr,
        &request(&other_port, "Authorization: Bearer s3cret\r\n"),
    )
    .await;
    assert_eq!(status, 403, "a Host with another port is refused");
    // Issue 35: two Host or Origin headers, and an absolute-form target, were accepted.
    let (status, _) = raw_http(
        addr,
        &request(
            &local,
            "Host: evil.example
Authorization: Bearer s3cret
",
        ),
    )
    .await;
    assert_eq!(status, 400, "a second Host header is refused");
    let (status, _) = raw_http(
        addr,
        &request(
            &local,
            &format!(
                "Origin: http://{local}
Origin: https://evil.example
Authorization: Bearer s3cret
"
            ),
        ),
    )
    .await;
    assert_eq!(status, 400, "a second Origin header is refused");
    let (status, _) = raw_http(
        addr,
        &request(
            &local,
            "Authorization: Bearer s3cret
",
        )
        .replacen("POST /mcp", &format!("POST http://{local}/mcp"), 1),
    )
    .await;
    assert_eq!(status, 400, "an absolute-form target is refused");
    let (status, _) = raw_http(
        addr,
        &request(
            &local,
            "Authorization: Bearer s3cret\r\nOrigin: https://evil.example\r\n",
        ),
    )
    .await;
    assert_eq!(status, 403, "a foreign Origin is refused");
    let (status, _) = raw_http(addr, &request(&local, "")).await;
    assert_eq!(status, 401, "the bearer token is required when configured");
    let (status, body) = raw_http(addr, &request(&local, "Authorization: Bearer s3cret\r\n")).await;
    assert_eq!(status, 200, "{body}");
    let big = "x".repeat(2 << 20);
    let (status, _) = raw_http(
        addr,
        &format!("POST /mcp HTTP/1.1\r\nHost: {local}\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big}", big.len()),
    )
    .await;
    assert_eq!(status, 413, "bodies over the limit are refused");
    // A declared length over the limit is refused before any of the body is sent.
    let (status, body) = raw_http(
        addr,
        &format!("POST /mcp HTTP/1.1\r\nHost: {local}\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 999999999\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("-32600"), "{body}");
    // Malformed JSON-RPC gets 400 with the spec's code, never a 415 or no answer.
    for (message, code) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"#.to_owned(),
            "-32700",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}"#.to_owned(),
            "-32700",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}"#.to_owned(),
            "-32700",
        ),
        (format!("{}1{}", "[".repeat(200), "]".repeat(200)), "-32700"),
        ("[1, 2]".to_owned(), "-32600"),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":3}}"#.to_owned(),
            "-32602",
        ),
        // Issue 35: these got 415 and an answer without their id.
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"ping","params":[1]}"#.to_owned(),
            "-32602",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":[]}}"#.to_owned(),
            "-32602",
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_owned(),
            "-32600",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":"x"}"#.to_owned(),
            "-32602",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}"#.to_owned(),
            "-32602",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"observe","_meta":5}}"#.to_owned(),
            "-32602",
        ),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#.to_owned(),
            "-32600",
        ),
    ] {
        let (status, body) = raw_http(
            addr,
            &format!("POST /mcp HTTP/1.1\r\nHost: {local}\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}", message.len()),
        )
        .await;
        assert_eq!(status, 400, "{message}: {body}");
        assert!(body.contains(code), "{message}: {body}");
        let sent_id = serde_json::from_str::<Value>(&message)
            .ok()
            .and_then(|m| m.get("id").cloned())
            .filter(|id| id.is_number())
            .unwrap_or(Value::Null);
        let answer_id = body
            .find('{')
            .and_then(|at| serde_json::from_str::<Value>(&body[at..]).ok())
            .map(|a| a["id"].clone());
        assert_eq!(
            answer_id,
            Some(sent_id),
            "the answer carries the id: {body}"
        );
    }
    // Issue 35: a session a client ends with DELETE is answered 204 (202 read as a failure).
    let (status, answer, _) =
        crate::raw_http_whole(addr, &request(&local, "Authorization: Bearer s3cret\r\n")).await;
    assert_eq!(status, 200, "{answer}");
    let session = answer
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("a session id: {answer}"));
    let (status, answer) = raw_http(
        addr,
        &format!("DELETE /mcp HTTP/1.1\r\nHost: {local}\r\nAuthorization: Bearer s3cret\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 204, "{answer}");
    // The client with the token works end to end.
    let mut transport = over_http(&env);
    transport.extend(["--token".to_owned(), "s3cret".to_owned()]);
    let out = run("tools", &transport, &[]).await;
    assert_eq!(
        out["tools"].as_array().map(Vec::len),
        // gui_exec is listed too: make test installs its sandbox.
        Some(mcp::tools::with_planner(false, true).len())
    );
    assert_eq!(
        page_count(&env.browser).await,
        baseline,
        "listing tools opens no tab"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_beyond_loopback_needs_a_token() {
    let runtime_less = server::HttpOptions {
        bind: "0.0.0.0:0".parse().unwrap(),
        ..Default::default()
    };
    let env = env("bind", false, None).await;
    let err = server::serve(env.runtime.clone(), runtime_less)
        .await
        .err()
        .expect("refused without a token");
    assert!(
        matches!(err, server::ServeError::TokenRequired { .. }),
        "{err}"
    );
}

/// `002_…` over MCP: a person's tab (opened through the person channel) is claimed, used and
/// given back, never closed; a second session cannot take it; `tab_mark` keeps an agent tab
/// through `cleanup`, which closes the unmarked one and hands the marked one to the person (not
/// to other sessions); bad arguments are refused with the closed codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_tools_claim_mark_release_and_clean_up() {
    let env = env("lifecycle", true, None).await;
    let addr = env.server.local_addr;
    let open = |token: &str| {
        let body = format!(r#"{{"url": "{}"}}"#, env.fixtures.url("/counter.html"));
        format!(
            "POST /api/user-tabs HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            addr.port(),
            body.len()
        )
    };
    assert_eq!(
        raw_http(addr, &open("not-the-person")).await.0,
        401,
        "only a person opens a person's tab"
    );
    let (status, body) = raw_http(addr, &open(&env.server.person.token)).await;
    assert_eq!(status, 200, "{body}");
    let user_tab = serde_json::from_str::<Value>(&body).unwrap()["tab"]
        .as_str()
        .unwrap()
        .to_owned();
    let baseline = page_count(&env.browser).await;

    let out = run(
        "lifecycle",
        &over_http(&env),
        &[
            env.fixtures.url("/table.html"),
            env.fixtures.url("/form.html"),
        ],
    )
    .await;
    assert_eq!(out["user_tabs_before"], json!([user_tab.clone()]), "{out}");
    assert!(
        out["listed_urls"][0]
            .as_str()
            .unwrap()
            .ends_with("/counter.html"),
        "{out}"
    );
    assert_eq!(out["claimed"]["surface"], "s1", "{out}");
    assert_eq!(
        out["rival_claim"]["error"], "lease_conflict",
        "first claim wins: {out}"
    );
    assert_eq!(
        out["rival_sees"],
        json!([]),
        "a claimed tab is no longer offered: {out}"
    );
    assert_eq!(out["clicked"], true, "{out}");
    assert_eq!(out["marked"]["mark"], "deliverable", "{out}");
    assert_eq!(out["bad_mark"]["error"], "invalid_action", "{out}");
    assert_eq!(
        out["release_own_tab"]["error"], "invalid_action",
        "an agent tab is closed, not released: {out}"
    );
    assert_eq!(out["unknown_argument"]["error"], "invalid_action", "{out}");
    let tabs = out["status"]["tabs"].as_array().unwrap();
    let of = |surface: &str| {
        tabs.iter()
            .find(|t| t["surface"] == surface)
            .unwrap_or_else(|| panic!("{surface} in {out}"))
    };
    assert_eq!(of("s1")["ownership"], "agent_claimed");
    assert_eq!(of("s1")["tab"], user_tab.as_str());
    assert_eq!(of("s2")["ownership"], "agent_created");
    assert_eq!(of("s2")["mark"], "deliverable");
    assert_eq!(of("s3")["mark"], "none");
    // Issue 35: MCP's status left out what the runtime's has (`live`, `reconciled`), and a fresh
    // session said its tools were off while every tool worked.
    assert!(
        tabs.iter().all(|t| t["live"] == true),
        "every open tab is live: {out}"
    );
    assert!(
        out["status"]
            .as_object()
            .unwrap()
            .contains_key("reconciled"),
        "{out}"
    );
    assert_eq!(out["fresh_status"]["tools_active"], true, "{out}");
    // A closed tab is counted, not listed: a long session's status does not grow with it.
    let after = &out["status_after_cleanup"];
    assert_eq!(out["status"]["closed_tabs"], 0, "{out}");
    assert!(after["closed_tabs"].as_u64().unwrap() >= 1, "{out}");
    assert!(
        after["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["state"] != "released"),
        "{out}"
    );
    let cleanup = &out["cleanup"];
    assert_eq!(cleanup["ok"], true, "{out}");
    assert_eq!(
        cleanup["closed"].as_array().unwrap().len(),
        1,
        "only the unmarked agent tab closes: {out}"
    );
    assert_eq!(
        cleanup["released"].as_array().unwrap().len(),
        2,
        "the claim and the deliverable go to the person: {out}"
    );
    assert_eq!(out["tabs_after"], json!([]), "{out}");
    assert_eq!(
        out["user_tabs_after"],
        json!([user_tab.clone()]),
        "the person's tab is claimable again; the deliverable handed to the person is not offered to other sessions: {out}"
    );
    assert_eq!(
        out["released"]["released"], "s4",
        "a new key for the new claim: {out}"
    );
    assert_eq!(
        out["old_key"]["error"], "unknown_surface",
        "the old key names nothing: {out}"
    );
    assert!(
        out["user_tabs_end"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == user_tab.as_str()),
        "{out}"
    );
    // The person's tab and the deliverable are open; the unmarked agent tab is gone.
    assert_eq!(
        until_pages(&env.browser, baseline + 1).await,
        baseline + 1,
        "{out}"
    );
}

/// `computer_use` with a configured planner (a program speaking JSON lines): the run signs up on
/// the form, and only the runtime's checks on the page make it succeed; a run without checks
/// cannot succeed; a planner that answers nonsense ends the run as `invalid_plan`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_use_runs_the_configured_planner_and_the_runtime_decides() {
    let env = env_with("computer-use", true, None, Some(test_planner())).await;
    let out = run(
        "computer_use",
        &over_http(&env),
        &[env.fixtures.url("/form.html")],
    )
    .await;
    assert_eq!(out["listed"], true, "{out}");
    assert_eq!(out["run"]["status"], "succeeded", "{out}");
    assert_eq!(out["run"]["reason_code"], "verified", "{out}");
    assert_eq!(out["run"]["steps_taken"], 2, "type, click: {out}");
    assert!(
        out["run_text"][0]
            .as_str()
            .unwrap()
            .starts_with("<untrusted nonce="),
        "the planner's summary is wrapped: {out}"
    );
    assert_eq!(
        env.fixtures.writes().len(),
        1,
        "the form was submitted once"
    );
    assert_eq!(out["unverifiable"]["status"], "failed", "{out}");
    assert_eq!(
        out["unverifiable"]["reason_code"], "verification_failed",
        "a planner's word is not enough: {out}"
    );
    assert_eq!(out["garbage"]["status"], "failed", "{out}");
    assert_eq!(out["garbage"]["reason_code"], "invalid_plan", "{out}");
    assert_eq!(out["bad"]["error"], "invalid_action", "{out}");
    assert_eq!(env.fixtures.writes().len(), 1, "nothing more was submitted");
}

/// Without a planner the tool is neither listed nor callable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_use_needs_a_planner() {
    let env = env("no-planner", true, None).await;
    let out = run("tools", &over_http(&env), &[]).await;
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"computer_use"), "{names:?}");
}

/// A client that cancels its `computer_use` request (`notifications/cancelled`) stops the run:
/// the run ends `cancelled` and the form the planner was about to submit never is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_computer_use_cancels_the_run() {
    let env = env_with("cancel-run", true, None, Some(test_planner())).await;
    let mut events = env.runtime.subscribe_events();
    let mut client = Client::start(
        "cancel_run",
        &over_http(&env),
        &[env.fixtures.url("/form.html")],
    );
    let sent = client.next().await;
    assert_eq!(sent["cancel_sent"], true, "{sent}");
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            if let Ok(event) = events.recv().await
                && let runtime::EventKind::RunEnded { status, reason, .. } = event.kind
            {
                return (status, reason);
            }
        }
    })
    .await
    .expect("the run ends soon after the cancel, not at its 60 s budget");
    assert_eq!(ended.0, protocol::RunStatus::Cancelled, "{ended:?}");
    // Without the cancel the slow planner would have typed and submitted within ~6 s.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(env.fixtures.writes().is_empty(), "nothing was submitted");
    client.send("done").await;
    client.finish().await;
}

/// A POST to the person channel with the person's token.
async fn person_post(env: &Env, path: &str, token: &str, body: &str) -> (u16, Value) {
    let addr = env.server.local_addr;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let (status, body) = raw_http(addr, &request).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Turns over MCP (`000_…` §06, `002_…` turn end, finalize, context reset): a client hook ends
/// the turn through the person channel (what `glovebox turn-end` calls): the unmarked agent tab
/// closes, the marked one is kept for that turn only, a `surfaces` call mid-turn starts no turn;
/// a cleanup that fails (a frozen browser) is `isError` with the structured report; a context
/// reset sends `tools/list_changed`, lists only `browser_activate`, refuses a call from the old
/// tool list, and `browser_activate` brings the tools back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_end_from_a_hook_context_reset_and_failed_cleanup_over_mcp() {
    let env = env("turns", true, None).await;
    let person = env.server.person.token.clone();
    let baseline = page_count(&env.browser).await;
    let mut client = Client::start(
        "turns",
        &over_http(&env),
        &[
            env.fixtures.url("/table.html"),
            env.fixtures.url("/form.html"),
        ],
    );
    assert_eq!(client.next().await["step"], "first turn");
    // The session knows its client: the name it gave and the process at the other end of its
    // loopback connection (what `glovebox turn-end` matches against its own ancestry).
    let (status, _, sessions) = person_get(&env, "/api/sessions", &person).await;
    assert_eq!(status, 200);
    let sessions: Value = serde_json::from_slice(&sessions).unwrap();
    assert_eq!(
        (
            sessions["sessions"][0]["client"].as_str(),
            sessions["sessions"][0]["client_pid"].as_u64()
        ),
        (Some("mcp"), Some(u64::from(client.pid()))),
        "{sessions}"
    );
    assert_eq!(
        person_post(&env, "/api/turn-end", "not-the-person", "{}")
            .await
            .0,
        401,
        "only a person's tool ends turns"
    );
    assert_eq!(
        person_post(&env, "/api/turn-end", &person, r#"{"bogus": 1}"#)
            .await
            .0,
        400
    );
    assert_eq!(
        person_post(
            &env,
            "/api/turn-end",
            &person,
            r#"{"session": "session_nope"}"#
        )
        .await
        .0,
        404
    );
    let (status, ended) = person_post(&env, "/api/turn-end", &person, "").await;
    assert_eq!(status, 200, "{ended}");
    let first = &ended["ended"][0];
    assert_eq!(ended["ended"].as_array().unwrap().len(), 1, "{ended}");
    assert_eq!(
        first["turn"], "turn_1",
        "the surfaces call did not start a turn: {ended}"
    );
    assert_eq!(
        first["report"]["closed"].as_array().unwrap().len(),
        1,
        "the unmarked agent tab closed: {ended}"
    );
    assert_eq!(
        first["report"]["kept"].as_array().unwrap().len(),
        1,
        "the deliverable was kept: {ended}"
    );
    client.send("turn ended").await;
    assert_eq!(client.next().await["step"], "second turn");
    let (_, ended) = person_post(&env, "/api/turn-end", &person, "{}").await;
    assert_eq!(ended["ended"][0]["turn"], "turn_2", "{ended}");
    assert_eq!(
        ended["ended"][0]["report"]["closed"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "a mark lasts one turn: {ended}"
    );
    client.send("turn ended").await;
    assert_eq!(client.next().await["step"], "freeze");
    let pid = env
        .runtime
        .browser_pid()
        .expect("a launched browser")
        .to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success()
    );
    client.send("frozen").await;
    assert_eq!(client.next().await["step"], "thaw");
    assert!(
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap()
            .success()
    );
    client.send("thawed").await;
    let out = client.next().await;
    client.finish().await;

    // The twelve tools and gui_exec (its sandbox works here).
    assert_eq!(out["tools_before"], 13, "{out}");
    assert_eq!(
        out["after_first"],
        json!([out["opened"][0].clone()]),
        "{out}"
    );
    assert_eq!(out["after_second"], json!([]), "{out}");
    let failed = &out["failed_cleanup"];
    assert_eq!(
        failed["is_error"], true,
        "a failed cleanup is a tool error: {out}"
    );
    assert_eq!(failed["ok"], false, "{out}");
    assert_eq!(failed["failed"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(failed["error"], "backend_unavailable", "{out}");
    assert_eq!(
        out["reset"]["is_error"], false,
        "the reset retried the failed close and succeeded: {out}"
    );
    assert_eq!(out["reset"]["tools_active"], false, "{out}");
    assert_eq!(out["notified"], json!(["tools/list_changed"]), "{out}");
    assert_eq!(
        out["tools_after_reset"],
        json!(["browser_activate"]),
        "{out}"
    );
    assert_eq!(out["stale_call"]["is_error"], true, "{out}");
    assert_eq!(
        out["stale_call"]["error"], "capability_denied",
        "a call from the old tool list is refused: {out}"
    );
    assert_eq!(out["activated"]["tools_active"], true, "{out}");
    assert_eq!(out["tools_after_activate"], 13, "{out}");
    assert!(out["works_again"].as_str().is_some(), "{out}");
    assert_eq!(
        until_pages(&env.browser, baseline).await,
        baseline,
        "the session's tabs are gone with it: {out}"
    );
}

/// A person's access switch over the person channel (`000_…` cases 5 and 12): `observe` answers
/// but refuses writes, `off` lists the tab without content; only the person's token sets it,
/// and no tool can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_switches_a_tabs_access_and_no_tool_can() {
    let env = env("access", true, None).await;
    let person = env.server.person.token.clone();
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(
            &session,
            &env.fixtures.url("/counter.html"),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    let (status, sessions) = {
        let addr = env.server.local_addr;
        let request = format!(
            "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {person}\r\nConnection: close\r\n\r\n",
            addr.port()
        );
        let (status, body) = raw_http(addr, &request).await;
        (status, serde_json::from_str::<Value>(&body).unwrap())
    };
    assert_eq!(status, 200);
    assert!(
        sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session"] == session.as_str() && s["tabs"] == 1),
        "{sessions}"
    );
    let body = |access: &str| {
        json!({"session": session.as_str(), "surface": "s1", "access": access}).to_string()
    };
    assert_eq!(
        person_post(&env, "/api/access", "not-the-person", &body("off"))
            .await
            .0,
        401
    );
    assert_eq!(
        person_post(
            &env,
            "/api/access",
            &person,
            &json!({"session": session.as_str(), "surface": "s9", "access": "off"}).to_string()
        )
        .await
        .0,
        404
    );
    assert_eq!(
        person_post(
            &env,
            "/api/access",
            &person,
            &json!({"session": session.as_str(), "surface": "s1", "access": "all"}).to_string()
        )
        .await
        .0,
        400
    );

    let (status, set) = person_post(&env, "/api/access", &person, &body("observe")).await;
    assert_eq!(status, 200, "{set}");
    let observed = env
        .runtime
        .observe(&session, None, &Default::default())
        .await
        .unwrap();
    let button = observed
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Add one")
        .unwrap()
        .element()
        .clone();
    let click = protocol::validate_extended_action(
        &json!({"type": "click", "expected_frame_id": observed.frame_id().as_str(), "target": {"kind": "element", "ref": button.as_str()}, "intent": "count"}),
    )
    .unwrap();
    let refused = env
        .runtime
        .act(
            &session,
            None,
            &click,
            &Default::default(),
            std::time::Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        protocol::ErrorCode::CapabilityDenied,
        "{refused}"
    );

    assert_eq!(
        person_post(&env, "/api/access", &person, &body("off"))
            .await
            .0,
        200
    );
    let context = serde_json::to_value(
        env.runtime
            .surface_context(&session, "turn_1", 1)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(context["surfaces"][0].get("preview").is_none(), "{context}");
    assert_eq!(context["surfaces"][0]["capabilities"], json!([]));
    let s1 = protocol::SurfaceName::new("s1").unwrap();
    assert_eq!(
        env.runtime
            .observe(&session, Some(&s1), &Default::default())
            .await
            .unwrap_err()
            .code(),
        protocol::ErrorCode::CapabilityDenied
    );
    assert_eq!(
        person_post(&env, "/api/access", &person, &body("full"))
            .await
            .0,
        200
    );
    assert!(
        env.runtime
            .observe(&session, None, &Default::default())
            .await
            .is_ok()
    );
}

/// `computer_use` plans with the calling client's own model through `sampling/createMessage`
/// (`004_…`: the nested tool uses the chat loop's model) when no planner is configured: the
/// Python SDK's sampling callback plays the model. Each request carries the instructions and
/// the page inside the untrusted markers; the runtime's checks, not the model, decide the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_use_plans_with_the_clients_model_through_sampling() {
    let env = env("sampling", true, None).await;
    let out = run(
        "sampling",
        &over_http(&env),
        &[
            env.fixtures.url("/form.html"),
            env.fixtures.url("/canvas-target.html"),
        ],
    )
    .await;
    assert_eq!(
        out["listed"], true,
        "a client that samples gets computer_use without a configured planner: {out}"
    );
    assert_eq!(out["run"]["status"], "succeeded", "{out}");
    assert_eq!(out["run"]["verified_by"], json!(["assertion"]), "{out}");
    assert!(out["run"]["steps_taken"].as_u64().unwrap() >= 2, "{out}");
    assert_eq!(
        out["liar"]["status"], "failed",
        "the model said done; the page says otherwise: {out}"
    );
    let seen = out["seen"].as_array().unwrap();
    assert!(seen.len() >= 4, "{out}");
    assert!(
        seen.iter()
            .all(|s| s["system"] == true && s["wrapped"] == true),
        "instructions and markers in every request: {out}"
    );
    assert!(
        seen[1]["messages"].as_u64().unwrap() > 1,
        "the model sees its earlier steps: {out}"
    );
    assert_eq!(env.fixtures.writes().len(), 1, "one sign-up submitted");
    // Case 22 over MCP: the client's model asks to look, gets the page's screenshot as image
    // content, and clicks the square by a point in its pixels; the runtime verifies.
    assert_eq!(out["canvas"]["status"], "succeeded", "{out}");
    assert_eq!(
        out["images"],
        json!([{"mime": "image/png", "png": true, "size": [1280, 720]}]),
        "one screenshot, after the look: {out}"
    );
}

/// Issue 14's dialog over MCP: a click that opens `confirm()` returns at once with its receipt
/// naming the dialog and the blocked page as the dialog (with a frame); a `dialog` action on that
/// frame answers it, and the page goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_that_opens_a_dialog_returns_its_receipt_and_the_dialog_to_answer() {
    let env = env("dialog", true, None).await;
    let out = run(
        "dialog",
        &over_http(&env),
        &[env.fixtures.url("/widgets.html")],
    )
    .await;
    assert_eq!(out["error"], false, "{out}");
    assert!(out["clicked"]["receipt_state"].is_string(), "{out}");
    assert_eq!(
        out["dialog"],
        json!({"kind": "confirm", "message": "Sure?"}),
        "{out}"
    );
    assert!(
        out["blocked"]
            .as_str()
            .unwrap()
            .contains("\nalertdialog \"Sure?\" [confirm modal]\n"),
        "{out}"
    );
    assert_eq!(out["answered"]["receipt_state"], "confirmed", "{out}");
    assert!(
        out["after"].as_str().unwrap().ends_with("\"declined\""),
        "the page's title after the answer: {out}"
    );
}

/// Issue 35 over MCP: a window a click opened is the session's own tab, and the act's answer
/// names it by its key (it answered only a count); `status` lists it with its opener, it is
/// observed by that key, and `cleanup` closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_a_click_opens_is_named_by_its_key_and_cleaned_up() {
    let env = env("popups", true, None).await;
    let out = run(
        "popups",
        &over_http(&env),
        &[env.fixtures.url("/widgets.html")],
    )
    .await;
    assert_eq!(out["error"], false, "{out}");
    assert_eq!(out["opened"], json!(["s2"]), "{out}");
    assert_eq!(out["opened_tabs"], 1, "{out}");
    assert_eq!(out["popup"]["surface"], "s2", "{out}");
    assert_eq!(out["popup"]["opened_by"], "s1", "{out}");
    assert_eq!(out["seen_error"], false, "{out}");
    assert_eq!(out["cleanup_error"], false, "{out}");
    assert_eq!(out["after"], json!([]), "nothing is left: {out}");
}

/// A GET to the person channel: status, headers (lowercased names) and body bytes.
async fn person_get(env: &Env, path: &str, token: &str) -> (u16, String, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = env.server.local_addr;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        addr.port()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&response[..split]).to_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head, response[split + 4..].to_vec())
}

/// Downloads and uploads end to end (`004_…` 执行权限与隔离, `000_…` §08): each is R3 and waits
/// for a person; the downloaded file becomes an artifact the model knows only by id and a person
/// saves through the person channel (as an attachment, never rendered); an upload reads only
/// from the configured root, by relative name, and names outside it are refused with nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_becomes_an_artifact_and_uploads_come_only_from_the_upload_root() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mcp-upload-root-{}", std::process::id()));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("notes.txt"), "notes for the form\n").unwrap();
    std::fs::write(
        root.parent().unwrap().join("outside.txt"),
        "must never be sent\n",
    )
    .unwrap();
    let upload_root = root.clone();
    let env = env_configured("files", true, None, None, move |c| {
        c.uploads_dir = Some(upload_root)
    })
    .await;
    let person = env.server.person.token.clone();
    let mut client = Client::start(
        "files",
        &over_http(&env),
        &[env.fixtures.url("/extended-forms.html")],
    );

    let first = client.next().await;
    let pending = &first["download_pending"];
    assert_eq!(
        (pending["error"].as_str(), pending["tier"].as_str()),
        (Some("needs_approval"), Some("R3")),
        "{first}"
    );
    assert!(
        env.fixtures.requests_to("/report.csv").is_empty(),
        "nothing was fetched before a person decided"
    );
    let (status, _) = person_post(
        &env,
        &format!(
            "/api/approvals/{}",
            pending["approval_id"].as_str().unwrap()
        ),
        &person,
        r#"{"decision":"approve_once"}"#,
    )
    .await;
    assert_eq!(status, 200);
    client.send("approved").await;

    let second = client.next().await;
    let downloaded = &second["downloaded"];
    assert_eq!(downloaded["error"], false, "{downloaded}");
    let artifact = downloaded["header"]["artifacts"][0]
        .as_str()
        .unwrap_or_else(|| panic!("an artifact id: {downloaded}"))
        .to_owned();
    assert!(artifact.starts_with("artifact_"), "{artifact}");
    let file = &downloaded["receipt"]["downloads"][0];
    let expected = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures/report.csv"),
    )
    .unwrap();
    assert_eq!(
        (
            file["name"].as_str(),
            file["size"].as_u64(),
            file["mime"].as_str()
        ),
        (
            Some("report.csv"),
            Some(expected.len() as u64),
            Some("text/csv")
        )
    );
    let everything = downloaded["texts"].to_string();
    assert!(
        !everything.contains("/downloads/") && !everything.contains(env!("CARGO_TARGET_TMPDIR")),
        "no local path reaches the model: {everything}"
    );

    // The person saves it: the token is needed, the bytes come as an attachment.
    let (status, head, body) =
        person_get(&env, &format!("/api/artifacts/{artifact}"), &person).await;
    assert_eq!(status, 200, "{head}");
    assert_eq!(body, expected);
    assert!(
        head.contains("content-type: application/octet-stream")
            && head.contains("x-content-type-options: nosniff"),
        "{head}"
    );
    assert!(
        head.contains("content-disposition: attachment; filename=\"report.csv\""),
        "{head}"
    );
    assert_eq!(
        person_get(
            &env,
            &format!("/api/artifacts/{artifact}"),
            "not-the-person"
        )
        .await
        .0,
        401
    );
    for bogus in [
        "artifact_nothing_here",
        "artifact_..%2F..%2Fglovebox.sqlite_1",
        "not-an-artifact",
    ] {
        assert_eq!(
            person_get(&env, &format!("/api/artifacts/{bogus}"), &person)
                .await
                .0,
            404,
            "{bogus}"
        );
    }

    let pending = &second["upload_pending"];
    assert_eq!(
        (
            pending["error"].as_str(),
            pending["tier"].as_str(),
            pending["action"].as_str()
        ),
        (Some("needs_approval"), Some("R3"), Some("upload")),
        "{second}"
    );
    assert!(env.fixtures.requests_to("/upload").is_empty());
    let (status, _) = person_post(
        &env,
        &format!(
            "/api/approvals/{}",
            pending["approval_id"].as_str().unwrap()
        ),
        &person,
        r#"{"decision":"approve_once"}"#,
    )
    .await;
    assert_eq!(status, 200);
    client.send("approved").await;
    let last = client.next().await;
    client.finish().await;
    assert_eq!(last["uploaded"]["error"], false, "{last}");
    let uploads = env.fixtures.requests_to("/upload");
    assert_eq!(uploads.len(), 1, "the approved upload posted once");
    assert!(String::from_utf8_lossy(&uploads[0].body).contains("notes for the form"));
    for outside in last["outside"].as_array().unwrap() {
        assert_eq!(outside["error"], true, "{outside}");
        assert_eq!(outside["header"]["error"], "invalid_action", "{outside}");
    }
    assert_eq!(
        env.fixtures.requests_to("/upload").len(),
        1,
        "nothing from outside the root was sent"
    );

    // The operation log on the person channel: the download with its artifact, both approvals,
    // the refused uploads with their code; never a file's content or a path.
    let (status, _, body) = person_get(&env, "/api/log?limit=50", &person).await;
    assert_eq!(status, 200);
    let log: Value = serde_json::from_slice(&body).unwrap();
    let entries = log["entries"].as_array().unwrap();
    let confirmed_click = entries
        .iter()
        .find(|e| e["action"] == "click" && e["state"] == "confirmed")
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        confirmed_click["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&artifact)),
        "{confirmed_click}"
    );
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["kind"] == "approval"
                && e["tier"] == "R3"
                && e["outcome"] == "approve_once")
            .count(),
        2,
        "{log}"
    );
    // (A malformed action — a path outside the root — is refused before it reaches the action
    // path, so it is no operation.)
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["action"] == "upload" && e["state"] == "confirmed")
            .count(),
        1,
        "{log}"
    );
    assert!(
        !String::from_utf8_lossy(&body).contains("notes for the form")
            && !String::from_utf8_lossy(&body).contains(env!("CARGO_TARGET_TMPDIR"))
    );
    assert_eq!(person_get(&env, "/api/log?bogus=1", &person).await.0, 400);
    assert_eq!(person_get(&env, "/api/log", "not-the-person").await.0, 401);
    assert!(
        env.fixtures
            .requests()
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("must never be sent"))
    );
}

/// Issue 35: a client that vanished (crashed, its network gone) kept its session, its tabs and
/// its approvals for about five minutes. A session with nothing of its client in flight — no
/// request, no open stream — for `mcp_session_expiry` ends as a `DELETE` would end it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_client_vanished_ends() {
    let env = env("session-expiry", true, None).await;
    let server = server::serve(
        env.runtime.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            mcp_session_expiry: std::time::Duration::from_secs(1),
            ..server::HttpOptions::default()
        },
    )
    .await
    .unwrap();
    let addr = server.local_addr;
    let baseline = page_count(&env.browser).await;
    let post = |session: Option<&str>, body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            addr.port(),
            session
                .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
                .unwrap_or_default(),
            body.len()
        )
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"vanishes","version":"0"}}}"#;
    let (status, head, _) = crate::raw_http_whole(addr, &post(None, init)).await;
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        })
        .unwrap();
    let (status, _) = crate::raw_http(
        addr,
        &post(
            Some(&session),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ),
    )
    .await;
    assert_eq!(status, 202);
    let open = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"tab_open","arguments":{{"url":"{}"}}}}}}"#,
        env.fixtures.url("/counter.html")
    );
    let (status, body) = crate::raw_http(addr, &post(Some(&session), &open)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(page_count(&env.browser).await, baseline + 1, "{body}");
    // A page of an origin nobody trusted waits for a person: pending, nobody answers it.
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"tab_open","arguments":{{"url":"http://localhost:{}/form.html"}}}}}}"#,
        env.fixtures.port()
    );
    let (status, body) = crate::raw_http(addr, &post(Some(&session), &ask)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("approval_"), "pending: {body}");
    assert_eq!(env.runtime.pending_approvals().len(), 1, "{body}");
    // The client says nothing more and holds no stream: its session ends, and its tab with it.
    assert_eq!(
        until_pages(&env.browser, baseline).await,
        baseline,
        "the vanished client's tab is closed"
    );
    assert!(
        env.runtime.pending_approvals().is_empty(),
        "its pending approval is withdrawn: {:?}",
        env.runtime.pending_approvals()
    );
    let (status, _) = crate::raw_http(
        addr,
        &post(
            Some(&session),
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
        ),
    )
    .await;
    assert_eq!(status, 404, "the session is gone");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gui_exec_runs_a_script_of_steps_in_one_call_and_keeps_its_variables() {
    let env = env("gui-exec", true, None).await;
    let port = env.fixtures.port().to_string();
    let out = run(
        "script",
        &over_http(&env),
        &[env.fixtures.url("/form.html"), port],
    )
    .await;
    assert_eq!(out["listed"], true, "listed where the sandbox works: {out}");
    let form = &out["form"];
    assert_eq!(form["error"], false, "{out}");
    assert_eq!(form["header"]["status"], "ok", "{out}");
    let ops = form["header"]["operations"].as_array().unwrap();
    let methods: Vec<_> = ops.iter().map(|o| o["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["observe", "act", "act", "wait_for", "screenshot"],
        "{out}"
    );
    assert_eq!(form["header"]["last_applied_index"], 2);
    // What the script printed is page data: inside the markers; the screenshot is an image.
    let printed = form["texts"][0].as_str().unwrap();
    assert!(printed.starts_with("<untrusted nonce="), "{printed}");
    assert!(printed.contains("applied"), "{printed}");
    assert_eq!(form["images"], json!(["image/png"]));
    // The next call has the page and the locator.
    let again = out["again"]["texts"][0].as_str().unwrap();
    assert!(again.contains("<Locator") && again.contains("s1"), "{out}");
    // The sandbox has no network: the script's own error, with its words inside the markers.
    let network = &out["network"];
    assert_eq!(network["error"], true);
    assert_eq!(network["header"]["status"], "error");
    assert_eq!(network["header"]["error"]["code"], "invalid_action");
    let said = network["texts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap();
    assert!(
        said.starts_with("<untrusted nonce=") && said.contains("OSError"),
        "{said}"
    );
    // Bad arguments are refused before anything runs.
    assert_eq!(out["empty"]["header"]["error"], "invalid_action", "{out}");
    assert_eq!(out["unknown"]["header"]["error"], "invalid_action", "{out}");
}
