//! Glovebox's agent: model providers over their documented wire formats (Anthropic Messages,
//! OpenAI Responses, OpenAI-compatible Chat Completions), their computer tools and [`ModelPlanner`], the planner side of the runtime's
//! loop with a real model. Everything a model proposes passes the runtime's one step path; only
//! the runtime decides a run's status.

mod anthropic;
mod computer;
mod openai;
mod planner;
mod provider;
mod responses;

pub use computer::ComputerTool;
pub use planner::{Accounting, ModelPlanner};
pub use provider::{
    Conversation, Limits, Message, ModelChoice, ModelTurn, Part, Provider, ProviderError,
    ProviderKind, Role, ToolSpec, Usage,
};
