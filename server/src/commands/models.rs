//! Model files at the terminal: the commands that need them (`serve`,
//! `ingest`, `search`, `ask`, `bench`) fetch what this machine lacks, once,
//! into `models.dir`, drawing a progress bar on stderr.

use engine::fetch::Fetching;
use engine::Lore;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{fail, CommandError};
use crate::http::codes;

/// A progress bar for file fetches (hidden under `--json`, and when stderr
/// is not a terminal).
pub(crate) fn fetch_bar(json: bool) -> ProgressBar {
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// What a fetch tells the bar.
pub(crate) fn show(bar: &ProgressBar, fetching: &Fetching) {
    bar.set_message(format!("Fetching {} (once for this machine)", fetching.what));
    if let Some(total) = fetching.total_bytes {
        bar.set_length(total);
    }
    bar.set_position(fetching.done_bytes);
}

/// Fetches the model files the roles as bound need and this machine lacks;
/// says on stderr what it fetched and where it keeps them.
pub(crate) async fn ensure(lore: &Lore, json: bool) -> anyhow::Result<()> {
    let bar = fetch_bar(json);
    let shown = bar.clone();
    let progress = move |fetching: &Fetching| show(&shown, fetching);
    let fetched = lore.fetch_missing_models(false, &progress).await;
    bar.finish_and_clear();
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
    let bar = fetch_bar(false);
    let shown = bar.clone();
    let progress = move |fetching: &Fetching| show(&shown, fetching);
    let found = engine::embed::model_files::resolve(settings, &progress).await;
    bar.finish_and_clear();
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
