//! The audit log: append, read in order, refuse edits.

use store::{AuditSeq, NewAudit, ResourceId, RunId, SessionId, Store, StoreError};

use super::{db_path, session};

fn entry<'a>(s: &'a SessionId, at: u64, payload: &'a str) -> NewAudit<'a> {
    NewAudit {
        at,
        session_id: s,
        run_id: None,
        resource_id: None,
        kind: "receipt",
        payload,
    }
}

#[test]
fn audit_round_trips_in_order_with_limits() {
    let store = super::fresh().expect("open");
    let s1 = SessionId::new("s1");
    let s2 = SessionId::new("s2");
    let run = RunId::new("run_1");
    let res = ResourceId::new("r1");
    let payload = r#"{ "b": 1,  "a": [true, null] }"#;
    let first = store
        .append_audit(&NewAudit {
            run_id: Some(&run),
            resource_id: Some(&res),
            kind: "claim",
            ..entry(&s1, 10, payload)
        })
        .expect("append");
    let other = store.append_audit(&entry(&s2, 11, "{}")).expect("append");
    let mut seqs = vec![first];
    for i in 0..5 {
        seqs.push(
            store
                .append_audit(&entry(&s1, 12 + i, "[]"))
                .expect("append"),
        );
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    assert!(first < other && other < seqs[1]);

    let all = store
        .audit_since(&s1, AuditSeq(0), usize::MAX)
        .expect("since");
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), seqs);
    let e = &all[0];
    assert_eq!(
        (e.at, e.session_id.clone(), e.kind.as_str()),
        (10, s1.clone(), "claim")
    );
    assert_eq!(
        (e.run_id.clone(), e.resource_id.clone()),
        (Some(run), Some(res))
    );
    // Stored byte for byte, whitespace and key order included.
    assert_eq!(e.payload, payload);

    let page = store.audit_since(&s1, seqs[1], 2).expect("page");
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), &seqs[2..4]);
    assert!(
        store
            .audit_since(&s1, AuditSeq(u64::MAX), 10)
            .expect("none")
            .is_empty()
    );
    assert!(store.audit_since(&s1, seqs[0], 0).expect("none").is_empty());
}

#[test]
fn audit_refuses_a_payload_that_is_not_json() {
    let store = super::fresh().expect("open");
    let s = SessionId::new("s1");
    for bad in ["", "{", "not json", "{\"a\":}"] {
        assert!(
            matches!(
                store.append_audit(&entry(&s, 1, bad)),
                Err(StoreError::InvalidJson)
            ),
            "{bad:?}"
        );
    }
    assert!(
        store
            .audit_since(&s, AuditSeq(0), 10)
            .expect("since")
            .is_empty()
    );
}

#[test]
fn audit_rows_cannot_be_updated_or_deleted_even_with_raw_sql() {
    let path = db_path("audit-append-only");
    let s = {
        let store = super::open(&path).expect("open");
        let s = session(&store, "s1", 1);
        store
            .append_audit(&entry(&s, 2, r#"{"ok":true}"#))
            .expect("append");
        s
    };
    assert!(super::refuses(&path, "UPDATE audit SET kind = 'forged'"));
    assert!(super::refuses(&path, "DELETE FROM audit"));
    let store = super::open(&path).expect("reopen");
    let rows = store.audit_since(&s, AuditSeq(0), 10).expect("since");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, "receipt");
}
