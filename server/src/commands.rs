//! `lore sources …`, `lore ingest` and `lore search`: the same engine calls
//! as the admin API, on the same data directory and database. Runs started
//! here execute in this process with a progress bar; a run the server's
//! worker already holds is followed instead.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use engine::audit::Actor;
use engine::ingest::{jobs, lifecycle, upload, Progress};
use engine::{sources, Lore, Settings};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::SourcesCommand;
use crate::command_output::{fail, invalid, print_json, CommandError};
use crate::http::sources::{job_view, source_view};

/// The CLI acts as the system (audit entries say `system`).
const ACTOR: Actor = Actor::System;

async fn open(settings: Settings) -> anyhow::Result<Lore> {
    Lore::open(settings).await.context("opening Lore")
}

pub async fn sources(settings: Settings, command: SourcesCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        SourcesCommand::Add {
            name,
            kind,
            url,
            discovery,
            include,
            exclude,
            max_pages,
            max_depth,
            volatility,
            json,
        } => {
            let config = match url {
                Some(start_url) => {
                    let mut config =
                        serde_json::json!({"start_url": start_url, "include": include, "exclude": exclude});
                    if let Some(discovery) = discovery {
                        config["discovery"] = discovery.into();
                    }
                    if let Some(max) = max_pages {
                        config["max_pages"] = max.into();
                    }
                    if let Some(max) = max_depth {
                        config["max_depth"] = max.into();
                    }
                    Some(config)
                }
                None => None,
            };
            let new = sources::NewSource { name, kind, config, volatility };
            let added = lifecycle::add_source(&lore, &ACTOR, new, "cli").await.map_err(fail)?;
            let view = source_view(&lore, added.source).await.map_err(fail)?;
            if json {
                print_json(&view);
            } else {
                println!("Created {} source {:?} ({}).", view.kind, view.name, view.id);
                match added.first_sync {
                    Some(_) => println!(
                        "Its first crawl is queued: a running `lore serve` starts it, or run it here with `lore sources reindex {}`.",
                        view.id
                    ),
                    None => println!("Add files with `lore ingest PATH --name {:?}`.", view.name),
                }
            }
        }
        SourcesCommand::List { json } => {
            let mut views = Vec::new();
            for source in sources::list(&lore).await.map_err(fail)? {
                views.push(source_view(&lore, source).await.map_err(fail)?);
            }
            if json {
                print_json(&views);
            } else if views.is_empty() {
                println!("No sources yet: `lore ingest PATH-OR-URL` adds one.");
            } else {
                println!(
                    "{:<36}  {:<24} {:<8} {:<9} {:>6} {:>7}  freshness",
                    "id", "name", "kind", "status", "docs", "chunks"
                );
                for v in views {
                    let status = if v.enabled { v.status.clone() } else { "disabled".into() };
                    let freshness = match (v.fresh, &v.last_synced_at) {
                        (Some(true), Some(at)) => format!("fresh (synced {at})"),
                        (Some(false), Some(at)) => format!("stale (synced {at})"),
                        _ => "never synced".into(),
                    };
                    println!(
                        "{:<36}  {:<24} {:<8} {:<9} {:>6} {:>7}  {freshness}",
                        v.id, v.name, v.kind, status, v.document_count, v.chunk_count
                    );
                }
            }
        }
        SourcesCommand::Enable { source, json } => switch(&lore, &source, true, json).await?,
        SourcesCommand::Disable { source, json } => switch(&lore, &source, false, json).await?,
        SourcesCommand::Reindex { source, full, json } => {
            let source_id = match &source {
                Some(name) => Some(sources::find(&lore, name).await.map_err(fail)?.id),
                None if full => None,
                None => {
                    return Err(invalid("name a source, or pass --full to re-embed every source"));
                }
            };
            run_job(&lore, source_id.as_deref(), full, json).await?;
        }
        SourcesCommand::Rm { source, json } => {
            let found = sources::find(&lore, &source).await.map_err(fail)?;
            sources::delete(&lore, &ACTOR, &found.id).await.map_err(fail)?;
            if json {
                print_json(&serde_json::json!({"deleted": found.id}));
            } else {
                println!("Deleted source {:?} with its documents and chunks.", found.name);
            }
        }
    }
    Ok(())
}

async fn switch(lore: &Lore, source: &str, enabled: bool, json: bool) -> anyhow::Result<()> {
    let found = sources::find(lore, source).await.map_err(fail)?;
    let updated = sources::set_enabled(lore, &ACTOR, &found.id, enabled).await.map_err(fail)?;
    if json {
        print_json(&source_view(lore, updated).await.map_err(fail)?);
    } else if enabled {
        println!("Enabled {:?}: its content is searchable again.", updated.name);
    } else {
        println!("Disabled {:?}: its content is kept but not searched.", updated.name);
    }
    Ok(())
}

pub async fn ingest(
    settings: Settings,
    target: &str,
    name: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let is_url = target.starts_with("http://") || target.starts_with("https://");
    let source_id = if is_url {
        lifecycle::website_at(&lore, &ACTOR, target, name, "cli").await.map_err(fail)?.id
    } else {
        upload_files(&lore, target, name, json).await?
    };
    run_job(&lore, Some(&source_id), false, json).await
}

/// Receives a file, or every file of a directory (recursively), into the
/// upload source `name` (created when missing).
async fn upload_files(lore: &Lore, target: &str, name: Option<String>, json: bool) -> anyhow::Result<String> {
    let path = Path::new(target);
    let mut files = Vec::new();
    collect_files(path, &mut files).with_context(|| format!("reading {target}"))?;
    if files.is_empty() {
        return Err(invalid(format!("{target} holds no files")));
    }
    let name = name.unwrap_or_else(|| {
        std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| target.to_owned())
    });
    let source = lifecycle::upload_source_named(lore, &ACTOR, &name).await.map_err(fail)?;
    let mut refused = 0;
    for file in files {
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let relative = file.strip_prefix(path).ok().filter(|r| !r.as_os_str().is_empty()).unwrap_or(&file);
        let file_name = relative.to_string_lossy().replace(['/', '\\'], "_");
        match upload::receive(lore, &source.id, upload::Upload { file_name, content_type: None, bytes }).await
        {
            Ok(_) => {}
            Err(err) => {
                refused += 1;
                if !json {
                    eprintln!("skipped {}: {}", file.display(), fail(err));
                }
            }
        }
    }
    if refused > 0 && !json {
        eprintln!("{refused} file(s) were not accepted; the others are being indexed.");
    }
    Ok(source.id)
}

fn collect_files(path: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            collect_files(&entry.path(), out)?;
        }
    } else {
        out.push(path.to_owned());
    }
    Ok(())
}

/// Queues a run and executes it here with a progress bar, or follows it when
/// the server's worker took it first.
async fn run_job(lore: &Lore, source_id: Option<&str>, full: bool, json: bool) -> anyhow::Result<()> {
    let owner = jobs::owner_id("cli");
    let queued = jobs::enqueue(lore, source_id, full, "cli").await.map_err(fail)?;
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} documents  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let ended = match jobs::claim(lore, &queued.id, &owner).await.map_err(fail)? {
        Some(held) => {
            let shown = bar.clone();
            let observer: Arc<dyn Fn(&Progress) + Send + Sync> =
                Arc::new(move |p: &Progress| show(&shown, p));
            jobs::run(lore, held, &owner, Some(observer)).await.map_err(fail)?
        }
        None => loop {
            let current = jobs::get(lore, &queued.id).await.map_err(fail)?;
            let progress: Progress = serde_json::from_value(current.progress.clone()).unwrap_or_default();
            show(&bar, &progress);
            if !matches!(current.status.as_str(), jobs::QUEUED | jobs::RUNNING) {
                break current;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        },
    };
    bar.finish_and_clear();
    let view = job_view(ended);
    let failed = (view.status != jobs::SUCCEEDED).then(|| {
        let message =
            format!("the run ended {}: {}", view.status, view.message.as_deref().unwrap_or_default());
        CommandError::new("job_failed", message)
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

pub async fn search(settings: Settings, query: &str, top_k: usize, json: bool) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let found = engine::search::diagnose(&lore, query, Some(top_k), false).await.map_err(fail)?;
    let found = app::wire::SearchResults::from(found);
    if json {
        print_json(&found);
        return Ok(());
    }
    if found.results.is_empty() {
        println!("Nothing passed the score cutoff ({} candidates considered).", found.candidates);
    }
    for (rank, hit) in found.results.iter().enumerate() {
        let text = match hit.text_score {
            Some(score) => format!("{score:.2}"),
            None => "-".into(),
        };
        println!(
            "{}. {:.3}  {}{}  (vector {:.3}, text {text})",
            rank + 1,
            hit.score,
            hit.title,
            hit.heading.as_deref().map(|h| format!(" › {h}")).unwrap_or_default(),
            hit.vector_score
        );
        if let Some(url) = &hit.url {
            println!("   {url}");
        }
        let snippet: String = hit.text.chars().take(160).collect();
        println!("   {}", snippet.replace('\n', " "));
    }
    Ok(())
}

pub async fn rebuild_rollups(settings: Settings, json: bool) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let rebuilt = engine::metrics::rebuild(&lore).await.map_err(fail)?;
    if json {
        print_json(&rebuilt);
    } else {
        println!("Rebuilt the rollups from {} answer runs ({} rows).", rebuilt.runs, rebuilt.rows);
    }
    Ok(())
}

pub async fn ask(settings: Settings, question: &str, json: bool) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let ask = engine::answer::Ask {
        question: question.to_owned(),
        surface: engine::answer::Surface::Cli,
        key_id: None,
    };
    let answered = engine::answer::answer(&lore, ask).await;
    // The run and the cached answer are written behind the answer.
    lore.flush_writes().await;
    let answered = app::wire::AnswerResponse::from(answered.map_err(fail)?);
    if json {
        print_json(&answered);
        return Ok(());
    }
    println!("{}", answered.answer);
    if !answered.citations.is_empty() {
        println!();
        for c in &answered.citations {
            println!(
                "[{}] {}{}",
                c.index,
                c.title,
                c.url.as_deref().map(|u| format!(" <{u}>")).unwrap_or_default()
            );
        }
    }
    let outcome = if answered.refused { "refused" } else { "answered" };
    println!(
        "\n{outcome} · cache {} · profile version {} · {} · trace {}",
        answered.cache.status,
        answered.profile_version,
        answered.trace.model.as_deref().unwrap_or("no model call"),
        answered.trace.id
    );
    for stage in &answered.trace.stages {
        println!(
            "  {:<15} {:<11} {:>8.1} ms  {}",
            stage.stage, stage.decision, stage.duration_ms, stage.reason
        );
    }
    Ok(())
}
