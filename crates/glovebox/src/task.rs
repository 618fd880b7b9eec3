//! `glovebox run "task" --url URL`: the agent loop with a model provider on one tab, the person's
//! approvals asked on this terminal, the `RunResult` (decided by the runtime) on stdout.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::runtime::{ApprovalDecision, Assertion, RunRequest, Runtime};
use anyhow::Context;
use serde_json::json;

use crate::cli::{Global, RunArgs};

/// The model a run uses: the flags (this request's choice) over the configuration's.
pub fn choice(
    args: &crate::cli::ModelArgs,
    configured: Option<agent::ModelChoice>,
) -> anyhow::Result<agent::ModelChoice> {
    let provider = match args.provider.as_deref() {
        Some(p) => Some(agent::ProviderKind::parse(p).with_context(|| {
            format!("--provider {p}: use anthropic, openai_responses or openai_chat")
        })?),
        None => None,
    };
    let mut choice = match (provider, configured) {
        (Some(provider), Some(c)) if c.provider == provider => c,
        (Some(provider), _) => agent::ModelChoice {
            provider,
            model: String::new(),
            base_url: None,
            api_key_env: None,
            computer_tool: false,
            computer_tool_version: None,
        },
        (None, Some(c)) => c,
        (None, None) => {
            anyhow::bail!(
                "no model is configured: pass --provider and --model, or set [model] in the config file (or GLOVEBOX_PROVIDER and GLOVEBOX_MODEL)"
            )
        }
    };
    if let Some(model) = &args.model {
        choice.model = model.clone();
    }
    if let Some(url) = &args.base_url {
        choice.base_url = Some(url.clone());
    }
    match args.computer_tool.as_deref() {
        None => {}
        Some("auto") => choice.computer_tool = true,
        Some(version) => {
            choice.computer_tool = true;
            choice.computer_tool_version = Some(serde_json::from_value(json!(version)).with_context(|| {
                format!("--computer-tool {version}: use computer_20250124, computer_20251124, openai_computer or openai_computer_use_preview")
            })?);
        }
    }
    Ok(choice)
}

/// One `--secret`: its value never prints (`Debug` shows its length only), nor does a malformed
/// one (clap would echo the whole argument in its error: it is read here, and said below).
#[derive(Clone)]
pub struct SecretArg(Result<GivenArg, SecretArgError>);

/// Why a `--secret` could not be read (never its text: it may hold the value).
#[derive(Debug, Clone)]
enum SecretArgError {
    /// Not `NAME@ORIGIN…`.
    Shape,
    /// The name does not follow the rule.
    Name(protocol::secret::SecretError),
    /// No `=VALUE` and no environment variable of that name.
    NoValue(protocol::SecretName),
}

impl std::fmt::Display for SecretArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretArgError::Shape => f.write_str("write NAME@ORIGIN=VALUE (e.g. password@https://app.example=…), or NAME@ORIGIN to read the value from the environment variable NAME"),
            SecretArgError::Name(e) => write!(f, "{e}"),
            SecretArgError::NoValue(name) => write!(f, "no value after = and no environment variable {name}: set it, or write {name}@ORIGIN=VALUE"),
        }
    }
}

#[derive(Clone)]
struct GivenArg {
    name: protocol::SecretName,
    origins: Vec<String>,
    value: String,
}

impl std::fmt::Debug for SecretArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok(g) => write!(
                f,
                "SecretArg({}@{}, {} characters)",
                g.name,
                g.origins.join(","),
                g.value.chars().count()
            ),
            Err(_) => f.write_str("SecretArg(unreadable)"),
        }
    }
}

/// Reads `NAME@ORIGIN[,ORIGIN…]=VALUE`, or `NAME@ORIGIN…` with the value in the environment
/// variable NAME. The origins are judged when the run starts (web origins only). Never fails
/// here: what cannot be read is said by [`secrets`], without the argument.
pub fn parse_secret(arg: &str) -> Result<SecretArg, std::convert::Infallible> {
    Ok(SecretArg(read_secret(arg)))
}

fn read_secret(arg: &str) -> Result<GivenArg, SecretArgError> {
    let (spec, value) = match arg.split_once('=') {
        Some((spec, value)) => (spec, Some(value.to_owned())),
        None => (arg, None),
    };
    let Some((name, origins)) = spec.split_once('@') else {
        return Err(SecretArgError::Shape);
    };
    let name = protocol::SecretName::new(name).map_err(SecretArgError::Name)?;
    let value = match value {
        Some(value) => value,
        None => std::env::var(name.as_str()).map_err(|_| SecretArgError::NoValue(name.clone()))?,
    };
    let origins: Vec<String> = origins
        .split(',')
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(GivenArg {
        name,
        origins,
        value,
    })
}

/// The run's secrets from the `--secret` flags, checked as every transport's are.
fn secrets(args: &RunArgs) -> anyhow::Result<protocol::Secrets> {
    let mut secrets = protocol::Secrets::default();
    for (i, s) in args.secrets.iter().enumerate() {
        let s =
            s.0.as_ref()
                .map_err(|why| anyhow::anyhow!("--secret (the {}. one): {why}", i + 1))?;
        secrets
            .insert(s.name.clone(), s.value.clone(), s.origins.clone())
            .map_err(|e| anyhow::anyhow!("--secret {}: {e}", s.name))?;
    }
    Ok(secrets)
}

/// `glovebox run`.
pub async fn run(global: &Global, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let settings = crate::config::resolve(global, None)?;
    let secrets = secrets(args)?;
    let choice = choice(&args.model, settings.serve.mcp.model.clone())?;
    let accounting = Arc::new(Mutex::new(agent::Accounting::default()));
    // A provider that cannot start fails the run with its own error: nothing else is tried.
    let planner = match agent::ModelPlanner::for_choice(&choice, accounting.clone()) {
        Ok(p) => p,
        Err(e) => {
            if args.json {
                out!(
                    "{}",
                    json!({"error": protocol::ErrorCode::BackendUnavailable.as_str(), "message": e.to_string()})
                );
            }
            eprintln!("glovebox: backend_unavailable: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let rt = Runtime::start(settings.runtime.clone(), settings.adapter())
        .await
        .context("cannot start the runtime (try `glovebox doctor`)")?;
    let answer = args.answer.as_deref().map(|a| match a {
        "once" => ApprovalDecision::ApproveOnce,
        "task" => ApprovalDecision::ApproveForTask,
        _ => ApprovalDecision::Deny,
    });
    let person = crate::terminal::person_on_terminal(&rt, answer, args.json);
    let session = rt.create_session().await?;
    let outcome = async {
        rt.open_tab(&session, &args.url, Duration::from_secs(300))
            .await?;
        let mut request = RunRequest::new(args.task.as_str());
        request.max_steps = args.max_steps;
        request.max_seconds = args.max_seconds;
        request.secrets = secrets;
        request.assertions = args
            .check_text
            .iter()
            .map(|t| Assertion::TextPresent { text: t.clone() })
            .collect();
        rt.run(&session, request, Box::new(planner)).await
    }
    .await;
    person.abort();
    // Where the run's time went, as its record keeps it.
    let query = runtime::LogQuery {
        session: Some(session.as_str().to_owned()),
        run: None,
        limit: 0,
    };
    let time = rt
        .log(&query)
        .ok()
        .and_then(|entries| entries.into_iter().rev().find(|e| e["kind"] == "run_ended"))
        .map(|e| e["accounting"]["time"].clone());
    let _ = rt.close_session(&session).await;
    rt.shutdown(Duration::from_secs(5)).await;
    let result = outcome?;
    let report = accounting.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if args.json {
        let mut value = serde_json::to_value(&result)?;
        if args.report {
            value["report"] = serde_json::to_value(&report)?;
            value["report"]["time"] = time.clone().unwrap_or_default();
        }
        out!("{value}");
    } else {
        out!("{}", serde_json::to_string_pretty(&result)?);
        if args.report {
            out!(
                "model {}/{}: {} requests, {} input tokens ({} read from the prompt cache, {} written to it) and {} output tokens, {} tool calls, {} unusable answers, {} ms waiting for the model",
                report.provider,
                report.model,
                report.model_requests,
                report.input_tokens,
                report.cache_read_tokens,
                report.cache_write_tokens,
                report.output_tokens,
                report.tool_calls,
                report.invalid_answers,
                report.model_ms
            );
            if let Some(t) = &time {
                let ms = |k: &str| t[k].as_u64().unwrap_or(0);
                out!(
                    "time {} ms: model {} ms, page capture {} ms, input {} ms, page settling {} ms, approvals {} ms, waiting for a person {} ms; the runtime itself {} ms",
                    ms("total_ms"),
                    ms("model_ms"),
                    ms("capture_ms"),
                    ms("input_ms"),
                    ms("page_wait_ms"),
                    ms("approval_ms"),
                    ms("person_ms"),
                    ms("runtime_ms")
                );
            }
        }
    }
    Ok(if result.status() == protocol::RunStatus::Succeeded {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
