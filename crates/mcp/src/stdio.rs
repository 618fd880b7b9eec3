//! `glovebox mcp`: one MCP session over stdin/stdout. stdout carries only MCP messages; logs go
//! to stderr. When the client closes the pipe, the session's cleanup runs before returning.

use std::sync::Arc;

use rmcp::ServiceExt;
use runtime::Runtime;

use crate::McpError;
use crate::server::{GloveboxMcp, McpOptions};

/// Serves one MCP session on stdio until the client disconnects; then closes its Glovebox session.
pub async fn serve_stdio(runtime: Runtime, options: McpOptions) -> Result<(), McpError> {
    serve_io(runtime, options, rmcp::transport::stdio()).await
}

/// The same over any byte stream pair (tests and embedding).
pub async fn serve_io<R, W>(runtime: Runtime, options: McpOptions, io: (R, W)) -> Result<(), McpError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let handler = GloveboxMcp::new(runtime, Arc::new(options));
    let close = handler.closer();
    let result = match handler.serve(io).await {
        Ok(running) => running.waiting().await.map(|_| ()).map_err(|e| McpError::Transport(e.to_string())),
        Err(e) => Err(McpError::Transport(e.to_string())),
    };
    close.await;
    result
}
