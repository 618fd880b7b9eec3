//! The published schemas equal the seed's (semantically and key for key) and are snapshotted.

use protocol::{
    SurfaceName, action_schema, action_tool_schema, computer_use_input_schema, computer_use_tool,
};
use serde_json::{Map, Value, json};

const SEED_ACTION: &str = include_str!("fixtures/seed_action_schema.json");
const SEED_COMPUTER_USE: &str = include_str!("fixtures/seed_computer_use.json");

/// Resolves local `$ref`s, drops annotations (`description`, `title`, `$schema`, `default` is
/// kept), drops `$defs` once inlined, and sorts `required`, so two schemas that accept the
/// same documents with the same structure compare equal.
fn normalise(node: &Value, root: &Value) -> Value {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let name = r.strip_prefix("#/$defs/").expect("only local $defs refs");
                return normalise(&root["$defs"][name], root);
            }
            let mut out = Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "description" | "title" | "$schema" | "$defs" => {}
                    "required" => {
                        let mut names: Vec<String> = v
                            .as_array()
                            .expect("array")
                            .iter()
                            .map(|s| s.as_str().expect("str").to_owned())
                            .collect();
                        names.sort();
                        out.insert(k.clone(), json!(names));
                    }
                    _ => {
                        out.insert(k.clone(), normalise(v, root));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| normalise(i, root)).collect()),
        other => other.clone(),
    }
}

fn seed_names() -> Vec<SurfaceName> {
    ["s1", "right", "focused", "web:1"]
        .map(|n| SurfaceName::new(n).expect("valid name"))
        .to_vec()
}

#[test]
fn action_schema_is_semantically_the_seeds() {
    let seed: Value = serde_json::from_str(SEED_ACTION).expect("seed parses");
    let ours = action_schema();
    assert_eq!(normalise(ours, ours), normalise(&seed, &seed));
}

#[test]
fn action_schema_is_the_seeds_key_for_key() {
    let seed: Value = serde_json::from_str(SEED_ACTION).expect("seed parses");
    assert_eq!(action_schema(), &seed);
}

#[test]
fn computer_use_tool_is_semantically_the_seeds() {
    let seed: Value = serde_json::from_str(SEED_COMPUTER_USE).expect("seed parses");
    let ours = computer_use_tool(&seed_names());
    assert_eq!(ours["name"], seed["name"]);
    assert_eq!(ours["input_schema"], seed["input_schema"]);
    assert_eq!(
        normalise(&ours["input_schema"], &ours),
        normalise(&seed["input_schema"], &seed)
    );
}

#[test]
fn a_changed_bound_would_be_caught() {
    // The comparison itself can fail: a seed with one bound changed is not equal.
    let mut seed: Value = serde_json::from_str(SEED_ACTION).expect("seed parses");
    seed["$defs"]["intent"]["maxLength"] = json!(241);
    let ours = action_schema();
    assert_ne!(normalise(ours, ours), normalise(&seed, &seed));
}

#[test]
fn surface_enum_is_per_turn_and_deduplicated() {
    let names = ["s2", "left", "s2"]
        .map(|n| SurfaceName::new(n).expect("valid"))
        .to_vec();
    let schema = computer_use_input_schema(&names);
    assert_eq!(
        schema["properties"]["surface"]["enum"],
        json!(["s2", "left"])
    );
    let none = computer_use_input_schema(&[]);
    assert!(
        none["properties"].get("surface").is_none(),
        "no surfaces: no surface property"
    );
}

#[test]
fn model_facing_action_schema_has_an_object_root() {
    let tool = action_tool_schema();
    assert_eq!(tool["type"], "object");
    assert!(tool.get("oneOf").is_none());
    assert_eq!(
        tool["required"],
        json!(["type", "expected_frame_id", "intent"])
    );
    assert_eq!(
        tool["properties"]["target"],
        json!({"$ref": "#/$defs/anyTarget"})
    );
    let kinds: Vec<&str> = protocol::ActionKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(tool["properties"]["type"]["enum"], json!(kinds));
    // Every property of every strict branch is in the union.
    for branch in action_schema()["oneOf"].as_array().expect("oneOf") {
        for name in branch["properties"].as_object().expect("props").keys() {
            assert!(
                tool["properties"].get(name).is_some(),
                "{name} missing from the union"
            );
        }
    }
    // It compiles, and it accepts every strictly valid action.
    let v = jsonschema::draft202012::new(&tool).expect("compiles");
    assert!(v.is_valid(&crate::click()));
}

#[test]
fn schemas_snapshot() {
    insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!("action_schema", action_schema());
        insta::assert_json_snapshot!("action_tool_schema", action_tool_schema());
        insta::assert_json_snapshot!("computer_use_tool", computer_use_tool(&seed_names()));
    });
}
