//! Command-line interface: global options and subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "glovebox",
    version,
    about = "A computer-use runtime for AI agents: bounded observations, strict actions, leases and permissions on a real browser."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Cmd,
}

/// Options every command shares.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Where Glovebox keeps its state (browser profiles, later SQLite and artifacts).
    /// Default: $XDG_DATA_HOME/glovebox or ~/.local/share/glovebox.
    #[arg(long, global = true, env = "GLOVEBOX_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The Chromium binary to launch (else PATH and the usual locations are searched).
    #[arg(long, global = true, env = "GLOVEBOX_CHROMIUM")]
    pub chromium: Option<PathBuf>,
    /// Use an already running browser instead of launching one: ws://… or http://host:port.
    #[arg(long, global = true, env = "GLOVEBOX_BROWSER_ENDPOINT")]
    pub browser_endpoint: Option<String>,
    /// Serve sessions from a pool of browsers: `local` (one launched here) or an endpoint
    /// (ws://… or http://host:port), comma-separated; each session's tabs live on the least
    /// loaded browser that is up (limits in `[pool]` of the config file).
    #[arg(
        long = "browser-pool",
        global = true,
        env = "GLOVEBOX_BROWSER_POOL",
        value_delimiter = ',',
        conflicts_with = "browser_endpoint"
    )]
    pub browser_pool: Vec<String>,
    /// Keep the durable records in this PostgreSQL database (`postgres://user@host:port/db`)
    /// instead of SQLite in the data directory: several instances on one database share
    /// sessions' records, approvals and the operation log, and take over each other's sessions
    /// when one dies (`[store]` in the config file sets the timing, or `url_file`).
    #[arg(
        long = "store",
        global = true,
        env = "GLOVEBOX_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
    /// Show the browser window instead of running headless.
    #[arg(long, global = true, env = "GLOVEBOX_HEADED")]
    pub headed: bool,
    /// Drive the windows of this X display (`:1`) instead of a browser: each window a person
    /// offers is a surface (see `glovebox desktop`).
    #[arg(long, global = true, env = "GLOVEBOX_DISPLAY")]
    pub display: Option<String>,
    /// The session bus of that display's applications, for their accessibility trees (default:
    /// DBUS_SESSION_BUS_ADDRESS).
    #[arg(long, global = true, env = "GLOVEBOX_SESSION_BUS")]
    pub session_bus: Option<String>,
    /// On that display, never use its keyboard and pointer (XTest): only the applications'
    /// accessibility actions, so nothing is brought forward or focused behind the person's back
    /// (for a person's own desktop). Windows then declare no `foreground_input`.
    #[arg(long, global = true, env = "GLOVEBOX_NO_FOREGROUND_INPUT")]
    pub no_foreground_input: bool,
    /// Drive these VM guests instead of a browser (a guest started with `glovebox vm start`, or
    /// one of the config file's `[[vm]]`): each guest's screen is a surface. Repeatable.
    #[arg(long = "vm", global = true, env = "GLOVEBOX_VM", value_delimiter = ',')]
    pub vm: Vec<String>,
    /// The TOML config file (default: $XDG_CONFIG_HOME/glovebox/config.toml when it exists).
    /// Precedence: defaults < file < GLOVEBOX_* env < flags.
    #[arg(long, global = true, env = "GLOVEBOX_CONFIG")]
    pub config: Option<PathBuf>,
    /// Browser window size in CSS pixels, WIDTHxHEIGHT (e.g. 1280x800).
    #[arg(long, global = true, env = "GLOVEBOX_VIEWPORT")]
    pub viewport: Option<String>,
    /// A trusted local origin (your dev server): actions there need no approval. Repeatable.
    #[arg(
        long = "trust",
        global = true,
        env = "GLOVEBOX_TRUSTED_ORIGINS",
        value_delimiter = ','
    )]
    pub trust: Vec<String>,
    /// Only these origins may be opened (repeatable; default: any http/https origin).
    #[arg(
        long = "allow-origin",
        global = true,
        env = "GLOVEBOX_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allow_origin: Vec<String>,
    /// Origins that may never be opened. Repeatable.
    #[arg(
        long = "block-origin",
        global = true,
        env = "GLOVEBOX_BLOCKED_ORIGINS",
        value_delimiter = ','
    )]
    pub block_origin: Vec<String>,
    /// Hours an orphan run's artifacts are kept before they are swept (default 24).
    #[arg(long, global = true, env = "GLOVEBOX_ARTIFACT_RETENTION_HOURS")]
    pub artifact_retention_hours: Option<u64>,
    /// Milliseconds a tab's DevTools attachment stays after its last operation before it is
    /// detached (default 5000; turn end detaches at once).
    #[arg(long, global = true, env = "GLOVEBOX_DEBUGGER_IDLE_DETACH_MS")]
    pub debugger_idle_detach_ms: Option<u64>,
    /// The one directory uploads may read from (files named relative to it; each upload asks a
    /// person). Without it every upload is refused.
    #[arg(long, global = true, env = "GLOVEBOX_UPLOAD_ROOT")]
    pub upload_root: Option<PathBuf>,
    /// Hidden files (`.env`, `.ssh/…`) under the upload root may be uploaded too; without it
    /// they are refused.
    #[arg(long, global = true, env = "GLOVEBOX_UPLOAD_HIDDEN")]
    pub upload_hidden: bool,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Check the set-up: find and launch Chromium, print its version, sandbox mode and data dir.
    Doctor,
    /// Open a page in a fresh tab and print what a model would see: title, URL, frame id and the
    /// accessibility snapshot with refs (redacted, bounded).
    Observe(ObserveArgs),
    /// Launch a managed Chromium and keep it running; prints its CDP endpoint. Stops on Ctrl-C.
    Launch,
    /// Measure the figures the issues ask for (not part of `make test`).
    Bench(BenchArgs),
    /// Serve MCP over streamable HTTP at /mcp (127.0.0.1:7777 by default), with the approvals
    /// endpoint for a person at /api/approvals. Prints a ready-to-paste client config.
    Serve(ServeArgs),
    /// Serve MCP over stdio (for clients that start Glovebox themselves). Logs go to stderr.
    Mcp,
    /// A person's decision on a pending approval, sent to the running `serve`/`mcp` (needs a
    /// terminal: a model's shell tool cannot answer the prompt). Without an id, lists what waits.
    Approve(ApproveArgs),
    /// Print the console link (with the person token) of each running `serve`/`mcp` on this
    /// data directory — only to a terminal, as `serve` does.
    Console,
    /// Open a page as the person's own tab in the running `serve`/`mcp` browser, for an agent
    /// to claim with `tab_claim`; without a URL, lists the tabs no session owns.
    UserTab(UserTabArgs),
    /// End the current turn of the running servers' MCP sessions (or of one session): their
    /// unmarked agent tabs close, claimed tabs go back, marks of the turn expire. For a client's
    /// turn-complete hook (Claude Code `Stop`, Codex `notify`); with no server running it does
    /// nothing. Exits 1 when a cleanup failed (its tabs keep their owner and a recovery record).
    TurnEnd(TurnEndArgs),
    /// Run a task with a model provider on one tab (`--url`): the agent loop, approvals asked
    /// on this terminal, the RunResult (decided by the runtime's checks) on stdout.
    Run(RunArgs),
    /// The operation log: runs, every action (runs and direct calls) with its receipt state,
    /// and approvals, oldest first, from the data directory's store (while a server runs or
    /// after it stopped). Typed text appears only as its length.
    Log(LogArgs),
    /// Run a scripted task through the real runner on a built-in page; approvals are asked here,
    /// on the terminal.
    Demo(DemoArgs),
    /// Run the diagnostic task set (`eval/v1`: eight categories, each task K times from a fresh
    /// reset, a known-infeasible case beside each) with scripted planners or a model, judge each
    /// attempt by the app's own records, and report completion, false successes, latency, tokens
    /// and cost as JSON and a self-contained HTML page. Exits 1 on any false success, 2 when an
    /// attempt failed for the environment.
    Eval(EvalArgs),
    /// Start a ready X desktop for people without one: Xvfb, its own session bus with
    /// accessibility on, and openbox; prints the environment to use it and the command that
    /// serves it, and runs until Ctrl-C.
    Desktop(DesktopArgs),
    /// VM guests under QEMU (TCG where KVM does not really work): build the guest image,
    /// start and stop guests, list them with their health.
    Vm(VmArgs),
}

#[derive(Debug, Args)]
pub struct VmArgs {
    #[command(subcommand)]
    pub command: VmCmd,
}

#[derive(Debug, Subcommand)]
pub enum VmCmd {
    /// Build (or find cached) the guest image from Debian packages: a kernel and a ramroot with
    /// Xvfb, xterm and the guest server.
    Create,
    /// Boot a guest and wait until its guest server answers; it runs on after this command.
    Start {
        /// The guest's name (a-z, 0-9, '-'): its surface is `vm:NAME`.
        name: String,
        /// Memory in MB.
        #[arg(long, default_value_t = 512)]
        memory: u32,
        /// Screen size, WIDTHxHEIGHT.
        #[arg(long, default_value = "1024x768")]
        size: String,
        /// Let the guest server take requests without its token (for OSWorld's own clients):
        /// any local process can then drive the guest through its port.
        #[arg(long)]
        no_token: bool,
    },
    /// Stop a guest `vm start` started.
    Stop { name: String },
    /// The guests started on this data directory and configured in the file, with their health.
    List,
}

#[derive(Debug, Clone, Args)]
pub struct DesktopArgs {
    /// Screen size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x800")]
    pub size: String,
    /// No window manager (focus then moves only by Glovebox's own requests).
    #[arg(long)]
    pub no_window_manager: bool,
    /// Programs to start on the desktop (e.g. `--app xterm`); repeatable.
    #[arg(long = "app")]
    pub apps: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Answer every approval without asking: `once`, `task` or `deny`.
    #[arg(long, value_parser = ["once", "task", "deny"])]
    pub answer: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default 127.0.0.1:7777).
    #[arg(long, env = "GLOVEBOX_BIND")]
    pub bind: Option<std::net::SocketAddr>,
    /// Bearer token MCP clients must send (Authorization: Bearer …). Without it, the data
    /// directory's own token is used (`<data-dir>/mcp-token`, created once with mode 0600).
    #[arg(long, env = "GLOVEBOX_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Let MCP clients call without a token (loopback addresses only): any local process can
    /// then drive the agent's browser through this server.
    #[arg(long, env = "GLOVEBOX_NO_TOKEN", conflicts_with = "token")]
    pub no_token: bool,
    /// An extra Host name to accept besides localhost/127.0.0.1/[::1]. Repeatable.
    #[arg(
        long = "allow-host",
        env = "GLOVEBOX_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allow_host: Vec<String>,
    /// A browser Origin allowed to call the server (e.g. a web client). Repeatable.
    #[arg(
        long = "allow-client-origin",
        env = "GLOVEBOX_ALLOWED_CLIENT_ORIGINS",
        value_delimiter = ','
    )]
    pub allow_client_origin: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do, in the user's words.
    pub task: String,
    /// The page to start on (http, https; the origin lists and approvals apply).
    #[arg(long)]
    pub url: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Text that must be on the page for the run to succeed (repeatable); without any check a
    /// run cannot succeed.
    #[arg(long = "check-text")]
    pub check_text: Vec<String>,
    #[arg(long, default_value_t = 20)]
    pub max_steps: u32,
    #[arg(long, default_value_t = 300)]
    pub max_seconds: u32,
    /// Answer every approval without asking: `once`, `task` or `deny`.
    #[arg(long, value_parser = ["once", "task", "deny"])]
    pub answer: Option<String>,
    /// Print the RunResult as one JSON line (and no progress).
    #[arg(long)]
    pub json: bool,
    /// Add the run's model accounting: requests, tokens, tool calls, model time, and where the
    /// run's time went.
    #[arg(long)]
    pub report: bool,
    /// A secret the model never sees (repeatable): `NAME@ORIGIN[,ORIGIN…]=VALUE`, or
    /// `NAME@ORIGIN…` to read the value from the environment variable NAME (kept out of the
    /// shell's history and `ps`). The model writes `<secret>NAME</secret>` in what it types;
    /// Glovebox types the value, only into fields on those origins. A value written in the task
    /// too is replaced there by its placeholder.
    #[arg(long = "secret", value_name = "NAME@ORIGIN=VALUE", value_parser = crate::task::parse_secret)]
    pub secrets: Vec<crate::task::SecretArg>,
}

/// The model a command plans with (`run`, `eval`), over the configured `[model]`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// `anthropic`, `openai_responses` or `openai_chat` (over the configured `[model]`).
    #[arg(long)]
    pub provider: Option<String>,
    /// The model name (over the configured one).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible server: vLLM, Ollama, llama.cpp, OpenRouter).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Plan with the provider's own computer tool: every page as a screenshot, pointer and
    /// keyboard actions by coordinates. Without a value the newest the model takes; or one of
    /// `computer_20250124`, `computer_20251124` (Anthropic), `openai_computer`,
    /// `openai_computer_use_preview` (OpenAI Responses). Also `computer_tool = true` (and
    /// `computer_tool_version`) under `[model]`.
    #[arg(long, num_args = 0..=1, default_missing_value = "auto", value_name = "VERSION")]
    pub computer_tool: Option<String>,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Which tasks: ids, id prefixes ending in `.` (`dense.`) or categories, comma-separated
    /// (default: all).
    #[arg(long)]
    pub tasks: Option<String>,
    /// A task set directory (`tasks.json`, `apps/`, `files/`, `downloads/`) instead of the
    /// built-in one.
    #[arg(long)]
    pub set: Option<PathBuf>,
    /// Independent attempts per task and case, each from a fresh reset.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Plan with a model (`--provider` is what selects one) instead of the tasks' scripted
    /// planners.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The model's list price in USD per million input and output tokens, `IN,OUT` (e.g.
    /// `3,15`): the report's cost. Without it the cost is unknown.
    #[arg(long, value_name = "IN,OUT")]
    pub price: Option<String>,
    /// How the person answers approvals the tasks raise: `once`, `task` or `deny`.
    #[arg(long, default_value = "once", value_parser = ["once", "task", "deny"])]
    pub answer: String,
    /// Write the report's JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the report as a self-contained HTML page here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Keep the eval's own data directory (its store and artifacts, for `glovebox --data-dir
    /// <it>/data log`) instead of removing it; its path is printed.
    #[arg(long)]
    pub keep: bool,
    /// Compare two reports of the same tasks (paired by task, case and attempt) instead of
    /// running anything.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<PathBuf>>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this session (`session_…`).
    #[arg(long)]
    pub session: Option<String>,
    /// Only this run (`run_…`).
    #[arg(long)]
    pub run: Option<String>,
    /// The latest this many operations (0 = all), with their runs and approvals.
    #[arg(long, default_value_t = 200)]
    pub limit: usize,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TurnEndArgs {
    /// Only this Glovebox session (`session_…`, as `status` and GET /api/sessions name it).
    /// Without it, the sessions of the client that ran the hook (its nearest ancestor process
    /// that is a session's client).
    #[arg(long, conflicts_with = "all")]
    pub session: Option<String>,
    /// Every client's turn on every server of the data directory (a person's choice; a hook
    /// should not pass it).
    #[arg(long)]
    pub all: bool,
    /// What a client hook passes (Codex appends its notification as JSON): a notification
    /// whose `type` is not `agent-turn-complete` ends nothing.
    pub notification: Option<String>,
}

#[derive(Debug, Args)]
pub struct UserTabArgs {
    /// The page to open (http, https or about:blank; the configured origin lists apply).
    #[arg(conflicts_with = "offer")]
    pub url: Option<String>,
    /// Offer this open tab of yours to sessions instead (a kept tab a restart brought back:
    /// no session may claim it until you do); its id is in the console's list (`GET /api/tabs`).
    #[arg(long, value_name = "TAB")]
    pub offer: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The approval id a tool result named; omit to list pending approvals.
    pub id: Option<String>,
    /// Allow ordinary actions on this site for the rest of the session (R3 still asks each time).
    #[arg(long, conflicts_with = "deny")]
    pub for_task: bool,
    /// Refuse instead.
    #[arg(long)]
    pub deny: bool,
}

#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// The page to open (http:// or https://, or about:blank).
    #[arg(required_unless_present = "demo")]
    pub url: Option<String>,
    /// Serve a built-in page on loopback and observe that.
    #[arg(long, conflicts_with = "url")]
    pub demo: bool,
    /// Seconds to wait for the page to load.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Print the whole observation as JSON.
    #[arg(long)]
    pub json: bool,
    /// On a page too big for one observation, show the region around this text or ref first.
    #[arg(long, conflicts_with = "preview")]
    pub near: Option<String>,
    /// Print the turn-start preview instead of the observation.
    #[arg(long, conflicts_with_all = ["json", "screenshot"])]
    pub preview: bool,
    /// Also capture one viewport screenshot and write it to this PNG file.
    #[arg(long)]
    pub screenshot: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    pub what: BenchTarget,
    /// Iterations of the slow measurements (cold starts).
    #[arg(long, default_value_t = 5)]
    pub iterations: usize,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BenchTarget {
    /// CDP round trip and browser cold start.
    Cdp,
    /// Validation of a typical action.
    Protocol,
    /// Observation and preview of fixture pages, and our overhead over the raw CDP calls.
    Observe,
    /// Click and type round trips (checks, dispatch, settle, verification, fresh observation).
    Act,
    /// Runtime: stop latency, parallel tabs speed-up, per-step overhead, session start on one
    /// browser and on a pool, and how far past its deadline an act on a frozen browser answers.
    Runtime,
    /// Store write latency for an ownership change and for one action's record; operation
    /// log size per 1,000 actions; with `--store`, the same on PostgreSQL beside SQLite.
    Store,
    /// Sessions per instance: 1 to 32 sessions at once clicking with fresh observations, the p95
    /// at each, and the most sessions within a p95 of 250 ms.
    Sessions,
    /// Kept tabs: from a browser death to ten kept tabs open again.
    Restore,
    /// Host API: chat command → Surface Context (two tabs with previews), registry event round
    /// trip over the renderer WebSocket, memory per registered window.
    Host,
    /// Console live view: page change → frame at the viewer, frames per second and CPU of one
    /// live preview, a person's click → agent dispatch blocked and → pause confirmed.
    Console,
    /// The agent loop on a deterministic form task: Glovebox's DOM-first loop against a
    /// screenshot-only computer-tool loop (the providers' reference loops), each with a scripted
    /// loopback model: model requests and tokens per run and per step, runtime time per step
    /// without the model.
    Agent,
    /// The X11 desktop on a stack of its own (Xvfb, session bus, the GTK test app): stack
    /// start-up, observe on the test app and on a ~1,000-node window, click round trips with
    /// verification, input-to-event latency as the app logs it.
    Desktop,
    /// gui_exec: a 10-step form as one script call against ten act calls (wall time, model
    /// round trips), and the sandboxed runner's start-up, cold and warm.
    Script,
    /// VM guests under QEMU: the guest image's build (cold and cached), boot to ready (one
    /// guest, two side by side), screenshot and click round trips per guest, two guests in
    /// parallel against one after the other, memory per guest.
    Vm,
}
