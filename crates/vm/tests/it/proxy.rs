//! A fault-injecting HTTP proxy on loopback in front of a real guest: each request goes
//! upstream on a connection of its own (`Connection: close`); what comes back may be dropped,
//! corrupted or replaced, by the request's path.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Everything passes.
    None,
    /// Input reaches the guest (which applies it and answers), and its answer never comes back.
    DropInputAnswer,
    /// Screenshots come back with bytes flipped in the middle.
    CorruptScreenshot,
    /// Screenshots announce 64 MiB.
    HugeScreenshot,
    /// Nothing is answered at all (a hung guest).
    Hang,
}

pub struct Proxy {
    pub endpoint: String,
    fault: Arc<Mutex<Fault>>,
}

impl Proxy {
    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
}

/// Starts a proxy to `upstream` (`http://127.0.0.1:PORT`).
pub async fn start(upstream: &str) -> Proxy {
    let upstream = upstream
        .strip_prefix("http://")
        .expect("http endpoint")
        .to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let fault = Arc::new(Mutex::new(Fault::None));
    let f = fault.clone();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let upstream = upstream.clone();
            let f = f.clone();
            tokio::spawn(async move {
                let _ = serve(client, &upstream, &f).await;
            });
        }
    });
    Proxy { endpoint, fault }
}

async fn read_request(client: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    // The same request, on a connection that closes after its answer.
    let mut lines: Vec<&str> = head.trim_end().split("\r\n").collect();
    lines.retain(|l| !l.to_ascii_lowercase().starts_with("connection:"));
    let mut out = lines.join("\r\n").into_bytes();
    out.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
    out.extend_from_slice(&buf[head_end..]);
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    Ok(Some((path, out)))
}

async fn serve(mut client: TcpStream, upstream: &str, fault: &Mutex<Fault>) -> std::io::Result<()> {
    // One request per connection: its answer closes it.
    let Some((path, request)) = read_request(&mut client).await? else {
        return Ok(());
    };
    let now = *fault.lock().unwrap();
    if now == Fault::Hang {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        return Ok(());
    }
    if now == Fault::HugeScreenshot && path == "/screenshot" {
        client
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 67108864\r\n\r\n\x89PNG\r\n\x1a\n",
            )
            .await?;
        return Ok(());
    }
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(&request).await?;
    let mut response = Vec::new();
    up.read_to_end(&mut response).await?;
    match now {
        Fault::DropInputAnswer if path == "/glovebox/v1/input" => {
            // Applied upstream; the answer is lost on the way back.
            return Ok(());
        }
        Fault::CorruptScreenshot if path == "/screenshot" => {
            if let Some(body) = response.windows(4).position(|w| w == b"\r\n\r\n") {
                let start = body + 4 + (response.len() - body - 4) / 2;
                for b in response.iter_mut().skip(start).take(64) {
                    *b ^= 0x5a;
                }
            }
        }
        _ => {}
    }
    client.write_all(&response).await
}
