//! Malformed or unexpected CDP messages are skipped, never a panic: a scripted peer on a real socket.

use std::time::Duration;

use cdp::{Connection, ConnectionOptions, EventFilter};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn garbage_is_skipped_and_the_real_reply_still_arrives() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "ws://{}/devtools/browser/fake",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
        let Some(Ok(Message::Text(request))) = ws.next().await else {
            return;
        };
        let request: serde_json::Value = serde_json::from_str(&request).unwrap();
        let id = request["id"].as_u64().unwrap();
        for junk in [
            Message::text("not json at all"),
            Message::text("[1,2,3]"),
            Message::text("{\"neither\":\"id nor method\"}"),
            Message::text("{\"id\":999999,\"result\":{}}"),
            Message::text("{\"id\":\"string id\",\"result\":{}}"),
            Message::text("{\"method\":\"Odd.event\",\"params\":\"not an object\"}"),
            Message::binary(b"\xff\xfe binary junk".to_vec()),
        ] {
            ws.send(junk).await.unwrap();
        }
        // The real reply comes as a binary frame, which is accepted too.
        let reply = serde_json::json!({ "id": id, "result": { "ok": true } }).to_string();
        ws.send(Message::binary(reply.into_bytes())).await.unwrap();
        // Then an error reply for a second command.
        if let Some(Ok(Message::Text(request))) = ws.next().await {
            let request: serde_json::Value = serde_json::from_str(&request).unwrap();
            let reply = serde_json::json!({ "id": request["id"], "error": { "code": -32000, "message": "nope" } });
            ws.send(Message::text(reply.to_string())).await.unwrap();
        }
        // Then hang up.
        let _ = ws.close(None).await;
    });
    let conn = Connection::connect(&url, ConnectionOptions::default())
        .await
        .unwrap();
    let mut events = conn.subscribe(EventFilter::default());
    let reply = conn
        .browser()
        .send_raw("Fake.call", serde_json::json!({}), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(reply, serde_json::json!({ "ok": true }));
    let odd = events.recv().await.unwrap().unwrap();
    assert_eq!(odd.method, "Odd.event");
    let err = conn
        .browser()
        .send_raw("Fake.fail", serde_json::json!({}), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(err, cdp::CdpError::Protocol { code: -32000, .. }),
        "{err:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), conn.closed())
        .await
        .expect("the hang-up is noticed");
    assert!(
        events.recv().await.is_none(),
        "event streams end with the connection"
    );
}
