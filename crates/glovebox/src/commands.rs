//! The subcommands: each parses nothing itself and calls into the library crates.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use protocol::ImageMime;
use runtime::ObserveOptions;

use crate::browser;
use crate::cli::{Cli, Cmd, Global, ObserveArgs};
use crate::pages::{DEMO_PAGE, LoopbackPages};

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Cmd::Doctor => doctor(&cli.global).await,
        Cmd::Observe(args) => observe(&cli.global, args).await,
        Cmd::Launch => launch(&cli.global).await,
        Cmd::Bench(args) => crate::bench::run(&cli.global, args).await,
        Cmd::Serve(args) => crate::serve::serve(&cli.global, &args).await,
        Cmd::Mcp => crate::serve::stdio(&cli.global).await,
        Cmd::Approve(args) => crate::serve::approve(&cli.global, &args).await,
        Cmd::Console => crate::serve::console(&cli.global),
        Cmd::UserTab(args) => crate::serve::user_tab(&cli.global, &args),
        Cmd::TurnEnd(args) => crate::serve::turn_end(&cli.global, &args),
        Cmd::Run(args) => crate::task::run(&cli.global, &args).await,
        Cmd::Eval(args) => crate::eval::eval(&cli.global, &args).await,
        Cmd::Log(args) => crate::log::run(&cli.global, &args),
        Cmd::Demo(args) => {
            let answer = args.answer.as_deref().map(|a| match a {
                "once" => ::runtime::ApprovalDecision::ApproveOnce,
                "task" => ::runtime::ApprovalDecision::ApproveForTask,
                _ => ::runtime::ApprovalDecision::Deny,
            });
            crate::demo::run(&cli.global, answer).await
        }
        Cmd::Desktop(args) => crate::desktop::run(&args).await,
        Cmd::Vm(args) => crate::vm::run(&cli.global, &args).await,
    }
}

/// The pool's lines: its limits, and each browser reached now (a local one is launched and
/// stopped). `false` when none can be reached.
async fn pool_doctor(pool: &crate::config::PoolSettings) -> bool {
    use surface::SurfaceAdapter as _;
    out!(
        "  pool       {} browsers, {} sessions each, {} may wait up to {} s",
        pool.members.len(),
        pool.limits.sessions_per_browser,
        pool.limits.queue,
        pool.limits.wait.as_secs()
    );
    let mut reachable = 0;
    for (m, source) in pool.members.iter().enumerate() {
        let what = match source {
            ::browser::BrowserSource::Launch(_) => "local".to_owned(),
            ::browser::BrowserSource::Endpoint(e) => e.clone(),
        };
        let member = ::browser::Chromium::new(source.clone());
        let reached = tokio::time::timeout(Duration::from_secs(15), member.connect()).await;
        member.shutdown();
        match reached {
            Ok(Ok(())) => {
                reachable += 1;
                out!("    m{m}       {what}: reachable");
            }
            Ok(Err(e)) => out!("    m{m}       {what}: NOT reachable ({e})"),
            Err(_) => out!("    m{m}       {what}: NOT reachable (no answer within 15 s)"),
        }
    }
    if reachable == 0 {
        out!("fix: start at least one browser of the pool (or check its endpoints)");
    }
    reachable > 0
}

async fn doctor(global: &Global) -> anyhow::Result<ExitCode> {
    let data_dir = browser::data_dir(global);
    out!("glovebox {}", env!("CARGO_PKG_VERSION"));
    let writable = std::fs::create_dir_all(&data_dir).is_ok() && tempfile_probe(&data_dir).is_ok();
    out!(
        "  data dir   {} ({})",
        data_dir.display(),
        if writable { "writable" } else { "NOT writable" }
    );
    if !writable {
        out!("fix: choose a writable directory with --data-dir or GLOVEBOX_DATA_DIR");
        return Ok(ExitCode::FAILURE);
    }
    match crate::config::resolve(global, None) {
        Ok(settings) => match &settings.runtime.uploads_dir {
            Some(dir) => out!(
                "  uploads    from {} (files named relative to it; each upload asks a person; symbolic links refused; hidden files {})",
                dir.display(),
                if settings.runtime.uploads_hidden {
                    "allowed (--upload-hidden)"
                } else {
                    "refused"
                }
            ),
            None => out!(
                "  uploads    off (set --upload-root or GLOVEBOX_UPLOAD_ROOT to allow uploads from one directory)"
            ),
        },
        Err(e) => {
            out!("  config     {}", crate::reason(&e));
            return Ok(ExitCode::FAILURE);
        }
    }
    if let Ok(settings) = crate::config::resolve(global, None)
        && let Some(url) = &settings.runtime.store_url
    {
        let url = url.0.clone();
        // Connecting blocks (the store's calls are synchronous).
        let reached = tokio::task::spawn_blocking(move || store::PgStore::connect(&url))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        match reached {
            Ok(store) => {
                let open = store::Store::open_instances(&store)
                    .map(|v| v.len())
                    .unwrap_or(0);
                out!(
                    "  store      PostgreSQL reachable, schema up to date ({open} instance(s) running on it; heartbeat every {} ms, takeover after {} s)",
                    settings.runtime.heartbeat_interval.as_millis(),
                    settings.runtime.takeover_after.as_secs()
                );
            }
            Err(e) => {
                out!("  store      PostgreSQL NOT reachable: {e}");
                out!(
                    "fix: check --store / GLOVEBOX_STORE / [store] url, and that the database runs"
                );
                return Ok(ExitCode::FAILURE);
            }
        }
    } else {
        out!("  store      SQLite in the data directory");
    }
    // gui_exec runs only in its sandbox; without one it is not offered (nothing else changes).
    match script::Sandbox::probe().await {
        Ok(sandbox) => out!("  gui_exec   sandboxed: {}", sandbox.description()),
        Err(e) => out!("  gui_exec   unavailable: {e}"),
    }
    if let Ok(settings) = crate::config::resolve(global, None)
        && let Some(guests) = &settings.vms
    {
        let ok = crate::vm::doctor(guests).await;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if let Ok(settings) = crate::config::resolve(global, None)
        && let Some(desktop) = &settings.desktop
    {
        let ok = crate::desktop::doctor(global, desktop).await?;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if let Ok(settings) = crate::config::resolve(global, None)
        && let Some(pool) = &settings.pool
        && !pool_doctor(pool).await
    {
        return Ok(ExitCode::FAILURE);
    }
    if let Some(remote) = &global.browser_endpoint {
        out!("  browser    remote endpoint {remote}");
        out!(
            "  warning    a shared browser's windows opened by a tab's script are not held back until the boundary covers them (a browser Glovebox launches gates them), and whoever reaches that endpoint controls the browser"
        );
    } else {
        // The binary the launch below uses: the flag, the environment or the config file (a
        // config that does not resolve has already ended doctor above).
        let named = crate::browser::launch_options(global)
            .ok()
            .and_then(|options| options.executable);
        match ::browser::probe::find_chromium(named.as_deref()) {
            Ok(path) if ::browser::probe::is_headless_shell(&path) => out!(
                "  chromium   {} (the headless shell: site isolation turned on, no headed mode)",
                path.display()
            ),
            Ok(path) => out!("  chromium   {}", path.display()),
            Err(e) => {
                out!("  chromium   not found");
                out!("fix: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
        let options = browser::launch_options(global)?;
        out!("  devtools   over a pipe: no port another local process could attach to");
        out!(
            "  mode       {}, sandbox {}",
            if options.headless {
                "headless"
            } else {
                "headed"
            },
            if options.sandbox {
                "on"
            } else {
                "off (running as root; Chromium's sandbox needs an unprivileged user)"
            }
        );
    }
    let started = Instant::now();
    let handle = match browser::open(global).await {
        Ok(handle) => handle,
        Err(e) => {
            out!("  launch     FAILED");
            out!("fix: {}", crate::reason(&e));
            return Ok(ExitCode::FAILURE);
        }
    };
    out!(
        "  version    {} (CDP {})",
        handle.version.product,
        handle.version.protocol
    );
    out!(
        "  connect    {} ms from launch to a connected browser",
        started.elapsed().as_millis()
    );
    let tab = handle.chromium.scratch_page().await?;
    let two = tab.eval("1+1").await?;
    tab.close().await;
    if two != Some(serde_json::json!(2)) {
        out!("  page       evaluation returned {two:?}, expected 2");
        return Ok(ExitCode::FAILURE);
    }
    out!("  page       about:blank opened and evaluated");
    out!("ok: Glovebox can drive this browser");
    Ok(ExitCode::SUCCESS)
}

fn tempfile_probe(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(probe)
}

/// `observe`: open a page in a fresh tab of its own browser context and print what a model would see.
/// `glovebox observe URL`: one session of the runtime, as every transport uses it — the configured
/// browser, the configured allowed and blocked origins, the same observation.
async fn observe(global: &Global, args: ObserveArgs) -> anyhow::Result<ExitCode> {
    let demo = if args.demo {
        Some(LoopbackPages::serve([("/".to_owned(), DEMO_PAGE.to_owned())].into()).await?)
    } else {
        None
    };
    let url = match (&demo, args.url) {
        (Some(pages), _) => pages.url("/"),
        (None, Some(url)) => url,
        (None, None) => bail!("give a URL or --demo"),
    };
    let settings = crate::config::resolve(global, None)?;
    // The runtime's own rule, with its configured lists, checked before a browser starts.
    if url != "about:blank"
        && let Err(e) = policy::check_navigation(&url, &settings.runtime.navigation)
    {
        bail!("refusing to open {}: {e}", policy::redact_url(&url));
    }
    let rt = ::runtime::Runtime::start(settings.runtime.clone(), settings.adapter())
        .await
        .context("cannot start the runtime (try `glovebox doctor`)")?;
    let result = async {
        let session = rt.create_session().await?;
        // The person typed this URL on their own command line: that is their approval of opening
        // it (the origin lists still apply, and nothing else is approved).
        let opened = match rt.open_tab(&session, &url, Duration::ZERO).await {
            Err(::runtime::RuntimeError::NeedsApproval { approval_id, .. }) => {
                rt.resolve_approval(&approval_id, ::runtime::ApprovalDecision::ApproveOnce)?;
                rt.open_tab(&session, &url, Duration::ZERO).await
            }
            other => other,
        };
        opened.with_context(|| format!("cannot open {}", policy::redact_url(&url)))?;
        if args.preview {
            let context = rt.surface_context(&session, "turn_cli", 1).await?;
            let preview = context
                .surfaces()
                .first()
                .and_then(|s| s.preview())
                .context("no preview came back")?;
            out!("{}", serde_json::to_string_pretty(preview)?);
            return Ok(());
        }
        let options = ObserveOptions {
            screenshot: args.screenshot.as_ref().map(|_| ImageMime::Png),
            deadline: Duration::from_secs(args.timeout),
            near: args
                .near
                .as_deref()
                .map(protocol::NearText::new)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--near: {e}"))?,
            ..ObserveOptions::default()
        };
        let mut observation = rt.observe(&session, None, &options).await?;
        if let Some(path) = &args.screenshot {
            let shot = observation
                .take_screenshot()
                .context("no screenshot came back")?;
            let bytes = ::runtime::decode_base64(&shot.data)
                .context("the screenshot is not valid base64")?;
            std::fs::write(path, bytes)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        if args.json {
            out!("{}", serde_json::to_string_pretty(&observation)?);
        } else {
            out!("title: {}", observation.title());
            out!("url: {}", observation.url());
            out!(
                "frame: {}  elements: {}{}",
                observation.frame_id().as_str(),
                observation.interactive_elements().len(),
                if observation.aria_truncated() {
                    "  (snapshot cut to fit)"
                } else {
                    ""
                }
            );
            out_part!("{}", observation.aria_snapshot());
        }
        anyhow::Ok(())
    }
    .await;
    rt.shutdown(Duration::from_secs(2)).await;
    result?;
    Ok(ExitCode::SUCCESS)
}

async fn launch(global: &Global) -> anyhow::Result<ExitCode> {
    if global.browser_endpoint.is_some() {
        bail!("`launch` starts a local browser; drop --browser-endpoint");
    }
    // Handlers first: a signal that arrives while the browser starts, or just after the endpoint
    // is printed, still stops it cleanly instead of killing glovebox with the browser left behind.
    let mut stop = crate::serve::StopSignal::install();
    let handle = browser::open_with(global, true).await?;
    let Some(local) = handle.chromium.process() else {
        bail!("no local browser")
    };
    let Some(endpoint) = &local.ws_url else {
        bail!("the browser opened no DevTools port")
    };
    out!("endpoint: {endpoint}");
    out!("pid: {}", local.pid);
    out!("profile: {}", local.profile_dir.display());
    out!("version: {}", handle.version.product);
    tokio::select! {
        _ = stop.recv() => eprintln!("glovebox: stopping the browser"),
        _ = handle.chromium.closed() => {
            eprintln!("glovebox: the browser went away");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
