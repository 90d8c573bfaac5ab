//! The answer pipeline: one function, [`answer`], for the Playground,
//! `POST /answer`, the widget and the MCP answer tool; its stages, one
//! function each, are in `pipeline`:
//!
//! normalise → readiness gate → pinned answer → exact cache → semantic cache → hybrid
//! retrieval (the active version's settings) → refusal when nothing passes
//! the cutoff (no model call) → prompt from the active ProfileVersion with
//! numbered passages → first-tier generation → grounding check → escalation
//! when not grounded (if bound) → answer with citations, or refusal.
//!
//! Every stage appends (stage, decision, reason, duration) to the trace,
//! which is also the run's cost funnel: where the question stopped and what
//! each model call cost. Every run is recorded server-side ([`runs`]); a
//! refusal counts its normalised question as a content gap.

pub mod cache;
pub mod feedback;
pub mod gaps;
/// The grounding check, its own crate (`lore-grounding`) below this floor.
pub use lore_grounding as grounding;
pub mod memory;
pub mod pins;
mod pipeline;
pub mod runs;
pub mod verify;

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fingerprint::RetrievalState;
use crate::profile::{self, Length, Snapshot};
use crate::providers::client::{Completion, Message};
use crate::providers::{self, Resolved, Role, TargetState};
use crate::retrieve::{self, Retrieved};
use crate::{readiness, sources, Error, Lore, Result};
use cache::{AnswerCache, CitedChunk, Entry};
use pipeline::pipeline;

use crate::trace::Tracer;
pub use crate::trace::{Stage, StageName, StageSink};

/// The longest question accepted, in characters.
pub const MAX_QUESTION_CHARS: usize = 4_000;

/// How many cached questions the semantic lookup considers.
const SEMANTIC_CANDIDATES: usize = 3;

/// Where a question came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    Playground,
    Api,
    Widget,
    Mcp,
    /// `lore ask` at the terminal.
    Cli,
}

impl Surface {
    pub fn key(self) -> &'static str {
        match self {
            Surface::Playground => "playground",
            Surface::Api => "api",
            Surface::Widget => "widget",
            Surface::Mcp => "mcp",
            Surface::Cli => "cli",
        }
    }

    /// The surface a question asked with a key of this kind comes from.
    pub fn of_key(kind: crate::keys::KeyKind) -> Surface {
        match kind {
            crate::keys::KeyKind::Secret => Surface::Api,
            crate::keys::KeyKind::Widget => Surface::Widget,
        }
    }

    /// Who reads what this surface is answered. A widget key is public (any
    /// visitor of the page can read it), so the widget's callers are
    /// visitors; every other surface is called by the admin or by a backend
    /// holding a secret key.
    pub fn audience(self) -> Audience {
        match self {
            Surface::Widget => Audience::Visitors,
            Surface::Playground | Surface::Api | Surface::Mcp | Surface::Cli => Audience::Whole,
        }
    }
}

/// What of a run's trace a caller may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// The whole trace: reasons, passages and scores, model, tokens, cost.
    Whole,
    /// The trace's id and each stage's name, decision and duration. The rest
    /// is the admin's: the reasons name models, gates and the escalation
    /// target's state. The recorded run keeps all of it under the same id.
    Visitors,
}

impl Audience {
    pub fn stage(self, stage: Stage) -> Stage {
        match self {
            Audience::Whole => stage,
            Audience::Visitors => stage.for_visitors(),
        }
    }

    pub fn answer(self, answer: Answer) -> Answer {
        match self {
            Audience::Whole => answer,
            Audience::Visitors => {
                let Trace { id, stages, .. } = answer.trace;
                let trace = Trace {
                    id,
                    stages: stages.into_iter().map(Stage::for_visitors).collect(),
                    retrieval: Vec::new(),
                    model: None,
                    usage: Usage::default(),
                };
                Answer { trace, ..answer }
            }
        }
    }
}

/// A question as a surface asks it.
#[derive(Clone, Debug)]
pub struct Ask {
    pub question: String,
    pub surface: Surface,
    /// The access key that asked (API, widget, MCP).
    pub key_id: Option<String>,
    /// Who asks: the run reads only what they may read.
    pub asker: crate::asker::Asker,
    /// Who asks, as a rating of the answer must name them.
    pub by: feedback::Asked,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    /// The passage number the answer cites (`[n]`).
    pub index: usize,
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub snippet: String,
    pub score: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    Hit,
    Miss,
    /// The active version has the cache off.
    Bypass,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheOutcome {
    pub status: CacheStatus,
    /// `exact` or `semantic` on a hit.
    pub kind: Option<String>,
    /// Similarity of the nearest cached question (1 for an exact hit).
    pub similarity: Option<f32>,
}

/// One retrieved passage as the trace shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracePassage {
    pub index: usize,
    pub chunk_id: String,
    pub title: String,
    pub score: f32,
    pub vector_score: f32,
    pub text_score: Option<f32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub estimated_cost_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub id: String,
    pub stages: Vec<Stage>,
    pub retrieval: Vec<TracePassage>,
    /// The model whose answer was served (or refused).
    pub model: Option<String>,
    pub usage: Usage,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub answer: String,
    pub refused: bool,
    pub grounded: bool,
    /// Served from an answer the admin pinned to this question.
    #[serde(default)]
    pub pinned: bool,
    pub citations: Vec<Citation>,
    /// Each statement of a generated answer with the span of its passage
    /// that says it (none for a refusal or a pinned answer).
    #[serde(default)]
    pub statements: Vec<Statement>,
    /// For a refusal: the closest passages found, which may be related
    /// though they do not answer. Never an answer's citations.
    #[serde(default)]
    pub related: Vec<Related>,
    pub cache: CacheOutcome,
    pub profile_version: i32,
    pub trace: Trace,
}

/// One statement of a served answer: what it says, the passage it cites
/// (as its citation's `index`) and the sentence or two there that say it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub text: String,
    pub citation: usize,
    pub support: grounding::Support,
}

/// A passage a refusal lists as maybe related: its page and the sentence of
/// it closest to the question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Related {
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub sentence: grounding::Support,
}

/// How many passages a refusal lists as maybe related.
pub const RELATED_PASSAGES: usize = 3;

/// The statements of a grounded verdict, each with its support.
fn statements(verdict: &grounding::Verdict) -> Vec<Statement> {
    verdict
        .judged
        .iter()
        .filter(|j| j.supported)
        .filter_map(|j| {
            Some(Statement {
                text: grounding::plain_statement(&j.statement),
                citation: j.passage?,
                support: j.support.clone()?,
            })
        })
        .collect()
}

/// The passages a refusal of `question` lists: the best of `found`, one per
/// document, each with its sentence closest to the question.
fn related(question: &str, found: &[Retrieved]) -> Vec<Related> {
    let mut listed: Vec<Related> = Vec::new();
    for passage in found {
        if listed.len() == RELATED_PASSAGES {
            break;
        }
        let chunk = &passage.chunk;
        if listed.iter().any(|r| r.document_id == chunk.document_id) {
            continue;
        }
        if let Some(sentence) = grounding::closest_sentence(question, &grounding_passage(passage)) {
            listed.push(Related {
                chunk_id: chunk.id.clone(),
                source_id: chunk.source_id.clone(),
                document_id: chunk.document_id.clone(),
                title: chunk.title.clone(),
                url: chunk.url.clone(),
                sentence,
            });
        }
    }
    listed
}

/// A retrieved passage as the grounding check reads it: the model saw its
/// page's title and heading too.
pub fn grounding_passage(passage: &Retrieved) -> grounding::Passage {
    let chunk = &passage.chunk;
    let context = format!("{} {}", chunk.title, chunk.heading.as_deref().unwrap_or_default());
    grounding::Passage::new(context, chunk.text.clone())
}

/// A run past its readiness gate (see [`start`]).
pub struct Started {
    /// The stages up to the gate, the gate included.
    pub passed: Vec<Stage>,
    /// The stages still to come, each as it ends.
    pub stages: tokio::sync::mpsc::UnboundedReceiver<Stage>,
    /// The run's outcome, once every stage has been sent.
    pub outcome: Outcome,
}

/// The end of a run started by [`start`].
pub struct Outcome(tokio::task::JoinHandle<Result<Answer>>);

impl Outcome {
    /// The run's result, a panic inside it included.
    pub async fn get(self) -> Result<Answer> {
        self.0.await.unwrap_or_else(|err| Err(Error::Internal(format!("the answer run failed: {err}"))))
    }
}

/// Starts answering `ask` on a task of its own and returns once the run has
/// passed the readiness gate, so that a caller can show the rest as it
/// happens; a run that fails before the gate returns its error instead. The
/// run goes on to its end (and is recorded) even if the caller drops what
/// this returns.
pub async fn start(lore: &Lore, ask: Ask) -> Result<Started> {
    let (sink, mut stages) = tokio::sync::mpsc::unbounded_channel();
    let run = {
        let lore = lore.clone();
        Outcome(tokio::spawn(async move { answer_reporting(&lore, ask, Some(sink)).await }))
    };
    let mut passed = Vec::new();
    while let Some(stage) = stages.recv().await {
        let gate = stage.stage == StageName::Readiness;
        passed.push(stage);
        if gate {
            return Ok(Started { passed, stages, outcome: run });
        }
    }
    // Every stage before the gate can only fail the run.
    run.get().await?;
    Err(Error::Internal("the answer run ended without passing its readiness gate".into()))
}

/// The question as shown (whitespace collapsed) and as the exact cache and
/// the content-gap list key it (also lower-cased, closing punctuation off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalised {
    pub text: String,
    pub key: String,
}

pub fn normalise(question: &str) -> Result<Normalised> {
    let text = question.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(Error::InvalidInput("the question is empty".into()));
    }
    if text.chars().count() > MAX_QUESTION_CHARS {
        return Err(Error::InvalidInput(format!(
            "the question is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let key = text.to_lowercase().trim_end_matches(['?', '!', '.', ' ']).to_owned();
    Ok(Normalised { text, key })
}

/// Answers `ask`: the one pipeline every surface uses.
pub async fn answer(lore: &Lore, ask: Ask) -> Result<Answer> {
    answer_reporting(lore, ask, None).await
}

/// [`answer`], sending each stage to `sink` as it ends: the run is the same,
/// the caller only sees it progress.
pub async fn answer_reporting(lore: &Lore, ask: Ask, sink: Option<StageSink>) -> Result<Answer> {
    pipeline(lore, ask, sink, None).await
}

/// Answers `question` as `candidate` would, whether or not it is the active
/// version: the eval run of a golden question. Pins and both caches are
/// bypassed (they would hide what the candidate says), nothing is cached,
/// and the run is not recorded: the Dashboard counts what callers asked.
pub async fn evaluate(
    lore: &Lore,
    candidate: &profile::Version,
    question: &str,
    asker: crate::asker::Asker,
) -> Result<Answer> {
    let ask = Ask {
        question: question.to_owned(),
        surface: Surface::Cli,
        key_id: None,
        asker,
        by: feedback::Asked::Terminal,
    };
    pipeline(lore, ask, None, Some(candidate)).await
}

impl Usage {
    fn add(&mut self, completion: &Completion, cost: f64) {
        self.input_tokens += completion.input_tokens;
        self.output_tokens += completion.output_tokens;
        self.estimated_cost_usd += cost;
    }
}

/// Tokens times the target's price per million (0 when unpriced).
pub fn estimate_cost(completion: &Completion, target: &Resolved) -> f64 {
    let price = |p: Option<f64>| p.unwrap_or(0.0) / 1_000_000.0;
    completion.input_tokens as f64 * price(target.target.input_price_per_mtok)
        + completion.output_tokens as f64 * price(target.target.output_price_per_mtok)
}

/// What the cache keeps of an answer.
#[derive(Serialize, Deserialize)]
struct CachedPayload {
    answer: String,
    citations: Vec<Citation>,
    /// Entries cached before statements were kept have none.
    #[serde(default)]
    statements: Vec<Statement>,
    model: Option<String>,
    /// What writing the answer cost: what each hit on it saves.
    #[serde(default)]
    estimated_cost_usd: f64,
}

/// The gate's maximum age for a source of this volatility: `medium` as set,
/// `high` a quarter, `low` seven times, `static` thirty times.
pub fn scaled_max_age(max_age_seconds: u64, volatility: sources::Volatility) -> i64 {
    let base = i64::try_from(max_age_seconds).unwrap_or(i64::MAX);
    match volatility {
        sources::Volatility::High => base / 4,
        sources::Volatility::Medium => base,
        sources::Volatility::Low => base.saturating_mul(7),
        sources::Volatility::Static => base.saturating_mul(30),
    }
}

/// Whether `text` contains the profile's refusal sentence (case and spacing aside).
pub fn says_refusal(text: &str, refusal: &str) -> bool {
    let squash = |s: &str| s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    let refusal = squash(refusal);
    !refusal.is_empty() && squash(text).contains(&refusal)
}

/// Whether a model's reply may be served as the answer: grounded in the
/// passages, and not the model declining. The refusal sentence is checked
/// apart because it can share enough words with the passages ("find",
/// "documentation") to pass the grounding check.
pub fn servable(reply: &str, verdict: &grounding::Verdict, refusal: &str) -> bool {
    verdict.grounded && !says_refusal(reply, refusal)
}

/// How long an answer citing sources of these volatilities may serve: the
/// shortest of their scaled ages, so an answer lives as long as its most
/// changeable source allows (a month's worth of a static page, a quarter of
/// the gate for a volatile one); the gate itself when no cited source is known.
pub fn cited_max_age(
    max_age_seconds: u64,
    volatilities: impl IntoIterator<Item = sources::Volatility>,
) -> i64 {
    volatilities
        .into_iter()
        .map(|volatility| scaled_max_age(max_age_seconds, volatility))
        .min()
        .unwrap_or_else(|| i64::try_from(max_age_seconds).unwrap_or(i64::MAX))
}

/// The system prompt of the version, then the numbered passages and the
/// question.
pub fn prompt(snapshot: &Snapshot, question: &str, passages: &[Retrieved]) -> Vec<Message> {
    let system = format!(
        "{}\n\nAnswer only from the numbered passages the user gives. After each statement, cite the passage it comes from as [n]. If the passages do not answer the question, reply exactly: {}",
        snapshot.prompt.trim(),
        snapshot.behavior.refusal.trim()
    );
    let user = numbered(question, passages, |passage| passage.chunk.text.trim().to_owned());
    vec![Message::system(system), Message::user(user)]
}

/// The user message: the numbered passages, each under its title and
/// heading, as `text` gives it, then the question.
fn numbered(question: &str, passages: &[Retrieved], text: impl Fn(&Retrieved) -> String) -> String {
    let mut user = String::from("Passages:\n");
    for (i, passage) in passages.iter().enumerate() {
        let chunk = &passage.chunk;
        let heading = chunk.heading.as_deref().map(|h| format!(" — {h}")).unwrap_or_default();
        user.push_str(&format!("\n[{}] {}{}\n{}\n", i + 1, chunk.title, heading, text(passage)));
    }
    user.push_str(&format!("\nQuestion: {question}"));
    user
}

/// The token budget of a quote-first reply: up to three copied sentences
/// with their markers, whatever the answer length.
pub const QUOTE_TOKENS: u32 = 200;

/// How many sentences of each passage (with those they continue and that
/// continue them) a quote-first prompt shows: see [`grounding::quotable`].
pub const QUOTABLE_SENTENCES: usize = 4;

/// The quote-first prompt: the model is asked to copy, word for word, the
/// sentences of the numbered passages that answer the question (see
/// [`grounding::quote`]). Each passage shows only the sentences closest to
/// the question ([`grounding::quotable`]): reading the prompt is most of a
/// small model's time, and quote-first serves only sentences that say the
/// question's words.
pub fn quote_prompt(snapshot: &Snapshot, question: &str, passages: &[Retrieved]) -> Vec<Message> {
    let system = format!(
        "{}\n\nAnswer by copying, word for word, the one to three sentences of the passages that answer the question, each followed by its passage number as [n]. Add nothing of your own. If the passages do not answer the question, reply exactly: {}",
        snapshot.prompt.trim(),
        snapshot.behavior.refusal.trim()
    );
    let user = numbered(question, passages, |passage| {
        let text = grounding::quotable(question, &grounding_passage(passage), QUOTABLE_SENTENCES);
        if text.is_empty() {
            "…".to_owned()
        } else {
            text
        }
    });
    vec![Message::system(system), Message::user(user)]
}

fn trace_passage(i: usize, r: &Retrieved) -> TracePassage {
    TracePassage {
        index: i + 1,
        chunk_id: r.chunk.id.clone(),
        title: r.chunk.title.clone(),
        score: r.score,
        vector_score: r.vector_score,
        text_score: r.text_score,
    }
}

fn citation(index: usize, r: &Retrieved) -> Citation {
    let snippet: String = r.chunk.text.chars().take(240).collect();
    Citation {
        index,
        chunk_id: r.chunk.id.clone(),
        source_id: r.chunk.source_id.clone(),
        document_id: r.chunk.document_id.clone(),
        title: r.chunk.title.clone(),
        url: r.chunk.url.clone(),
        snippet,
        score: r.score,
    }
}
