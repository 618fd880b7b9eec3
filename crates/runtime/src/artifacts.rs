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
        Artifacts { root: data_dir.join("runs") }
    }

    fn run_dir(&self, run_id: &str) -> PathBuf {
        self.root.join(run_id)
    }

    /// Stores bytes for a run and returns the opaque handle.
    pub fn store(&self, run_id: &str, kind: ArtifactKind, bytes: &[u8], retained: bool, seq: u64) -> std::io::Result<ArtifactRef> {
        let id = format!("artifact_{run_id}_{seq}");
        let dir = if retained { self.run_dir(run_id).join(RETAINED) } else { self.run_dir(run_id) };
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(&id), bytes)?;
        let artifact_id = ArtifactId::new(id).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(ArtifactRef { kind, artifact_id, retained })
    }

    /// A controlled read of an artifact by id (no paths leave the runtime).
    pub fn read(&self, run_id: &str, artifact_id: &ArtifactId) -> std::io::Result<Vec<u8>> {
        let name = artifact_id.as_str();
        if name.contains(['/', '\\']) || name.contains("..") {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an artifact id"));
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
        std::fs::read_dir(self.run_dir(run_id)).map(|entries| entries.flatten().any(|e| e.file_name() != RETAINED)).unwrap_or(false)
    }

    /// Start-up sweep: run directories untouched for longer than `ttl` lose their unretained files.
    pub fn sweep(&self, ttl: Duration, live_runs: &[String]) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return 0 };
        let mut swept = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if live_runs.contains(&name) {
                continue;
            }
            let old = entry.metadata().and_then(|m| m.modified()).map(|t| SystemTime::now().duration_since(t).unwrap_or_default() >= ttl).unwrap_or(true);
            if old {
                remove_unretained(&entry.path());
                swept += 1;
            }
        }
        swept
    }
}

fn remove_unretained(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut kept = false;
    for entry in entries.flatten() {
        if entry.file_name() == RETAINED {
            kept = true;
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
    if !kept {
        let _ = std::fs::remove_dir(dir);
    }
}
