//! Typed, lenient structs for the CDP domains Glovebox uses.
//!
//! Leniency is deliberate: every reply field is `Option` or defaulted, unknown fields are ignored and
//! enum-like values are kept as strings, so a newer Chromium does not break decoding. Anything not
//! covered here goes through [`crate::Session::send_raw`].

pub mod accessibility;
pub mod browser;
pub mod dom;
pub mod dom_snapshot;
pub mod emulation;
pub mod input;
pub mod log;
pub mod network;
pub mod page;
pub mod runtime;
pub mod storage;
pub mod target;

use serde::Deserialize;

/// A reply whose content we do not need (any object decodes).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Empty {}

/// Implements [`crate::Command`] for a params struct.
macro_rules! command {
    ($params:ty => $method:literal, $response:ty) => {
        impl $crate::Command for $params {
            const METHOD: &'static str = $method;
            type Response = $response;
        }
    };
}
pub(crate) use command;
