//! PostgreSQL's own questions: the same schema as SQLite's, and what several instances on one
//! database must never do twice — take a dead instance over, settle an approval — each raced
//! over connections of their own; a database that cannot be reached, and one that drops the
//! connection.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use store::{
    ApprovalOutcome, InstanceEnd, NewApproval, PgStore, RunId, SessionId, SqliteStore, Store,
    StoreError,
};
use test_support::postgres::server;

/// Table → sorted column names, and the index names, of a SQLite file.
fn sqlite_schema() -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let (store, path) = crate::file_store("schema-parity");
    drop(store);
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let mut tables = BTreeMap::new();
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    for table in names {
        let mut columns: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        columns.sort();
        tables.insert(table, columns);
    }
    let mut indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    indexes.sort();
    (tables, indexes)
}

fn pg_schema() -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let url = server().fresh_url("schema-parity");
    drop(PgStore::connect(&url).expect("connect"));
    let schema = url.rsplit("%3D").next().expect("schema").to_owned();
    let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in server()
        .psql(&format!(
            "SELECT table_name || ' ' || column_name FROM information_schema.columns \
             WHERE table_schema = '{schema}' ORDER BY 1"
        ))
        .lines()
    {
        let (table, column) = line.split_once(' ').expect("pair");
        tables.entry(table.into()).or_default().push(column.into());
    }
    let mut indexes: Vec<String> = server()
        .psql(&format!(
            "SELECT indexname FROM pg_indexes WHERE schemaname = '{schema}' \
             AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'"
        ))
        .lines()
        .map(str::to_owned)
        .collect();
    indexes.sort();
    (tables, indexes)
}

#[test]
fn both_engines_have_the_same_tables_columns_and_indexes() {
    let (sqlite_tables, sqlite_indexes) = sqlite_schema();
    let (pg_tables, pg_indexes) = pg_schema();
    assert_eq!(sqlite_tables, pg_tables);
    assert_eq!(sqlite_indexes, pg_indexes);
    assert!(sqlite_tables.contains_key("operations"));
}

/// Eight instances on their own connections find one dead instance at once: one reconciles it.
#[test]
fn a_dead_instance_is_taken_over_by_exactly_one_of_eight() {
    let url = server().fresh_url("takeover-race");
    let first = PgStore::connect(&url).expect("connect");
    let dead = first.begin_instance(1_000, None).expect("instance");
    let s = crate::session(&first, "s-of-dead", 1_001);
    let tab = crate::user_tab(&first, "u1", 1_002);
    first.claim_resource(&tab, &s, 1_003).expect("claim");
    let stores: Vec<Arc<PgStore>> = (0..8)
        .map(|_| PgStore::connect(&url).map(Arc::new))
        .collect::<Result<_, _>>()
        .expect("connect");
    let barrier = Arc::new(Barrier::new(stores.len()));
    let reports: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mine = store
                    .begin_instance(2_000 + i as u64, None)
                    .expect("instance");
                barrier.wait();
                let report = store
                    .take_over_instance(dead, 1_500, 3_000)
                    .expect("take over");
                (mine, report)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let winners: Vec<_> = reports.iter().filter(|(_, r)| r.is_some()).collect();
    assert_eq!(winners.len(), 1, "{reports:?}");
    let report = winners[0].1.as_ref().expect("report");
    assert_eq!(report.sessions, vec![s]);
    assert_eq!(report.released, vec![tab.clone()]);
    // The tab went back to the person once; nobody holds it.
    let now = first.get_resource(&tab).expect("get");
    assert_eq!(now.session_id, None);
    let open: Vec<_> = first.open_instances().expect("open");
    assert_eq!(open.len(), 8, "every survivor lives, the dead one ended");
    assert!(!first.heartbeat(dead, 4_000).expect("heartbeat"));
}

/// An approval asked on one instance and answered from two at once counts once.
#[test]
fn an_approval_is_settled_exactly_once_across_instances() {
    let url = server().fresh_url("approval-once");
    let a = Arc::new(PgStore::connect(&url).expect("connect"));
    let b = Arc::new(PgStore::connect(&url).expect("connect"));
    let ia = a.begin_instance(1, None).expect("instance");
    b.begin_instance(2, None).expect("instance");
    for round in 0..20_u64 {
        let id = format!("approval-{round}");
        a.record_approval(&NewApproval {
            id: id.clone(),
            session_id: SessionId::new("s1"),
            instance: ia,
            run_id: RunId::new("r1"),
            action: "click".into(),
            origin: "http://127.0.0.1".into(),
            tier: "confirm".into(),
            requested_at: 10 + round,
            expires_at: 1_000_000,
        })
        .expect("record");
        let barrier = Arc::new(Barrier::new(2));
        let answers: Vec<bool> = [
            (a.clone(), ApprovalOutcome::ApproveOnce),
            (b.clone(), ApprovalOutcome::Deny),
        ]
        .into_iter()
        .map(|(store, outcome)| {
            let barrier = barrier.clone();
            let id = id.clone();
            std::thread::spawn(move || {
                barrier.wait();
                store
                    .settle_approval(&id, outcome, 20 + round)
                    .expect("settle")
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
        assert_eq!(
            answers.iter().filter(|w| **w).count(),
            1,
            "round {round}: {answers:?}"
        );
    }
    let settled = a.list_approvals(&SessionId::new("s1")).expect("list");
    assert_eq!(settled.len(), 20);
    assert!(settled.iter().all(|r| r.outcome.is_some()));
    // An instance that stops withdraws nothing that was answered.
    assert_eq!(
        a.end_instance(ia, InstanceEnd::Stopped, 99)
            .expect("end")
            .approvals,
        0
    );
}

#[test]
fn an_unreachable_database_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let err = PgStore::connect(&format!(
        "postgres://glovebox:s3cret-pw@127.0.0.1:{port}/db"
    ))
    .expect_err("nothing listens");
    let text = err.to_string();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(text.contains("127.0.0.1"), "{text}");
    assert!(!text.contains("s3cret-pw"), "{text}");
    let bad = PgStore::connect("postgres://[::1").expect_err("not an address");
    assert!(matches!(bad, StoreError::Unavailable(_)), "{bad:?}");
}

#[test]
fn a_dropped_connection_is_made_again_and_loses_nothing() {
    let url = format!(
        "{}&application_name=glovebox_reconnect_{}",
        server().fresh_url("reconnect"),
        std::process::id()
    );
    let store = PgStore::connect(&url).expect("connect");
    store.begin_instance(1, None).expect("instance");
    let s = crate::session(&store, "s1", 2);
    server().psql(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'glovebox_reconnect_{}'",
        std::process::id()
    ));
    // The call that finds the connection gone may fail with a named error; the next one
    // connects again.
    let mut answer = store.get_session(&s);
    if let Err(e) = &answer {
        assert!(
            matches!(e, StoreError::Postgres(_) | StoreError::Unavailable(_)),
            "{e:?}"
        );
        answer = store.get_session(&s);
    }
    assert_eq!(answer.expect("after reconnect").id, s);
    crate::session(&store, "s2", 3);
    assert_eq!(store.list_sessions().expect("list").len(), 2);
}

/// A loopback proxy to the test server that, once `kill` is set, answers the client's next
/// message as a server that is shutting down does (a FATAL `57P01` error) and keeps the socket
/// open for `linger` before it closes it: the window in which the server's last word has
/// arrived but the client's socket still looks open (CI hit it with `pg_terminate_backend`:
/// the call after the failed one was sent on the dying connection and failed `Closed`).
fn dying_proxy(kill: Arc<std::sync::atomic::AtomicBool>, linger: std::time::Duration) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let upstream = server().port;
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let (mut from_server, mut to_client) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
            });
            let kill = kill.clone();
            let (mut from_client, mut to_server) = (client, server);
            std::thread::spawn(move || {
                let mut buf = [0u8; 1 << 16];
                loop {
                    let n = match from_client.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if kill.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = to_server.shutdown(Shutdown::Both);
                        let mut fields = Vec::new();
                        for (tag, value) in [
                            (b'S', "FATAL"),
                            (b'V', "FATAL"),
                            (b'C', "57P01"),
                            (b'M', "terminating connection due to administrator command"),
                        ] {
                            fields.push(tag);
                            fields.extend_from_slice(value.as_bytes());
                            fields.push(0);
                        }
                        fields.push(0);
                        let mut message = vec![b'E'];
                        message.extend_from_slice(&(fields.len() as i32 + 4).to_be_bytes());
                        message.extend_from_slice(&fields);
                        let _ = from_client.write_all(&message);
                        std::thread::sleep(linger);
                        let _ = from_client.shutdown(Shutdown::Both);
                        break;
                    }
                    if to_server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// The call that finds the server ending its connection fails with a named error, and the
/// next one is made on a new connection — not sent on the dying one while its socket lingers.
#[test]
fn a_connection_the_server_ended_is_not_used_again() {
    let kill = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = dying_proxy(kill.clone(), std::time::Duration::from_secs(3));
    let url = server()
        .fresh_url("dying")
        .replace(&format!(":{}/", server().port), &format!(":{port}/"));
    let store = PgStore::connect(&url).expect("connect through the proxy");
    store.begin_instance(1, None).expect("instance");
    let s = crate::session(&store, "s1", 2);
    kill.store(true, std::sync::atomic::Ordering::SeqCst);
    let failed = store.get_session(&s).expect_err("the server ended it");
    assert!(failed.is_unavailable(), "{failed:?}");
    kill.store(false, std::sync::atomic::Ordering::SeqCst);
    // Sent on the dying connection, it would wait for the socket to close and fail `Closed`.
    assert_eq!(store.get_session(&s).expect("on a new connection").id, s);
}

/// The SQLite store is still what a file opens (a compile-time check of the two names).
#[test]
fn both_engines_are_stores() {
    fn is_store<S: Store>() {}
    is_store::<SqliteStore>();
    is_store::<PgStore>();
}
