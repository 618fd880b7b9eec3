//! Recovery records: pending until resolved, attempts counted, never lost on reopen.

use store::{
    Entity, NewRecovery, RecoveryId, RecoveryKind, ResourceId, SessionId, SessionState, Store,
    StoreError,
};

use super::{db_path, session, user_tab};

fn failure(
    session: &SessionId,
    resource: Option<&ResourceId>,
    kind: RecoveryKind,
    now: u64,
) -> NewRecovery {
    NewRecovery {
        session_id: session.clone(),
        resource_id: resource.cloned(),
        kind,
        detail: "bridge offline".into(),
        now_ms: now,
    }
}

#[test]
fn recovery_round_trips_and_counts_attempts_until_resolved() {
    let store = super::fresh().expect("open");
    let s = session(&store, "s1", 1);
    let tab = user_tab(&store, "u1", 1);
    let id = store
        .add_recovery(&failure(&s, Some(&tab), RecoveryKind::CloseFailed, 10))
        .expect("add");
    let r = store.get_recovery(id).expect("get");
    assert_eq!(r.id, id);
    assert_eq!(
        (r.session_id.clone(), r.resource_id.clone()),
        (s.clone(), Some(tab))
    );
    assert_eq!(
        (r.kind.clone(), r.detail.as_str()),
        (RecoveryKind::CloseFailed, "bridge offline")
    );
    assert_eq!(
        (r.attempts, r.created_at, r.last_attempt_at, r.resolved_at),
        (1, 10, 10, None)
    );

    let r = store.record_attempt(id, None, 20).expect("attempt");
    assert_eq!(
        (r.attempts, r.last_attempt_at, r.detail.as_str()),
        (2, 20, "bridge offline")
    );
    let r = store
        .record_attempt(id, Some("target gone"), 30)
        .expect("attempt");
    assert_eq!((r.attempts, r.detail.as_str()), (3, "target gone"));
    assert_eq!(store.pending_recoveries(&s).expect("pending"), [r]);

    let resolved = store.resolve_recovery(id, 40).expect("resolve");
    assert_eq!(resolved.resolved_at, Some(40));
    // Idempotent: the first resolution stands.
    assert_eq!(
        store.resolve_recovery(id, 50).expect("again").resolved_at,
        Some(40)
    );
    assert!(store.pending_recoveries(&s).expect("pending").is_empty());
    assert!(
        matches!(store.record_attempt(id, None, 60), Err(StoreError::AlreadyResolved { id: got }) if got == id)
    );
}

#[test]
fn recovery_kinds_round_trip_including_other() {
    let store = super::fresh().expect("open");
    let s = session(&store, "s1", 1);
    let kinds = [
        RecoveryKind::DetachFailed,
        RecoveryKind::CloseFailed,
        RecoveryKind::ReleaseFailed,
        RecoveryKind::Other("reset_failed".into()),
    ];
    for kind in &kinds {
        store
            .add_recovery(&failure(&s, None, kind.clone(), 2))
            .expect("add");
    }
    let got: Vec<RecoveryKind> = store
        .pending_recoveries(&s)
        .expect("pending")
        .into_iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(got, kinds);
}

#[test]
fn recovery_needs_a_known_session_and_resource() {
    let store = super::fresh().expect("open");
    let s = session(&store, "s1", 1);
    assert!(matches!(
        store.add_recovery(&failure(
            &SessionId::new("ghost"),
            None,
            RecoveryKind::DetachFailed,
            2
        )),
        Err(StoreError::NotFound {
            what: Entity::Session,
            ..
        })
    ));
    assert!(matches!(
        store.add_recovery(&failure(
            &s,
            Some(&ResourceId::new("nope")),
            RecoveryKind::DetachFailed,
            2
        )),
        Err(StoreError::NotFound {
            what: Entity::Resource,
            ..
        })
    ));
    assert!(matches!(
        store.get_recovery(RecoveryId(77)),
        Err(StoreError::NotFound {
            what: Entity::Recovery,
            ..
        })
    ));
    assert!(matches!(
        store.resolve_recovery(RecoveryId(77), 3),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.record_attempt(RecoveryId(77), None, 3),
        Err(StoreError::NotFound { .. })
    ));
}

/// `002_…`: a session switch must not drop the old session's recovery records.
#[test]
fn pending_recoveries_survive_session_state_changes_and_reopen() {
    let path = db_path("recovery-reopen");
    let (s, id) = {
        let store = super::open(&path).expect("open");
        let s = session(&store, "s1", 1);
        let id = store
            .add_recovery(&failure(&s, None, RecoveryKind::ReleaseFailed, 2))
            .expect("add");
        store
            .set_session_state(&s, SessionState::Disposed, 3)
            .expect("dispose");
        (s, id)
    };
    let store = super::open(&path).expect("reopen");
    store.begin_instance(4, None).expect("instance");
    let pending = store.pending_recoveries(&s).expect("pending");
    assert_eq!(pending.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
}
