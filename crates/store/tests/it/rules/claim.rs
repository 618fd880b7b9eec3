//! The claim race: eight claimers, one winner, whether they share a connection or each has
//! its own connection to the same file (the conditional UPDATE is what decides).

use std::sync::{Arc, Barrier};

use store::{ResourceId, SessionId, Store, StoreError};

use super::{file_store, session, user_tab};

const CLAIMERS: usize = 8;

/// Runs one claim per store at once and checks that exactly one won.
fn race(stores: Vec<Arc<super::TheStore>>, tab: &ResourceId, sessions: &[SessionId]) {
    let barrier = Arc::new(Barrier::new(stores.len()));
    let handles: Vec<_> = stores
        .into_iter()
        .zip(sessions.iter().cloned())
        .map(|(store, s)| {
            let barrier = Arc::clone(&barrier);
            let tab = tab.clone();
            std::thread::spawn(move || {
                barrier.wait();
                (s.clone(), store.claim_resource(&tab, &s, 100))
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("claimer"))
        .collect();
    let winners: Vec<&SessionId> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(s, _)| s)
        .collect();
    assert_eq!(winners.len(), 1, "results: {results:?}");
    let winner = winners[0].clone();
    for (s, r) in &results {
        match r {
            Ok(resource) => assert_eq!(resource.session_id.as_ref(), Some(s)),
            Err(StoreError::AlreadyClaimed { by }) => assert_eq!(by, &winner),
            Err(e) => panic!("unexpected error for {s}: {e:?}"),
        }
    }
}

fn sessions(store: &dyn Store) -> Vec<SessionId> {
    (0..CLAIMERS)
        .map(|i| session(store, &format!("s{i}"), 1))
        .collect()
}

#[test]
fn eight_threads_on_one_store_exactly_one_claim_wins() {
    let (store, _path) = file_store("claim-shared");
    let sessions = sessions(&store);
    let tab = user_tab(&store, "u1", 2);
    let store = Arc::new(store);
    race(vec![store.clone(); CLAIMERS], &tab, &sessions);
    assert_eq!(store.get_resource(&tab).expect("get").version, 2);
}

#[test]
fn eight_connections_to_one_file_exactly_one_claim_wins() {
    let (store, path) = file_store("claim-conns");
    let sessions = sessions(&store);
    let tab = user_tab(&store, "u1", 2);
    let stores = (0..CLAIMERS)
        .map(|_| super::open(&path).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .expect("open");
    race(stores, &tab, &sessions);
    assert_eq!(store.get_resource(&tab).expect("get").version, 2);
}
