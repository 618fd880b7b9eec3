//! One WebSocket (or the pair of pipes of `--remote-debugging-pipe=cbor`) to a browser: request ids to one-shot replies, deadlines, event fan-out, fail-fast on close.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::events::{Subscriber, subscriber_pair};
use crate::{CdpError, Event, EventFilter, EventStream, Session, SessionId};

/// The deadline a command gets when the caller does not choose one.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest message read from the pipe (a length beyond it is a broken stream, not a reply
/// to allocate for).
const MAX_PIPE_MESSAGE: usize = 256 << 20;

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Deadline for commands sent without an explicit one.
    pub command_timeout: Duration,
    /// Deadline for the WebSocket handshake.
    pub connect_timeout: Duration,
    /// Capacity of each subscriber's channel; past it events are dropped and reported as lag.
    pub event_capacity: usize,
}

/// A callback told how long each command took (the adapter's metrics keep it).
#[derive(Clone)]
pub struct RoundTripHook(pub std::sync::Arc<dyn Fn(Duration) + Send + Sync>);

impl std::fmt::Debug for RoundTripHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoundTripHook")
    }
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: Duration::from_secs(10),
            event_capacity: 1024,
        }
    }
}

/// A command's reply as the browser sent it: decoded once, by its caller, straight into the type
/// it expects (a DOM snapshot is over a megabyte; building a `Value` first doubled the work).
type Reply = Result<ReplyText, CdpError>;

/// A reply not yet decoded.
pub(crate) enum ReplyText {
    /// The whole message, `{"id":…,"result":…}`: routed by the id at its start, so a megabyte
    /// reply is read once (by its caller's decode), not also by the dispatcher.
    Message(Vec<u8>),
    /// Just the `result` (a reply the dispatcher had to parse whole).
    Result(Box<RawValue>),
}

struct Waiting {
    method: String,
    session: Option<SessionId>,
    tx: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, Waiting>,
    /// Set once, when the socket is gone; every later command fails with it at once.
    closed: Option<String>,
    /// Sessions whose target went away; commands to them fail at once instead of timing out.
    detached: HashSet<SessionId>,
}

/// Bound on remembered detached sessions, so a long-lived connection does not grow without limit.
const MAX_REMEMBERED_DETACHED: usize = 4096;

pub(crate) struct Inner {
    /// The new-page gate's watched openers (`gate.rs`).
    pub(crate) openers: crate::gate::Openers,
    endpoint: String,
    options: ConnectionOptions,
    next_id: AtomicU64,
    pending: Mutex<Pending>,
    subscribers: Mutex<Vec<Subscriber>>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    closed_tx: watch::Sender<bool>,
    reader: Mutex<Option<AbortHandle>>,
    /// Told each command's round trip ([`Connection::time_round_trips`]).
    round_trips: std::sync::OnceLock<RoundTripHook>,
}

/// What the writer task sends: a command as built (each transport writes it in its own form,
/// JSON text on a socket, CBOR on the pipe), or the end of the connection.
enum Outgoing {
    Command(Value),
    Close,
}

impl Inner {
    fn new(
        endpoint: String,
        options: ConnectionOptions,
    ) -> (Arc<Inner>, mpsc::UnboundedReceiver<Outgoing>) {
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel::<Outgoing>();
        let (closed_tx, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            openers: Default::default(),
            endpoint,
            options,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(Pending::default()),
            subscribers: Mutex::new(Vec::new()),
            outgoing,
            closed_tx,
            reader: Mutex::new(None),
            round_trips: std::sync::OnceLock::new(),
        });
        (inner, outgoing_rx)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.get_mut().ok().and_then(Option::take) {
            reader.abort();
        }
    }
}

/// A CDP connection. Cheap to clone; the socket closes when the last clone is dropped.
#[derive(Clone)]
pub struct Connection {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.inner.endpoint)
            .finish()
    }
}

#[derive(Deserialize)]
struct Incoming {
    id: Option<u64>,
    result: Option<Box<RawValue>>,
    error: Option<ErrorBody>,
    method: Option<String>,
    params: Option<Value>,
    #[serde(rename = "sessionId")]
    session_id: Option<SessionId>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
    data: Option<Value>,
}

impl Connection {
    /// Connects to a browser's WebSocket debugger URL (`ws://…/devtools/browser/…`).
    pub async fn connect(ws_url: &str, options: ConnectionOptions) -> Result<Connection, CdpError> {
        // Accessibility trees and screenshots of large pages exceed tungstenite's default caps.
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let connect = tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true);
        let (socket, _response) = match tokio::time::timeout(options.connect_timeout, connect).await
        {
            Ok(Ok(ok)) => ok,
            Ok(Err(e)) => {
                return Err(CdpError::Connect {
                    endpoint: ws_url.to_owned(),
                    reason: e.to_string(),
                });
            }
            Err(_) => {
                return Err(CdpError::Connect {
                    endpoint: ws_url.to_owned(),
                    reason: format!(
                        "no WebSocket handshake within {:?}",
                        options.connect_timeout
                    ),
                });
            }
        };
        let (mut sink, mut stream) = socket.split();
        let (inner, mut outgoing_rx) = Inner::new(ws_url.to_owned(), options);

        // Writer: ends when every sender (held by `Inner`) is gone or the socket fails.
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            while let Some(message) = outgoing_rx.recv().await {
                let message = match message {
                    Outgoing::Command(command) => Message::Text(command.to_string().into()),
                    Outgoing::Close => Message::Close(None),
                };
                if let Err(e) = sink.send(message).await {
                    if let Some(inner) = weak.upgrade() {
                        fail_all(&inner, format!("write failed: {e}"));
                    }
                    return;
                }
            }
            let _ = sink.close().await;
        });

        // Reader: holds only a weak reference so dropping the last `Connection` ends it.
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        let reader = tokio::spawn(async move {
            let reason = loop {
                let message = match stream.next().await {
                    Some(Ok(message)) => message,
                    Some(Err(e)) => break format!("read failed: {e}"),
                    None => break "the browser closed the connection".to_owned(),
                };
                let Some(inner) = weak.upgrade() else { return };
                match message {
                    Message::Text(text) => dispatch(&inner, text.as_bytes()),
                    Message::Binary(bytes) => dispatch(&inner, &bytes),
                    Message::Close(frame) => {
                        break match frame {
                            Some(frame) => {
                                format!("the browser closed the connection ({})", frame.reason)
                            }
                            None => "the browser closed the connection".to_owned(),
                        };
                    }
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
                }
            };
            if let Some(inner) = weak.upgrade() {
                fail_all(&inner, reason);
            }
        });
        *inner.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(reader.abort_handle());
        Ok(Connection { inner })
    }

    /// Drives a browser over the two pipes of `--remote-debugging-pipe=cbor` (`to_browser` is
    /// its fd 3, `from_browser` its fd 4): each message is one CBOR envelope (see `cbor.rs`),
    /// transcoded to the JSON text the rest of the connection reads (commands are written in
    /// CBOR as built), which spares the browser its own conversion of every reply to JSON
    /// (~45 ms of a big page's snapshot). No port is open, so no other process can attach to
    /// the browser. Must run inside a Tokio runtime.
    pub fn over_pipe(
        to_browser: OwnedFd,
        from_browser: OwnedFd,
        options: ConnectionOptions,
    ) -> Result<Connection, CdpError> {
        let endpoint = "pipe".to_owned();
        let pipe_error = |e: std::io::Error| CdpError::Connect {
            endpoint: endpoint.clone(),
            reason: e.to_string(),
        };
        let mut sender = pipe::Sender::from_owned_fd(to_browser).map_err(pipe_error)?;
        let receiver = pipe::Receiver::from_owned_fd(from_browser).map_err(pipe_error)?;
        let (inner, mut outgoing_rx) = Inner::new(endpoint.clone(), options);

        // Writer: a close (or every sender gone) closes the browser's input.
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let mut frame = Vec::new();
            while let Some(message) = outgoing_rx.recv().await {
                let Outgoing::Command(command) = message else {
                    break;
                };
                frame.clear();
                crate::cbor::from_json(&command, &mut frame);
                if let Err(e) = sender.write_all(&frame).await {
                    if let Some(inner) = weak.upgrade() {
                        fail_all(&inner, format!("write failed: {e}"));
                    }
                    return;
                }
            }
        });

        // Reader: one envelope after another, each transcoded to JSON; a weak reference, as
        // for the socket.
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        let reader = tokio::spawn(async move {
            use crate::cbor::HEADER_LEN;
            let mut input = tokio::io::BufReader::with_capacity(1 << 16, receiver);
            let mut frame = Vec::new();
            let mut json = Vec::new();
            let reason = loop {
                let mut header = [0; HEADER_LEN];
                match input.read_exact(&mut header).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        break "the browser closed its pipe".to_owned();
                    }
                    Err(e) => break format!("read failed: {e}"),
                }
                let Some(len) =
                    crate::cbor::message_len(&header).filter(|len| *len <= MAX_PIPE_MESSAGE)
                else {
                    break "the browser wrote something that is not a CBOR protocol message (a Chromium \
                           from before 2020 speaks only JSON on its pipe: install a current one)"
                        .to_owned();
                };
                frame.clear();
                frame.extend_from_slice(&header);
                frame.resize(HEADER_LEN + len, 0);
                match input.read_exact(&mut frame[HEADER_LEN..]).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        break "the browser closed its pipe in the middle of a message".to_owned();
                    }
                    Err(e) => break format!("read failed: {e}"),
                }
                json.clear();
                if let Err(e) = crate::cbor::to_json(&frame, &mut json) {
                    tracing::warn!(error = %e, len, "skipping a CDP message that is not in the protocol's CBOR");
                    continue;
                }
                let Some(inner) = weak.upgrade() else { return };
                dispatch(&inner, &json);
            };
            if let Some(inner) = weak.upgrade() {
                fail_all(&inner, reason);
            }
        });
        *inner.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(reader.abort_handle());
        Ok(Connection { inner })
    }

    /// Closes the connection from this side: a close frame goes to the browser (which ends
    /// every session of this connection), and every pending command and event stream ends with
    /// `Closed` at once. Idempotent. A browser on a DevTools port keeps running; one driven over
    /// its pipe loses its only connection (its process is its `Browser`'s to end).
    pub fn close(&self) {
        let _ = self.inner.outgoing.send(Outgoing::Close);
        fail_all(&self.inner, "closed by Glovebox".to_owned());
    }

    /// The browser-level session (commands without a `sessionId`).
    pub fn browser(&self) -> Session {
        Session::new(self.clone(), None, None)
    }

    /// The endpoint this connection was opened to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// The deadline for commands sent without an explicit one.
    pub fn default_timeout(&self) -> Duration {
        self.inner.options.command_timeout
    }

    /// How many commands this connection has sent (to prove that a refused request sent none).
    pub fn commands_sent(&self) -> u64 {
        self.inner.next_id.load(Ordering::Relaxed) - 1
    }

    /// Why the connection closed, or `None` while it is open.
    pub fn closed_reason(&self) -> Option<String> {
        lock(&self.inner.pending).closed.clone()
    }

    /// Resolves once the connection has closed (immediately if it already has).
    pub async fn closed(&self) {
        let mut rx = self.inner.closed_tx.subscribe();
        let _ = rx.wait_for(|closed| *closed).await;
    }

    /// Subscribes to events matching `filter`.
    pub fn subscribe(&self, filter: EventFilter) -> EventStream {
        let (subscriber, stream) = subscriber_pair(filter, self.inner.options.event_capacity);
        lock(&self.inner.subscribers).push(subscriber);
        stream
    }

    /// Tells `hook` each command's round trip from now on (reply, error or timeout alike; not a
    /// wait its caller cancelled). One hook per connection: a second is ignored.
    pub fn time_round_trips(&self, hook: RoundTripHook) {
        let _ = self.inner.round_trips.set(hook);
    }

    /// Sends one command to exactly one session (or the browser) and waits for its reply.
    ///
    /// Dropping the returned future cancels the wait and forgets the request id; a late reply is ignored.
    pub async fn send(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let raw = self.send_for_raw(session, method, params, timeout).await?;
        decode_reply(method, &raw)
    }

    /// [`Connection::send`], the reply's `result` left as the browser's JSON text.
    pub(crate) async fn send_for_raw(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<ReplyText, CdpError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.inner.pending);
            if let Some(reason) = &pending.closed {
                return Err(CdpError::Closed {
                    reason: reason.clone(),
                });
            }
            if let Some(session) = session.filter(|s| pending.detached.contains(*s)) {
                return Err(CdpError::Detached {
                    session_id: session.0.clone(),
                });
            }
            pending.waiting.insert(
                id,
                Waiting {
                    method: method.to_owned(),
                    session: session.cloned(),
                    tx,
                },
            );
        }
        let _forget = ForgetOnDrop {
            inner: &self.inner,
            id,
        };
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.0.clone());
        }
        if self
            .inner
            .outgoing
            .send(Outgoing::Command(message))
            .is_err()
        {
            return Err(CdpError::Closed {
                reason: "the writer stopped".to_owned(),
            });
        }
        let sent = std::time::Instant::now();
        let answer = tokio::time::timeout(timeout, rx).await;
        if let Some(hook) = self.inner.round_trips.get() {
            (hook.0)(sent.elapsed());
        }
        tracing::trace!(
            method,
            took_us = sent.elapsed().as_micros() as u64,
            "CDP round trip"
        );
        match answer {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(CdpError::Closed {
                reason: self
                    .closed_reason()
                    .unwrap_or_else(|| "reply dropped".to_owned()),
            }),
            Err(_) => Err(CdpError::Timeout {
                method: method.to_owned(),
                after: timeout,
            }),
        }
    }
}

/// Removes a request id from the pending table when its caller stops waiting (reply, timeout or cancel).
struct ForgetOnDrop<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        lock(&self.inner.pending).waiting.remove(&self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere must not take the connection down with a poisoned lock.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A reply's JSON text, decoded into what its caller expects.
pub(crate) fn decode_reply<T: serde::de::DeserializeOwned>(
    method: &str,
    raw: &ReplyText,
) -> Result<T, CdpError> {
    #[derive(Deserialize)]
    struct Envelope<T> {
        result: T,
    }
    match raw {
        ReplyText::Message(message) => {
            serde_json::from_slice::<Envelope<T>>(message).map(|e| e.result)
        }
        ReplyText::Result(result) => serde_json::from_str(result.get()),
    }
    .map_err(|e| CdpError::Decode {
        method: method.to_owned(),
        reason: e.to_string(),
    })
}

/// The id of a successful reply, read from the start of the message as Chromium writes it
/// (`{"id":12,"result":…`); `None` for anything else (events, errors, other layouts), which
/// the dispatcher parses whole.
fn reply_id(bytes: &[u8]) -> Option<u64> {
    let rest = bytes.strip_prefix(b"{\"id\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || !rest[digits..].starts_with(b",\"result\":") {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

fn dispatch(inner: &Inner, bytes: &[u8]) {
    if let Some(id) = reply_id(bytes) {
        let waiting = lock(&inner.pending).waiting.remove(&id);
        match waiting {
            Some(waiting) => {
                let _ = waiting.tx.send(Ok(ReplyText::Message(bytes.to_vec())));
            }
            None => tracing::debug!(
                id,
                "reply for a command nobody waits for (timed out or cancelled)"
            ),
        }
        return;
    }
    let incoming: Incoming = match serde_json::from_slice(bytes) {
        Ok(incoming) => incoming,
        Err(e) => {
            tracing::warn!(error = %e, len = bytes.len(), "skipping a CDP message that is not a JSON object");
            return;
        }
    };
    if let Some(id) = incoming.id {
        let Some(waiting) = lock(&inner.pending).waiting.remove(&id) else {
            tracing::debug!(
                id,
                "reply for a command nobody waits for (timed out or cancelled)"
            );
            return;
        };
        let reply = match (incoming.error, incoming.result) {
            (Some(error), _) => Err(CdpError::Protocol {
                method: waiting.method,
                code: error.code,
                message: error.message,
                data: error.data.map(|d| match d {
                    Value::String(s) => s,
                    other => other.to_string(),
                }),
            }),
            (None, Some(result)) => Ok(ReplyText::Result(result)),
            (None, None) => RawValue::from_string("{}".to_owned())
                .map(ReplyText::Result)
                .map_err(|e| CdpError::Decode {
                    method: waiting.method,
                    reason: e.to_string(),
                }),
        };
        let _ = waiting.tx.send(reply);
        return;
    }
    let Some(method) = incoming.method else {
        tracing::warn!(
            len = bytes.len(),
            "skipping a CDP message with neither id nor method"
        );
        return;
    };
    let event = Event {
        method,
        params: incoming.params.unwrap_or(Value::Null),
        session_id: incoming.session_id,
    };
    match event.method.as_str() {
        "Target.detachedFromTarget" => {
            if let Some(gone) = event.params.get("sessionId").and_then(Value::as_str) {
                fail_session(inner, &SessionId(gone.to_owned()));
            }
        }
        "Inspector.detached" | "Inspector.targetCrashed" => {
            if let Some(gone) = &event.session_id {
                fail_session(inner, gone);
            }
        }
        _ => {}
    }
    let mut subscribers = lock(&inner.subscribers);
    subscribers.retain(|s| !s.is_closed() && (!s.filter.matches(&event) || s.deliver(&event)));
}

/// Fails every command waiting on `session` and makes later ones fail at once.
fn fail_session(inner: &Inner, session: &SessionId) {
    let failed: Vec<Waiting> = {
        let mut pending = lock(&inner.pending);
        if pending.detached.len() >= MAX_REMEMBERED_DETACHED {
            pending.detached.clear();
        }
        pending.detached.insert(session.clone());
        let ids: Vec<u64> = pending
            .waiting
            .iter()
            .filter(|(_, w)| w.session.as_ref() == Some(session))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter_map(|id| pending.waiting.remove(&id))
            .collect()
    };
    for waiting in failed {
        let _ = waiting.tx.send(Err(CdpError::Detached {
            session_id: session.0.clone(),
        }));
    }
}

fn fail_all(inner: &Inner, reason: String) {
    let waiting = {
        let mut pending = lock(&inner.pending);
        if pending.closed.is_none() {
            tracing::debug!(%reason, endpoint = %inner.endpoint, "CDP connection closed");
            pending.closed = Some(reason.clone());
        }
        std::mem::take(&mut pending.waiting)
    };
    for (_, waiting) in waiting {
        let _ = waiting.tx.send(Err(CdpError::Closed {
            reason: reason.clone(),
        }));
    }
    // Dropping the senders ends every event stream.
    lock(&inner.subscribers).clear();
    inner.closed_tx.send_replace(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_routed_by_the_id_it_starts_with_and_decoded_once_whole() {
        assert_eq!(reply_id(br#"{"id":12,"result":{"a":1}}"#), Some(12));
        assert_eq!(
            reply_id(br#"{"id":7,"result":{},"sessionId":"AB"}"#),
            Some(7)
        );
        // Errors, events and any other layout are parsed whole by the dispatcher.
        for other in [
            &br#"{"id":12,"error":{"code":-32000,"message":"x"}}"#[..],
            br#"{"method":"Page.loadEventFired","params":{}}"#,
            br#"{"result":{},"id":3}"#,
            br#"{ "id":3,"result":{}}"#,
            br#"{"id":,"result":{}}"#,
            br#"{"id":-3,"result":{}}"#,
            br#"{"id":99999999999999999999,"result":{}}"#,
            b"",
        ] {
            assert_eq!(reply_id(other), None, "{}", String::from_utf8_lossy(other));
        }
        let message =
            ReplyText::Message(br#"{"id":5,"result":{"value":3},"sessionId":"S"}"#.to_vec());
        let value: Value = decode_reply("X.y", &message).unwrap();
        assert_eq!(value, json!({"value": 3}));
        let cut = ReplyText::Message(br#"{"id":5,"result":{"value":3"#.to_vec());
        assert!(matches!(
            decode_reply::<Value>("X.y", &cut),
            Err(CdpError::Decode { .. })
        ));
    }
}
