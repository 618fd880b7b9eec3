//! kill -9: a child process (this test binary, re-executed) commits audit entries and
//! ownership changes in a loop and prints each committed seq; the parent kills it with
//! SIGKILL mid-loop and checks that every printed seq survived and the file is intact.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use store::{AuditSeq, NewAudit, ResourceId, SessionId, SqliteStore, Store};

use crate::{db_path, session, user_tab};

const CHILD_ENV: &str = "GLOVEBOX_STORE_KILL9_CHILD_DB";
const TEST_NAME: &str = "crash::kill_9_keeps_every_committed_seq";
/// How many committed iterations the parent waits for before it kills the child.
const COMMITTED_BEFORE_KILL: usize = 300;
/// The child stops by itself after this many iterations if nobody kills it.
const CHILD_MAX_ITERATIONS: u64 = 100_000;

#[test]
fn kill_9_keeps_every_committed_seq() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&path));
        return;
    }
    let path = db_path("kill9");
    let (s, tab) = {
        let store = SqliteStore::open(&path).expect("open");
        (session(&store, "s1", 1), user_tab(&store, "u1", 1))
    };

    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut printed = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child stdout");
        // The test harness prints its own lines too; ours start with "committed".
        let Some(rest) = line.strip_prefix("committed ") else {
            continue;
        };
        let mut fields = rest.split(' ').map(|f| f.parse::<u64>().expect("number"));
        let (seq, version) = (fields.next().expect("seq"), fields.next().expect("version"));
        printed.push((seq, version));
        if printed.len() == COMMITTED_BEFORE_KILL {
            break;
        }
    }
    assert_eq!(
        printed.len(),
        COMMITTED_BEFORE_KILL,
        "the child stopped early"
    );
    // `Child::kill` sends SIGKILL on Unix; the status check below proves it.
    child.kill().expect("kill child");
    let status = child.wait().expect("wait child");
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "child status: {status:?}"
    );

    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    drop(conn);

    let store = SqliteStore::open(&path).expect("reopen after kill");
    let stored: BTreeSet<u64> = store
        .audit_since(&s, AuditSeq(0), usize::MAX)
        .expect("audit")
        .into_iter()
        .map(|e| e.seq.0)
        .collect();
    let missing: Vec<u64> = printed
        .iter()
        .map(|(seq, _)| *seq)
        .filter(|seq| !stored.contains(seq))
        .collect();
    assert!(missing.is_empty(), "committed seqs lost: {missing:?}");
    let last_version = printed.last().map(|(_, v)| *v).expect("printed");
    assert!(store.get_resource(&tab).expect("tab").version >= last_version);
}

/// The child: claim, audit, release, print, until killed or the bound is reached.
fn child(path: &Path) {
    let store = SqliteStore::open(path).expect("child open");
    store.begin_instance(2, None).expect("child instance");
    let s = SessionId::new("s1");
    let tab = ResourceId::new("u1");
    let mut out = std::io::stdout().lock();
    for i in 0..CHILD_MAX_ITERATIONS {
        let now = 10 + i;
        store.claim_resource(&tab, &s, now).expect("claim");
        let payload = format!(r#"{{"i":{i}}}"#);
        let seq = store
            .append_audit(&NewAudit {
                at: now,
                session_id: &s,
                run_id: None,
                resource_id: Some(&tab),
                kind: "ownership",
                payload: &payload,
            })
            .expect("append");
        let released = store.release_resource(&tab, &s, now).expect("release");
        // A closed pipe means the parent is done with us.
        if writeln!(out, "committed {} {}", seq.0, released.version)
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}
