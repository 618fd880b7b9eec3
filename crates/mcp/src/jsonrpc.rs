//! The JSON-RPC checks both transports make before rmcp reads a message, so that every request
//! with an id gets an answer, as JSON-RPC says: bytes that are not JSON (invalid UTF-8, a lone
//! surrogate, nesting past serde's limit, a number out of range) get -32700 with a null id; JSON
//! that is not a request object (an array, a scalar, an object with neither method nor result)
//! gets -32600; a `tools/call` whose params are not `{name: string, arguments?: object}` gets
//! -32602 with its id. stdio answers on the pipe; HTTP answers 400 with the error as its body.

use serde_json::{Value, json};

/// A message the transport answers itself: the JSON-RPC error to send back, or nothing (a
/// notification rmcp could not read is dropped: a notification gets no answer).
#[derive(Debug)]
pub(crate) struct Answer(pub(crate) String);

impl Answer {
    /// Nothing to send back.
    pub(crate) fn is_silent(&self) -> bool {
        self.0.is_empty()
    }
}

/// `Ok` for a message rmcp may read; else the JSON-RPC error that answers it.
pub(crate) fn check(bytes: &[u8]) -> Result<(), Answer> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            return Err(error_line(
                &Value::Null,
                -32700,
                format!("Parse error: {e}"),
            ));
        }
    };
    let Value::Object(message) = &value else {
        return Err(error_line(
            &Value::Null,
            -32600,
            "Invalid Request: a message is one JSON object (batches are not supported)".into(),
        ));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message.get("method");
    // MCP: an id is a string or an integer, never null (rmcp reads integers as i64); a request
    // whose id is anything else is still answered, with that id echoed where it is one.
    let valid_id = match &id {
        Value::Null => !(message.contains_key("id") && method.is_some()),
        Value::String(_) => true,
        other => other.as_i64().is_some(),
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) || !valid_id {
        let echoed = if id.is_string() || id.is_number() {
            &id
        } else {
            &Value::Null
        };
        return Err(error_line(
            echoed,
            -32600,
            "Invalid Request: jsonrpc must be \"2.0\" and an id a string or an integer (at most 2^63-1), never null".into(),
        ));
    }
    // MCP's params are an object (or absent), and their `_meta` is one too: anything else is
    // answered here with the request's id (rmcp could not type it, and answered without one).
    let params = message.get("params");
    let params_ok = params.is_none_or(|p| {
        p.is_null()
            || p.as_object()
                .is_some_and(|o| o.get("_meta").is_none_or(Value::is_object))
    });
    if !params_ok && method.is_some_and(Value::is_string) {
        return if message.contains_key("id") {
            Err(error_line(
                &id,
                -32602,
                "Invalid params: params is an object, and its _meta an object too".into(),
            ))
        } else {
            // A notification gets no answer; rmcp is not given what it cannot read.
            Err(Answer(String::new()))
        };
    }
    match method {
        None if message.contains_key("result") || message.contains_key("error") => Ok(()),
        // rmcp takes an `initialize` it cannot type for a method it does not know (-32601).
        Some(Value::String(name)) if name == "initialize" && message.contains_key("id") => {
            let text = |o: &serde_json::Map<String, Value>, k: &str| {
                o.get(k).is_some_and(Value::is_string)
            };
            let typed = message
                .get("params")
                .and_then(Value::as_object)
                .is_some_and(|p| {
                    text(p, "protocolVersion")
                        && p.get("capabilities").is_some_and(Value::is_object)
                        && p.get("clientInfo")
                            .and_then(Value::as_object)
                            .is_some_and(|c| text(c, "name") && text(c, "version"))
                });
            if typed {
                Ok(())
            } else {
                Err(error_line(
                    &id,
                    -32602,
                    "Invalid params: initialize takes {\"protocolVersion\": string, \"capabilities\": object, \"clientInfo\": {\"name\": string, \"version\": string}}".into(),
                ))
            }
        }
        None => Err(error_line(&id, -32600, "Invalid Request: no method".into())),
        Some(Value::String(name)) if name == "tools/call" => {
            let params = message.get("params");
            let well_formed = params.and_then(Value::as_object).is_some_and(|p| {
                p.get("name").is_some_and(Value::is_string)
                    && p.get("arguments")
                        .is_none_or(|a| a.is_object() || a.is_null())
            });
            if well_formed || message.get("id").is_none() {
                Ok(())
            } else {
                Err(error_line(
                    &id,
                    -32602,
                    "Invalid params: tools/call takes {\"name\": string, \"arguments\"?: object}"
                        .into(),
                ))
            }
        }
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(error_line(
            &id,
            -32600,
            "Invalid Request: method must be a string".into(),
        )),
    }
}

pub(crate) fn error_line(id: &Value, code: i64, message: String) -> Answer {
    Answer(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn malformed_lines_are_answered_with_the_spec_codes() {
        let code = |line: &str| {
            check(line.as_bytes()).err().map(|e| {
                serde_json::from_str::<serde_json::Value>(&e.0).unwrap()["error"]["code"]
                    .as_i64()
                    .unwrap()
            })
        };
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}"#),
            Some(-32700),
            "lone surrogate"
        );
        assert_eq!(
            code(&format!("{}1{}", "[".repeat(200), "]".repeat(200))),
            Some(-32700),
            "too deep"
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}"#),
            Some(-32700),
            "out of range"
        );
        assert!(
            check(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").is_err(),
            "invalid UTF-8"
        );
        assert_eq!(code("[1, 2]"), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7}"#), Some(-32600));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":3}}"#),
            Some(-32602)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}"#),
            Some(-32602)
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"observe","arguments":{}}}"#
            ),
            None
        );
        // Issue 35: well-formed requests rmcp cannot type were answered without their id.
        for (line, code_is) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"observe","_meta":5}}"#,
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}}"#,
                -32602,
            ),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
                -32600,
            ),
        ] {
            let answer: serde_json::Value =
                serde_json::from_str(&check(line.as_bytes()).unwrap_err().0).unwrap();
            assert_eq!(answer["error"]["code"], code_is, "{line}");
            let sent: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(answer["id"], sent["id"], "{line}: the request's own id");
            assert!(answer.as_object().unwrap().contains_key("id"), "{line}");
        }
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}"#),
            None
        );
        // An initialize rmcp cannot type was "method not found"; its params are what is wrong.
        for params in [
            "{}",
            r#"{"protocolVersion":"2025-06-18","capabilities":{}}"#,
            r#"{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#,
            r#"{"protocolVersion":"2025-06-18","capabilities":[],"clientInfo":{"name":"c","version":"1"}}"#,
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c"}}"#,
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":9,"method":"initialize","params":{params}}}"#);
            assert_eq!(code(&line), Some(-32602), "{line}");
        }
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#
            ),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#),
            None
        );
        let answered = check(br#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{}}"#)
            .unwrap_err()
            .0;
        assert!(
            answered.contains(r#""id":"abc""#),
            "the request's own id: {answered}"
        );
    }

    use proptest::prelude::*;

    /// Any JSON value, a few levels deep.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            ".{0,12}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A message shaped like a request, each part drawn from a few likely and odd values.
    fn request_like() -> impl Strategy<Value = serde_json::Value> {
        let method = prop_oneof![
            Just(serde_json::json!("ping")),
            Just(serde_json::json!("tools/call")),
            Just(serde_json::json!("tools/list")),
            Just(serde_json::json!("initialize")),
            json(),
        ];
        let params = prop_oneof![
            Just(None),
            json().prop_map(Some),
            (json(), json())
                .prop_map(|(name, meta)| Some(serde_json::json!({"name": name, "_meta": meta}))),
        ];
        (json(), method, params, any::<bool>()).prop_map(|(id, method, params, has_id)| {
            let mut m = serde_json::json!({"jsonrpc": "2.0", "method": method});
            if has_id {
                m["id"] = id;
            }
            if let Some(params) = params {
                m["params"] = params;
            }
            m
        })
    }

    proptest! {
        /// Issue 35's line guard, by property: nothing panics it; what it answers is one JSON-RPC
        /// error; a request whose id rmcp can read (a string, an i64) that it answers is answered
        /// with that id.
        #[test]
        fn the_guard_answers_with_the_requests_own_id(message in request_like()) {
            let line = message.to_string();
            if let Err(answer) = check(line.as_bytes())
                && !answer.is_silent()
            {
                let answer: serde_json::Value = serde_json::from_str(&answer.0).unwrap();
                prop_assert_eq!(&answer["jsonrpc"], "2.0");
                prop_assert!(answer["error"]["code"].is_i64());
                prop_assert!(answer.as_object().unwrap().contains_key("id"));
                let id = &message["id"];
                if message["method"].is_string() && (id.is_string() || id.as_i64().is_some()) {
                    prop_assert_eq!(&answer["id"], id);
                }
            }
        }

        /// Bytes of any kind are answered or passed, never a panic.
        #[test]
        fn any_bytes_are_answered_or_passed(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = check(&bytes);
        }
    }
}
