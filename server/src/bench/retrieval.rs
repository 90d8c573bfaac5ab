//! `lore bench retrieval`: retrieval as the corpus grows (issue 58), beside
//! FAISS, hnswlib and LanceDB's own Python client on the same vectors.
//!
//! The corpus. Real chunks first: the documentation pages under `--docs`
//! (Debian's documentation packages, installed by `scripts/bench-retrieval`)
//! read, chunked and embedded as ingestion does, up to `--real` chunks, kept
//! in the cache between runs (embedding is most of a run's time otherwise).
//! Past the real chunks, each chunk is a blend of three real ones drawn at
//! random: its vector the renormalised weighted sum of theirs (the first
//! weighing 0.55 to 0.85) with a little noise, its text sentences of each in
//! proportion. A blend stays near the real chunks' own neighbourhoods, so an
//! index meets the clusters and gaps real embeddings have, rather than the
//! uniform spread of random vectors (on which every index looks worse) or
//! near-copies (on which every index looks better). The record says how far
//! the two kinds of corpus agree: the vector stage's recall on the real
//! chunks alone beside a blended corpus of the same size.
//!
//! The queries: one sentence of each of `--queries` real chunks, spread over
//! the corpus, asked as a user's short question would be. Their known
//! answers are the exact top 10 of the whole corpus (every vector compared).
//!
//! For each size, in one run: the time to load and index from nothing,
//! resident memory and disk; `/retrieve` over HTTP on loopback at 1, 8 and
//! 32 clients; recall@10 of the vector stage and of the final hybrid top 10
//! against the same stages searching exactly; 1% of the chunks changed, the
//! time until they are found and until the index holds them; `lore serve`
//! started afresh on the result, its `/retrieve` and its resident memory
//! apart from the build's; then the same vectors in the peers
//! (`scripts/bench/retrieval_peers.py`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use engine::embed::local::LocalEmbedder;
use engine::embed::Embedder;
use engine::index::lance::LanceChunkStore;
use engine::index::{ChunkRow, ChunkStore, Scope};
use engine::ingest::DOCUMENTS_PER_WRITE;
use engine::retrieve::{hybrid_with_vector, RetrievalSettings};
use engine::{Lore, Settings};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::answer::{concurrent, Api, Spread};
use super::{
    answer_key, bench_site, build_profile, index_site, kib_of, load_embedder, millis, process_kib,
    tempfile_dir, write_record, Serving,
};

/// How many nearest chunks recall compares.
const K: usize = 10;
/// Chunks to a synthetic document (the unit a change replaces).
const PER_DOCUMENT: usize = 50;
/// Rows written to the store at a time.
const BATCH: usize = 5_000;
const CLIENTS: [usize; 2] = [8, 32];

/// The goals.
const GOAL_P95_100K_MS: f64 = 25.0;
const GOAL_P95_1M_MS: f64 = 50.0;
const GOAL_RECALL: f64 = 0.95;
const GOAL_BUILD_1M_S: f64 = 15.0 * 60.0;
const GOAL_RSS_1M_MB: f64 = 3.0 * 1024.0;
const GOAL_CHANGED_1M_S: f64 = 60.0;
const GOAL_THROUGHPUT_10K: f64 = 300.0;

pub struct RetrievalOptions {
    pub sizes: Vec<usize>,
    /// Directories of documentation pages: the real chunks' text.
    pub docs: Vec<PathBuf>,
    /// At most this many real chunks.
    pub real: usize,
    /// Queries (each a sentence of a real chunk).
    pub queries: usize,
    /// Requests per single-client measurement.
    pub requests: usize,
    /// Where the embedded real chunks are kept between runs.
    pub cache: PathBuf,
    /// The peers' Python and script (`scripts/bench-retrieval` fills these in).
    pub peers: Option<(PathBuf, PathBuf)>,
    pub out: Option<PathBuf>,
}

/// One real chunk as cached.
#[derive(Clone, Serialize, Deserialize)]
struct RealChunk {
    title: String,
    heading: Option<String>,
    text: String,
    /// What ingestion embeds (heading and text); needed only until the
    /// chunk is embedded, so not cached.
    #[serde(skip)]
    embed_text: String,
}

/// The real chunks and their vectors.
struct Real {
    chunks: Vec<RealChunk>,
    vectors: Vec<Vec<f32>>,
}

impl Real {
    /// The cached chunks, or reads, chunks and embeds `--docs` (and caches
    /// the result) when the cache holds another selection: the cache is
    /// named by the directories, the count and the embedding model.
    async fn load_or_build(
        embedder: &LocalEmbedder,
        model: &str,
        options: &RetrievalOptions,
    ) -> anyhow::Result<Self> {
        let selection = format!("{model}\n{}\n{:?}", options.real, options.docs);
        let key = engine::ingest::bytes_hash(selection.as_bytes());
        let dir = options.cache.join(format!("retrieval-corpus-{}", &key[..16]));
        if let Some(real) = Self::read(&dir)? {
            println!("Real chunks: {} from the cache ({}).", real.chunks.len(), dir.display());
            return Ok(real);
        }
        let chunks = read_docs(embedder, &options.docs, options.real).await?;
        anyhow::ensure!(
            chunks.len() >= options.queries,
            "the pages under --docs gave {} chunks, fewer than the {} queries",
            chunks.len(),
            options.queries
        );
        let bar = bar(chunks.len() as u64, "embedding the real chunks");
        let mut vectors = Vec::with_capacity(chunks.len());
        for batch in chunks.chunks(64) {
            let texts: Vec<String> = batch.iter().map(|c| c.embed_text.clone()).collect();
            vectors.extend(embedder.embed(&texts).await?);
            bar.inc(batch.len() as u64);
        }
        bar.finish_and_clear();
        let real = Self { chunks, vectors };
        real.write(&dir)?;
        Ok(real)
    }

    fn read(dir: &Path) -> anyhow::Result<Option<Self>> {
        let (texts, vectors) = (dir.join("chunks.json"), dir.join("vectors.f32"));
        if !texts.exists() || !vectors.exists() {
            return Ok(None);
        }
        let chunks: Vec<RealChunk> = serde_json::from_slice(&std::fs::read(texts)?)?;
        let floats = read_f32(&vectors)?;
        let width = floats.len() / chunks.len().max(1);
        Ok(Some(Self { vectors: floats.chunks(width.max(1)).map(<[f32]>::to_vec).collect(), chunks }))
    }

    fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let partial = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)?;
        std::fs::write(partial.join("chunks.json"), serde_json::to_vec(&self.chunks)?)?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(partial.join("vectors.f32"))?);
        for vector in &self.vectors {
            write_f32(&mut out, vector)?;
        }
        out.flush()?;
        drop(out);
        let _ = std::fs::remove_dir_all(dir);
        std::fs::rename(&partial, dir)?;
        Ok(())
    }
}

/// Pages under `dirs` (HTML and plain text), taken in turn from each
/// directory so that every package contributes, read and chunked as
/// ingestion does, until `limit` chunks.
async fn read_docs(
    embedder: &LocalEmbedder,
    dirs: &[PathBuf],
    limit: usize,
) -> anyhow::Result<Vec<RealChunk>> {
    let mut lists: Vec<std::vec::IntoIter<PathBuf>> = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        walk(dir, &mut files)?;
        files.sort();
        println!("{}: {} pages", dir.display(), files.len());
        lists.push(files.into_iter());
    }
    anyhow::ensure!(!lists.is_empty(), "no --docs directory given");
    let bar = bar(limit as u64, "reading and chunking pages");
    let mut chunks = Vec::new();
    let mut exhausted = 0;
    while chunks.len() < limit && exhausted < lists.len() {
        exhausted = 0;
        for files in &mut lists {
            let Some(path) = files.next() else {
                exhausted += 1;
                continue;
            };
            let name = path.display().to_string();
            let fetched = engine::ingest::Fetched {
                uri: name.clone(),
                bytes: std::fs::read(&path).with_context(|| format!("reading {name}"))?,
                ..engine::ingest::Fetched::default()
            };
            let Ok(extracted) = engine::ingest::extract_off_thread(&fetched, &name).await else {
                continue; // a page extraction refuses is not a chunk
            };
            let title = extracted.title.clone().unwrap_or_else(|| name.clone());
            let params = engine::chunk::ChunkingParams::default();
            for chunk in engine::chunk::chunk_sections(&extracted.sections, params, embedder) {
                if chunk.text.split_whitespace().count() < 8 {
                    continue; // a heading or a menu, not a passage
                }
                chunks.push(RealChunk {
                    title: title.clone(),
                    heading: chunk.heading,
                    text: chunk.text,
                    embed_text: chunk.embed_text,
                });
                bar.inc(1);
            }
            if chunks.len() >= limit {
                break;
            }
        }
    }
    bar.finish_and_clear();
    chunks.truncate(limit);
    Ok(chunks)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "html" || ext == "htm" || ext == "txt") {
            files.push(path);
        }
    }
    Ok(())
}

/// A deterministic stream of numbers (SplitMix64).
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Chunk `i` of the corpus: real below `real.chunks.len()`, past it a blend
/// (see the module documentation); `version` > 0 gives a changed chunk.
fn chunk(real: &Real, i: usize, version: u64) -> (String, Option<String>, String, Vec<f32>) {
    let n = real.chunks.len();
    if i < n && version == 0 {
        let c = &real.chunks[i];
        return (c.title.clone(), c.heading.clone(), c.text.clone(), real.vectors[i].clone());
    }
    let mut draws = Draws(((i as u64) << 8) | version);
    let parts = [draws.below(n), draws.below(n), draws.below(n)];
    let first = 0.55 + 0.3 * draws.unit();
    let second = (1.0 - first) * (0.3 + 0.7 * draws.unit());
    let weights = [first, second, 1.0 - first - second];
    let mut vector = vec![0f32; real.vectors[parts[0]].len()];
    for (part, weight) in parts.iter().zip(weights) {
        for (x, y) in vector.iter_mut().zip(&real.vectors[*part]) {
            *x += weight * y;
        }
    }
    for x in &mut vector {
        *x += 0.01 * (draws.unit() - 0.5);
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    vector.iter_mut().for_each(|x| *x /= norm);
    let mut text = String::new();
    for (part, weight) in parts.iter().zip(weights) {
        let sentences: Vec<&str> = real.chunks[*part].text.split_inclusive(". ").collect();
        let take = ((sentences.len() as f32 * weight).ceil() as usize).clamp(1, sentences.len().max(1));
        text.extend(sentences.iter().take(take).copied());
        text.push(' ');
    }
    let main = &real.chunks[parts[0]];
    (main.title.clone(), main.heading.clone(), text.trim().to_owned(), vector)
}

fn rows(real: &Real, source_id: &str, range: std::ops::Range<usize>, version: u64) -> Vec<ChunkRow> {
    range
        .map(|i| {
            let (title, heading, text, vector) = chunk(real, i, version);
            let document = i / PER_DOCUMENT;
            ChunkRow {
                id: format!("c{i}"),
                source_id: source_id.to_owned(),
                view: None,
                document_id: format!("bench{document}"),
                title,
                url: None,
                heading,
                position: (i % PER_DOCUMENT) as u32,
                content_hash: format!("bench-{i}-{version}"),
                text,
                vector,
            }
        })
        .collect()
}

/// A query: a sentence of a real chunk, and its vector as `/retrieve`
/// computes it.
struct Query {
    text: String,
    vector: Vec<f32>,
}

async fn queries(embedder: &LocalEmbedder, real: &Real, count: usize) -> anyhow::Result<Vec<Query>> {
    let stride = (real.chunks.len() / count.max(1)).max(1);
    let mut out = Vec::with_capacity(count);
    for c in real.chunks.iter().step_by(stride).take(count) {
        let sentence = c
            .text
            .split(['.', '?', '!', '\n'])
            .map(str::trim)
            .find(|s| (5..=20).contains(&s.split_whitespace().count()))
            .map(str::to_owned)
            .unwrap_or_else(|| c.text.split_whitespace().take(12).collect::<Vec<_>>().join(" "));
        let vector = embedder.embed_query(&sentence).await?;
        out.push(Query { text: sentence, vector });
    }
    Ok(out)
}

fn recall(found: &[Vec<String>], exact: &[Vec<String>]) -> f64 {
    let total: f64 = found
        .iter()
        .zip(exact)
        .map(|(found, exact)| {
            exact.iter().filter(|id| found.contains(id)).count() as f64 / exact.len().max(1) as f64
        })
        .sum();
    total / exact.len().max(1) as f64
}

/// Resident memory now and at its peak, in MB.
fn memory_mb() -> (f64, f64) {
    (process_kib("VmRSS:") / 1024.0, process_kib("VmHWM:") / 1024.0)
}

fn disk_mb(dir: &Path) -> f64 {
    fn size(path: &Path) -> u64 {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => std::fs::read_dir(path)
                .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
                .unwrap_or(0),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        }
    }
    size(dir) as f64 / (1024.0 * 1024.0)
}

fn bar(len: u64, message: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg:<32} [{bar:30}] {pos}/{len} ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}

fn write_f32(out: &mut impl Write, vector: &[f32]) -> std::io::Result<()> {
    for x in vector {
        out.write_all(&x.to_le_bytes())?;
    }
    Ok(())
}

fn read_f32(path: &Path) -> anyhow::Result<Vec<f32>> {
    let bytes = std::fs::read(path)?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

pub async fn retrieval(mut settings: Settings, options: RetrievalOptions) -> anyhow::Result<()> {
    anyhow::ensure!(options.queries >= 1, "--queries must be at least 1");
    let embedder = load_embedder(&settings).await?;
    let real = Real::load_or_build(&embedder, &settings.models.embedding, &options).await?;
    let queries = queries(&embedder, &real, options.queries).await?;
    println!("{} real chunks, {} queries.", real.chunks.len(), queries.len());
    let site = bench_site::start(10).await?;
    settings.vectors.uri = None;
    settings.database.url = None;
    settings.ingest.allow_private_addresses = true;

    // How far blends behave like the real chunks: the vector stage's recall
    // over the real chunks alone, and over as many blended ones.
    let agreement = if real.chunks.len() >= 5_000 {
        let n = real.chunks.len();
        let on_real = vector_recall_only(&real, &queries, 0..n).await?;
        let on_blends = vector_recall_only(&real, &queries, n..2 * n).await?;
        println!("Vector recall@{K} on {n} real chunks {on_real:.3}, on {n} blends {on_blends:.3}.");
        json!({"chunks": n, "recall_real": on_real, "recall_blended": on_blends})
    } else {
        Value::Null
    };

    let mut sizes = Vec::new();
    for &size in &options.sizes {
        println!("\n== {size} chunks ==");
        let data = tempfile_dir()?;
        let mut settings = settings.clone();
        settings.data_dir = data.clone();
        let lore = Lore::open(settings).await?;
        crate::commands::models::ensure(&lore, false).await?;
        let measured = at_size(&lore, &site, &real, &queries, size, &options).await;
        lore.flush_writes().await;
        drop(lore);
        let _ = std::fs::remove_dir_all(&data);
        sizes.push(measured?);
    }

    println!(
        "\n{:>9} {:>22} {:>9} {:>9} {:>11} {:>9} {:>9}",
        "chunks", "what", "p50 ms", "p95 ms", "recall@10", "build s", "RSS MB"
    );
    for at in &sizes {
        let chunks = at["chunks"].as_u64().unwrap_or_default();
        let get =
            |path: &[&str]| path.iter().fold(&at["lore"], |v, key| &v[*key]).as_f64().unwrap_or(f64::NAN);
        println!(
            "{chunks:>9} {:>22} {:>9.2} {:>9.2} {:>11.3} {:>9.1} {:>9.0}",
            "Lore /retrieve",
            get(&["retrieve", "p50_ms"]),
            get(&["retrieve", "p95_ms"]),
            get(&["recall_hybrid"]),
            get(&["build_s"]),
            get(&["rss_mb"]),
        );
        println!(
            "{chunks:>9} {:>22} {:>9.2} {:>9.2} {:>11} {:>9} {:>9.0}",
            "Lore, a fresh serve",
            get(&["fresh_serve", "retrieve", "p50_ms"]),
            get(&["fresh_serve", "retrieve", "p95_ms"]),
            "",
            "",
            get(&["fresh_serve", "peak_rss_mb"]),
        );
        println!(
            "{chunks:>9} {:>22} {:>9.2} {:>9.2} {:>11.3}",
            "Lore vector stage",
            get(&["vector_stage", "p50_ms"]),
            get(&["vector_stage", "p95_ms"]),
            get(&["recall_vector"]),
        );
        for peer in at["peers"].as_array().into_iter().flatten() {
            println!(
                "{chunks:>9} {:>22} {:>9.2} {:>9.2} {:>11.3} {:>9.1} {:>9.0}",
                format!(
                    "{} {}",
                    peer["peer"].as_str().unwrap_or_default(),
                    short(peer["setting"].as_str().unwrap_or_default())
                ),
                peer["p50_ms"].as_f64().unwrap_or(f64::NAN),
                peer["p95_ms"].as_f64().unwrap_or(f64::NAN),
                peer["recall_at_k"].as_f64().unwrap_or(f64::NAN),
                peer["build_s"].as_f64().unwrap_or(f64::NAN),
                peer["index_mb"].as_f64().unwrap_or(f64::NAN),
            );
        }
    }
    let goals = goals(&sizes);
    for goal in &goals {
        println!(
            "{}: {}",
            goal["goal"].as_str().unwrap_or_default(),
            goal["verdict"].as_str().unwrap_or_default()
        );
    }
    let effort = engine::index::lance::search_effort(&engine::index::lance::VECTOR_INDEX);
    let record = json!({
        "benchmark": "retrieval",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": build_profile(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "vector_index": {
            "kind": engine::index::lance::VECTOR_INDEX.to_string(),
            "from_rows": engine::index::lance::VECTOR_INDEX_MIN_ROWS,
            "search": {"nprobes": effort.nprobes, "refine_factor": effort.refine_factor, "ef": effort.ef},
        },
        "corpus": {
            "real_chunks": real.chunks.len(),
            "docs": options.docs,
            "blends": "past the real chunks, each chunk blends three real ones: vector the renormalised weighted sum (first weight 0.55-0.85) plus noise of 0.01, text sentences of each in proportion",
            "agreement": agreement,
        },
        "queries": queries.len(),
        "k": K,
        "sizes": sizes,
        "goals": goals,
    });
    let path = write_record(&options.out, "retrieval.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

fn short(setting: &str) -> &str {
    setting.split_whitespace().last().unwrap_or(setting)
}

/// Recall@K of the store's vector search (with its index, as the engine
/// builds it) over chunks `range` alone, against its exact search.
async fn vector_recall_only(
    real: &Real,
    queries: &[Query],
    range: std::ops::Range<usize>,
) -> anyhow::Result<f64> {
    let dir = tempfile_dir()?;
    let store = LanceChunkStore::open(
        &engine::index::lance::Location::new(dir.join("lancedb").display().to_string()),
        real.vectors[0].len(),
    )
    .await?;
    for from in range.clone().step_by(BATCH) {
        store.append(rows(real, "bench", from..(from + BATCH).min(range.end), 0)).await?;
    }
    store.optimize().await?;
    let scope = Scope { sources: vec!["bench".into()], every_source: true };
    let found = nearest(&store, queries, &scope).await?.0;
    let exact = nearest(&store.exact(), queries, &scope).await?.0;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(recall(&found, &exact))
}

/// The ids of each query's `K` nearest chunks by the store's vector search,
/// with the time each search took.
async fn nearest(
    store: &LanceChunkStore,
    queries: &[Query],
    scope: &Scope,
) -> anyhow::Result<(Vec<Vec<String>>, Vec<f64>)> {
    let mut found = Vec::with_capacity(queries.len());
    let mut times = Vec::with_capacity(queries.len());
    for query in queries {
        let t = Instant::now();
        let hits = store.vector_search(&query.vector, scope, K).await?;
        times.push(millis(t.elapsed()));
        found.push(hits.into_iter().map(|h| h.chunk.id).collect());
    }
    Ok((found, times))
}

async fn at_size(
    lore: &Lore,
    site: &str,
    real: &Real,
    queries: &[Query],
    size: usize,
    options: &RetrievalOptions,
) -> anyhow::Result<Value> {
    // A crawled source stamps the corpus and gives the chunks a source.
    let source = index_site(lore, site, 10).await?;
    let store = lore.chunks().await?;
    let crawled = store.count(None).await?;
    let peers_dir = tempfile_dir()?;
    let mut vectors_out = std::io::BufWriter::new(std::fs::File::create(peers_dir.join("vectors.f32"))?);

    // Load, writing the vectors for the peers on the way.
    let bar = bar(size as u64, "loading chunks");
    let started = Instant::now();
    let mut generating = 0.0;
    for from in (0..size).step_by(BATCH) {
        let made = Instant::now();
        let batch = rows(real, &source.id, from..(from + BATCH).min(size), 0);
        for row in &batch {
            write_f32(&mut vectors_out, &row.vector)?;
        }
        generating += made.elapsed().as_secs_f64();
        bar.inc(batch.len() as u64);
        // As many documents to a commit as a crawl or a git sync writes,
        // merged as an indexing run merges them.
        for documents in batch.chunks(PER_DOCUMENT * DOCUMENTS_PER_WRITE) {
            store.write_documents(&[], documents.to_vec()).await?;
            engine::upkeep::merge_when_due(lore.corpus(), store.as_ref()).await?;
        }
    }
    bar.finish_and_clear();
    vectors_out.flush()?;
    drop(vectors_out);
    let load_s = started.elapsed().as_secs_f64() - generating;
    let indexing = Instant::now();
    store.optimize().await?;
    let index_s = indexing.elapsed().as_secs_f64();
    let (_, peak_build_mb) = memory_mb();
    println!("Loaded in {load_s:.1} s, indexed in {index_s:.1} s (peak RSS {peak_build_mb:.0} MB).");
    let scope = Scope { sources: vec![source.id.clone()], every_source: true };

    // The vector stage alone, and its recall against LanceDB's exact search
    // of the same table (every vector compared).
    let table = LanceChunkStore::open(&lore.settings.vectors(), real.vectors[0].len()).await?;
    let exact_store = table.exact();
    let (found, stage) = nearest(&table, queries, &scope).await?;
    let exact_started = Instant::now();
    let exact = nearest(&exact_store, queries, &scope).await?.0;
    println!("Exact search of {} queries: {:.1} s.", queries.len(), exact_started.elapsed().as_secs_f64());
    let recall_vector = recall(&found, &exact);
    let vector_stage = Spread::of(stage);

    // The final hybrid top 10, against the same retrieval searching exactly.
    let settings = RetrievalSettings { top_k: K, ..RetrievalSettings::default() };
    let (mut indexed, mut exactly) = (Vec::new(), Vec::new());
    for query in queries {
        let ids =
            |r: engine::retrieve::Retrieval| r.results.into_iter().map(|r| r.chunk.id).collect::<Vec<_>>();
        indexed.push(ids(hybrid_with_vector(&*store, &query.vector, &query.text, &scope, &settings).await?));
        exactly.push(ids(
            hybrid_with_vector(&exact_store, &query.vector, &query.text, &scope, &settings).await?
        ));
    }
    let recall_hybrid = recall(&indexed, &exactly);
    println!("Recall@{K}: vector stage {recall_vector:.3}, hybrid top {K} {recall_hybrid:.3}.");

    // `/retrieve` over HTTP on loopback.
    let key = answer_key(lore).await?;
    let serving = Serving::start(lore).await?;
    let api = Api {
        http: reqwest::Client::builder().pool_max_idle_per_host(128).build()?,
        base: serving.base.clone(),
        key: key.clone(),
    };
    let http = async {
        for query in queries.iter().take(20) {
            api.retrieve(&query.text).await?;
        }
        let mut samples = Vec::new();
        for i in 0..options.requests {
            samples.push(api.retrieve(&queries[i % queries.len()].text).await?);
        }
        let one = Spread::of(samples);
        let mut under_load = Vec::new();
        for clients in CLIENTS {
            let total = (clients * 8).max(options.requests);
            let texts: std::sync::Arc<Vec<String>> = std::sync::Arc::new(queries.iter().map(|q| q.text.clone()).collect());
            let (per_s, spread) = concurrent(clients, total, {
                let api = api.clone();
                move |i| {
                    let api = api.clone();
                    let texts = texts.clone();
                    async move { api.retrieve(&texts[i % texts.len()]).await }
                }
            })
            .await?;
            println!("/retrieve at {clients} clients: {per_s:.0} req/s, p95 {:.1} ms", spread.p95);
            under_load.push(json!({"clients": clients, "requests": total, "per_s": per_s, "p50_ms": spread.p50, "p95_ms": spread.p95}));
        }
        anyhow::Ok((one, under_load))
    }
    .await;
    let (rss_mb, peak_mb) = memory_mb();
    serving.stop().await;
    let (one, under_load) = http?;
    println!("/retrieve at 1 client: p50 {:.1} ms, p95 {:.1} ms (RSS {rss_mb:.0} MB).", one.p50, one.p95);

    // 1% of the chunks changed: whole documents spread over the corpus,
    // rewritten with new content and replaced as a re-sync replaces them,
    // a batch of documents to a commit.
    let changed_documents = (size / 100 / PER_DOCUMENT).max(1);
    let stride = (size / PER_DOCUMENT / changed_documents).max(1);
    let picked: Vec<usize> = (0..size / PER_DOCUMENT).step_by(stride).take(changed_documents).collect();
    let started = Instant::now();
    let mut changed = Vec::new();
    for group in picked.chunks(DOCUMENTS_PER_WRITE) {
        let mut new_rows = Vec::with_capacity(group.len() * PER_DOCUMENT);
        for &d in group {
            new_rows.extend(rows(real, &source.id, d * PER_DOCUMENT..((d + 1) * PER_DOCUMENT).min(size), 1));
        }
        changed.extend(new_rows.iter().map(|r| (r.id.clone(), r.vector.clone())));
        let replaced: Vec<String> = group.iter().map(|d| format!("bench{d}")).collect();
        store.write_documents(&replaced, new_rows).await?;
        engine::upkeep::merge_when_due(lore.corpus(), store.as_ref()).await?;
    }
    let written_s = started.elapsed().as_secs_f64();
    // Found by their own vectors: fifty of them, spread over the change
    // (each search is timed into the figure, so checking every one would
    // measure the checking).
    let checked: Vec<&(String, Vec<f32>)> = changed.iter().step_by((changed.len() / 50).max(1)).collect();
    let mut unfound = checked.len();
    for (id, vector) in checked.iter().copied() {
        let hits = store.vector_search(vector, &scope, K).await?;
        if hits.iter().any(|h| &h.chunk.id == id) {
            unfound -= 1;
        }
    }
    let searchable_s = started.elapsed().as_secs_f64();
    let folding = Instant::now();
    store.optimize().await?;
    let folded_s = folding.elapsed().as_secs_f64();
    println!(
        "{} changed chunks written in {written_s:.1} s; {} of them found by their vectors after {searchable_s:.1} s ({unfound} not found); folded into the indexes in {folded_s:.1} s.",
        changed.len(),
        checked.len()
    );
    let disk = disk_mb(&lore.settings.data_dir);
    let fragments = table.fragments().await?;

    // What an operator runs after the build: `lore serve` started afresh on
    // the same data directory, measured apart from what the build left in
    // this process.
    let fresh = FreshServe::start(lore).await?;
    let fresh_figures = fresh.measure(&key, queries, options.requests).await;
    fresh.stop().await;
    let fresh_figures = fresh_figures?;

    // The peers, on the same vectors and queries.
    let peers = match &options.peers {
        Some((python, script)) => run_peers(&peers_dir, python, script, lore, queries, size).await?,
        None => Value::Null,
    };
    let _ = std::fs::remove_dir_all(&peers_dir);
    Ok(json!({
        "chunks": size,
        "crawled_chunks": crawled,
        "lore": {
            "load_s": load_s,
            "index_s": index_s,
            "build_s": load_s + index_s,
            "peak_rss_building_mb": peak_build_mb,
            "rss_mb": rss_mb,
            "peak_rss_mb": peak_mb,
            "fresh_serve": fresh_figures,
            "disk_mb": disk,
            "fragments": fragments,
            "retrieve": one.json(None),
            "under_load": under_load,
            "vector_stage": vector_stage.json(None),
            "recall_vector": recall_vector,
            "recall_hybrid": recall_hybrid,
            "changed": {"chunks": changed.len(), "written_s": written_s, "checked": checked.len(), "searchable_s": searchable_s, "not_found": unfound, "folded_s": folded_s},
        },
        "peers": peers,
    }))
}

/// `lore serve` (this executable) in a process of its own, on loopback,
/// over a data directory built by this run. It reads the configuration this
/// run read, with the data directory and the address set.
struct FreshServe {
    child: tokio::process::Child,
    base: String,
}

impl FreshServe {
    async fn start(lore: &Lore) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = tokio::process::Command::new(std::env::current_exe()?);
        command
            .arg("serve")
            .env("LORE_DATA_DIR", &lore.settings.data_dir)
            .env("LORE_SERVER__BIND", format!("127.0.0.1:{port}"))
            .env("LORE_MODELS__EMBEDDING", &lore.settings.models.embedding)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(dir) = &lore.settings.models.dir {
            command.env("LORE_MODELS__DIR", dir);
        }
        let child = command.spawn().context("starting `lore serve`")?;
        let fresh = Self { child, base: format!("http://127.0.0.1:{port}") };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + std::time::Duration::from_secs(300);
        loop {
            let ready = http.get(format!("{}/readyz", fresh.base)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return Ok(fresh);
            }
            anyhow::ensure!(Instant::now() < deadline, "`lore serve` was not ready within 5 minutes");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// `/retrieve` at 1 client and at the most clients measured, then the
    /// process's resident memory and its peak.
    async fn measure(&self, key: &str, queries: &[Query], requests: usize) -> anyhow::Result<Value> {
        let api = Api {
            http: reqwest::Client::builder().pool_max_idle_per_host(128).build()?,
            base: self.base.clone(),
            key: key.to_owned(),
        };
        let probe = &queries[0].text;
        let (_, first) = api.post("/retrieve", &json!({ "query": probe })).await?;
        anyhow::ensure!(
            first["results"].as_array().is_some_and(|r| !r.is_empty()),
            "the fresh `lore serve` finds nothing: does its configuration name another database or vector store?"
        );
        let mut samples = Vec::new();
        for i in 0..requests {
            samples.push(api.retrieve(&queries[i % queries.len()].text).await?);
        }
        let one = Spread::of(samples);
        let clients = CLIENTS[CLIENTS.len() - 1];
        let texts: std::sync::Arc<Vec<String>> =
            std::sync::Arc::new(queries.iter().map(|q| q.text.clone()).collect());
        let (per_s, spread) = concurrent(clients, (clients * 8).max(requests), {
            let api = std::sync::Arc::new(api);
            move |i| {
                let api = api.clone();
                let texts = texts.clone();
                async move { api.retrieve(&texts[i % texts.len()]).await }
            }
        })
        .await?;
        let pid = self.child.id().context("the fresh `lore serve` has exited")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let (rss_mb, peak_mb) = (kib_of(&status, "VmRSS:") / 1024.0, kib_of(&status, "VmHWM:") / 1024.0);
        println!(
            "A fresh `lore serve`: /retrieve p50 {:.1} ms, p95 {:.1} ms; {per_s:.0} req/s at {clients} clients; RSS {rss_mb:.0} MB, peak {peak_mb:.0} MB.",
            one.p50, one.p95
        );
        Ok(json!({
            "retrieve": one.json(None),
            "under_load": {"clients": clients, "per_s": per_s, "p95_ms": spread.p95},
            "rss_mb": rss_mb,
            "peak_rss_mb": peak_mb,
        }))
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

async fn run_peers(
    dir: &Path,
    python: &Path,
    script: &Path,
    lore: &Lore,
    queries: &[Query],
    size: usize,
) -> anyhow::Result<Value> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("queries.f32"))?);
    for query in queries {
        write_f32(&mut out, &query.vector)?;
    }
    out.flush()?;
    drop(out);
    let ids: serde_json::Map<String, Value> = (0..size).map(|i| (format!("c{i}"), json!(i))).collect();
    std::fs::write(dir.join("ids.json"), serde_json::to_vec(&ids)?)?;
    let location = lore.settings.vectors();
    let effort = engine::index::lance::search_effort(&engine::index::lance::VECTOR_INDEX);
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec(&json!({
            "dimensions": queries[0].vector.len(),
            "count": size,
            "queries": queries.len(),
            "k": K,
            "threads": 2,
            "lance": {"uri": location.uri, "table": engine::index::lance::DEFAULT_TABLE, "setting": "Lore's search effort",
                      "nprobes": effort.nprobes, "refine_factor": effort.refine_factor, "ef": effort.ef},
        }))?,
    )?;
    println!("Running the peers (FAISS, hnswlib, LanceDB's Python client) on the same vectors …");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg("--input")
        .arg(dir)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .context("running the peers' script")?;
    anyhow::ensure!(output.status.success(), "the peers' script failed");
    let report: Value = serde_json::from_slice(&output.stdout).context("reading the peers' report")?;
    Ok(report["peers"].clone())
}

/// Each goal of the issue that the sizes measured, met or by how much not.
fn goals(sizes: &[Value]) -> Vec<Value> {
    let mut goals = Vec::new();
    let mut check = |goal: String, value: f64, bound: f64, at_most: bool| {
        let met = if at_most { value <= bound } else { value >= bound };
        let verdict =
            if met { format!("met ({value:.3})") } else { format!("NOT met: {value:.3} against {bound}") };
        goals.push(json!({"goal": goal, "value": value, "bound": bound, "met": met, "verdict": verdict}));
    };
    for at in sizes {
        let lore = &at["lore"];
        let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        let chunks = at["chunks"].as_u64().unwrap_or_default();
        let p95 = f(&lore["retrieve"]["p95_ms"]);
        if chunks == 10_000 {
            let at_32 =
                lore["under_load"].as_array().and_then(|rows| rows.iter().find(|r| r["clients"] == 32));
            check(
                "10,000 chunks: /retrieve at 32 clients, req/s ≥ 300".into(),
                at_32.map_or(f64::NAN, |r| f(&r["per_s"])),
                GOAL_THROUGHPUT_10K,
                false,
            );
        }
        if chunks == 100_000 || chunks == 1_000_000 {
            let goal_p95 = if chunks == 100_000 { GOAL_P95_100K_MS } else { GOAL_P95_1M_MS };
            check(format!("{chunks} chunks: /retrieve p95 at 1 client ≤ {goal_p95} ms"), p95, goal_p95, true);
            check(
                format!("{chunks} chunks: recall@10 of the final top k ≥ {GOAL_RECALL}"),
                f(&lore["recall_hybrid"]),
                GOAL_RECALL,
                false,
            );
        }
        if chunks == 1_000_000 {
            check(
                "1,000,000 chunks: built in ≤ 15 min (s)".into(),
                f(&lore["build_s"]),
                GOAL_BUILD_1M_S,
                true,
            );
            check(
                "1,000,000 chunks: resident memory of a fresh `lore serve` ≤ 3 GB (MB, its peak)".into(),
                f(&lore["fresh_serve"]["peak_rss_mb"]),
                GOAL_RSS_1M_MB,
                true,
            );
            check(
                "1,000,000 chunks: 1% changed searchable in ≤ 60 s".into(),
                f(&lore["changed"]["searchable_s"]),
                GOAL_CHANGED_1M_S,
                true,
            );
        }
        // The vector stage against FAISS HNSW at the lowest efSearch whose
        // recall is at least the vector stage's.
        let recall = f(&lore["recall_vector"]);
        let faiss = at["peers"].as_array().into_iter().flatten().filter(|p| {
            p["peer"] == "faiss"
                && p["setting"].as_str().is_some_and(|s| s.starts_with("HNSW"))
                && f(&p["recall_at_k"]) >= recall
        });
        if let Some(peer) = faiss.min_by(|a, b| f(&a["p95_ms"]).total_cmp(&f(&b["p95_ms"]))) {
            let ratio = f(&lore["vector_stage"]["p95_ms"]) / f(&peer["p95_ms"]);
            check(
                format!("{chunks} chunks: vector stage p95 within 3× of FAISS HNSW at equal recall (ratio)"),
                ratio,
                3.0,
                true,
            );
        }
    }
    goals
}
