//! Configuration as users expect it: built-in defaults, then a TOML file
//! (`--config`, `GLOVEBOX_CONFIG`, else `$XDG_CONFIG_HOME/glovebox/config.toml` or
//! `~/.config/glovebox/config.toml` when present), then `GLOVEBOX_*` environment variables, then
//! flags. clap merges env and flags (a flag wins); this module lays the file underneath.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use browser::BrowserSource;
use runtime::RuntimeConfig;
use serde::Deserialize;

use crate::cli::{Global, ServeArgs};

/// The config file. Every key is optional; unknown keys are an error (typos should not pass).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub data_dir: Option<PathBuf>,
    pub chromium: Option<PathBuf>,
    pub browser_endpoint: Option<String>,
    pub headed: Option<bool>,
    /// `[width, height]` of the browser window in CSS pixels.
    pub viewport: Option<(u32, u32)>,
    /// Local project / dev-server origins that act without approval (R1).
    pub trusted_origins: Option<Vec<String>>,
    /// Trusted origins whose password, card and code fields need no approval (a developer's own
    /// login form in tests); a person's setting, never a model's or a page's.
    pub credential_origins: Option<Vec<String>>,
    /// When set, only these origins may be opened.
    pub allowed_origins: Option<Vec<String>>,
    pub blocked_origins: Option<Vec<String>>,
    /// Hours an orphan run's artifacts are kept.
    pub artifact_retention_hours: Option<u64>,
    /// Milliseconds an idle tab keeps its DevTools attachment.
    pub debugger_idle_detach_ms: Option<u64>,
    /// The one directory uploads may read from.
    pub upload_root: Option<PathBuf>,
    /// Days the operation log and run records are kept (default 30).
    pub records_retention_days: Option<u64>,
    /// The most operations the log keeps (default 100000).
    pub records_max_operations: Option<u64>,
    /// The planner program and its arguments behind MCP's `computer_use` (e.g.
    /// `["python3", "/path/planner.py"]`); without it the tool is not offered.
    pub planner: Option<Vec<String>>,
    /// `[model]`: the model behind `computer_use` and `glovebox run` (provider, model,
    /// base_url?, api_key_env?).
    pub model: Option<agent::ModelChoice>,
    #[serde(default)]
    pub serve: ServeFile,
    /// `[desktop]`: drive an X display's windows instead of a browser.
    #[serde(default)]
    pub desktop: DesktopFile,
    /// `[script]`: `gui_exec`'s limits per call.
    #[serde(default)]
    pub script: ScriptFile,
    /// `[pool]`: a pool of browsers instead of one.
    #[serde(default)]
    pub pool: PoolFile,
    /// `[store]`: the records in a shared PostgreSQL database instead of SQLite.
    #[serde(default)]
    pub store: StoreFile,
    /// `[[vm]]`: VM guests reached by endpoint (an OSWorld-compatible guest server elsewhere);
    /// with any, their screens are the surfaces instead of a browser's tabs.
    #[serde(default)]
    pub vm: Vec<VmFile>,
}

/// `[pool]` in the config file: several browsers serve the sessions (see `--browser-pool`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolFile {
    /// `local` or an endpoint, each one browser of the pool (`--browser-pool` overrides).
    pub endpoints: Option<Vec<String>>,
    /// Sessions per browser (default 32).
    pub sessions_per_browser: Option<usize>,
    /// Sessions that may wait when every browser is full (default 16).
    pub queue: Option<usize>,
    /// Seconds one waits before `backend_unavailable` (default 10).
    pub wait_seconds: Option<u64>,
}

/// `[store]` in the config file (see `--store`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreFile {
    /// `postgres://…` (`--store` and `GLOVEBOX_STORE` override).
    pub url: Option<String>,
    /// A file holding the address (a secret: its password stays out of the config).
    pub url_file: Option<PathBuf>,
    /// Milliseconds between this instance's heartbeats (default 2000).
    pub heartbeat_ms: Option<u64>,
    /// Seconds without a heartbeat after which another instance takes an instance's sessions
    /// over (default 10).
    pub takeover_after_seconds: Option<u64>,
}

/// One `[[vm]]` of the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmFile {
    /// `vm:<name>` names its screen.
    pub name: String,
    /// Its guest server, `http://host:port`.
    pub endpoint: String,
    /// A file holding its token (read when used; never in the config itself).
    pub token_file: Option<PathBuf>,
}

/// `[script]` in the config file: `gui_exec`'s limits per call (defaults: 30 s, 100 broker
/// operations, 256 KiB of text, 4 images). The sandbox itself has no setting.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    pub timeout_seconds: Option<u64>,
    pub max_operations: Option<usize>,
    pub max_text_bytes: Option<usize>,
    pub max_images: Option<usize>,
}

/// `[desktop]` in the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesktopFile {
    /// The X display (`":1"`).
    pub display: Option<String>,
    /// The session bus of its applications (a D-Bus address).
    pub session_bus: Option<String>,
    /// Whether the display's keyboard and pointer may be used (default true; false on a
    /// person's own desktop: only accessibility actions).
    pub foreground_input: Option<bool>,
}

/// `[serve]` in the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeFile {
    pub bind: Option<SocketAddr>,
    pub token: Option<String>,
    pub allowed_hosts: Option<Vec<String>>,
    pub allowed_client_origins: Option<Vec<String>>,
    pub max_body_bytes: Option<usize>,
    pub calls_per_minute: Option<u32>,
    /// Seconds an MCP session lives with nothing of its client in flight.
    pub session_expiry_seconds: Option<u64>,
}

impl Settings {
    /// The surfaces' adapter this configuration names, not yet connected (the runtime's start
    /// connects it): an X display's windows when a display is configured, else the browser.
    pub fn adapter(&self) -> std::sync::Arc<dyn surface::SurfaceAdapter> {
        if let Some(guests) = &self.vms {
            return std::sync::Arc::new(vm::VmAdapter::new(guests.clone()));
        }
        match (&self.desktop, &self.pool) {
            (Some(desktop), _) => {
                std::sync::Arc::new(desktop::DesktopAdapter::new(desktop.clone()))
            }
            (None, Some(pool)) => pool.adapter(browser::Chromium::new),
            (None, None) => browser::Chromium::new(self.browser.clone()),
        }
    }

    /// [`Settings::adapter`] for the servers (`serve`, `mcp`): the browser starts in the
    /// background, so a client's `initialize` is answered at once; the first call that needs
    /// the browser waits for it.
    pub fn server_adapter(&self) -> std::sync::Arc<dyn surface::SurfaceAdapter> {
        match (&self.desktop, &self.pool) {
            _ if self.vms.is_some() => self.adapter(),
            (Some(_), _) => self.adapter(),
            (None, Some(pool)) => pool.adapter(browser::Chromium::starting_in_background),
            (None, None) => browser::Chromium::starting_in_background(self.browser.clone()),
        }
    }
}

/// A pool of browsers, resolved.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub members: Vec<BrowserSource>,
    pub limits: browser::PoolLimits,
}

impl PoolSettings {
    /// The pool, its members made by `member` (at once, or starting in the background).
    fn adapter(
        &self,
        member: fn(BrowserSource) -> std::sync::Arc<browser::Chromium>,
    ) -> std::sync::Arc<dyn surface::SurfaceAdapter> {
        browser::Pool::new(
            self.members.iter().cloned().map(member).collect(),
            self.limits,
        )
    }
}

/// Everything resolved.
#[derive(Debug)]
pub struct Settings {
    pub runtime: RuntimeConfig,
    /// Where the browser comes from (the surfaces' adapter the runtime starts with).
    pub browser: BrowserSource,
    /// A pool of browsers instead (`--browser-pool`, `[pool]`).
    pub pool: Option<PoolSettings>,
    /// The X display to drive instead (`--display`, `[desktop]`).
    pub desktop: Option<desktop::DesktopConfig>,
    /// The VM guests to drive instead (`--vm`, `[[vm]]`): before a display or a browser.
    pub vms: Option<Vec<vm::GuestConfig>>,
    /// The file's `[[vm]]` entries.
    vm_file: Vec<VmFile>,
    pub serve: server::HttpOptions,
    pub source: Option<PathBuf>,
}

fn default_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    let path = base.join("glovebox/config.toml");
    path.exists().then_some(path)
}

/// Reads the file named by `--config`/`GLOVEBOX_CONFIG`, else the default one if present.
pub fn load_file(explicit: Option<&Path>) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => default_file(),
    };
    let Some(path) = path else {
        return Ok((FileConfig::default(), None));
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    let file: FileConfig =
        toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))?;
    Ok((file, Some(path)))
}

fn origins(list: &[String], what: &str) -> anyhow::Result<Vec<policy::Origin>> {
    list.iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            policy::Origin::parse(s.trim())
                .map_err(|e| anyhow::anyhow!("{what}: {s:?} is not an origin: {e}"))
        })
        .collect()
}

/// Layers file, env and flags (env and flags already merged by clap) over the defaults.
pub fn resolve(global: &Global, serve: Option<&ServeArgs>) -> anyhow::Result<Settings> {
    let (file, source) = load_file(global.config.as_deref())?;
    let data_dir = global
        .data_dir
        .clone()
        .or(file.data_dir.clone())
        .unwrap_or_else(|| crate::browser::data_dir(global));
    let mut runtime = RuntimeConfig::new(&data_dir);
    let mut launch = browser::LaunchOptions::new(&data_dir);
    launch.executable = global.chromium.clone().or(file.chromium.clone());
    launch.headless = !(global.headed || file.headed.unwrap_or(false));
    if let Some(size) = global
        .viewport
        .as_deref()
        .map(parse_viewport)
        .transpose()?
        .or(file.viewport)
    {
        launch.window_size = size;
    }
    let browser = match global
        .browser_endpoint
        .clone()
        .or(file.browser_endpoint.clone())
    {
        Some(endpoint) => BrowserSource::Endpoint(endpoint),
        None => BrowserSource::Launch(launch.clone()),
    };
    let pool_endpoints: Vec<String> = if global.browser_pool.is_empty() {
        file.pool.endpoints.clone().unwrap_or_default()
    } else {
        global.browser_pool.clone()
    };
    let pool = if pool_endpoints.is_empty() {
        None
    } else {
        let members = pool_endpoints
            .iter()
            .map(|e| match e.trim() {
                "local" => Ok(BrowserSource::Launch(launch.clone())),
                e if e.starts_with("ws://")
                    || e.starts_with("wss://")
                    || e.starts_with("http://") =>
                {
                    Ok(BrowserSource::Endpoint(e.to_owned()))
                }
                e => Err(anyhow::anyhow!(
                    "browser pool: {e:?} is neither `local` nor an endpoint (ws://…, wss://…, http://host:port)"
                )),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(members.len() <= 64, "browser pool: at most 64 browsers");
        let mut limits = browser::PoolLimits::default();
        if let Some(n) = file.pool.sessions_per_browser {
            anyhow::ensure!(
                (1..=1000).contains(&n),
                "[pool] sessions_per_browser is 1 to 1000"
            );
            limits.sessions_per_browser = n;
        }
        if let Some(n) = file.pool.queue {
            anyhow::ensure!(n <= 10_000, "[pool] queue is 0 to 10000");
            limits.queue = n;
        }
        if let Some(s) = file.pool.wait_seconds {
            anyhow::ensure!((0..=600).contains(&s), "[pool] wait_seconds is 0 to 600");
            limits.wait = Duration::from_secs(s);
        }
        Some(PoolSettings { members, limits })
    };
    let pick = |flag: &Vec<String>, file: &Option<Vec<String>>| {
        if flag.is_empty() {
            file.clone().unwrap_or_default()
        } else {
            flag.clone()
        }
    };
    runtime.trust.trusted_origins = origins(
        &pick(&global.trust, &file.trusted_origins),
        "trusted origin",
    )?;
    runtime.trust.credential_origins = origins(
        &file.credential_origins.clone().unwrap_or_default(),
        "credential origin",
    )?;
    let allowed = pick(&global.allow_origin, &file.allowed_origins);
    runtime.navigation.allowed_origins = if allowed.is_empty() {
        None
    } else {
        Some(origins(&allowed, "allowed origin")?)
    };
    runtime.navigation.blocked_origins = origins(
        &pick(&global.block_origin, &file.blocked_origins),
        "blocked origin",
    )?;
    if let Some(hours) = global
        .artifact_retention_hours
        .or(file.artifact_retention_hours)
    {
        runtime.artifact_ttl = Duration::from_secs(hours * 3600);
    }
    if let Some(ms) = global
        .debugger_idle_detach_ms
        .or(file.debugger_idle_detach_ms)
    {
        runtime.debugger_idle_detach = Duration::from_millis(ms);
    }
    if let Some(root) = global
        .upload_root
        .clone()
        .or(file.upload_root.clone())
        .filter(|p| !p.as_os_str().is_empty())
    {
        if !root.is_dir() {
            anyhow::bail!(
                "the upload root {} is not a directory (--upload-root, GLOVEBOX_UPLOAD_ROOT or upload_root in the config file)",
                root.display()
            );
        }
        runtime.uploads_dir = Some(root);
    }
    runtime.uploads_hidden = global.upload_hidden;
    if let Some(days) = file.records_retention_days {
        runtime.records_max_age = Duration::from_secs(days * 24 * 3600);
    }
    if let Some(max) = file.records_max_operations {
        runtime.records_max_operations = max;
    }
    let store_url = match (&global.store, &file.store.url, &file.store.url_file) {
        (Some(url), _, _) => Some(url.trim().to_owned()),
        (None, Some(url), _) => Some(url.trim().to_owned()),
        (None, None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read [store] url_file {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        (None, None, None) => None,
    }
    .filter(|u| !u.is_empty() && u != "sqlite");
    if let Some(url) = store_url {
        anyhow::ensure!(
            url.starts_with("postgres://") || url.starts_with("postgresql://"),
            "--store: the records go in SQLite under the data directory (the default) or in a \
             PostgreSQL database named postgres://user@host:port/database"
        );
        runtime.store_url = Some(runtime::StoreUrl(url));
    }
    if let Some(ms) = file.store.heartbeat_ms {
        anyhow::ensure!(
            (100..=60_000).contains(&ms),
            "[store] heartbeat_ms is 100 to 60000"
        );
        runtime.heartbeat_interval = Duration::from_millis(ms);
    }
    if let Some(seconds) = file.store.takeover_after_seconds {
        anyhow::ensure!(
            (1..=3600).contains(&seconds),
            "[store] takeover_after_seconds is 1 to 3600"
        );
        runtime.takeover_after = Duration::from_secs(seconds);
    }
    anyhow::ensure!(
        runtime.takeover_after > runtime.heartbeat_interval * 2,
        "[store] takeover_after_seconds must be more than two heartbeats"
    );
    let limits = &mut runtime.script_limits;
    if let Some(seconds) = file.script.timeout_seconds {
        anyhow::ensure!(
            (1..=600).contains(&seconds),
            "[script] timeout_seconds is 1 to 600"
        );
        limits.timeout = Duration::from_secs(seconds);
    }
    if let Some(max) = file.script.max_operations {
        anyhow::ensure!(
            (1..=10_000).contains(&max),
            "[script] max_operations is 1 to 10000"
        );
        limits.operations = max;
    }
    if let Some(max) = file.script.max_text_bytes {
        anyhow::ensure!(
            (1..=16 << 20).contains(&max),
            "[script] max_text_bytes is 1 to 16777216"
        );
        limits.text_bytes = max;
    }
    if let Some(max) = file.script.max_images {
        anyhow::ensure!((0..=32).contains(&max), "[script] max_images is 0 to 32");
        limits.images = max;
    }

    let mut options = server::HttpOptions::default();
    if let Some(bind) = serve.and_then(|s| s.bind).or(file.serve.bind) {
        options.bind = bind;
    }
    options.token = serve
        .and_then(|s| s.token.clone())
        .or(file.serve.token.clone())
        .filter(|t| !t.is_empty());
    options.allowed_hosts = serve
        .map(|s| s.allow_host.clone())
        .filter(|v| !v.is_empty())
        .or(file.serve.allowed_hosts.clone())
        .unwrap_or_default();
    options.allowed_origins = serve
        .map(|s| s.allow_client_origin.clone())
        .filter(|v| !v.is_empty())
        .or(file.serve.allowed_client_origins.clone())
        .unwrap_or_default();
    if let Some(max) = file.serve.max_body_bytes {
        options.max_body_bytes = max;
    }
    if let Some(seconds) = file.serve.session_expiry_seconds {
        options.mcp_session_expiry = std::time::Duration::from_secs(seconds.max(1));
    }
    if let Some(per_minute) = file.serve.calls_per_minute {
        options.mcp.rate = Some(mcp::RateLimit {
            per_minute,
            burst: mcp::RateLimit::default().burst.min(per_minute.max(1)),
        });
    }
    // `GLOVEBOX_PLANNER`: the command, split on whitespace (use the file for arguments with spaces).
    let from_env = std::env::var("GLOVEBOX_PLANNER")
        .ok()
        .map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|c| !c.is_empty());
    options.mcp.planner = from_env.or(file.planner.clone()).filter(|c| !c.is_empty());
    options.mcp.model = model_choice(file.model.clone())?;
    // MCP clients are told the version `glovebox --version` prints.
    options.mcp.version = Some(env!("CARGO_PKG_VERSION").to_owned());
    // One planner for both: MCP's `computer_use` and the host API's.
    options.host = server::HostOptions {
        planner: options.mcp.planner.clone(),
        model: options.mcp.model.clone(),
    };
    let desktop = global
        .display
        .clone()
        .or(file.desktop.display.clone())
        .filter(|d| !d.trim().is_empty())
        .map(|display| desktop::DesktopConfig {
            display,
            session_bus: global
                .session_bus
                .clone()
                .or(file.desktop.session_bus.clone()),
            foreground_input: !global.no_foreground_input
                && file.desktop.foreground_input.unwrap_or(true),
        });
    let vm_file = file.vm.clone();
    let vms = vm_guests(&global.vm, &vm_file, &runtime.data_dir)?;
    Ok(Settings {
        runtime,
        browser,
        pool,
        desktop,
        vms,
        vm_file,
        serve: options,
        source,
    })
}

impl Settings {
    /// The file's `[[vm]]` guests as the adapter's configuration.
    pub fn vm_file_guests(&self) -> anyhow::Result<Vec<vm::GuestConfig>> {
        self.vm_file.iter().map(file_guest).collect()
    }
}

fn file_guest(v: &VmFile) -> anyhow::Result<vm::GuestConfig> {
    if !vm::valid_name(&v.name) {
        anyhow::bail!(
            "[[vm]] name {:?}: 1–32 of a-z, 0-9 and '-', not starting with '-'",
            v.name
        );
    }
    if !(v.endpoint.starts_with("http://") || v.endpoint.starts_with("https://")) {
        anyhow::bail!("[[vm]] {}: endpoint is http://host:port", v.name);
    }
    let token = match &v.token_file {
        Some(f) => Some(vm::Token::new(
            std::fs::read_to_string(f)
                .with_context(|| format!("[[vm]] {}: its token_file {}", v.name, f.display()))?
                .trim()
                .to_owned(),
        )),
        None => None,
    };
    Ok(vm::GuestConfig {
        name: v.name.clone(),
        endpoint: v.endpoint.clone(),
        token,
    })
}

/// The guests to drive: those `--vm` names (started on this data directory, or in the file),
/// else the file's `[[vm]]`; `None` when there are none.
fn vm_guests(
    named: &[String],
    file: &[VmFile],
    data_dir: &std::path::Path,
) -> anyhow::Result<Option<Vec<vm::GuestConfig>>> {
    let named: Vec<&str> = named
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .collect();
    if named.is_empty() {
        if file.is_empty() {
            return Ok(None);
        }
        return file
            .iter()
            .map(file_guest)
            .collect::<anyhow::Result<_>>()
            .map(Some);
    }
    let started = crate::vm::started(data_dir);
    let mut out = Vec::new();
    for name in named {
        if let Some(s) = started.iter().find(|s| s.name == name) {
            out.push(crate::vm::config_of(data_dir, s)?);
        } else if let Some(v) = file.iter().find(|v| v.name == name) {
            out.push(file_guest(v)?);
        } else {
            anyhow::bail!(
                "--vm {name}: no such guest (start it with `glovebox vm start {name}`, or add [[vm]] to the config)"
            );
        }
        if out.iter().filter(|g| g.name == name).count() > 1 {
            anyhow::bail!("--vm {name} is named twice");
        }
    }
    Ok(Some(out))
}

/// The configured model: `[model]` in the file, with `GLOVEBOX_PROVIDER`, `GLOVEBOX_MODEL` and
/// `GLOVEBOX_MODEL_BASE_URL` over it.
pub fn model_choice(
    file: Option<agent::ModelChoice>,
) -> anyhow::Result<Option<agent::ModelChoice>> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let provider = match env("GLOVEBOX_PROVIDER") {
        Some(p) => Some(agent::ProviderKind::parse(p.trim()).with_context(|| {
            format!("GLOVEBOX_PROVIDER={p}: use anthropic, openai_responses or openai_chat")
        })?),
        None => None,
    };
    let mut choice = file;
    if let Some(provider) = provider {
        let model = env("GLOVEBOX_MODEL")
            .or_else(|| choice.as_ref().map(|c| c.model.clone()))
            .unwrap_or_default();
        choice = Some(agent::ModelChoice {
            provider,
            model,
            base_url: None,
            api_key_env: None,
            computer_tool: false,
            computer_tool_version: None,
        });
    } else if let (Some(c), Some(model)) = (choice.as_mut(), env("GLOVEBOX_MODEL")) {
        c.model = model;
    }
    if let (Some(c), Some(url)) = (choice.as_mut(), env("GLOVEBOX_MODEL_BASE_URL")) {
        c.base_url = Some(url);
    }
    Ok(choice)
}

fn parse_viewport(s: &str) -> anyhow::Result<(u32, u32)> {
    let Some((w, h)) = s.split_once(['x', 'X']) else {
        bail!("--viewport takes WIDTHxHEIGHT, e.g. 1280x800")
    };
    Ok((
        w.trim().parse().context("viewport width")?,
        h.trim().parse().context("viewport height")?,
    ))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Cmd};

    fn settings(args: &[&str], file: &str) -> Settings {
        let dir = std::env::temp_dir().join(format!(
            "glovebox-config-{}-{}",
            std::process::id(),
            file.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, file).unwrap();
        let mut argv = vec!["glovebox", "--config", path.to_str().unwrap()];
        argv.extend(args);
        let cli = Cli::parse_from(argv);
        let serve = match &cli.command {
            Cmd::Serve(s) => Some(s),
            _ => None,
        };
        resolve(&cli.global, serve).unwrap()
    }

    #[test]
    fn file_values_apply_and_flags_override_them() {
        let file = r#"
            data_dir = "/tmp/gb-from-file"
            headed = true
            viewport = [1024, 700]
            trusted_origins = ["http://127.0.0.1:5173"]
            blocked_origins = ["https://ads.example"]
            artifact_retention_hours = 2
            debugger_idle_detach_ms = 1500
            upload_root = "/tmp"
            records_retention_days = 7
            records_max_operations = 500
            [script]
            timeout_seconds = 10
            max_operations = 40
            [serve]
            bind = "127.0.0.1:9000"
            calls_per_minute = 60
        "#;
        let s = settings(&["serve"], file);
        assert_eq!(s.runtime.data_dir, PathBuf::from("/tmp/gb-from-file"));
        let BrowserSource::Launch(launch) = &s.browser else {
            panic!("expected a launch")
        };
        assert!(!launch.headless);
        assert_eq!(launch.window_size, (1024, 700));
        assert_eq!(s.runtime.trust.trusted_origins.len(), 1);
        assert_eq!(s.runtime.navigation.blocked_origins.len(), 1);
        assert_eq!(s.runtime.artifact_ttl, Duration::from_secs(7200));
        assert_eq!(s.runtime.debugger_idle_detach, Duration::from_millis(1500));
        assert_eq!(s.runtime.uploads_dir.as_deref(), Some(Path::new("/tmp")));
        assert_eq!(
            (s.runtime.records_max_age, s.runtime.records_max_operations),
            (Duration::from_secs(7 * 86_400), 500)
        );
        assert_eq!(s.serve.bind.port(), 9000);
        assert_eq!(s.serve.mcp.rate.map(|r| r.per_minute), Some(60));
        assert_eq!(
            (
                s.runtime.script_limits.timeout,
                s.runtime.script_limits.operations,
                s.runtime.script_limits.text_bytes
            ),
            (Duration::from_secs(10), 40, 256 << 10)
        );
        // MCP's `initialize` reports the binary's version, not the library crate's 0.0.0.
        assert_eq!(
            s.serve.mcp.version.as_deref(),
            Some(env!("CARGO_PKG_VERSION"))
        );

        let s = settings(
            &[
                "--data-dir",
                "/tmp/gb-flag",
                "--trust",
                "http://localhost:3000",
                "--viewport",
                "800x600",
                "serve",
                "--bind",
                "127.0.0.1:9100",
            ],
            file,
        );
        assert_eq!(s.runtime.data_dir, PathBuf::from("/tmp/gb-flag"));
        assert_eq!(
            s.runtime.trust.trusted_origins[0].serialize_web(),
            "http://localhost:3000"
        );
        let BrowserSource::Launch(launch) = &s.browser else {
            panic!("expected a launch")
        };
        assert_eq!(launch.window_size, (800, 600));
        assert_eq!(s.serve.bind.port(), 9100);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let dir = std::env::temp_dir().join(format!("glovebox-config-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, "headles = true\n").unwrap();
        let err = load_file(Some(&path)).unwrap_err();
        assert!(format!("{err:#}").contains("headles"), "{err:#}");
    }
}
