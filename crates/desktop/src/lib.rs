//! The X11 desktop adapter (`design.md`: "`desktop` (X11 via XTest/GetImage under Xvfb)"): the
//! windows of one display as surfaces behind the same [`surface::SurfaceAdapter`] seam as tabs.
//!
//! - [`x11`]: the display — windows, geometry, focus, the window under a point, `GetImage`,
//!   XTest input, the keyboard mapping;
//! - [`a11y`]: AT-SPI over D-Bus — applications by pid, trees, actions, text, states;
//! - [`model`]: a tree as the snapshot text and refs every surface speaks;
//! - [`window`]: one attached window — observe and act under the focus and occlusion rules;
//! - [`adapter`]: the display as a `SurfaceAdapter` with one input domain;
//! - [`stack`]: Xvfb + session bus (+ openbox) for `glovebox desktop` and the tests.
//!
//! It knows nothing of runs, leases or policy decisions; what a window's application is
//! (`app://<class>`) is what a person grants, as an origin is for a tab.

pub mod a11y;
pub mod adapter;
pub mod keys;
pub mod model;
pub mod stack;
pub mod window;
pub mod x11;

pub use adapter::{DesktopAdapter, DesktopConfig, DisplayReport, session_display};
pub use stack::{Stack, StackError, StackOptions};
