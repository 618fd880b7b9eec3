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
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::McpError;
use crate::jsonrpc::{check, error_line};
use crate::server::{GloveboxMcp, McpOptions};

/// The longest line the transport reads (4 MiB); a longer one is refused without being kept.
pub const LINE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Serves one MCP session on stdio until the client disconnects; then closes its Glovebox session.
pub async fn serve_stdio(runtime: Runtime, mut options: McpOptions) -> Result<(), McpError> {
    // The process at the other end of the pipes is the one that started this one.
    options.client_pid = Some(std::os::unix::process::parent_id());
    serve_io(runtime, options, (tokio::io::stdin(), tokio::io::stdout())).await
}

/// The same over any byte stream pair (tests and embedding).
pub async fn serve_io<R, W>(
    runtime: Runtime,
    mut options: McpOptions,
    (input, output): (R, W),
) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // The client that started Glovebox is its only user: no bound unless one is configured.
    options.rate = Some(options.rate.unwrap_or(crate::RateLimit::UNLIMITED));
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (answers, refusals) = mpsc::channel::<String>(64);
    let writer = tokio::spawn(write_out(from_rmcp, refusals, output));
    let reader = tokio::spawn(read_in(input, to_rmcp, answers));
    let handler = GloveboxMcp::new(runtime, Arc::new(options));
    let close = handler.closer();
    let result = match handler.serve((rmcp_in, rmcp_out)).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| McpError::Transport(e.to_string())),
        Err(e) => Err(McpError::Transport(e.to_string())),
    };
    reader.abort();
    let _ = writer.await;
    close.await;
    result
}

/// Reads the client's lines; forwards the well-formed ones to rmcp and answers the rest itself.
/// Ends (closing rmcp's input) at the end of the client's stream.
async fn read_in<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: tokio::io::DuplexStream,
    answers: mpsc::Sender<String>,
) {
    let mut input = BufReader::new(input);
    loop {
        let line = match next_line(&mut input).await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => break,
        };
        let refusal = match line {
            Line::TooLong => Some(
                error_line(
                    &serde_json::Value::Null,
                    -32600,
                    format!("Invalid Request: the line is longer than {LINE_MAX_BYTES} bytes"),
                )
                .0,
            ),
            Line::Text(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Text(bytes) => match check(&bytes) {
                Ok(()) => {
                    if to_rmcp.write_all(&bytes).await.is_err()
                        || to_rmcp.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                    None
                }
                Err(refusal) if refusal.is_silent() => None,
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
async fn write_out<W: AsyncWrite + Unpin>(
    from_rmcp: tokio::io::DuplexStream,
    mut refusals: mpsc::Receiver<String>,
    mut output: W,
) {
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
async fn next_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
) -> std::io::Result<Option<Line>> {
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
            return Ok(Some(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            }));
        }
    }
}
