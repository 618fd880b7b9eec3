//! `glovebox-guest`: the program inside each VM guest (see `vm::guest`).
//!
//! - `glovebox-guest serve [--listen ADDR] [--display :0] [--token-file PATH]`: the guest
//!   server; its token, if any, is read from a file (under QEMU, the `fw_cfg` entry the host
//!   filled from a 0600 file) — never from the command line or the environment, which the
//!   commands it runs would see;
//! - `glovebox-guest probe [--display :0] [--title T] [--at X,Y] [--log FILE] [--save FILE]
//!   [--read-only]`: the test app (a notes window with `--save`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

fn value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let display = value(&args, "--display").unwrap_or_else(|| ":0".into());
    match args.first().map(String::as_str) {
        Some("serve") => {
            let listen: SocketAddr = match value(&args, "--listen")
                .unwrap_or_else(|| "0.0.0.0:8000".into())
                .parse()
            {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("glovebox-guest: --listen: {e}");
                    return ExitCode::from(2);
                }
            };
            let token = match value(&args, "--token-file") {
                Some(path) => match std::fs::read_to_string(&path) {
                    Ok(t) => Some(t.trim().to_owned()),
                    Err(e) => {
                        eprintln!("glovebox-guest: --token-file {path}: {e}");
                        return ExitCode::from(2);
                    }
                },
                None => None,
            };
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("glovebox-guest: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(vm::guest::serve(vm::guest::GuestOptions {
                listen,
                display,
                token,
            })) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("glovebox-guest: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("probe") => {
            let title = value(&args, "--title").unwrap_or_else(|| "probe".into());
            let log =
                PathBuf::from(value(&args, "--log").unwrap_or_else(|| "/tmp/probe.log".into()));
            let at = value(&args, "--at")
                .and_then(|s| {
                    let (x, y) = s.split_once(',')?;
                    Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
                })
                .unwrap_or((40, 40));
            let notes = vm::probe::Notes {
                save: value(&args, "--save").map(PathBuf::from),
                read_only: args.iter().any(|a| a == "--read-only"),
            };
            match vm::probe::run(&display, &title, at, &log, &notes) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("glovebox-guest: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!(
                "usage: glovebox-guest serve [--listen ADDR] [--display :0] [--token-file PATH]\n       glovebox-guest probe [--display :0] [--title T] [--at X,Y] [--log FILE] [--save FILE] [--read-only]"
            );
            ExitCode::from(2)
        }
    }
}
