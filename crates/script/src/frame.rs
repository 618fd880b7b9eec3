//! The broker channel's framing: every message is a 4-byte big-endian length, then that many
//! bytes whose first is the kind (`J` a JSON object, `I` an image's bytes). A frame longer than
//! its kind's bound is refused from its header alone, before its body is read or anything runs
//! (`004_…` Broker 协议: "未知方法和超大消息在执行前拒绝"); its body is then skipped, so the
//! channel stays in step.
//!
//! Not here: what the JSON says (`wire.rs`).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest JSON message either side sends.
pub const MAX_JSON_BYTES: usize = 1 << 20;
/// The largest image frame (a screenshot, or an image a script displays).
pub const MAX_IMAGE_BYTES: usize = 8 << 20;
/// The most a refused frame may make the host skip; a longer one ends the runner.
pub const MAX_SKIP_BYTES: usize = 64 << 20;

/// One frame's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A JSON message (not yet parsed).
    Json(Vec<u8>),
    /// An image's encoded bytes.
    Image(Vec<u8>),
}

/// What can go wrong reading a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The other side closed the channel (the runner exited).
    #[error("the runner closed its channel")]
    Closed,
    /// A frame over its kind's bound; its body was skipped.
    #[error("a {kind} message of {len} bytes is over the {max}-byte bound; refused unread")]
    Oversize {
        kind: &'static str,
        len: usize,
        max: usize,
    },
    /// A frame of an unknown kind, or an empty one; its body was skipped.
    #[error("a frame of unknown kind {0:#04x}; refused unread")]
    UnknownKind(u8),
    /// A frame too big even to skip: the channel cannot be trusted any more.
    #[error("a frame of {0} bytes; the channel is closed")]
    Unskippable(usize),
    #[error("the channel failed: {0}")]
    Io(#[from] std::io::Error),
}

impl FrameError {
    /// Whether the channel is still in step after this error (the next frame can be read).
    pub fn recoverable(&self) -> bool {
        matches!(self, Self::Oversize { .. } | Self::UnknownKind(_))
    }
}

/// Reads one frame, refusing an oversize one from its header.
pub async fn read<R: AsyncRead + Unpin>(r: &mut R) -> Result<Frame, FrameError> {
    let mut header = [0u8; 4];
    match r.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 {
        return Err(FrameError::UnknownKind(0));
    }
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind).await.map_err(eof_closed)?;
    let body = len - 1;
    let (name, max) = match kind[0] {
        b'J' => ("JSON", MAX_JSON_BYTES),
        b'I' => ("image", MAX_IMAGE_BYTES),
        other => {
            skip(r, body).await?;
            return Err(FrameError::UnknownKind(other));
        }
    };
    if body > max {
        skip(r, body).await?;
        return Err(FrameError::Oversize {
            kind: name,
            len: body,
            max,
        });
    }
    let mut buf = vec![0u8; body];
    r.read_exact(&mut buf).await.map_err(eof_closed)?;
    Ok(match kind[0] {
        b'J' => Frame::Json(buf),
        _ => Frame::Image(buf),
    })
}

fn eof_closed(e: std::io::Error) -> FrameError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        FrameError::Closed
    } else {
        e.into()
    }
}

async fn skip<R: AsyncRead + Unpin>(r: &mut R, len: usize) -> Result<(), FrameError> {
    if len > MAX_SKIP_BYTES {
        return Err(FrameError::Unskippable(len));
    }
    let copied = tokio::io::copy(&mut r.take(len as u64), &mut tokio::io::sink()).await?;
    if copied < len as u64 {
        return Err(FrameError::Closed);
    }
    Ok(())
}

/// Writes one JSON message.
pub async fn write_json<W: AsyncWrite + Unpin>(
    w: &mut W,
    value: &serde_json::Value,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    write(w, b'J', &body).await
}

/// Writes one image frame.
pub async fn write_image<W: AsyncWrite + Unpin>(w: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    write(w, b'I', bytes).await
}

async fn write<W: AsyncWrite + Unpin>(w: &mut W, kind: u8, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len() + 1).map_err(std::io::Error::other)?;
    let mut head = [0u8; 5];
    head[..4].copy_from_slice(&len.to_be_bytes());
    head[4] = kind;
    w.write_all(&head).await?;
    w.write_all(body).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        v.push(kind);
        v.extend_from_slice(body);
        v
    }

    #[tokio::test]
    async fn an_oversize_message_is_refused_and_the_next_one_read() {
        let mut input = framed(b'J', &vec![b' '; MAX_JSON_BYTES + 1]);
        input.extend(framed(b'J', b"{}"));
        let mut r = input.as_slice();
        let err = read(&mut r).await.unwrap_err();
        assert!(
            matches!(err, FrameError::Oversize { kind: "JSON", .. }),
            "{err}"
        );
        assert!(err.recoverable());
        assert_eq!(read(&mut r).await.unwrap(), Frame::Json(b"{}".to_vec()));
        assert!(matches!(read(&mut r).await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn unknown_kinds_empty_frames_and_huge_headers() {
        let mut input = framed(b'X', b"abc");
        input.extend(framed(b'I', b"png"));
        let mut r = input.as_slice();
        assert!(matches!(
            read(&mut r).await,
            Err(FrameError::UnknownKind(b'X'))
        ));
        assert_eq!(read(&mut r).await.unwrap(), Frame::Image(b"png".to_vec()));
        let mut r: &[u8] = &[0, 0, 0, 0];
        assert!(matches!(
            read(&mut r).await,
            Err(FrameError::UnknownKind(0))
        ));
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, b'J'];
        let err = read(&mut r).await.unwrap_err();
        assert!(matches!(err, FrameError::Unskippable(_)) && !err.recoverable());
        let mut r: &[u8] = &[0, 0, 0, 9, b'J', b'{'];
        assert!(matches!(read(&mut r).await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn what_is_written_is_read_back() {
        let mut buf = Vec::new();
        write_json(&mut buf, &serde_json::json!({"a": 1}))
            .await
            .unwrap();
        write_image(&mut buf, b"\x89PNG").await.unwrap();
        let mut r = buf.as_slice();
        assert_eq!(
            read(&mut r).await.unwrap(),
            Frame::Json(br#"{"a":1}"#.to_vec())
        );
        assert_eq!(
            read(&mut r).await.unwrap(),
            Frame::Image(b"\x89PNG".to_vec())
        );
    }
}
