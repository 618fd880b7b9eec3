//! The binary form of the DevTools protocol, spoken over `--remote-debugging-pipe=cbor`.
//!
//! Chromium keeps protocol messages in CBOR inside; a JSON client makes the browser process
//! turn every reply into JSON text first, and for a big page's DOM snapshot (1.4 MB) that
//! conversion took ~45 ms of a ~95 ms command on 2 cores. Over the pipe Glovebox takes the CBOR
//! as it is and transcodes it to the same JSON text here (5–10 ms for that snapshot), so everything
//! above the transport (replies routed by id, typed decoding, events) is unchanged.
//!
//! The dialect (Chromium's `third_party/inspector_protocol/crdtp/cbor`): every message, and every
//! map and array inside it, is an *envelope* — tag 24, then a byte string with a 4-byte length
//! holding the item — around an indefinite-length map or array; integers are 32-bit
//! (larger numbers are doubles); text is UTF-8 (major type 3) or UTF-16LE in a byte string;
//! binary data is a byte string tagged 22 (JSON: base64). Doubles are written as Chromium's own
//! JSON writer does: integral values as integers, NaN and infinities as `null`.

use base64::Engine as _;
use serde_json::Value;

/// The first bytes of every message: tag 24 (an embedded CBOR item) and a byte string with a
/// 4-byte big-endian length, which follows.
pub(crate) const ENVELOPE: [u8; 3] = [0xD8, 0x18, 0x5A];
/// The whole envelope header: [`ENVELOPE`] and the length.
pub(crate) const HEADER_LEN: usize = 7;

/// Deeper nesting than this is refused (serde_json refuses beyond 128 anyway).
const MAX_DEPTH: usize = 512;

const TAG_ENVELOPE: u64 = 24;
const TAG_BASE64: u64 = 22;
const BREAK: u8 = 0xFF;

/// A message that is not in the dialect, with where reading it stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed CBOR message at byte {at}: {what}")]
pub(crate) struct Malformed {
    /// Offset into the message.
    pub(crate) at: usize,
    /// What was wrong there.
    pub(crate) what: &'static str,
}

/// The length a message's envelope header announces (the bytes after the header), or `None`
/// when `header` is not an envelope header.
pub(crate) fn message_len(header: &[u8; HEADER_LEN]) -> Option<usize> {
    (header[..3] == ENVELOPE)
        .then(|| u32::from_be_bytes([header[3], header[4], header[5], header[6]]) as usize)
}

/// Appends the JSON text of one CBOR message (its envelope included) to `out`.
pub(crate) fn to_json(message: &[u8], out: &mut Vec<u8>) -> Result<(), Malformed> {
    let mut reader = Reader {
        input: message,
        at: 0,
        out,
    };
    reader.item(0)?;
    if reader.at != message.len() {
        return Err(reader.malformed("bytes after the message"));
    }
    Ok(())
}

/// Appends the CBOR form of one JSON message (a command) to `out`, enveloped.
pub(crate) fn from_json(message: &Value, out: &mut Vec<u8>) {
    match message {
        Value::Null => out.push(0xF6),
        Value::Bool(false) => out.push(0xF4),
        Value::Bool(true) => out.push(0xF5),
        Value::Number(number) => {
            // As Chromium reads JSON: an integral number within 32 bits is an integer, any other
            // a double.
            let integer = number
                .as_i64()
                .or_else(|| {
                    number
                        .as_f64()
                        .filter(|f| f.fract() == 0.0)
                        .map(|f| f as i64)
                })
                .and_then(|i| i32::try_from(i).ok());
            match integer {
                Some(i) if i >= 0 => head(out, 0, i as u64),
                Some(i) => head(out, 1, (-1 - i64::from(i)) as u64),
                None => {
                    out.push(0xFB);
                    out.extend_from_slice(&number.as_f64().unwrap_or(0.0).to_be_bytes());
                }
            }
        }
        Value::String(text) => {
            head(out, 3, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        // Containers are enveloped: Chromium reads an `any` value (a call argument) only so.
        Value::Array(items) => enveloped(out, |out| {
            out.push(0x9F);
            for item in items {
                from_json(item, out);
            }
            out.push(BREAK);
        }),
        Value::Object(map) => enveloped(out, |out| {
            out.push(0xBF);
            for (key, value) in map {
                head(out, 3, key.len() as u64);
                out.extend_from_slice(key.as_bytes());
                from_json(value, out);
            }
            out.push(BREAK);
        }),
    }
}

/// Writes an envelope around what `item` writes.
fn enveloped(out: &mut Vec<u8>, item: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(&ENVELOPE);
    let length_at = out.len();
    out.extend_from_slice(&[0; 4]);
    item(out);
    let length = (out.len() - length_at - 4) as u32;
    out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
}

/// An item's initial byte and argument, in the shortest form.
fn head(out: &mut Vec<u8>, major: u8, argument: u64) {
    let major = major << 5;
    match argument {
        0..=23 => out.push(major | argument as u8),
        24..=0xFF => out.extend_from_slice(&[major | 24, argument as u8]),
        0x100..=0xFFFF => {
            out.push(major | 25);
            out.extend_from_slice(&(argument as u16).to_be_bytes());
        }
        0x1_0000..=0xFFFF_FFFF => {
            out.push(major | 26);
            out.extend_from_slice(&(argument as u32).to_be_bytes());
        }
        _ => {
            out.push(major | 27);
            out.extend_from_slice(&argument.to_be_bytes());
        }
    }
}

struct Reader<'a, 'o> {
    input: &'a [u8],
    at: usize,
    out: &'o mut Vec<u8>,
}

impl<'a> Reader<'a, '_> {
    fn malformed(&self, what: &'static str) -> Malformed {
        Malformed { at: self.at, what }
    }

    fn byte(&mut self) -> Result<u8, Malformed> {
        let byte = *self
            .input
            .get(self.at)
            .ok_or_else(|| self.malformed("the message ends early"))?;
        self.at += 1;
        Ok(byte)
    }

    fn bytes(&mut self, n: u64) -> Result<&'a [u8], Malformed> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|end| *end <= self.input.len())
            .ok_or_else(|| self.malformed("a length runs past the message"))?;
        let bytes = &self.input[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    /// The argument of an initial byte whose additional information is `info`.
    fn argument(&mut self, info: u8) -> Result<u64, Malformed> {
        let width = match info {
            0..=23 => return Ok(u64::from(info)),
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            _ => return Err(self.malformed("an indefinite length where none may be")),
        };
        Ok(self
            .bytes(width)?
            .iter()
            .fold(0u64, |n, b| (n << 8) | u64::from(*b)))
    }

    fn next_is_break(&mut self) -> Result<bool, Malformed> {
        match self.input.get(self.at) {
            Some(&BREAK) => {
                self.at += 1;
                Ok(true)
            }
            Some(_) => Ok(false),
            None => Err(self.malformed("a container is never closed")),
        }
    }

    fn item(&mut self, depth: usize) -> Result<(), Malformed> {
        if depth > MAX_DEPTH {
            return Err(self.malformed("nested too deeply"));
        }
        let initial = self.byte()?;
        let (major, info) = (initial >> 5, initial & 0x1F);
        match major {
            0 => {
                let n = self.argument(info)?;
                write_json(self.out, &n);
            }
            1 => {
                let n = self.argument(info)?;
                write_json(self.out, &(-1 - i128::from(n)));
            }
            2 | 3 => self.string(initial)?,
            4 => self.container(info, b'[', b']', |r| r.item(depth + 1))?,
            5 => self.container(info, b'{', b'}', |r| {
                r.key()?;
                r.out.push(b':');
                r.item(depth + 1)
            })?,
            6 => match self.argument(info)? {
                TAG_ENVELOPE => {
                    if self.byte()? != ENVELOPE[2] {
                        return Err(self.malformed("an envelope without a 4-byte length"));
                    }
                    let length = self.argument(26)?;
                    let start = self.at;
                    self.item(depth)?;
                    if (self.at - start) as u64 != length {
                        return Err(self.malformed("an envelope's length is not its content's"));
                    }
                }
                TAG_BASE64 => {
                    let initial = self.byte()?;
                    if initial >> 5 != 2 {
                        return Err(self.malformed("binary data that is not a byte string"));
                    }
                    let n = self.argument(initial & 0x1F)?;
                    let data = self.bytes(n)?;
                    self.out.push(b'"');
                    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
                    self.out.extend_from_slice(encoded.as_bytes());
                    self.out.push(b'"');
                }
                // Another tag (none in the dialect): its item as it is.
                _ => self.item(depth)?,
            },
            _ => match info {
                20 => self.out.extend_from_slice(b"false"),
                21 => self.out.extend_from_slice(b"true"),
                22 | 23 => self.out.extend_from_slice(b"null"),
                25 => {
                    let half = self.bytes(2)?;
                    self.double(half_to_f64(u16::from_be_bytes([half[0], half[1]])));
                }
                26 => {
                    let single = self.bytes(4)?;
                    let bits = u32::from_be_bytes([single[0], single[1], single[2], single[3]]);
                    self.double(f64::from(f32::from_bits(bits)));
                }
                27 => {
                    let double = self.bytes(8)?;
                    let mut bits = [0; 8];
                    bits.copy_from_slice(double);
                    self.double(f64::from_be_bytes(bits));
                }
                _ => {
                    self.at -= 1;
                    return Err(self.malformed("a simple value outside the dialect"));
                }
            },
        }
        Ok(())
    }

    /// An array's items or a map's entries (a definite or an indefinite number), each written by
    /// `entry`, comma-separated between `open` and `close`.
    fn container(
        &mut self,
        info: u8,
        open: u8,
        close: u8,
        mut entry: impl FnMut(&mut Self) -> Result<(), Malformed>,
    ) -> Result<(), Malformed> {
        self.out.push(open);
        let mut left = (info != 31).then(|| self.argument(info)).transpose()?;
        let mut first = true;
        loop {
            match &mut left {
                Some(0) => break,
                Some(n) => *n -= 1,
                None if self.next_is_break()? => break,
                None => {}
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            entry(self)?;
        }
        self.out.push(close);
        Ok(())
    }

    /// A map key: a string, UTF-8 or UTF-16.
    fn key(&mut self) -> Result<(), Malformed> {
        let initial = self.byte()?;
        if !matches!(initial >> 5, 2 | 3) {
            return Err(self.malformed("a map key that is not a string"));
        }
        self.string(initial)
    }

    /// A string whose initial byte was `initial`: UTF-8 text (major type 3) or UTF-16LE in a
    /// byte string (2).
    fn string(&mut self, initial: u8) -> Result<(), Malformed> {
        let n = self.argument(initial & 0x1F)?;
        let bytes = self.bytes(n)?;
        if initial >> 5 == 3 {
            let text =
                std::str::from_utf8(bytes).map_err(|_| self.malformed("text that is not UTF-8"))?;
            write_json(self.out, text);
            Ok(())
        } else {
            self.utf16(bytes)
        }
    }

    /// A UTF-16LE string; an unpaired surrogate becomes U+FFFD, as it would in a JSON string
    /// Glovebox can read.
    fn utf16(&mut self, units: &[u8]) -> Result<(), Malformed> {
        if !units.len().is_multiple_of(2) {
            return Err(self.malformed("UTF-16 text of an odd number of bytes"));
        }
        let text: String = char::decode_utf16(
            units
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]])),
        )
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
        write_json(self.out, &text);
        Ok(())
    }

    /// As Chromium's JSON writer: integral values as integers, NaN and infinities as `null`.
    fn double(&mut self, value: f64) {
        if !value.is_finite() {
            self.out.extend_from_slice(b"null");
        } else if value.fract() == 0.0 && value.abs() < 9.0e18 {
            write_json(self.out, &(value as i64));
        } else {
            write_json(self.out, &value);
        }
    }
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a string or a number into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn half_to_f64(half: u16) -> f64 {
    let exponent = (half >> 10) & 0x1F;
    let mantissa = f64::from(half & 0x3FF);
    let magnitude = match exponent {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1024.0 + mantissa) * 2f64.powi(i32::from(e) - 25),
    };
    if half & 0x8000 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_of(message: &[u8]) -> Result<Value, Malformed> {
        let mut out = Vec::new();
        to_json(message, &mut out)?;
        Ok(serde_json::from_slice(&out).expect("the transcoder writes JSON"))
    }

    #[test]
    fn a_command_round_trips_and_is_enveloped_as_chromium_reads_it() {
        let command = json!({
            "id": 7,
            "method": "DOMSnapshot.captureSnapshot",
            "params": {"computedStyles": ["display", "cursor"], "depth": -1, "x": 12.5, "big": 5_000_000_000u64, "ok": true, "none": null, "text": "é ✓ \"quoted\"\n"},
            "sessionId": "ABC"
        });
        let mut cbor = Vec::new();
        from_json(&command, &mut cbor);
        let header: [u8; HEADER_LEN] = cbor[..HEADER_LEN].try_into().unwrap();
        assert_eq!(message_len(&header), Some(cbor.len() - HEADER_LEN));
        // An indefinite-length map; the array inside is enveloped too.
        assert_eq!(cbor[HEADER_LEN], 0xBF);
        let array = cbor.iter().position(|b| *b == 0x9F).unwrap();
        assert_eq!(cbor[array - HEADER_LEN..array - 4], ENVELOPE);
        let mut expected = command.clone();
        // 5e9 does not fit 32 bits: it travels as a double and comes back integral.
        expected["params"]["big"] = json!(5_000_000_000i64);
        assert_eq!(json_of(&cbor).unwrap(), expected);
    }

    #[test]
    fn chromium_s_forms_become_the_json_its_own_writer_would_give() {
        let utf16: Vec<u8> = "añ😀"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let mut map = vec![0xBF];
        map.extend_from_slice(b"\x64data\xD6\x43\x01\x02\x03"); // binary, tag 22
        map.extend_from_slice(b"\x64name\x58");
        map.push(utf16.len() as u8);
        map.extend_from_slice(&utf16); // UTF-16LE byte string
        map.extend_from_slice(b"\x63one\xFB\x3F\xF0\x00\x00\x00\x00\x00\x00"); // 1.0
        map.extend_from_slice(b"\x63nan\xFB\x7F\xF8\x00\x00\x00\x00\x00\x00");
        map.extend_from_slice(b"\x64half\xF9\x3E\x00"); // 1.5
        map.extend_from_slice(b"\x63neg\x38\x63"); // -100
        map.extend_from_slice(b"\x64list\x83\x01\x02\x03"); // a definite-length array
        map.push(BREAK);
        let mut message = ENVELOPE.to_vec();
        message.extend_from_slice(&(map.len() as u32).to_be_bytes());
        message.extend_from_slice(&map);
        assert_eq!(
            json_of(&message).unwrap(),
            json!({"data": "AQID", "name": "añ😀", "one": 1, "nan": null, "half": 1.5, "neg": -100, "list": [1, 2, 3]})
        );
    }

    #[test]
    fn the_written_json_keeps_the_reply_s_leading_id() {
        let mut cbor = Vec::new();
        from_json(&json!({"id": 3, "result": {"a": 1}}), &mut cbor);
        let mut out = Vec::new();
        to_json(&cbor, &mut out).unwrap();
        assert_eq!(out, br#"{"id":3,"result":{"a":1}}"#);
    }

    /// Numbers as the browser holds them (doubles beyond 32 bits), for comparing round trips.
    fn numbers_as_doubles(value: &Value) -> Value {
        match value {
            Value::Number(n) => json!(n.as_f64()),
            Value::Array(items) => Value::Array(items.iter().map(numbers_as_doubles).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), numbers_as_doubles(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            (-1e300f64..1e300).prop_map(|f| json!(f)),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_command_comes_back_as_the_json_it_was(value in any_json()) {
            let mut cbor = Vec::new();
            from_json(&json!({"id": 1, "params": value}), &mut cbor);
            let back = json_of(&cbor).unwrap();
            proptest::prop_assert_eq!(
                numbers_as_doubles(&back["params"]),
                numbers_as_doubles(&value)
            );
        }

        #[test]
        fn any_bytes_are_transcoded_or_refused_never_a_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
        ) {
            let mut out = Vec::new();
            if to_json(&bytes, &mut out).is_ok() {
                serde_json::from_slice::<Value>(&out).unwrap();
            }
        }
    }

    #[test]
    fn malformed_messages_are_refused_not_misread() {
        let mut good = Vec::new();
        from_json(&json!({"id": 1, "result": {"list": [1, "x"]}}), &mut good);
        // Every truncation is refused.
        for end in 0..good.len() {
            assert!(json_of(&good[..end]).is_err(), "cut at {end}");
        }
        // A wrong envelope length, trailing bytes, a number key, a stray break, bad UTF-8.
        let mut wrong_length = good.clone();
        wrong_length[6] -= 1;
        assert!(json_of(&wrong_length).is_err());
        let mut trailing = good.clone();
        trailing.push(0x01);
        assert_eq!(
            json_of(&trailing).unwrap_err().what,
            "bytes after the message"
        );
        assert!(json_of(&[0xBF, 0x01, 0x01, 0xFF]).is_err());
        assert!(json_of(&[0xFF]).is_err());
        assert!(json_of(&[0x62, 0xC3, 0x28]).is_err());
        assert!(json_of(&[0x5A, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
        let deep: Vec<u8> = std::iter::repeat_n(0x9F, MAX_DEPTH + 2).collect();
        assert_eq!(json_of(&deep).unwrap_err().what, "nested too deeply");
    }
}
