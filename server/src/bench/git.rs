//! `lore bench index --git`: a git source at scale, in this process on a
//! fresh data directory (SQLite, LanceDB, the local embedding model, the
//! machine's `git`).
//!
//! 1. A repository of `files` Markdown files (a title and three sections of
//!    the benchmark's sentences each) is made with `git` in one commit.
//! 2. The embedder alone embeds the very texts the sync embeds (each file
//!    extracted and chunked as ingestion does), 16 files' chunks a call as
//!    the sync makes them, before the sync and again after it: the faster
//!    files/s is the ceiling.
//! 3. The source's first sync runs as the worker runs it: files/s to the
//!    last file, then the closing optimisation of the chunk store.
//! 4. Lore serves on loopback with its indexing worker, as `lore serve`;
//!    `commits` times, one file gets a sentence no other file has and is
//!    committed, the source's webhook is called over HTTP as GitLab calls
//!    it (`X-Gitlab-Token`), and the time from the commit to retrieval
//!    (`engine::search::traced_retrieval`, as `/retrieve` runs it) finding
//!    the sentence is measured.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use engine::{Lore, Settings};
use serde_json::json;

use super::{chunk_texts, millis, percentile, tempfile_dir, write_record, Serving};

/// Files read and indexed together by a sync (`engine::ingest::git`).
const BATCH: usize = 16;

/// How long one commit may take to become retrievable before the run gives up.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable the benchmark's source reads its webhook secret from.
const SECRET_ENV: &str = "LORE_BENCH_GIT_WEBHOOK_SECRET";

pub struct GitOptions {
    pub files: usize,
    pub commits: usize,
    pub out: Option<std::path::PathBuf>,
}

/// File `i`: a title and three sections, about 300 tokens in all.
fn page(i: usize) -> String {
    let parts = chunk_texts(i * 3 + 3);
    format!(
        "---\ntitle: Guide {i}\n---\n# Guide {i}\n\n## Setup\n\n{}\n\n## Operation\n\n{}\n\n## Troubleshooting\n\n{}\n",
        parts[i * 3],
        parts[i * 3 + 1],
        parts[i * 3 + 2]
    )
}

/// The sentence commit `k` adds: a word no file has (letters only) in a
/// sentence whose other words change with `k` too. With one sentence that
/// differed only by a number, the 16th commit's was not found within a
/// minute: the 15 before it, alike but for that number, filled the top 5.
fn marker(k: usize) -> (String, String) {
    const THINGS: [&str; 10] =
        ["valve", "gasket", "relay", "filter", "bearing", "fuse", "hinge", "sensor", "spindle", "latch"];
    const PLACES: [&str; 10] = [
        "pump room",
        "north dock",
        "cold store",
        "boiler house",
        "clean lab",
        "loading bay",
        "roof plant",
        "server hall",
        "paint shop",
        "archive",
    ];
    let letters: String = k.to_string().bytes().map(|digit| char::from(b'a' + (digit - b'0'))).collect();
    let word = format!("quillback{letters}");
    let sentence = format!(
        "In the {}, the {word} {} is replaced every {} weeks.",
        PLACES[k % 10],
        THINGS[(k / 10 + k) % 10],
        k + 3
    );
    (word, sentence)
}

fn path_of(i: usize) -> String {
    format!("docs/section-{}/guide-{i}.md", i % 20)
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs([
            ("GIT_AUTHOR_NAME", "Bench"),
            ("GIT_AUTHOR_EMAIL", "bench@lore.invalid"),
            ("GIT_COMMITTER_NAME", "Bench"),
            ("GIT_COMMITTER_EMAIL", "bench@lore.invalid"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ])
        .output()
        .context("git could not be run")?;
    anyhow::ensure!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

pub async fn git_source(mut settings: Settings, options: GitOptions) -> anyhow::Result<()> {
    let data = tempfile_dir()?;
    let repo = data.join("repository");
    std::fs::create_dir_all(&repo)?;
    settings.data_dir = data.join("lore");
    settings.vectors.uri = None;
    settings.database.url = None;
    let files = options.files;
    anyhow::ensure!(files > 0, "--files must be at least 1");

    println!("Writing a repository of {files} Markdown files …");
    for i in 0..files {
        let file = repo.join(path_of(i));
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(file, page(i))?;
    }
    git(&repo, &["init", "--quiet", "-b", "main"])?;
    git(&repo, &["add", "--all"])?;
    git(&repo, &["commit", "--quiet", "-m", "Guides"])?;

    // Read by the source from the environment, as an operator would set it.
    let secret = format!("bench-{}", uuid::Uuid::new_v4());
    std::env::set_var(SECRET_ENV, &secret);
    let lore = Lore::open(settings).await?;
    crate::commands::models::ensure(&lore, false).await?;

    // The ceiling: the embedder alone on the texts the sync embeds, in the
    // sync's batches, before and after the sync; the faster counts.
    let embedder = lore.embedder().await?;
    let chunking = engine::chunk::ChunkingParams::default();
    let mut batches: Vec<Vec<String>> = Vec::new();
    for part in (0..files).collect::<Vec<_>>().chunks(BATCH) {
        let mut texts = Vec::new();
        for &i in part {
            let extracted =
                engine::extract::extract(engine::extract::Format::Markdown, page(i).as_bytes(), &path_of(i))?;
            let chunks = engine::chunk::chunk_sections(&extracted.sections, chunking, embedder.as_ref());
            texts.extend(chunks.into_iter().map(|chunk| chunk.embed_text));
        }
        batches.push(texts);
    }
    let chunks: usize = batches.iter().map(Vec::len).sum();
    embedder.embed(&batches[0][..4.min(batches[0].len())]).await?; // warm-up
    let embed_alone = || async {
        let started = Instant::now();
        for texts in &batches {
            embedder.embed(texts).await?;
        }
        let rate = files as f64 / started.elapsed().as_secs_f64();
        println!("The embedder alone: {rate:.1} files/s ({chunks} chunks of the files' texts)");
        anyhow::Ok(rate)
    };
    let before = embed_alone().await?;

    let added = engine::ingest::lifecycle::add_source(
        &lore,
        &engine::audit::Actor::System,
        engine::sources::NewSource {
            name: "Guides".into(),
            kind: "git".into(),
            config: Some(json!({"url": repo.display().to_string(), "webhook_secret_env": SECRET_ENV})),
            volatility: None,
            audience: None,
        },
        "bench",
    )
    .await?;
    let source_id = added.source.id.clone();
    let first = added.first_sync.context("a git source's first sync is queued at once")?;
    println!("Running the first sync of {files} files …");
    let (indexing_s, total_s) = super::first_sync(&lore, &first, files).await?;
    let sync_rate = files as f64 / indexing_s;
    let ceiling = before.max(embed_alone().await?);
    let ratio = sync_rate / ceiling;
    println!(
        "First sync: {sync_rate:.1} files/s ({indexing_s:.1} s to the last file), {:.1} s more to optimise the chunk store; {ratio:.2}× the embedder alone (goal ≥ 0.80: {})",
        total_s - indexing_s,
        if ratio >= 0.8 { "met" } else { "NOT met" }
    );

    // One-file commits, each announced by the webhook, with the worker
    // running and Lore serving as `lore serve` does.
    let serving = Serving::start(&lore).await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(engine::ingest::jobs::work(lore.corpus().clone(), stopped));
    let client = reqwest::Client::new();
    let hook = format!("{}/admin/sources/{source_id}/sync", serving.base);
    let mut latencies = Vec::new();
    println!(
        "Committing {} one-file changes, each announced by the webhook, until retrieval finds them …",
        options.commits
    );
    for k in 0..options.commits {
        let i = (k * 7_919) % files;
        let (word, sentence) = marker(k);
        let changed = format!("{}\n{sentence}\n", page(i));
        std::fs::write(repo.join(path_of(i)), changed)?;
        git(&repo, &["commit", "--quiet", "-am", &format!("Change {k}")])?;
        let committed = Instant::now();
        let response = client.post(&hook).header("x-gitlab-token", &secret).body("{}").send().await?;
        anyhow::ensure!(response.status().as_u16() == 202, "the webhook answered {}", response.status());
        loop {
            let found = engine::search::traced_retrieval(
                &lore,
                &engine::sources::Reader::Everything,
                &sentence,
                Some(5),
            )
            .await?;
            if found.found.results.iter().any(|hit| hit.chunk.text.contains(&word)) {
                latencies.push(millis(committed.elapsed()));
                break;
            }
            anyhow::ensure!(
                committed.elapsed() < COMMIT_TIMEOUT,
                "commit {k} was not retrievable within a minute"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The next commit waits for this one's run to end.
        while engine::ingest::jobs::recent(&lore, Some(&source_id), 1)
            .await?
            .first()
            .is_some_and(|job| ["queued", "running"].contains(&job.status.as_str()))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let _ = stop.send(true);
    let _ = worker.await;
    serving.stop().await;
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (percentile(&latencies, 50.0), percentile(&latencies, 95.0));
    println!(
        "Commit to retrievable through the webhook: p50 {p50:.0} ms, p95 {p95:.0} ms over {} commits (goal p95 ≤ 5000 ms: {})",
        latencies.len(),
        if p95 <= 5000.0 { "met" } else { "NOT met" }
    );

    drop(lore);
    let _ = std::fs::remove_dir_all(&data);
    let record = json!({
        "benchmark": "index --git",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": super::build_profile(),
        "database": "sqlite",
        "files": files,
        "chunks": chunks,
        "embedder_alone_files_per_s": ceiling,
        "first_sync": {
            "files_per_s": sync_rate,
            "seconds_to_last_file": indexing_s,
            "seconds_total": total_s,
            "over_embedder_alone": ratio,
        },
        "commit_to_retrievable_ms": {"p50": p50, "p95": p95, "commits": latencies.len()},
        "goals": {"first_sync_over_embedder_alone": 0.8, "commit_to_retrievable_p95_ms": 5000},
    });
    let path = write_record(&options.out, "index-git.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}
