//! `lore ingest PATH-OR-URL`: a git repository followed from its URL (a
//! `git://` or `ssh://` URL, or one ending in `.git`), a website crawled
//! from its URL, or files (a directory's, recursively) received into an
//! upload source, then indexed here.

use std::path::Path;

use anyhow::Context;
use engine::ingest::{lifecycle, upload};
use engine::{Lore, Settings};

use super::jobs::run_job;
use super::output::{fail, invalid};
use super::{open, ACTOR};

pub async fn run(settings: Settings, target: &str, name: Option<String>, json: bool) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    super::models::ensure(&lore, json).await?;
    let is_url = target.starts_with("http://") || target.starts_with("https://");
    let queued = if lifecycle::is_repository_address(target) {
        let found = lifecycle::repository_at(&lore, &ACTOR, target, name, "cli").await.map_err(fail)?;
        match found.first_sync {
            Some(job) => job,
            None => lifecycle::start_run(&lore, Some(&found.source.id), false, "cli").await.map_err(fail)?,
        }
    } else if is_url {
        let found = lifecycle::website_at(&lore, &ACTOR, target, name, "cli").await.map_err(fail)?;
        // A new site's first sync is queued already: run that one (a second
        // enqueue could make a second job if a worker claimed the first).
        match found.first_sync {
            Some(job) => job,
            None => lifecycle::start_run(&lore, Some(&found.source.id), false, "cli").await.map_err(fail)?,
        }
    } else {
        let source_id = upload_files(&lore, target, name, json).await?;
        lifecycle::start_run(&lore, Some(&source_id), false, "cli").await.map_err(fail)?
    };
    run_job(&lore, &queued.id, json).await
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
