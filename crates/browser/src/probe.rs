//! What `glovebox doctor`, `glovebox launch` and the benchmarks need of the browser beneath the
//! adapter: its version, the launched process, a scratch page to evaluate in (the raw CDP round
//! trip `bench cdp` measures), and a [`Tab`] opened directly (`bench observe` and `bench act`
//! measure the adapter without the runtime). Not on any product path.

use cdp::domains::browser::GetVersion;
use cdp::domains::runtime::Evaluate;
use cdp::{Session, TargetId};
use serde_json::Value;
use surface::{SurfaceAdapter as _, SurfaceError};

use crate::{Chromium, Tab};

fn cdp_error(e: cdp::CdpError) -> SurfaceError {
    crate::BrowserError::from(e).into()
}

/// The browser's own words for its version.
#[derive(Debug, Clone)]
pub struct Version {
    pub product: String,
    pub protocol: String,
}

/// The process of a launched browser.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its DevTools port's URL; `None` for a browser driven over its pipe (the default).
    pub ws_url: Option<String>,
    pub pid: u32,
    pub profile_dir: std::path::PathBuf,
}

/// A page to evaluate expressions in, outside any session of the runtime. Closed by
/// [`ScratchPage::close`].
pub struct ScratchPage {
    session: Session,
    created: bool,
}

impl ScratchPage {
    /// Evaluates `expression` in the page and returns its value.
    pub async fn eval(&self, expression: &str) -> Result<Option<Value>, SurfaceError> {
        Ok(self
            .session
            .call(Evaluate::value(expression))
            .await
            .map_err(cdp_error)?
            .result
            .value)
    }

    /// Closes a page this opened, or detaches from one it attached to.
    pub async fn close(self) {
        if self.created {
            let _ = self.session.close_target().await;
        } else if let Some(id) = self.session.id() {
            let _ = self
                .session
                .connection()
                .browser()
                .call(cdp::domains::target::DetachFromTarget {
                    session_id: id.clone(),
                })
                .await;
        }
    }
}

impl Chromium {
    /// `Browser.getVersion`.
    pub async fn version(&self) -> Result<Version, SurfaceError> {
        let v = self
            .connection()?
            .browser()
            .call(GetVersion {})
            .await
            .map_err(cdp_error)?;
        Ok(Version {
            product: v.product,
            protocol: v.protocol_version,
        })
    }

    /// The launched browser's endpoint, pid and profile.
    pub fn process(&self) -> Option<Process> {
        self.with_process(|p| Process {
            ws_url: p.ws_url().map(str::to_owned),
            pid: p.pid(),
            profile_dir: p.profile_dir().to_path_buf(),
        })
    }

    /// Waits until the connection ends.
    pub async fn closed(&self) {
        if let Ok(conn) = self.connection() {
            conn.closed().await;
        }
    }

    /// A new blank page in the default context.
    pub async fn scratch_page(&self) -> Result<ScratchPage, SurfaceError> {
        let session = self
            .connection()?
            .browser()
            .create_page("about:blank", None)
            .await
            .map_err(cdp_error)?;
        Ok(ScratchPage {
            session,
            created: true,
        })
    }

    /// An attachment of its own to the page whose URL ends with `suffix`.
    pub async fn scratch_attach(&self, suffix: &str) -> Result<ScratchPage, SurfaceError> {
        let target = self
            .list()
            .await?
            .into_iter()
            .find(|t| t.url.ends_with(suffix))
            .ok_or_else(|| SurfaceError::lost("no such page"))?;
        let session = self
            .connection()?
            .browser()
            .attach(&TargetId(target.id))
            .await
            .map_err(cdp_error)?;
        Ok(ScratchPage {
            session,
            created: false,
        })
    }

    /// A new blank tab in the default context, attached, as the adapter opens one.
    pub async fn open_tab(&self) -> Result<Tab, SurfaceError> {
        Ok(Tab::open(&self.connection()?.browser(), None, None).await?)
    }
}

/// Why no Chromium binary was found (every place tried is named).
pub use cdp::LaunchError;

/// Whether a binary is Chromium's headless shell (launched with site isolation on, never headed).
pub use cdp::launch::is_headless_shell;

/// The Chromium binary `glovebox doctor` would launch, or why there is none.
pub fn find_chromium(
    explicit: Option<&std::path::Path>,
) -> Result<std::path::PathBuf, LaunchError> {
    cdp::launch::find_chromium(explicit)
}
