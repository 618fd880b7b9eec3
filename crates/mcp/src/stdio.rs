//! `glovebox mcp`: one MCP session over stdin/stdout. stdout carries only MCP messages; logs go
//! to stderr. When the client closes the pipe, the session's cleanup runs before returning.
//!
//! A guard sits between the pipe and rmcp so that every request with an id gets an answer, as
//! JSON-RPC says: a line that is not JSON (invalid UTF-8, a lone surrogate, nesting past serde's
//! limit, a number out of range) gets -32700 with a null id; JSON that is not a request object
//! (an array, a scalar, an object with neither method nor result) gets -32600; a `tools/call` whose
//! params are not `{name: string, arguments?: object}` gets -32602 with its id; a line longer than
//! [`LINE_MAX_BYTES`] is skipped whole and answered with -32600. Everything else reaches rmcp as
//! it came.

use std::sync::Arc;

use rmcp::ServiceExt;
use runtime::Runtime;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::McpError;
use crate::server::{GloveboxMcp, McpOptions};

/// The longest line the transport reads (4 MiB); a longer one is refused without being kept.
pub const LINE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Serves one MCP session on stdio until the client disconnects; then closes its Glovebox session.
pub async fn serve_stdio(runtime: Runtime, options: McpOptions) -> Result<(), McpError> {
    serve_io(runtime, options, (tokio::io::stdin(), tokio::io::stdout())).await
}

/// The same over any byte stream pair (tests and embedding).
pub async fn serve_io<R, W>(runtime: Runtime, options: McpOptions, (input, output): (R, W)) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (answers, refusals) = mpsc::channel::<String>(64);
    let writer = tokio::spawn(write_out(from_rmcp, refusals, output));
    let reader = tokio::spawn(read_in(input, to_rmcp, answers));
    let handler = GloveboxMcp::new(runtime, Arc::new(options));
    let close = handler.closer();
    let result = match handler.serve((rmcp_in, rmcp_out)).await {
        Ok(running) => running.waiting().await.map(|_| ()).map_err(|e| McpError::Transport(e.to_string())),
        Err(e) => Err(McpError::Transport(e.to_string())),
    };
    reader.abort();
    let _ = writer.await;
    close.await;
    result
}

/// Reads the client's lines; forwards the well-formed ones to rmcp and answers the rest itself.
/// Ends (closing rmcp's input) at the end of the client's stream.
async fn read_in<R: AsyncRead + Unpin>(input: R, mut to_rmcp: tokio::io::DuplexStream, answers: mpsc::Sender<String>) {
    let mut input = BufReader::new(input);
    loop {
        let line = match next_line(&mut input).await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => break,
        };
        let refusal = match line {
            Line::TooLong => Some(error_line(&Value::Null, -32600, format!("Invalid Request: the line is longer than {LINE_MAX_BYTES} bytes")).0),
            Line::Text(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Text(bytes) => match check(&bytes) {
                Ok(()) => {
                    if to_rmcp.write_all(&bytes).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                        break;
                    }
                    None
                }
                Err(refusal) => Some(refusal.0),
            },
        };
        if let Some(refusal) = refusal
            && answers.send(refusal).await.is_err()
        {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's messages and the guard's answers to the client, one whole line at a time.
async fn write_out<W: AsyncWrite + Unpin>(from_rmcp: tokio::io::DuplexStream, mut refusals: mpsc::Receiver<String>, mut output: W) {
    let mut from_rmcp = BufReader::new(from_rmcp).lines();
    let mut rmcp_open = true;
    loop {
        let line = tokio::select! {
            line = from_rmcp.next_line(), if rmcp_open => match line {
                Ok(Some(line)) => line,
                _ => {
                    rmcp_open = false;
                    continue;
                }
            },
            refusal = refusals.recv() => match refusal {
                Some(refusal) => refusal,
                None if rmcp_open => {
                    // The reader is done; drain what rmcp still says.
                    while let Ok(Some(line)) = from_rmcp.next_line().await {
                        if write_line(&mut output, &line).await.is_err() {
                            return;
                        }
                    }
                    return;
                }
                None => return,
            },
        };
        if write_line(&mut output, &line).await.is_err() {
            return;
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(output: &mut W, line: &str) -> std::io::Result<()> {
    output.write_all(line.as_bytes()).await?;
    output.write_all(b"\n").await?;
    output.flush().await
}

enum Line {
    Text(Vec<u8>),
    TooLong,
}

/// The next line (without its newline), never holding more than [`LINE_MAX_BYTES`] of it.
async fn next_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Some(Line::TooLong),
                (false, true) => None,
                (false, false) => Some(Line::Text(line)),
            });
        }
        let (chunk, end) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > LINE_MAX_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(buf.len());
        input.consume(used);
        if end.is_some() {
            return Ok(Some(if too_long { Line::TooLong } else { Line::Text(line) }));
        }
    }
}

/// A line the guard answers itself: the JSON-RPC error line to send back.
#[derive(Debug)]
struct Answer(String);

/// `Ok` for a line rmcp may read; else the JSON-RPC error that answers it.
fn check(bytes: &[u8]) -> Result<(), Answer> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => return Err(error_line(&Value::Null, -32700, format!("Parse error: {e}"))),
    };
    let Value::Object(message) = &value else {
        return Err(error_line(&Value::Null, -32600, "Invalid Request: a message is one JSON object (batches are not supported)".into()));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let valid_id = matches!(id, Value::Null | Value::String(_)) || id.as_i64().is_some() || id.as_u64().is_some();
    let method = message.get("method");
    if message.get("jsonrpc") != Some(&json!("2.0")) || !valid_id {
        return Err(error_line(
            if valid_id { &id } else { &Value::Null },
            -32600,
            "Invalid Request: jsonrpc must be \"2.0\" and an id a string or an integer".into(),
        ));
    }
    match method {
        None if message.contains_key("result") || message.contains_key("error") => Ok(()),
        None => Err(error_line(&id, -32600, "Invalid Request: no method".into())),
        Some(Value::String(name)) if name == "tools/call" => {
            let params = message.get("params");
            let well_formed = params
                .and_then(Value::as_object)
                .is_some_and(|p| p.get("name").is_some_and(Value::is_string) && p.get("arguments").is_none_or(|a| a.is_object() || a.is_null()));
            if well_formed || message.get("id").is_none() {
                Ok(())
            } else {
                Err(error_line(&id, -32602, "Invalid params: tools/call takes {\"name\": string, \"arguments\"?: object}".into()))
            }
        }
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(error_line(&id, -32600, "Invalid Request: method must be a string".into())),
    }
}

fn error_line(id: &Value, code: i64, message: String) -> Answer {
    Answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn malformed_lines_are_answered_with_the_spec_codes() {
        let code =
            |line: &str| check(line.as_bytes()).err().map(|e| serde_json::from_str::<serde_json::Value>(&e.0).unwrap()["error"]["code"].as_i64().unwrap());
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}"#), Some(-32700), "lone surrogate");
        assert_eq!(code(&format!("{}1{}", "[".repeat(200), "]".repeat(200))), Some(-32700), "too deep");
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}"#), Some(-32700), "out of range");
        assert!(check(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").is_err(), "invalid UTF-8");
        assert_eq!(code("[1, 2]"), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":3}}"#), Some(-32602));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}"#), Some(-32602));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"observe","arguments":{}}}"#), None);
        let answered = check(br#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{}}"#).unwrap_err().0;
        assert!(answered.contains(r#""id":"abc""#), "the request's own id: {answered}");
    }
}
