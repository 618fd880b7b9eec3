//! Process instances: handles belong to the instance that saw them; an ending instance
//! (stopped, or found dead by a later one) leaves every record terminal or recoverable.

use store::{
    ApprovalOutcome, ApprovalScope, InstanceEnd, Mark, NewApproval, Ownership, RecoveryKind,
    ResourceId, ResourceState, RunId, SessionId, SessionState, Store, TargetId, TurnId,
};

use super::{db_path, new_tab, session};

fn approval(id: &str, session: &SessionId, instance: store::InstanceId, at: u64) -> NewApproval {
    NewApproval {
        id: id.into(),
        session_id: session.clone(),
        instance,
        run_id: RunId::new(session.as_str()),
        action: "click".into(),
        origin: "https://shop.test".into(),
        tier: "R2".into(),
        requested_at: at,
        expires_at: at + 100,
    }
}

#[test]
fn a_dead_instance_is_reconciled_by_the_next_one() {
    let path = db_path("restart");
    let t1 = TargetId::new("T-old-1");
    let (kept, s) = {
        let store = super::open(&path).expect("open");
        let first = store
            .begin_instance(1, Some("first.lock"))
            .expect("instance");
        let s = session(&store, "s1", 1);
        assert_eq!(store.get_session(&s).expect("get").instance, Some(first));
        store.set_tools_active(&s, true, 1).expect("activate");
        let kept = store
            .insert_resource(&store::NewResource {
                handle: Some((t1.clone(), first)),
                ..new_tab("r1", Some(&s), Ownership::AgentCreated, 2)
            })
            .expect("insert")
            .id;
        store
            .set_mark(&kept, &s, Mark::Deliverable, &TurnId::new("turn_1"), 3)
            .expect("mark");
        let closed = store
            .insert_resource(&new_tab("r2", Some(&s), Ownership::AgentCreated, 2))
            .expect("insert")
            .id;
        store
            .add_recovery(&store::NewRecovery {
                session_id: s.clone(),
                resource_id: Some(closed),
                kind: RecoveryKind::CloseFailed,
                detail: "x".into(),
                now_ms: 3,
            })
            .expect("recovery");
        let claimed = crate::user_tab(&store, "u1", 2);
        store.claim_resource(&claimed, &s, 3).expect("claim");
        store
            .record_approval(&approval("ap1", &s, first, 4))
            .expect("approval");
        assert!(store.find_by_handle(&t1).expect("find").is_some());
        (kept, s)
        // dropped without ending: the process died
    };

    let store = super::open(&path).expect("reopen");
    let second = store
        .begin_instance(10, Some("second.lock"))
        .expect("instance");
    let open: Vec<_> = store
        .open_instances()
        .expect("open")
        .into_iter()
        .map(|i| (i.id.0, i.lock_name))
        .collect();
    assert_eq!(
        open,
        [
            (1, Some("first.lock".into())),
            (second.0, Some("second.lock".into()))
        ]
    );
    // Beginning leaves the other instance's records alone: it might still run.
    assert_eq!(
        store.get_session(&s).expect("get").state,
        SessionState::Active
    );
    assert_eq!(
        store
            .instance_handles(store::InstanceId(1))
            .expect("handles")
            .len(),
        1
    );

    let report = store
        .end_instance(store::InstanceId(1), InstanceEnd::Abandoned, 11)
        .expect("end");
    assert_eq!(report.sessions, std::slice::from_ref(&s));
    assert_eq!(report.closed, [ResourceId::new("r2")]);
    assert_eq!(report.released, [ResourceId::new("u1")]);
    assert_eq!(report.kept, std::slice::from_ref(&kept));
    assert_eq!(report.approvals, 1);

    let session = store.get_session(&s).expect("get");
    assert_eq!(
        (session.state, session.tools_active),
        (SessionState::Abandoned, false)
    );
    let after = store.get_resource(&kept).expect("get");
    assert_eq!(
        (
            after.cdp_target_id.clone(),
            after.instance,
            after.handle_lost
        ),
        (None, None, true)
    );
    assert_eq!(
        (after.state, after.session_id.clone(), after.mark),
        (ResourceState::Retained, Some(s.clone()), Mark::Deliverable)
    );
    let released = store.get_resource(&ResourceId::new("u1")).expect("get");
    assert_eq!(
        (released.state, released.session_id, released.ownership),
        (ResourceState::Released, None, Ownership::User)
    );
    assert_eq!(
        store
            .get_resource(&ResourceId::new("r2"))
            .expect("get")
            .state,
        ResourceState::Released
    );
    assert!(store.pending_recoveries(&s).expect("pending").is_empty());
    assert_eq!(
        store.list_approvals(&s).expect("approvals")[0].outcome,
        Some(ApprovalOutcome::Abandoned)
    );
    assert_eq!(store.find_by_handle(&t1).expect("find"), None);
    let audit = store
        .audit_since(&s, store::AuditSeq(0), 10)
        .expect("audit");
    assert_eq!(audit.last().map(|a| a.kind.as_str()), Some("abandoned"));
    let open: Vec<_> = store
        .open_instances()
        .expect("open")
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(open, [second]);

    // Idempotent; an ended instance records no handle; the same target id reported by the
    // new process is a new handle.
    assert_eq!(
        store
            .end_instance(store::InstanceId(1), InstanceEnd::Abandoned, 12)
            .expect("again"),
        store::EndReport::default()
    );
    assert!(matches!(
        store.attach_handle(&kept, &t1, store::InstanceId(1), 12),
        Err(store::StoreError::StaleInstance { .. })
    ));
    let r = store.attach_handle(&kept, &t1, second, 13).expect("attach");
    assert!(!r.handle_lost);
    assert_eq!(
        store.find_by_handle(&t1).expect("find").map(|r| r.id),
        Some(kept)
    );
}

#[test]
fn a_stopped_instance_withdraws_its_approvals_and_leaves_disposed_sessions_alone() {
    let store = super::fresh().expect("open");
    let first = store.begin_instance(1, None).expect("instance");
    let s = session(&store, "s", 1);
    store
        .set_session_state(&s, SessionState::Disposed, 2)
        .expect("dispose");
    store
        .record_approval(&approval("a1", &s, first, 2))
        .expect("approval");
    store
        .record_approval(&approval("a2", &s, first, 3))
        .expect("approval");
    assert!(
        store
            .settle_approval("a1", ApprovalOutcome::Deny, 4)
            .expect("settle")
    );
    assert!(
        !store
            .settle_approval("a1", ApprovalOutcome::ApproveOnce, 5)
            .expect("settled once")
    );
    assert!(matches!(
        store.record_approval(&approval("a1", &s, first, 6)),
        Err(store::StoreError::AlreadyExists { .. })
    ));
    let report = store
        .end_instance(first, InstanceEnd::Stopped, 7)
        .expect("end");
    assert!(report.sessions.is_empty());
    assert_eq!(report.approvals, 1);
    let outcomes: Vec<_> = store
        .list_approvals(&s)
        .expect("list")
        .into_iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            Some(ApprovalOutcome::Deny),
            Some(ApprovalOutcome::Withdrawn)
        ]
    );
    assert_eq!(
        store.get_session(&s).expect("get").state,
        SessionState::Disposed
    );
}

#[test]
fn approvals_settle_by_run_and_session() {
    let store = super::fresh().expect("open");
    let i = store.begin_instance(1, None).expect("instance");
    let s = session(&store, "s", 1);
    let t = session(&store, "t", 1);
    store
        .record_approval(&NewApproval {
            run_id: RunId::new("run_1"),
            ..approval("a1", &s, i, 2)
        })
        .expect("a1");
    store
        .record_approval(&approval("a2", &s, i, 2))
        .expect("a2");
    store
        .record_approval(&approval("a3", &t, i, 2))
        .expect("a3");
    assert_eq!(
        store
            .settle_approvals(
                ApprovalScope::Run(&RunId::new("run_1")),
                ApprovalOutcome::Withdrawn,
                3
            )
            .expect("run"),
        1
    );
    assert_eq!(
        store
            .settle_approvals(ApprovalScope::Session(&s), ApprovalOutcome::Withdrawn, 3)
            .expect("session"),
        1
    );
    assert_eq!(store.list_approvals(&t).expect("t")[0].outcome, None);
    assert_eq!(
        store
            .settle_approvals(ApprovalScope::Instance(i), ApprovalOutcome::Withdrawn, 3)
            .expect("instance"),
        1
    );
}

#[test]
fn instance_ids_only_grow_across_reopens() {
    let path = db_path("instances");
    let mut last = None;
    for i in 0..4 {
        let store = super::open(&path).expect("open");
        let id = store.begin_instance(i, None).expect("instance");
        assert!(Some(id) > last);
        assert_eq!(store.current_instance().expect("current"), Some(id));
        last = Some(id);
    }
}

#[test]
fn two_live_instances_keep_their_own_handles() {
    let store = super::fresh().expect("open");
    let first = store.begin_instance(1, None).expect("instance");
    let tab = crate::user_tab(&store, "u", 2);
    store
        .attach_handle(&tab, &TargetId::new("T"), first, 3)
        .expect("attach");
    let other = crate::user_tab(&store, "v", 2);
    let second = store.begin_instance(4, None).expect("instance");
    assert!(
        !store.get_resource(&tab).expect("get").handle_lost,
        "the first instance may still run"
    );
    store
        .attach_handle(&other, &TargetId::new("U"), second, 5)
        .expect("attach");
    store
        .attach_handle(&tab, &TargetId::new("T2"), first, 6)
        .expect("the first one still records handles");
    store
        .end_instance(first, InstanceEnd::Stopped, 7)
        .expect("end");
    assert!(store.get_resource(&tab).expect("get").handle_lost);
    let untouched = store.get_resource(&other).expect("get");
    assert!(!untouched.handle_lost);
    assert_eq!(
        store.begin_instance(8, None).expect("instance").0,
        second.0 + 1
    );
}

/// A heartbeat keeps an instance alive; a stale one is taken over exactly once, in the same
/// transaction that checked it, and the ended instance learns it from its next heartbeat.
#[test]
fn a_stale_instance_is_taken_over_once_and_learns_it() {
    let store = super::fresh().expect("open");
    let dead = store.begin_instance(1_000, None).expect("instance");
    let s = crate::session(&store, "s-dead", 1_001);
    let live = store.begin_instance(1_002, None).expect("instance");
    assert!(store.heartbeat(live, 5_000).expect("heartbeat"));
    assert!(store.heartbeat(dead, 2_000).expect("heartbeat"));
    let open = store.open_instances().expect("open");
    assert_eq!(
        open.iter().map(|i| i.heartbeat_at).collect::<Vec<_>>(),
        vec![Some(2_000), Some(5_000)]
    );
    // Not stale yet: its heartbeat is after the line.
    assert_eq!(
        store.take_over_instance(dead, 1_500, 6_000).expect("take"),
        None
    );
    let report = store
        .take_over_instance(dead, 4_000, 6_001)
        .expect("take")
        .expect("taken over");
    assert_eq!(report.sessions, vec![s.clone()]);
    assert_eq!(
        store.get_session(&s).expect("get").state,
        SessionState::Abandoned
    );
    // Once: a second survivor finds nothing to do, and the live one is never taken.
    assert_eq!(
        store.take_over_instance(dead, 9_000, 6_002).expect("take"),
        None
    );
    assert_eq!(
        store.take_over_instance(live, 4_000, 6_003).expect("take"),
        None
    );
    assert!(!store.heartbeat(dead, 7_000).expect("heartbeat"));
    assert!(store.heartbeat(live, 7_000).expect("heartbeat"));
}
