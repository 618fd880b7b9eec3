//! The untrusted-content markers of an MCP session: `protocol::Untrusted` with a fresh random
//! nonce per session.

pub use protocol::Untrusted;

/// A wrapper with a fresh random nonce (48 bits).
pub fn fresh() -> Untrusted {
    Untrusted::with_nonce(crate::random_token(6))
}
