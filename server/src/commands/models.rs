//! Model files at the terminal: the commands that need them (`serve`,
//! `ingest`, `search`, `ask`, `bench`) fetch what this machine lacks, once,
//! into `models.dir`, drawing a progress bar on stderr.

use engine::fetch::Fetching;
use engine::Lore;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{fail, CommandError};
use crate::http::codes;

/// A progress bar for file fetches on stderr (hidden under `--json`, and
/// when stderr is not a terminal), cleared when dropped.
pub(crate) struct FetchBar(ProgressBar);

impl FetchBar {
    pub(crate) fn new(json: bool) -> Self {
        let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
        bar.set_style(
            ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self(bar)
    }

    /// What a fetch tells the bar: pass `&|f| bar.show(f)` as the progress.
    pub(crate) fn show(&self, fetching: &Fetching) {
        self.0.set_message(format!("Fetching {} (once for this machine)", fetching.what));
        if let Some(total) = fetching.total_bytes {
            self.0.set_length(total);
        }
        self.0.set_position(fetching.done_bytes);
    }
}

impl Drop for FetchBar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Fetches the model files the roles as bound need and this machine lacks;
/// says on stderr what it fetched and where it keeps them.
pub(crate) async fn ensure(lore: &Lore, json: bool) -> anyhow::Result<()> {
    let bar = FetchBar::new(json);
    let fetched = lore.fetch_missing_models(false, &|fetching| bar.show(fetching)).await;
    drop(bar);
    let fetched = fetched.map_err(fetch_failed)?;
    if !fetched.is_empty() {
        eprintln!("Fetched {} into {}", fetched.join(", "), lore.settings.models_dir().display());
    }
    Ok(())
}

/// The on-node embedding model's files, fetched with a progress bar when
/// this machine lacks them (what the benchmarks load directly).
pub(crate) async fn embedding_files(
    settings: &engine::Settings,
) -> anyhow::Result<engine::embed::model_files::Resolved> {
    let bar = FetchBar::new(false);
    let found = engine::embed::model_files::resolve(settings, &|fetching| bar.show(fetching)).await;
    drop(bar);
    found.map_err(|err| fetch_failed(err.into()))
}

/// A failed fetch, told in full: the API hides where model files are kept
/// from its callers, but the operator running the command is the one who
/// must put them there.
fn fetch_failed(err: engine::Error) -> anyhow::Error {
    match err {
        engine::Error::Embedding(why) => {
            CommandError::new(codes::EMBEDDING_UNAVAILABLE.key, why.to_string()).into()
        }
        other => fail(other),
    }
}
