//! What a restore reads and writes: the tabs to bring back (handle lost, not closed by a
//! person, retained or a person's own), their new handles, failures that stay listed, and
//! claims of tabs kept for the person after their session ended.

use store::{
    InstanceEnd, Mark, Ownership, ResourceState, SessionState, Store, StoreError, TargetId, TurnId,
};

use super::{db_path, new_tab, session, user_tab};

#[test]
fn restorable_tabs_are_the_kept_ones_a_person_did_not_close() {
    let path = db_path("restorable");
    let (kept, closed, person, temp) = {
        let store = super::open(&path).expect("open");
        let first = store.begin_instance(1, Some("a.lock")).expect("instance");
        let s = session(&store, "s1", 1);
        let handle = |n: &str| Some((TargetId::new(n), first));
        let kept = store
            .insert_resource(&store::NewResource {
                handle: handle("T1"),
                ..new_tab("kept", Some(&s), Ownership::AgentCreated, 2)
            })
            .unwrap()
            .id;
        let closed = store
            .insert_resource(&store::NewResource {
                handle: handle("T2"),
                ..new_tab("closed", Some(&s), Ownership::AgentCreated, 2)
            })
            .unwrap()
            .id;
        let temp = store
            .insert_resource(&store::NewResource {
                handle: handle("T3"),
                ..new_tab("temp", Some(&s), Ownership::AgentCreated, 2)
            })
            .unwrap()
            .id;
        for id in [&kept, &closed] {
            store
                .set_mark(id, &s, Mark::Deliverable, &TurnId::new("turn_1"), 3)
                .unwrap();
        }
        let person = user_tab(&store, "person", 2);
        store
            .attach_handle(&person, &TargetId::new("T4"), first, 3)
            .unwrap();
        store
            .update_location(&kept, "https://a.test/list?page=2#top", "List", 4)
            .unwrap();
        store.set_preview(&kept, r#"{"pinned":true}"#, 4).unwrap();
        assert!(
            store.set_preview(&kept, "{nope", 4).is_err(),
            "preview preferences are JSON"
        );
        // A person closed one; the process then died.
        let gone = store.close_by_person(&closed, 5).unwrap();
        assert!(
            gone.closed_by_person
                && gone.cdp_target_id.is_none()
                && gone.state == ResourceState::Released
        );
        (kept, closed, person, temp)
    };
    let store = super::open(&path).expect("reopen");
    let second = store.begin_instance(10, Some("b.lock")).expect("instance");
    let dead = store
        .open_instances()
        .unwrap()
        .into_iter()
        .find(|i| i.id != second)
        .unwrap()
        .id;
    store
        .end_instance(dead, InstanceEnd::Abandoned, 11)
        .unwrap();
    let restorable: Vec<_> = store
        .restorable_resources()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        restorable,
        [kept.clone(), person.clone()],
        "the unmarked temp and the closed one stay closed"
    );
    let _ = (&closed, &temp);

    let restored = store
        .restored(&kept, &TargetId::new("T9"), second, 12)
        .unwrap();
    assert_eq!(
        (
            restored.restored_at,
            restored.handle_lost,
            restored.url.as_deref()
        ),
        (Some(12), false, Some("https://a.test/list?page=2#top"))
    );
    assert_eq!(
        restored.preview.as_deref(),
        Some(r#"{"pinned":true}"#),
        "preview preferences survive"
    );
    store
        .restore_failed(&person, "no page could be created", 12)
        .unwrap();
    assert!(
        store.restorable_resources().unwrap().is_empty(),
        "a failed restore is not retried"
    );
    assert_eq!(
        store
            .get_resource(&person)
            .unwrap()
            .restore_error
            .as_deref(),
        Some("no page could be created")
    );

    // The kept tab's session is abandoned: a new session may claim it; a second claim loses.
    let s1 = store.get_session(&store::SessionId::new("s1")).unwrap();
    assert_eq!(s1.state, SessionState::Abandoned);
    let s2 = session(&store, "s2", 13);
    let claimed = store.claim_resource(&kept, &s2, 14).unwrap();
    assert_eq!(
        (
            claimed.session_id.as_ref(),
            claimed.ownership,
            claimed.state
        ),
        (Some(&s2), Ownership::AgentClaimed, ResourceState::Owned)
    );
    let s3 = session(&store, "s3", 13);
    assert!(matches!(
        store.claim_resource(&kept, &s3, 15),
        Err(StoreError::AlreadyClaimed { .. })
    ));
    // A browser relaunch loses the handle again, and the tab is restorable again.
    store.lose_handle(&kept, 16).unwrap();
    assert_eq!(
        store.restorable_resources().unwrap().len(),
        1,
        "a claimed tab comes back too (into its session)"
    );
}
