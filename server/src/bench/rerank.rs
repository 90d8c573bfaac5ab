//! `lore bench rerank`: what a reranker does to retrieval, over real
//! documentation with known answers.
//!
//! SQLite's documentation (every page of Debian's sqlite3-doc, `--docs`) is
//! uploaded and indexed for real. For each answerable question of
//! `quality-sqlite.json` (its answering page's title and the facts a right
//! answer holds), retrieval runs twice from the same candidates: in the
//! fused order, and reordered by the reranker at `--rerank-endpoint` through
//! `engine::rerank::apply`, the stage answers and `/retrieve` use, with a
//! pool of `--candidates`. Measured for each: recall@1 and recall@5 (the
//! answering page among the first results), fact recall@5 (a passage among
//! the first five that holds an expected fact) and the mean reciprocal rank
//! of the answering page, with the reranker's latency.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use engine::audit::Actor;
use engine::index::Scope;
use engine::providers::{self, AccountInput, Role, TargetInput};
use engine::retrieve::{RetrievalSettings, Retrieved};
use engine::{Lore, Settings};
use serde::Deserialize;
use serde_json::json;

use super::{build_profile, on_scratch_data};

const QUESTIONS: &str = include_str!("quality-sqlite.json");

pub struct RerankOptions {
    /// Where SQLite's documentation pages are.
    pub docs: PathBuf,
    /// A `/rerank` endpoint's API base (`http://127.0.0.1:PORT/v1`).
    pub rerank_endpoint: String,
    pub rerank_model: String,
    /// The candidates the reranker reorders.
    pub candidates: usize,
    pub out: Option<PathBuf>,
}

#[derive(Deserialize)]
struct QuestionSet {
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    #[serde(default)]
    facts: Vec<String>,
    #[serde(default)]
    title: Option<String>,
}

/// Recall figures over the answerable questions, for one order.
#[derive(Default)]
struct Recall {
    at_1: usize,
    at_5: usize,
    fact_at_5: usize,
    reciprocal_ranks: f64,
}

impl Recall {
    fn count(&mut self, question: &Question, title: &str, results: &[Retrieved]) {
        let rank = results.iter().position(|r| r.chunk.title.contains(title));
        self.at_1 += usize::from(rank == Some(0));
        self.at_5 += usize::from(rank.is_some_and(|r| r < 5));
        self.reciprocal_ranks += rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
        let holds = |r: &Retrieved| {
            let text = r.chunk.text.to_lowercase();
            question.facts.iter().any(|fact| text.contains(&fact.to_lowercase()))
        };
        self.fact_at_5 += usize::from(results.iter().take(5).any(holds));
    }

    fn record(&self, questions: usize) -> serde_json::Value {
        let share = |n: usize| n as f64 / questions.max(1) as f64;
        json!({
            "recall_at_1": share(self.at_1),
            "recall_at_5": share(self.at_5),
            "fact_recall_at_5": share(self.fact_at_5),
            "mrr": self.reciprocal_ranks / questions.max(1) as f64,
        })
    }
}

pub async fn rerank(settings: Settings, options: RerankOptions) -> anyhow::Result<()> {
    let set: QuestionSet = serde_json::from_str(QUESTIONS).context("reading quality-sqlite.json")?;
    let out = options.out.clone();
    on_scratch_data(settings, &out, "rerank.json", |lore| async move { measure(&lore, &set, &options).await })
        .await
}

async fn measure(
    lore: &Lore,
    set: &QuestionSet,
    options: &RerankOptions,
) -> anyhow::Result<serde_json::Value> {
    // 1. Every page, indexed for real.
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&options.docs)
        .with_context(|| {
            format!("reading {} (install Debian's sqlite3-doc, or pass --docs)", options.docs.display())
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "html"))
        .collect();
    pages.sort();
    println!("Indexing {} pages of {} …", pages.len(), options.docs.display());
    let source = engine::ingest::lifecycle::upload_source_named(lore, &Actor::System, "sqlite-docs").await?;
    for path in &pages {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let upload = engine::ingest::upload::Upload { file_name, content_type: None, bytes };
        engine::ingest::upload::receive(lore, &source.id, upload).await?;
    }
    let owner = engine::ingest::jobs::owner_id("bench");
    let mut failed = 0;
    while let Some(job) = engine::ingest::jobs::claim_next(lore, &owner).await? {
        let ended = engine::ingest::jobs::run(lore, job, &owner, None).await?;
        failed += usize::from(ended.status != "succeeded");
    }
    let store = lore.chunks().await?;
    let chunks = store.count(None).await?;
    println!("Corpus: {chunks} chunks ({failed} pages not indexed).");

    // 2. The reranker, bound to the rerank role as an admin binds it.
    let actor = Actor::System;
    let account = providers::create_account(
        lore,
        &actor,
        AccountInput {
            name: Some("bench reranker".into()),
            kind: "custom".into(),
            endpoint: Some(options.rerank_endpoint.clone()),
            ..AccountInput::default()
        },
    )
    .await?;
    let target = providers::register_target(
        lore,
        &actor,
        TargetInput {
            account_id: account.id,
            capability: "rerank".into(),
            model: options.rerank_model.clone(),
            ..TargetInput::default()
        },
    )
    .await?;
    let (_, probe) = providers::probe(lore, &actor, &target.id).await?;
    anyhow::ensure!(probe.ok, "the reranker did not answer its probe: {:?}", probe.error);
    providers::bind(lore, &actor, Role::Rerank, &target.id).await?;
    let reranker = engine::rerank::reranker(lore).await?.context("the rerank role is not bound")?;

    // 3. Each question, fused and reranked from the same candidates.
    let embedder = lore.embedder().await?;
    let scope = Scope::only(vec![source.id.clone()]);
    let settings = RetrievalSettings {
        top_k: 5,
        score_cutoff: 0.0,
        rerank_candidates: options.candidates,
        ..RetrievalSettings::default()
    };
    let widened = settings.widened_for_rerank();
    let (mut fused, mut reranked) = (Recall::default(), Recall::default());
    let mut latencies = Vec::new();
    let mut rows = Vec::new();
    let answerable: Vec<(&Question, &str)> =
        set.questions.iter().filter_map(|q| q.title.as_deref().map(|t| (q, t))).collect();
    for (question, title) in &answerable {
        let mut found =
            engine::retrieve::hybrid(store.as_ref(), embedder.as_ref(), &question.question, &scope, &widened)
                .await?;
        fused.count(question, title, &found.results);
        let fused_rank = found.results.iter().position(|r| r.chunk.title.contains(title));
        let started = Instant::now();
        let pool = found.results.len();
        let outcome = engine::rerank::apply(lore, &reranker, &question.question, &mut found, pool).await;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(outcome.decision == "reordered", "the reranker failed: {}", outcome.reason);
        reranked.count(question, title, &found.results);
        let reranked_rank = found.results.iter().position(|r| r.chunk.title.contains(title));
        println!(
            "  fused {:>4}  reranked {:>4}  {}",
            fused_rank.map_or("-".to_owned(), |r| (r + 1).to_string()),
            reranked_rank.map_or("-".to_owned(), |r| (r + 1).to_string()),
            question.question
        );
        rows.push(json!({
            "question": question.question,
            "page": title,
            "fused_rank": fused_rank.map(|r| r + 1),
            "reranked_rank": reranked_rank.map(|r| r + 1),
        }));
    }
    let n = answerable.len();
    latencies.sort_by(f64::total_cmp);
    let median = latencies.get(latencies.len() / 2).copied().unwrap_or(0.0);
    let (fused, reranked) = (fused.record(n), reranked.record(n));
    println!();
    println!(
        "Retrieval over {chunks} chunks, {n} questions, {} candidates reranked by {}",
        options.candidates, options.rerank_model
    );
    println!("  {:<10} {:>9} {:>9} {:>14} {:>6}", "", "recall@1", "recall@5", "fact recall@5", "MRR");
    for (name, figures) in [("fused", &fused), ("reranked", &reranked)] {
        println!(
            "  {:<10} {:>8.0}% {:>8.0}% {:>13.0}% {:>6.2}",
            name,
            figures["recall_at_1"].as_f64().unwrap_or(0.0) * 100.0,
            figures["recall_at_5"].as_f64().unwrap_or(0.0) * 100.0,
            figures["fact_recall_at_5"].as_f64().unwrap_or(0.0) * 100.0,
            figures["mrr"].as_f64().unwrap_or(0.0)
        );
    }
    println!("  reranker latency: median {median:.1} ms for {} candidates", options.candidates);
    Ok(json!({
        "benchmark": "rerank",
        "build": build_profile(),
        "reranker": options.rerank_model,
        "pages": pages.len(),
        "chunks": chunks,
        "questions": n,
        "candidates": options.candidates,
        "fused": fused,
        "reranked": reranked,
        "rerank_latency_ms_median": median,
        "rows": rows,
    }))
}
