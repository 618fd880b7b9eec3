//! Validation of model JSON against the strict extended schema, before serde reads it; not the
//! runtime's checks of frame, capability, policy or locator resolution.
//!
//! It works like [`crate::validate_action`]: read `type` first and check that one branch;
//! check each target (`target`, `source`, `destination`) against the one kind it names, and
//! each frame step of a locator likewise; state the cross-field rules (`scroll`, `select`,
//! `dialog`) and unsafe upload names in words rather than as `anyOf`/`pattern` failures.
//! Every problem comes back at once with its JSON pointer. Nothing here panics on input.

use std::sync::OnceLock;

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

use crate::error::{ActionError, ErrorCode, Problem};
use crate::extended::action::{ExtendedAction, ExtendedKind};
use crate::extended::fields::UploadName;
use crate::extended::schema::{extended_action_schema, extended_def_fields};
use crate::schema::{branch_of, def_of};
use crate::validate::{
    action_kind, collect_where, compile, field_rank, finish, json_type, property_names, quote, read,
};

/// A compiled schema and the allowed fields of the object it checks, in published order.
struct Checker {
    validator: Validator,
    fields: Vec<String>,
}

fn checker(schema: &Value, mut fields: Vec<String>) -> Checker {
    fields.sort_by_key(|f| (field_rank(f), f.clone()));
    Checker {
        validator: compile(schema),
        fields,
    }
}

fn def_checker(name: &str) -> Checker {
    checker(
        &def_of(extended_action_schema(), name),
        extended_def_fields(name),
    )
}

struct Validators {
    /// One per [`ExtendedKind::ALL`] entry, same order.
    branches: Vec<(ExtendedKind, Checker)>,
    /// Target kinds and their checkers; `point` is filtered out where points are not allowed.
    targets: Vec<(&'static str, Checker)>,
    /// Frame step kinds and their checkers.
    steps: Vec<(&'static str, Checker)>,
}

/// Builds the validators if nobody has yet ([`crate::compile_validators`]).
pub(crate) fn compile_all() {
    validators();
}

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| Validators {
        branches: ExtendedKind::ALL
            .into_iter()
            .map(|kind| {
                let schema = branch_of(extended_action_schema(), kind.as_str());
                let fields = property_names(&schema);
                (kind, checker(&schema, fields))
            })
            .collect(),
        targets: [
            ("element", "elementTarget"),
            ("point", "pointTarget"),
            ("role", "roleLocator"),
            ("label", "labelLocator"),
            ("text", "textLocator"),
            ("test_id", "testIdLocator"),
        ]
        .into_iter()
        .map(|(kind, def)| (kind, def_checker(def)))
        .collect(),
        steps: [
            ("element", "elementTarget"),
            ("title", "titleFrameStep"),
            ("test_id", "testIdFrameStep"),
        ]
        .into_iter()
        .map(|(kind, def)| (kind, def_checker(def)))
        .collect(),
    })
}

/// The allowed kinds, for messages: `click, type, …, dialog`.
fn kinds_list() -> String {
    ExtendedKind::ALL.map(ExtendedKind::as_str).join(", ")
}

/// Whether `path` is `base` or below it.
fn under(path: &str, base: &str) -> bool {
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether `path` is `/files/<index>`.
fn is_file_item(path: &str) -> bool {
    path.strip_prefix("/files/")
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks one object against the checker for the kind it names. `kinds` are the allowed
/// kinds; `what` names the object in messages; `refuse` answers a known kind that is not
/// allowed here. Returns the kind when it was checked.
fn check_kind<'k>(
    value: &Value,
    path: &str,
    kinds: &'k [(&'static str, Checker)],
    what: &str,
    example: &str,
    refuse: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> Option<&'k str> {
    // Kinds refused here are not offered in messages either.
    let names: Vec<&str> = kinds
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| refuse(k).is_none())
        .collect();
    let Value::Object(map) = value else {
        problems.push(Problem::new(
            path,
            format!(
                "expected an object such as {example}, got {}",
                json_type(value)
            ),
        ));
        return None;
    };
    let kind_path = format!("{path}/kind");
    let kind = match map.get("kind") {
        None => {
            problems.push(Problem::new(
                kind_path,
                format!(
                    "missing required field; expected one of: {}",
                    names.join(", ")
                ),
            ));
            return None;
        }
        Some(Value::String(k)) => k,
        Some(other) => {
            problems.push(Problem::new(
                kind_path,
                format!(
                    "expected a string, got {}; one of: {}",
                    json_type(other),
                    names.join(", ")
                ),
            ));
            return None;
        }
    };
    if let Some(reason) = refuse(kind) {
        problems.push(Problem::new(kind_path, reason));
        return None;
    }
    let Some((name, checker)) = kinds.iter().find(|(k, _)| k == kind) else {
        problems.push(Problem::new(
            kind_path,
            format!(
                "unknown {what} kind {}; expected one of: {}",
                quote(&Value::String(kind.clone())),
                names.join(", ")
            ),
        ));
        return None;
    };
    // Frame steps are checked one by one below, each against the kind it names.
    let steps = format!("{path}/frame");
    let skip = |p: &str, _: &ValidationErrorKind| p.starts_with(&format!("{steps}/"));
    collect_where(
        &checker.validator,
        value,
        path,
        &skip,
        &checker.fields,
        problems,
    );
    Some(name)
}

/// Checks a target at `path`; `points`: whether a point target is allowed there.
fn check_target(
    value: &Value,
    path: &str,
    action: ExtendedKind,
    points: bool,
    problems: &mut Vec<Problem>,
) {
    let v = validators();
    let refuse = |kind: &str| {
        (kind == "point" && !points).then(|| {
            format!(
                "point targets are only allowed for click, hover and drag; {action} needs \
                 {{\"kind\":\"element\",\"ref\":…}} or a locator such as \
                 {{\"kind\":\"label\",\"text\":…}}"
            )
        })
    };
    let kinds: &[(&str, Checker)] = &v.targets;
    let example = "{\"kind\":\"element\",\"ref\":\"e12\"} or {\"kind\":\"role\",\"role\":\"button\",\"name\":\"Save\"}";
    let Some(kind) = check_kind(value, path, kinds, "target", example, &refuse, problems) else {
        return;
    };
    if matches!(kind, "element" | "point") {
        return;
    }
    if let Some(Value::Array(steps)) = value.get("frame") {
        for (i, step) in steps.iter().enumerate() {
            let example = "{\"kind\":\"element\",\"ref\":\"e7\"} or {\"kind\":\"title\",\"text\":\"Payment\"}";
            check_kind(
                step,
                &format!("{path}/frame/{i}"),
                &v.steps,
                "frame step",
                example,
                &|_| None,
                problems,
            );
        }
    }
}

/// The cross-field rules of `scroll`, `select` and `dialog`, which the schema states as root
/// `anyOf`/`oneOf`/`if`-`then` keywords.
fn check_rules(kind: ExtendedKind, map: &Map<String, Value>, problems: &mut Vec<Problem>) {
    match kind {
        ExtendedKind::Scroll if !map.contains_key("delta_x") && !map.contains_key("delta_y") => {
            problems.push(Problem::new(
                "/delta_y",
                "missing required field; scroll needs delta_y, delta_x or both",
            ));
        }
        ExtendedKind::Select => match (map.contains_key("value"), map.contains_key("values")) {
            (false, false) => problems.push(Problem::new(
                "/value",
                "missing required field; give value (one option) or values (several options of \
                 a multi-select)",
            )),
            (true, true) => problems.push(Problem::new(
                "/values",
                "give value (one option) or values (several options), not both",
            )),
            _ => {}
        },
        ExtendedKind::Dialog
            if map.get("accept") == Some(&Value::Bool(false))
                && map.contains_key("prompt_text") =>
        {
            problems.push(Problem::new(
                "/prompt_text",
                "only allowed when accept is true (a dismissed prompt takes no text)",
            ));
        }
        _ => {}
    }
}

/// States why each upload name is unsafe, in words; the schema's lengths and types are
/// reported by the schema.
fn check_upload_names(map: &Map<String, Value>, problems: &mut Vec<Problem>) {
    let Some(Value::Array(files)) = map.get("files") else {
        return;
    };
    for (i, file) in files.iter().enumerate() {
        if let Value::String(name) = file
            && let Some(reason) = UploadName::content_problem(name)
        {
            problems.push(Problem::new(format!("/files/{i}"), reason.to_string()));
        }
    }
}

/// Validates model JSON against the strict extended schema ([`crate::EXTENDED_ACTIONS_VERSION`])
/// and reads it.
///
/// Errors are [`ErrorCode::InvalidAction`] with every problem and its JSON pointer, e.g.
/// `/click_count: 4 is greater than the maximum of 3`, `/files/0: absolute paths are never
/// allowed; …`, `/target/kind: point targets are only allowed for click, hover and drag; …`.
/// Every valid v1 action is accepted, with the meaning `ExtendedAction::from` gives it.
pub fn validate_extended_action(value: &Value) -> Result<ExtendedAction, ActionError> {
    let (map, kind) = action_kind(value, ExtendedKind::from_wire, kinds_list)?;
    let v = validators();
    let target_fields = kind.target_fields();
    let skip = |path: &str, error: &ValidationErrorKind| {
        let target = target_fields
            .iter()
            .any(|(field, _)| under(path, &format!("/{field}")));
        let rule = path.is_empty()
            && matches!(
                error,
                ValidationErrorKind::AnyOf { .. }
                    | ValidationErrorKind::OneOfNotValid { .. }
                    | ValidationErrorKind::OneOfMultipleValid { .. }
                    | ValidationErrorKind::Not { .. }
            );
        let upload = is_file_item(path) && matches!(error, ValidationErrorKind::Pattern { .. });
        target || rule || upload
    };
    let mut problems = Vec::new();
    if let Some((_, checker)) = v.branches.iter().find(|(k, _)| *k == kind) {
        collect_where(
            &checker.validator,
            value,
            "",
            &skip,
            &checker.fields,
            &mut problems,
        );
    }
    for (field, points) in target_fields {
        if let Some(target) = map.get(*field) {
            check_target(target, &format!("/{field}"), kind, *points, &mut problems);
        }
    }
    check_rules(kind, map, &mut problems);
    if kind == ExtendedKind::Upload {
        check_upload_names(map, &mut problems);
    }
    finish(ErrorCode::InvalidAction, problems)?;
    read(value)
}
