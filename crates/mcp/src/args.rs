//! The tools' arguments as types: each struct is both the parser (unknown fields refused, every
//! value checked by the protocol's own types) and, through schemars, the tool's input schema — so
//! the two cannot drift. Not the tool list itself (see `tools.rs`).

use protocol::{HttpUrl, MaxSeconds, MaxSteps, NearText, SurfaceName, TaskText};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

/// `observe`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ObserveArgs {
    /// A surface key (s1, s2, …) or alias (web:1, focused) from `surfaces` or `tabs`. Omit to use
    /// the primary surface (the focused tab).
    #[serde(default)]
    #[schemars(with = "SurfaceName")]
    pub(crate) surface: Option<SurfaceName>,
    /// Also return one viewport screenshot (PNG). Point targets for act are viewport CSS pixels of
    /// this frame.
    #[serde(default)]
    pub(crate) screenshot: bool,
    /// On a page too big for one observation: show the region around this text or ref (e12)
    /// first, instead of the viewport's.
    #[serde(default)]
    pub(crate) near: Option<NearText>,
}

/// `act`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ActArgs {
    /// A surface key (s1, s2, …) or alias (web:1, focused) from `surfaces` or `tabs`. Omit to use
    /// the primary surface (the focused tab).
    #[serde(default)]
    #[schemars(with = "SurfaceName")]
    pub(crate) surface: Option<SurfaceName>,
    /// One action of `glovebox.actions/2` (a superset of the seed's eight); its schema is the
    /// protocol's (`tools::act_input_schema` puts it here), and `validate_extended_action`
    /// reads it with every problem's JSON path.
    pub(crate) action: Value,
    /// The resulting page's snapshot whole. By default an action's result shows the snapshot as
    /// its changes against the observation `expected_frame_id` named, when that is smaller (refs
    /// are stable, so unchanged lines keep their refs); the whole snapshot comes whenever there is
    /// no such base (another document, no frame id).
    #[serde(default)]
    pub(crate) full_snapshot: bool,
}

/// The longest script `gui_exec` takes, in bytes.
pub(crate) const GUI_EXEC_CODE_MAX: usize = 64 << 10;

/// `gui_exec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GuiExecArgs {
    /// Python (top-level await works) run in this session's persistent namespace: variables,
    /// pages and locators stay for the next call. `ui.page()` is the call's surface,
    /// `ui.browser.open(url)` opens a tab; pages have observe, get_by_role/label/text/test_id,
    /// frame(...), ref("e12"), goto, scroll, wait_for_text, wait_for, screenshot; locators have
    /// click, fill, press, select, hover, drag_to, scroll. print() and display(image) are what
    /// you get back; a last expression is shown.
    #[schemars(length(min = 1, max = 65536))]
    pub(crate) code: String,
    /// The call's surface (key or alias); omit for the primary surface.
    #[serde(default)]
    #[schemars(with = "SurfaceName")]
    pub(crate) surface: Option<SurfaceName>,
}

/// `tab_open`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TabOpenArgs {
    /// An http(s) URL, or about:blank.
    pub(crate) url: String,
}

/// `tab_close`, `tab_release`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SurfaceArgs {
    /// The key or web:N alias of the tab.
    pub(crate) surface: SurfaceName,
}

/// `tab_claim`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TabClaimArgs {
    /// The id of a user tab, as `tabs` lists it under user_tabs (tab_…).
    pub(crate) tab: String,
}

/// How a tab is kept.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MarkArg {
    Deliverable,
    Handoff,
}

impl From<MarkArg> for runtime::Mark {
    fn from(mark: MarkArg) -> Self {
        match mark {
            MarkArg::Deliverable => runtime::Mark::Deliverable,
            MarkArg::Handoff => runtime::Mark::Handoff,
        }
    }
}

/// `tab_mark`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TabMarkArgs {
    /// The key or web:N alias of the tab.
    pub(crate) surface: SurfaceName,
    /// `deliverable`: it shows a result for the user; `handoff`: it waits for the user (a login, a payment, a CAPTCHA, an approval).
    pub(crate) mark: MarkArg,
}

/// `computer_use`: the protocol's `computer_use` input (its types and limits), plus the checks the
/// runtime verifies before a run can succeed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ComputerUseArgs {
    /// What to do, in words.
    pub(crate) task: TaskText,
    /// A surface key or alias; omit to use the primary surface (or a new tab at `url` when the
    /// session has none).
    #[serde(default)]
    #[schemars(with = "SurfaceName")]
    pub(crate) surface: Option<SurfaceName>,
    /// Navigate there first (a new tab when the session has none).
    #[serde(default)]
    #[schemars(with = "HttpUrl")]
    pub(crate) url: Option<HttpUrl>,
    /// The step budget.
    #[serde(default)]
    pub(crate) max_steps: MaxSteps,
    /// The time budget in seconds.
    #[serde(default)]
    pub(crate) max_seconds: MaxSeconds,
    /// What must hold on the page for the run to succeed (at most 16).
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub(crate) success_when: Vec<runtime::Assertion>,
    /// Secrets the run's planner never sees, by name: `{"password": {"value": "…", "origins":
    /// ["https://app.example"]}}`. Its model types `<secret>password</secret>`; Glovebox types
    /// the value, only into fields on those origins.
    #[serde(default)]
    pub(crate) secrets: protocol::Secrets,
}

/// Why a tool call was refused before it ran.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// No such tool on this server.
    #[error("no tool named {0:?}; call tools/list")]
    NoSuchTool(String),
    /// The arguments do not fit the tool's types (serde's words: an unknown field and the
    /// expected ones, a wrong type, a value out of range).
    #[error("{tool}: {source}")]
    Arguments {
        tool: String,
        source: serde_json::Error,
    },
}

/// Reads a tool's arguments.
pub(crate) fn parse<T: DeserializeOwned>(
    tool: &str,
    args: Map<String, Value>,
) -> Result<T, Refused> {
    serde_json::from_value(Value::Object(args)).map_err(|source| Refused::Arguments {
        tool: tool.to_owned(),
        source,
    })
}

/// The input schema of `T`: an object at the root (several clients reject anything else),
/// subschemas inline, descriptions kept from the doc comments.
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut value = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(map) = &mut value {
        // The tool's description says what the struct's doc comment would.
        for keyword in ["$schema", "title", "description"] {
            map.remove(keyword);
        }
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            properties.values_mut().for_each(tidy);
        }
    }
    value
}

/// A property as a model reads it: doc-comment line breaks folded, no `default: null` for an
/// optional argument.
fn tidy(property: &mut Value) {
    let Value::Object(map) = property else { return };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::String(text)) = map.get_mut("description") {
        *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    if let Some(items) = map.get_mut("items") {
        tidy(items);
    }
}

/// One tool call, its arguments read.
#[derive(Debug)]
pub(crate) enum Call {
    Surfaces,
    Tabs,
    Observe(ObserveArgs),
    Act(ActArgs),
    TabOpen(TabOpenArgs),
    TabClose(SurfaceArgs),
    TabClaim(TabClaimArgs),
    TabRelease(SurfaceArgs),
    TabMark(TabMarkArgs),
    Status,
    Cleanup,
    ContextReset,
    Activate,
    ComputerUse(Box<ComputerUseArgs>),
    GuiExec(GuiExecArgs),
}

impl Call {
    /// Reads a call of tool `name`; `computer_use` exists only with a planner. `Err` says what is
    /// wrong (no such tool, an unknown or ill-typed argument).
    pub(crate) fn read(
        name: &str,
        args: Map<String, Value>,
        planner: bool,
    ) -> Result<Call, Refused> {
        use crate::tools as t;
        Ok(match name {
            t::SURFACES => parse::<NoArgs>(name, args).map(|_| Call::Surfaces)?,
            t::TABS => parse::<NoArgs>(name, args).map(|_| Call::Tabs)?,
            t::OBSERVE => Call::Observe(parse(name, args)?),
            t::ACT => Call::Act(parse(name, args)?),
            t::TAB_OPEN => Call::TabOpen(parse(name, args)?),
            t::TAB_CLOSE => Call::TabClose(parse(name, args)?),
            t::TAB_CLAIM => Call::TabClaim(parse(name, args)?),
            t::TAB_RELEASE => Call::TabRelease(parse(name, args)?),
            t::TAB_MARK => Call::TabMark(parse(name, args)?),
            t::STATUS => parse::<NoArgs>(name, args).map(|_| Call::Status)?,
            t::CLEANUP => parse::<NoArgs>(name, args).map(|_| Call::Cleanup)?,
            t::CONTEXT_RESET => parse::<NoArgs>(name, args).map(|_| Call::ContextReset)?,
            t::ACTIVATE => parse::<NoArgs>(name, args).map(|_| Call::Activate)?,
            t::COMPUTER_USE if planner => Call::ComputerUse(Box::new(parse(name, args)?)),
            t::GUI_EXEC => Call::GuiExec(parse(name, args)?),
            other => return Err(Refused::NoSuchTool(other.to_owned())),
        })
    }
}
