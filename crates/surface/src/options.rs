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
    /// When the surface holds more than one observation's budget: the region around this text
    /// or ref (`e12`) is kept first, instead of the region around the viewport.
    pub near: Option<protocol::NearText>,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        ObserveOptions {
            screenshot: None,
            deadline: Duration::from_secs(10),
            model: PageModel::Auto,
            near: None,
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
/// characters), and only when no part of it below the root is a symlink (a link the page's
/// agent cannot have made is still not followed), no part is hidden (`.ssh`, `.env`: unless the
/// person allowed hidden files, `allow_hidden`), and it is a regular file whose real path stays
/// under the root's. Nothing else on disk can be named.
#[derive(Debug, Clone)]
pub struct UploadRoot {
    root: PathBuf,
    hidden: bool,
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
    /// A part of the name is a symlink: never followed.
    #[error("upload {name:?} goes through a symbolic link, which uploads never follow")]
    Symlink { name: String },
    /// A part of the name is hidden (starts with a dot) and the person did not allow hidden
    /// files.
    #[error(
        "upload {name:?} is a hidden file; hidden files are uploaded only when the person allowed them (--upload-hidden)"
    )]
    Hidden { name: String },
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
        Ok(UploadRoot {
            root,
            hidden: false,
        })
    }

    /// Lets names with hidden parts be uploaded too (the person's choice).
    pub fn allow_hidden(mut self, hidden: bool) -> UploadRoot {
        self.hidden = hidden;
        self
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
        let name = || name_str.to_owned();
        let mut at = self.root.clone();
        for part in Path::new(name_str).components() {
            let part = part.as_os_str();
            if !self.hidden && part.as_encoded_bytes().starts_with(b".") {
                return Err(UploadRefused::Hidden { name: name() });
            }
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(UploadRefused::Symlink { name: name() });
                }
                Ok(_) => {}
                Err(_) => return Err(UploadRefused::Missing { name: name() }),
            }
        }
        let joined = self.root.join(name_str);
        let real =
            std::fs::canonicalize(&joined).map_err(|_| UploadRefused::Missing { name: name() })?;
        if !real.starts_with(&self.root) {
            return Err(UploadRefused::OutsideRoot { name: name() });
        }
        let meta = std::fs::metadata(&real).map_err(|_| UploadRefused::Missing { name: name() })?;
        if !meta.is_file() {
            return Err(UploadRefused::NotAFile { name: name() });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A person's folder with what a hostile name would reach for: a link out, a link in,
    /// a linked folder, hidden files and a hidden folder.
    fn folder(tag: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("glovebox-upload-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join("notes.txt"), "hello").unwrap();
        std::fs::write(root.join("sub/inner.txt"), "inner").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=1").unwrap();
        std::fs::write(root.join(".ssh/id_ed25519"), "key").unwrap();
        let outside = root.with_extension("outside");
        std::fs::write(&outside, "not for upload").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("notes.txt"), root.join("alias.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("linked")).unwrap();
        root
    }

    fn authorise(root: &UploadRoot, name: &str) -> Result<PathBuf, UploadRefused> {
        root.authorise(&UploadName::new(name).unwrap())
    }

    #[test]
    fn symlinks_are_never_followed_and_hidden_files_need_the_persons_leave() {
        let dir = folder("rules");
        let root = UploadRoot::new(&dir).unwrap();
        assert!(authorise(&root, "notes.txt").is_ok());
        assert!(authorise(&root, "sub/inner.txt").is_ok());
        for link in ["escape", "alias.txt", "linked/inner.txt"] {
            assert!(
                matches!(authorise(&root, link), Err(UploadRefused::Symlink { .. })),
                "{link}: {:?}",
                authorise(&root, link)
            );
        }
        for hidden in [".env", ".ssh/id_ed25519"] {
            assert!(
                matches!(authorise(&root, hidden), Err(UploadRefused::Hidden { .. })),
                "{hidden}"
            );
        }
        assert!(matches!(
            authorise(&root, "sub"),
            Err(UploadRefused::NotAFile { .. })
        ));
        assert!(matches!(
            authorise(&root, "absent.txt"),
            Err(UploadRefused::Missing { .. })
        ));

        let allowed = UploadRoot::new(&dir).unwrap().allow_hidden(true);
        assert!(authorise(&allowed, ".env").is_ok());
        assert!(authorise(&allowed, ".ssh/id_ed25519").is_ok());
        assert!(
            matches!(
                authorise(&allowed, "escape"),
                Err(UploadRefused::Symlink { .. })
            ),
            "hidden leave is not symlink leave"
        );
    }
}
