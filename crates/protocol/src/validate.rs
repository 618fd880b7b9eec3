//! Validation of model JSON against the published schemas, before serde reads it; not the
//! runtime's checks of frame, capability or policy.
//!
//! A top-level `oneOf` failure tells a model little ("not valid under any of the schemas"),
//! so [`validate_action`] reads `type` first and checks the one branch it names, then the
//! `target` against the one target kind it names. Every problem comes back at once, each with
//! its JSON pointer and a reason, never serde's first error. Any input (including non-objects
//! and deep nesting) yields an `Action` or an [`ActionError`]; nothing here panics on input.

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, Validator};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::action::{Action, ActionKind};
use crate::error::{ActionError, ErrorCode, Problem};
use crate::ids::SurfaceName;
use crate::limits::{PROBLEM_MESSAGE_MAX_CHARS, PROBLEMS_MAX};
use crate::schema::{action_schema, branch_of, computer_use_base_schema, def_of};
use crate::text::{char_count, truncate_chars};
use crate::tool::ComputerUseInput;

struct Validators {
    /// One per [`ActionKind::ALL`] entry, same order.
    branches: Vec<(ActionKind, Validator, Vec<String>)>,
    element: Validator,
    point: Validator,
    computer_use: Validator,
    computer_use_fields: Vec<String>,
}

pub(crate) fn compile(schema: &Value) -> Validator {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(false)
        .build(schema)
        // The schemas are generated from our own types, not from input; the schema tests
        // compile every one of them.
        .expect("a published schema compiles")
}

pub(crate) fn property_names(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Builds the validators if nobody has yet ([`crate::compile_validators`]).
pub(crate) fn compile_all() {
    validators();
}

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let branches = ActionKind::ALL
            .into_iter()
            .map(|kind| {
                let schema = branch_of(action_schema(), kind.as_str());
                let mut fields = property_names(&schema);
                // Published order: type, expected_frame_id, …, intent.
                fields.sort_by_key(|f| field_rank(f));
                (kind, compile(&schema), fields)
            })
            .collect();
        let computer_use_schema = computer_use_base_schema();
        Validators {
            branches,
            element: compile(&def_of(action_schema(), "elementTarget")),
            point: compile(&def_of(action_schema(), "pointTarget")),
            computer_use: compile(computer_use_schema),
            computer_use_fields: property_names(computer_use_schema),
        }
    })
}

pub(crate) fn field_rank(field: &str) -> u8 {
    match field {
        "type" => 0,
        "expected_frame_id" => 1,
        "target" => 2,
        "intent" => 9,
        _ => 5,
    }
}

/// The allowed kinds, for messages: `click, type, press, …`.
fn kinds_list() -> String {
    ActionKind::ALL.map(ActionKind::as_str).join(", ")
}

/// The JSON type of `v`, for messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `v` as compact JSON, cut to 64 characters, for messages that quote the input.
pub(crate) fn quote(v: &Value) -> String {
    let text = v.to_string();
    let (kept, cut) = truncate_chars(&text, 64);
    if cut { format!("{kept}…") } else { text }
}

/// Appends one segment to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn join_pointer(base: &str, segment: &str) -> String {
    format!("{base}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

/// Collects the problems a compiled validator finds, with paths under `prefix`.
/// `skip_target`: leave `/target` to [`check_target`]. `fields`: the object's allowed fields.
fn collect(
    validator: &Validator,
    instance: &Value,
    prefix: &str,
    skip_target: bool,
    fields: &[String],
    problems: &mut Vec<Problem>,
) {
    let skip = |path: &str, _: &ValidationErrorKind| {
        skip_target && (path == "/target" || path.starts_with("/target/"))
    };
    collect_where(validator, instance, prefix, &skip, fields, problems);
}

/// [`collect`] with any rule for what to leave to other checks: `skip(path, kind)` gets each
/// error's prefixed path and kind. The extended validator uses it for targets, cross-field
/// rules and upload names.
pub(crate) fn collect_where(
    validator: &Validator,
    instance: &Value,
    prefix: &str,
    skip: &dyn Fn(&str, &ValidationErrorKind) -> bool,
    fields: &[String],
    problems: &mut Vec<Problem>,
) {
    for error in validator.iter_errors(instance) {
        let path = format!("{prefix}{}", error.instance_path().as_str());
        if skip(&path, error.kind()) {
            continue;
        }
        let value = error.instance();
        let message = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    problems.push(Problem::new(
                        join_pointer(&path, name),
                        format!("unknown field; allowed fields here: {}", fields.join(", ")),
                    ));
                }
                continue;
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                problems.push(Problem::new(
                    join_pointer(&path, name),
                    "missing required field",
                ));
                continue;
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                format!("expected {expected}, got {}", json_type(value))
            }
            ValidationErrorKind::MinLength { limit: 1 } => "must not be empty".to_owned(),
            ValidationErrorKind::MinLength { limit } => {
                let got = value.as_str().map(char_count).unwrap_or_default();
                format!("must have at least {limit} characters, got {got}")
            }
            ValidationErrorKind::MaxLength { limit } => {
                let got = value.as_str().map(char_count).unwrap_or_default();
                format!("must have at most {limit} characters, got {got}")
            }
            ValidationErrorKind::Minimum { limit } => {
                format!("{} is less than the minimum of {limit}", quote(value))
            }
            ValidationErrorKind::Maximum { limit } => {
                format!("{} is greater than the maximum of {limit}", quote(value))
            }
            ValidationErrorKind::Pattern { pattern } => {
                // v1's schema has patterns only on frame ids, refs and URLs; the role and key
                // hints serve the extended set.
                let hint = if path.ends_with("/expected_frame_id") {
                    "; pass the frame_id of the latest observation"
                } else if path.ends_with("/ref") {
                    "; pass an element ref such as \"e12\" from the latest observation"
                } else if path.ends_with("/role") {
                    "; use a lower-case ARIA role such as \"button\", \"link\" or \"textbox\""
                } else if path == "/key" {
                    "; key_down and key_up take one key such as \"Shift\"; use press for a chord \
                     like \"Control+A\""
                } else {
                    ""
                };
                format!("{} does not match {pattern}{hint}", quote(value))
            }
            // Arrays appear only in the extended set.
            ValidationErrorKind::MinItems { limit } => {
                let got = value.as_array().map(Vec::len).unwrap_or_default();
                format!("must have at least {limit} items, got {got}")
            }
            ValidationErrorKind::MaxItems { limit } => {
                let got = value.as_array().map(Vec::len).unwrap_or_default();
                format!("must have at most {limit} items, got {got}")
            }
            ValidationErrorKind::UniqueItems => match first_repeat(value) {
                Some(item) => format!(
                    "{} appears more than once; list each item once",
                    quote(item)
                ),
                None => "items must be unique".to_owned(),
            },
            ValidationErrorKind::Constant { expected_value } => {
                format!("expected {expected_value}, got {}", quote(value))
            }
            ValidationErrorKind::Enum { options } => {
                format!("expected one of {options}, got {}", quote(value))
            }
            _ => error.to_string(),
        };
        problems.push(Problem::new(path, message));
    }
}

/// The first array item equal to an earlier one.
fn first_repeat(value: &Value) -> Option<&Value> {
    let items = value.as_array()?;
    items
        .iter()
        .enumerate()
        .find(|(i, item)| items[..*i].contains(item))
        .map(|(_, item)| item)
}

/// Checks `target` against the one target kind it names.
fn check_target(kind: ActionKind, target: &Value, problems: &mut Vec<Problem>) {
    let allowed = if kind.accepts_point() {
        "\"element\" or \"point\""
    } else {
        "\"element\""
    };
    let Value::Object(map) = target else {
        problems.push(Problem::new(
            "/target",
            format!(
                "expected an object such as {{\"kind\":\"element\",\"ref\":\"e12\"}}, got {}",
                json_type(target)
            ),
        ));
        return;
    };
    let v = validators();
    match map.get("kind") {
        None => problems.push(Problem::new(
            "/target/kind",
            format!("missing required field; expected {allowed}"),
        )),
        Some(Value::String(k)) if k == "element" => {
            let fields = ["kind".to_owned(), "ref".to_owned()];
            collect(&v.element, target, "/target", false, &fields, problems);
        }
        Some(Value::String(k)) if k == "point" => {
            if !kind.accepts_point() {
                problems.push(Problem::new(
                    "/target/kind",
                    format!(
                        "point targets are only allowed for click and hover; {kind} needs \
                         {{\"kind\":\"element\",\"ref\":…}}"
                    ),
                ));
                return;
            }
            let fields = ["kind".to_owned(), "x".to_owned(), "y".to_owned()];
            collect(&v.point, target, "/target", false, &fields, problems);
        }
        Some(other) => problems.push(Problem::new(
            "/target/kind",
            format!("unknown target kind {}; expected {allowed}", quote(other)),
        )),
    }
}

/// Sorts, de-duplicates, bounds and wraps problems; `Ok` when there are none.
pub(crate) fn finish(code: ErrorCode, mut problems: Vec<Problem>) -> Result<(), ActionError> {
    if problems.is_empty() {
        return Ok(());
    }
    for p in &mut problems {
        let (kept, cut) = truncate_chars(&p.message, PROBLEM_MESSAGE_MAX_CHARS);
        if cut {
            p.message = format!("{kept}…");
        }
    }
    problems.sort();
    problems.dedup();
    problems.truncate(PROBLEMS_MAX);
    Err(ActionError { code, problems })
}

/// Reads an already-validated value with serde. The schema and the field types agree, so this
/// fails only on a bug; it still answers with a problem rather than a panic.
pub(crate) fn read<'a, T: Deserialize<'a>>(value: &'a Value) -> Result<T, ActionError> {
    T::deserialize(value)
        .map_err(|e| ActionError::invalid("", format!("could not read the input: {e}")))
}

/// The object an action is and the kind its `type` names (`from_wire`), or the problem with
/// them, naming the kinds there are (`kinds`): shared by the v1 and the extended validation.
pub(crate) fn action_kind<K>(
    value: &Value,
    from_wire: fn(&str) -> Option<K>,
    kinds: fn() -> String,
) -> Result<(&Map<String, Value>, K), ActionError> {
    let Value::Object(map) = value else {
        return Err(ActionError::invalid(
            "",
            format!(
                "expected a JSON object with a \"type\" field, got {}",
                json_type(value)
            ),
        ));
    };
    let kind = match map.get("type") {
        None => {
            return Err(ActionError::invalid(
                "/type",
                format!("missing required field; expected one of: {}", kinds()),
            ));
        }
        Some(Value::String(name)) => from_wire(name).ok_or_else(|| {
            ActionError::invalid(
                "/type",
                format!(
                    "unknown action type {}; expected one of: {}",
                    quote(&Value::String(name.clone())),
                    kinds()
                ),
            )
        })?,
        Some(other) => {
            return Err(ActionError::invalid(
                "/type",
                format!(
                    "expected a string, got {}; one of: {}",
                    json_type(other),
                    kinds()
                ),
            ));
        }
    };
    Ok((map, kind))
}

/// Validates model JSON against the strict `Action` schema and reads it.
///
/// Errors are [`ErrorCode::InvalidAction`] with every problem and its JSON pointer, e.g.
/// `/delta_y: 2500 is greater than the maximum of 2000`, `/foo: unknown field; …`,
/// `/target/kind: point targets are only allowed for click and hover; …`.
pub fn validate_action(value: &Value) -> Result<Action, ActionError> {
    let (map, kind) = action_kind(value, ActionKind::from_wire, kinds_list)?;
    let v = validators();
    let mut problems = Vec::new();
    if let Some((_, validator, fields)) = v.branches.iter().find(|(k, _, _)| *k == kind) {
        collect(
            validator,
            value,
            "",
            kind.has_target(),
            fields,
            &mut problems,
        );
    }
    if kind.has_target()
        && let Some(target) = map.get("target")
    {
        check_target(kind, target, &mut problems);
    }
    finish(ErrorCode::InvalidAction, problems)?;
    read(value)
}

/// Validates a `computer_use` call against its schema for a turn that offers `surfaces`.
///
/// Schema problems are [`ErrorCode::InvalidAction`]; a well-formed call that names a surface
/// not in `surfaces` is [`ErrorCode::UnknownSurface`]. Resolving an absent `surface` to the
/// primary one (or `ambiguous_surface`) is [`crate::surface::SurfaceContext::resolve`]'s job.
pub fn validate_computer_use(
    value: &Value,
    surfaces: &[SurfaceName],
) -> Result<ComputerUseInput, ActionError> {
    if !value.is_object() {
        return Err(ActionError::invalid(
            "",
            format!(
                "expected a JSON object with a \"task\" field, got {}",
                json_type(value)
            ),
        ));
    }
    let v = validators();
    let mut problems = Vec::new();
    collect(
        &v.computer_use,
        value,
        "",
        false,
        &v.computer_use_fields,
        &mut problems,
    );
    finish(ErrorCode::InvalidAction, problems)?;
    if let Some(Value::String(name)) = value.get("surface")
        && !surfaces.iter().any(|s| s.as_str() == name)
    {
        let offered = surfaces
            .iter()
            .map(SurfaceName::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        let offered = if offered.is_empty() {
            "none".to_owned()
        } else {
            offered
        };
        return Err(ActionError {
            code: ErrorCode::UnknownSurface,
            problems: vec![Problem::new(
                "/surface",
                format!(
                    "unknown surface {}; this turn offers: {offered}",
                    quote(&Value::String(name.clone()))
                ),
            )],
        });
    }
    read(value)
}
