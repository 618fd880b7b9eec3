//! The host API against real parts: Chromium over CDP, `glovebox serve`'s listener (MCP, person
//! channel and renderer WebSocket), and a real WebSocket client playing a desktop host's
//! renderer. Acceptance cases of `000_…` §12: 1, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 23.

mod operator;

use std::path::PathBuf;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use runtime::{Runtime, RuntimeConfig};
use serde_json::{Value, json};
use test_support::FixtureServer;
use tokio_tungstenite::tungstenite::Message;

/// The MCP tests' planner program (it signs up on the form fixture).
fn test_planner() -> Vec<String> {
    vec![
        "python3".into(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../mcp/tests/planner.py")
            .display()
            .to_string(),
    ]
}

struct Env {
    runtime: Runtime,
    /// The browser beneath the runtime, for the tests' own checks of it.
    browser: std::sync::Arc<browser::Chromium>,
    fixtures: FixtureServer,
    server: server::HttpServer,
}

async fn env(name: &str) -> Env {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("server-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut config = RuntimeConfig::new(&data_dir);
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&fixtures.origin()).unwrap());
    // No idle detach while a test counts CDP commands.
    config.debugger_idle_detach = Duration::from_secs(600);
    let browser = browser::Chromium::local(&data_dir);
    let runtime = Runtime::start(config, browser.clone())
        .await
        .expect("runtime starts");
    let options = server::HttpOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        host: server::HostOptions {
            planner: Some(test_planner()),
            model: None,
        },
        ..server::HttpOptions::default()
    };
    let server = server::serve(runtime.clone(), options)
        .await
        .expect("serve");
    Env {
        runtime,
        browser,
        fixtures,
        server,
    }
}

/// One raw HTTP/1.1 exchange with `addr` (the request says `Connection: close`); returns the
/// status and the body.
async fn exchange(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// A raw HTTP/1.1 POST to the listener; returns status and JSON body.
async fn post(env: &Env, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let addr = env.server.local_addr;
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let (status, body) = exchange(addr, &request).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A renderer: one WebSocket bound to one registered window.
struct Renderer {
    socket: Socket,
    /// The chat session its turns belong to.
    chat_session: String,
    /// The conversation branch the next chat commands name, if any.
    branch: Option<String>,
    next: u64,
    window_revision: u64,
    layout_revision: u64,
    /// Replies that arrived while another was awaited.
    early: Vec<Value>,
}

async fn socket(env: &Env) -> Socket {
    let url = format!("ws://{}{}", env.server.local_addr, server::RENDERER_PATH);
    tokio_tungstenite::connect_async(url)
        .await
        .expect("the renderer socket opens")
        .0
}

async fn recv(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a reply within 30 s")
        {
            Some(Ok(Message::Text(text))) => return Some(serde_json::from_str(&text).unwrap()),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => continue,
        }
    }
}

/// A person's tab at `path`, loaded (what a host hands over is a page the user sees).
async fn user_tab(env: &Env, path: &str) -> String {
    let url = env.fixtures.url(path);
    let tab = env.runtime.register_user_tab(&url).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let targets = env
            .browser
            .connection()
            .unwrap()
            .browser()
            .call(cdp::domains::target::GetTargets {})
            .await
            .unwrap();
        if targets
            .target_infos
            .iter()
            .any(|t| t.url == url && !t.title.is_empty() && t.title != url)
            || tokio::time::Instant::now() > deadline
        {
            return tab;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn nonce(env: &Env, window: &str, instance: &str) -> String {
    let (status, ticket) = post(
        env,
        "/api/host/windows",
        &env.server.person.token,
        &json!({"window_id": window, "renderer_instance_id": instance}),
    )
    .await;
    assert_eq!(status, 200, "{ticket}");
    ticket["nonce"].as_str().unwrap().to_owned()
}

impl Renderer {
    async fn open(env: &Env, window: &str) -> Renderer {
        let nonce = nonce(env, window, &format!("{window}-r1")).await;
        let mut socket = socket(env).await;
        socket
            .send(Message::Text(
                json!({"type": "hello", "nonce": nonce}).to_string().into(),
            ))
            .await
            .unwrap();
        let welcome = recv(&mut socket).await.unwrap();
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        assert_eq!(welcome["window_id"], window);
        Renderer {
            socket,
            chat_session: format!("chat-of-{window}"),
            branch: None,
            next: 0,
            window_revision: 0,
            layout_revision: 0,
            early: Vec::new(),
        }
    }

    /// Sends a message with a fresh id and waits for the reply with that id.
    async fn call(&mut self, mut message: Value) -> Value {
        self.next += 1;
        let id = self.next;
        message["id"] = json!(id);
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await
            .unwrap();
        if let Some(i) = self
            .early
            .iter()
            .position(|m| m["id"] == json!(id) && m["type"] != "run_event")
        {
            return self.early.remove(i);
        }
        loop {
            let reply = recv(&mut self.socket).await.expect("the socket stays open");
            if reply["id"] == json!(id) && reply["type"] != "run_event" {
                return reply;
            }
            self.early.push(reply);
        }
    }

    /// A registry event with the next window (and layout) revision.
    async fn event(&mut self, mut event: Value) -> Value {
        self.window_revision += 1;
        self.layout_revision += 1;
        event["window_revision"] = json!(self.window_revision);
        event["layout_revision"] = json!(self.layout_revision);
        let reply = self.call(json!({"type": "registry", "event": event})).await;
        assert_eq!(reply["type"], "ack", "{reply}");
        reply
    }

    async fn open_chat(&mut self, id: &str, group: &str) {
        self.event(json!({"op": "open", "registry_surface_id": id, "surface_revision": 1, "kind": "chat", "group_id": group, "region": "left"})).await;
    }

    async fn open_tab(&mut self, id: &str, group: &str, tab: &str, region: &str, order: u32) {
        self.event(json!({"op": "open", "registry_surface_id": id, "surface_revision": 1, "kind": "web_tab", "group_id": group, "local_surface_id": tab, "region": region, "order": order}))
            .await;
    }

    async fn focus(&mut self, id: Option<&str>) {
        self.event(json!({"op": "focus_set", "focused_registry_surface_id": id}))
            .await;
    }

    /// A chat command referencing `visible` (registry id, surface revision).
    async fn turn(&mut self, chat: &str, visible: &[(&str, u64)], focused: Option<&str>) -> Value {
        let mut refs = json!({
            "chat_session_id": self.chat_session, "chat_surface_id": chat,
            "window_revision": self.window_revision, "layout_revision": self.layout_revision,
            "focused_registry_surface_id": focused,
            "visible": visible.iter().map(|(id, rev)| json!({"registry_surface_id": id, "surface_revision": rev})).collect::<Vec<_>>(),
        });
        if let Some(branch) = &self.branch {
            refs["branch_id"] = json!(branch);
        }
        self.call(json!({"type": "chat_turn", "surface_refs": refs}))
            .await
    }

    /// A chat command sent without waiting for its reply ([`Renderer::reply`]); returns its id.
    async fn send_turn(&mut self, chat: &str, visible: &[(&str, u64)]) -> u64 {
        self.next += 1;
        let refs = json!({
            "chat_session_id": self.chat_session, "chat_surface_id": chat,
            "window_revision": self.window_revision, "layout_revision": self.layout_revision,
            "focused_registry_surface_id": null,
            "visible": visible.iter().map(|(id, rev)| json!({"registry_surface_id": id, "surface_revision": rev})).collect::<Vec<_>>(),
        });
        let message = json!({"type": "chat_turn", "id": self.next, "surface_refs": refs});
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await
            .unwrap();
        self.next
    }

    /// The reply with this id, whenever it came.
    async fn reply(&mut self, id: u64) -> Value {
        loop {
            if let Some(i) = self
                .early
                .iter()
                .position(|m| m["id"] == json!(id) && m["type"] != "run_event")
            {
                return self.early.remove(i);
            }
            let message = recv(&mut self.socket).await.expect("the socket stays open");
            self.early.push(message);
        }
    }

    async fn tool(&mut self, request: &Value, call: &str, name: &str, arguments: Value) -> Value {
        let envelope = json!({"tool_call_id": call, "source_provider_request_id": request["context"]["provider_request_id"]});
        self.call(json!({"type": "tool_call", "envelope": envelope, "name": name, "arguments": arguments})).await
    }
}

fn surface<'a>(turn: &'a Value, key: &str) -> &'a Value {
    turn["context"]["surfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["surface_key"] == key)
        .unwrap_or_else(|| panic!("{key} in {turn}"))
}

fn alias(turn: &Value, alias: &str) -> Value {
    turn["context"]["alias_map"][alias].clone()
}

fn click(observation: &Value, name: &str) -> Value {
    let element = observation["interactive_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {observation}"));
    json!({"type": "click", "expected_frame_id": observation["frame_id"], "target": {"kind": "element", "ref": element["ref"]}, "intent": "count"})
}

/// Cases 1–3: the model knows what the user sees before its first token. A chat command gets
/// the server-owned Surface Context (key, spatial/focus/ordinal aliases of one tab naming one
/// key, the primary surface, capabilities, a bounded preview read by the runtime) and the
/// `computer_use` tool with the turn's enum; a tool call then observes and acts on that exact
/// tab through its envelope; a tool call id runs once; the turn end gives the tab back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_knows_the_visible_tab_and_its_tool_calls_act_on_exactly_it() {
    let env = env("turn").await;
    let tab = user_tab(&env, "/counter.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    r.focus(Some("web")).await;
    let turn = r.turn("chat", &[("web", 1)], Some("web")).await;
    assert_eq!(turn["type"], "surface_context", "{turn}");
    let key = turn["context"]["primary_surface_key"].clone();
    assert_eq!(alias(&turn, "right"), key, "{turn}");
    assert_eq!(
        alias(&turn, "focused"),
        key,
        "right and focused name one key: {turn}"
    );
    assert_eq!(alias(&turn, "web:1"), key, "{turn}");
    let entry = surface(&turn, key.as_str().unwrap());
    assert_eq!(
        entry["capabilities"],
        json!(["observe", "interact", "navigate"])
    );
    assert_eq!(entry["preview"]["preview_status"], "ready", "{turn}");
    assert!(
        entry["preview"]["visible_text_excerpt"]
            .as_str()
            .unwrap()
            .contains("0 clicks"),
        "the preview is the page's, read by the runtime: {turn}"
    );
    assert_eq!(entry["untrusted_content"], true);
    assert_eq!(turn["tools"][0]["name"], "computer_use");
    let names = turn["tools"][0]["input_schema"]["properties"]["surface"]["enum"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        names.contains(&json!("right")) && names.contains(&key),
        "{names:?}"
    );

    let seen = r
        .tool(&turn, "call-1", "observe", json!({"surface": "right"}))
        .await;
    assert_eq!(seen["type"], "tool_result", "{seen}");
    assert_eq!(seen["surface"], key);
    let acted = r
        .tool(
            &turn,
            "call-2",
            "act",
            json!({"surface": "right", "action": click(&seen["observation"], "Add one")}),
        )
        .await;
    assert!(
        matches!(
            acted["receipt"]["state"].as_str(),
            Some("confirmed" | "dispatched")
        ),
        "{acted}"
    );
    assert!(
        acted["observation"].get("target").is_none(),
        "no backend tab id reaches what a host forwards to its model: {acted}"
    );
    assert!(
        acted["observation"]["aria_snapshot"]
            .as_str()
            .unwrap()
            .contains("1 clicks"),
        "{acted}"
    );
    let again = r.tool(&turn, "call-2", "observe", json!({})).await;
    assert_eq!(
        again["code"], "invalid_action",
        "a tool call id runs once: {again}"
    );
    let bad = r
        .tool(&turn, "call-3", "observe", json!({"surface": "left"}))
        .await;
    assert_eq!(bad["code"], "unknown_surface", "{bad}");
    // `near` reaches the page through the host socket too.
    let near = r
        .tool(
            &turn,
            "call-4",
            "observe",
            json!({"surface": "right", "near": "words on no page"}),
        )
        .await;
    assert!(
        near["observation"]["aria_snapshot"]
            .as_str()
            .unwrap()
            .contains("nothing here matches near"),
        "{near}"
    );
    let garbage = r
        .call(json!({"type": "tool_call", "envelope": {"tool_call_id": "x"}, "name": "observe"}))
        .await;
    assert_eq!(garbage["code"], "invalid_action", "{garbage}");

    let turn_id = turn["context"]["turn_id"].as_str().unwrap().to_owned();
    let ended = r
        .call(json!({"type": "turn_end", "chat_session_id": r.chat_session, "turn_id": turn_id}))
        .await;
    assert_eq!(ended["ended"], true, "{ended}");
    assert_eq!(
        ended["report"]["released"].as_array().unwrap().len(),
        1,
        "the person's tab goes back, open: {ended}"
    );
    let twice = r
        .call(json!({"type": "turn_end", "chat_session_id": r.chat_session, "turn_id": turn_id}))
        .await;
    assert_eq!(twice["ended"], false, "{twice}");
    let late = r.tool(&turn, "call-4", "observe", json!({})).await;
    assert_eq!(
        late["code"], "unknown_surface",
        "an ended turn's snapshot resolves nothing: {late}"
    );
    assert!(
        env.runtime
            .user_tabs()
            .unwrap()
            .iter()
            .any(|t| t.tab == tab),
        "the tab is the person's again"
    );
    // The next turn, on another branch of the conversation, binds it again; the tab is recorded
    // in that branch (the console groups by it).
    r.branch = Some("branch-2".into());
    let next = r.turn("chat", &[("web", 1)], Some("web")).await;
    assert_eq!(next["type"], "surface_context", "{next}");
    let tabs = env.runtime.tabs_for_person().unwrap();
    assert_eq!(
        tabs.iter()
            .find(|t| t["tab"] == tab.as_str())
            .map(|t| t["branch"].clone()),
        Some(json!("branch-2")),
        "{tabs:?}"
    );
    assert_ne!(next["context"]["turn_id"], turn["context"]["turn_id"]);
    // Closing the chat ends its session: the tab is the person's again, the snapshot is gone.
    let closed = r
        .call(json!({"type": "chat_close", "chat_session_id": r.chat_session}))
        .await;
    assert_eq!(closed["type"], "chat_closed", "{closed}");
    assert_eq!(
        closed["report"]["released"].as_array().unwrap().len(),
        1,
        "{closed}"
    );
    assert_eq!(
        r.tool(&next, "call-5", "observe", json!({})).await["code"],
        "unknown_surface"
    );
    assert!(
        env.runtime
            .user_tabs()
            .unwrap()
            .iter()
            .any(|t| t.tab == tab)
    );
    let unknown = r
        .call(json!({"type": "chat_close", "chat_session_id": "nope"}))
        .await;
    assert_eq!(unknown["code"], "unknown_surface", "{unknown}");
}

/// Case 7 and 23: forged registry ids, another connection's ids, stale and repeated revisions,
/// hidden members and other groups are refused before any preview or CDP command; a nonce is
/// used once; a renderer disconnect clears its entries, and the bindings issued through it are
/// invalid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_cross_connection_and_stale_references_are_refused_before_any_cdp_command() {
    let env = env("registry").await;
    let tab = user_tab(&env, "/counter.html").await;
    let other_tab = user_tab(&env, "/table.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    let mut other = Renderer::open(&env, "win-2").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    r.open_tab("aside", "g2", &tab, "center", 1).await;
    other.open_chat("chat2", "g9").await;
    other.open_tab("theirs", "g9", &other_tab, "right", 0).await;
    // The network boundary of the tabs' opening ends its window with one command of its own.
    tokio::time::sleep(browser::GUARD_TAIL + Duration::from_millis(300)).await;

    let sent = env.browser.connection().unwrap().commands_sent();
    for (visible, code) in [
        (vec![("forged", 1)], "unknown_surface"),
        (vec![("theirs", 1)], "unknown_surface"),
        (vec![("web", 7)], "stale_observation"),
        (vec![("aside", 1)], "unknown_surface"),
    ] {
        let refused = r.turn("chat", &visible, None).await;
        assert_eq!(refused["code"], code, "{visible:?}: {refused}");
    }
    r.window_revision -= 1;
    let stale_window = r.turn("chat", &[("web", 1)], None).await;
    assert_eq!(stale_window["code"], "stale_observation", "{stale_window}");
    r.window_revision += 1;
    let wrong_focus = r.turn("chat", &[("web", 1)], Some("web")).await;
    assert_eq!(
        wrong_focus["code"], "stale_observation",
        "the focus is the registry's, not the command's: {wrong_focus}"
    );
    let repeated = r
        .call(json!({"type": "registry", "event": {"op": "focus_set", "window_revision": r.window_revision, "layout_revision": r.layout_revision + 1, "focused_registry_surface_id": "web"}}))
        .await;
    assert_eq!(
        repeated["code"], "stale_observation",
        "a repeated window revision changes nothing: {repeated}"
    );
    let cross = r
        .call(json!({"type": "registry", "event": {"op": "hide", "registry_surface_id": "theirs", "window_revision": r.window_revision + 1, "surface_revision": 2, "layout_revision": r.layout_revision + 1}}))
        .await;
    assert_eq!(
        cross["code"], "unknown_surface",
        "another window's surface cannot be touched: {cross}"
    );
    let fake_tab = r
        .call(json!({"type": "registry", "event": {"op": "open", "registry_surface_id": "x", "window_revision": r.window_revision + 1, "surface_revision": 1, "layout_revision": r.layout_revision + 1, "kind": "web_tab", "group_id": "g1", "local_surface_id": "tab_forged"}}))
        .await;
    assert_eq!(
        fake_tab["code"], "unknown_surface",
        "a surface is a real tab a person offered: {fake_tab}"
    );
    let unknown_field = r.call(json!({"type": "registry", "event": {"op": "focus_set", "window_revision": 99, "layout_revision": 99, "focused_registry_surface_id": null, "title": "x"}})).await;
    assert_eq!(unknown_field["code"], "invalid_action", "{unknown_field}");
    let not_json = r.call(json!({"type": "chat_turn"})).await;
    assert_eq!(not_json["code"], "invalid_action", "{not_json}");
    assert_eq!(
        env.browser.connection().unwrap().commands_sent(),
        sent,
        "no CDP command was sent for a refused reference"
    );

    // A nonce is used once; without one the socket is closed.
    let used = nonce(&env, "win-3", "r1").await;
    let mut first = socket(&env).await;
    first
        .send(Message::Text(
            json!({"type": "hello", "nonce": used}).to_string().into(),
        ))
        .await
        .unwrap();
    assert_eq!(recv(&mut first).await.unwrap()["type"], "welcome");
    let mut second = socket(&env).await;
    second
        .send(Message::Text(
            json!({"type": "hello", "nonce": used}).to_string().into(),
        ))
        .await
        .unwrap();
    assert_eq!(recv(&mut second).await.unwrap()["code"], "unknown_surface");
    assert!(recv(&mut second).await.is_none(), "closed");
    let (status, _) = post(
        &env,
        "/api/host/windows",
        "not-the-person",
        &json!({"window_id": "w", "renderer_instance_id": "r"}),
    )
    .await;
    assert_eq!(status, 401, "only the person's host registers windows");
    let (status, _) = post(
        &env,
        "/api/host/windows",
        &env.server.person.token,
        &json!({"window_id": "win-3", "renderer_instance_id": "r1"}),
    )
    .await;
    assert_eq!(status, 400, "a registration is not reusable");

    // A binding of a closed connection is invalid, and the tab goes back to its person.
    let turn = r.turn("chat", &[("web", 1)], None).await;
    assert_eq!(turn["type"], "surface_context", "{turn}");
    let session: protocol::SessionId = serde_json::from_value(turn["session"].clone()).unwrap();
    assert_eq!(
        env.runtime
            .status(&session)
            .unwrap()
            .tabs
            .iter()
            .filter(|t| t.surface.is_some())
            .count(),
        1
    );
    let (_, windows_before, _) = env.runtime.host_counts();
    r.socket.close(None).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while env.runtime.host_counts().1 == windows_before && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        env.runtime.host_counts().1,
        windows_before - 1,
        "its window and entries are gone"
    );
    while env
        .runtime
        .status(&session)
        .unwrap()
        .tabs
        .iter()
        .any(|t| t.surface.is_some())
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        env.runtime
            .status(&session)
            .unwrap()
            .tabs
            .iter()
            .all(|t| t.surface.is_none()),
        "the claim was given back"
    );
    // The other window never saw any of it.
    let theirs = other.turn("chat2", &[("theirs", 1)], None).await;
    assert_eq!(theirs["type"], "surface_context", "{theirs}");
    assert!(
        surface(
            &theirs,
            theirs["context"]["primary_surface_key"].as_str().unwrap()
        )["preview"]["visible_text_excerpt"]
            .as_str()
            .unwrap()
            .contains("Plans")
    );
}

/// Cases 8, 9, 13: two visible tabs get stable `web:1`/`web:2` by order, each spatial alias only
/// when one tab is in its region; a focus change during a turn changes only the next turn's
/// `focused`; overlapping turns each resolve their own `right`; a tab hidden or moved out of
/// the group is `target_lost` at its next call, and nothing else is chosen in its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliases_follow_the_rules_and_each_snapshot_resolves_only_its_own_names() {
    let env = env("aliases").await;
    let a = user_tab(&env, "/counter.html").await;
    let b = user_tab(&env, "/table.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("tab-b", "g1", &b, "right", 2).await;
    r.open_tab("tab-a", "g1", &a, "right", 1).await;
    r.focus(Some("tab-a")).await;
    let both = r
        .turn("chat", &[("tab-a", 1), ("tab-b", 1)], Some("tab-a"))
        .await;
    assert_eq!(both["type"], "surface_context", "{both}");
    let key_a = alias(&both, "focused");
    assert_eq!(
        alias(&both, "web:1"),
        key_a,
        "web:N follows the tab order: {both}"
    );
    assert_ne!(alias(&both, "web:2"), key_a);
    assert_eq!(
        alias(&both, "right"),
        Value::Null,
        "two tabs on the right: no right alias: {both}"
    );
    assert_eq!(
        both["context"]["primary_surface_key"], key_a,
        "the focused tab is primary"
    );

    // The layout changes: a goes left, focus moves to b. The old snapshot keeps its names.
    r.event(json!({"op": "update", "registry_surface_id": "tab-a", "surface_revision": 2, "region": "left"})).await;
    r.focus(Some("tab-b")).await;
    let moved = r
        .turn("chat", &[("tab-a", 2), ("tab-b", 1)], Some("tab-b"))
        .await;
    let key_b = alias(&moved, "focused");
    assert_eq!(alias(&moved, "right"), key_b, "{moved}");
    assert_eq!(
        alias(&moved, "left"),
        key_a,
        "the same tab keeps its key while the session holds it: {moved}"
    );
    let old = r
        .tool(&both, "old-1", "observe", json!({"surface": "focused"}))
        .await;
    assert_eq!(
        old["surface"], key_a,
        "the older turn's focused is still a: {old}"
    );
    let new = r
        .tool(&moved, "new-1", "observe", json!({"surface": "right"}))
        .await;
    assert_eq!(new["surface"], key_b, "{new}");
    assert!(
        new["observation"]["aria_snapshot"]
            .as_str()
            .unwrap()
            .contains("Enterprise"),
        "{new}"
    );

    // Hidden: the next call on it is target_lost, in both snapshots; b is not chosen instead.
    r.event(json!({"op": "hide", "registry_surface_id": "tab-a", "surface_revision": 3}))
        .await;
    let lost = r
        .tool(&moved, "new-2", "observe", json!({"surface": "left"}))
        .await;
    assert_eq!(lost["code"], "target_lost", "{lost}");
    let lost_old = r
        .tool(
            &both,
            "old-2",
            "act",
            json!({"surface": "web:1", "action": click(&old["observation"], "Add one")}),
        )
        .await;
    assert_eq!(lost_old["code"], "target_lost", "{lost_old}");
    // Moved out of the chat's group: also lost.
    r.event(json!({"op": "move", "registry_surface_id": "tab-b", "surface_revision": 2, "group_id": "g2"})).await;
    let gone = r.tool(&moved, "new-3", "observe", json!({})).await;
    assert_eq!(gone["code"], "target_lost", "{gone}");
}

/// Cases 5 and 12: a surface whose access the user switched off is listed as present but
/// inaccessible, with no preview and no tool; observe-only answers but refuses writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_off_lists_the_surface_without_content_or_tool_and_observe_only_refuses_writes() {
    let env = env("access").await;
    let tab = user_tab(&env, "/counter.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 2, "access": "off"})).await;
    // The chat session's first turn (with nothing shared) creates its browser context.
    assert_eq!(r.turn("chat", &[], None).await["tools"], json!([]));
    tokio::time::sleep(browser::GUARD_TAIL + Duration::from_millis(300)).await;
    let sent = env.browser.connection().unwrap().commands_sent();
    let off = r.turn("chat", &[("web", 2)], None).await;
    assert_eq!(off["type"], "surface_context", "{off}");
    let only = &off["context"]["surfaces"][0];
    assert_eq!(only["capabilities"], json!([]), "{off}");
    assert!(only.get("preview").is_none(), "no page content: {off}");
    assert_eq!(
        off["tools"],
        json!([]),
        "no tool for a turn with nothing to observe: {off}"
    );
    assert_eq!(off["context"]["primary_surface_key"], Value::Null);
    assert_eq!(
        env.browser.connection().unwrap().commands_sent(),
        sent,
        "the tab was not touched"
    );
    let refused = r
        .tool(
            &off,
            "c1",
            "observe",
            json!({"surface": only["surface_key"]}),
        )
        .await;
    assert_eq!(refused["code"], "capability_denied", "{refused}");

    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 3, "access": "observe"})).await;
    let read_only = r.turn("chat", &[("web", 3)], None).await;
    let key = read_only["context"]["primary_surface_key"].clone();
    assert_eq!(
        surface(&read_only, key.as_str().unwrap())["capabilities"],
        json!(["observe"]),
        "{read_only}"
    );
    let seen = r.tool(&read_only, "c2", "observe", json!({})).await;
    assert_eq!(seen["type"], "tool_result", "{seen}");
    let write = r
        .tool(
            &read_only,
            "c3",
            "act",
            json!({"action": click(&seen["observation"], "Add one")}),
        )
        .await;
    assert_eq!(write["code"], "capability_denied", "{write}");
}

/// The injected `computer_use` runs through the host API on the exact tab of its snapshot, with
/// the configured planner, its events sent to the host while it runs; only the runtime decides
/// the result. A tab hidden while a run works on it is `target_lost` at the run's next side
/// effect, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_use_runs_on_the_bound_tab_and_a_hide_stops_it_before_its_next_write() {
    let env = env("computer-use").await;
    let form = user_tab(&env, "/form.html").await;
    let other = user_tab(&env, "/form.html?second").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &form, "right", 0).await;
    r.open_tab("web-2", "g1", &other, "center", 1).await;
    let turn = r.turn("chat", &[("web", 1), ("web-2", 1)], None).await;
    assert_eq!(turn["tools"][0]["name"], "computer_use", "{turn}");
    let run = r.tool(&turn, "run-1", "computer_use", json!({"task": "Sign up as Ada", "surface": "right", "max_steps": 6, "max_seconds": 60})).await;
    assert_eq!(run["type"], "tool_result", "{run}");
    assert_eq!(run["surface"], alias(&turn, "right"));
    assert!(run["result"]["steps_taken"].as_u64().unwrap() >= 2, "{run}");
    assert_ne!(
        run["result"]["status"], "succeeded",
        "a run without checks cannot succeed; the runtime decides: {run}"
    );
    assert!(
        run["result"]["target"].get("tab_id").is_none(),
        "no backend tab id for the model: {run}"
    );
    assert!(
        r.early
            .iter()
            .any(|m| m["type"] == "run_event" && m["id"] == run["id"]),
        "the run's events reached the host: {:?}",
        r.early
    );
    assert_eq!(
        env.fixtures.writes().len(),
        1,
        "the sign-up was submitted once"
    );
    let bad = r
        .tool(
            &turn,
            "run-2",
            "computer_use",
            json!({"task": "x", "steps": 3}),
        )
        .await;
    assert_eq!(bad["code"], "invalid_action", "{bad}");
    let ambiguous = r
        .tool(&turn, "run-3", "computer_use", json!({"task": "x"}))
        .await;
    assert_eq!(
        ambiguous["code"], "ambiguous_surface",
        "two tabs and no focus: no primary: {ambiguous}"
    );

    // A slow run on the other tab, and that tab is hidden while the planner thinks.
    let envelope = json!({"tool_call_id": "run-4", "source_provider_request_id": turn["context"]["provider_request_id"]});
    r.next += 1;
    let run_id = r.next;
    let slow = json!({"type": "tool_call", "id": run_id, "envelope": envelope, "name": "computer_use", "arguments": {"task": "slow sign-up", "surface": "center", "max_steps": 6, "max_seconds": 60}});
    r.socket
        .send(Message::Text(slow.to_string().into()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    r.event(json!({"op": "hide", "registry_surface_id": "web-2", "surface_revision": 2}))
        .await;
    let ended = loop {
        let m = match r
            .early
            .iter()
            .position(|m| m["id"] == json!(run_id) && m["type"] != "run_event")
        {
            Some(i) => r.early.remove(i),
            None => recv(&mut r.socket).await.expect("open"),
        };
        if m["id"] == json!(run_id) && m["type"] != "run_event" {
            break m;
        }
    };
    assert_eq!(ended["result"]["status"], "failed", "{ended}");
    assert_eq!(ended["result"]["reason_code"], "target_lost", "{ended}");
    assert_eq!(env.fixtures.writes().len(), 1, "nothing more was written");
}

/// A referenced tab another session holds (an MCP client claimed it) does not fail the chat
/// turn: it is listed as present but unusable (unavailable preview, no capabilities, no tool),
/// and a tool call naming it is refused without touching it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_held_by_another_session_is_listed_but_not_bound() {
    let env = env("held").await;
    let held = user_tab(&env, "/counter.html").await;
    let free = user_tab(&env, "/table.html").await;
    let other = env.runtime.create_session().await.unwrap();
    env.runtime.claim_tab(&other, &held).await.unwrap();
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("held", "g1", &held, "right", 0).await;
    r.open_tab("free", "g1", &free, "center", 1).await;
    let turn = r.turn("chat", &[("held", 1), ("free", 1)], None).await;
    assert_eq!(
        turn["type"], "surface_context",
        "the turn still gets its context: {turn}"
    );
    let surfaces = turn["context"]["surfaces"].as_array().unwrap();
    let unusable = surfaces
        .iter()
        .find(|s| s["capabilities"] == json!([]))
        .unwrap_or_else(|| panic!("{turn}"));
    assert_eq!(
        unusable["preview"]["preview_status"], "unavailable",
        "{turn}"
    );
    assert!(
        unusable["aliases"].as_array().unwrap().is_empty(),
        "no alias names an unusable surface: {turn}"
    );
    assert_eq!(
        alias(&turn, "center"),
        turn["context"]["primary_surface_key"],
        "the one usable tab is primary: {turn}"
    );
    let refused = r
        .tool(
            &turn,
            "c1",
            "observe",
            json!({"surface": unusable["surface_key"]}),
        )
        .await;
    assert_eq!(refused["code"], "capability_denied", "{refused}");
    assert!(
        env.runtime
            .status(&other)
            .unwrap()
            .tabs
            .iter()
            .any(|t| t.resource == held && t.surface.is_some()),
        "the other session keeps its tab"
    );
}

/// Case 11: a preview captured while the window's layout changes is discarded and retried once;
/// when the layout changes again during the retry, the surface's preview is `unavailable` (never
/// a mix). Registry events are not held up by a chat command's previews: each layout change
/// below is acknowledged while the page's main thread is busy and the capture waits behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_captured_while_the_layout_changes_is_discarded_retried_once_then_unavailable() {
    let env = env("layout").await;
    let tab = user_tab(&env, "/counter.html").await;
    let url = env.fixtures.url("/counter.html");
    let targets = env
        .browser
        .connection()
        .unwrap()
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap();
    let target = targets
        .target_infos
        .iter()
        .find(|t| t.url == url)
        .and_then(|t| t.target_id.clone())
        .unwrap();
    let page = env
        .browser
        .connection()
        .unwrap()
        .browser()
        .attach(&target)
        .await
        .unwrap();
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    let first = r.turn("chat", &[("web", 1)], None).await;
    let key = alias(&first, "right");
    assert_eq!(
        surface(&first, key.as_str().unwrap())["preview"]["preview_status"],
        "ready",
        "{first}"
    );

    // One change during the first capture: discarded, retried on the new layout, ready.
    let busy = hold(&env, &page, 700).await;
    let turn = r.send_turn("chat", &[("web", 1)]).await;
    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 2, "region": "left"})).await;
    assert!(
        r.early.iter().all(|m| m["id"] != json!(turn)),
        "the layout change was acknowledged while the preview was being captured"
    );
    let once = r.reply(turn).await;
    assert_eq!(once["type"], "surface_context", "{once}");
    assert_eq!(
        alias(&once, "right"),
        key,
        "the context is the layout the command was validated against: {once}"
    );
    assert_eq!(
        surface(&once, key.as_str().unwrap())["preview"]["preview_status"],
        "ready",
        "retried once: {once}"
    );
    busy.await.unwrap();

    // A change during the first capture and another during the retry: unavailable. The page
    // runs the first capture right after the first hold, then the second hold, behind which the
    // retry waits.
    let first_hold = hold(&env, &page, 700).await;
    let turn = r.send_turn("chat", &[("web", 2)]).await;
    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 3, "region": "right"})).await;
    let second_hold = hold(&env, &page, 1000).await;
    first_hold.await.unwrap();
    // The first capture has ended (discarded) and the retry is waiting behind the second hold.
    tokio::time::sleep(Duration::from_millis(250)).await;
    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 4, "region": "left"})).await;
    let twice = r.reply(turn).await;
    assert_eq!(twice["type"], "surface_context", "{twice}");
    assert_eq!(
        surface(&twice, key.as_str().unwrap())["preview"]["preview_status"],
        "unavailable",
        "never a mix of two layouts: {twice}"
    );
    second_hold.await.unwrap();
    // Once the layout holds still, the next command's preview is ready again.
    let after = r.turn("chat", &[("web", 4)], None).await;
    assert_eq!(
        surface(&after, key.as_str().unwrap())["preview"]["preview_status"],
        "ready",
        "{after}"
    );
}

/// Holds the page's main thread for `ms` from the test's own CDP session (a capture waits
/// behind it); returns once the command is on the wire, with the task that ends with the hold.
async fn hold(env: &Env, page: &cdp::Session, ms: u64) -> tokio::task::JoinHandle<()> {
    let connection = env.browser.connection().unwrap();
    let sent = connection.commands_sent();
    let page = page.clone();
    let task = tokio::spawn(async move {
        page.send_raw(
            "Runtime.evaluate",
            json!({"expression": test_support::busy_main_thread(ms)}),
            Duration::from_secs(30),
        )
        .await
        .expect("the hold runs");
    });
    while connection.commands_sent() == sent {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    task
}

/// Regression (issue 28): a host's turn end and its next chat turn, sent back to back, raced —
/// the turn end ran beside the next command, so the new turn could be bound in the old turn
/// (its turn id the ended one, its snapshot dropped with it) and its tab released under it.
/// The turn end takes effect in message order: the next command is always the next turn, and
/// what it binds stays bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_and_the_next_chat_turn_sent_back_to_back_do_not_race() {
    let env = env("turn-race").await;
    let tab = user_tab(&env, "/counter.html").await;
    let mut r = Renderer::open(&env, "win-race").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    r.focus(Some("web")).await;
    let mut turn = r.turn("chat", &[("web", 1)], Some("web")).await;
    assert_eq!(turn["type"], "surface_context", "{turn}");
    for round in 0..5 {
        let turn_id = turn["context"]["turn_id"].as_str().unwrap().to_owned();
        // Both sent before either reply is read.
        r.next += 1;
        let end_id = r.next;
        let end = json!({"type": "turn_end", "id": end_id, "chat_session_id": r.chat_session, "turn_id": turn_id});
        r.socket
            .send(Message::Text(end.to_string().into()))
            .await
            .unwrap();
        r.next += 1;
        let next_id = r.next;
        let refs = json!({
            "chat_session_id": r.chat_session, "chat_surface_id": "chat",
            "window_revision": r.window_revision, "layout_revision": r.layout_revision,
            "focused_registry_surface_id": "web",
            "visible": [{"registry_surface_id": "web", "surface_revision": 1}],
        });
        r.socket
            .send(Message::Text(
                json!({"type": "chat_turn", "id": next_id, "surface_refs": refs})
                    .to_string()
                    .into(),
            ))
            .await
            .unwrap();
        let ended = r.reply(end_id).await;
        assert_eq!(ended["ended"], true, "round {round}: {ended}");
        let next = r.reply(next_id).await;
        assert_eq!(next["type"], "surface_context", "round {round}: {next}");
        assert_ne!(
            next["context"]["turn_id"],
            json!(turn_id),
            "round {round}: the next command is the next turn: {next}"
        );
        // What the new turn bound is still bound after the old turn's cleanup.
        let seen = r
            .tool(&next, &format!("call-{round}"), "observe", json!({}))
            .await;
        assert_eq!(
            seen["type"], "tool_result",
            "round {round}: the new turn's tab stays bound: {seen}"
        );
        turn = next;
    }
}

/// Issue 29: the listener tells the runtime where Glovebox listens, so no agent may open its
/// console or person channel (refused, not asked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_may_open_glovebox_s_own_server() {
    let env = env("own-server").await;
    let session = env.runtime.create_session().await.unwrap();
    let url = format!(
        "http://localhost:{}/#token=guess",
        env.server.local_addr.port()
    );
    let refused = env
        .runtime
        .open_tab(&session, &url, Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        protocol::ErrorCode::OriginDenied,
        "{refused}"
    );
    assert!(env.runtime.pending_approvals().is_empty());
}

/// Issue 29: the host's access switch turned to `observe` while a `computer_use` run is under
/// way stops the run before its next write, as `POST /api/access` does: it held only from the
/// next chat turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_access_switch_turned_down_mid_run_stops_the_next_write() {
    let env = env("access-mid-run").await;
    let form = user_tab(&env, "/form.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &form, "right", 0).await;
    let turn = r.turn("chat", &[("web", 1)], None).await;
    let envelope = json!({"tool_call_id": "run-1", "source_provider_request_id": turn["context"]["provider_request_id"]});
    r.next += 1;
    let run_id = r.next;
    let slow = json!({"type": "tool_call", "id": run_id, "envelope": envelope, "name": "computer_use", "arguments": {"task": "slow sign-up", "max_steps": 6, "max_seconds": 60}});
    r.socket
        .send(Message::Text(slow.to_string().into()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    r.event(json!({"op": "update", "registry_surface_id": "web", "surface_revision": 2, "access": "observe"})).await;
    let ended = r.reply(run_id).await;
    assert_eq!(
        ended["result"]["reason_code"], "capability_denied",
        "{ended}"
    );
    assert!(env.fixtures.writes().is_empty(), "nothing was written");
}

/// Issue 29: a tab an agent typed into is held, and the person's channel shows it and lets the
/// person allow one origin for it: `GET /api/tabs` lists `network_hold`, `POST
/// /api/tabs/{id}/allow-origin` widens it with the person's token only, and refuses unknown
/// fields, a non-web origin and a tab that holds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_allows_an_origin_for_a_tab_that_holds_what_the_agent_typed() {
    let env = env("allow-origin").await;
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let tab = |env: &Env| env.runtime.tabs_for_person().unwrap()[0].clone();
    let id = tab(&env)["tab"].as_str().unwrap().to_owned();
    let path = format!("/api/tabs/{id}/allow-origin");
    let token = env.server.person.token.clone();
    let origin = "https://cdn.example";
    // Nothing typed yet: nothing to allow.
    let (status, refused) = post(&env, &path, &token, &json!({"origin": origin})).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_action")),
        "{refused}"
    );
    assert!(tab(&env)["network_hold"].is_null());
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
    let typed = protocol::validate_extended_action(&json!({"type": "type",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": name},
        "text": "Ada", "intent": "t"}))
    .unwrap();
    env.runtime
        .act(&session, None, &typed, &Default::default(), Duration::ZERO)
        .await
        .unwrap();
    let held = tab(&env)["network_hold"].clone();
    assert_eq!(held["origins"], json!([env.fixtures.origin()]), "{held}");
    for (body, who) in [
        (json!({"origin": origin, "also": 1}), token.as_str()),
        (json!({"origin": "javascript:alert(1)"}), token.as_str()),
    ] {
        let (status, refused) = post(&env, &path, who, &body).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_action")),
            "{body}: {refused}"
        );
    }
    let (status, _) = post(&env, &path, "not-the-token", &json!({"origin": origin})).await;
    assert_eq!(status, 401);
    let (status, allowed) = post(&env, &path, &token, &json!({"origin": origin})).await;
    assert_eq!(status, 200, "{allowed}");
    assert!(
        allowed["network_hold"]["allowed"]
            .as_array()
            .unwrap()
            .contains(&json!(origin)),
        "{allowed}"
    );
    assert_eq!(tab(&env)["network_hold"], allowed["network_hold"]);
}

/// Issue 29 through the host API: a `tool_call`'s `secrets` (the host's, beside the model's
/// arguments) are typed where the host named them, and the planner — which gives up if it is
/// ever shown the value — plans with the placeholder alone; secrets on any other tool are
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_secret_is_typed_by_a_run_that_never_sees_it() {
    let value = "Ada-Lovelace-1815";
    let env = env("host-secret").await;
    let form = user_tab(&env, "/form.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &form, "right", 0).await;
    let turn = r.turn("chat", &[("web", 1)], None).await;
    let envelope = json!({"tool_call_id": "run-1", "source_provider_request_id": turn["context"]["provider_request_id"]});
    let secrets = json!({"name": {"value": value, "origins": [env.fixtures.origin()]}});
    let run = r
        .call(json!({"type": "tool_call", "envelope": envelope, "name": "computer_use",
            "arguments": {"task": "Sign up with the secret name", "max_steps": 6, "max_seconds": 60},
            "secrets": secrets}))
        .await;
    assert_eq!(run["type"], "tool_result", "{run}");
    assert!(
        !run.to_string().contains(value),
        "the result holds no value: {run}"
    );
    assert_ne!(
        run["result"]["reason_code"], "action_failed",
        "the planner never saw the value: {run}"
    );
    let writes = env.fixtures.writes();
    assert_eq!(writes.len(), 1, "{run}");
    assert!(
        String::from_utf8_lossy(&writes[0].body).contains(value),
        "the form sent the value: {:?}",
        String::from_utf8_lossy(&writes[0].body)
    );
    let envelope = json!({"tool_call_id": "obs-1", "source_provider_request_id": turn["context"]["provider_request_id"]});
    let observe = r
        .call(json!({"type": "tool_call", "envelope": envelope, "name": "observe", "arguments": {}, "secrets": secrets}))
        .await;
    assert_eq!(observe["code"], "invalid_action", "{observe}");
}

/// Issue 35: person routes took what they should refuse — `POST /api/turn-end` with `[]` was
/// read as "every session" and closed an agent's tab; `/api/user-tabs` took a 900 kB URL where
/// every agent path caps at 2,048 characters; the preview route stored any JSON. A body is a JSON
/// object of the route's own fields, and a URL is bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_routes_refuse_what_is_not_theirs_to_take() {
    let env = env("person-bodies").await;
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let token = env.server.person.token.clone();
    for body in [json!([]), json!("x"), json!(null)] {
        let (status, said) = post(&env, "/api/turn-end", &token, &body).await;
        assert_eq!(
            (status, said["error"].as_str()),
            (400, Some("invalid_action")),
            "{body}: {said}"
        );
    }
    assert_eq!(
        env.runtime.status(&session).unwrap().tabs.len(),
        1,
        "the agent's tab is still open"
    );
    let long = format!("{}?q={}", env.fixtures.url("/form.html"), "a".repeat(3_000));
    let (status, said) = post(&env, "/api/user-tabs", &token, &json!({"url": long})).await;
    assert_eq!(
        (status, said["error"].as_str()),
        (400, Some("invalid_action")),
        "{said}"
    );
    assert!(said["message"].as_str().unwrap().contains("2048"), "{said}");
    assert!(env.runtime.user_tabs().unwrap().is_empty());
    // Only a window a page opened is linked for runs; the agent's own tab is refused, an unknown
    // one is unknown, and nobody but the person links anything.
    let agents = env.runtime.tabs_for_person().unwrap()[0]["tab"]
        .as_str()
        .unwrap()
        .to_owned();
    let link = format!("/api/tabs/{agents}/link");
    let (status, said) = post(&env, &link, &token, &json!({})).await;
    assert_eq!(
        (status, said["error"].as_str()),
        (400, Some("invalid_action")),
        "{said}"
    );
    let (status, said) = post(&env, "/api/tabs/tab_nope/link", &token, &json!({})).await;
    assert_eq!(
        said["error"].as_str(),
        Some("unknown_surface"),
        "{status} {said}"
    );
    let (status, _) = post(&env, &link, "not-the-token", &json!({})).await;
    assert_eq!(status, 401);
    // Preview preferences are the pin and the hide, nothing else: any other JSON is refused and
    // what was stored stays.
    let preview = format!("/api/tabs/{agents}/preview");
    let (status, said) = post(&env, &preview, &token, &json!({"pinned": true})).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["preview"], json!({"pinned": true, "hidden": false}));
    for body in [
        json!({"pinned": true, "script": "alert(1)"}),
        json!({"pinned": "yes"}),
        json!([]),
        json!({"hidden": {"a": [1, 2, 3]}}),
    ] {
        let (status, said) = post(&env, &preview, &token, &body).await;
        assert_eq!(
            (status, said["error"].as_str()),
            (400, Some("invalid_action")),
            "{body}: {said}"
        );
    }
    let listed = env.runtime.tabs_for_person().unwrap();
    let entry = listed.iter().find(|t| t["tab"] == agents.as_str()).unwrap();
    assert_eq!(entry["preview"], json!({"pinned": true, "hidden": false}));
    let (status, said) = post(&env, "/api/tabs/tab_nope/preview", &token, &json!({})).await;
    assert_eq!(
        said["error"].as_str(),
        Some("unknown_surface"),
        "{status} {said}"
    );
}

/// Issue 35: idle sockets and half-sent requests were never timed out. A request's head has
/// `header_timeout` to arrive (the socket is closed after it) and its body `body_timeout` (408).
/// On an adapter with no browser: the listener is what is under test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_and_half_sent_requests_are_timed_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("server-tests")
        .join("timeouts");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let runtime = Runtime::start(
        RuntimeConfig::new(&data_dir),
        test_support::fake::FakeAdapter::new(),
    )
    .await
    .unwrap();
    let server = server::serve(
        runtime.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            person_token: Some("person-token".into()),
            header_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            ..server::HttpOptions::default()
        },
    )
    .await
    .unwrap();
    let addr = server.local_addr;
    // What the server says on a socket that sends `sent` and then nothing (within 10 s).
    let answer = |sent: String| async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(sent.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut got))
            .await
            .expect("the server ends the connection in its time")
            .ok();
        String::from_utf8_lossy(&got).into_owned()
    };
    let idle = answer(String::new()).await;
    assert!(
        !idle.contains(" 200 "),
        "an idle socket is closed: {idle:?}"
    );
    let half_head = answer(format!(
        "POST /api/turn-end HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
        addr.port()
    ))
    .await;
    assert!(!half_head.contains(" 200 "), "{half_head:?}");
    let half_body = answer(format!(
        "POST /api/turn-end HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer person-token\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"session\"",
        addr.port()
    ))
    .await;
    assert!(
        half_body.starts_with("HTTP/1.1 408"),
        "a half-sent body is answered 408: {half_body:?}"
    );
    // A whole request is served as before.
    let whole = answer(format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer person-token\r\nConnection: close\r\n\r\n",
        addr.port()
    ))
    .await;
    assert!(whole.starts_with("HTTP/1.1 200"), "{whole:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gui_exec_tool_call_runs_its_script_on_exactly_the_bound_tab() {
    let env = env("gui-exec").await;
    let tab = user_tab(&env, "/counter.html").await;
    let mut r = Renderer::open(&env, "win-1").await;
    r.open_chat("chat", "g1").await;
    r.open_tab("web", "g1", &tab, "right", 0).await;
    r.focus(Some("web")).await;
    let turn = r.turn("chat", &[("web", 1)], Some("web")).await;
    let key = turn["context"]["primary_surface_key"].clone();
    let code = "page = ui.page()\nfor _ in range(3):\n    await page.get_by_role('button', name='Add one').click()\nobs = await page.observe()\nprint(page.name, '3 clicks' in obs.text)";
    let done = r
        .tool(
            &turn,
            "call-1",
            "gui_exec",
            json!({"surface": "right", "code": code}),
        )
        .await;
    assert_eq!(done["type"], "tool_result", "{done}");
    assert_eq!(done["surface"], key);
    assert_eq!(done["result"]["status"], "ok", "{done}");
    assert_eq!(
        done["result"]["blocks"][0]["text"],
        json!(format!("{} True\n", key.as_str().unwrap())),
        "{done}"
    );
    assert_eq!(done["result"]["last_applied_index"], 3, "{done}");
    // The same envelope never runs twice; unknown arguments are refused.
    let again = r
        .tool(&turn, "call-1", "gui_exec", json!({"code": code}))
        .await;
    assert_eq!(again["code"], "invalid_action", "{again}");
    let unknown = r
        .tool(
            &turn,
            "call-2",
            "gui_exec",
            json!({"code": "print(1)", "as_root": true}),
        )
        .await;
    assert_eq!(unknown["code"], "invalid_action", "{unknown}");
    // A script that fails says so with its code, and its last completed primitive.
    let failed = r
        .tool(
            &turn,
            "call-3",
            "gui_exec",
            json!({"code": "await ui.page().get_by_role('button', name='No such button').click()"}),
        )
        .await;
    assert_eq!(failed["result"]["status"], "error", "{failed}");
    assert!(failed["error_code"].is_string(), "{failed}");
}
