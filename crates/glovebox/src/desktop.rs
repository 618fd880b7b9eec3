//! `glovebox desktop` (a ready X desktop for people without one) and the desktop part of
//! `doctor`.

use std::process::ExitCode;

use anyhow::{Context as _, bail};

use crate::cli::{DesktopArgs, Global};

/// Starts Xvfb, a session bus with accessibility, and openbox (unless asked not to), starts the
/// given programs on it, prints how to use it, and runs until Ctrl-C; then stops it all.
pub async fn run(args: &DesktopArgs) -> anyhow::Result<ExitCode> {
    let (width, height) = args
        .size
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)))
        .filter(|(w, h)| (320..=7680).contains(w) && (240..=4320).contains(h))
        .with_context(|| format!("--size {:?}: give WIDTHxHEIGHT, e.g. 1280x800", args.size))?;
    let options = desktop::StackOptions {
        width,
        height,
        window_manager: !args.no_window_manager,
    };
    let mut stack = tokio::task::spawn_blocking(move || desktop::Stack::start(&options))
        .await?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for app in &args.apps {
        let mut parts = app.split_whitespace();
        let Some(program) = parts.next() else {
            continue;
        };
        let mut command = stack.command(program);
        command.args(parts);
        stack
            .spawn(command)
            .map_err(|e| anyhow::anyhow!("{app}: {e}"))?;
    }
    out!(
        "A desktop is running on {} ({width}x{height}{}).",
        stack.display,
        if args.no_window_manager {
            ", no window manager"
        } else {
            ", openbox"
        }
    );
    out!("Use it from a shell:");
    out_part!("{}", stack.env_lines());
    out!(
        "Serve its windows: glovebox serve --display {} --session-bus '{}'",
        stack.display,
        stack.session_bus
    );
    out!("Stop with Ctrl-C.");
    tokio::signal::ctrl_c().await.ok();
    drop(stack);
    Ok(ExitCode::SUCCESS)
}

/// The desktop lines of `doctor`: the display, XTest, the window manager, the accessibility bus.
pub async fn doctor(global: &Global, config: &desktop::DesktopConfig) -> anyhow::Result<bool> {
    let _ = global;
    let adapter = desktop::DesktopAdapter::new(config.clone());
    match adapter.report().await {
        Ok(r) => {
            out!(
                "  display    {} ({}x{}), {} window(s)",
                r.display,
                r.screen[0],
                r.screen[1],
                r.windows
            );
            out!(
                "  xtest      {}",
                if r.xtest {
                    "yes: input can be sent"
                } else {
                    "NO: input cannot be sent (screenshots only)"
                }
            );
            out!(
                "  input      {}",
                if config.foreground_input {
                    "keyboard and pointer allowed (windows are brought forward and focused before keys)"
                } else {
                    "accessibility actions only (--no-foreground-input): nothing is brought forward"
                }
            );
            out!(
                "  wm         {}",
                r.window_manager
                    .as_deref()
                    .unwrap_or("none (focus moves only by Glovebox's requests)")
            );
            match (r.accessible_apps, &r.accessibility_off) {
                (Some(apps), _) => {
                    out!("  at-spi     on; {apps} application(s) on the accessibility bus")
                }
                (None, why) => out!(
                    "  at-spi     off: {} (no refs: windows take XTest input and screenshots only)",
                    why.as_deref().unwrap_or("unknown")
                ),
            }
            if !r.xtest {
                bail!("the display has no XTest extension");
            }
            Ok(true)
        }
        Err(e) => {
            out!("  display    {} unreachable: {e}", config.display);
            out!("fix: start one with `glovebox desktop`, or name yours with --display");
            Ok(false)
        }
    }
}
