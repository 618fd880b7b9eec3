//! A tiny loopback HTTP server for built-in pages: the `--demo` page and the benchmark fixtures.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves fixed HTML pages on `127.0.0.1:<ephemeral>` until dropped.
pub struct LoopbackPages {
    origin: String,
    task: tokio::task::AbortHandle,
}

impl Drop for LoopbackPages {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LoopbackPages {
    pub async fn serve(pages: HashMap<String, String>) -> anyhow::Result<LoopbackPages> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot bind a loopback port")?;
        let origin = format!("http://{}", listener.local_addr()?);
        let pages = Arc::new(pages);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let pages = pages.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await else { return };
                    let request = String::from_utf8_lossy(&buf[..n]);
                    let path = request.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/").to_owned();
                    let (status, body) = match pages.get(&path) {
                        Some(body) => ("200 OK", body.as_str()),
                        None => ("404 Not Found", "not found"),
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        })
        .abort_handle();
        Ok(LoopbackPages { origin, task })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }
}

pub const DEMO_PAGE: &str = "<!doctype html><html><head><meta charset=utf-8><title>Glovebox demo</title></head>\
<body><main><h1>Glovebox demo page</h1><p>Served on loopback by <code>glovebox observe --demo</code>.</p>\
<form><label>Name <input name=name></label> <label>Password <input type=password name=pw value=hunter2></label> \
<button type=button>Greet</button></form><p><a href=\"/next?token=abc123\">Next page</a></p></main></body></html>";

/// The login fixture of the browser tests, reused by the benchmarks.
pub const LOGIN_PAGE: &str = include_str!("../../browser/tests/fixtures/login.html");

/// A page of 5,006 elements (issue 36's "5,000-element page"): 1,250 list items with a link, a
/// button and a span each, about 11,000 DOM nodes with their text.
pub fn big_page() -> String {
    let mut html = String::from("<!doctype html><title>Big</title><h1>Big page</h1><ul>");
    for i in 0..1250 {
        html.push_str(&format!("<li><a href='/item/{i}'>Item {i}</a> <button>Buy {i}</button> <span>note {i}</span></li>"));
    }
    html.push_str("</ul>");
    html
}

/// A button that changes text when clicked and a text field, for the action benchmarks.
pub const ACT_PAGE: &str = include_str!("../../browser/tests/fixtures/counter.html");
