//! Getting a browser connection for a command: a managed local Chromium, or a remote endpoint.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use cdp::domains::browser::{GetVersion, Version};
use cdp::{Browser, Connection, ConnectionOptions, LaunchOptions, endpoint};

use crate::cli::Global;

/// An open browser connection; when local, the browser dies with this value.
pub struct BrowserHandle {
    pub conn: Connection,
    pub local: Option<Browser>,
    pub version: Version,
}

/// The data directory: flag/env, else `$XDG_DATA_HOME/glovebox`, else `~/.local/share/glovebox`.
pub fn data_dir(global: &Global) -> PathBuf {
    if let Some(dir) = &global.data_dir {
        return dir.clone();
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("glovebox");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/glovebox"),
        None => std::env::temp_dir().join("glovebox"),
    }
}

/// The launch options the configuration describes (file, env and flags: the same resolution
/// `serve` uses, so `--viewport` and the rest mean the same everywhere).
pub fn launch_options(global: &Global) -> anyhow::Result<LaunchOptions> {
    Ok(match crate::config::resolve(global, None)?.runtime.browser {
        ::runtime::BrowserSource::Launch(options) => options,
        ::runtime::BrowserSource::Endpoint(_) => LaunchOptions::new(data_dir(global)),
    })
}

/// Launches Chromium, or connects to `--browser-endpoint` when given.
pub async fn open(global: &Global) -> anyhow::Result<BrowserHandle> {
    let (conn, local) = match &global.browser_endpoint {
        Some(remote) => {
            let ws = endpoint::resolve(remote, Duration::from_secs(10)).await?;
            let conn = Connection::connect(&ws, ConnectionOptions::default()).await.with_context(|| format!("cannot connect to the browser at {remote}"))?;
            (conn, None)
        }
        None => {
            let browser = Browser::launch(&launch_options(global)?).await?;
            let conn = browser.connect(ConnectionOptions::default()).await?;
            (conn, Some(browser))
        }
    };
    let version = conn.browser().call(GetVersion {}).await.context("the browser did not answer Browser.getVersion")?;
    Ok(BrowserHandle { conn, local, version })
}
