//! Integration tests for `policy`: decision tables per noun, plus property tests.

mod field;
mod header;
mod navigation;
mod origin;
mod props;
mod redact_url;
mod secret;
