//! `lore bench index --table`: the table source at scale, in this process
//! on a fresh data directory (SQLite, LanceDB, the local embedding model).
//!
//! 1. A table of `rows` products is written through the operations API.
//! 2. The embedder alone embeds a sample of the very texts the source's
//!    documents embed (a row's description: no heading, one chunk a row),
//!    one call per [`BATCH`] texts as the sync makes them, before the sync
//!    and again after it: the faster rows/s is the ceiling.
//! 3. The source's first sync runs as the worker runs it: rows/s to the
//!    last row written, then the closing optimisation of the chunk store
//!    (compaction, and the vector index once the table is large enough),
//!    each timed on its own.
//! 4. With the indexing worker running as in `lore serve`, `updates` rows are
//!    rewritten one at a time with a phrase no other row has, and the time
//!    from the committed update to retrieval (`engine::search::traced_retrieval`,
//!    as `/retrieve` runs it) finding the new text is measured.

use std::time::{Duration, Instant};

use anyhow::Context;
use engine::appdb::Principal;
use engine::{Lore, Settings};
use serde_json::{json, Value};

use super::{millis, percentile, tempfile_dir, write_record, SENTENCES};

/// Rows read and indexed together by a sync (`engine::ingest::table`).
const BATCH: usize = 200;

/// Texts the embedder alone embeds for the ceiling: a sample of the rows,
/// since their texts cycle through the same lengths.
const CEILING_SAMPLE: usize = 5_000;

/// How long one update may take to become retrievable before the run gives up.
const UPDATE_TIMEOUT: Duration = Duration::from_secs(60);

pub struct TableOptions {
    pub rows: usize,
    pub updates: usize,
    pub out: Option<std::path::PathBuf>,
}

/// Row `i`'s description: one of the benchmark's sentences, named after
/// the product so no two rows have the same text (about 22 tokens).
fn description(i: usize) -> String {
    format!("Product {i}: {}", SENTENCES[i % SENTENCES.len()])
}

async fn operation(lore: &Lore, body: Value) -> anyhow::Result<()> {
    let admin = Principal::Admin { account_id: "bench".into() };
    engine::operations::dispatch(lore, &admin, body).await.context("an operation of the benchmark failed")?;
    Ok(())
}

/// Waits until the source's latest run has ended; how long it ran (ms).
async fn last_run(lore: &Lore, source_id: &str) -> anyhow::Result<Option<f64>> {
    loop {
        match engine::ingest::jobs::recent(lore, Some(source_id), 1).await?.pop() {
            Some(job) if ["queued", "running"].contains(&job.status.as_str()) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Some(job) => {
                return Ok(job
                    .started_at
                    .zip(job.finished_at)
                    .map(|(started, finished)| (finished - started).num_milliseconds() as f64))
            }
            None => return Ok(None),
        }
    }
}

pub async fn table(mut settings: Settings, options: TableOptions) -> anyhow::Result<()> {
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    settings.vectors.uri = None;
    settings.database.url = None;
    let lore = Lore::open(settings).await?;
    crate::commands::models::ensure(&lore, false).await?;
    let rows = options.rows;

    println!("Writing {rows} rows to data.product …");
    operation(&lore, json!({"operation": "create_table", "table": "product", "primary_key": "id"})).await?;
    let ids: Vec<usize> = (0..rows).collect();
    for part in ids.chunks(1_000) {
        let records: Vec<Value> = part
            .iter()
            .map(|&i| json!({"id": i, "name": format!("Product {i}"), "description": description(i)}))
            .collect();
        operation(&lore, json!({"operation": "insert", "table": "product", "records": records})).await?;
    }

    // The ceiling: the embedder alone, on the same texts, in the same
    // batches, before and after the sync; the faster of the two counts.
    let embedder = lore.embedder().await?;
    let sample: Vec<String> = (0..rows.min(CEILING_SAMPLE)).map(description).collect();
    embedder.embed(&sample[..8.min(sample.len())]).await?; // warm-up
    let tokens: usize = sample.iter().map(|t| embedder.count_tokens(t) + 2).sum();
    let embed_alone = || async {
        let started = Instant::now();
        for part in sample.chunks(BATCH) {
            embedder.embed(part).await?;
        }
        let rate = sample.len() as f64 / started.elapsed().as_secs_f64();
        println!(
            "The embedder alone: {rate:.1} rows/s ({:.0} tokens/s) over {} of the rows' texts",
            rate * tokens as f64 / sample.len() as f64,
            sample.len()
        );
        anyhow::Ok(rate)
    };
    let before = embed_alone().await?;

    // The first sync, as the worker runs it.
    let added = engine::ingest::lifecycle::add_source(
        &lore,
        &engine::audit::Actor::System,
        engine::sources::NewSource {
            name: "Products".into(),
            kind: "table".into(),
            config: Some(json!({"table": "product", "title": "name", "text": ["description"]})),
            volatility: None,
            audience: None,
        },
        "bench",
    )
    .await?;
    let source_id = added.source.id.clone();
    let first = added.first_sync.context("a table source's first sync is queued at once")?;
    println!("Running the first sync of {rows} rows …");
    let (indexing_s, total_s) = super::first_sync(&lore, &first, rows).await?;
    let sync_rate = rows as f64 / indexing_s;
    let ceiling = before.max(embed_alone().await?);
    let ratio = sync_rate / ceiling;
    println!(
        "First sync: {sync_rate:.1} rows/s ({indexing_s:.1} s to the last row), {:.1} s more to optimise the chunk store; {:.2}× the embedder alone (goal ≥ 0.80: {})",
        total_s - indexing_s,
        ratio,
        if ratio >= 0.8 { "met" } else { "NOT met" }
    );

    // Update to retrievable, with the worker running as in `lore serve`.
    // The table's inserts left it noted: the worker's first round runs the
    // source once (reading only rows written since the first sync began),
    // and the updates start after it.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(engine::ingest::jobs::work(lore.corpus().clone(), stopped));
    tokio::time::sleep(Duration::from_secs(1)).await;
    last_run(&lore, &source_id).await?;
    let mut latencies = Vec::new();
    // How long each update's run took, start to end (its closing
    // optimisation of the chunk store included).
    let mut runs = Vec::new();
    println!("Updating {} rows one at a time, each until retrieval finds its new text …", options.updates);
    for k in 0..options.updates {
        let id = (k * 7_919) % rows;
        let word = format!("zorblax{k}");
        let text = format!("Product {id} now ships with the {word} gearbox, tested in cold harbours.");
        operation(
            &lore,
            json!({"operation": "update", "table": "product", "records": [{"id": id, "description": text}]}),
        )
        .await?;
        let committed = Instant::now();
        loop {
            let found = engine::search::traced_retrieval(
                &lore,
                &engine::sources::Reader::Everything,
                &format!("{word} gearbox"),
                Some(5),
            )
            .await?;
            if found.found.results.iter().any(|hit| hit.chunk.text.contains(&word)) {
                latencies.push(millis(committed.elapsed()));
                break;
            }
            anyhow::ensure!(
                committed.elapsed() < UPDATE_TIMEOUT,
                "update {k} was not retrievable within a minute"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The next update starts once this one's run has ended.
        runs.extend(last_run(&lore, &source_id).await?);
    }
    runs.sort_by(f64::total_cmp);
    let _ = stop.send(true);
    let _ = worker.await;
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (percentile(&latencies, 50.0), percentile(&latencies, 95.0));
    println!(
        "Update to retrievable: p50 {p50:.0} ms, p95 {p95:.0} ms over {} updates (goal p95 ≤ 2000 ms: {})",
        latencies.len(),
        if p95 <= 2000.0 { "met" } else { "NOT met" }
    );
    let (run_p50, run_p95) = (percentile(&runs, 50.0), percentile(&runs, 95.0));
    println!("Each update's run, start to end: p50 {run_p50:.0} ms, p95 {run_p95:.0} ms");

    drop(lore);
    let _ = std::fs::remove_dir_all(&data);
    let record = json!({
        "benchmark": "index --table",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": super::build_profile(),
        "database": "sqlite",
        "rows": rows,
        "embedder_alone_rows_per_s": ceiling,
        "embedder_sample_rows": sample.len(),
        "first_sync": {
            "rows_per_s": sync_rate,
            "seconds_to_last_row": indexing_s,
            "seconds_total": total_s,
            "over_embedder_alone": ratio,
        },
        "update_to_retrievable_ms": {"p50": p50, "p95": p95, "updates": latencies.len()},
        "update_run_ms": {"p50": run_p50, "p95": run_p95},
        "goals": {"first_sync_over_embedder_alone": 0.8, "update_to_retrievable_p95_ms": 2000},
    });
    let path = write_record(&options.out, "index-table.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}
