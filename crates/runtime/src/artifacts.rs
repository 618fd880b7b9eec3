//! Artifacts: one directory per run, files named by opaque ids, only ids leaving the runtime.
//! Every ending deletes what is not retained; start-up sweeps orphan run directories older than a
//! TTL and keeps retained files.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use protocol::{ArtifactId, ArtifactKind, ArtifactRef};

/// The artifact area under the data directory.
#[derive(Debug, Clone)]
pub struct Artifacts {
    root: PathBuf,
}

const RETAINED: &str = "retained";

impl Artifacts {
    pub fn new(data_dir: &Path) -> Artifacts {
        Artifacts {
            root: data_dir.join("runs"),
        }
    }

    fn run_dir(&self, run_id: &str) -> PathBuf {
        self.root.join(run_id)
    }

    /// Stores bytes for a run and returns the opaque handle.
    pub fn store(
        &self,
        run_id: &str,
        kind: ArtifactKind,
        bytes: &[u8],
        retained: bool,
        seq: u64,
    ) -> std::io::Result<ArtifactRef> {
        let id = format!("artifact_{run_id}_{seq}");
        let dir = if retained {
            self.run_dir(run_id).join(RETAINED)
        } else {
            self.run_dir(run_id)
        };
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(&id), bytes)?;
        let artifact_id = ArtifactId::new(id).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(ArtifactRef {
            kind,
            artifact_id,
            retained,
        })
    }

    /// Keeps a finished download of `scope` (a run, or a session's direct calls) as a retained
    /// artifact: the file moves into the artifact area under an opaque id, with what a person
    /// needs to save it (its name, cleaned of paths and control characters; its size; a MIME type
    /// from the name's extension). The page's name is never used as a path.
    pub fn adopt_download(
        &self,
        scope: &str,
        info: &mut surface::DownloadInfo,
        seq: u64,
    ) -> std::io::Result<ArtifactRef> {
        let id = format!("artifact_{scope}_d{seq}");
        let artifact_id =
            ArtifactId::new(id.clone()).map_err(|e| std::io::Error::other(e.to_string()))?;
        let dir = self.run_dir(scope).join(RETAINED);
        std::fs::create_dir_all(&dir)?;
        let to = dir.join(&id);
        if std::fs::rename(&info.path, &to).is_err() {
            std::fs::copy(&info.path, &to)?;
            let _ = std::fs::remove_file(&info.path);
        }
        let meta = DownloadMeta {
            name: download_name(&info.suggested_filename),
            size: info.size,
            mime: mime_for(&info.suggested_filename).to_owned(),
        };
        std::fs::write(
            dir.join(format!("{id}.meta.json")),
            serde_json::to_vec(&meta).map_err(std::io::Error::other)?,
        )?;
        info.path = to;
        info.artifact_id = Some(artifact_id.clone());
        Ok(ArtifactRef {
            kind: ArtifactKind::Download,
            artifact_id,
            retained: true,
        })
    }

    /// An artifact by id alone, for a person (the id names its run or session), with what is
    /// known of a download. `NotFound` for anything that is not a stored artifact.
    pub fn read_by_id(
        &self,
        artifact_id: &ArtifactId,
    ) -> std::io::Result<(Vec<u8>, Option<DownloadMeta>)> {
        let name = artifact_id.as_str();
        let not_found = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such artifact");
        let scope = name
            .strip_prefix("artifact_")
            .and_then(|rest| rest.rsplit_once('_'))
            .map(|(scope, _)| scope)
            .ok_or_else(not_found)?;
        if scope.is_empty()
            || scope.contains(['/', '\\', '.'])
            || name.contains(['/', '\\'])
            || name.contains("..")
            || name.ends_with(".meta.json")
        {
            return Err(not_found());
        }
        let bytes = self.read(scope, artifact_id)?;
        let meta = std::fs::read(
            self.run_dir(scope)
                .join(RETAINED)
                .join(format!("{name}.meta.json")),
        )
        .ok()
        .and_then(|m| serde_json::from_slice(&m).ok());
        Ok((bytes, meta))
    }

    /// A controlled read of an artifact by id (no paths leave the runtime).
    pub fn read(&self, run_id: &str, artifact_id: &ArtifactId) -> std::io::Result<Vec<u8>> {
        let name = artifact_id.as_str();
        if name.contains(['/', '\\']) || name.contains("..") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not an artifact id",
            ));
        }
        let dir = self.run_dir(run_id);
        std::fs::read(dir.join(name)).or_else(|_| std::fs::read(dir.join(RETAINED).join(name)))
    }

    /// The one cleanup of every ending: removes the run's files except retained ones.
    pub fn finish_run(&self, run_id: &str) {
        remove_unretained(&self.run_dir(run_id));
    }

    /// True when the run still has any file that is not retained (for tests and the sweep).
    pub fn has_unretained(&self, run_id: &str) -> bool {
        std::fs::read_dir(self.run_dir(run_id))
            .map(|entries| entries.flatten().any(|e| e.file_name() != RETAINED))
            .unwrap_or(false)
    }

    /// Start-up sweep: run directories untouched for longer than `ttl` lose their unretained files.
    pub fn sweep(&self, ttl: Duration, live_runs: &[String]) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return 0;
        };
        let mut swept = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if live_runs.contains(&name) {
                continue;
            }
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .map(|t| SystemTime::now().duration_since(t).unwrap_or_default() >= ttl)
                .unwrap_or(true);
            if old {
                remove_unretained(&entry.path());
                swept += 1;
            }
        }
        swept
    }
}

/// What an action downloaded, as a transport reports it to a model: each file's artifact id,
/// cleaned name (page content), size and MIME type; never a path.
pub fn downloaded(outcome: &surface::ActOutcome) -> Vec<serde_json::Value> {
    outcome
        .downloads
        .iter()
        .filter_map(|d| {
            let id = d.artifact_id.as_ref()?;
            Some(serde_json::json!({"artifact_id": id.as_str(), "name": download_name(&d.suggested_filename), "size": d.size, "mime": mime_for(&d.suggested_filename)}))
        })
        .collect()
}

/// What is known of a downloaded artifact.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DownloadMeta {
    /// The page's suggested name, cleaned (page content: shown, never used as a path).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// From the name's extension; `application/octet-stream` when unknown.
    pub mime: String,
}

/// The last component of a page's suggested file name, without control characters, at most 120
/// characters; `download` when nothing is left.
pub(crate) fn download_name(suggested: &str) -> String {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last.chars().filter(|c| !c.is_control()).take(120).collect();
    let clean = clean.trim().trim_start_matches('.').to_owned();
    if clean.is_empty() {
        "download".to_owned()
    } else {
        clean
    }
}

fn mime_for(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "csv" => "text/csv",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "zip" => "application/zip",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        _ => "application/octet-stream",
    }
}

fn remove_unretained(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kept = false;
    for entry in entries.flatten() {
        if entry.file_name() == RETAINED {
            kept = true;
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
    if !kept {
        let _ = std::fs::remove_dir(dir);
    }
}
