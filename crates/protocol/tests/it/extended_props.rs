//! Property tests of the extended set: every v1 action reads the same as an extended action;
//! extended actions round-trip; arbitrary and mutated JSON never panic the validator, which
//! agrees with the strict extended schema; the hand-written checkers agree with their patterns.

use proptest::prelude::*;
use protocol::action::{DeltaY, HttpUrl, KeyName, SelectValue, TypedText, WaitMillis};
use protocol::extended::{
    AriaRole, ClickAction, ClickCount, DeltaX, DialogAction, DialogResponse, DragAction, DragMode,
    DragPath, ElementSpec, FrameChain, FrameStep, HoverAction, KeyAction, Locator, LocatorText,
    Modifier, Modifiers, MouseButton, NavigateAction, Offset, OffsetPx, PressAction, PromptText,
    ScrollAction, ScrollDelta, SelectAction, SelectChoice, SelectValues, SingleKey, Target, TestId,
    TypeAction, TypeMode, UploadAction, UploadFiles, UploadName, WaitAction, Waypoint,
};
use protocol::{
    ErrorCode, ExtendedAction, PointTarget, extended_action_schema, validate_extended_action,
};
use serde_json::{Map, Value, json};

use crate::props::{action, chars, element, frame, intent, json_value};

/// The strict extended schema's validator, compiled independently of the crate's own.
pub fn strict_extended() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::draft202012::new(extended_action_schema())
            .expect("the extended schema compiles")
    })
}

fn locator_text() -> impl Strategy<Value = LocatorText> {
    chars(1..=40).prop_map(|s| LocatorText::new(s).expect("in bounds"))
}

fn test_id() -> impl Strategy<Value = TestId> {
    "[a-z0-9-]{1,16}".prop_map(|s| TestId::new(s).expect("in bounds"))
}

fn frame_chain() -> impl Strategy<Value = Option<FrameChain>> {
    let step = prop_oneof![
        element().prop_map(FrameStep::from),
        (locator_text(), any::<bool>()).prop_map(|(text, exact)| FrameStep::Title { text, exact }),
        test_id().prop_map(|id| FrameStep::TestId { id }),
    ];
    prop::option::of(
        prop::collection::vec(step, 1..=4)
            .prop_map(|steps| FrameChain::new(steps).expect("1..=4 steps")),
    )
}

fn locator() -> impl Strategy<Value = Locator> {
    prop_oneof![
        (
            "[a-z]{1,12}(-[a-z]{1,6})?",
            prop::option::of(locator_text()),
            any::<bool>(),
            frame_chain()
        )
            .prop_map(|(role, name, exact, frame)| Locator::Role {
                role: AriaRole::new(role).expect("well formed"),
                name,
                exact,
                frame,
            }),
        (locator_text(), any::<bool>(), frame_chain())
            .prop_map(|(text, exact, frame)| Locator::Label { text, exact, frame }),
        (locator_text(), any::<bool>(), frame_chain())
            .prop_map(|(text, exact, frame)| Locator::Text { text, exact, frame }),
        (test_id(), frame_chain()).prop_map(|(id, frame)| Locator::TestId { id, frame }),
    ]
}

fn element_spec() -> impl Strategy<Value = ElementSpec> {
    prop_oneof![
        element().prop_map(ElementSpec::Ref),
        locator().prop_map(ElementSpec::Locator),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        element().prop_map(Target::Ref),
        locator().prop_map(Target::Locator),
        (any::<u32>(), any::<u32>()).prop_map(|(x, y)| Target::Point(PointTarget { x, y })),
    ]
}

fn modifiers() -> impl Strategy<Value = Modifiers> {
    prop::sample::subsequence(
        vec![
            Modifier::Shift,
            Modifier::Alt,
            Modifier::Meta,
            Modifier::Control,
        ],
        0..=4,
    )
    .prop_map(|m| Modifiers::new(m).expect("distinct"))
}

fn single_key() -> impl Strategy<Value = SingleKey> {
    prop_oneof![Just("+".to_owned()), "[A-Za-z0-9]{1,12}"]
        .prop_map(|k| SingleKey::new(k).expect("one key"))
}

fn upload_name() -> impl Strategy<Value = UploadName> {
    "[a-z0-9_-]{1,8}(\\.[a-z]{1,4})?(/[a-z0-9 ._-]{0,6}[a-z])?"
        .prop_map(|n| UploadName::new(n).expect("a safe name"))
}

fn extended_action() -> impl Strategy<Value = ExtendedAction> {
    let button = prop::sample::select(vec![
        MouseButton::Left,
        MouseButton::Right,
        MouseButton::Middle,
    ]);
    prop_oneof![
        (
            frame(),
            target(),
            button,
            1i64..=3,
            modifiers(),
            any::<bool>(),
            intent()
        )
            .prop_map(
                |(expected_frame_id, target, button, count, modifiers, expect_download, intent)| {
                    ExtendedAction::Click(ClickAction {
                        expected_frame_id,
                        target,
                        button,
                        click_count: ClickCount::new(count).expect("in range"),
                        modifiers,
                        expect_download,
                        intent,
                    })
                }
            ),
        (frame(), target(), modifiers(), intent()).prop_map(
            |(expected_frame_id, target, modifiers, intent)| {
                ExtendedAction::Hover(HoverAction {
                    expected_frame_id,
                    target,
                    modifiers,
                    intent,
                })
            }
        ),
        (
            frame(),
            element_spec(),
            chars(0..=100),
            prop::sample::select(vec![TypeMode::Auto, TypeMode::Paste, TypeMode::Keystrokes]),
            intent()
        )
            .prop_map(|(expected_frame_id, target, text, mode, intent)| {
                ExtendedAction::Type(TypeAction {
                    expected_frame_id,
                    target,
                    text: TypedText::new(text).expect("in bounds"),
                    mode,
                    intent,
                })
            }),
        (frame(), element_spec(), chars(1..=64), intent()).prop_map(
            |(expected_frame_id, target, key, intent)| {
                ExtendedAction::Press(PressAction {
                    expected_frame_id,
                    target,
                    key: KeyName::new(key).expect("in bounds"),
                    intent,
                })
            }
        ),
        (
            frame(),
            prop::option::of(element_spec()),
            single_key(),
            any::<bool>(),
            intent()
        )
            .prop_map(|(expected_frame_id, target, key, down, intent)| {
                let a = KeyAction {
                    expected_frame_id,
                    target,
                    key,
                    intent,
                };
                if down {
                    ExtendedAction::KeyDown(a)
                } else {
                    ExtendedAction::KeyUp(a)
                }
            }),
        (
            frame(),
            prop::option::of(element_spec()),
            prop::option::of(-2000i64..=2000),
            prop::option::of(-2000i64..=2000),
            intent()
        )
            .prop_filter("one delta", |(_, _, x, y, _)| x.is_some() || y.is_some())
            .prop_map(|(expected_frame_id, target, x, y, intent)| {
                let delta = ScrollDelta::new(
                    x.map(|x| DeltaX::new(x).expect("in range")),
                    y.map(|y| DeltaY::new(y).expect("in range")),
                )
                .expect("one delta");
                ExtendedAction::Scroll(ScrollAction {
                    expected_frame_id,
                    target,
                    delta,
                    intent,
                })
            }),
        (
            frame(),
            element_spec(),
            prop::collection::hash_set(chars(0..=20), 1..=5),
            any::<bool>(),
            intent()
        )
            .prop_map(|(expected_frame_id, target, values, one, intent)| {
                let mut values: Vec<SelectValue> = values
                    .into_iter()
                    .map(|v| SelectValue::new(v).expect("in bounds"))
                    .collect();
                let choice = if one {
                    SelectChoice::One(values.remove(0))
                } else {
                    SelectChoice::Many(SelectValues::new(values).expect("distinct"))
                };
                ExtendedAction::Select(SelectAction {
                    expected_frame_id,
                    target,
                    choice,
                    intent,
                })
            }),
        (frame(), "https?://", chars(0..=40), intent()).prop_map(
            |(expected_frame_id, scheme, rest, intent)| {
                ExtendedAction::Navigate(NavigateAction {
                    expected_frame_id,
                    url: HttpUrl::new(scheme + &rest).expect("in bounds"),
                    intent,
                })
            }
        ),
        (frame(), 0i64..=5000, intent()).prop_map(|(expected_frame_id, ms, intent)| {
            ExtendedAction::Wait(WaitAction {
                expected_frame_id,
                duration_ms: WaitMillis::new(ms).expect("in range"),
                intent,
            })
        }),
        (
            frame(),
            target(),
            target(),
            prop::collection::vec((any::<u32>(), any::<u32>()), 0..=50),
            prop::option::of((-2000i64..=2000, -2000i64..=2000)),
            any::<bool>(),
            intent()
        )
            .prop_map(
                |(expected_frame_id, source, destination, path, offset, html5, intent)| {
                    ExtendedAction::Drag(DragAction {
                        expected_frame_id,
                        source,
                        destination,
                        path: DragPath::new(
                            path.into_iter().map(|(x, y)| Waypoint { x, y }).collect(),
                        )
                        .expect("≤ 50"),
                        end_offset: offset.map(|(x, y)| Offset {
                            x: OffsetPx::new(x).expect("in range"),
                            y: OffsetPx::new(y).expect("in range"),
                        }),
                        mode: if html5 {
                            DragMode::Html5
                        } else {
                            DragMode::Mouse
                        },
                        intent,
                    })
                }
            ),
        (
            frame(),
            element_spec(),
            prop::collection::hash_set(upload_name(), 1..=20),
            intent()
        )
            .prop_map(|(expected_frame_id, target, files, intent)| {
                ExtendedAction::Upload(UploadAction {
                    expected_frame_id,
                    target,
                    files: UploadFiles::new(files.into_iter().collect()).expect("distinct"),
                    intent,
                })
            }),
        (
            frame(),
            any::<bool>(),
            prop::option::of(chars(0..=40)),
            intent()
        )
            .prop_map(|(expected_frame_id, accept, text, intent)| {
                let response = if accept {
                    DialogResponse::Accept {
                        prompt_text: text.map(|t| PromptText::new(t).expect("in bounds")),
                    }
                } else {
                    DialogResponse::Dismiss
                };
                ExtendedAction::Dialog(DialogAction {
                    expected_frame_id,
                    response,
                    intent,
                })
            }),
    ]
}

/// A valid extended action's JSON with one field replaced, added or removed, or with one
/// field of its first target replaced.
fn mutated_extended() -> impl Strategy<Value = Value> {
    (
        extended_action(),
        json_value(),
        any::<prop::sample::Index>(),
        0u8..4,
    )
        .prop_map(|(a, junk, index, op)| {
            let mut value = serde_json::to_value(&a).expect("serializes");
            let map: &mut Map<String, Value> = value.as_object_mut().expect("object");
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = index.get(&keys).clone();
            match op {
                0 => {
                    map.insert(key, junk);
                }
                1 => {
                    map.remove(&key);
                }
                2 => {
                    map.insert("extra".into(), junk);
                }
                _ => {
                    let field = if map.contains_key("target") {
                        "target"
                    } else {
                        "source"
                    };
                    if let Some(Value::Object(t)) = map.get_mut(field) {
                        let keys: Vec<String> = t.keys().cloned().collect();
                        t.insert(index.get(&keys).clone(), junk);
                    }
                }
            }
            value
        })
}

fn check_any_input(input: &Value) -> Result<(), TestCaseError> {
    let strict = strict_extended();
    match validate_extended_action(input) {
        Ok(action) => {
            prop_assert!(
                strict.is_valid(input),
                "accepted but the strict schema rejects: {input}"
            );
            let again = serde_json::to_value(&action).expect("serializes");
            prop_assert_eq!(validate_extended_action(&again), Ok(action));
        }
        Err(err) => {
            prop_assert_eq!(err.code, ErrorCode::InvalidAction);
            prop_assert!(!err.problems.is_empty());
            for p in &err.problems {
                prop_assert!(
                    p.path.is_empty() || p.path.starts_with('/'),
                    "path {:?}",
                    p.path
                );
                prop_assert!(!p.message.is_empty());
            }
            prop_assert!(
                !strict.is_valid(input),
                "rejected ({err}) but the strict schema accepts: {input}"
            );
        }
    }
    Ok(())
}

/// Arbitrary JSON with the extended vocabulary mixed in.
fn extended_json() -> impl Strategy<Value = Value> {
    let kind = prop::sample::select(vec![
        "drag", "key_down", "upload", "dialog", "scroll", "select", "click",
    ]);
    (json_value(), kind, json_value(), json_value()).prop_map(|(base, kind, a, b)| {
        let mut map = match base {
            Value::Object(m) => m,
            other => Map::from_iter([("x".to_owned(), other)]),
        };
        map.insert("type".into(), json!(kind));
        map.insert("expected_frame_id".into(), json!("frame_1"));
        map.insert("intent".into(), json!("go"));
        map.insert("files".into(), a.clone());
        map.insert("source".into(), b);
        map.insert("values".into(), a);
        Value::Object(map)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_v1_action_is_the_same_extended_action(a in action()) {
        let value = serde_json::to_value(&a).expect("serializes");
        let extended = ExtendedAction::from(a.clone());
        prop_assert_eq!(validate_extended_action(&value), Ok(extended.clone()));
        prop_assert!(strict_extended().is_valid(&value), "{value}");
        // Same JSON back, and the v1 action back.
        prop_assert_eq!(serde_json::to_value(&extended).expect("serializes"), value);
        prop_assert_eq!(extended.as_v1(), Some(a.clone()));
        prop_assert_eq!(extended.kind().as_v1(), Some(a.kind()));
        prop_assert_eq!(extended.expected_frame_id(), a.expected_frame_id());
        prop_assert_eq!(extended.intent(), a.intent());
        prop_assert_eq!(extended.mutates(), a.kind().mutates());
    }

    #[test]
    fn extended_actions_round_trip(a in extended_action()) {
        let value = serde_json::to_value(&a).expect("serializes");
        prop_assert!(strict_extended().is_valid(&value), "{value}");
        prop_assert_eq!(validate_extended_action(&value), Ok(a.clone()));
        let text = serde_json::to_string(&a).expect("serializes");
        prop_assert_eq!(serde_json::from_str::<ExtendedAction>(&text).expect("parses"), a.clone());
        // as_v1 is partial, and exact where it answers.
        if let Some(v1) = a.as_v1() {
            prop_assert_eq!(ExtendedAction::from(v1), a);
        }
    }

    #[test]
    fn arbitrary_json_yields_an_extended_action_or_a_structured_error(input in json_value()) {
        check_any_input(&input)?;
    }

    #[test]
    fn extended_shaped_json_yields_an_action_or_a_structured_error(input in extended_json()) {
        check_any_input(&input)?;
    }

    #[test]
    fn mutated_extended_actions_yield_an_action_or_a_structured_error(input in mutated_extended()) {
        check_any_input(&input)?;
    }

    #[test]
    fn upload_name_checker_matches_the_published_pattern(s in "(/|~|\\.|\\.\\.)?[a.b/~:\\\\ \u{0}\n é]{0,8}") {
        let schema = json!({"type": "string", "minLength": 1, "maxLength": 255,
            "pattern": protocol::extended::fields::UPLOAD_NAME_PATTERN});
        let by_schema = jsonschema::draft202012::is_valid(&schema, &json!(s));
        prop_assert_eq!(UploadName::new(s.clone()).is_ok(), by_schema, "{:?}", s);
    }

    #[test]
    fn single_key_and_role_checkers_match_their_patterns(s in "[a+A-]{0,5}") {
        let key = json!({"type": "string", "minLength": 1, "maxLength": 64,
            "pattern": protocol::extended::fields::SINGLE_KEY_PATTERN});
        prop_assert_eq!(SingleKey::new(s.clone()).is_ok(), jsonschema::draft202012::is_valid(&key, &json!(s)), "{:?}", s);
        let role = json!({"type": "string", "minLength": 1, "maxLength": 64,
            "pattern": protocol::extended::locator::ARIA_ROLE_PATTERN});
        prop_assert_eq!(AriaRole::new(s.clone()).is_ok(), jsonschema::draft202012::is_valid(&role, &json!(s)), "{:?}", s);
    }
}
