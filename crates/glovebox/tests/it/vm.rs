//! `glovebox vm` through the binary: a guest started (detached, as a person would), listed with
//! its health, checked by `doctor --vm`, stopped; a name never started is refused.

use std::path::PathBuf;
use std::process::Command;

use crate::{data_dir, glovebox, guest_binary};

fn vm_command(dir: &std::path::Path) -> Command {
    let mut c = glovebox(dir);
    c.env("GLOVEBOX_GUEST_BINARY", guest_binary())
        .env(
            "GLOVEBOX_VM_IMAGE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vm-image"),
        )
        .env("GLOVEBOX_CONFIG", "/dev/null");
    c
}

/// Stops the guest however the test ends.
struct Stop(PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = vm_command(&self.0).args(["vm", "stop", "cli1"]).output();
    }
}

#[test]
fn a_guest_is_started_listed_checked_and_stopped_through_the_cli() {
    let dir = data_dir("vm-cli");
    let _ = std::fs::remove_dir_all(dir.join("vms"));
    let _stop = Stop(dir.clone());
    let started = vm_command(&dir)
        .args([
            "vm", "start", "cli1", "--size", "800x600", "--memory", "384",
        ])
        .output()
        .expect("vm start");
    let text = String::from_utf8_lossy(&started.stdout);
    assert!(
        started.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&started.stderr)
    );
    assert!(text.contains("VM cli1 is ready"), "{text}");
    assert!(text.contains("tcg") || text.contains("kvm"), "{text}");
    // Its token is a 0600 file, never printed.
    let token_file = dir.join("vms/cli1/token");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_file).expect("token").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file).expect("token");
    assert!(!text.contains(token.trim()));

    let listed = vm_command(&dir)
        .args(["vm", "list"])
        .output()
        .expect("list");
    let list = String::from_utf8_lossy(&listed.stdout);
    assert!(
        list.contains("cli1") && list.contains("up: 800x600 screen"),
        "{list}"
    );
    let doctor = vm_command(&dir)
        .args(["--vm", "cli1", "doctor"])
        .output()
        .expect("doctor");
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "{report}");
    assert!(report.contains("vm accel"), "{report}");
    assert!(report.contains("vm         cli1"), "{report}");
    assert!(!report.contains(token.trim()));
    // A second start of a running guest is refused; an unknown name is said.
    let again = vm_command(&dir)
        .args(["vm", "start", "cli1"])
        .output()
        .expect("start again");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("running already"));
    let unknown = vm_command(&dir)
        .args(["--vm", "nosuch", "doctor"])
        .output()
        .expect("doctor");
    assert!(
        String::from_utf8_lossy(&unknown.stdout).contains("no such guest")
            || String::from_utf8_lossy(&unknown.stderr).contains("no such guest"),
        "{unknown:?}"
    );

    let stopped = vm_command(&dir)
        .args(["vm", "stop", "cli1"])
        .output()
        .expect("stop");
    assert!(stopped.status.success(), "{stopped:?}");
    let listed = vm_command(&dir)
        .args(["vm", "list"])
        .output()
        .expect("list");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("No VM"));
}
