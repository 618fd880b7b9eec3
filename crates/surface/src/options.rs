//! How the runtime asks a surface to observe and act: the options of a capture and of an action,
//! uploads from an authorised directory, and the files an action downloaded. Surface-neutral:
//! a browser tab, a desktop and a VM guest take the same options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::ImageMime;
use protocol::extended::{UploadName, UploadNameError};

/// What to capture.
#[derive(Debug, Clone)]
pub struct ObserveOptions {
    /// One viewport-only screenshot in this format (never full-page).
    pub screenshot: Option<ImageMime>,
    /// Deadline for the whole capture, both attempts included.
    pub deadline: Duration,
    /// Where roles, names and states come from.
    pub model: PageModel,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        ObserveOptions {
            screenshot: None,
            deadline: Duration::from_secs(10),
            model: PageModel::Auto,
        }
    }
}

/// The source of a surface model's roles, names and states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PageModel {
    /// The adapter's own model (for the browser: the DOM model, except on a small page with ARIA
    /// relations).
    #[default]
    Auto,
    /// Always the platform's accessibility tree (Chromium's AX tree, AT-SPI).
    Accessibility,
    /// Always the model the adapter derives from the document itself.
    Dom,
}

/// How `type` enters text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Typing {
    /// Insert like a paste; fall back to keystrokes when the value did not take.
    #[default]
    Auto,
    /// Insert like a paste only.
    Paste,
    /// Real key events for every character (for pages that listen to keys).
    Keystrokes,
}

impl From<protocol::extended::TypeMode> for Typing {
    fn from(mode: protocol::extended::TypeMode) -> Self {
        match mode {
            protocol::extended::TypeMode::Auto => Typing::Auto,
            protocol::extended::TypeMode::Paste => Typing::Paste,
            protocol::extended::TypeMode::Keystrokes => Typing::Keystrokes,
        }
    }
}

/// How to run an action.
#[derive(Debug, Clone)]
pub struct ActOptions {
    /// Deadline for checks, dispatch and settling together.
    pub deadline: Duration,
    /// The observation taken after the action.
    pub observe: ObserveOptions,
    /// The files this run may upload; `None`: every `upload` is refused.
    pub uploads: Option<UploadRoot>,
    /// Where a `click` with `expect_download` saves the file; `None`: such clicks are refused.
    pub downloads: Option<PathBuf>,
    /// The origins the action's requests may reach; with them the adapter's network boundary
    /// judges every request of the surface during the action and shortly after. `None`:
    /// unguarded.
    pub allowed_origins: Option<Vec<policy::Origin>>,
    /// The action puts text into the page (`ExtendedAction::types_text`): from its dispatch on,
    /// the surface's requests reach only `allowed_origins` — static subresources included — and
    /// keep being judged after the action, for as long as the surface stays on its origin (its
    /// storage carries the text across documents). The adapter refuses to type while the page
    /// holds a connection it cannot block open to another origin.
    pub guard_typed: bool,
    /// The fresh observation's snapshot whole, never as changes against the observation the
    /// action was checked against (`Observation::snapshot_diff`).
    pub full_snapshot: bool,
}

impl Default for ActOptions {
    fn default() -> Self {
        ActOptions {
            deadline: Duration::from_secs(10),
            observe: ObserveOptions::default(),
            uploads: None,
            downloads: None,
            allowed_origins: None,
            guard_typed: false,
            full_snapshot: false,
        }
    }
}

/// A directory of files a run may upload. An upload name maps to `root/name` only after the
/// protocol's own name rules (no absolute paths, `..`, `~`, `:`, backslashes, control
/// characters) and a canonicalisation check: the real path (symlinks resolved) must stay under
/// the root's real path and be a regular file. Nothing else on disk can be named.
#[derive(Debug, Clone)]
pub struct UploadRoot {
    root: PathBuf,
}

/// Why an upload name was refused; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadRefused {
    /// The name breaks the protocol's rules for upload names.
    #[error("upload {name:?} is not a valid upload name: {reason}")]
    Invalid {
        name: String,
        reason: UploadNameError,
    },
    /// No such file under the upload root.
    #[error("upload {name:?} is not among the files offered for upload")]
    Missing { name: String },
    /// The name resolves (through a symlink) to somewhere outside the upload root.
    #[error("upload {name:?} leads outside the files offered for upload")]
    OutsideRoot { name: String },
    /// The name is a directory or another non-regular file.
    #[error("upload {name:?} is not a regular file")]
    NotAFile { name: String },
}

impl UploadRoot {
    /// The root: an existing directory, canonicalised once here.
    pub fn new(dir: impl AsRef<Path>) -> std::io::Result<UploadRoot> {
        let root = std::fs::canonicalize(dir)?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "an upload root must be a directory",
            ));
        }
        Ok(UploadRoot { root })
    }

    /// The canonical directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The real path of an authorised file, or why it is refused.
    pub fn authorise(&self, name: &UploadName) -> Result<PathBuf, UploadRefused> {
        let name_str = name.as_str();
        // The protocol checked this when the action was read; checked again here because an
        // `UploadName` is the only thing standing between a model and the filesystem.
        if let Some(reason) = UploadName::content_problem(name_str) {
            return Err(UploadRefused::Invalid {
                name: name_str.to_owned(),
                reason,
            });
        }
        let joined = self.root.join(name_str);
        let real = std::fs::canonicalize(&joined).map_err(|_| UploadRefused::Missing {
            name: name_str.to_owned(),
        })?;
        if !real.starts_with(&self.root) {
            return Err(UploadRefused::OutsideRoot {
                name: name_str.to_owned(),
            });
        }
        let meta = std::fs::metadata(&real).map_err(|_| UploadRefused::Missing {
            name: name_str.to_owned(),
        })?;
        if !meta.is_file() {
            return Err(UploadRefused::NotAFile {
                name: name_str.to_owned(),
            });
        }
        Ok(real)
    }
}

/// A file a click downloaded, complete on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadInfo {
    /// Chromium's id of the download; the file is saved under this name.
    pub guid: String,
    /// The file name the page suggested (untrusted page content; never used as a path).
    pub suggested_filename: String,
    /// Where the file is: `<downloads dir>/<guid>`.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Where it came from, redacted (no query values).
    pub url: String,
    /// The artifact it became, once the runtime kept it as one (the path is then the
    /// artifact's, and only this id leaves the runtime).
    pub artifact_id: Option<protocol::ArtifactId>,
}
