//! The published extended action schemas, generated from the types with schemars and cleaned
//! like v1's (see [`crate::schema`]); not validation (see [`crate::extended::validate`]).
//!
//! The strict schema is a top-level `oneOf` of thirteen branches with the v1 `$defs` (frame,
//! intent, elementTarget, pointTarget) plus the extended ones (target, elementSpec, locator and
//! its four kinds, frameChain, frameStep and its kinds, waypoint), titled
//! [`EXTENDED_ACTIONS_VERSION`]. Three branches carry a cross-field rule as a root keyword:
//! `scroll` (`anyOf`: delta_x or delta_y), `select` (`oneOf`: value or values) and `dialog`
//! (`if`/`then`: no prompt_text when dismissing).

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::extended::action::{ExtendedAction, ExtendedKind};
use crate::schema::generate;

/// The version of the extended action set, published as the schemas' `title`. v1 has none:
/// its schema is the seed's, key for key.
pub const EXTENDED_ACTIONS_VERSION: &str = "glovebox.actions/2";

/// Removes `default: null`, which schemars writes for optional fields; absence is the default.
fn drop_null_defaults(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            map.values_mut().for_each(drop_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

/// Rewrites `oneOf` lists of string `const`s (what schemars writes for a unit enum whose
/// variants have doc comments) as `{"type": "string", "enum": […]}`, which says the same in
/// the form models and people read best.
fn enums_as_enum(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let names: Option<Vec<Value>> =
                map.get("oneOf")
                    .and_then(Value::as_array)
                    .and_then(|branches| {
                        branches
                            .iter()
                            .map(|b| match b.as_object() {
                                Some(o)
                                    if o.len() == 1
                                        && o.get("const").is_some_and(Value::is_string) =>
                                {
                                    o.get("const").cloned()
                                }
                                _ => None,
                            })
                            .collect()
                    });
            if let Some(names) = names {
                map.remove("oneOf");
                map.insert("type".into(), json!("string"));
                map.insert("enum".into(), Value::Array(names));
            }
            map.values_mut().for_each(enums_as_enum);
        }
        Value::Array(items) => items.iter_mut().for_each(enums_as_enum),
        _ => {}
    }
}

/// The strict extended `Action` schema: `title` [`EXTENDED_ACTIONS_VERSION`], a top-level
/// `oneOf` of the thirteen kinds and the shared `$defs`. The runtime validates every extended
/// action against this, whatever schema the model was shown.
pub fn extended_action_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut schema = generate::<ExtendedAction>();
        drop_null_defaults(&mut schema);
        enums_as_enum(&mut schema);
        if let Value::Object(map) = &mut schema {
            map.insert("title".into(), json!(EXTENDED_ACTIONS_VERSION));
        }
        schema
    })
}

/// The property names of one `$defs` entry, for "allowed fields" messages.
pub(crate) fn extended_def_fields(name: &str) -> Vec<String> {
    extended_action_schema()["$defs"][name]["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// How the model-facing description names a field: `name` when required, `name?` when not.
fn field_note(name: &str, required: &[Value]) -> String {
    if required.iter().any(|r| r == name) {
        name.to_owned()
    } else {
        format!("{name}?")
    }
}

/// One property schema for the union of branches: the only one, or the widest of known
/// nested pairs (any target ⊇ element target), else an `anyOf` of the distinct ones.
fn union(mut schemas: Vec<Value>) -> Value {
    let target = json!({"$ref": "#/$defs/target"});
    if schemas.contains(&target) {
        schemas.retain(|s| s != &json!({"$ref": "#/$defs/elementSpec"}));
    }
    // A schema that is another plus a `pattern` (key_down's one key beside press's chord)
    // adds nothing to the union.
    let unpatterned = |s: &Value| {
        let mut s = s.clone();
        s.as_object_mut()
            .and_then(|m| m.remove("pattern"))
            .map(|_| s)
    };
    let narrower: Vec<Value> = schemas
        .iter()
        .filter(|s| unpatterned(s).is_some_and(|w| schemas.contains(&w)))
        .cloned()
        .collect();
    schemas.retain(|s| !narrower.contains(s));
    if schemas.len() == 1 {
        schemas.pop().unwrap_or(Value::Bool(true))
    } else {
        json!({"anyOf": schemas})
    }
}

/// The extended schema for tools handed to models: `type: object` at the root (several
/// clients reject a top-level `oneOf`), `title` [`EXTENDED_ACTIONS_VERSION`], `type` an enum of
/// the thirteen kinds, the properties the union of the branches', and only `type`,
/// `expected_frame_id` and `intent` required; the description says which fields each kind
/// takes and the rules the union cannot express. It accepts a superset of the strict schema,
/// which the runtime still enforces.
pub fn extended_action_tool_schema() -> Value {
    let strict = extended_action_schema();
    let mut by_name: Map<String, Value> = Map::new();
    let mut lines = Vec::new();
    for branch in strict["oneOf"].as_array().into_iter().flatten() {
        let kind = branch["properties"]["type"]["const"]
            .as_str()
            .unwrap_or_default();
        let required = branch["required"].as_array().cloned().unwrap_or_default();
        let mut fields = Vec::new();
        for (name, schema) in branch["properties"].as_object().into_iter().flatten() {
            if name == "type" {
                continue;
            }
            if !matches!(name.as_str(), "expected_frame_id" | "intent") {
                fields.push(field_note(name, &required));
            }
            let seen = by_name
                .entry(name.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = seen
                && !list.contains(schema)
            {
                list.push(schema.clone());
            }
        }
        // Targets first (a drag's source before its destination), then the kind's own fields
        // (alphabetical, as the schema orders them).
        fields.sort_by_key(|f| match f.trim_end_matches('?') {
            "target" | "source" => 0,
            "destination" => 1,
            _ => 2,
        });
        lines.push(format!(
            "{kind}: {}",
            if fields.is_empty() {
                "-".into()
            } else {
                fields.join(", ")
            }
        ));
    }
    let mut properties = Map::new();
    properties.insert(
        "type".into(),
        json!({"type": "string", "enum": ExtendedKind::ALL.map(ExtendedKind::as_str)}),
    );
    for (name, schemas) in by_name {
        if let Value::Array(list) = schemas {
            properties.insert(name, union(list));
        }
    }
    let description = format!(
        "One browser action ({EXTENDED_ACTIONS_VERSION}). Every action needs type, \
         expected_frame_id (the frame_id of the latest observation) and intent. Fields by type \
         (? = optional): {}. Targets: {{kind:element, ref}} from the latest observation, or a \
         locator found afresh when the action runs: {{kind:role, role, name?}}, {{kind:label, \
         text}}, {{kind:text, text}}, {{kind:test_id, id}}, each with exact? (false: \
         case-insensitive substring; true: case-sensitive whole text) and frame? (iframes to \
         enter, outermost first, each by the iframe's ref, title or test_id). A locator must match exactly one element. Point targets \
         {{kind:point, x, y}} (viewport CSS pixels) only for click, hover and drag. scroll needs \
         delta_x or delta_y; select takes value or values, not both; dialog takes prompt_text \
         only with accept true; upload files are names the runtime offers, never paths.",
        lines.join("; ")
    );
    let mut defs = strict["$defs"].clone();
    for schema in properties.values_mut() {
        for_model(schema);
    }
    if let Value::Object(named) = &mut defs {
        named.values_mut().for_each(for_model);
    }
    json!({
        "type": "object",
        "title": EXTENDED_ACTIONS_VERSION,
        "description": description,
        "properties": properties,
        "required": ["type", "expected_frame_id", "intent"],
        "additionalProperties": false,
        "$defs": defs,
    })
}

/// Takes out of a schema what a model reads on every request and needs not: string length
/// bounds, long patterns (a file name's), defaults, `uniqueItems` and nested
/// `additionalProperties: false` (the caller keeps its root's). The model-facing schemas are
/// guidance; every call is still validated against the strict schema
/// ([`extended_action_schema`], `validate_extended_action`), which keeps all of them.
pub fn for_model(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("minLength");
            map.remove("maxLength");
            map.remove("uniqueItems");
            map.remove("default");
            if map
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|p| p.len() > 24)
            {
                map.remove("pattern");
            }
            if map.get("additionalProperties") == Some(&Value::Bool(false)) {
                map.remove("additionalProperties");
            }
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    // Maps of names to schemas: the names are not keywords.
                    ("properties" | "$defs", Value::Object(named)) => {
                        named.values_mut().for_each(for_model)
                    }
                    (_, value) => for_model(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(for_model),
        _ => {}
    }
}
