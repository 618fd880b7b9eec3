//! Event subscription: bounded per-subscriber channels filtered by session and method, with lag reported.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::SessionId;

/// One CDP event as received: the method, its params, and the session it came from (`None` = the browser).
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<SessionId>,
}

impl Event {
    /// Decodes the params into a typed event struct; `None` if they do not fit.
    pub fn parse<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(self.params.clone()).ok()
    }
}

/// Which events a subscriber wants. An empty method list means every method.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// `Some(None)` = browser-level events only; `Some(Some(id))` = that session only; `None` = any session.
    pub session: Option<Option<SessionId>>,
    pub methods: Vec<String>,
}

impl EventFilter {
    /// Events of exactly this session (or of the browser when `session` is `None`).
    pub fn session(session: Option<SessionId>) -> Self {
        EventFilter {
            session: Some(session),
            methods: Vec::new(),
        }
    }

    /// Restricts the filter to these methods.
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.methods = methods.into_iter().map(Into::into).collect();
        self
    }

    pub(crate) fn matches(&self, event: &Event) -> bool {
        if let Some(session) = &self.session
            && session != &event.session_id
        {
            return false;
        }
        self.methods.is_empty() || self.methods.iter().any(|m| m == &event.method)
    }
}

/// A subscriber missed `count` events because it did not keep up with its bounded channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("event subscriber lagged and missed {count} events")]
pub struct Lagged {
    pub count: u64,
}

pub(crate) struct Subscriber {
    pub(crate) filter: EventFilter,
    tx: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
}

impl Subscriber {
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Delivers without blocking the reader; returns false when the receiver is gone.
    pub(crate) fn deliver(&self, event: &Event) -> bool {
        match self.tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// The receiving end of a subscription. Ends (`None`) when the connection closes.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<Event>,
    dropped: Arc<AtomicU64>,
}

impl EventStream {
    /// The next event, or `Err(Lagged)` first if events were dropped because this stream fell behind.
    ///
    /// Dropped events are always newer than the ones already queued, so the gap is reported as
    /// soon as it is known, before waiting for more.
    pub async fn recv(&mut self) -> Option<Result<Event, Lagged>> {
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            return Some(Err(Lagged { count: dropped }));
        }
        self.rx.recv().await.map(Ok)
    }

    /// The next event that decodes as `T`, skipping lag reports and events that do not decode.
    pub async fn next_as<T: DeserializeOwned>(&mut self) -> Option<T> {
        loop {
            match self.recv().await? {
                Ok(event) => {
                    if let Some(parsed) = event.parse() {
                        return Some(parsed);
                    }
                }
                Err(lagged) => tracing::debug!(%lagged, "event stream lagged"),
            }
        }
    }
}

pub(crate) fn subscriber_pair(filter: EventFilter, capacity: usize) -> (Subscriber, EventStream) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let dropped = Arc::new(AtomicU64::new(0));
    (
        Subscriber {
            filter,
            tx,
            dropped: dropped.clone(),
        },
        EventStream { rx, dropped },
    )
}
