//! The protocol crate's one integration test binary (one binary keeps linking cheap).

mod coords;
mod extended_props;
mod extended_schema;
mod extended_validate;
mod observation;
mod preview;
mod props;
mod results;
mod schema;
mod surface;
mod text;
mod validate;

use serde_json::Value;

/// The strict Action schema's validator, compiled independently of the crate's own.
pub fn strict_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::draft202012::new(protocol::action_schema()).expect("the strict schema compiles")
    })
}

/// A valid click, the base most table rows mutate.
pub fn click() -> Value {
    serde_json::json!({
        "type": "click",
        "expected_frame_id": "frame_1",
        "target": {"kind": "element", "ref": "e1"},
        "intent": "open settings"
    })
}
