//! Integration tests of the CDP client and launcher against real Chromium and fixtures on loopback.

mod browser_death;
mod client;
mod launch;
mod malformed;
mod remote;

use std::path::PathBuf;
use std::time::Duration;

use cdp::domains::{page, runtime};
use cdp::{Browser, Connection, ConnectionOptions, LaunchOptions, Session};

/// A data directory for these tests under Cargo's per-target temp dir.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cdp-tests")
}

pub async fn launch() -> Browser {
    Browser::launch(&LaunchOptions::new(data_dir()))
        .await
        .expect("Chromium launches (run `make test`, which installs it)")
}

/// A browser with a DevTools port, for the tests of connecting to one (`glovebox launch`).
pub async fn launch_with_port() -> Browser {
    let mut options = LaunchOptions::new(data_dir());
    options.debugging_port = true;
    Browser::launch(&options)
        .await
        .expect("Chromium launches (run `make test`, which installs it)")
}

pub async fn launch_and_connect() -> (Browser, Connection) {
    let browser = launch().await;
    let conn = browser
        .connect(ConnectionOptions::default())
        .await
        .expect("connects");
    (browser, conn)
}

/// Navigates and waits for the load event of that session.
pub async fn goto(session: &Session, url: &str) {
    let mut loads = session.subscribe(&["Page.loadEventFired"]);
    session.call(page::Enable {}).await.expect("Page.enable");
    let reply = session
        .call(page::Navigate {
            url: url.to_owned(),
            frame_id: None,
        })
        .await
        .expect("navigate");
    assert_eq!(reply.error_text, None, "navigation to {url} failed");
    tokio::time::timeout(Duration::from_secs(10), loads.recv())
        .await
        .expect("load event within 10 s")
        .expect("stream open")
        .expect("no lag");
}

pub async fn eval(session: &Session, expression: &str) -> serde_json::Value {
    let reply = session
        .call(runtime::Evaluate::value(expression))
        .await
        .expect("evaluate");
    assert!(
        reply.exception_details.is_none(),
        "exception: {:?}",
        reply.exception_details
    );
    reply.result.value.unwrap_or(serde_json::Value::Null)
}

/// Pids of live processes whose command line mentions `needle` (e.g. a profile directory).
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie =
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (bounded) until no live process mentions `needle`; returns the survivors, if any.
pub async fn wait_until_gone(needle: &str, deadline: Duration) -> Vec<u32> {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        let left = processes_mentioning(needle);
        if left.is_empty() || tokio::time::Instant::now() >= until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
