//! Runs and the operation log: an operation is written before its action is sent and ended
//! with its receipt; what a dead process left open is `unknown` and `abandoned`; retention
//! removes only ended records, by age and by count.

use store::{
    InstanceEnd, NewOperation, NewRun, OperationEnd, OperationFilter, OperationState, RunEnd,
    RunId, SessionId, Store, StoreError,
};

use super::db_path;

fn run(id: &str, session: &SessionId, at: u64) -> NewRun {
    NewRun {
        id: RunId::new(id),
        session_id: session.clone(),
        surface: "tab_1".into(),
        task: "Sign up as Ada".into(),
        model: Some("openai_chat/test-model".into()),
        max_steps: 20,
        max_seconds: 120,
        started_at: at,
    }
}

fn operation(id: &str, session: &SessionId, run: Option<&str>, at: u64) -> NewOperation {
    NewOperation {
        id: id.into(),
        session_id: session.clone(),
        run_id: run.map(RunId::new),
        surface: "s1".into(),
        resource_id: Some("tab_1".into()),
        action: "type".into(),
        target: Some("textbox \"Password\" [e3]".into()),
        text_chars: Some(9),
        secret: true,
        url: Some("https://shop.test/login?next=%E2%80%A6".into()),
        frame_before: "frame_a".into(),
        started_at: at,
    }
}

fn confirmed(at: u64) -> OperationEnd {
    OperationEnd {
        state: OperationState::Confirmed,
        effect_uncertain: false,
        error: None,
        detail: None,
        frame_after: Some("frame_b".into()),
        marker: None,
        ended_at: at,
    }
}

#[test]
fn operations_are_written_before_dispatch_and_ended_once() {
    let store = super::fresh().expect("open");
    store.begin_instance(1, None).expect("instance");
    let s = SessionId::new("s1");
    store.begin_run(&run("run_1", &s, 2)).expect("run");
    assert!(matches!(
        store.begin_run(&run("run_1", &s, 2)),
        Err(StoreError::AlreadyExists { .. })
    ));
    let first = store
        .begin_operation(&operation("op_1", &s, Some("run_1"), 3))
        .expect("op");
    let open = store
        .list_operations(&OperationFilter::default())
        .expect("list");
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].state, OperationState::Attempted);
    assert!(open[0].end.is_none());
    let marker =
        r#"{"kind":"click","points":[[10.0,20.0]],"viewport":[1280.0,720.0],"scroll":[0.0,0.0]}"#;
    assert!(
        store
            .end_operation(
                "op_1",
                &OperationEnd {
                    marker: Some(marker.into()),
                    ..confirmed(4)
                }
            )
            .expect("end")
    );
    assert!(
        !store
            .end_operation("op_1", &confirmed(5))
            .expect("end twice"),
        "an operation ends once"
    );
    assert!(
        store
            .end_operation(
                "op_1",
                &OperationEnd {
                    state: OperationState::Attempted,
                    ..confirmed(5)
                }
            )
            .is_err()
    );
    let second = store
        .begin_operation(&operation("op_2", &s, None, 6))
        .expect("direct call");
    assert!(second > first);

    let all = store
        .list_operations(&OperationFilter::default())
        .expect("list");
    assert_eq!(
        all.iter()
            .map(|o| o.operation.id.as_str())
            .collect::<Vec<_>>(),
        ["op_1", "op_2"]
    );
    assert_eq!(all[0].state, OperationState::Confirmed);
    assert_eq!(
        all[0].end.as_ref().and_then(|e| e.frame_after.as_deref()),
        Some("frame_b")
    );
    assert_eq!(
        all[0].end.as_ref().and_then(|e| e.marker.as_deref()),
        Some(marker),
        "the action marker is kept with the record"
    );
    assert!(
        store
            .end_operation(
                "op_2",
                &OperationEnd {
                    marker: Some("not json".into()),
                    ..confirmed(7)
                }
            )
            .is_err(),
        "a marker is JSON or nothing"
    );
    assert_eq!(all[0].operation.text_chars, Some(9));
    assert!(all[0].operation.secret);
    let of_run = store
        .list_operations(&OperationFilter {
            run: Some(RunId::new("run_1")),
            ..Default::default()
        })
        .expect("list");
    assert_eq!(of_run.len(), 1);
    let after = store
        .list_operations(&OperationFilter {
            after: first,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(after.len(), 1);
    let latest = store
        .list_operations(&OperationFilter {
            limit: 1,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(latest[0].operation.id, "op_2", "a limit keeps the latest");
    let other = store
        .list_operations(&OperationFilter {
            session: Some(SessionId::new("s2")),
            ..Default::default()
        })
        .expect("list");
    assert!(other.is_empty());

    let end = RunEnd {
        status: "succeeded".into(),
        reason: "verified".into(),
        summary: "signed up".into(),
        steps: 3,
        accounting: Some(r#"{"model_requests":3}"#.into()),
        task: None,
        ended_at: 9,
    };
    assert!(store.end_run(&RunId::new("run_1"), &end).expect("end run"));
    assert!(
        !store
            .end_run(&RunId::new("run_1"), &end)
            .expect("end twice")
    );
    let stored = store.get_run(&RunId::new("run_1")).expect("get");
    assert_eq!(stored.end, Some(end));
    assert!(
        store
            .end_run(
                &RunId::new("run_1"),
                &RunEnd {
                    accounting: Some("{not json".into()),
                    ..stored.end.clone().unwrap()
                }
            )
            .is_ok_and(|c| !c)
    );
    assert_eq!(store.list_runs(Some(&s), 0).expect("runs").len(), 1);
}

#[test]
fn a_dead_server_leaves_its_open_operations_unknown_and_its_runs_abandoned() {
    let path = db_path("records-restart");
    let s = SessionId::new("s1");
    {
        let store = super::open(&path).expect("open");
        store
            .begin_instance(1, Some("first.lock"))
            .expect("instance");
        store.begin_run(&run("run_1", &s, 2)).expect("run");
        store
            .begin_operation(&operation("op_done", &s, Some("run_1"), 3))
            .expect("op");
        store.end_operation("op_done", &confirmed(4)).expect("end");
        store
            .begin_operation(&operation("op_lost", &s, Some("run_1"), 5))
            .expect("op");
        // dropped without ending: the process died with op_lost in flight
    }
    let store = super::open(&path).expect("reopen");
    let second = store
        .begin_instance(10, Some("second.lock"))
        .expect("instance");
    let dead = store
        .open_instances()
        .expect("open")
        .into_iter()
        .find(|i| i.id != second)
        .expect("the dead one")
        .id;
    let report = store
        .end_instance(dead, InstanceEnd::Abandoned, 11)
        .expect("reconcile");
    assert_eq!((report.unknown_operations, report.abandoned_runs), (1, 1));
    let ops = store
        .list_operations(&OperationFilter::default())
        .expect("list");
    assert_eq!(
        ops[0].state,
        OperationState::Confirmed,
        "an ended operation keeps its state"
    );
    assert_eq!(ops[1].state, OperationState::Unknown);
    let lost = ops[1].end.as_ref().expect("ended");
    assert!(lost.effect_uncertain);
    assert!(
        lost.detail
            .as_deref()
            .is_some_and(|d| d.contains("not replayed"))
    );
    let r = store.get_run(&RunId::new("run_1")).expect("run");
    assert_eq!(r.end.map(|e| e.status), Some("abandoned".into()));
    // A second reconciliation finds nothing.
    assert_eq!(
        store
            .end_instance(dead, InstanceEnd::Abandoned, 12)
            .expect("again")
            .unknown_operations,
        0
    );
}

#[test]
fn retention_removes_only_ended_records_by_age_then_count() {
    let store = super::fresh().expect("open");
    store.begin_instance(1, None).expect("instance");
    let s = SessionId::new("s1");
    store.begin_run(&run("old_run", &s, 10)).expect("run");
    for i in 0..5u64 {
        let id = format!("op_{i}");
        store
            .begin_operation(&operation(&id, &s, Some("old_run"), 10 + i))
            .expect("op");
        store.end_operation(&id, &confirmed(10 + i)).expect("end");
    }
    store
        .end_run(
            &RunId::new("old_run"),
            &RunEnd {
                status: "failed".into(),
                reason: "timeout".into(),
                summary: String::new(),
                steps: 5,
                accounting: None,
                task: None,
                ended_at: 15,
            },
        )
        .expect("end");
    store.begin_run(&run("new_run", &s, 100)).expect("run");
    for i in 5..10u64 {
        let id = format!("op_{i}");
        store
            .begin_operation(&operation(&id, &s, Some("new_run"), 100 + i))
            .expect("op");
        if i != 9 {
            store.end_operation(&id, &confirmed(100 + i)).expect("end");
        }
    }
    // By age: everything that ended before 50 goes, the open run stays.
    let pruned = store.prune_records(50, 1_000).expect("prune");
    assert_eq!((pruned.operations, pruned.runs), (5, 1));
    assert!(matches!(
        store.get_run(&RunId::new("old_run")),
        Err(StoreError::NotFound { .. })
    ));
    // By count: keep the latest 2; the open op_9 is never removed.
    let pruned = store.prune_records(0, 2).expect("prune");
    assert_eq!(pruned.operations, 3);
    let left: Vec<_> = store
        .list_operations(&OperationFilter::default())
        .expect("list")
        .into_iter()
        .map(|o| o.operation.id)
        .collect();
    assert_eq!(left, ["op_8", "op_9"]);
    assert!(
        store.get_run(&RunId::new("new_run")).is_ok(),
        "a running run is kept"
    );
}
