//! What the answer floor holds in memory between requests, and drops when
//! the corpus floors announce a change ([`cluster::Change`]): the answer
//! cache, opened for the embedder's dimensions, goes with an embedding
//! rebinding; the pinned answers are read again after any pin changes.
//! Subscribed in [`crate::Lore::open`], so that a change made through
//! another replica reaches it the same way.

use crate::answer::{cache::AnswerCache, pins::Pins};
use crate::cluster::{self, Change};

#[derive(Default)]
pub struct Memory {
    /// The answer cache (LanceDB, beside the chunks), opened on first use.
    pub(crate) answer_cache: cluster::Slot<AnswerCache>,
    pub(crate) pins: Pins,
}

impl Memory {
    /// Waits until the open answer cache's queued rows reached its table.
    pub(crate) async fn flush(&self) {
        let open = self.answer_cache.lock().await.clone();
        if let Some(cache) = open {
            flush(&cache).await;
        }
    }
}

#[async_trait::async_trait]
impl cluster::Subscriber for Memory {
    async fn changed(&self, change: Change) {
        match change {
            Change::Embedding => {
                // Its queued writes land before a new cache reads the table.
                let mut open = self.answer_cache.lock().await;
                if let Some(old) = open.take() {
                    flush(&old).await;
                }
            }
            Change::Pins => self.pins.forget(),
            Change::Roles | Change::Schema => {}
        }
    }
}

/// Flushes `cache`; a failure costs only cache entries, so it is logged.
async fn flush(cache: &AnswerCache) {
    if let Err(err) = cache.flush().await {
        tracing::warn!(error = %err, "the answer cache's last writes did not reach its table");
    }
}
