//! Observation and preview of real Chromium tabs, against fixtures served on loopback.

mod act;
mod detach;
mod extended;
mod freshness;
mod observe;
mod preview;

use std::path::PathBuf;
use std::time::Duration;

use browser::{ObserveOptions, Tab};
use cdp::{Browser, Connection, ConnectionOptions, LaunchOptions};
use protocol::Observation;
use test_support::FixtureServer;

pub struct Env {
    _browser: Browser,
    pub conn: Connection,
    pub server: FixtureServer,
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub async fn env() -> Env {
    let server = FixtureServer::start().await.unwrap();
    server.dir("/", fixtures());
    server.dir("/lib", test_support::javascript_libs());
    let browser = Browser::launch(&LaunchOptions::new(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-tests"),
    ))
    .await
    .expect("Chromium launches (make test installs it)");
    let conn = browser.connect(ConnectionOptions::default()).await.unwrap();
    // As the adapter sets up a browser it launched: no download lands anywhere unless an action
    // asked for it. (Left unset, `chromium` saves into ~/Downloads and the headless shell drops
    // it without a `Page.downloadWillBegin`.)
    conn.browser()
        .send_raw(
            "Browser.setDownloadBehavior",
            serde_json::json!({"behavior": "deny"}),
            conn.default_timeout(),
        )
        .await
        .unwrap();
    Env {
        _browser: browser,
        conn,
        server,
    }
}

impl Env {
    pub async fn open(&self, path: &str) -> Tab {
        let tab = Tab::open(&self.conn.browser(), None, None).await.unwrap();
        tab.goto(&self.server.url(path), Duration::from_secs(10))
            .await
            .unwrap();
        tab
    }

    /// The observation as stable text for snapshots: ports replaced, ids left out.
    pub fn digest(&self, observation: &Observation) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "url: {}\ntitle: {}\n",
            observation.url(),
            observation.title()
        ));
        out.push_str(&format!(
            "aria_truncated: {}  elements_truncated: {}  console_truncated: {}\n--- aria_snapshot\n",
            observation.aria_truncated(),
            observation.elements_truncated(),
            observation.console_truncated()
        ));
        out.push_str(observation.aria_snapshot());
        out.push_str("--- interactive_elements\n");
        for e in observation.interactive_elements() {
            out.push_str(&serde_json::to_string(e).unwrap());
            out.push('\n');
        }
        if !observation.console_errors().is_empty() {
            out.push_str("--- console_errors\n");
            for c in observation.console_errors() {
                out.push_str(c);
                out.push('\n');
            }
        }
        out.replace(&self.server.port().to_string(), "PORT")
    }
}

pub async fn observe(tab: &Tab) -> Observation {
    tab.observe(&ObserveOptions::default())
        .await
        .expect("observation")
}

/// Evaluates in the page's main world (test set-up only).
pub async fn observe_eval(tab: &Tab, expression: &str) -> serde_json::Value {
    let reply = tab
        .session()
        .call(cdp::domains::runtime::Evaluate::value(expression))
        .await
        .unwrap();
    assert!(
        reply.exception_details.is_none(),
        "{:?}",
        reply.exception_details
    );
    reply.result.value.unwrap_or_default()
}
