//! A cancellation signal shared by a run and whoever may stop it.

use tokio::sync::watch;

/// Cheap to clone; every clone sees the same stop.
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: std::sync::Arc<watch::Sender<bool>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel {
            tx: std::sync::Arc::new(watch::channel(false).0),
        }
    }
}

impl Cancel {
    /// Requests the stop. Idempotent.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    /// True once stopped.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves when stopped (at once if already).
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}
