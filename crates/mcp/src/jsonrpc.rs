//! The JSON-RPC checks both transports make before rmcp reads a message, so that every request
//! with an id gets an answer, as JSON-RPC says: bytes that are not JSON (invalid UTF-8, a lone
//! surrogate, nesting past serde's limit, a number out of range) get -32700 with a null id; JSON
//! that is not a request object (an array, a scalar, an object with neither method nor result)
//! gets -32600; a `tools/call` whose params are not `{name: string, arguments?: object}` gets
//! -32602 with its id. stdio answers on the pipe; HTTP answers 400 with the error as its body.

use serde_json::{Value, json};

/// A message the transport answers itself: the JSON-RPC error to send back.
#[derive(Debug)]
pub(crate) struct Answer(pub(crate) String);

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
    let valid_id = matches!(id, Value::Null | Value::String(_))
        || id.as_i64().is_some()
        || id.as_u64().is_some();
    let method = message.get("method");
    if message.get("jsonrpc") != Some(&json!("2.0")) || !valid_id {
        return Err(error_line(
            if valid_id { &id } else { &Value::Null },
            -32600,
            "Invalid Request: jsonrpc must be \"2.0\" and an id a string or an integer".into(),
        ));
    }
    match method {
        None if message.contains_key("result") || message.contains_key("error") => Ok(()),
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
        let answered = check(br#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{}}"#)
            .unwrap_err()
            .0;
        assert!(
            answered.contains(r#""id":"abc""#),
            "the request's own id: {answered}"
        );
    }
}
