//! Property tests: valid actions round-trip; arbitrary JSON never panics the validator and
//! the validator agrees with the strict schema; id checkers agree with the published patterns.

use proptest::prelude::*;
use protocol::action::{DeltaY, HttpUrl, KeyName, SelectValue, TypedText, WaitMillis};
use protocol::{
    Action, AnyTarget, ElementRef, ElementTarget, ErrorCode, FrameId, Intent, PointTarget,
    validate_action,
};
use serde_json::{Map, Value, json};

pub fn chars(range: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), range).prop_map(String::from_iter)
}

pub fn frame() -> impl Strategy<Value = FrameId> {
    "frame_[A-Za-z0-9_-]{1,24}".prop_map(|s| FrameId::new(s).expect("matches the pattern"))
}

pub fn intent() -> impl Strategy<Value = Intent> {
    chars(1..=240).prop_map(|s| Intent::new(s).expect("in bounds"))
}

pub fn element() -> impl Strategy<Value = ElementTarget> {
    any::<u32>().prop_map(|i| ElementTarget {
        element: ElementRef::from_index(i),
    })
}

pub fn any_target() -> impl Strategy<Value = AnyTarget> {
    prop_oneof![
        element().prop_map(AnyTarget::Element),
        (any::<u32>(), any::<u32>()).prop_map(|(x, y)| AnyTarget::Point(PointTarget { x, y })),
    ]
}

pub fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (frame(), any_target(), intent()).prop_map(|(expected_frame_id, target, intent)| {
            Action::Click {
                expected_frame_id,
                target,
                intent,
            }
        }),
        (frame(), element(), chars(0..=300), intent()).prop_map(
            |(expected_frame_id, target, text, intent)| {
                Action::Type {
                    expected_frame_id,
                    target,
                    text: TypedText::new(text).expect("in bounds"),
                    intent,
                }
            }
        ),
        (frame(), element(), chars(1..=64), intent()).prop_map(
            |(expected_frame_id, target, key, intent)| {
                Action::Press {
                    expected_frame_id,
                    target,
                    key: KeyName::new(key).expect("in bounds"),
                    intent,
                }
            }
        ),
        (frame(), -2000i64..=2000, intent()).prop_map(|(expected_frame_id, d, intent)| {
            Action::Scroll {
                expected_frame_id,
                delta_y: DeltaY::new(d).expect("in range"),
                intent,
            }
        }),
        (frame(), any_target(), intent()).prop_map(|(expected_frame_id, target, intent)| {
            Action::Hover {
                expected_frame_id,
                target,
                intent,
            }
        }),
        (frame(), element(), chars(0..=200), intent()).prop_map(
            |(expected_frame_id, target, value, intent)| {
                Action::Select {
                    expected_frame_id,
                    target,
                    value: SelectValue::new(value).expect("in bounds"),
                    intent,
                }
            }
        ),
        (frame(), "https?://", chars(0..=100), intent()).prop_map(
            |(expected_frame_id, scheme, rest, intent)| {
                Action::Navigate {
                    expected_frame_id,
                    url: HttpUrl::new(scheme + &rest).expect("in bounds"),
                    intent,
                }
            }
        ),
        (frame(), 0i64..=5000, intent()).prop_map(|(expected_frame_id, ms, intent)| Action::Wait {
            expected_frame_id,
            duration_ms: WaitMillis::new(ms).expect("in range"),
            intent
        }),
    ]
}

/// Arbitrary JSON, with keys biased toward the ones the schema knows.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop_oneof![
            Just("click".to_owned()),
            Just("point".to_owned()),
            Just("element".to_owned()),
            Just("frame_1".to_owned()),
            Just("e1".to_owned()),
            chars(0..=12),
        ]
        .prop_map(Value::from),
    ];
    let key = prop_oneof![
        prop::sample::select(vec![
            "type",
            "expected_frame_id",
            "target",
            "kind",
            "ref",
            "x",
            "y",
            "intent",
            "text",
            "key",
            "delta_y",
            "value",
            "url",
            "duration_ms",
        ])
        .prop_map(str::to_owned),
        chars(0..=6),
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A valid action's JSON with one field replaced, added or removed.
fn mutated_action() -> impl Strategy<Value = Value> {
    (action(), json_value(), any::<prop::sample::Index>(), 0u8..3).prop_map(
        |(a, junk, index, op)| {
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
                _ => {
                    map.insert("extra".into(), junk);
                }
            }
            value
        },
    )
}

fn check_any_input(input: &Value) -> Result<(), TestCaseError> {
    let strict = crate::strict_validator();
    match validate_action(input) {
        Ok(action) => {
            prop_assert!(
                strict.is_valid(input),
                "accepted but the strict schema rejects: {input}"
            );
            let again = serde_json::to_value(&action).expect("serializes");
            prop_assert_eq!(validate_action(&again), Ok(action));
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn valid_actions_round_trip(a in action()) {
        let value = serde_json::to_value(&a).expect("serializes");
        prop_assert!(crate::strict_validator().is_valid(&value), "{value}");
        prop_assert_eq!(validate_action(&value).expect("valid"), a.clone());
        let text = serde_json::to_string(&a).expect("serializes");
        prop_assert_eq!(serde_json::from_str::<Action>(&text).expect("parses"), a);
    }

    #[test]
    fn arbitrary_json_yields_an_action_or_a_structured_error(input in json_value()) {
        check_any_input(&input)?;
    }

    #[test]
    fn mutated_actions_yield_an_action_or_a_structured_error(input in mutated_action()) {
        check_any_input(&input)?;
    }

    #[test]
    fn frame_id_checker_matches_the_published_pattern(s in "(frame_|fram|frame|x)[A-Za-z0-9_ \\-\n.é]{0,6}") {
        let schema = json!({"type": "string", "pattern": protocol::ids::FRAME_ID_PATTERN});
        let by_schema = jsonschema::draft202012::is_valid(&schema, &json!(s));
        prop_assert_eq!(FrameId::new(s.clone()).is_ok(), by_schema, "{:?}", s);
    }

    #[test]
    fn element_ref_checker_matches_the_published_pattern(s in "(e|E|x)?[0-9a\n]{0,4}") {
        let schema = json!({"type": "string", "pattern": protocol::ids::ELEMENT_REF_PATTERN});
        let by_schema = jsonschema::draft202012::is_valid(&schema, &json!(s));
        prop_assert_eq!(ElementRef::new(s.clone()).is_ok(), by_schema, "{:?}", s);
    }
}
