//! Validation of model JSON: a table of invalid inputs with their code and paths, valid
//! inputs of every kind, and `computer_use` calls.

use protocol::{
    Action, ActionKind, ErrorCode, SurfaceName, validate_action, validate_computer_use,
};
use serde_json::{Value, json};

use crate::click;

/// `base` with `edits` applied: `null` in an edit removes the key.
fn with(base: Value, edits: Value) -> Value {
    let mut out = base;
    for (k, v) in edits.as_object().expect("edits are an object") {
        let map = out.as_object_mut().expect("base is an object");
        if v.is_null() {
            map.remove(k);
        } else {
            map.insert(k.clone(), v.clone());
        }
    }
    out
}

fn of(kind: &str, fields: Value) -> Value {
    with(
        json!({"type": kind, "expected_frame_id": "frame_1", "intent": "do it"}),
        fields,
    )
}

fn el() -> Value {
    json!({"kind": "element", "ref": "e4"})
}

fn long(n: usize) -> String {
    "字".repeat(n)
}

/// (name, input, expected paths). Every row expects `invalid_action`.
fn invalid_table() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        ("array", json!([]), vec![""]),
        ("string", json!("click"), vec![""]),
        ("null", json!(null), vec![""]),
        ("number", json!(3), vec![""]),
        (
            "missing type",
            with(click(), json!({"type": null})),
            vec!["/type"],
        ),
        (
            "type not a string",
            with(click(), json!({"type": 42})),
            vec!["/type"],
        ),
        (
            "unknown type",
            with(click(), json!({"type": "drag"})),
            vec!["/type"],
        ),
        (
            "type is case-sensitive",
            with(click(), json!({"type": "Click"})),
            vec!["/type"],
        ),
        (
            "missing frame",
            with(click(), json!({"expected_frame_id": null})),
            vec!["/expected_frame_id"],
        ),
        (
            "frame without prefix",
            with(click(), json!({"expected_frame_id": "f1"})),
            vec!["/expected_frame_id"],
        ),
        (
            "frame with empty tail",
            with(click(), json!({"expected_frame_id": "frame_"})),
            vec!["/expected_frame_id"],
        ),
        (
            "frame with a space",
            with(click(), json!({"expected_frame_id": "frame_a b"})),
            vec!["/expected_frame_id"],
        ),
        (
            "frame with a newline",
            with(click(), json!({"expected_frame_id": "frame_a\n"})),
            vec!["/expected_frame_id"],
        ),
        (
            "frame not a string",
            with(click(), json!({"expected_frame_id": 7})),
            vec!["/expected_frame_id"],
        ),
        (
            "missing intent",
            with(click(), json!({"intent": null})),
            vec!["/intent"],
        ),
        (
            "empty intent",
            with(click(), json!({"intent": ""})),
            vec!["/intent"],
        ),
        (
            "intent of 241 chars",
            with(click(), json!({"intent": long(241)})),
            vec!["/intent"],
        ),
        (
            "unknown field",
            with(click(), json!({"foo": 1})),
            vec!["/foo"],
        ),
        (
            "unknown field with a slash",
            with(click(), json!({"a/b~": 1})),
            vec!["/a~1b~0"],
        ),
        (
            "click without target",
            with(click(), json!({"target": null})),
            vec!["/target"],
        ),
        (
            "target not an object",
            with(click(), json!({"target": "e1"})),
            vec!["/target"],
        ),
        (
            "target without kind",
            with(click(), json!({"target": {"ref": "e1"}})),
            vec!["/target/kind"],
        ),
        (
            "unknown target kind",
            with(click(), json!({"target": {"kind": "css", "ref": "e1"}})),
            vec!["/target/kind"],
        ),
        (
            "element without ref",
            with(click(), json!({"target": {"kind": "element"}})),
            vec!["/target/ref"],
        ),
        (
            "ref without e",
            with(click(), json!({"target": {"kind": "element", "ref": "12"}})),
            vec!["/target/ref"],
        ),
        (
            "ref without digits",
            with(click(), json!({"target": {"kind": "element", "ref": "e"}})),
            vec!["/target/ref"],
        ),
        (
            "element with x",
            with(
                click(),
                json!({"target": {"kind": "element", "ref": "e1", "x": 1}}),
            ),
            vec!["/target/x"],
        ),
        (
            "negative x",
            with(
                click(),
                json!({"target": {"kind": "point", "x": -1, "y": 0}}),
            ),
            vec!["/target/x"],
        ),
        (
            "point without y",
            with(click(), json!({"target": {"kind": "point", "x": 1}})),
            vec!["/target/y"],
        ),
        (
            "fractional x",
            with(
                click(),
                json!({"target": {"kind": "point", "x": 1.5, "y": 0}}),
            ),
            vec!["/target/x"],
        ),
        (
            "point with ref",
            of(
                "hover",
                json!({"target": {"kind": "point", "x": 1, "y": 2, "ref": "e1"}}),
            ),
            vec!["/target/ref"],
        ),
        (
            "point on type",
            of(
                "type",
                json!({"target": {"kind": "point", "x": 1, "y": 2}, "text": "a"}),
            ),
            vec!["/target/kind"],
        ),
        (
            "point on press",
            of(
                "press",
                json!({"target": {"kind": "point", "x": 1, "y": 2}, "key": "Enter"}),
            ),
            vec!["/target/kind"],
        ),
        (
            "point on select",
            of(
                "select",
                json!({"target": {"kind": "point", "x": 1, "y": 2}, "value": "a"}),
            ),
            vec!["/target/kind"],
        ),
        (
            "type without text",
            of("type", json!({"target": el()})),
            vec!["/text"],
        ),
        (
            "text of 10,001 chars",
            of("type", json!({"target": el(), "text": long(10_001)})),
            vec!["/text"],
        ),
        (
            "text not a string",
            of("type", json!({"target": el(), "text": 5})),
            vec!["/text"],
        ),
        (
            "type without target",
            of("type", json!({"text": "a"})),
            vec!["/target"],
        ),
        (
            "empty key",
            of("press", json!({"target": el(), "key": ""})),
            vec!["/key"],
        ),
        (
            "key of 65 chars",
            of("press", json!({"target": el(), "key": "k".repeat(65)})),
            vec!["/key"],
        ),
        (
            "delta_y over 2000",
            of("scroll", json!({"delta_y": 2500})),
            vec!["/delta_y"],
        ),
        (
            "delta_y under -2000",
            of("scroll", json!({"delta_y": -2001})),
            vec!["/delta_y"],
        ),
        (
            "delta_y as a string",
            of("scroll", json!({"delta_y": "100"})),
            vec!["/delta_y"],
        ),
        (
            "fractional delta_y",
            of("scroll", json!({"delta_y": 1.5})),
            vec!["/delta_y"],
        ),
        (
            "scroll with a target",
            of("scroll", json!({"delta_y": 10, "target": el()})),
            vec!["/target"],
        ),
        (
            "scroll without delta_y",
            of("scroll", json!({})),
            vec!["/delta_y"],
        ),
        (
            "value of 2,001 chars",
            of("select", json!({"target": el(), "value": "v".repeat(2001)})),
            vec!["/value"],
        ),
        (
            "select without value",
            of("select", json!({"target": el()})),
            vec!["/value"],
        ),
        (
            "ftp url",
            of("navigate", json!({"url": "ftp://example.com"})),
            vec!["/url"],
        ),
        (
            "javascript url",
            of("navigate", json!({"url": "javascript:alert(1)"})),
            vec!["/url"],
        ),
        (
            "upper-case scheme",
            of("navigate", json!({"url": "HTTP://example.com"})),
            vec!["/url"],
        ),
        (
            "url of 2,049 chars",
            of(
                "navigate",
                json!({"url": format!("https://{}", "a".repeat(2041))}),
            ),
            vec!["/url"],
        ),
        (
            "navigate with a target",
            of("navigate", json!({"url": "https://a.test", "target": el()})),
            vec!["/target"],
        ),
        (
            "wait over 5000",
            of("wait", json!({"duration_ms": 5001})),
            vec!["/duration_ms"],
        ),
        (
            "negative wait",
            of("wait", json!({"duration_ms": -1})),
            vec!["/duration_ms"],
        ),
        (
            "wait without duration",
            of("wait", json!({})),
            vec!["/duration_ms"],
        ),
        (
            "every problem at once",
            json!({"type": "scroll", "expected_frame_id": "f1", "delta_y": 2500, "foo": 1, "intent": ""}),
            vec!["/delta_y", "/expected_frame_id", "/foo", "/intent"],
        ),
    ]
}

#[test]
fn invalid_inputs_are_rejected_with_code_and_paths() {
    let table = invalid_table();
    assert!(
        table.len() >= 40,
        "the issue asks for at least 40 rows, have {}",
        table.len()
    );
    let mut rendered = String::new();
    for (name, input, paths) in table {
        let err = match validate_action(&input) {
            Ok(action) => panic!("{name}: accepted as {action:?}"),
            Err(e) => e,
        };
        assert_eq!(err.code, ErrorCode::InvalidAction, "{name}");
        let got: Vec<&str> = err.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(got, paths, "{name}: {err}");
        // The strict schema agrees that the input is invalid.
        assert!(
            !crate::strict_validator().is_valid(&input),
            "{name}: the strict schema accepts it"
        );
        rendered.push_str(&format!("{name}\n  {err}\n"));
    }
    insta::assert_snapshot!("invalid_action_messages", rendered);
}

#[test]
fn messages_are_precise() {
    let message = |input: Value| validate_action(&input).expect_err("invalid").to_string();
    assert!(
        message(of("scroll", json!({"delta_y": 2500})))
            .contains("/delta_y: 2500 is greater than the maximum of 2000")
    );
    assert!(message(with(click(), json!({"foo": 1}))).contains("/foo: unknown field"));
    assert!(
        message(of(
            "type",
            json!({"target": {"kind": "point", "x": 1, "y": 2}, "text": "a"})
        ))
        .contains("/target/kind: point targets are only allowed for click and hover")
    );
    let unknown = message(with(click(), json!({"type": "drag"})));
    for kind in ActionKind::ALL {
        assert!(unknown.contains(kind.as_str()), "{unknown} lists {kind}");
    }
    // A long value is quoted cut, not whole.
    let huge = message(with(
        click(),
        json!({"expected_frame_id": "x".repeat(5000)}),
    ));
    assert!(huge.len() < 400, "{huge}");
}

#[test]
fn every_kind_accepts_its_valid_form() {
    let cases = [
        (click(), ActionKind::Click),
        (
            of(
                "click",
                json!({"target": {"kind": "point", "x": 0, "y": 0}}),
            ),
            ActionKind::Click,
        ),
        (
            of("type", json!({"target": el(), "text": ""})),
            ActionKind::Type,
        ),
        (
            of("type", json!({"target": el(), "text": long(10_000)})),
            ActionKind::Type,
        ),
        (
            of("press", json!({"target": el(), "key": "Enter"})),
            ActionKind::Press,
        ),
        (of("scroll", json!({"delta_y": -2000})), ActionKind::Scroll),
        (of("scroll", json!({"delta_y": 2000.0})), ActionKind::Scroll),
        (
            of(
                "hover",
                json!({"target": {"kind": "point", "x": 4294967295u64, "y": 3}}),
            ),
            ActionKind::Hover,
        ),
        // Past u32 saturates (outside every viewport; the runtime's viewport check rejects it).
        (
            of(
                "hover",
                json!({"target": {"kind": "point", "x": 1e10, "y": 3}}),
            ),
            ActionKind::Hover,
        ),
        (
            of("select", json!({"target": el(), "value": ""})),
            ActionKind::Select,
        ),
        (
            of("navigate", json!({"url": "http://localhost:8080/a?b=c"})),
            ActionKind::Navigate,
        ),
        (of("wait", json!({"duration_ms": 0})), ActionKind::Wait),
        (of("wait", json!({"duration_ms": 5000})), ActionKind::Wait),
    ];
    let strict = crate::strict_validator();
    for (input, kind) in cases {
        let action: Action = validate_action(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(action.kind(), kind);
        assert_eq!(action.expected_frame_id().as_str(), "frame_1");
        assert!(strict.is_valid(&input));
    }
}

fn names(list: &[&str]) -> Vec<SurfaceName> {
    list.iter()
        .map(|n| SurfaceName::new(*n).expect("valid"))
        .collect()
}

#[test]
fn computer_use_applies_defaults() {
    let call =
        validate_computer_use(&json!({"task": "find the price"}), &names(&["s1"])).expect("valid");
    assert_eq!(call.task.as_str(), "find the price");
    assert_eq!(call.surface, None);
    assert_eq!(call.max_steps.get(), 20);
    assert_eq!(call.max_seconds.get(), 300);
    let call = validate_computer_use(
        &json!({"task": "t", "surface": "right", "url": "https://a.test/", "max_steps": 100, "max_seconds": 1}),
        &names(&["s1", "right"]),
    )
    .expect("valid");
    assert_eq!(
        call.surface.as_ref().map(SurfaceName::as_str),
        Some("right")
    );
}

#[test]
fn computer_use_rejections() {
    let surfaces = names(&["s1", "right"]);
    let rows = [
        (json!({}), ErrorCode::InvalidAction, vec!["/task"]),
        (json!({"task": ""}), ErrorCode::InvalidAction, vec!["/task"]),
        (
            json!({"task": "t", "max_steps": 101}),
            ErrorCode::InvalidAction,
            vec!["/max_steps"],
        ),
        (
            json!({"task": "t", "max_seconds": 0}),
            ErrorCode::InvalidAction,
            vec!["/max_seconds"],
        ),
        (
            json!({"task": "t", "url": "file:///etc/passwd"}),
            ErrorCode::InvalidAction,
            vec!["/url"],
        ),
        (
            json!({"task": "t", "tab_id": "x"}),
            ErrorCode::InvalidAction,
            vec!["/tab_id"],
        ),
        (
            json!({"task": "t", "surface": "left"}),
            ErrorCode::UnknownSurface,
            vec!["/surface"],
        ),
        (
            json!({"task": "t", "surface": "S1"}),
            ErrorCode::UnknownSurface,
            vec!["/surface"],
        ),
        (json!([1]), ErrorCode::InvalidAction, vec![""]),
    ];
    for (input, code, paths) in rows {
        let err = validate_computer_use(&input, &surfaces).expect_err("invalid");
        assert_eq!(err.code, code, "{input}");
        let got: Vec<&str> = err.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(got, paths, "{input}: {err}");
    }
    let err = validate_computer_use(&json!({"task": "t", "surface": "s1"}), &[])
        .expect_err("no surfaces");
    assert_eq!(err.code, ErrorCode::UnknownSurface);
}

#[test]
fn error_codes_are_the_designs() {
    let wire: Vec<Value> = ErrorCode::ALL
        .iter()
        .map(|c| serde_json::to_value(c).expect("serializes"))
        .collect();
    let expected = [
        "ambiguous_surface",
        "unknown_surface",
        "capability_denied",
        "target_lost",
        "stale_observation",
        "lease_conflict",
        "origin_denied",
        "needs_approval",
        "approval_denied",
        "new_surface_created",
        "invalid_action",
        "step_limit",
        "timeout",
        "cancelled",
        "backend_unavailable",
        "internal",
    ];
    assert_eq!(wire, expected.map(Value::from).to_vec());
    for c in ErrorCode::ALL {
        assert_eq!(
            serde_json::to_value(c).expect("serializes"),
            json!(c.as_str())
        );
    }
    let err = validate_action(&json!(1)).expect_err("invalid");
    let body = serde_json::to_value(&err).expect("serializes");
    assert_eq!(body["code"], "invalid_action");
    assert_eq!(body["problems"][0]["path"], "");
}
