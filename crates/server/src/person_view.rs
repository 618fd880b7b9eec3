//! The console's live view and real entry of one tab: a WebSocket at `GET /api/tabs/{id}/view`,
//! thin over `runtime::PersonView`. JSON text frames:
//!
//! - first `{"type":"hello","token":…}` with the person token within 5 s (a browser's WebSocket
//!   cannot send an `Authorization` header) → `{"type":"bound","resource","generation"}`;
//!   anything else, or a wrong token, closes the socket;
//! - `{"type":"show"}` / `{"type":"hide"}`: the screencast runs only while the view is shown and
//!   on screen;
//! - `{"type":"input","id":…, "input":"pointer"|"key"|"navigate"|"history", …}`: the person's
//!   input, dispatched in order → `{"type":"input_done","id","control"}` or `{"type":"error",…}`;
//! - the server sends `{"type":"frame", resource, generation, seq, captured_at, data (JPEG,
//!   base64), width, height, scroll_x, scroll_y}` and, every second and after each input,
//!   `{"type":"status","live":bool,"control":…}` (`live` is false while the page does not answer:
//!   the console then shows "last frame").

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::person::PersonState;

const HELLO_DEADLINE: Duration = Duration::from_secs(5);
const MAX_MESSAGE: usize = 16 * 1024;
/// Inputs queued before the sender has to wait (in order; each is dispatched in a few ms).
const INPUT_QUEUE: usize = 64;

pub(crate) async fn view(
    State(state): State<PersonState>,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Response {
    ws.max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| serve(state, id, socket))
}

fn error(id: &Value, e: &runtime::RuntimeError) -> Value {
    json!({"type": "error", "id": id, "code": e.code().as_str(), "message": e.to_string()})
}

async fn serve(state: PersonState, resource: String, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    // The person token first.
    let hello = tokio::time::timeout(HELLO_DEADLINE, stream.next()).await;
    let token_ok = match hello {
        Ok(Some(Ok(Message::Text(text)))) => serde_json::from_str::<Value>(&text)
            .ok()
            .filter(|v| v["type"] == "hello")
            .and_then(|v| {
                v["token"].as_str().map(|t| {
                    crate::listener::constant_time_eq(t.as_bytes(), state.token.as_bytes())
                })
            })
            .unwrap_or(false),
        _ => false,
    };
    if !token_ok {
        let _ = sink
            .send(Message::Text(json!({"type": "error", "code": "capability_denied", "message": "say hello with the person token first"}).to_string().into()))
            .await;
        let _ = sink.close().await;
        return;
    }
    let mut view = match state.runtime.person_view(&resource).await {
        Ok(v) => v,
        Err(e) => {
            let _ = sink
                .send(Message::Text(error(&Value::Null, &e).to_string().into()))
                .await;
            let _ = sink.close().await;
            return;
        }
    };
    // One writer; frames wait for it (so a slow viewer slows the screencast, never queues it).
    let (tx, mut rx) = mpsc::channel::<Value>(4);
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
    });
    let entry = view.entry();
    let _ = tx
        .send(json!({"type": "bound", "resource": resource, "generation": view.generation()}))
        .await;
    // Inputs in order, beside the frames.
    let (inputs, mut queued) = mpsc::channel::<(Value, runtime::PersonInput)>(INPUT_QUEUE);
    let input_worker = {
        let (entry, tx) = (entry.clone(), tx.clone());
        tokio::spawn(async move {
            while let Some((id, input)) = queued.recv().await {
                let reply = match entry.input(input).await {
                    Ok(control) => json!({"type": "input_done", "id": id, "control": control}),
                    Err(e) => error(&id, &e),
                };
                if tx.send(reply).await.is_err() {
                    break;
                }
                let _ = tx
                    .send(json!({"type": "status", "live": true, "control": entry.control()}))
                    .await;
            }
        })
    };
    // Liveness once a second, beside everything else.
    let prober = {
        let (entry, tx) = (entry.clone(), tx.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let live = entry.alive().await;
                if tx
                    .send(json!({"type": "status", "live": live, "control": entry.control()}))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        })
    };
    loop {
        tokio::select! {
            message = stream.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue,
                };
                let value: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        let _ = tx.send(json!({"type": "error", "code": "invalid_action", "message": format!("not JSON: {e}")})).await;
                        continue;
                    }
                };
                let id = value.get("id").cloned().unwrap_or(Value::Null);
                let outcome = match value["type"].as_str() {
                    Some("show") => view.start().await,
                    Some("hide") => view.stop().await,
                    Some("input") => {
                        let mut fields = value.clone();
                        if let Some(o) = fields.as_object_mut() {
                            o.remove("type");
                            o.remove("id");
                        }
                        match serde_json::from_value::<runtime::PersonInput>(fields) {
                            Ok(input) => {
                                let _ = inputs.send((id.clone(), input)).await;
                                Ok(())
                            }
                            Err(e) => Err(runtime::RuntimeError::InvalidAction(format!("not an input: {e}"))),
                        }
                    }
                    _ => Err(runtime::RuntimeError::InvalidAction("a view message is hello, show, hide or input".into())),
                };
                if let Err(e) = outcome {
                    let _ = tx.send(error(&id, &e)).await;
                }
            }
            frame = view.next_frame() => match frame {
                Ok(frame) => {
                    let mut message = serde_json::to_value(&frame).unwrap_or_default();
                    message["type"] = json!("frame");
                    if tx.send(message).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.send(error(&Value::Null, &e)).await;
                    break;
                }
            },
        }
    }
    prober.abort();
    input_worker.abort();
    drop(inputs);
    drop(tx);
    drop(view);
    let _ = writer.await;
}
