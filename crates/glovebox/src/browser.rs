//! Getting a browser for a command that needs one outside the runtime (`doctor`, `launch`, the
//! benchmarks): the configured adapter, connected.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use browser::{BrowserSource, Chromium, LaunchOptions};
use runtime::SurfaceAdapter as _;

use crate::cli::Global;

/// A connected browser; when local, the browser dies with this value.
pub struct BrowserHandle {
    pub chromium: Arc<Chromium>,
    pub version: browser::probe::Version,
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
    Ok(match crate::config::resolve(global, None)?.browser {
        BrowserSource::Launch(options) => options,
        BrowserSource::Endpoint(_) => LaunchOptions::new(data_dir(global)),
    })
}

/// Launches Chromium (driven over its pipe), or connects to `--browser-endpoint` when given.
pub async fn open(global: &Global) -> anyhow::Result<BrowserHandle> {
    open_with(global, false).await
}

/// [`open`], with a DevTools port other processes can connect to when `debugging_port` is set
/// (`glovebox launch`, whose point is to hand that port out).
pub async fn open_with(global: &Global, debugging_port: bool) -> anyhow::Result<BrowserHandle> {
    let source = match &global.browser_endpoint {
        Some(remote) => BrowserSource::Endpoint(remote.clone()),
        None => BrowserSource::Launch(LaunchOptions {
            debugging_port,
            ..launch_options(global)?
        }),
    };
    let chromium = Chromium::new(source);
    chromium
        .connect()
        .await
        .context("cannot reach the browser")?;
    let version = chromium
        .version()
        .await
        .context("the browser did not say its version")?;
    Ok(BrowserHandle { chromium, version })
}
