//! Running an indexing run at the terminal, with a progress bar.

use std::sync::Arc;
use std::time::Duration;

use app::wire::JobView;
use engine::ingest::{jobs, Progress};
use engine::Lore;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{fail, print_json, CommandError};
use crate::http::codes;

/// Runs a queued job here with a progress bar (once no run it would overlap
/// is going), or follows it when another process (a running `lore serve`)
/// has claimed it.
pub(crate) async fn run_job(lore: &Lore, job_id: &str, json: bool) -> anyhow::Result<()> {
    let owner = jobs::owner_id("cli");
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} documents  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let ended = match jobs::claim_when_free(lore, job_id, &owner).await.map_err(fail)? {
        Some(held) => {
            let shown = bar.clone();
            let observer: Arc<dyn Fn(&Progress) + Send + Sync> =
                Arc::new(move |p: &Progress| show(&shown, p));
            let ended = jobs::run(lore, held, &owner, Some(observer)).await.map_err(fail)?;
            jobs::Job::decode(ended).map_err(fail)?
        }
        None => loop {
            let current = jobs::job(lore, job_id).await.map_err(fail)?;
            show(&bar, &current.progress);
            if !matches!(current.status.as_str(), jobs::QUEUED | jobs::RUNNING) {
                break current;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        },
    };
    bar.finish_and_clear();
    let view = JobView::from(ended);
    let failed = (view.status != jobs::SUCCEEDED).then(|| {
        let message =
            format!("the run ended {}: {}", view.status, view.message.as_deref().unwrap_or_default());
        CommandError::new(codes::JOB_FAILED, message)
    });
    if json {
        // One JSON document either way: a failed run is the error, with the run as its details.
        return match failed {
            None => {
                print_json(&view);
                Ok(())
            }
            Some(failed) => Err(failed.with_details(&view).into()),
        };
    }
    let p = &view.progress;
    println!(
        "{}: {} documents ({} unchanged, {} failed, {} duplicates, {} skipped, {} removed), {} chunks embedded.",
        view.status, p.done, p.unchanged, p.failed, p.duplicates, p.skipped, p.removed, p.embedded
    );
    for error in view.errors.iter().take(20) {
        println!("  failed {}: {}", error.uri, error.error);
    }
    failed.map_or(Ok(()), |failed| Err(failed.into()))
}

fn show(bar: &ProgressBar, p: &Progress) {
    bar.set_length(p.discovered.max(p.done));
    bar.set_position(p.done);
    bar.set_message(format!(
        "fetched {} · embedded {} chunks · unchanged {} · failed {}",
        p.fetched, p.embedded, p.unchanged, p.failed
    ));
}
