//! The host API's renderer channel: a WebSocket at `/api/host/renderer` that a desktop host's
//! renderer opens after its main process registered the window over the person channel
//! (`POST /api/host/windows`, person token) and got a one-time nonce. Thin: every message is
//! deserialised into the runtime's own types and handed to the runtime, which owns the
//! registry, the turns and their snapshots (`runtime/src/host.rs`).
//!
//! Messages are JSON text frames, each `{"type": …, "id": …}` (the `id` is echoed back):
//! - first `hello {nonce}` (within 5 s) → `welcome {window_id}`; anything else closes;
//! - `registry {event}` → `ack {window_revision, layout_revision, surface_revision?}`;
//! - `chat_turn {surface_refs}` → `surface_context {context, tools, session}`;
//! - `tool_call {envelope, name: observe|act|computer_use|gui_exec, arguments, secrets?}` →
//!   `tool_result {surface, …}` (`gui_exec {code}`: `result` is the script's whole result, its
//!   output blocks in order, images in base64); a `computer_use` run (with the configured planner) also sends `run_event {event}` for
//!   each of its events while it runs (approvals requested, steps, its end);
//! - `turn_end {chat_session_id, turn_id}` → `turn_ended {ended, report?}`;
//! - `chat_close {chat_session_id}` → `chat_closed {report}` (the session's disposal cleanup).
//!
//! A refused message gets `error {code, message}` with a code of the closed set, and changes
//! nothing; the connection stays. Registry events and chat turns are validated in the order they
//! arrive (a chat turn sees every event sent before it and none sent after); a chat turn's
//! previews, tool calls and turn ends run beside the next messages, so a layout change while a
//! preview is captured discards it (retried once, then `unavailable`). A turn end takes effect
//! in message order too (the next chat command is the next turn); its cleanup runs beside the
//! next messages and leaves alone what the next turn binds. Closing the socket deletes the connection's registry entries and invalidates its
//! bindings (`Runtime::disconnect_renderer`).

use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use protocol::{ErrorCode, SurfaceName};
use runtime::{ChatTurnRequest, ConnectionId, Envelope, RegistryEvent, Runtime, RuntimeError};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The path of the renderer WebSocket.
pub const RENDERER_PATH: &str = "/api/host/renderer";
/// How long a new socket may take to say hello.
const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// The largest message a renderer may send.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// The longest script a `gui_exec` tool call takes, in bytes.
const GUI_EXEC_CODE_MAX: usize = 64 << 10;
/// Tool calls and turn ends one connection may have running at once.
const MAX_IN_FLIGHT: usize = 32;

/// What the host API needs besides the runtime.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// The planner program behind `computer_use` (see [`runtime::CommandPlanner`]); without one
    /// a turn's `tools` is empty and a `computer_use` call is refused.
    pub planner: Option<Vec<String>>,
    /// The configured model behind `computer_use` (before a planner program).
    pub model: Option<agent::ModelChoice>,
}

#[derive(Clone)]
struct HostState {
    runtime: Runtime,
    options: std::sync::Arc<HostOptions>,
}

/// The renderer WebSocket route (mount it behind the server's Host and Origin guards).
pub(crate) fn router(runtime: Runtime, options: HostOptions) -> axum::Router {
    axum::Router::new()
        .route(RENDERER_PATH, get(upgrade))
        .with_state(HostState {
            runtime,
            options: std::sync::Arc::new(options),
        })
}

async fn upgrade(State(state): State<HostState>, ws: WebSocketUpgrade) -> Response {
    // Small buffers: registry events and chat commands are small, and a window's connection
    // lives as long as the window (they grow when a large message needs it).
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .read_buffer_size(8 << 10)
        .write_buffer_size(8 << 10)
        .on_upgrade(move |socket| serve(state, socket))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    #[serde(rename = "type")]
    _type: HelloType,
    nonce: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum HelloType {
    Hello,
}

/// One message after the hello.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Incoming {
    Registry {
        #[serde(default)]
        id: Value,
        event: RegistryEvent,
    },
    ChatTurn {
        #[serde(default)]
        id: Value,
        surface_refs: ChatTurnRequest,
    },
    ToolCall {
        #[serde(default)]
        id: Value,
        envelope: Envelope,
        name: ToolName,
        #[serde(default)]
        arguments: Value,
        /// The host's own secrets for a `computer_use` run, beside the model's arguments (the
        /// model never had them): `{"NAME": {"value": …, "origins": […]}}`.
        #[serde(default)]
        secrets: protocol::Secrets,
    },
    TurnEnd {
        #[serde(default)]
        id: Value,
        chat_session_id: String,
        turn_id: String,
    },
    ChatClose {
        #[serde(default)]
        id: Value,
        chat_session_id: String,
    },
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum ToolName {
    Observe,
    Act,
    ComputerUse,
    GuiExec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuiExecArguments {
    #[serde(default)]
    surface: Option<SurfaceName>,
    code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObserveArguments {
    #[serde(default)]
    surface: Option<SurfaceName>,
    #[serde(default)]
    screenshot: bool,
    /// The region around this text or ref first, on a page too big for one observation.
    #[serde(default)]
    near: Option<protocol::NearText>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActArguments {
    #[serde(default)]
    surface: Option<SurfaceName>,
    action: Value,
    /// The observation's snapshot whole, without `snapshot_diff` (the changes against the
    /// observation the action named).
    #[serde(default)]
    full_snapshot: bool,
}

fn error(id: &Value, code: ErrorCode, message: &str) -> Value {
    json!({"type": "error", "id": id, "code": code.as_str(), "message": message})
}

fn runtime_error(id: &Value, e: &RuntimeError) -> Value {
    error(id, e.code(), &e.to_string())
}

/// The `id` of a message that did not parse, if it has one, to answer it.
fn id_of(text: &str) -> Value {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(Value::Null)
}

async fn serve(state: HostState, socket: WebSocket) {
    let runtime = state.runtime.clone();
    let (mut sink, mut stream) = socket.split();
    // The hello, within its deadline, with a nonce the control channel issued.
    let hello = tokio::time::timeout(HELLO_DEADLINE, stream.next()).await;
    let nonce = match hello {
        Ok(Some(Ok(Message::Text(text)))) => {
            serde_json::from_str::<Hello>(&text).ok().map(|h| h.nonce)
        }
        _ => None,
    };
    let Some(nonce) = nonce else {
        let refusal = error(
            &Value::Null,
            ErrorCode::InvalidAction,
            "the first message must be {\"type\":\"hello\",\"nonce\":…} within 5 s",
        );
        let _ = sink.send(Message::Text(refusal.to_string().into())).await;
        let _ = sink.close().await;
        return;
    };
    let (connection, window_id) = match runtime.connect_renderer(&nonce).await {
        Ok(bound) => bound,
        Err(e) => {
            let _ = sink
                .send(Message::Text(
                    runtime_error(&Value::Null, &e).to_string().into(),
                ))
                .await;
            let _ = sink.close().await;
            return;
        }
    };
    tracing::info!(window = %window_id, "a renderer connected");
    let (tx, mut rx) = mpsc::channel::<Value>(64);
    let writer = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            if sink
                .send(Message::Text(message.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let _ = tx
        .send(json!({"type": "welcome", "window_id": window_id}))
        .await;
    let in_flight = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(message) = stream.next().await {
        let text = match message {
            Ok(Message::Text(text)) => text,
            Ok(Message::Binary(_)) => {
                let _ = tx
                    .send(error(
                        &Value::Null,
                        ErrorCode::InvalidAction,
                        "messages are JSON text frames",
                    ))
                    .await;
                continue;
            }
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => continue, // ping/pong
        };
        let incoming = match serde_json::from_str::<Incoming>(&text) {
            Ok(m) => m,
            Err(e) => {
                let _ = tx
                    .send(error(
                        &id_of(&text),
                        ErrorCode::InvalidAction,
                        &format!("not a host API message: {e}"),
                    ))
                    .await;
                continue;
            }
        };
        match incoming {
            Incoming::Registry { id, event } => {
                let reply = match runtime.registry_event(connection, event).await {
                    Ok(ack) => json!({"type": "ack", "id": id, "ack": ack}),
                    Err(e) => runtime_error(&id, &e),
                };
                let _ = tx.send(reply).await;
            }
            Incoming::ChatTurn { id, surface_refs } => {
                // Validated in message order (a registry event sent after the command does not
                // change what it was validated against); the previews are captured beside the
                // next registry events, so a layout change during one discards it.
                let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                    let _ = tx
                        .send(error(
                            &id,
                            ErrorCode::LeaseConflict,
                            &format!(
                                "{MAX_IN_FLIGHT} calls of this connection are running; wait for one"
                            ),
                        ))
                        .await;
                    continue;
                };
                let prepared = match runtime.prepare_chat_turn(connection, surface_refs).await {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = tx.send(runtime_error(&id, &e)).await;
                        continue;
                    }
                };
                let (state, tx) = (state.clone(), tx.clone());
                tasks.spawn(async move {
                    let reply = match state.runtime.complete_chat_turn(prepared).await {
                        Ok(turn) => {
                            // The tool is offered only where it can run.
                            let tools = if state.options.planner.is_some() || state.options.model.is_some() { turn.tools } else { Vec::new() };
                            json!({"type": "surface_context", "id": id, "context": turn.context, "tools": tools, "session": turn.session})
                        }
                        Err(e) => runtime_error(&id, &e),
                    };
                    let _ = tx.send(reply).await;
                    drop(permit);
                });
            }
            Incoming::ToolCall {
                id,
                envelope,
                name,
                arguments,
                secrets,
            } => {
                let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                    let _ = tx
                        .send(error(
                            &id,
                            ErrorCode::LeaseConflict,
                            &format!(
                                "{MAX_IN_FLIGHT} calls of this connection are running; wait for one"
                            ),
                        ))
                        .await;
                    continue;
                };
                let (state, tx) = (state.clone(), tx.clone());
                tasks.spawn(async move {
                    let call = ToolCall {
                        id: &id,
                        envelope: &envelope,
                        name,
                        arguments,
                        secrets,
                    };
                    let reply = tool_call(&state, connection, call, &tx).await;
                    let _ = tx.send(reply).await;
                    drop(permit);
                });
            }
            Incoming::TurnEnd {
                id,
                chat_session_id,
                turn_id,
            } => {
                // The turn ends in message order (the next chat command is the next turn); its
                // cleanup runs beside the next messages.
                let ending = match runtime
                    .begin_host_turn_end(connection, &chat_session_id, &turn_id)
                    .await
                {
                    Ok(Some(ending)) => ending,
                    Ok(None) => {
                        let _ = tx
                            .send(json!({"type": "turn_ended", "id": id, "ended": false}))
                            .await;
                        continue;
                    }
                    Err(e) => {
                        let _ = tx.send(runtime_error(&id, &e)).await;
                        continue;
                    }
                };
                let (runtime, tx) = (runtime.clone(), tx.clone());
                tasks.spawn(async move {
                    let reply = match runtime.finish_host_turn_end(ending).await {
                        Ok(ended) => json!({"type": "turn_ended", "id": id, "ended": true, "turn": ended.turn, "report": ended.report}),
                        Err(e) => runtime_error(&id, &e),
                    };
                    let _ = tx.send(reply).await;
                });
            }
            Incoming::ChatClose {
                id,
                chat_session_id,
            } => {
                let (runtime, tx) = (runtime.clone(), tx.clone());
                tasks.spawn(async move {
                    let reply = match runtime.host_chat_close(connection, &chat_session_id).await {
                        Ok(report) => json!({"type": "chat_closed", "id": id, "report": report}),
                        Err(e) => runtime_error(&id, &e),
                    };
                    let _ = tx.send(reply).await;
                });
            }
        }
        while tasks.try_join_next().is_some() {}
    }
    tracing::info!(window = %window_id, "a renderer disconnected");
    runtime.disconnect_renderer(connection).await;
    // Calls in flight end with the connection: their futures are dropped (a run stops).
    tasks.abort_all();
    drop(tx);
    let _ = writer.await;
}

/// One `tool_call` message, as read.
struct ToolCall<'a> {
    id: &'a Value,
    envelope: &'a Envelope,
    name: ToolName,
    arguments: Value,
    secrets: protocol::Secrets,
}

async fn tool_call(
    state: &HostState,
    connection: ConnectionId,
    call: ToolCall<'_>,
    tx: &mpsc::Sender<Value>,
) -> Value {
    let ToolCall {
        id,
        envelope,
        name,
        arguments,
        secrets,
    } = call;
    if !secrets.is_empty() && !matches!(name, ToolName::ComputerUse) {
        return error(
            id,
            ErrorCode::InvalidAction,
            "secrets go with a computer_use call (a run types them); observe and act type what they are given",
        );
    }
    let runtime = &state.runtime;
    let arguments = if arguments.is_null() {
        json!({})
    } else {
        arguments
    };
    match name {
        ToolName::ComputerUse => {
            let input: protocol::ComputerUseInput = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => {
                    return error(
                        id,
                        ErrorCode::InvalidAction,
                        &format!("computer_use arguments: {e}"),
                    );
                }
            };
            // The configured model, else the planner program; one that cannot start fails the
            // call with its own error (never another planner in its place).
            let planner: Box<dyn runtime::Planner> = if let Some(choice) = &state.options.model {
                match agent::ModelPlanner::for_choice(choice, Default::default()) {
                    Ok(p) => Box::new(p),
                    Err(e) => return error(id, ErrorCode::BackendUnavailable, &e.to_string()),
                }
            } else if let Some(command) = &state.options.planner {
                match runtime::CommandPlanner::start(command) {
                    Ok(p) => Box::new(p),
                    Err(e) => return error(id, ErrorCode::BackendUnavailable, &e.to_string()),
                }
            } else {
                return error(
                    id,
                    ErrorCode::CapabilityDenied,
                    "no model or planner is configured for computer_use (the `[model]` or `planner` setting)",
                );
            };
            let mut events = runtime.subscribe_events();
            let (key, handle, join) =
                match runtime.host_run(connection, envelope, &input, secrets, planner) {
                    Ok(started) => started,
                    Err(e) => return runtime_error(id, &e),
                };
            // The run stops if this call goes away (the connection closed).
            let guard = handle.stop_on_drop();
            let run_id = handle.run_id.to_string();
            let mut join = join;
            // The run's own events go to the host while it runs (approvals to show the person).
            let result = loop {
                tokio::select! {
                    done = &mut join => break done,
                    event = events.recv() => match event {
                        Ok(event) if event.run_id == run_id => {
                            let _ = tx.send(json!({"type": "run_event", "id": id, "event": event})).await;
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break (&mut join).await,
                    },
                }
            };
            guard.disarm();
            match result {
                Ok(result) => {
                    let mut result = serde_json::to_value(&result).unwrap_or(Value::Null);
                    if let Some(target) = result.get_mut("target").and_then(Value::as_object_mut) {
                        target.remove("tab_id");
                    }
                    json!({"type": "tool_result", "id": id, "surface": key, "run_id": run_id, "result": result})
                }
                Err(e) => error(
                    id,
                    ErrorCode::Internal,
                    &format!("the run ended abnormally: {e}"),
                ),
            }
        }
        ToolName::Observe => {
            let args: ObserveArguments = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => {
                    return error(
                        id,
                        ErrorCode::InvalidAction,
                        &format!("observe arguments: {e}"),
                    );
                }
            };
            let options = runtime::ObserveOptions {
                screenshot: args.screenshot.then_some(protocol::ImageMime::Png),
                near: args.near,
                ..Default::default()
            };
            match runtime
                .host_observe(connection, envelope, args.surface.as_ref(), &options)
                .await
            {
                Ok((key, observation)) => {
                    json!({"type": "tool_result", "id": id, "surface": key, "observation": for_model(&observation)})
                }
                Err(e) => runtime_error(id, &e),
            }
        }
        ToolName::GuiExec => {
            let args: GuiExecArguments = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => {
                    return error(
                        id,
                        ErrorCode::InvalidAction,
                        &format!("gui_exec arguments: {e}"),
                    );
                }
            };
            if args.code.trim().is_empty() || args.code.len() > GUI_EXEC_CODE_MAX {
                return error(
                    id,
                    ErrorCode::InvalidAction,
                    &format!("code is 1 to {GUI_EXEC_CODE_MAX} bytes of Python"),
                );
            }
            match runtime
                .host_gui_exec(connection, envelope, args.surface.as_ref(), &args.code)
                .await
            {
                Ok((key, result)) => {
                    json!({"type": "tool_result", "id": id, "surface": key, "error_code": result.error_code(), "result": result})
                }
                Err(e) => runtime_error(id, &e),
            }
        }
        ToolName::Act => {
            let args: ActArguments = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => {
                    return error(id, ErrorCode::InvalidAction, &format!("act arguments: {e}"));
                }
            };
            let action = match protocol::validate_extended_action(&args.action) {
                Ok(a) => a,
                Err(e) => return error(id, ErrorCode::InvalidAction, &e.to_string()),
            };
            let options = runtime::ActOptions {
                full_snapshot: args.full_snapshot,
                ..Default::default()
            };
            match runtime
                .host_act(
                    connection,
                    envelope,
                    args.surface.as_ref(),
                    &action,
                    &options,
                )
                .await
            {
                Ok((key, outcome)) => json!({
                    "type": "tool_result", "id": id, "surface": key, "receipt": outcome.receipt,
                    "observation": outcome.observation.as_ref().map(for_model), "opened": outcome.opened.len(),
                    "downloads": runtime::downloaded(&outcome),
                }),
                Err(e) => runtime_error(id, &e),
            }
        }
    }
}

/// An observation as a host forwards it to its model: without the backend's tab id (a model
/// names surfaces by key or alias only).
fn for_model(observation: &protocol::Observation) -> Value {
    let mut value = serde_json::to_value(observation).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("target");
    }
    value
}
