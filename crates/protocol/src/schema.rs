//! The published JSON Schemas, generated from the types with schemars and shaped to the
//! seed's text; not validation (see [`crate::validate`]).
//!
//! schemars writes a few things the seed does not (`$schema`, `title`, doc comments as
//! `description`, `format: int32`, `type: string` beside a string `const`). A cleaning pass drops
//! them, so the published schema is the seed's, key for key; `tests/it/schema.rs` proves it.

use std::sync::OnceLock;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::action::{Action, ActionKind};
use crate::ids::SurfaceName;
use crate::tool::{COMPUTER_USE_DESCRIPTION, COMPUTER_USE_TOOL_NAME, ComputerUseInput};

/// Generates the root schema of `T` (draft 2020-12, `$defs`) and cleans it.
pub(crate) fn generate<T: JsonSchema>() -> Value {
    let mut value = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    clean(&mut value);
    value
}

/// Removes annotations and redundancies schemars adds, walking only schema positions (so a
/// property *named* `description` would survive).
fn clean(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for keyword in ["$schema", "title", "description", "format"] {
        map.remove(keyword);
    }
    if matches!(map.get("const"), Some(Value::String(_)))
        && map.get("type") == Some(&json!("string"))
    {
        map.remove("type");
    }
    if map
        .get("$defs")
        .is_some_and(|d| d.as_object().is_some_and(Map::is_empty))
    {
        map.remove("$defs");
    }
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(clean);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(clean);
        }
    }
    for key in ["items", "not", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            clean(child);
        }
    }
}

/// The strict `Action` schema: `$defs` {frame, intent, elementTarget, pointTarget, anyTarget}
/// and a top-level `oneOf` of the eight kinds, exactly the seed's. The runtime validates
/// every action against this, whatever schema the model was shown.
pub fn action_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(generate::<Action>)
}

/// The branch of `kind` (its `type` const) in a strict `oneOf` schema, with the shared `$defs`
/// attached so its `$ref`s resolve. Both action sets use it.
pub(crate) fn branch_of(strict: &Value, kind: &str) -> Value {
    let mut branch = strict["oneOf"]
        .as_array()
        .and_then(|branches| {
            branches
                .iter()
                .find(|b| b["properties"]["type"]["const"] == json!(kind))
        })
        .cloned()
        .unwrap_or(Value::Bool(false));
    if let Value::Object(map) = &mut branch {
        map.insert("$defs".into(), strict["$defs"].clone());
    }
    branch
}

/// The schema of one `$defs` entry of `strict` (e.g. `elementTarget`), with the `$defs` attached.
pub(crate) fn def_of(strict: &Value, name: &str) -> Value {
    json!({"$defs": strict["$defs"].clone(), "$ref": format!("#/$defs/{name}")})
}

/// The `Action` schema for tools handed to models: `type: object` at the root, because
/// several clients reject a top-level `oneOf`. `type` is an enum of the eight kinds, the
/// properties are the union of the branches', and only `type`, `expected_frame_id` and
/// `intent` are required; the description says which fields each kind takes. It accepts a
/// superset of the strict schema, which the runtime still enforces.
pub fn action_tool_schema() -> Value {
    let strict = action_schema();
    let mut properties = Map::new();
    properties.insert(
        "type".into(),
        json!({"type": "string", "enum": ActionKind::ALL.map(ActionKind::as_str)}),
    );
    let mut lines = Vec::new();
    for branch in strict["oneOf"].as_array().into_iter().flatten() {
        let kind = branch["properties"]["type"]["const"]
            .as_str()
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (name, schema) in branch["properties"].as_object().into_iter().flatten() {
            if name == "type" {
                continue;
            }
            if !matches!(name.as_str(), "expected_frame_id" | "intent") {
                let note = if schema == &json!({"$ref": "#/$defs/elementTarget"}) {
                    " (element)"
                } else {
                    ""
                };
                fields.push(format!("{name}{note}"));
            }
            // `target` is an element target in most branches and any target in click and
            // hover; the union is the wider one.
            let wider =
                properties.get(name).is_none() || schema == &json!({"$ref": "#/$defs/anyTarget"});
            if wider {
                properties.insert(name.clone(), schema.clone());
            }
        }
        // Published order: target first, then the kind's own field.
        fields.sort_by_key(|f| !f.starts_with("target"));
        lines.push(format!(
            "{kind}: {}",
            if fields.is_empty() {
                "-".into()
            } else {
                fields.join(", ")
            }
        ));
    }
    let description = format!(
        "One browser action. Every action needs type, expected_frame_id (the frame_id of the \
         latest observation) and intent. Fields by type: {}. Point targets are only allowed for \
         click and hover, in viewport CSS pixels.",
        lines.join("; ")
    );
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": ["type", "expected_frame_id", "intent"],
        "additionalProperties": false,
        "$defs": strict["$defs"].clone(),
    })
}

/// The `computer_use` input schema without a surface enum (`surface` is any string); the
/// validator checks membership itself.
pub(crate) fn computer_use_base_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut schema = generate::<ComputerUseInput>();
        // `Option` fields get `default: null` from schemars; the seed has none.
        for field in ["surface", "url"] {
            if let Some(Value::Object(p)) = schema.pointer_mut(&format!("/properties/{field}")) {
                p.remove("default");
            }
        }
        schema
    })
}

/// The `computer_use` input schema of one turn: `surface` is an enum of the keys and aliases
/// the turn's Surface Context offers (in the given order, without duplicates). With no names
/// the `surface` property is left out, so naming any surface is an error.
pub fn computer_use_input_schema(surfaces: &[SurfaceName]) -> Value {
    let mut schema = computer_use_base_schema().clone();
    let mut names: Vec<&str> = Vec::with_capacity(surfaces.len());
    for s in surfaces {
        if !names.contains(&s.as_str()) {
            names.push(s.as_str());
        }
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        if names.is_empty() {
            properties.remove("surface");
        } else if let Some(Value::Object(surface)) = properties.get_mut("surface") {
            surface.insert("enum".into(), json!(names));
        }
    }
    schema
}

/// The whole `computer_use` tool for a provider's tool array: `{name, description, input_schema}`.
pub fn computer_use_tool(surfaces: &[SurfaceName]) -> Value {
    json!({
        "name": COMPUTER_USE_TOOL_NAME,
        "description": COMPUTER_USE_DESCRIPTION,
        "input_schema": computer_use_input_schema(surfaces),
    })
}
