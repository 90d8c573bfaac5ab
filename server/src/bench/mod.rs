//! `lore bench embed` and `lore bench index`: measurements that print a table
//! and write a JSON record. They are not tests: nothing here passes or fails
//! on a number.
//!
//! - embed: tokens/s and chunks/s over a fixed set of mixed-length
//!   documentation chunks, and single-query latency, for Lore's candle
//!   embedder and, in the same run and on the same texts, its peers
//!   (sentence-transformers on PyTorch, ONNX Runtime on an int8 export) run by
//!   `scripts/bench/embed_peers.py`.
//! - index: pages/s for a sitemap sync of a generated site served on
//!   127.0.0.1, then retrieval p50/p95 at 10k and 100k chunks, flat and with
//!   the vector index.
//! - index --table ([`table`]): a table source's first sync against the
//!   embedder alone on the same texts, and a row's update to retrievable.
//! - answer ([`answer`]): the public API over HTTP on loopback: /retrieve,
//!   /answer's own overhead, cache hits, throughput under concurrent clients.
//! - dashboard ([`dashboard`]): the Dashboard's aggregate time over the
//!   rollups of a million answer runs.
//! - operations ([`operations`]): the operations API and REST on SQLite and
//!   PostgreSQL, beside HarperDB 4.7 in the same run.
//! - quality ([`quality`]): wrong answers served and right answers lost
//!   by the grounding check, over SQLite's documentation and a real model.
//! - rerank ([`rerank`]): retrieval recall with and without a reranker,
//!   over all of SQLite's documentation.
//! - retrieval ([`retrieval`]): `/retrieve`, recall and index upkeep from
//!   10,000 to a million chunks, beside FAISS, hnswlib and LanceDB's
//!   Python client on the same vectors.
//! - mcp ([`mcp`]): the tool server against the same calls made directly,
//!   `tools/list` with many tables, and push channels of many sessions.

mod answer;
mod dashboard;
mod generate;
mod git;
mod mcp;
mod operations;
mod quality;
mod replicas;
mod rerank;
mod retrieval;
mod scoped;
mod table;
pub use answer::{answer, AnswerOptions};
pub use dashboard::dashboard;
pub use generate::{generate, GenerateOptions};
pub use git::{git_source, GitOptions};
pub use mcp::{mcp, McpOptions};
pub use operations::{operations, OperationsOptions};
pub use quality::{quality, QualityOptions, QualitySet};
pub use replicas::{replicas, ReplicasOptions};
pub use rerank::{rerank, RerankOptions};
pub use retrieval::{retrieval, RetrievalOptions};
pub use table::{table, TableOptions};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use engine::embed::bert::Precision;
use engine::embed::local::LocalEmbedder;
use engine::embed::Embedder;
use engine::index::lance::LanceChunkStore;
use engine::index::{ChunkRow, ChunkStore, Scope};
use engine::retrieve::{hybrid, RetrievalSettings};
use engine::{Lore, Settings};
use serde_json::json;

const SENTENCES: [&str; 24] = [
    "Run the installer as an administrator and keep the default data directory unless your disks say otherwise.",
    "Single sign-on works with any OpenID Connect provider that supports the authorization code flow with PKCE.",
    "Backups are taken every night at two o'clock and kept for fourteen days.",
    "To restore, stop the service, copy the snapshot over the data directory and start it again.",
    "The retrieval cutoff drops passages whose fused score is below the threshold.",
    "Widget keys carry an allowlist of origins and a rate limit per minute.",
    "Rotate a provider key by pasting the new value; a blank field keeps the stored key.",
    "Each answer cites the passages it used, numbered in the order they were given to the model.",
    "If nothing retrievable answers the question, Lore refuses and records a content gap.",
    "Set the volatility of a source to high when its pages change several times a day.",
    "The dashboard shows the cache hit rate, p95 latency and estimated spend per day.",
    "Uploads accept Markdown, plain text, HTML and PDF files up to fifty megabytes each.",
    "The crawler respects robots.txt, follows redirects within the host and drops duplicate pages.",
    "Chunk size and overlap are measured in tokens of the embedding model.",
    "When the embedding model changes, retrieval fails closed until a full reindex completes.",
    "Prompt versions are immutable; restoring one activates its whole snapshot at once.",
    "Invoices are issued on the first day of each month and can be downloaded as PDF.",
    "Annual plans can be refunded within thirty days of purchase.",
    "Expose port 3000 and mount the data directory as a volume when running the container.",
    "Use PostgreSQL instead of SQLite when more than one replica serves the same cluster.",
    "The semantic cache stores the question embedding, the answer and the hashes of cited chunks.",
    "An access key is shown once at creation; only its hash and a short prefix are stored.",
    "Escalation sends ungrounded answers to a stronger model when one is bound.",
    "Health checks answer on /healthz and readiness on /readyz.",
];

/// `n` chunks of 1 to 14 sentences (about 20 to 250 tokens), deterministic.
pub fn chunk_texts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let sentences = 1 + (i * 7 + i / 3) % 14;
            (0..sentences)
                .map(|j| SENTENCES[(i * 5 + j * 11) % SENTENCES.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Short questions about `SENTENCES`, as users type them.
const QUERIES: [&str; 10] = [
    "how do I restore a backup",
    "which files can I upload",
    "what happens when the embedding model changes",
    "how long are backups kept",
    "rotate provider key",
    "widget origin allowlist",
    "refund annual plan",
    "run in docker",
    "what is a content gap",
    "postgres or sqlite",
];

fn queries() -> Vec<String> {
    QUERIES.iter().cycle().take(50).map(|s| (*s).to_owned()).collect()
}

fn percentile(sorted_ms: &[f64], q: f64) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    let rank = ((q / 100.0) * (sorted_ms.len() - 1) as f64).round() as usize;
    sorted_ms[rank.min(sorted_ms.len() - 1)]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Opens Lore on a scratch data directory (the model files in place), runs
/// `measure` on it, removes the directory and writes the record `name` (to
/// `out`, see [`write_record`]).
async fn on_scratch_data<Measured>(
    mut settings: Settings,
    out: &Option<PathBuf>,
    name: &str,
    measure: impl FnOnce(Lore) -> Measured,
) -> anyhow::Result<()>
where
    Measured: std::future::Future<Output = anyhow::Result<serde_json::Value>>,
{
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    let lore = Lore::open(settings).await?;
    crate::commands::models::ensure(&lore, false).await?;
    let measured = measure(lore.clone()).await;
    lore.flush_writes().await;
    drop(lore);
    let _ = std::fs::remove_dir_all(&data);
    let record = measured?;
    let path = write_record(out, name, &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

fn write_record(
    out: &Option<PathBuf>,
    default_name: &str,
    record: &serde_json::Value,
) -> anyhow::Result<PathBuf> {
    let path = out.clone().unwrap_or_else(|| PathBuf::from("bench-results").join(default_name));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(record)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The on-node embedding model, its files fetched first when this machine
/// lacks them (with a progress bar).
async fn load_embedder(settings: &Settings) -> anyhow::Result<LocalEmbedder> {
    let found = crate::commands::models::embedding_files(settings).await?;
    Ok(LocalEmbedder::load(&found.dir, &settings.models.embedding, settings.models.precisions(), 1)?)
}

/// Where the peers come from (`scripts/bench-embed` fills these in).
pub struct Peers {
    pub python: PathBuf,
    pub script: PathBuf,
    pub onnx: PathBuf,
}

pub async fn embed(
    settings: Settings,
    count: usize,
    peers: Option<Peers>,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    let texts = chunk_texts(count);
    let queries = queries();
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    let mut tokens = 0;
    for precision in [Precision::F32, Precision::Q8] {
        let mut settings = settings.clone();
        settings.models.embedding_precision = precision;
        settings.models.query_precision = precision;
        let embedder = load_embedder(&settings).await?;
        tokens = texts.iter().map(|t| (embedder.count_tokens(t) + 2).min(embedder.max_tokens())).sum();
        println!("Embedding {} chunks ({tokens} tokens) with {} weights …", texts.len(), precision.key());
        embedder.embed(&texts[..8.min(texts.len())]).await?; // warm-up
        let started = Instant::now();
        let vectors = embedder.embed(&texts).await?;
        let elapsed = started.elapsed().as_secs_f64();
        let mut latencies = Vec::new();
        for query in &queries {
            let t = Instant::now();
            embedder.embed_query(query).await?;
            latencies.push(millis(t.elapsed()));
        }
        latencies.sort_by(f64::total_cmp);
        rows.push(json!({
            "name": match precision {
                Precision::F32 => "Lore (f32 weights, candle's GEMM, CPU)",
                Precision::Q8 => "Lore (8-bit weights, Lore's integer GEMM, CPU)",
            },
            "precision": precision.key(),
            "tokens_per_s": tokens as f64 / elapsed,
            "chunks_per_s": texts.len() as f64 / elapsed,
            "query_p50_ms": percentile(&latencies, 50.0),
            "query_p95_ms": percentile(&latencies, 95.0),
            "min_cosine_to_reference": serde_json::Value::Null,
        }));
        runs.push(vectors);
    }
    let lore_rows = rows.len();

    if let Some(peers) = &peers {
        println!("Running the peers (sentence-transformers, ONNX Runtime int8) on the same texts …");
        let input = tempfile_path("lore-bench-embed.json");
        std::fs::write(
            &input,
            serde_json::to_vec(&json!({"texts": texts, "queries": queries, "lore_runs": runs}))?,
        )?;
        let found = crate::commands::models::embedding_files(&settings).await?;
        let output = tokio::process::Command::new(&peers.python)
            .arg(&peers.script)
            .arg("--input")
            .arg(&input)
            .arg("--model-dir")
            .arg(&found.dir)
            .arg("--onnx")
            .arg(&peers.onnx)
            .args(["--threads", "2"])
            .output()
            .await
            .context("running the peers' script")?;
        let _ = std::fs::remove_file(&input);
        if !output.status.success() {
            anyhow::bail!("the peers' script failed:\n{}", String::from_utf8_lossy(&output.stderr));
        }
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).context("reading the peers' report")?;
        if let Some(cosines) = report["lore_min_cosines_to_reference"].as_array() {
            for (row, cosine) in rows.iter_mut().zip(cosines) {
                row["min_cosine_to_reference"] = cosine.clone();
            }
        }
        if let Some(list) = report["peers"].as_array() {
            rows.extend(list.iter().cloned());
        }
    } else {
        println!("(No peers: run `scripts/bench-embed` to measure sentence-transformers and ONNX Runtime beside Lore.)");
    }

    println!();
    println!(
        "{:<58} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "embedder (2 threads)", "tokens/s", "chunks/s", "p50 ms", "p95 ms", "min cos"
    );
    for row in &rows {
        let cosine =
            row["min_cosine_to_reference"].as_f64().map(|c| format!("{c:.5}")).unwrap_or_else(|| "-".into());
        println!(
            "{:<58} {:>10.0} {:>9.1} {:>9.1} {:>9.1} {:>10}",
            row["name"].as_str().unwrap_or_default(),
            row["tokens_per_s"].as_f64().unwrap_or_default(),
            row["chunks_per_s"].as_f64().unwrap_or_default(),
            row["query_p50_ms"].as_f64().unwrap_or_default(),
            row["query_p95_ms"].as_f64().unwrap_or_default(),
            cosine
        );
    }
    // The goal: Lore's tokens/s at least 1.25× ONNX Runtime int8's, from a
    // configuration whose vectors stay within cosine 0.99 of the reference.
    let onnx = rows
        .iter()
        .find(|r| r["name"].as_str().is_some_and(|n| n.starts_with("ONNX")))
        .and_then(|onnx| onnx["tokens_per_s"].as_f64());
    let mut ratios = serde_json::Map::new();
    if let Some(onnx) = onnx {
        println!();
        for row in &rows[..lore_rows] {
            let ratio = row["tokens_per_s"].as_f64().unwrap_or_default() / onnx;
            let faithful = row["min_cosine_to_reference"].as_f64().is_some_and(|c| c >= 0.99);
            println!(
                "{} / ONNX Runtime int8 tokens/s: {ratio:.2}× (goal: ≥ 1.25× at cosine ≥ 0.99: {})",
                row["name"].as_str().unwrap_or_default(),
                if ratio >= 1.25 && faithful { "met" } else { "NOT met" }
            );
            ratios.insert(row["precision"].as_str().unwrap_or_default().to_owned(), json!(ratio));
        }
    }
    let record = json!({
        "benchmark": "embed",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": build_profile(),
        "chunks": texts.len(),
        "tokens": tokens,
        "threads": 2,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "results": rows,
        "lore_over_onnx_int8_tokens_per_s": ratios,
    });
    let path = write_record(&out, "embed.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

/// The build the numbers come from: a dev build runs its dependencies
/// (candle, tokenizers, LanceDB, Arrow) at opt-level 2, which is where most
/// of the time goes, and Lore's own crates unoptimised unless the build
/// says otherwise (`--config profile.dev.package.<crate>.opt-level=2`; the
/// level is this crate's, set by `build.rs`).
fn build_profile() -> String {
    if cfg!(debug_assertions) {
        format!("dev (Lore's crates at opt-level {}, dependencies at opt-level 2)", env!("LORE_OPT_LEVEL"))
    } else {
        "release".to_owned()
    }
}

/// A memory figure of this process from `/proc/self/status`, in KiB
/// (`field` with its colon: `VmRSS:` now, `VmHWM:` at its peak); 0 where
/// there is none.
fn process_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status").map_or(0.0, |status| kib_of(&status, field))
}

/// A `kB` figure of a `/proc/<pid>/status` text (`VmRSS:`, `VmHWM:`).
fn kib_of(status: &str, field: &str) -> f64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}

fn tempfile_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{}-{name}", std::process::id()))
}

/// Hybrid retrieval over a store of `rows` chunks (real text and vectors
/// for the first `base.len()` rows, then copies with jittered vectors),
/// searched flat and then with the vector index.
struct AtSize {
    load_s: f64,
    flat: (f64, f64),
    index_s: f64,
    indexed: (f64, f64),
    /// Of the flat search's nearest chunks, the share the indexed search
    /// finds too (mean over the queries).
    recall: f64,
}

/// How many nearest chunks recall compares: what retrieval asks each mode
/// for with the default settings (top 5, 4 candidates per result).
const RECALL_AT: usize = 20;

async fn retrieval_at(
    embedder: &LocalEmbedder,
    base: &[(String, Vec<f32>)],
    rows: usize,
) -> anyhow::Result<AtSize> {
    let dir = tempfile_dir()?;
    let store = LanceChunkStore::open(
        &engine::index::lance::Location::new(dir.join("lancedb").display().to_string()),
        embedder.dimensions(),
    )
    .await?;
    let started = Instant::now();
    for document in synthetic_documents(base, "bench", 0..rows) {
        store.append(document).await?;
    }
    store.compact().await?;
    let load_s = started.elapsed().as_secs_f64();
    let scope = Scope { sources: vec!["bench".to_owned()], every_source: true };
    let vectors = embedder.embed(&QUERIES.map(str::to_owned)).await?;

    let flat = hybrid_latency(&store, embedder, &scope).await?;
    let exact = nearest_ids(&store, &vectors, &scope).await?;
    let started = Instant::now();
    store.build_vector_index().await?;
    let index_s = started.elapsed().as_secs_f64();
    let indexed = hybrid_latency(&store, embedder, &scope).await?;
    let approximate = nearest_ids(&store, &vectors, &scope).await?;
    let recall = exact
        .iter()
        .zip(&approximate)
        .map(|(exact, found)| {
            let kept = exact.iter().filter(|id| found.contains(id)).count();
            kept as f64 / exact.len().max(1) as f64
        })
        .sum::<f64>()
        / exact.len().max(1) as f64;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(AtSize { load_s, flat, index_s, indexed, recall })
}

/// p50 and p95 of hybrid retrieval (query embedding included) over 30 queries.
async fn hybrid_latency(
    store: &LanceChunkStore,
    embedder: &LocalEmbedder,
    scope: &Scope,
) -> anyhow::Result<(f64, f64)> {
    let settings = RetrievalSettings::default();
    let mut latencies = Vec::new();
    for query in queries().iter().take(30) {
        let t = Instant::now();
        hybrid(store, embedder, query, scope, &settings).await?;
        latencies.push(millis(t.elapsed()));
    }
    latencies.sort_by(f64::total_cmp);
    Ok((percentile(&latencies, 50.0), percentile(&latencies, 95.0)))
}

/// The ids of the [`RECALL_AT`] nearest chunks to each vector.
async fn nearest_ids(
    store: &LanceChunkStore,
    vectors: &[Vec<f32>],
    scope: &Scope,
) -> anyhow::Result<Vec<Vec<String>>> {
    let mut found = Vec::new();
    for vector in vectors {
        let hits = store.vector_search(vector, scope, RECALL_AT).await?;
        found.push(hits.into_iter().map(|hit| hit.chunk.id).collect());
    }
    Ok(found)
}

/// Synthetic chunks to a document.
const PER_DOCUMENT: usize = 50;

/// Rows `range` of a synthetic corpus for `source_id`, 50 to a document:
/// real text and vectors for the first `base.len()` rows, then copies of them
/// with jittered vectors (so a large corpus costs no embedding time).
fn synthetic_documents(
    base: &[(String, Vec<f32>)],
    source_id: &str,
    range: std::ops::Range<usize>,
) -> Vec<Vec<ChunkRow>> {
    let rows: Vec<usize> = range.collect();
    rows.chunks(PER_DOCUMENT)
        .map(|numbers| {
            let document = numbers[0] / PER_DOCUMENT;
            numbers
                .iter()
                .map(|&i| {
                    let (text, vector) = &base[i % base.len()];
                    ChunkRow {
                        id: format!("synthetic{document}:{i}"),
                        source_id: source_id.to_owned(),
                        view: None,
                        document_id: format!("synthetic{document}"),
                        title: format!("Document {document}"),
                        url: None,
                        heading: None,
                        position: i as u32,
                        text: text.clone(),
                        content_hash: format!("synthetic-{i}"),
                        vector: if i < base.len() { vector.clone() } else { jitter(vector, i) },
                    }
                })
                .collect()
        })
        .collect()
}

/// Runs a source's first sync (`queued`) as the worker runs it, here:
/// the seconds until its `documents`-th document was done, and until the
/// run ended (its closing optimisation of the chunk store included).
async fn first_sync(
    lore: &Lore,
    queued: &engine::ingest::jobs::Job,
    documents: usize,
) -> anyhow::Result<(f64, f64)> {
    let owner = engine::ingest::jobs::owner_id("bench");
    let job = engine::ingest::jobs::claim(lore, &queued.id, &owner)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the first sync could not be claimed"))?;
    let last_done = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let observer: engine::ingest::jobs::Observer = {
        let last_done = last_done.clone();
        std::sync::Arc::new(move |progress: &engine::ingest::Progress| {
            if progress.done as usize >= documents {
                let mut seen = last_done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                seen.get_or_insert_with(Instant::now);
            }
        })
    };
    let started = Instant::now();
    let ended = engine::ingest::jobs::run(lore, job, &owner, Some(observer)).await?;
    let total_s = started.elapsed().as_secs_f64();
    anyhow::ensure!(ended.status == "succeeded", "the first sync {}: {:?}", ended.status, ended.message);
    let done_at = last_done.lock().map(|seen| *seen).unwrap_or_default();
    Ok((done_at.map(|at| (at - started).as_secs_f64()).unwrap_or(total_s), total_s))
}

/// Lore serving on a free loopback port in this process, until stopped.
struct Serving {
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Serving {
    async fn start(lore: &Lore) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::serve::serve(listener, lore.clone(), async move {
            let _ = stopped.await;
        }));
        Ok(Self { base, stop, server })
    }

    /// Ends the serving the graceful way and waits for it.
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}

/// Binds the generation role to the OpenAI-compatible `endpoint`
/// (`--llm-endpoint`) serving `model`.
async fn bind_generation(lore: &Lore, endpoint: &str, model: &str) -> anyhow::Result<()> {
    engine::profile::quick_add(
        lore,
        &engine::audit::Actor::System,
        engine::providers::QuickAdd {
            kind: "llama_cpp".into(),
            endpoint: Some(endpoint.to_owned()),
            model: model.to_owned(),
            ..engine::providers::QuickAdd::default()
        },
    )
    .await
    .context("binding the generation role to --llm-endpoint")?;
    Ok(())
}

/// The generation role bound to the embedded model (its default file).
async fn bind_embedded(lore: &Lore) -> anyhow::Result<()> {
    engine::profile::quick_add(
        lore,
        &engine::audit::Actor::System,
        engine::providers::QuickAdd { kind: "embedded".into(), ..engine::providers::QuickAdd::default() },
    )
    .await
    .context("binding the generation role to the embedded model")?;
    Ok(())
}

/// A secret key for `/answer` and `/retrieve`: its raw value.
async fn answer_key(lore: &Lore) -> anyhow::Result<String> {
    let (_, key) = engine::keys::create(
        lore,
        &engine::audit::Actor::System,
        engine::keys::NewKey {
            name: "bench".into(),
            kind: "secret".into(),
            scopes: vec!["answer".into(), "retrieve".into()],
            ..engine::keys::NewKey::default()
        },
    )
    .await?;
    Ok(key)
}

/// A website source of the generated site at `site`, crawled and indexed
/// in this process (that stamps the corpus fingerprint and makes the profile).
async fn index_site(lore: &Lore, site: &str, pages: usize) -> anyhow::Result<engine::sources::Source> {
    println!("Crawling and indexing {pages} generated pages …");
    let source = engine::sources::create(
        lore,
        &engine::audit::Actor::System,
        engine::sources::NewSource {
            name: "bench".into(),
            kind: "website".into(),
            config: Some(serde_json::json!({"start_url": format!("{site}/"), "max_pages": pages + 10})),
            volatility: None,
            audience: None,
        },
    )
    .await?;
    let owner = engine::ingest::jobs::owner_id("bench");
    let job =
        engine::ingest::lifecycle::start_claimed(lore, Some(&source.id), false, "bench", &owner).await?;
    let ended = engine::ingest::jobs::run(lore, job, &owner, None).await?;
    anyhow::ensure!(
        ended.status == "succeeded",
        "indexing the generated site {}: {:?}",
        ended.status,
        ended.message
    );
    Ok(source)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "lore-bench-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A deterministic small perturbation of a unit vector, renormalised.
fn jitter(vector: &[f32], seed: usize) -> Vec<f32> {
    let mut state = (seed as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut out: Vec<f32> = vector
        .iter()
        .map(|x| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let noise = ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5;
            x + noise * 0.08
        })
        .collect();
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    out.iter_mut().for_each(|x| *x /= norm);
    out
}

pub async fn index(
    mut settings: Settings,
    pages: usize,
    sizes: Vec<usize>,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    // 1. Crawl + index a generated site on loopback.
    let site = bench_site::start(pages).await?;
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    settings.vectors.uri = None;
    settings.database.url = None;
    settings.ingest.allow_private_addresses = true;
    let lore = engine::Lore::open(settings.clone()).await?;
    crate::commands::models::ensure(&lore, false).await?;
    let source = engine::sources::create(
        &lore,
        &engine::audit::Actor::System,
        engine::sources::NewSource {
            name: "bench".into(),
            kind: "website".into(),
            config: Some(json!({"start_url": format!("{}/", site), "max_pages": pages + 10})),
            volatility: None,
            audience: None,
        },
    )
    .await?;
    lore.embedder().await?; // load outside the timing
    let owner = engine::ingest::jobs::owner_id("bench");
    let job =
        engine::ingest::lifecycle::start_claimed(&lore, Some(&source.id), false, "bench", &owner).await?;
    let started = Instant::now();
    let ended = engine::ingest::jobs::run(&lore, job, &owner, None).await?;
    let crawl_s = started.elapsed().as_secs_f64();
    let chunks = lore.chunks().await?.count(None).await?;
    let pages_per_s = pages as f64 / crawl_s;
    println!(
        "Crawl + index of {pages} pages ({chunks} chunks): {crawl_s:.1} s, {pages_per_s:.1} pages/s ({})",
        ended.status
    );

    // 2. Retrieval latency at each size, flat and with the vector index.
    let embedder = load_embedder(&settings).await?;
    let base_texts = chunk_texts(2000);
    let base_vectors = embedder.embed(&base_texts).await?;
    let base: Vec<(String, Vec<f32>)> = base_texts.into_iter().zip(base_vectors).collect();
    let mut rows = Vec::new();
    println!(
        "\n{:>8} {:>12} {:>9} {:>9} {:>9} {:>11}",
        "chunks", "search", "p50 ms", "p95 ms", "build s", "recall@20"
    );
    for size in sizes {
        let at = retrieval_at(&embedder, &base, size).await?;
        println!(
            "{size:>8} {:>12} {:>9.1} {:>9.1} {:>9.1} {:>11}",
            "flat", at.flat.0, at.flat.1, at.load_s, "1.000"
        );
        println!(
            "{size:>8} {:>12} {:>9.1} {:>9.1} {:>9.1} {:>11.3}",
            "IVF_PQ", at.indexed.0, at.indexed.1, at.index_s, at.recall
        );
        rows.push(json!({"chunks": size, "vector_search": "flat", "p50_ms": at.flat.0, "p95_ms": at.flat.1, "load_s": at.load_s}));
        rows.push(json!({
            "chunks": size, "vector_search": "IVF_PQ", "p50_ms": at.indexed.0, "p95_ms": at.indexed.1,
            "index_build_s": at.index_s, "recall_at_20": at.recall,
        }));
    }
    let _ = std::fs::remove_dir_all(&data);
    let record = json!({
        "benchmark": "index",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": build_profile(),
        "crawl": {"pages": pages, "chunks": chunks, "seconds": crawl_s, "pages_per_s": pages_per_s},
        "retrieval": rows,
        "note": "hybrid retrieval (query embedding + vector + full text) over one source",
    });
    let path = write_record(&out, "index.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

/// A generated documentation site for `bench index`, served on 127.0.0.1.
mod bench_site {
    use axum::extract::Path;
    use axum::http::header;
    use axum::response::IntoResponse;
    use axum::routing::get;
    use axum::Router;

    use super::chunk_texts;

    pub async fn start(pages: usize) -> anyhow::Result<String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let sitemap_base = base.clone();
        let app = Router::new()
            .route(
                "/sitemap.xml",
                get(move || {
                    let base = sitemap_base.clone();
                    async move {
                        let urls: String =
                            (0..pages).map(|i| format!("<url><loc>{base}/page/{i}</loc></url>")).collect();
                        ([(header::CONTENT_TYPE, "application/xml")], format!("<urlset>{urls}</urlset>"))
                    }
                }),
            )
            .route(
                "/page/{n}",
                get(|Path(n): Path<usize>| async move {
                    let paragraphs: String = chunk_texts(n * 4 + 4)
                        .into_iter()
                        .skip(n * 4)
                        .enumerate()
                        .map(|(i, p)| format!("<h2>Part {i}</h2><p>Page {n}. {p}</p>"))
                        .collect();
                    axum::response::Html(format!(
                        "<html><head><title>Page {n}</title></head><body><nav>Home</nav><main><h1>Page {n}</h1>{paragraphs}</main></body></html>"
                    ))
                    .into_response()
                }),
            );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(base)
    }
}
