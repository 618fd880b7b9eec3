//! VM guests as surfaces (`design.md`: "`vm` (OSWorld-compatible HTTP protocol)"):
//!
//! - [`guest`]: the guest server (`glovebox-guest serve`), ours, inside each guest: OSWorld's
//!   endpoints plus the state, input and log the runtime needs, over the guest's own X server;
//! - [`probe`]: the guest's small test application;
//! - [`wire`]: what host and guest say beyond OSWorld's endpoints;
//! - [`client`]: the host's transport to one guest (deadlines, bounded bodies, checked images,
//!   reads retried and writes never);
//! - [`adapter`]: the guests as a `SurfaceAdapter`, one environment object and one input domain
//!   per guest;
//! - [`qemu`]: building the guest image and booting guests under QEMU (TCG where KVM does not
//!   really work).
//!
//! It knows nothing of runs, leases or policy decisions; a guest's identity (`vm://<name>`) is
//! what a person grants, as an origin is for a tab.

pub mod adapter;
pub mod client;
pub mod guest;
pub mod probe;
pub mod qemu;
pub mod wire;

pub use adapter::{Environment, GuestConfig, VmAdapter, VmScreen, valid_name};
pub use client::{GuestClient, GuestError, Token};

/// A value chosen once per process: operation and frame ids of an earlier process never match
/// this one's.
pub(crate) fn process_salt() -> u64 {
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SALT.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ u64::from(std::process::id()).rotate_left(32)
    })
}
