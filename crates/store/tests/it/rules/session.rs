//! Session records round-trip.

use store::{Entity, SessionId, SessionState, Store, StoreError, TurnId};

#[test]
fn session_round_trips_every_field() {
    let store = super::fresh().expect("open");
    let id = SessionId::new("s1");
    let created = store.create_session(&id, 100).expect("create");
    assert_eq!(created.id, id);
    assert_eq!((created.created_at, created.updated_at), (100, 100));
    assert!(!created.tools_active);
    assert_eq!(created.state, SessionState::Active);
    assert_eq!(created.last_turn_id, None);

    store.set_tools_active(&id, true, 110).expect("tools");
    store
        .set_last_turn(&id, &TurnId::new("turn_1"), 120)
        .expect("turn");
    let s = store
        .set_session_state(&id, SessionState::Reset, 130)
        .expect("state");
    assert!(s.tools_active);
    assert_eq!(s.last_turn_id, Some(TurnId::new("turn_1")));
    assert_eq!(s.state, SessionState::Reset);
    assert_eq!((s.created_at, s.updated_at), (100, 130));
    assert_eq!(store.get_session(&id).expect("get"), s);

    for state in SessionState::ALL {
        let s = store.set_session_state(&id, *state, 140).expect("state");
        assert_eq!(s.state, *state);
    }
}

#[test]
fn duplicate_and_unknown_sessions_are_named_errors() {
    let store = super::fresh().expect("open");
    let id = SessionId::new("s1");
    store.create_session(&id, 1).expect("create");
    assert!(matches!(
        store.create_session(&id, 2),
        Err(StoreError::AlreadyExists {
            what: Entity::Session,
            ..
        })
    ));
    let ghost = SessionId::new("ghost");
    assert!(matches!(
        store.get_session(&ghost),
        Err(StoreError::NotFound {
            what: Entity::Session,
            ..
        })
    ));
    assert!(matches!(
        store.set_tools_active(&ghost, true, 3),
        Err(StoreError::NotFound {
            what: Entity::Session,
            ..
        })
    ));
}

#[test]
fn sessions_list_oldest_first() {
    let store = super::fresh().expect("open");
    for (id, at) in [("b", 2), ("a", 3), ("c", 1)] {
        store
            .create_session(&SessionId::new(id), at)
            .expect("create");
    }
    let ids: Vec<String> = store
        .list_sessions()
        .expect("list")
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(ids, ["c", "b", "a"]);
}

#[test]
fn a_time_past_i64_is_refused_not_wrapped() {
    let store = super::fresh().expect("open");
    assert!(matches!(
        store.create_session(&SessionId::new("s"), u64::MAX),
        Err(StoreError::OutOfRange { field: "now_ms" })
    ));
    assert!(store.list_sessions().expect("list").is_empty());
}
