//! Model providers over their documented HTTP wire formats: a neutral conversation in, one
//! model turn (text, tool calls, token usage) out. Requests ask for a stream (server-sent
//! events, assembled here into the answer; an answer that is plain JSON is read as it is). Keys come from the environment and never
//! appear in logs, errors or events; every request has a deadline; 429 and 5xx are retried with
//! backoff (honouring `retry-after` up to a bound); dropping the future aborts the request in
//! flight.

use std::time::Duration;

use serde_json::{Value, json};

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Anthropic Messages API (`POST /v1/messages`), tool use.
    Anthropic,
    /// OpenAI-compatible Chat Completions (`POST /v1/chat/completions`), function calling: OpenAI,
    /// vLLM, Ollama, llama.cpp server, OpenRouter.
    OpenaiChat,
    /// OpenAI Responses API (`POST /v1/responses`): function tools, and the computer tool.
    OpenaiResponses,
}

impl ProviderKind {
    /// Parses `anthropic`, `openai_chat` (also `openai`) or `openai_responses`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "anthropic" => Some(Self::Anthropic),
            "openai_chat" | "openai" | "openai-chat" => Some(Self::OpenaiChat),
            "openai_responses" | "openai-responses" | "responses" => Some(Self::OpenaiResponses),
            _ => None,
        }
    }

    /// The configuration's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenaiChat => "openai_chat",
            Self::OpenaiResponses => "openai_responses",
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenaiChat | Self::OpenaiResponses => "https://api.openai.com",
        }
    }

    fn default_key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenaiChat | Self::OpenaiResponses => "OPENAI_API_KEY",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Anthropic => "/v1/messages",
            Self::OpenaiChat => "/v1/chat/completions",
            Self::OpenaiResponses => "/v1/responses",
        }
    }
}

/// How to reach a model: what the configuration (or a request's override) names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelChoice {
    pub provider: ProviderKind,
    pub model: String,
    /// Where the API is (default: the provider's public endpoint).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key (default: `ANTHROPIC_API_KEY` /
    /// `OPENAI_API_KEY`). A local server (Ollama, llama.cpp) may need none: set it to `""`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Plan with the provider's own computer tool (screenshots and pointer/keyboard actions:
    /// Anthropic `computer_20250124`/`computer_20251124`, OpenAI Responses `computer`) instead
    /// of Glovebox's `act` tool.
    #[serde(default)]
    pub computer_tool: bool,
    /// Which computer tool (default: the newest the model takes, `ComputerTool::default_for`).
    #[serde(default)]
    pub computer_tool_version: Option<crate::ComputerTool>,
}

/// Why a provider could not be used or did not answer. Never carries the key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The provider could not be initialised (no key, a bad URL): the run fails with this,
    /// never falling back to another provider or model.
    #[error("the {provider} provider cannot start: {why}")]
    Init { provider: &'static str, why: String },
    /// The request failed after its retries (network, deadline, an HTTP error status).
    #[error("the model request failed: {0}")]
    Request(String),
    /// The provider answered something that is not its documented response shape.
    #[error("the provider's answer is not a valid response: {0}")]
    Garbage(String),
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    /// The model called a tool.
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    /// What a tool call gave back (to the model in the next message).
    ToolResult {
        id: String,
        content: String,
        is_error: bool,
    },
    /// An image for the model (a viewport screenshot), base64.
    Image {
        mime: String,
        data: String,
    },
    /// A provider's own output item, passed back as it came (Responses API: reasoning,
    /// computer calls); other formats skip it.
    Native(Value),
    /// The safety checks a person acknowledged for the computer call `id` (Responses API).
    Acknowledged {
        id: String,
        checks: Vec<Value>,
    },
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

/// A tool the model may call.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    /// A provider's own tool definition (a computer tool), sent as it is in place of a
    /// function tool, with the beta header it needs, if any.
    pub native: Option<(Value, Option<&'static str>)>,
}

/// Everything one model request needs.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// Tokens one request used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Every input token of the request, those read from or written to a prompt cache included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache (billed at a fraction).
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to it (Anthropic bills a write above the base price).
    pub cache_write_tokens: u64,
}

/// One model turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelTurn {
    pub text: String,
    /// (id, name, input) of each tool call, in order.
    pub tool_calls: Vec<(String, String, Value)>,
    pub usage: Usage,
    /// The provider's output items as they came, to pass back (Responses API); empty elsewhere.
    pub native: Vec<Value>,
}

/// The request deadline and retry policy.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub request_deadline: Duration,
    pub attempts: u32,
    pub first_backoff: Duration,
    /// The longest `retry-after` honoured.
    pub max_backoff: Duration,
    pub max_tokens: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_deadline: Duration::from_secs(120),
            attempts: 3,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
            max_tokens: 2048,
        }
    }
}

/// A provider ready to take requests.
pub struct Provider {
    kind: ProviderKind,
    model: String,
    endpoint: String,
    /// Never printed: `Debug` leaves it out.
    key: Option<String>,
    client: reqwest::Client,
    limits: Limits,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// The largest response body read.
const MAX_RESPONSE_BYTES: usize = 8 << 20;

impl Provider {
    /// A provider for `choice`, its key read from the environment now.
    pub fn new(choice: &ModelChoice, limits: Limits) -> Result<Provider, ProviderError> {
        let name = choice.provider.name();
        let init = |why: String| ProviderError::Init {
            provider: name,
            why,
        };
        if choice.model.trim().is_empty() {
            return Err(init("no model is named".into()));
        }
        let key_env = choice
            .api_key_env
            .clone()
            .unwrap_or_else(|| choice.provider.default_key_env().to_owned());
        let key = if key_env.is_empty() {
            None
        } else {
            match std::env::var(&key_env) {
                Ok(k) if !k.trim().is_empty() => Some(k.trim().to_owned()),
                _ => return Err(init(format!("{key_env} is not set"))),
            }
        };
        let base = choice
            .base_url
            .clone()
            .unwrap_or_else(|| choice.provider.default_base_url().to_owned());
        let base = base.trim_end_matches('/');
        // The key travels to this address: over TLS, unless the model runs on this machine.
        let loopback = base.strip_prefix("http://").is_some_and(|rest| {
            let authority = rest.split('/').next().unwrap_or_default();
            let host = match authority.rsplit_once(':') {
                Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
                _ => authority,
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if !(base.starts_with("https://") || loopback) {
            return Err(init(format!(
                "the base URL {base:?} must be https:// (plain http:// only to this machine: localhost, 127.0.0.1, [::1])"
            )));
        }
        let path = choice.provider.path();
        let endpoint = if base.ends_with("/v1") {
            format!("{base}{}", &path[3..])
        } else {
            format!("{base}{path}")
        };
        let client = reqwest::Client::builder()
            // A model API does not redirect; one that does is not followed, so the key in its
            // headers (`x-api-key` is no header reqwest strips) never reaches another host.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(limits.request_deadline)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| init(format!("the HTTP client cannot start: {e}")))?;
        Ok(Provider {
            kind: choice.provider,
            model: choice.model.clone(),
            endpoint,
            key,
            client,
            limits,
        })
    }

    /// The provider's kind.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One model turn, retried on 429, 5xx and connection errors.
    pub async fn turn(&self, conversation: &Conversation) -> Result<ModelTurn, ProviderError> {
        let body = match self.kind {
            ProviderKind::Anthropic => {
                crate::anthropic::request(&self.model, self.limits.max_tokens, conversation)
            }
            ProviderKind::OpenaiChat => {
                crate::openai::request(&self.model, self.limits.max_tokens, conversation)
            }
            ProviderKind::OpenaiResponses => {
                crate::responses::request(&self.model, self.limits.max_tokens, conversation)
            }
        };
        let mut backoff = self.limits.first_backoff;
        let mut last = String::new();
        for attempt in 1..=self.limits.attempts.max(1) {
            let mut request = self.client.post(&self.endpoint).json(&body);
            if self.kind == ProviderKind::Anthropic {
                let betas: Vec<&str> = conversation
                    .tools
                    .iter()
                    .filter_map(|t| t.native.as_ref().and_then(|(_, beta)| *beta))
                    .collect();
                if !betas.is_empty() {
                    request = request.header("anthropic-beta", betas.join(","));
                }
            }
            request = match (self.kind, &self.key) {
                (ProviderKind::Anthropic, Some(key)) => request
                    .header("x-api-key", key)
                    .header("anthropic-version", "2023-06-01"),
                (ProviderKind::Anthropic, None) => {
                    request.header("anthropic-version", "2023-06-01")
                }
                (ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses, Some(key)) => {
                    request.bearer_auth(key)
                }
                (ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses, None) => request,
            };
            let wait = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok());
                    let streamed = response
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|t| t.starts_with("text/event-stream"));
                    let bytes = read_bounded(response).await?;
                    if status.is_success() {
                        let value = if streamed {
                            let events = server_sent_events(&bytes)?;
                            match self.kind {
                                ProviderKind::Anthropic => crate::anthropic::from_events(&events)?,
                                ProviderKind::OpenaiChat => crate::openai::from_events(&events)?,
                                ProviderKind::OpenaiResponses => {
                                    crate::responses::from_events(&events)?
                                }
                            }
                        } else {
                            serde_json::from_slice(&bytes)
                                .map_err(|e| ProviderError::Garbage(format!("not JSON: {e}")))?
                        };
                        return match self.kind {
                            ProviderKind::Anthropic => crate::anthropic::response(&value),
                            ProviderKind::OpenaiChat => crate::openai::response(&value),
                            ProviderKind::OpenaiResponses => crate::responses::response(&value),
                        };
                    }
                    if status.is_redirection() {
                        return Err(ProviderError::Request(format!(
                            "HTTP {}: the provider answered with a redirect, which is not followed (the key would go to another address); set the base URL to the address it names",
                            status.as_u16()
                        )));
                    }
                    last = format!("HTTP {}: {}", status.as_u16(), error_message(&bytes));
                    if status.as_u16() != 429 && !status.is_server_error() {
                        return Err(ProviderError::Request(last));
                    }
                    retry_after
                        .map(Duration::from_secs)
                        .unwrap_or(backoff)
                        .min(self.limits.max_backoff)
                }
                Err(e) => {
                    last = if e.is_timeout() {
                        format!(
                            "no answer within {} s",
                            self.limits.request_deadline.as_secs()
                        )
                    } else {
                        describe(&e)
                    };
                    backoff
                }
            };
            tracing::debug!(attempt, error = %last, "model request failed; retrying");
            if attempt < self.limits.attempts {
                tokio::time::sleep(wait).await;
                backoff = (backoff * 2).min(self.limits.max_backoff);
            }
        }
        Err(ProviderError::Request(last))
    }
}

/// A transport error without the URL's query or any header (a key never reaches a message).
fn describe(e: &reqwest::Error) -> String {
    if e.is_connect() {
        "cannot connect to the provider".into()
    } else if e.is_body() || e.is_decode() {
        "the response broke off".into()
    } else {
        "the request failed".into()
    }
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ProviderError::Request(describe(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(ProviderError::Garbage(format!(
                "the response is over {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// A server-sent event stream's events: (event name, data as JSON), `[DONE]` and comments
/// skipped. Data that is not JSON is the provider's garbage.
pub(crate) fn server_sent_events(body: &[u8]) -> Result<Vec<(String, Value)>, ProviderError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ProviderError::Garbage("the stream is not UTF-8".into()))?;
    let mut events = Vec::new();
    let (mut event, mut data) = (String::new(), String::new());
    let mut flush = |event: &mut String, data: &mut String| -> Result<(), ProviderError> {
        if !data.is_empty() && data.trim() != "[DONE]" {
            let value = serde_json::from_str(data)
                .map_err(|e| ProviderError::Garbage(format!("an event's data is not JSON: {e}")))?;
            events.push((std::mem::take(event), value));
        }
        event.clear();
        data.clear();
        Ok(())
    };
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() {
            flush(&mut event, &mut data)?;
        } else if let Some(v) = line.strip_prefix("event:") {
            event = v.trim().to_owned();
        } else if let Some(v) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    flush(&mut event, &mut data)?;
    Ok(events)
}

/// The provider's error message from an error body (both formats put it at `error.message`),
/// bounded; never the request.
fn error_message(body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    message.chars().take(300).collect()
}

/// `{"type": "object", …}` for a tool with one required string property.
pub(crate) fn string_tool_schema(field: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string", "description": description, "maxLength": 4000}}, "required": [field], "additionalProperties": false})
}
