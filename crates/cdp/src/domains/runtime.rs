//! `Runtime` domain: evaluation, remote objects, console and exceptions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "Runtime.enable", Empty);

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunIfWaitingForDebugger {}
command!(RunIfWaitingForDebugger => "Runtime.runIfWaitingForDebugger", Empty);

/// A JavaScript value as CDP describes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RemoteObject {
    #[serde(rename = "type")]
    pub object_type: String,
    pub subtype: Option<String>,
    pub class_name: Option<String>,
    pub value: Option<Value>,
    pub unserializable_value: Option<String>,
    pub description: Option<String>,
    pub object_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExceptionDetails {
    pub exception_id: i64,
    pub text: String,
    pub line_number: i64,
    pub column_number: i64,
    pub url: Option<String>,
    pub exception: Option<RemoteObject>,
}

impl ExceptionDetails {
    /// The most specific message available: the exception's description, else the summary text.
    pub fn message(&self) -> String {
        self.exception
            .as_ref()
            .and_then(|e| e.description.clone())
            .unwrap_or_else(|| self.text.clone())
    }
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluate {
    pub expression: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_by_value: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub await_promise: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_gesture: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent: Option<bool>,
    /// Terminates the evaluation after this many milliseconds (Chromium's `timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

impl Evaluate {
    /// Evaluates `expression` and returns its value by value, awaiting a promise.
    pub fn value(expression: impl Into<String>) -> Self {
        Evaluate {
            expression: expression.into(),
            return_by_value: Some(true),
            await_promise: Some(true),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EvaluateReply {
    pub result: RemoteObject,
    pub exception_details: Option<ExceptionDetails>,
}
command!(Evaluate => "Runtime.evaluate", EvaluateReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallArgument {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFunctionOn {
    pub function_declaration: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_context_id: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<CallArgument>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_by_value: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub await_promise: Option<bool>,
}
command!(CallFunctionOn => "Runtime.callFunctionOn", EvaluateReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseObject {
    pub object_id: String,
}
command!(ReleaseObject => "Runtime.releaseObject", Empty);

/// Event `Runtime.consoleAPICalled`; `kind` is `log`, `error`, `warning`, …
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsoleApiCalled {
    #[serde(rename = "type")]
    pub kind: String,
    pub args: Vec<RemoteObject>,
    pub execution_context_id: i64,
    pub timestamp: f64,
}

/// Event `Runtime.exceptionThrown`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExceptionThrown {
    pub timestamp: f64,
    pub exception_details: ExceptionDetails,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecutionContextDescription {
    pub id: i64,
    pub origin: String,
    pub name: String,
    pub aux_data: Option<Value>,
}

/// Event `Runtime.executionContextDestroyed`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecutionContextDestroyed {
    pub execution_context_id: i64,
}

/// Event `Runtime.executionContextCreated`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ExecutionContextCreated {
    pub context: ExecutionContextDescription,
}
