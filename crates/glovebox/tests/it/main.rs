//! End-to-end tests of the `glovebox` binary: real processes, real Chromium, fixtures on loopback.

mod cli;
mod deploy;
mod desktop;
mod eval;
mod faults;
mod lifetime;
mod mcp;
mod run;
mod vm;

use std::path::PathBuf;
use std::process::Command;

pub fn glovebox(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_glovebox"));
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("GLOVEBOX_BROWSER_ENDPOINT")
        // One VM guest image for every test (built once, by whichever needs it first).
        .env(
            "GLOVEBOX_VM_IMAGE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vm-image"),
        );
    command
}

/// The guest server binary beside the glovebox binary (the workspace's test build makes it;
/// built here when it is missing).
pub fn guest_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = PathBuf::from(env!("CARGO_BIN_EXE_glovebox"));
            let guest = exe.with_file_name("glovebox-guest");
            // Checked (and built) once per test process, by whichever test asks first, so no
            // test reads a binary another is writing.
            if !guest.is_file() {
                let status = Command::new(env!("CARGO"))
                    .args(["build", "--locked", "-p", "vm", "--bin", "glovebox-guest"])
                    .status()
                    .expect("cargo build");
                assert!(status.success(), "cargo build -p vm --bin glovebox-guest");
            }
            guest
        })
        .clone()
}

pub fn data_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("glovebox-tests")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
