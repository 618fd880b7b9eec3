//! The subcommands: each parses nothing itself and calls into the library crates.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use cdp::domains::{page, runtime, target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::browser::{self, BrowserHandle};
use crate::cli::{Cli, Cmd, Global, ObserveArgs};

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Cmd::Doctor => doctor(&cli.global).await,
        Cmd::Observe(args) => observe(&cli.global, args).await,
        Cmd::Launch => launch(&cli.global).await,
        Cmd::Bench(args) => crate::bench::run(&cli.global, args).await,
    }
}

async fn doctor(global: &Global) -> anyhow::Result<ExitCode> {
    let data_dir = browser::data_dir(global);
    println!("glovebox {}", env!("CARGO_PKG_VERSION"));
    let writable = std::fs::create_dir_all(&data_dir).is_ok()
        && tempfile_probe(&data_dir).is_ok();
    println!("  data dir   {} ({})", data_dir.display(), if writable { "writable" } else { "NOT writable" });
    if !writable {
        println!("fix: choose a writable directory with --data-dir or GLOVEBOX_DATA_DIR");
        return Ok(ExitCode::FAILURE);
    }
    if let Some(remote) = &global.browser_endpoint {
        println!("  browser    remote endpoint {remote}");
    } else {
        match cdp::launch::find_chromium(global.chromium.as_deref()) {
            Ok(path) => println!("  chromium   {}", path.display()),
            Err(e) => {
                println!("  chromium   not found");
                println!("fix: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
        let options = browser::launch_options(global);
        println!(
            "  mode       {}, sandbox {}",
            if options.headless { "headless" } else { "headed" },
            if options.sandbox { "on" } else { "off (running as root; Chromium's sandbox needs an unprivileged user)" }
        );
    }
    let started = Instant::now();
    let handle = match browser::open(global).await {
        Ok(handle) => handle,
        Err(e) => {
            println!("  launch     FAILED");
            println!("fix: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    println!("  version    {} (CDP {})", handle.version.product, handle.version.protocol_version);
    println!("  connect    {} ms from launch to a connected browser", started.elapsed().as_millis());
    let tab = handle.conn.browser().create_page("about:blank", None).await?;
    let two = tab.call(runtime::Evaluate::value("1+1")).await?.result.value;
    tab.close_target().await?;
    if two != Some(serde_json::json!(2)) {
        println!("  page       evaluation returned {two:?}, expected 2");
        return Ok(ExitCode::FAILURE);
    }
    println!("  page       about:blank opened and evaluated");
    println!("ok: Glovebox can drive this browser");
    Ok(ExitCode::SUCCESS)
}

fn tempfile_probe(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(probe)
}

/// The interim `observe`: title and URL of a loaded page. The full observation comes with the browser crate.
async fn observe(global: &Global, args: ObserveArgs) -> anyhow::Result<ExitCode> {
    let demo = if args.demo { Some(DemoServer::start().await?) } else { None };
    let url = match (&demo, args.url) {
        (Some(server), _) => server.url.clone(),
        (None, Some(url)) => url,
        (None, None) => bail!("give a URL or --demo"),
    };
    if !(url.starts_with("http://") || url.starts_with("https://") || url == "about:blank") {
        bail!("refusing to open {url:?}: only http://, https:// and about:blank can be observed");
    }
    let handle = browser::open(global).await?;
    let (title, href) = load_and_read(&handle, &url, Duration::from_secs(args.timeout)).await?;
    println!("title: {title}");
    println!("url: {href}");
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` in a tab of its own browser context, waits for `load`, reads title and URL, and
/// disposes of the context again (so a remote browser is left as it was found).
pub async fn load_and_read(handle: &BrowserHandle, url: &str, deadline: Duration) -> anyhow::Result<(String, String)> {
    let browser = handle.conn.browser();
    let context = browser.call(target::CreateBrowserContext { dispose_on_detach: Some(true) }).await?.browser_context_id;
    let result = async {
        let tab = browser.create_page("about:blank", Some(context.clone())).await?;
        let mut loads = tab.subscribe(&["Page.loadEventFired"]);
        tab.call(page::Enable {}).await?;
        let navigated = tab.call(page::Navigate { url: url.to_owned(), frame_id: None }).await?;
        if let Some(error) = navigated.error_text {
            bail!("cannot load {url}: {error}");
        }
        if url != "about:blank" {
            tokio::time::timeout(deadline, loads.recv())
                .await
                .with_context(|| format!("{url} did not finish loading within {deadline:?}"))?;
        }
        let read = tab.call(runtime::Evaluate::value("[document.title, location.href]")).await?;
        let value = read.result.value.unwrap_or_default();
        let text = |i: usize| value.get(i).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        Ok((text(0), text(1)))
    }
    .await;
    let _ = browser.call(target::DisposeBrowserContext { browser_context_id: context }).await;
    result
}

async fn launch(global: &Global) -> anyhow::Result<ExitCode> {
    if global.browser_endpoint.is_some() {
        bail!("`launch` starts a local browser; drop --browser-endpoint");
    }
    let mut handle = browser::open(global).await?;
    let Some(local) = handle.local.as_mut() else { bail!("no local browser") };
    println!("endpoint: {}", local.ws_url());
    println!("pid: {}", local.pid());
    println!("profile: {}", local.profile_dir().display());
    println!("version: {}", handle.version.product);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => eprintln!("glovebox: stopping the browser"),
        _ = terminate.recv() => eprintln!("glovebox: stopping the browser"),
        _ = handle.conn.closed() => {
            eprintln!("glovebox: the browser went away");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A one-page HTTP server on loopback for `observe --demo` (and `make run` until `serve` exists).
struct DemoServer {
    url: String,
}

const DEMO_PAGE: &str = "<!doctype html><html><head><meta charset=utf-8><title>Glovebox demo</title></head>\
<body><main><h1>Glovebox demo page</h1><p>Served on loopback by <code>glovebox observe --demo</code>.</p>\
<form><label>Name <input name=name></label> <button type=button>Greet</button></form></main></body></html>";

impl DemoServer {
    async fn start() -> anyhow::Result<DemoServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("cannot bind a loopback port")?;
        let url = format!("http://{}/", listener.local_addr()?);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DEMO_PAGE}",
                        DEMO_PAGE.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        Ok(DemoServer { url })
    }
}
