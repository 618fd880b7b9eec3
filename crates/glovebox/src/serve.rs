//! `serve` (MCP over HTTP), `mcp` (MCP over stdio) and `approve` (a person's terminal client of the
//! approvals endpoint). Each running server writes `<data-dir>/approvals/<pid>.json` (mode 0600)
//! with its approvals URL and person token so that `glovebox approve` can find it.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use runtime::Runtime;
use serde_json::{Value, json};

use crate::cli::{ApproveArgs, Global, ServeArgs, TurnEndArgs, UserTabArgs};
use crate::config;

fn discovery_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("approvals")
}

/// Removes the discovery file when the server stops.
struct Discovery(PathBuf);

impl Drop for Discovery {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether a process with this pid exists (a discovery file of a dead server is stale).
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The pid a discovery file names (`<pid>.json`).
fn discovery_pid(path: &Path) -> Option<u32> {
    path.extension().filter(|e| *e == "json")?;
    path.file_stem()?.to_str()?.parse().ok()
}

/// Removes the discovery files of servers that died without removing theirs (SIGKILL, a
/// crash): each holds a person token for a URL nobody serves any more.
fn sweep_discovery(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if let Some(pid) = discovery_pid(&path)
            && pid != std::process::id()
            && !alive(pid)
            && std::fs::remove_file(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// What the start found of earlier servers that ended without cleaning up, for the person.
fn reconciled_line(runtime: &Runtime) -> Option<String> {
    let r = runtime.reconciliation();
    (!r.is_empty()).then(|| {
        format!(
            "reconciled {} earlier server(s) that ended without cleaning up: {} session(s) abandoned, {} tab(s) closed, {} given back, {} kept for the person, {} approval(s) abandoned, {} action(s) in flight recorded unknown (not replayed), {} run(s) abandoned ({} ms)",
            r.instances, r.sessions, r.closed, r.released, r.kept, r.approvals, r.unknown_operations, r.abandoned_runs, r.took_ms
        )
    })
}

fn write_discovery(data_dir: &Path, person: &mcp::PersonChannel) -> anyhow::Result<Discovery> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = discovery_dir(data_dir);
    std::fs::create_dir_all(&dir)?;
    let swept = sweep_discovery(&dir);
    if swept > 0 {
        tracing::info!(
            swept,
            "removed the approvals discovery files of servers that are gone"
        );
    }
    let path = dir.join(format!("{}.json", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(
        json!({"url": person.base_url, "token": person.token, "pid": std::process::id()})
            .to_string()
            .as_bytes(),
    )?;
    Ok(Discovery(path))
}

/// The data directory's MCP token (`<data-dir>/mcp-token`): read if it is there, else created
/// once (mode 0600, never through a symbolic link), so clients configured once keep working
/// across restarts.
pub(crate) fn data_dir_token(data_dir: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = data_dir.join("mcp-token");
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path);
    match opened {
        Ok(mut file) => {
            let mut token = String::new();
            file.read_to_string(&mut token)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let token = token.trim();
            if token.len() < 32 || !token.chars().all(|c| c.is_ascii_alphanumeric()) {
                bail!(
                    "{} does not hold a token (32 or more letters and digits); remove it and a new one is made",
                    path.display()
                );
            }
            // Only its owner reads it, whatever made it.
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            Ok(token.to_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = mcp::random_token(24);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            file.write_all(token.as_bytes())?;
            Ok(token)
        }
        Err(e) => Err(e).with_context(|| format!("cannot open {}", path.display())),
    }
}

/// SIGTERM and SIGINT, listened for from the start, so a signal that arrives while the server
/// starts or just after it prints where it listens still runs the orderly shutdown.
pub(crate) struct StopSignal {
    terminate: Option<tokio::signal::unix::Signal>,
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl StopSignal {
    pub(crate) fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        StopSignal {
            terminate: signal(SignalKind::terminate()).ok(),
            interrupt: signal(SignalKind::interrupt()).ok(),
        }
    }

    pub(crate) async fn recv(&mut self) {
        async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = one(&mut self.terminate) => {}
            _ = one(&mut self.interrupt) => {}
        }
    }
}

/// How long a stopping server lets tool calls in flight finish before it stops their runs.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// `glovebox serve`
pub async fn serve(global: &Global, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let mut stop = StopSignal::install();
    let settings = config::resolve(global, Some(args))?;
    let data_dir = settings.runtime.data_dir.clone();
    let mut options = settings.serve.clone();
    if args.no_token {
        if !options.bind.ip().is_loopback() {
            bail!(
                "--no-token is for loopback addresses only; {} needs a token",
                options.bind
            );
        }
        options.token = None;
    }
    let runtime = start_runtime(&settings).await?;
    if options.token.is_none() && !args.no_token {
        options.token = Some(data_dir_token(&data_dir)?);
    }
    // MCP, the person channel and console, the live view and the host API: one listener.
    let server = server::serve(runtime.clone(), options.clone()).await?;
    let _discovery = write_discovery(&data_dir, &server.person)?;
    let url = server.mcp_url();
    let mut headers = json!({});
    let mut claude_header = String::new();
    if let Some(token) = &options.token {
        headers = json!({"Authorization": format!("Bearer {token}")});
        claude_header = format!(" --header \"Authorization: Bearer {token}\"");
    }
    let client =
        json!({"mcpServers": {"glovebox": {"type": "http", "url": url, "headers": headers}}});
    out!("Glovebox MCP listening on {url}");
    if options.token.is_none() {
        out!("  without a token (--no-token): any local process can call it");
    }
    if let Some(source) = &settings.source {
        out!("config: {}", source.display());
    }
    if let Some(line) = reconciled_line(&runtime) {
        out!("{line}");
    }
    out!();
    out!(
        "Paste into your MCP client's config (Claude Code: claude mcp add --transport http glovebox {url}{claude_header}):"
    );
    out!("{}", serde_json::to_string_pretty(&client)?);
    out!();
    out!(
        "Host apps: POST {}/api/host/windows (person token) for a renderer nonce, then ws://{}{}",
        server.person.base_url,
        server.local_addr,
        server::RENDERER_PATH
    );
    // The person token (new at every start) goes to a person's terminal only: a process that
    // started this server through a pipe (a model's shell, a supervisor's log) never reads it.
    if std::io::stdout().is_terminal() {
        out!(
            "Console (for you, never for the model): {}/#token={}",
            server.person.base_url,
            server.person.token
        );
        out!("Approvals (for you, never for the model): glovebox approve <id>");
        out!(
            "  or POST {}/api/approvals/<id> with Authorization: Bearer {}",
            server.person.base_url,
            server.person.token
        );
    } else {
        out!(
            "Console and approvals (for you, never for the model): `glovebox console` and `glovebox approve` in a terminal (the person token is printed only to a terminal)"
        );
    }
    out!("Stop with Ctrl-C.");
    std::io::stdout().flush()?;
    stop.recv().await;
    eprintln!("glovebox: stopping");
    server.shutdown().await?;
    // Plugin disposal: calls in flight finish (bounded), every session's tabs get the disposal
    // cleanup, then the browser connection stops.
    runtime.shutdown(SHUTDOWN_WAIT).await;
    Ok(ExitCode::SUCCESS)
}

/// The runtime a server (`serve`, `mcp`) runs on, started on its settings; the action
/// validators compile meanwhile on a thread of their own, off the first call's path.
async fn start_runtime(settings: &config::Settings) -> anyhow::Result<Runtime> {
    std::thread::spawn(protocol::compile_validators);
    Runtime::start(settings.runtime.clone(), settings.server_adapter())
        .await
        .context("cannot start the runtime (try `glovebox doctor`)")
}

/// `glovebox mcp`: stdio. The approvals endpoint listens on an ephemeral loopback port; its
/// MCP side is locked with a random token nobody is given.
pub async fn stdio(global: &Global) -> anyhow::Result<ExitCode> {
    let mut stop = StopSignal::install();
    let settings = config::resolve(global, None)?;
    let data_dir = settings.runtime.data_dir.clone();
    let runtime = start_runtime(&settings).await?;
    let person_side = server::HttpOptions {
        bind: "127.0.0.1:0".parse()?,
        token: Some(mcp::random_token(24)),
        ..settings.serve.clone()
    };
    let person = server::serve(runtime.clone(), person_side).await?;
    let _discovery = write_discovery(&data_dir, &person.person)?;
    tracing::info!(url = %person.person.base_url, "approvals endpoint for a person (see `glovebox approve`)");
    if let Some(line) = reconciled_line(&runtime) {
        tracing::info!("{line}");
    }
    let options = mcp::McpOptions {
        person: Some(person.person.clone()),
        ..settings.serve.mcp.clone()
    };
    tokio::select! {
        result = mcp::serve_stdio(runtime.clone(), options) => result?,
        _ = stop.recv() => {}
    }
    person.shutdown().await?;
    runtime.shutdown(SHUTDOWN_WAIT).await;
    Ok(ExitCode::SUCCESS)
}

/// One HTTP/1.1 request to a loopback endpoint (the person channel only listens there).
fn request(
    url: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let authority = url
        .strip_prefix("http://")
        .context("the approvals URL is not http://")?;
    let mut stream =
        std::net::TcpStream::connect(authority).with_context(|| format!("cannot reach {url}"))?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

/// The person channels of the running `serve`/`mcp` processes: (URL, person token). Only
/// servers that use the same data directory are found (each writes its discovery file there).
fn running_servers(global: &Global) -> anyhow::Result<Vec<(String, String)>> {
    let settings = config::resolve(global, None)?;
    let dir = discovery_dir(&settings.runtime.data_dir);
    let mut servers = Vec::new();
    let entries = std::fs::read_dir(&dir).with_context(|| {
        format!(
            "no running Glovebox server uses the data directory {} ({} is missing); a server started with another --data-dir (or GLOVEBOX_DATA_DIR) is found only with the same one",
            settings.runtime.data_dir.display(),
            dir.display()
        )
    })?;
    for entry in entries {
        let path = entry?.path();
        if discovery_pid(&path).is_some_and(|pid| !alive(pid)) {
            continue; // a server that died without removing its file
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(v) = serde_json::from_str::<Value>(&text)
            && let (Some(url), Some(token)) = (v["url"].as_str(), v["token"].as_str())
        {
            servers.push((url.to_owned(), token.to_owned()));
        }
    }
    Ok(servers)
}

/// `glovebox turn-end [--session ID | --all] [NOTIFICATION]`: the turn end of a client hook.
///
/// Without `--session` it ends the turns of the client that ran it, and only those: the
/// sessions (on every server of the data directory) whose client process is the hook's nearest
/// ancestor that has any — Claude Code and Codex run their hooks as their own children, and a
/// stdio server's client is its parent, an HTTP session's the process at the other end of its
/// loopback connection. Another client's turns are never ended by a hook; `--all` is a person's
/// explicit choice.
pub fn turn_end(global: &Global, args: &TurnEndArgs) -> anyhow::Result<ExitCode> {
    if let Some(note) = &args.notification
        && let Ok(v) = serde_json::from_str::<Value>(note)
        && let Some(kind) = v.get("type").and_then(Value::as_str)
        && kind != "agent-turn-complete"
    {
        return Ok(ExitCode::SUCCESS); // another notification: not a turn's end
    }
    // No data directory of servers, or none running: nothing to end (a hook must not fail).
    let servers = running_servers(global).unwrap_or_default();
    let mut targets: Vec<(&str, &str, Value)> = Vec::new();
    if let Some(session) = &args.session {
        targets.extend(
            servers
                .iter()
                .map(|(url, token)| (url.as_str(), token.as_str(), json!({"session": session}))),
        );
    } else if args.all {
        targets.extend(
            servers
                .iter()
                .map(|(url, token)| (url.as_str(), token.as_str(), json!({}))),
        );
    } else if !servers.is_empty() {
        let mut sessions = Vec::new();
        for (url, token) in &servers {
            let (status, reply) = request(url, token, "GET", "/api/sessions", None)?;
            if status != 200 {
                bail!("{url} refused the session list ({status}): {reply}");
            }
            for s in reply["sessions"].as_array().into_iter().flatten() {
                if s["host"] == json!(true) {
                    continue; // the host API ends its chat sessions' turns itself
                }
                if let (Some(id), Some(pid)) = (s["session"].as_str(), s["client_pid"].as_u64()) {
                    sessions.push((url.as_str(), token.as_str(), id.to_owned(), pid));
                }
            }
        }
        let ancestry = ancestors(std::os::unix::process::parent_id());
        let nearest = ancestry
            .iter()
            .find(|pid| sessions.iter().any(|s| s.3 == u64::from(**pid)));
        match nearest {
            Some(client) => targets.extend(
                sessions
                    .into_iter()
                    .filter(|s| s.3 == u64::from(*client))
                    .map(|(url, token, id, _)| (url, token, json!({"session": id}))),
            ),
            None => {
                eprintln!(
                    "glovebox turn-end: no Glovebox session belongs to the client that ran this hook (processes {ancestry:?}); nothing ended. Name one with --session, or end every client's turn with --all"
                );
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    let mut failed = false;
    let mut found = args.session.is_none();
    for (url, token, body) in &targets {
        let (status, reply) = request(url, token, "POST", "/api/turn-end", Some(body))?;
        match status {
            200 => {
                found = true;
                for t in reply["ended"].as_array().into_iter().flatten() {
                    let r = &t["report"];
                    let count = |k: &str| r[k].as_array().map_or(0, Vec::len);
                    out!(
                        "{} {}: {} closed, {} released, {} kept{}",
                        t["session"].as_str().unwrap_or(""),
                        t["turn"].as_str().unwrap_or(""),
                        count("closed"),
                        count("released"),
                        count("kept"),
                        if r["ok"] == json!(true) {
                            String::new()
                        } else {
                            format!(", {} FAILED (kept with a recovery record)", count("failed"))
                        }
                    );
                    failed |= r["ok"] != json!(true);
                }
            }
            404 if body.get("session").is_some() => {}
            _ => bail!("{url} refused the turn end ({status}): {reply}"),
        }
    }
    if !found {
        bail!(
            "no running server has the session {}",
            args.session.as_deref().unwrap_or_default()
        );
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `pid` and its ancestors, nearest first, up to (not including) init; read from
/// `/proc/<pid>/stat` (the field after the parenthesised command name is the state, then the
/// parent's pid).
fn ancestors(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut at = pid;
    while at > 1 && chain.len() < 128 && !chain.contains(&at) {
        chain.push(at);
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{at}/stat")) else {
            break;
        };
        let Some(parent) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        else {
            break;
        };
        at = parent;
    }
    chain
}

/// `glovebox user-tab [URL]`: a person's tab for an agent to claim, or the list of them.
pub fn user_tab(global: &Global, args: &UserTabArgs) -> anyhow::Result<ExitCode> {
    if (args.url.is_some() || args.offer.is_some()) && !std::io::stdin().is_terminal() {
        bail!(
            "`glovebox user-tab` offers a tab as a person's and needs a terminal; a model's tool cannot use it"
        );
    }
    let servers: Vec<_> = running_servers(global)?
        .into_iter()
        .filter(|(url, token)| {
            request(url, token, "GET", "/api/user-tabs", None).is_ok_and(|(s, _)| s == 200)
        })
        .collect();
    if let Some(tab) = &args.offer {
        for (server, token) in &servers {
            let (status, body) = request(
                server,
                token,
                "POST",
                &format!("/api/tabs/{tab}/offer"),
                Some(&json!({})),
            )?;
            if status == 200 {
                out!("offered to sessions: {tab}");
                return Ok(ExitCode::SUCCESS);
            }
            if status != 404 {
                bail!("the server refused ({status}): {body}");
            }
        }
        bail!("no running server knows the tab {tab} (see the console's list of tabs)");
    }
    let Some(url) = &args.url else {
        for (server, token) in &servers {
            let (_, body) = request(server, token, "GET", "/api/user-tabs", None)?;
            for t in body["user_tabs"].as_array().into_iter().flatten() {
                out!(
                    "{}  {}  {}",
                    t["tab"].as_str().unwrap_or(""),
                    t["url"].as_str().unwrap_or(""),
                    t["title"].as_str().unwrap_or("")
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    let [(server, token)] = servers.as_slice() else {
        bail!(
            "{} Glovebox servers are running; open the tab through the one you mean (POST <its URL>/api/user-tabs)",
            servers.len()
        );
    };
    let (status, body) = request(
        server,
        token,
        "POST",
        "/api/user-tabs",
        Some(&json!({"url": url})),
    )?;
    if status != 200 {
        bail!("the server refused ({status}): {body}");
    }
    out!("{}", body["tab"].as_str().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// `glovebox console`: the console links of the running servers, for a person's terminal.
pub fn console(global: &Global) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        bail!(
            "`glovebox console` prints the person token and writes only to a terminal; a model's tool cannot read it"
        );
    }
    let servers = running_servers(global)?;
    if servers.is_empty() {
        bail!("no running Glovebox server uses this data directory");
    }
    for (url, token) in servers {
        out!("{url}/#token={token}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `glovebox approve [ID] [--for-task|--deny]`
pub async fn approve(global: &Global, args: &ApproveArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "`glovebox approve` answers for a person and needs a terminal; a model's tool cannot use it"
        );
    }
    let servers = running_servers(global)?;
    let mut pending = Vec::new();
    for (url, token) in &servers {
        if let Ok((200, body)) = request(url, token, "GET", "/api/approvals", None) {
            for p in body["pending"].as_array().into_iter().flatten() {
                pending.push((url.clone(), token.clone(), p.clone()));
            }
        }
    }
    let Some(id) = &args.id else {
        if pending.is_empty() {
            out!(
                "nothing is waiting for approval on the {} server(s) using this data directory (servers started with another --data-dir are not seen)",
                servers.len()
            );
        }
        for (_, _, p) in &pending {
            out!(
                "{}  {} {} on {} ({}: {})",
                p["approval_id"].as_str().unwrap_or(""),
                p["action"].as_str().unwrap_or(""),
                p["target"],
                p["origin"].as_str().unwrap_or(""),
                p["tier"].as_str().unwrap_or(""),
                p["reason"].as_str().unwrap_or("")
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let Some((url, token, p)) = pending
        .iter()
        .find(|(_, _, p)| p["approval_id"].as_str() == Some(id))
    else {
        bail!("no pending approval {id} (run `glovebox approve` to list them)");
    };
    let decision = if args.deny {
        "deny"
    } else if args.for_task {
        "approve_for_task"
    } else {
        "approve_once"
    };
    // What exactly is sent: the text typed into a field that is not secret, the files uploaded
    // (JSON-quoted, as the target is: page and model text never reach the terminal raw).
    let mut what = String::new();
    if let Some(text) = p.get("text").filter(|t| t.is_string()) {
        what.push_str(&format!(" typing {text}"));
    }
    if let Some(files) = p
        .get("files")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
    {
        what.push_str(&format!(" uploading {}", Value::Array(files.clone())));
    }
    eprint!(
        "{decision}: {} {}{what} on {} ({})? [y/N] ",
        p["action"].as_str().unwrap_or(""),
        p["target"],
        p["origin"].as_str().unwrap_or(""),
        p["tier"].as_str().unwrap_or("")
    );
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        out!("left pending");
        return Ok(ExitCode::FAILURE);
    }
    let (status, body) = request(
        url,
        token,
        "POST",
        &format!("/api/approvals/{id}"),
        Some(&json!({"decision": decision})),
    )?;
    if status != 200 {
        bail!("the server refused ({status}): {body}");
    }
    out!("{decision}: {id}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::data_dir_token;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_data_directorys_token_is_made_once_for_its_owner_alone() {
        let dir = std::env::temp_dir().join(format!("glovebox-token-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let token = data_dir_token(&dir).unwrap();
        assert!(token.len() >= 32, "{token}");
        let path = dir.join("mcp-token");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            data_dir_token(&dir).unwrap(),
            token,
            "the same at the next start"
        );
        // Widened by someone: read, and narrowed again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(data_dir_token(&dir).unwrap(), token);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Not a token: refused, not used.
        std::fs::write(&path, "short").unwrap();
        assert!(data_dir_token(&dir).is_err());
        // A link put in its place is never followed.
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.join("elsewhere");
        std::fs::write(&elsewhere, "a".repeat(40)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(data_dir_token(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
