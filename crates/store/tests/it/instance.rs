//! Restarts: a new instance invalidates every older handle and never hands one back.

use store::{Mark, Ownership, ResourceState, SqliteStore, Store, TargetId, TurnId};

use crate::{db_path, new_tab, session};

#[test]
fn begin_instance_after_reopen_marks_older_handles_lost() {
    let path = db_path("restart");
    let t1 = TargetId::new("T-old-1");
    let (tab, s) = {
        let store = SqliteStore::open(&path).expect("open");
        let first = store.begin_instance(1).expect("instance");
        let s = session(&store, "s1", 1);
        let tab = store
            .insert_resource(&store::NewResource { handle: Some((t1.clone(), first)), ..new_tab("r1", Some(&s), Ownership::AgentCreated, 2) })
            .expect("insert")
            .id;
        store.set_mark(&tab, &s, Mark::Deliverable, &TurnId::new("turn_1"), 3).expect("mark");
        store.transition(&tab, 2, ResourceState::Retained, 4).expect("retain");
        assert!(store.find_by_handle(&t1).expect("find").is_some());
        (tab, s)
    };

    let store = SqliteStore::open(&path).expect("reopen");
    let before = store.get_resource(&tab).expect("get");
    let second = store.begin_instance(10).expect("instance");
    assert!(Some(second) > before.instance);

    let after = store.get_resource(&tab).expect("get");
    assert_eq!((after.cdp_target_id.clone(), after.instance), (None, None));
    assert!(after.handle_lost);
    assert_eq!(after.version, before.version + 1);
    // Ownership, provenance, mark and state survive the restart.
    assert_eq!(after.session_id, Some(s));
    assert_eq!(after.ownership, Ownership::AgentCreated);
    assert_eq!((after.mark, after.mark_turn_id), (Mark::Deliverable, Some(TurnId::new("turn_1"))));
    assert_eq!(after.state, ResourceState::Retained);
    assert_eq!(store.find_by_handle(&t1).expect("find"), None);

    // The same target id reported again by the new process is a new handle.
    let r = store.attach_handle(&tab, &t1, second, 11).expect("attach");
    assert!(!r.handle_lost);
    assert_eq!(store.find_by_handle(&t1).expect("find").map(|r| r.id), Some(tab));
}

#[test]
fn instance_ids_only_grow_across_reopens() {
    let path = db_path("instances");
    let mut last = None;
    for i in 0..4 {
        let store = SqliteStore::open(&path).expect("open");
        let id = store.begin_instance(i).expect("instance");
        assert!(Some(id) > last);
        assert_eq!(store.current_instance().expect("current"), Some(id));
        last = Some(id);
    }
}

#[test]
fn begin_instance_leaves_current_handles_alone() {
    let store = SqliteStore::open_in_memory().expect("open");
    let first = store.begin_instance(1).expect("instance");
    let tab = crate::user_tab(&store, "u", 2);
    store.attach_handle(&tab, &TargetId::new("T"), first, 3).expect("attach");
    let other = crate::user_tab(&store, "v", 2);
    let second = store.begin_instance(4).expect("instance");
    assert!(store.get_resource(&tab).expect("get").handle_lost);
    let untouched = store.get_resource(&other).expect("get");
    assert!(!untouched.handle_lost);
    assert_eq!(untouched.version, 1);
    store.attach_handle(&other, &TargetId::new("U"), second, 5).expect("attach");
    assert_eq!(store.begin_instance(6).expect("instance").0, second.0 + 1);
}
