//! Resource records: round-trips, owner-only writes, marks, compare-and-swap, handles.

use store::{
    Entity, Mark, NewResource, Ownership, ResourceId, ResourceState, RunId, Store, StoreError,
    TargetId, TurnId,
};

use super::{new_tab, session, user_tab};

fn store() -> super::TheStore {
    super::fresh().expect("open")
}

#[test]
fn resource_round_trips_every_field() {
    let store = store();
    let s = session(&store, "s1", 1);
    let instance = store.begin_instance(2, None).expect("instance");
    let new = NewResource {
        created_by_run: Some(RunId::new("run_1")),
        handle: Some((TargetId::new("T1"), instance)),
        url: Some("https://example.test/a?q=[redacted]".into()),
        title: Some("Example".into()),
        ..new_tab("r1", Some(&s), Ownership::AgentCreated, 10)
    };
    let r = store.insert_resource(&new).expect("insert");
    assert_eq!(r.id, ResourceId::new("r1"));
    assert_eq!(r.session_id, Some(s.clone()));
    assert_eq!(r.cdp_target_id, Some(TargetId::new("T1")));
    assert_eq!(r.instance, Some(instance));
    assert!(!r.handle_lost);
    assert_eq!(r.ownership, Ownership::AgentCreated);
    assert_eq!(r.created_by_run, Some(RunId::new("run_1")));
    assert_eq!((r.claimed_at, r.released_at), (None, None));
    assert_eq!((r.mark, r.mark_turn_id.clone()), (Mark::None, None));
    assert_eq!(r.state, ResourceState::Owned);
    assert_eq!(
        r.url.as_deref(),
        Some("https://example.test/a?q=[redacted]")
    );
    assert_eq!(r.title.as_deref(), Some("Example"));
    assert_eq!(
        (r.location_at, r.created_at, r.updated_at, r.version),
        (Some(10), 10, 10, 1)
    );
    assert_eq!(store.get_resource(&r.id).expect("get"), r);
    assert_eq!(
        store.list_resources(&s).expect("list"),
        std::slice::from_ref(&r)
    );
    assert!(store.list_unowned_resources().expect("unowned").is_empty());
    assert_eq!(
        store.find_by_handle(&TargetId::new("T1")).expect("find"),
        Some(r)
    );

    let u = user_tab(&store, "u1", 11);
    assert_eq!(store.list_unowned_resources().expect("unowned")[0].id, u);
}

#[test]
fn open_resources_leave_out_the_released_and_count_them() {
    let store = store();
    let s = session(&store, "s1", 1);
    let other = session(&store, "s2", 1);
    for (i, id) in ["r1", "r2", "r3"].into_iter().enumerate() {
        store
            .insert_resource(&new_tab(
                id,
                Some(&s),
                Ownership::AgentCreated,
                2 + i as u64,
            ))
            .expect("insert");
    }
    store
        .insert_resource(&new_tab("o1", Some(&other), Ownership::AgentCreated, 2))
        .expect("insert");
    // Two of s1's tabs closed (the runtime's close: released, the session kept).
    for id in ["r1", "r3"] {
        let r = store.get_resource(&ResourceId::new(id)).expect("get");
        store
            .transition(&r.id, r.version, ResourceState::Released, 9)
            .expect("release");
    }
    // A claimed user tab given back leaves the session altogether: neither open nor counted.
    let tab = user_tab(&store, "u1", 3);
    store.claim_resource(&tab, &s, 4).expect("claim");
    store.release_resource(&tab, &s, 5).expect("give back");

    let open: Vec<_> = store
        .list_open_resources(&s)
        .expect("open")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(open, vec![ResourceId::new("r2")]);
    assert_eq!(store.count_released_resources(&s).expect("count"), 2);
    assert_eq!(store.list_resources(&s).expect("all").len(), 3);
    assert_eq!(store.count_released_resources(&other).expect("count"), 0);
    assert_eq!(store.list_open_resources(&other).expect("open").len(), 1);
}

#[test]
fn insert_refuses_duplicates_and_unknown_sessions() {
    let store = store();
    let s = session(&store, "s1", 1);
    store
        .insert_resource(&new_tab("r1", Some(&s), Ownership::AgentCreated, 2))
        .expect("insert");
    assert!(matches!(
        store.insert_resource(&new_tab("r1", None, Ownership::User, 3)),
        Err(StoreError::AlreadyExists {
            what: Entity::Resource,
            ..
        })
    ));
    let ghost = store::SessionId::new("ghost");
    assert!(matches!(
        store.insert_resource(&new_tab("r2", Some(&ghost), Ownership::AgentCreated, 3)),
        Err(StoreError::NotFound {
            what: Entity::Session,
            ..
        })
    ));
    assert!(matches!(
        store.get_resource(&ResourceId::new("r2")),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn claim_then_release_records_provenance_and_returns_the_tab_to_the_user() {
    let store = store();
    let s = session(&store, "s1", 1);
    let tab = user_tab(&store, "u1", 2);

    let claimed = store.claim_resource(&tab, &s, 5).expect("claim");
    assert_eq!(claimed.session_id, Some(s.clone()));
    assert_eq!(claimed.ownership, Ownership::AgentClaimed);
    assert_eq!(claimed.state, ResourceState::Owned);
    assert_eq!((claimed.claimed_at, claimed.version), (Some(5), 2));

    store
        .set_mark(&tab, &s, Mark::Handoff, &TurnId::new("t1"), 6)
        .expect("mark");
    let released = store.release_resource(&tab, &s, 7).expect("release");
    assert_eq!(released.session_id, None);
    assert_eq!(released.ownership, Ownership::User);
    assert_eq!(released.state, ResourceState::Released);
    assert_eq!((released.mark, released.mark_turn_id), (Mark::None, None));
    assert_eq!(
        (released.claimed_at, released.released_at),
        (Some(5), Some(7))
    );
    assert_eq!(released.version, 4);

    // Released, it can be claimed again.
    store.claim_resource(&tab, &s, 8).expect("claim again");
}

#[test]
fn claim_failures_are_named() {
    let store = store();
    let s1 = session(&store, "s1", 1);
    let s2 = session(&store, "s2", 1);
    let tab = user_tab(&store, "u1", 2);
    store.claim_resource(&tab, &s1, 3).expect("claim");
    match store.claim_resource(&tab, &s2, 4) {
        Err(StoreError::AlreadyClaimed { by }) => assert_eq!(by, s1),
        other => panic!("expected AlreadyClaimed, got {other:?}"),
    }
    // Claiming one's own tab again is not silently accepted either.
    assert!(matches!(
        store.claim_resource(&tab, &s1, 4),
        Err(StoreError::AlreadyClaimed { .. })
    ));

    let foreign = store
        .insert_resource(&new_tab("o1", None, Ownership::OtherSession, 5))
        .expect("insert")
        .id;
    assert!(matches!(
        store.claim_resource(&foreign, &s1, 6),
        Err(StoreError::NotClaimable {
            ownership: Ownership::OtherSession
        })
    ));
    assert!(matches!(
        store.claim_resource(&ResourceId::new("nope"), &s1, 6),
        Err(StoreError::NotFound {
            what: Entity::Resource,
            ..
        })
    ));
    assert!(matches!(
        store.claim_resource(&foreign, &store::SessionId::new("ghost"), 6),
        Err(StoreError::NotFound {
            what: Entity::Session,
            ..
        })
    ));
    // Failed claims changed nothing.
    assert_eq!(store.get_resource(&foreign).expect("get").version, 1);
    assert_eq!(store.get_resource(&tab).expect("get").version, 2);
}

#[test]
fn release_by_a_non_owner_is_not_owner_and_changes_nothing() {
    let store = store();
    let s1 = session(&store, "s1", 1);
    let s2 = session(&store, "s2", 1);
    let tab = user_tab(&store, "u1", 2);
    store.claim_resource(&tab, &s1, 3).expect("claim");
    match store.release_resource(&tab, &s2, 4) {
        Err(StoreError::NotOwner {
            resource,
            session,
            owner,
        }) => {
            assert_eq!(
                (resource, session, owner),
                (tab.clone(), s2.clone(), Some(s1.clone()))
            );
        }
        other => panic!("expected NotOwner, got {other:?}"),
    }
    let unowned = user_tab(&store, "u2", 5);
    assert!(matches!(
        store.release_resource(&unowned, &s1, 6),
        Err(StoreError::NotOwner { owner: None, .. })
    ));
    assert!(matches!(
        store.release_resource(&ResourceId::new("nope"), &s1, 6),
        Err(StoreError::NotFound { .. })
    ));
    let r = store.get_resource(&tab).expect("get");
    assert_eq!((r.session_id, r.version), (Some(s1), 2));
}

#[test]
fn marks_are_owner_only_and_the_latest_in_a_turn_wins() {
    let store = store();
    let s1 = session(&store, "s1", 1);
    let s2 = session(&store, "s2", 1);
    let tab = store
        .insert_resource(&new_tab("r1", Some(&s1), Ownership::AgentCreated, 2))
        .expect("insert")
        .id;
    let t1 = TurnId::new("turn_1");
    store
        .set_mark(&tab, &s1, Mark::Deliverable, &t1, 3)
        .expect("mark");
    let r = store
        .set_mark(&tab, &s1, Mark::Handoff, &t1, 4)
        .expect("mark");
    assert_eq!(
        (r.mark, r.mark_turn_id.clone()),
        (Mark::Handoff, Some(t1.clone()))
    );

    let t2 = TurnId::new("turn_2");
    let r = store
        .set_mark(&tab, &s1, Mark::Deliverable, &t2, 5)
        .expect("mark");
    assert_eq!(
        (r.mark, r.mark_turn_id),
        (Mark::Deliverable, Some(t2.clone()))
    );
    let r = store
        .set_mark(&tab, &s1, Mark::None, &t2, 6)
        .expect("unmark");
    assert_eq!(r.mark, Mark::None);

    assert!(matches!(
        store.set_mark(&tab, &s2, Mark::Handoff, &t2, 7),
        Err(StoreError::NotOwner { .. })
    ));
    assert_eq!(store.get_resource(&tab).expect("get").mark, Mark::None);
}

#[test]
fn transition_is_compare_and_swap_on_the_version() {
    let store = store();
    let s = session(&store, "s1", 1);
    let tab = store
        .insert_resource(&new_tab("r1", Some(&s), Ownership::AgentCreated, 2))
        .expect("insert")
        .id;
    let v2 = store
        .transition(&tab, 1, ResourceState::Finalizing, 3)
        .expect("cas");
    assert_eq!(v2, 2);
    match store.transition(&tab, 1, ResourceState::Released, 4) {
        Err(StoreError::Conflict {
            expected_version,
            actual,
        }) => {
            assert_eq!((expected_version, actual), (1, 2));
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(
        store.get_resource(&tab).expect("get").state,
        ResourceState::Finalizing
    );

    // Any other change moves the version too, so a stale decision cannot land.
    store
        .set_mark(&tab, &s, Mark::Handoff, &TurnId::new("t"), 5)
        .expect("mark");
    assert!(matches!(
        store.transition(&tab, v2, ResourceState::Released, 6),
        Err(StoreError::Conflict { actual: 3, .. })
    ));
    for (i, state) in ResourceState::ALL.iter().enumerate() {
        let v = store
            .transition(&tab, 3 + i as u64, *state, 7)
            .expect("cas");
        assert_eq!(store.get_resource(&tab).expect("get").state, *state);
        assert_eq!(v, 4 + i as u64);
    }
    assert!(matches!(
        store.transition(&ResourceId::new("nope"), 1, ResourceState::Owned, 8),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn location_updates_are_stored_as_given_without_moving_the_version() {
    let store = store();
    let tab = user_tab(&store, "u1", 1);
    store
        .update_location(&tab, "https://a.test/?token=[redacted]", "Tïtle ✓", 5)
        .expect("loc");
    let r = store.get_resource(&tab).expect("get");
    assert_eq!(r.url.as_deref(), Some("https://a.test/?token=[redacted]"));
    assert_eq!(r.title.as_deref(), Some("Tïtle ✓"));
    assert_eq!((r.location_at, r.updated_at, r.version), (Some(5), 5, 1));
    assert!(matches!(
        store.update_location(&ResourceId::new("nope"), "", "", 6),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn handles_attach_to_the_current_instance_only_and_once() {
    let store = store();
    let old = store.begin_instance(1, None).expect("instance");
    let current = store.begin_instance(2, None).expect("instance");
    assert!(current > old);
    store
        .end_instance(old, store::InstanceEnd::Abandoned, 2)
        .expect("end the old one");
    let a = user_tab(&store, "a", 3);
    let b = user_tab(&store, "b", 3);
    let t = TargetId::new("TARGET");

    match store.attach_handle(&a, &t, old, 4) {
        Err(StoreError::StaleInstance {
            given,
            current: Some(c),
        }) => {
            assert_eq!((given, c), (old, current));
        }
        other => panic!("expected StaleInstance, got {other:?}"),
    }
    let r = store.attach_handle(&a, &t, current, 5).expect("attach");
    assert_eq!(
        (r.cdp_target_id.clone(), r.instance, r.version),
        (Some(t.clone()), Some(current), 2)
    );
    match store.attach_handle(&b, &t, current, 6) {
        Err(StoreError::HandleInUse { by }) => assert_eq!(by, a),
        other => panic!("expected HandleInUse, got {other:?}"),
    }
    assert_eq!(
        store.find_by_handle(&t).expect("find").map(|r| r.id),
        Some(a.clone())
    );

    let r = store.clear_handle(&a, 7).expect("clear");
    assert_eq!(
        (r.cdp_target_id, r.instance, r.handle_lost, r.version),
        (None, None, false, 3)
    );
    assert_eq!(store.find_by_handle(&t).expect("find"), None);
    store.attach_handle(&b, &t, current, 8).expect("free again");
}

#[test]
fn handles_before_any_instance_are_stale() {
    let store = store();
    let a = user_tab(&store, "a", 1);
    assert!(matches!(
        store.attach_handle(&a, &TargetId::new("T"), store::InstanceId(1), 2),
        Err(StoreError::StaleInstance { current: None, .. })
    ));
    assert_eq!(store.current_instance().expect("current"), None);
}

#[test]
fn only_a_released_tab_no_recovery_names_is_discarded() {
    let store = store();
    let s = session(&store, "s1", 1);
    let tab = store
        .insert_resource(&new_tab("r1", Some(&s), Ownership::AgentCreated, 2))
        .expect("insert")
        .id;
    assert!(
        !store.discard_resource(&tab).expect("discard"),
        "owned stays"
    );
    store
        .transition(&tab, 1, ResourceState::Released, 3)
        .expect("release");
    assert!(store.discard_resource(&tab).expect("discard"));
    assert!(matches!(
        store.get_resource(&tab),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!store.discard_resource(&tab).expect("gone already"));

    let kept = store
        .insert_resource(&new_tab("r2", Some(&s), Ownership::AgentCreated, 4))
        .expect("insert")
        .id;
    store
        .add_recovery(&store::NewRecovery {
            session_id: s.clone(),
            resource_id: Some(kept.clone()),
            kind: store::RecoveryKind::CloseFailed,
            detail: "the browser did not confirm".into(),
            now_ms: 5,
        })
        .expect("recovery");
    store
        .transition(&kept, 1, ResourceState::Released, 6)
        .expect("release");
    assert!(
        !store.discard_resource(&kept).expect("discard"),
        "a row a recovery names stays for cleanup"
    );
    assert!(store.get_resource(&kept).is_ok());
}
