//! Resolving where a browser listens: a `ws://` URL as is, or `http://host:port` through `/json/version`.

use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::CdpError;

#[derive(Deserialize)]
struct VersionInfo {
    #[serde(rename = "webSocketDebuggerUrl")]
    web_socket_debugger_url: Option<String>,
}

/// Turns a user-supplied endpoint into a browser WebSocket URL.
///
/// `ws://` and `wss://` URLs pass through. `http://host:port` is resolved with `GET /json/version`;
/// when the browser reports a loopback host in its URL (as Chromium behind a proxy or in a pod
/// does), the host and port the user gave are put back so the URL stays reachable.
pub async fn resolve(endpoint: &str, deadline: Duration) -> Result<String, CdpError> {
    let err = |reason: String| CdpError::Connect {
        endpoint: endpoint.to_owned(),
        reason,
    };
    if endpoint.starts_with("ws://") || endpoint.starts_with("wss://") {
        return Ok(endpoint.to_owned());
    }
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return Err(err("expected ws://…, wss://… or http://host:port (https is not supported; use the wss:// URL)".into()));
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(err("no host in the endpoint".into()));
    }
    let body = tokio::time::timeout(deadline, http_get(authority, "/json/version"))
        .await
        .map_err(|_| err(format!("no answer from /json/version within {deadline:?}")))?
        .map_err(|e| err(format!("GET /json/version failed: {e}")))?;
    let info: VersionInfo = serde_json::from_str(&body)
        .map_err(|e| err(format!("/json/version did not return JSON: {e}")))?;
    let ws = info
        .web_socket_debugger_url
        .ok_or_else(|| err("/json/version has no webSocketDebuggerUrl".into()))?;
    Ok(rewrite_loopback_host(&ws, authority))
}

fn rewrite_loopback_host(ws: &str, authority: &str) -> String {
    let Some(rest) = ws.strip_prefix("ws://") else {
        return ws.to_owned();
    };
    let (host_port, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    if matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "0.0.0.0") {
        format!("ws://{authority}/{path}")
    } else {
        ws.to_owned()
    }
}

/// A minimal HTTP/1.1 GET for one small JSON document; not a general client.
///
/// Chromium's DevTools HTTP server ignores `Connection: close`, so the body is read by its
/// `Content-Length` (or chunks) rather than to the end of the stream.
async fn http_get(authority: &str, path: &str) -> std::io::Result<String> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut stream = TcpStream::connect(authority).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let (head, body_start) = loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(invalid("connection closed before the HTTP header ended"));
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (String::from_utf8_lossy(&raw[..end]).into_owned(), end + 4);
        }
        if raw.len() > 64 << 10 {
            return Err(invalid("HTTP header too large"));
        }
    };
    let status_ok = head
        .lines()
        .next()
        .is_some_and(|line| line.split_whitespace().nth(1) == Some("200"));
    if !status_ok {
        let first = head.lines().next().unwrap_or_default().to_owned();
        return Err(std::io::Error::other(format!("unexpected status: {first}")));
    }
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_ascii_lowercase())
        })
    };
    let mut body = raw[body_start..].to_vec();
    if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        if length > 1 << 20 {
            return Err(invalid("body too large"));
        }
        while body.len() < length {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(length);
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    // No length: chunked or close-delimited; read to the end (bounded).
    let mut rest = Vec::new();
    (&mut stream).take(1 << 20).read_to_end(&mut rest).await?;
    body.extend_from_slice(&rest);
    let text = String::from_utf8_lossy(&body).into_owned();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        return Ok(dechunk(&text));
    }
    Ok(text)
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size_line, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_ws_host_is_replaced_by_the_host_the_user_gave() {
        assert_eq!(
            rewrite_loopback_host(
                "ws://127.0.0.1:9222/devtools/browser/abc",
                "pool.internal:3000"
            ),
            "ws://pool.internal:3000/devtools/browser/abc"
        );
        assert_eq!(
            rewrite_loopback_host("ws://10.0.0.5:9222/devtools/browser/abc", "x:1"),
            "ws://10.0.0.5:9222/devtools/browser/abc"
        );
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"), "{\"a\":1}");
    }
}
