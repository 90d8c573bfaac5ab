//! `lore bench answer`: the public API measured over HTTP on loopback, the
//! way a deployment's clients see it.
//!
//! 1. A generated site is crawled and indexed for real (that stamps the
//!    corpus fingerprint and creates the profile); the same source is then
//!    topped up with synthetic chunks (real texts, jittered copies of real
//!    vectors) until the corpus holds `--chunks` chunks.
//! 2. Lore serves on 127.0.0.1 in this process, with a secret key and the
//!    generation role bound to `--llm-endpoint` (llama-server with SmolLM2
//!    from `scripts/bench-answer`).
//! 3. Measured, each as latency seen by the HTTP client:
//!    - `/retrieve`, one client;
//!    - `/answer` on a cache miss, minus the model's time (the `generation`
//!      and `escalation` stages of the returned trace): Lore's own overhead;
//!    - `/answer` exact and semantic cache hits (only for questions the
//!      model answered with a grounded answer, since only those are cached);
//!    - throughput of `/retrieve` and of cached `/answer` at 8, 32 and 64
//!      concurrent clients;
//!    - `/retrieve` for callers who may read 100%, 50% and 5% of the
//!      chunks beside the unscoped admin, and the scoped vector stage's
//!      recall against an exact search ([`super::scoped`]).
//!
//! Every measurement but the scoped ones asks as a super user's key, which
//! reads without any filter.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use engine::{Lore, Settings};
use serde_json::{json, Value};

use super::{
    bench_site, bind_generation, build_profile, chunk_texts, index_site, millis, percentile, scoped,
    synthetic_documents, tempfile_dir, write_record, Serving, QUERIES,
};

/// Goals of the issue, in milliseconds (p95).
const RETRIEVE_P95_GOAL_MS: f64 = 25.0;
const CACHE_HIT_P95_GOAL_MS: f64 = 10.0;
const OVERHEAD_P95_GOAL_MS: f64 = 30.0;
const CONCURRENCY: [usize; 3] = [8, 32, 64];

/// Questions about the generated site's text: each reaches retrieval with
/// passages, so a miss goes to the model.
pub(super) const QUESTIONS: [&str; 16] = [
    "How long are backups kept?",
    "How do I restore a snapshot?",
    "Which file types can I upload?",
    "What happens when the embedding model changes?",
    "How do I rotate a provider key?",
    "What do widget keys carry?",
    "Can annual plans be refunded?",
    "Which port does the container expose?",
    "When should I use PostgreSQL instead of SQLite?",
    "What does the semantic cache store?",
    "When are invoices issued?",
    "Where do health checks answer?",
    "What does the retrieval cutoff drop?",
    "Which identity providers work for single sign-on?",
    "What does the dashboard show?",
    "What does the crawler respect?",
];

pub struct AnswerOptions {
    /// Pages of the generated site crawled for real.
    pub pages: usize,
    /// Chunks in the corpus after the synthetic top-up.
    pub chunks: usize,
    /// Requests per single-client measurement.
    pub requests: usize,
    /// An OpenAI-compatible endpoint (`…/v1`) for the generation role.
    pub llm_endpoint: String,
    pub llm_model: String,
    pub out: Option<PathBuf>,
}

/// Where one kind of request spends its time: each trace stage's
/// durations, and what the trace does not cover (HTTP, recording the run,
/// caching the answer), in the order the stages first appear.
#[derive(Default)]
struct StageTimes(Vec<(String, Vec<f64>)>);

impl StageTimes {
    const OUTSIDE: &'static str = "outside the trace";

    fn add(&mut self, latency: f64, answer: &Value) {
        let mut traced = 0.0;
        for stage in answer["trace"]["stages"].as_array().into_iter().flatten() {
            if let (Some(name), Some(ms)) = (stage["stage"].as_str(), stage["duration_ms"].as_f64()) {
                traced += ms;
                self.push(name, ms);
            }
        }
        self.push(Self::OUTSIDE, (latency - traced).max(0.0));
    }

    fn push(&mut self, name: &str, ms: f64) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, samples)) => samples.push(ms),
            None => self.0.push((name.to_owned(), vec![ms])),
        }
    }

    /// Each stage's p50, in milliseconds.
    fn medians(&self) -> Vec<(String, f64)> {
        self.0.iter().map(|(name, samples)| (name.clone(), Spread::of(samples.clone()).p50)).collect()
    }

    fn line(&self, what: &str) {
        let parts: Vec<String> = self.medians().iter().map(|(name, ms)| format!("{name} {ms:.1}")).collect();
        println!("{what:<16} {}", parts.join(" · "));
    }

    fn json(&self) -> Value {
        Value::Object(self.medians().into_iter().map(|(name, ms)| (name, json!(ms))).collect())
    }
}

/// p50/p95 of a set of samples, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spread {
    count: usize,
    pub(super) p50: f64,
    pub(super) p95: f64,
}

impl Spread {
    pub(super) fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        Self { count: samples.len(), p50: percentile(&samples, 50.0), p95: percentile(&samples, 95.0) }
    }

    pub(super) fn json(&self, goal_p95: Option<f64>) -> Value {
        let mut value = json!({"samples": self.count, "p50_ms": self.p50, "p95_ms": self.p95});
        if let Some(goal) = goal_p95 {
            value["goal_p95_ms"] = json!(goal);
            value["goal_met"] = json!(self.count > 0 && self.p95 <= goal);
        }
        value
    }

    fn row(&self, what: &str, goal_p95: Option<f64>) {
        let goal = match goal_p95 {
            Some(goal) if self.count == 0 => format!("≤ {goal:.0} ms: no samples"),
            Some(goal) if self.p95 <= goal => format!("≤ {goal:.0} ms: met"),
            Some(goal) => format!("≤ {goal:.0} ms: NOT met"),
            None => String::new(),
        };
        println!("{what:<44} {:>8} {:>9.1} {:>9.1}   {goal}", self.count, self.p50, self.p95);
    }
}

/// A client of the public API with a secret key.
#[derive(Clone)]
pub(super) struct Api {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) key: String,
}

impl Api {
    /// POSTs `body` to `path`; the latency and the JSON answer.
    pub(super) async fn post(&self, path: &str, body: &Value) -> anyhow::Result<(f64, Value)> {
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .json(body)
            .send()
            .await
            .with_context(|| format!("POST {path}"))?;
        let status = response.status();
        let text = response.text().await.with_context(|| format!("reading POST {path}"))?;
        let elapsed = millis(started.elapsed());
        anyhow::ensure!(status.is_success(), "POST {path} answered {status}: {text}");
        Ok((elapsed, serde_json::from_str(&text).with_context(|| format!("parsing POST {path}"))?))
    }

    pub(super) async fn ask(&self, question: &str) -> anyhow::Result<(f64, Value)> {
        self.post("/answer", &json!({ "question": question })).await
    }

    pub(super) async fn retrieve(&self, query: &str) -> anyhow::Result<f64> {
        Ok(self.post("/retrieve", &json!({ "query": query })).await?.0)
    }
}

/// Milliseconds the answer's model calls took, from its trace.
fn model_ms(answer: &Value) -> f64 {
    answer["trace"]["stages"]
        .as_array()
        .map(|stages| {
            stages
                .iter()
                .filter(|s| {
                    use engine::trace::StageName;
                    let name = s["stage"].as_str().and_then(StageName::parse);
                    matches!(name, Some(StageName::Generation | StageName::Escalation))
                })
                .filter_map(|s| s["duration_ms"].as_f64())
                .sum()
        })
        .unwrap_or(0.0)
}

fn cache_kind(answer: &Value) -> Option<&str> {
    (answer["cache"]["status"].as_str() == Some("hit")).then(|| answer["cache"]["kind"].as_str()).flatten()
}

/// A close paraphrase of a question (above a 0.9 gate for MiniLM).
fn paraphrase(question: &str) -> String {
    format!("Quick question: {question}")
}

pub async fn answer(mut settings: Settings, options: AnswerOptions) -> anyhow::Result<()> {
    // 1. The corpus.
    let site = bench_site::start(options.pages).await?;
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    settings.vectors.uri = None;
    settings.database.url = None;
    settings.ingest.allow_private_addresses = true;
    let lore = Lore::open(settings).await?;
    crate::commands::models::ensure(&lore, false).await?;
    let embedder = lore.embedder().await?;
    let source = index_site(&lore, &site, options.pages).await?;
    let audiences = scoped::prepare(&lore, &source.id).await?;

    let store = lore.chunks().await?;
    let crawled = store.count(None).await?;
    let top_up = options.chunks.saturating_sub(crawled);
    if top_up > 0 {
        println!("Topping the corpus up with {top_up} synthetic chunks on {} shelves …", scoped::SHELVES);
        let texts = chunk_texts(top_up.min(300));
        let vectors = embedder.embed(&texts).await?;
        let base: Vec<(String, Vec<f32>)> = texts.into_iter().zip(vectors).collect();
        for (shelf, rows) in audiences.shelves.iter().zip(scoped::split(top_up)) {
            for rows in synthetic_documents(&base, shelf, rows) {
                let document = rows.first().map(|row| row.document_id.clone()).unwrap_or_default();
                store.replace_document(&document, rows).await?;
            }
        }
        store.optimize().await?;
    }
    let chunks = store.count(None).await?;
    println!("Corpus: {chunks} chunks ({crawled} crawled, {} synthetic).", chunks - crawled);

    // 2. A key, the generation role, and Lore serving on loopback.
    let key = audiences.admin_key().to_owned();
    bind_generation(&lore, &options.llm_endpoint, &options.llm_model).await?;
    let serving = Serving::start(&lore).await?;
    let base = serving.base.clone();
    let api = Api { http: reqwest::Client::builder().pool_max_idle_per_host(128).build()?, base, key };
    let measured = async {
        let mut record = measure(&api, &options).await?;
        record["scoped"] = scoped::measure(&lore, &api, &audiences, &QUERIES, options.requests).await?;
        anyhow::Ok(record)
    }
    .await;
    serving.stop().await;
    let _ = std::fs::remove_dir_all(&data);
    let mut record = measured?;
    record["chunks"] = json!({"total": chunks, "crawled": crawled, "synthetic": chunks - crawled});
    record["model"] = json!(options.llm_model);
    let path = write_record(&options.out, "answer.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

async fn measure(api: &Api, options: &AnswerOptions) -> anyhow::Result<Value> {
    let queries = || QUERIES.iter().cycle().take(options.requests);

    // /retrieve, one client (after a warm-up round).
    for query in QUERIES {
        api.retrieve(query).await?;
    }
    let mut samples = Vec::new();
    for query in queries() {
        samples.push(api.retrieve(query).await?);
    }
    let retrieve = Spread::of(samples);

    // /answer misses: Lore's overhead is the latency minus the model's time.
    println!("Asking {} questions the cache has not seen (the model answers each) …", QUESTIONS.len());
    let mut overhead = Vec::new();
    let mut model = Vec::new();
    let mut miss_stages = StageTimes::default();
    let mut grounded = Vec::new();
    let (mut refused, mut answered) = (0, 0);
    for question in QUESTIONS {
        let (latency, body) = api.ask(question).await?;
        if body["cache"]["status"].as_str() == Some("hit") {
            continue;
        }
        let spent = model_ms(&body);
        overhead.push((latency - spent).max(0.0));
        miss_stages.add(latency, &body);
        model.push(spent);
        if body["refused"].as_bool() == Some(false) {
            answered += 1;
            grounded.push(question);
        } else {
            refused += 1;
        }
    }
    let overhead = Spread::of(overhead);
    let model = Spread::of(model);

    // Cache hits: exact (the same question) and semantic (a paraphrase).
    let mut exact = Vec::new();
    let mut semantic = Vec::new();
    let (mut exact_stages, mut semantic_stages) = (StageTimes::default(), StageTimes::default());
    let mut paraphrases_missed = 0;
    if !grounded.is_empty() {
        for i in 0..options.requests {
            let (latency, body) = api.ask(grounded[i % grounded.len()]).await?;
            if cache_kind(&body) == Some("exact") {
                exact.push(latency);
                exact_stages.add(latency, &body);
            }
        }
        for i in 0..options.requests {
            let (latency, body) = api.ask(&paraphrase(grounded[i % grounded.len()])).await?;
            match cache_kind(&body) {
                Some("semantic") => {
                    semantic.push(latency);
                    semantic_stages.add(latency, &body);
                }
                _ => paraphrases_missed += 1,
            }
        }
    }
    let exact = Spread::of(exact);
    let semantic = Spread::of(semantic);

    // Throughput under concurrent clients.
    let mut throughput = Vec::new();
    for clients in CONCURRENCY {
        let total = (clients * 8).max(options.requests);
        let (per_s, spread) = concurrent(clients, total, {
            let api = api.clone();
            move |i| {
                let api = api.clone();
                async move { api.retrieve(QUERIES[i % QUERIES.len()]).await }
            }
        })
        .await?;
        throughput.push(json!({"endpoint": "/retrieve", "clients": clients, "requests": total,
            "per_second": per_s, "p50_ms": spread.p50, "p95_ms": spread.p95}));
        if !grounded.is_empty() {
            let questions: Arc<Vec<&'static str>> = Arc::new(grounded.clone());
            let (per_s, spread) = concurrent(clients, total, {
                let api = api.clone();
                move |i| {
                    let api = api.clone();
                    let questions = questions.clone();
                    async move { Ok(api.ask(questions[i % questions.len()]).await?.0) }
                }
            })
            .await?;
            throughput
                .push(json!({"endpoint": "/answer (exact cache hit)", "clients": clients, "requests": total,
                "per_second": per_s, "p50_ms": spread.p50, "p95_ms": spread.p95}));
        }
    }

    println!();
    println!(
        "{:<44} {:>8} {:>9} {:>9}   goal (p95)",
        "one client, over HTTP on loopback", "samples", "p50 ms", "p95 ms"
    );
    retrieve.row("/retrieve", Some(RETRIEVE_P95_GOAL_MS));
    overhead.row("/answer miss: Lore's overhead (excl. model)", Some(OVERHEAD_P95_GOAL_MS));
    model.row("/answer miss: the model's time (for scale)", None);
    exact.row("/answer exact cache hit", Some(CACHE_HIT_P95_GOAL_MS));
    semantic.row("/answer semantic cache hit", Some(CACHE_HIT_P95_GOAL_MS));
    println!(
        "\nMisses: {answered} grounded answers, {refused} refusals; paraphrases that missed the semantic cache: {paraphrases_missed}."
    );
    println!("\nwhere the time goes (p50 ms per trace stage)");
    miss_stages.line("/answer miss");
    exact_stages.line("exact hit");
    semantic_stages.line("semantic hit");
    println!("\n{:<28} {:>8} {:>9} {:>10} {:>9}", "throughput", "clients", "req/s", "p50 ms", "p95 ms");
    for row in &throughput {
        println!(
            "{:<28} {:>8} {:>9.1} {:>10.1} {:>9.1}",
            row["endpoint"].as_str().unwrap_or_default(),
            row["clients"].as_u64().unwrap_or_default(),
            row["per_second"].as_f64().unwrap_or_default(),
            row["p50_ms"].as_f64().unwrap_or_default(),
            row["p95_ms"].as_f64().unwrap_or_default(),
        );
    }

    Ok(json!({
        "benchmark": "answer",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": build_profile(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "transport": "HTTP/1.1 on 127.0.0.1, client and server in one process",
        "retrieve": retrieve.json(Some(RETRIEVE_P95_GOAL_MS)),
        "answer_overhead_excluding_model": overhead.json(Some(OVERHEAD_P95_GOAL_MS)),
        "answer_model_time": model.json(None),
        "misses": {"grounded": answered, "refused": refused},
        "exact_cache_hit": exact.json(Some(CACHE_HIT_P95_GOAL_MS)),
        "semantic_cache_hit": semantic.json(Some(CACHE_HIT_P95_GOAL_MS)),
        "paraphrases_missed": paraphrases_missed,
        "stage_p50_ms": {
            "miss": miss_stages.json(),
            "exact_cache_hit": exact_stages.json(),
            "semantic_cache_hit": semantic_stages.json(),
        },
        "throughput": throughput,
    }))
}

/// Runs `total` requests from `clients` concurrent tasks; requests per second
/// and the latency spread.
pub(super) async fn concurrent<F, Fut>(
    clients: usize,
    total: usize,
    request: F,
) -> anyhow::Result<(f64, Spread)>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<f64>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let next = next.clone();
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return Ok::<_, anyhow::Error>(samples);
                }
                samples.push(request(i).await?);
            }
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.context("a benchmark client panicked")??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok((total as f64 / elapsed, Spread::of(samples)))
}
