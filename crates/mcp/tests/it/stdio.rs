//! MCP over a byte stream (`glovebox mcp`'s transport), in process: every request with an id gets
//! an answer, whatever the line holds (issue 15: malformed lines went unanswered and the client
//! waited forever).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::env;

/// A small seeded generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// One line to send, and whether its answer carries its id (`Some`) or a null id (`None`, for
/// lines whose id cannot be read).
fn message(rng: &mut Lcg, id: u64) -> (Vec<u8>, Option<u64>) {
    let text = |v: Value| v.to_string().into_bytes();
    match rng.next() % 16 {
        0 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})),
            Some(id),
        ),
        1 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})),
            Some(id),
        ),
        2 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "no/such/method"})),
            Some(id),
        ),
        3 => (
            text(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": 5}}),
            ),
            Some(id),
        ),
        4 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": "observe"})),
            Some(id),
        ),
        5 => (
            text(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
            ),
            Some(id),
        ),
        6 => (text(json!({"jsonrpc": "2.0", "id": id})), Some(id)),
        7 => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"s":"\ud800"}}}}"#)
                .into_bytes(),
            None,
        ),
        8 => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"n":1e400}}}}"#)
                .into_bytes(),
            None,
        ),
        9 => (
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{}\"}}",
                "[".repeat(300)
            )
            .into_bytes()
            .into_iter()
            .chain(*b"\xff\xfe")
            .collect(),
            None,
        ),
        10 => (
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"params":{}}}"#,
                "[".repeat(200) + &"]".repeat(200)
            )
            .into_bytes(),
            None,
        ),
        // Issue 35: well-formed, but params rmcp cannot type; answered with their id.
        11 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": [1]})),
            Some(id),
        ),
        12 => (
            text(json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": "x"})),
            Some(id),
        ),
        13 => (
            text(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "status", "_meta": 5}}),
            ),
            Some(id),
        ),
        14 => (
            text(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": []}}),
            ),
            Some(id),
        ),
        _ => (
            {
                let cut = 1 + (rng.next() % 29) as usize;
                let full = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
                full.as_bytes()[..cut.min(full.len() - 1)].to_vec()
            },
            None,
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_with_an_id_is_answered_over_stdio() {
    let env = env("stdio-fuzz", true, None).await;
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_in, server_out) = tokio::io::split(server);
    let serving = tokio::spawn(mcp::stdio::serve_io(
        env.runtime.clone(),
        mcp::McpOptions::default(),
        (server_in, server_out),
    ));
    let (client_in, mut client_out) = tokio::io::split(client);
    let mut replies = BufReader::new(client_in).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}});
    client_out
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let first: Value = serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 0, "{first}");
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();

    let mut rng = Lcg(0x05ee_d0f9_1a55);
    let (mut with_id, mut null_ids) = (HashSet::new(), 0usize);
    let sender = {
        let mut lines = Vec::new();
        for id in 1..=2000u64 {
            let (line, answered_by) = message(&mut rng, id);
            match answered_by {
                Some(id) => {
                    with_id.insert(id);
                }
                None => null_ids += 1,
            }
            lines.push(line);
        }
        // One line over the transport's limit, answered without being kept.
        lines.push(vec![b'x'; mcp::stdio::LINE_MAX_BYTES + 10]);
        null_ids += 1;
        tokio::spawn(async move {
            for line in lines {
                client_out.write_all(&line).await.unwrap();
                client_out.write_all(b"\n").await.unwrap();
            }
            client_out
        })
    };
    let (mut seen, mut seen_null) = (HashSet::new(), 0usize);
    let all = tokio::time::timeout(Duration::from_secs(120), async {
        while seen.len() < with_id.len() || seen_null < null_ids {
            let Some(line) = replies.next_line().await.unwrap() else {
                break;
            };
            let reply: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{e}: every line out is JSON: {line}"));
            match reply["id"].as_u64() {
                Some(id) => assert!(seen.insert(id), "one answer per request: {id}"),
                None => {
                    assert!(
                        reply["id"].is_null() && reply["error"]["code"].is_i64(),
                        "{reply}"
                    );
                    seen_null += 1;
                }
            }
        }
    })
    .await;
    assert!(
        all.is_ok(),
        "unanswered: {:?} with ids, {} without",
        with_id.difference(&seen).take(10).collect::<Vec<_>>(),
        null_ids - seen_null
    );
    assert_eq!(seen, with_id);
    let client_out = sender.await.unwrap();
    drop(client_out);
    drop(replies);
    let _ = tokio::time::timeout(Duration::from_secs(20), serving).await;
}

/// Sends `n` `status` calls back to back over stdio with `rate` and returns their answers' text.
async fn status_calls(env: &crate::Env, rate: Option<mcp::RateLimit>, n: u64) -> Vec<String> {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_in, server_out) = tokio::io::split(server);
    let options = mcp::McpOptions {
        rate,
        ..mcp::McpOptions::default()
    };
    let serving = tokio::spawn(mcp::stdio::serve_io(
        env.runtime.clone(),
        options,
        (server_in, server_out),
    ));
    let (client_in, mut client_out) = tokio::io::split(client);
    let mut replies = BufReader::new(client_in).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fast", "version": "0"}}});
    client_out
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    replies.next_line().await.unwrap().unwrap();
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let mut lines = String::new();
    for id in 1..=n {
        lines.push_str(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "status", "arguments": {}}}).to_string());
        lines.push('\n');
    }
    client_out.write_all(lines.as_bytes()).await.unwrap();
    let mut answers = Vec::new();
    while (answers.len() as u64) < n {
        let line = tokio::time::timeout(Duration::from_secs(60), replies.next_line())
            .await
            .expect("answered")
            .unwrap()
            .unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"].as_u64().is_some() {
            answers.push(
                reply["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
    }
    drop(client_out);
    drop(replies);
    let _ = tokio::time::timeout(Duration::from_secs(20), serving).await;
    answers
}

/// On stdio the client is Glovebox's only user: no bound on its calls unless one is configured
/// (400 back to back all run). A configured bound refuses past its burst with `step_limit`, the
/// closed code for a spent budget, and says how long to wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_does_not_throttle_its_client_and_a_configured_bound_says_step_limit() {
    let env = env("stdio-rate", true, None).await;
    let answers = status_calls(&env, None, 400).await;
    assert!(
        answers
            .iter()
            .all(|a| !a.contains("step_limit") && !a.contains("too many")),
        "{:?}",
        answers.iter().find(|a| a.contains("too many"))
    );
    let answers = status_calls(
        &env,
        Some(mcp::RateLimit {
            burst: 5,
            per_minute: 60,
        }),
        8,
    )
    .await;
    let refused: Vec<Value> = answers
        .iter()
        .filter(|a| a.contains("too many"))
        .map(|a| serde_json::from_str(a).unwrap())
        .collect();
    assert_eq!(refused.len(), 3, "{answers:?}");
    assert_eq!(refused[0]["error"], "step_limit", "{:?}", refused[0]);
    assert!(
        refused[0]["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0),
        "{:?}",
        refused[0]
    );
}
