//! `glovebox vm create|start|stop|list`: VM guests under QEMU for the `vm` adapter, and the VM
//! lines of `doctor`. A started guest runs on by itself (its own process group); its state is
//! `<data-dir>/vms/<name>/guest.json` beside its token (0600) and console log, which is how
//! `serve --vm NAME` finds it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::cli::{Global, VmArgs, VmCmd};

/// A started guest, as `vm start` recorded it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Started {
    pub name: String,
    pub port: u16,
    pub pid: u32,
    /// Whether it takes requests only with its token (`token` beside this file).
    pub token: bool,
    pub memory_mb: u32,
    pub screen: [u32; 2],
    pub accelerator: String,
}

fn vms_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("vms")
}

/// Where the guest image is cached: `<data-dir>/vm-image`, or `GLOVEBOX_VM_IMAGE_DIR` (one
/// cache for several data directories, as the tests share).
pub fn image_dir(data_dir: &Path) -> PathBuf {
    std::env::var_os("GLOVEBOX_VM_IMAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| data_dir.join("vm-image"))
}

/// The guests `vm start` left running (their records; a dead one is listed as such by `list`).
pub fn started(data_dir: &Path) -> Vec<Started> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(vms_dir(data_dir)) else {
        return out;
    };
    for entry in dir.flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path().join("guest.json"))
            && let Ok(s) = serde_json::from_str::<Started>(&text)
        {
            out.push(s);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A started guest as the adapter's configuration (its token read from its 0600 file).
pub fn config_of(data_dir: &Path, s: &Started) -> anyhow::Result<vm::GuestConfig> {
    let token = if s.token {
        let file = vms_dir(data_dir).join(&s.name).join("token");
        Some(vm::Token::new(
            std::fs::read_to_string(&file)
                .with_context(|| format!("VM {}'s token ({})", s.name, file.display()))?
                .trim()
                .to_owned(),
        ))
    } else {
        None
    };
    Ok(vm::GuestConfig {
        name: s.name.clone(),
        endpoint: format!("http://127.0.0.1:{}", s.port),
        token,
    })
}

fn alive(pid: u32, name: &str) -> bool {
    // The pid is QEMU's for this guest still (not a reused pid).
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            let text = String::from_utf8_lossy(&c);
            text.contains("qemu-system") && text.contains(&format!("/vms/{name}/"))
        })
        .unwrap_or(false)
}

fn parse_size(size: &str) -> anyhow::Result<[u32; 2]> {
    size.split_once(['x', 'X'])
        .and_then(|(w, h)| Some([w.trim().parse().ok()?, h.trim().parse().ok()?]))
        .filter(|[w, h]| (320..=3840).contains(w) && (240..=2160).contains(h))
        .with_context(|| format!("--size {size:?}: give WIDTHxHEIGHT, e.g. 1024x768"))
}

pub async fn run(global: &Global, args: &VmArgs) -> anyhow::Result<ExitCode> {
    let data_dir = crate::config::resolve(global, None)?.runtime.data_dir;
    match &args.command {
        VmCmd::Create => {
            let started = Instant::now();
            let image = build(&data_dir).await?;
            out!(
                "Guest image ready in {:.1} s: {} and {}",
                started.elapsed().as_secs_f64(),
                image.kernel.display(),
                image.initrd.display()
            );
            let accel = vm::qemu::Accelerator::detect();
            out!("Guests will run with {} ({}).", accel.name, accel.why);
            Ok(ExitCode::SUCCESS)
        }
        VmCmd::Start {
            name,
            memory,
            size,
            no_token,
        } => {
            if !vm::valid_name(name) {
                bail!("a VM name is 1–32 of a-z, 0-9 and '-', not starting with '-'");
            }
            let screen = parse_size(size)?;
            let dir = vms_dir(&data_dir).join(name);
            if let Ok(text) = std::fs::read_to_string(dir.join("guest.json"))
                && let Ok(s) = serde_json::from_str::<Started>(&text)
                && alive(s.pid, name)
            {
                bail!(
                    "VM {name} is running already (pid {}, port {})",
                    s.pid,
                    s.port
                );
            }
            let image = build(&data_dir).await?;
            let options = vm::qemu::BootOptions {
                name: name.clone(),
                dir: dir.clone(),
                memory_mb: *memory,
                screen,
                token: (!no_token).then(vm::Token::generate),
                port: None,
            };
            let started = Instant::now();
            let mut guest = vm::qemu::Guest::boot(&image, &options, true)?;
            let ready = guest.wait_ready(Duration::from_secs(180)).await;
            if let Err(e) = ready {
                guest.stop();
                return Err(e.into());
            }
            let record = Started {
                name: name.clone(),
                port: guest.port,
                pid: guest.pid,
                token: !no_token,
                memory_mb: *memory,
                screen,
                accelerator: guest.accelerator.name.to_owned(),
            };
            let accel = guest.accelerator.clone();
            guest.detach();
            std::fs::write(dir.join("guest.json"), serde_json::to_vec_pretty(&record)?)?;
            out!(
                "VM {name} is ready in {:.1} s ({}: {}), its guest server on 127.0.0.1:{}{}.",
                started.elapsed().as_secs_f64(),
                accel.name,
                accel.why,
                record.port,
                if *no_token {
                    " without a token (OSWorld's clients can reach it; so can any local process)"
                } else {
                    ", which needs the guest's token"
                }
            );
            out!("Serve it: glovebox serve --vm {name}");
            Ok(ExitCode::SUCCESS)
        }
        VmCmd::Stop { name } => {
            let dir = vms_dir(&data_dir).join(name);
            let text = std::fs::read_to_string(dir.join("guest.json"))
                .with_context(|| format!("no VM {name} was started on this data directory"))?;
            let s: Started = serde_json::from_str(&text)?;
            if alive(s.pid, name) {
                let _ = std::process::Command::new("kill")
                    .arg(s.pid.to_string())
                    .status();
                let started = Instant::now();
                while alive(s.pid, name) && started.elapsed() < Duration::from_secs(10) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            std::fs::remove_dir_all(&dir)?;
            out!("VM {name} stopped.");
            Ok(ExitCode::SUCCESS)
        }
        VmCmd::List => {
            let settings = crate::config::resolve(global, None)?;
            let mut any = false;
            for s in started(&data_dir) {
                any = true;
                let health = if !alive(s.pid, &s.name) {
                    "not running (its QEMU is gone)".to_owned()
                } else {
                    health(&config_of(&data_dir, &s)?).await
                };
                out!(
                    "  {:<12} 127.0.0.1:{:<5} {} MB {}x{} {}  {health}",
                    s.name,
                    s.port,
                    s.memory_mb,
                    s.screen[0],
                    s.screen[1],
                    s.accelerator
                );
            }
            for g in settings.vm_file_guests()? {
                any = true;
                out!(
                    "  {:<12} {} (config)  {}",
                    g.name,
                    g.endpoint,
                    health(&g).await
                );
            }
            if !any {
                out!("No VM. Start one: glovebox vm start NAME");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn health(config: &vm::GuestConfig) -> String {
    match vm::GuestClient::new(config.endpoint.clone(), config.token.clone())
        .state()
        .await
    {
        Ok(s) => format!(
            "up: {}x{} screen, {} window(s)",
            s.screen[0],
            s.screen[1],
            s.windows.len()
        ),
        Err(e) => format!("unavailable: {e}"),
    }
}

async fn build(data_dir: &Path) -> anyhow::Result<vm::qemu::GuestImage> {
    let guest = vm::qemu::guest_binary()?;
    let dir = image_dir(data_dir);
    Ok(tokio::task::spawn_blocking(move || vm::qemu::build_image(&dir, &guest)).await??)
}

/// The VM lines of `doctor`.
pub async fn doctor(guests: &[vm::GuestConfig]) -> bool {
    let accel = vm::qemu::Accelerator::detect();
    out!(
        "  qemu       {}",
        if vm::qemu::qemu_installed() {
            "installed"
        } else {
            "NOT installed (Debian package qemu-system-x86): `glovebox vm start` cannot boot guests"
        }
    );
    out!("  vm accel   {} ({})", accel.name, accel.why);
    let mut ok = true;
    for g in guests {
        let h = health(g).await;
        ok &= h.starts_with("up");
        out!("  vm         {} at {}: {h}", g.name, g.endpoint);
    }
    ok
}
