//! The extended schemas: versioned, a structural superset of v1's, model-facing form with an
//! object root, and snapshotted.

use protocol::{
    EXTENDED_ACTIONS_VERSION, ExtendedKind, action_schema, extended_action_schema,
    extended_action_tool_schema,
};
use serde_json::{Value, json};

fn branch<'a>(schema: &'a Value, kind: &str) -> &'a Value {
    schema["oneOf"]
        .as_array()
        .expect("oneOf")
        .iter()
        .find(|b| b["properties"]["type"]["const"] == kind)
        .unwrap_or_else(|| panic!("no {kind} branch"))
}

#[test]
fn schemas_carry_the_version() {
    assert_eq!(EXTENDED_ACTIONS_VERSION, "glovebox.actions/2");
    assert_eq!(extended_action_schema()["title"], EXTENDED_ACTIONS_VERSION);
    assert_eq!(
        extended_action_tool_schema()["title"],
        EXTENDED_ACTIONS_VERSION
    );
    // v1 stays the seed's, with no title (schema.rs compares it key for key).
    assert!(action_schema().get("title").is_none());
}

#[test]
fn every_v1_branch_is_contained_in_its_extended_branch() {
    let v1 = action_schema();
    let ext = extended_action_schema();
    let kinds: Vec<&str> = ExtendedKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(ext["oneOf"].as_array().expect("oneOf").len(), kinds.len());
    for v1_branch in v1["oneOf"].as_array().expect("oneOf") {
        let kind = v1_branch["properties"]["type"]["const"]
            .as_str()
            .expect("kind");
        let ext_branch = branch(ext, kind);
        assert_eq!(ext_branch["additionalProperties"], false, "{kind}");
        for (name, schema) in v1_branch["properties"].as_object().expect("properties") {
            let widened = match schema {
                s if s == &json!({"$ref": "#/$defs/anyTarget"}) => {
                    json!({"$ref": "#/$defs/target"})
                }
                s if s == &json!({"$ref": "#/$defs/elementTarget"}) => {
                    json!({"$ref": "#/$defs/elementSpec"})
                }
                s => s.clone(),
            };
            assert_eq!(ext_branch["properties"][name], widened, "{kind}.{name}");
        }
        // The extended branch requires nothing v1 does not.
        let v1_required = v1_branch["required"].as_array().expect("required");
        for name in ext_branch["required"].as_array().expect("required") {
            assert!(v1_required.contains(name), "{kind} requires {name}");
        }
    }
    // The widened targets still contain v1's.
    for def in ["frame", "intent", "elementTarget", "pointTarget"] {
        assert_eq!(ext["$defs"][def], v1["$defs"][def], "{def}");
    }
    let target = ext["$defs"]["target"]["oneOf"].as_array().expect("oneOf");
    assert!(target.contains(&json!({"$ref": "#/$defs/elementTarget"})));
    assert!(target.contains(&json!({"$ref": "#/$defs/pointTarget"})));
}

#[test]
fn every_branch_requires_frame_and_intent_and_rejects_unknown_fields() {
    for kind in ExtendedKind::ALL {
        let b = branch(extended_action_schema(), kind.as_str());
        let required = b["required"].as_array().expect("required");
        for name in ["type", "expected_frame_id", "intent"] {
            assert!(required.contains(&json!(name)), "{kind} requires {name}");
        }
        assert_eq!(b["additionalProperties"], false, "{kind}");
    }
}

#[test]
fn model_facing_extended_schema_has_an_object_root() {
    let tool = extended_action_tool_schema();
    assert_eq!(tool["type"], "object");
    assert!(tool.get("oneOf").is_none());
    assert_eq!(
        tool["required"],
        json!(["type", "expected_frame_id", "intent"])
    );
    let kinds: Vec<&str> = ExtendedKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(tool["properties"]["type"]["enum"], json!(kinds));
    assert_eq!(
        tool["properties"]["target"],
        json!({"$ref": "#/$defs/target"})
    );
    for b in extended_action_schema()["oneOf"].as_array().expect("oneOf") {
        for name in b["properties"].as_object().expect("props").keys() {
            assert!(
                tool["properties"].get(name).is_some(),
                "{name} missing from the union"
            );
        }
    }
    let description = tool["description"].as_str().expect("description");
    for needle in [
        "drag: source, destination",
        "exact?",
        "never paths",
        "key_down: target?, key",
    ] {
        assert!(description.contains(needle), "{needle:?} in {description}");
    }
    // It compiles and accepts strictly valid actions of the new kinds.
    let v = jsonschema::draft202012::new(&tool).expect("compiles");
    let drag = json!({"type": "drag", "expected_frame_id": "frame_1", "intent": "move",
        "source": {"kind": "text", "text": "Card"}, "destination": {"kind": "point", "x": 1, "y": 2}});
    let key = json!({"type": "key_down", "expected_frame_id": "frame_1", "intent": "hold", "key": "Shift"});
    let press = json!({"type": "press", "expected_frame_id": "frame_1", "intent": "all",
        "target": {"kind": "element", "ref": "e1"}, "key": "Control+A"});
    for input in [drag, key, press, crate::click()] {
        assert!(
            protocol::validate_extended_action(&input).is_ok(),
            "{input}"
        );
        assert!(v.is_valid(&input), "{input}");
    }
}

#[test]
fn extended_schemas_snapshot() {
    insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!("extended_action_schema", extended_action_schema());
        insta::assert_json_snapshot!("extended_action_tool_schema", extended_action_tool_schema());
    });
}

/// The model reads a lighter schema (issue 36: tool definitions are the largest share of every
/// request); the runtime still validates every call against the strict one.
#[test]
fn the_model_facing_schema_is_lighter_and_validation_is_not() {
    let tool = extended_action_tool_schema();
    let text = tool.to_string();
    for gone in ["maxLength", "minLength", "uniqueItems", "\"default\""] {
        assert!(!text.contains(gone), "{gone} in the model-facing schema");
    }
    assert!(text.len() < extended_action_schema().to_string().len());
    assert_eq!(tool["additionalProperties"], false, "the root keeps it");
    let long_intent = json!({"type": "wait", "expected_frame_id": "frame_1", "intent": "x".repeat(241), "duration_ms": 10});
    let path = json!({"type": "upload", "expected_frame_id": "frame_1", "intent": "up",
        "target": {"kind": "element", "ref": "e1"}, "files": ["../etc/passwd"]});
    let unknown = json!({"type": "wait", "expected_frame_id": "frame_1", "intent": "w", "duration_ms": 10, "extra": 1});
    for refused in [long_intent, path, unknown] {
        assert!(
            protocol::validate_extended_action(&refused).is_err(),
            "{refused}"
        );
    }
}
