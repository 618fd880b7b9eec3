//! Validation of extended actions: a table of invalid inputs with their paths, valid inputs of
//! every kind and target kind, the v1 inputs read as extended ones, messages, and the helpers.

use protocol::extended::{DialogResponse, DragMode, Modifier, MouseButton, SelectChoice, TypeMode};
use protocol::{
    Action, ErrorCode, ExtendedAction, ExtendedKind, Locator, TargetRef, validate_action,
    validate_extended_action,
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

fn pt() -> Value {
    json!({"kind": "point", "x": 10, "y": 20})
}

fn role(name: &str) -> Value {
    json!({"kind": "role", "role": "button", "name": name})
}

fn drag(fields: Value) -> Value {
    with(
        of("drag", json!({"source": el(), "destination": pt()})),
        fields,
    )
}

fn upload(files: Value) -> Value {
    of("upload", json!({"target": el(), "files": files}))
}

fn points(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!({"x": i, "y": i})).collect())
}

/// (name, input, expected paths). Every row expects `invalid_action`.
fn invalid_table() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        ("not an object", json!(["click"]), vec![""]),
        ("unknown type", of("swipe", json!({})), vec!["/type"]),
        (
            "missing frame",
            with(click(), json!({"expected_frame_id": null})),
            vec!["/expected_frame_id"],
        ),
        (
            "missing intent on drag",
            drag(json!({"intent": null})),
            vec!["/intent"],
        ),
        (
            "unknown field",
            with(click(), json!({"double": true})),
            vec!["/double"],
        ),
        (
            "click_count 4",
            with(click(), json!({"click_count": 4})),
            vec!["/click_count"],
        ),
        (
            "click_count 0",
            with(click(), json!({"click_count": 0})),
            vec!["/click_count"],
        ),
        (
            "unknown button",
            with(click(), json!({"button": "back"})),
            vec!["/button"],
        ),
        (
            "duplicate modifiers",
            with(click(), json!({"modifiers": ["Shift", "Shift"]})),
            vec!["/modifiers"],
        ),
        (
            "lower-case modifier",
            with(click(), json!({"modifiers": ["shift"]})),
            vec!["/modifiers/0"],
        ),
        (
            "modifiers not an array",
            of("hover", json!({"target": el(), "modifiers": "Shift"})),
            vec!["/modifiers"],
        ),
        (
            "expect_download not a bool",
            with(click(), json!({"expect_download": "yes"})),
            vec!["/expect_download"],
        ),
        (
            "point target on type",
            of("type", json!({"target": pt(), "text": "a"})),
            vec!["/target/kind"],
        ),
        (
            "point target on upload",
            upload(json!(["a.pdf"])).pipe(|v| with(v, json!({"target": pt()}))),
            vec!["/target/kind"],
        ),
        (
            "point target on scroll",
            of("scroll", json!({"delta_y": 1, "target": pt()})),
            vec!["/target/kind"],
        ),
        (
            "unknown type mode",
            of(
                "type",
                json!({"target": el(), "text": "a", "mode": "clipboard"}),
            ),
            vec!["/mode"],
        ),
        (
            "unknown locator kind",
            with(
                click(),
                json!({"target": {"kind": "css", "selector": "#a"}}),
            ),
            vec!["/target/kind"],
        ),
        (
            "empty role",
            with(click(), json!({"target": {"kind": "role", "role": ""}})),
            vec!["/target/role"],
        ),
        (
            "upper-case role",
            with(
                click(),
                json!({"target": {"kind": "role", "role": "Button"}}),
            ),
            vec!["/target/role"],
        ),
        (
            "role of 65 chars",
            with(
                click(),
                json!({"target": {"kind": "role", "role": "a".repeat(65)}}),
            ),
            vec!["/target/role"],
        ),
        (
            "empty role name",
            with(click(), json!({"target": role("")})),
            vec!["/target/name"],
        ),
        (
            "label text of 501 chars",
            with(
                click(),
                json!({"target": {"kind": "label", "text": "x".repeat(501)}}),
            ),
            vec!["/target/text"],
        ),
        (
            "text locator without text",
            with(click(), json!({"target": {"kind": "text"}})),
            vec!["/target/text"],
        ),
        (
            "exact not a bool",
            with(
                click(),
                json!({"target": {"kind": "text", "text": "a", "exact": 1}}),
            ),
            vec!["/target/exact"],
        ),
        (
            "test id with exact",
            with(
                click(),
                json!({"target": {"kind": "test_id", "id": "a", "exact": true}}),
            ),
            vec!["/target/exact"],
        ),
        (
            "element ref with frame",
            with(
                click(),
                json!({"target": {"kind": "element", "ref": "e1", "frame": [el()]}}),
            ),
            vec!["/target/frame"],
        ),
        (
            "empty frame chain",
            with(
                click(),
                json!({"target": {"kind": "text", "text": "a", "frame": []}}),
            ),
            vec!["/target/frame"],
        ),
        (
            "frame chain of 5",
            with(
                click(),
                json!({"target": {"kind": "text", "text": "a", "frame": [el(), el(), el(), el(), el()]}}),
            ),
            vec!["/target/frame"],
        ),
        (
            "frame step by role",
            with(
                click(),
                json!({"target": {"kind": "text", "text": "a", "frame": [el(), role("x")]}}),
            ),
            vec!["/target/frame/1/kind"],
        ),
        (
            "frame step bad ref",
            with(
                click(),
                json!({"target": {"kind": "text", "text": "a", "frame": [{"kind": "element", "ref": "x"}]}}),
            ),
            vec!["/target/frame/0/ref"],
        ),
        (
            "frame step title empty",
            with(
                click(),
                json!({"target": {"kind": "label", "text": "a", "frame": [{"kind": "title", "text": ""}]}}),
            ),
            vec!["/target/frame/0/text"],
        ),
        (
            "both value and values",
            of(
                "select",
                json!({"target": el(), "value": "a", "values": ["b"]}),
            ),
            vec!["/values"],
        ),
        (
            "neither value nor values",
            of("select", json!({"target": el()})),
            vec!["/value"],
        ),
        (
            "empty values",
            of("select", json!({"target": el(), "values": []})),
            vec!["/values"],
        ),
        (
            "duplicate values",
            of("select", json!({"target": el(), "values": ["a", "a"]})),
            vec!["/values"],
        ),
        (
            "51 values",
            of(
                "select",
                json!({"target": el(), "values": (0..51).map(|i| i.to_string()).collect::<Vec<_>>()}),
            ),
            vec!["/values"],
        ),
        (
            "scroll without deltas",
            of("scroll", json!({})),
            vec!["/delta_y"],
        ),
        (
            "delta_x of 2001",
            of("scroll", json!({"delta_x": 2001})),
            vec!["/delta_x"],
        ),
        (
            "drag path of 51 points",
            drag(json!({"path": points(51)})),
            vec!["/path"],
        ),
        (
            "drag path point with kind",
            drag(json!({"path": [{"kind": "point", "x": 1, "y": 1}]})),
            vec!["/path/0/kind"],
        ),
        (
            "drag without source",
            drag(json!({"source": null})),
            vec!["/source"],
        ),
        (
            "drag destination bad ref",
            drag(json!({"destination": {"kind": "element", "ref": "x1"}})),
            vec!["/destination/ref"],
        ),
        (
            "drag end_offset out of range",
            drag(json!({"end_offset": {"x": 2001, "y": 0}})),
            vec!["/end_offset/x"],
        ),
        (
            "drag end_offset missing y",
            drag(json!({"end_offset": {"x": 1}})),
            vec!["/end_offset/y"],
        ),
        (
            "drag unknown mode",
            drag(json!({"mode": "touch"})),
            vec!["/mode"],
        ),
        (
            "key_down chord",
            of("key_down", json!({"key": "Control+A"})),
            vec!["/key"],
        ),
        (
            "key_up empty key",
            of("key_up", json!({"key": ""})),
            vec!["/key"],
        ),
        (
            "key_down point target",
            of("key_down", json!({"key": "Shift", "target": pt()})),
            vec!["/target/kind"],
        ),
        (
            "upload absolute path",
            upload(json!(["/etc/passwd"])),
            vec!["/files/0"],
        ),
        (
            "upload parent segment",
            upload(json!(["ok.pdf", "a/../../secret"])),
            vec!["/files/1"],
        ),
        (
            "upload leading parent",
            upload(json!(["../x"])),
            vec!["/files/0"],
        ),
        (
            "upload home",
            upload(json!(["~/.ssh/id_rsa"])),
            vec!["/files/0"],
        ),
        ("upload NUL", upload(json!(["a\u{0}b"])), vec!["/files/0"]),
        (
            "upload backslash",
            upload(json!(["..\\windows"])),
            vec!["/files/0"],
        ),
        (
            "upload drive letter",
            upload(json!(["C:/x"])),
            vec!["/files/0"],
        ),
        (
            "upload empty segment",
            upload(json!(["a//b"])),
            vec!["/files/0"],
        ),
        ("upload empty name", upload(json!([""])), vec!["/files/0"]),
        ("upload no files", upload(json!([])), vec!["/files"]),
        (
            "upload 21 files",
            upload(Value::Array(
                (0..21).map(|i| json!(format!("f{i}"))).collect(),
            )),
            vec!["/files"],
        ),
        (
            "upload duplicate files",
            upload(json!(["a", "a"])),
            vec!["/files"],
        ),
        (
            "upload files not strings",
            upload(json!([7])),
            vec!["/files/0"],
        ),
        (
            "dialog without accept",
            of("dialog", json!({})),
            vec!["/accept"],
        ),
        (
            "dialog prompt when dismissing",
            of("dialog", json!({"accept": false, "prompt_text": "x"})),
            vec!["/prompt_text"],
        ),
        (
            "dialog prompt too long",
            of(
                "dialog",
                json!({"accept": true, "prompt_text": "x".repeat(10_001)}),
            ),
            vec!["/prompt_text"],
        ),
        (
            "several problems at once",
            with(
                click(),
                json!({"click_count": 9, "button": "x", "target": {"kind": "role", "role": "", "name": ""}}),
            ),
            vec!["/button", "/click_count", "/target/name", "/target/role"],
        ),
    ]
}

/// `Value::pipe`, so table rows can transform a built value inline.
trait Pipe: Sized {
    fn pipe(self, f: impl FnOnce(Self) -> Self) -> Self {
        f(self)
    }
}
impl Pipe for Value {}

#[test]
fn invalid_inputs_name_every_problem_with_its_path() {
    let strict = crate::extended_props::strict_extended();
    let table = invalid_table();
    assert!(table.len() >= 30);
    for (name, input, paths) in table {
        let err = validate_extended_action(&input).expect_err(name);
        assert_eq!(err.code, ErrorCode::InvalidAction, "{name}");
        let got: Vec<&str> = err.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(got, paths, "{name}: {err}");
        assert!(
            !strict.is_valid(&input),
            "{name}: the strict schema accepts it"
        );
    }
}

#[test]
fn invalid_action_messages() {
    let rows = [
        upload(json!(["/etc/passwd", "a/../b", "~x", "C:/y"])),
        of("type", json!({"target": pt(), "text": "a"})),
        with(click(), json!({"modifiers": ["Shift", "Alt", "Shift"]})),
        of(
            "select",
            json!({"target": el(), "value": "a", "values": ["b"]}),
        ),
        of("scroll", json!({})),
        of("key_down", json!({"key": "Control+A"})),
        with(
            click(),
            json!({"target": {"kind": "role", "role": "Button"}}),
        ),
        with(click(), json!({"target": {"kind": "xpath", "q": "//a"}})),
        with(
            click(),
            json!({"target": {"kind": "text", "text": "a", "frame": [{"kind": "name", "name": "x"}]}}),
        ),
        drag(json!({"path": points(51)})),
        of("dialog", json!({"accept": false, "prompt_text": "x"})),
        with(click(), json!({"type": "doubleclick"})),
    ];
    let messages: Vec<String> = rows
        .iter()
        .map(|r| {
            validate_extended_action(r)
                .expect_err("invalid")
                .to_string()
        })
        .collect();
    insta::assert_json_snapshot!("extended_invalid_action_messages", messages);
}

#[test]
fn every_kind_and_target_kind_accepts_its_valid_form() {
    let frame_chain = json!([
        {"kind": "element", "ref": "e7"},
        {"kind": "title", "text": "Payment", "exact": true},
        {"kind": "test_id", "id": "inner"}
    ]);
    let cases = [
        (
            with(
                click(),
                json!({"button": "right", "click_count": 2, "modifiers": ["Shift", "Alt"], "expect_download": true}),
            ),
            ExtendedKind::Click,
        ),
        (
            with(
                click(),
                json!({"target": {"kind": "role", "role": "button", "name": "Save", "exact": true}}),
            ),
            ExtendedKind::Click,
        ),
        (
            with(
                click(),
                json!({"target": {"kind": "label", "text": "Email", "frame": frame_chain}}),
            ),
            ExtendedKind::Click,
        ),
        (
            with(
                click(),
                json!({"target": {"kind": "text", "text": "Sign in"}}),
            ),
            ExtendedKind::Click,
        ),
        (
            with(
                click(),
                json!({"target": {"kind": "test_id", "id": "submit"}}),
            ),
            ExtendedKind::Click,
        ),
        (
            with(
                click(),
                json!({"target": {"kind": "role", "role": "doc-abstract"}}),
            ),
            ExtendedKind::Click,
        ),
        (
            of("hover", json!({"target": pt(), "modifiers": ["Meta"]})),
            ExtendedKind::Hover,
        ),
        (
            of(
                "type",
                json!({"target": {"kind": "label", "text": "Email"}, "text": "a@b.c", "mode": "keystrokes"}),
            ),
            ExtendedKind::Type,
        ),
        (
            of(
                "press",
                json!({"target": {"kind": "test_id", "id": "q"}, "key": "Control+A"}),
            ),
            ExtendedKind::Press,
        ),
        (
            of("key_down", json!({"key": "Shift"})),
            ExtendedKind::KeyDown,
        ),
        (
            of("key_up", json!({"key": "+", "target": el()})),
            ExtendedKind::KeyUp,
        ),
        (of("scroll", json!({"delta_x": -300})), ExtendedKind::Scroll),
        (
            of(
                "scroll",
                json!({"delta_x": 0, "delta_y": 0, "target": {"kind": "role", "role": "list"}}),
            ),
            ExtendedKind::Scroll,
        ),
        (
            of("select", json!({"target": el(), "values": ["a", "b", ""]})),
            ExtendedKind::Select,
        ),
        (
            drag(
                json!({"path": points(50), "end_offset": {"x": -2000, "y": 2000}, "mode": "html5"}),
            ),
            ExtendedKind::Drag,
        ),
        (
            drag(
                json!({"source": {"kind": "text", "text": "Card 1"}, "destination": role("Done")}),
            ),
            ExtendedKind::Drag,
        ),
        (
            upload(json!([
                "report.pdf",
                "scans/page-1.png",
                "upload_7f3a",
                ".hidden",
                "..a",
                "résumé final (2).pdf"
            ])),
            ExtendedKind::Upload,
        ),
        (
            of("dialog", json!({"accept": true, "prompt_text": ""})),
            ExtendedKind::Dialog,
        ),
        (of("dialog", json!({"accept": false})), ExtendedKind::Dialog),
    ];
    let strict = crate::extended_props::strict_extended();
    for (input, kind) in cases {
        let action = validate_extended_action(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(action.kind(), kind);
        assert_eq!(action.expected_frame_id().as_str(), "frame_1");
        assert!(strict.is_valid(&input), "{input}");
        // Extended-only forms are not v1.
        assert!(validate_action(&input).is_err(), "v1 accepts {input}");
    }
}

#[test]
fn v1_inputs_read_with_their_v1_meaning() {
    let inputs = [
        click(),
        of(
            "click",
            json!({"target": {"kind": "point", "x": 0, "y": 0}}),
        ),
        of("type", json!({"target": el(), "text": ""})),
        of("press", json!({"target": el(), "key": "Enter"})),
        of("scroll", json!({"delta_y": 2000.0})),
        of(
            "hover",
            json!({"target": {"kind": "point", "x": 1e10, "y": 3}}),
        ),
        of("select", json!({"target": el(), "value": ""})),
        of("navigate", json!({"url": "http://localhost:8080/a?b=c"})),
        of("wait", json!({"duration_ms": 0})),
    ];
    for input in inputs {
        let v1: Action = validate_action(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
        let extended = validate_extended_action(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(extended, ExtendedAction::from(v1.clone()), "{input}");
        assert_eq!(extended.as_v1(), Some(v1), "{input}");
    }
}

#[test]
fn fields_read_into_their_types() {
    let read = |v: Value| validate_extended_action(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
    let ExtendedAction::Click(c) = read(with(
        click(),
        json!({"button": "middle", "click_count": 3.0, "modifiers": ["Shift", "Control"]}),
    )) else {
        panic!("a click")
    };
    assert_eq!(c.button, MouseButton::Middle);
    assert_eq!(c.click_count.get(), 3);
    assert_eq!(
        c.modifiers.iter().collect::<Vec<_>>(),
        [Modifier::Control, Modifier::Shift]
    );
    // The set serialises in canonical order.
    assert_eq!(
        serde_json::to_value(&c).expect("serializes")["modifiers"],
        json!(["Control", "Shift"])
    );

    let ExtendedAction::Scroll(s) = read(of("scroll", json!({"delta_x": 40}))) else {
        panic!("a scroll")
    };
    assert_eq!((s.delta.x_px(), s.delta.y_px(), s.delta.y()), (40, 0, None));

    let ExtendedAction::Select(s) =
        read(of("select", json!({"target": el(), "values": ["b", "a"]})))
    else {
        panic!("a select")
    };
    let SelectChoice::Many(values) = &s.choice else {
        panic!("several")
    };
    assert_eq!(
        values
            .as_slice()
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>(),
        ["b", "a"]
    );

    let ExtendedAction::Dialog(d) = read(of("dialog", json!({"accept": true}))) else {
        panic!("a dialog")
    };
    assert_eq!(d.response, DialogResponse::Accept { prompt_text: None });

    let ExtendedAction::Type(t) = read(of(
        "type",
        json!({"target": el(), "text": "x", "mode": "paste"}),
    )) else {
        panic!("a type")
    };
    assert_eq!(t.mode, TypeMode::Paste);

    let ExtendedAction::Drag(d) = read(drag(json!({}))) else {
        panic!("a drag")
    };
    assert_eq!(
        (d.mode, d.path.is_empty(), d.end_offset),
        (DragMode::Mouse, true, None)
    );

    let ExtendedAction::Click(c) = read(with(
        click(),
        json!({"target": {"kind": "text", "text": "Go", "frame": [{"kind": "title", "text": "Pay"}]}}),
    )) else {
        panic!("a click")
    };
    let protocol::Target::Locator(locator) = &c.target else {
        panic!("a locator")
    };
    assert_eq!(locator.kind(), "text");
    assert_eq!(locator.frame().map(|f| f.steps().len()), Some(1));
    assert!(matches!(locator, Locator::Text { exact: false, .. }));
}

#[test]
fn helpers_name_targets_kind_and_v1_equivalent() {
    let read = |v: Value| validate_extended_action(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
    let d = read(drag(json!({"source": role("Card")})));
    let targets: Vec<TargetRef<'_>> = d.targets().collect();
    assert!(matches!(
        targets.as_slice(),
        [TargetRef::Locator(_), TargetRef::Point(_)]
    ));
    assert_eq!(d.as_v1(), None);
    assert!(d.mutates());

    assert_eq!(
        read(of("key_down", json!({"key": "Shift"})))
            .targets()
            .count(),
        0
    );
    assert_eq!(
        read(of("key_down", json!({"key": "Shift", "target": el()})))
            .targets()
            .count(),
        1
    );
    assert_eq!(
        read(of("dialog", json!({"accept": true})))
            .targets()
            .count(),
        0
    );
    let wait = read(of("wait", json!({"duration_ms": 5})));
    assert!(!wait.mutates());
    assert!(wait.as_v1().is_some());

    // Extended fields at their defaults are still v1; anything else is not.
    assert!(
        read(with(
            click(),
            json!({"button": "left", "click_count": 1, "modifiers": []})
        ))
        .as_v1()
        .is_some()
    );
    for extra in [
        json!({"click_count": 2}),
        json!({"button": "right"}),
        json!({"modifiers": ["Alt"]}),
        json!({"expect_download": true}),
        json!({"target": role("Save")}),
    ] {
        assert_eq!(read(with(click(), extra.clone())).as_v1(), None, "{extra}");
    }
    assert_eq!(
        read(of("scroll", json!({"delta_y": 5, "delta_x": 0}))).as_v1(),
        None
    );
    assert_eq!(
        read(of("select", json!({"target": el(), "values": ["a"]}))).as_v1(),
        None
    );

    for kind in ExtendedKind::ALL {
        assert_eq!(ExtendedKind::from_wire(kind.as_str()), Some(kind));
        assert_eq!(kind.as_v1().is_some(), kind < ExtendedKind::Drag, "{kind}");
    }
}
