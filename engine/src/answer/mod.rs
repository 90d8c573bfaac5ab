//! The answer pipeline: one function, [`answer`], for the Playground,
//! `POST /answer`, the widget and the MCP answer tool.
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
pub mod gaps;
pub mod grounding;
pub mod pins;
pub mod runs;
pub mod verify;

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::corpus::RetrievalState;
use crate::profile::{self, Length, Snapshot};
use crate::providers::client::{Completion, Message};
use crate::providers::{self, Resolved, Role, TargetState};
use crate::retrieve::{self, Retrieved};
use crate::{readiness, sources, Error, Lore, Result};
use cache::{AnswerCache, CitedChunk, Entry};

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
    pub cache: CacheOutcome,
    pub profile_version: i32,
    pub trace: Trace,
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
pub async fn evaluate(lore: &Lore, candidate: &profile::Version, question: &str) -> Result<Answer> {
    let ask = Ask { question: question.to_owned(), surface: Surface::Cli, key_id: None };
    pipeline(lore, ask, None, Some(candidate)).await
}

/// The one pipeline: serving the active version (`candidate` is `None`) or
/// evaluating a candidate.
async fn pipeline(
    lore: &Lore,
    ask: Ask,
    sink: Option<StageSink>,
    candidate: Option<&profile::Version>,
) -> Result<Answer> {
    let started = Instant::now();
    let evaluating = candidate.is_some();
    let mut trace = Tracer::new(sink);
    let question = normalise(&ask.question)?;
    trace.stage(StageName::Normalise, "ok", format!("{} characters", question.text.chars().count()));

    // A candidate that binds the embedding role answers with its model from
    // its shadow index; everything else with the active ones.
    let shadow = match candidate.filter(|c| !c.active).and_then(|c| c.binding.as_ref()) {
        Some(binding) if binding.role == Role::Embedding => {
            Some(crate::shadow::for_candidate(lore, binding).await?)
        }
        _ => None,
    };
    let shadowed = shadow.as_ref();
    let embedder = move || async move {
        match shadowed {
            Some(shadow) => Ok(shadow.embedder.clone()),
            None => lore.embedder().await,
        }
    };

    // The readiness gate: the same verdict the Readiness panel shows. A
    // question the exact cache does not know needs its embedding whatever
    // the verdict's details, so that runs meanwhile (its result waits until
    // the gate has passed).
    let embedding = async {
        let known = lore.answer_cache().await.map(|cache| cache.knows(&question.key)).unwrap_or(true);
        if known && !evaluating {
            return None;
        }
        Some(async { embedder().await?.embed_query(&question.text).await.map_err(Error::from) }.await)
    };
    let (assessment, early_vector) = tokio::join!(readiness::Assessment::read(lore), embedding);
    let assessment = assessment?;
    if let RetrievalState::FailingClosed(why) = assessment.retrieval_state(lore).await? {
        return Err(Error::RetrievalFailingClosed(why));
    }
    if !assessment.state.can_answer {
        return Err(Error::NotAnswerable(assessment.state.reasons));
    }
    let scope = assessment.search_scope();
    let active = assessment.profile.as_ref().ok_or(profile::ProfileError::NoProfile)?;
    let version = candidate.unwrap_or(active);
    let embedded = if early_vector.is_some() { "; the question was embedded meanwhile" } else { "" };
    let serves = if evaluating { "is evaluated" } else { "serves" };
    trace.stage(
        StageName::Readiness,
        "answerable",
        format!("profile version {} {serves}{embedded}", version.version),
    );
    let mut early_vector = early_vector;

    let run = Run {
        lore,
        ask: &ask,
        question: &question,
        snapshot: &version.snapshot,
        version: version.version,
        activated_at: version.activated_at,
        enabled: &scope.sources,
        sources: assessment.sources(),
        evaluating,
    };
    let answer_cache = lore.answer_cache().await?;
    let gates = &version.snapshot.cache;
    // An evaluation sees what the candidate itself says.
    let caching = gates.enabled && !evaluating;

    // A pinned answer: the question, or a paraphrase above the semantic gate.
    if !evaluating {
        let pinned =
            pins::lookup(lore, &question, &mut early_vector, gates.min_similarity, &scope.sources).await?;
        match pinned {
            pins::Lookup::None => {}
            pins::Lookup::Flagged { question: pinned, why } => trace.stage(
                StageName::Pinned,
                "flagged",
                format!("the answer pinned to “{pinned}” is flagged for review: {why}"),
            ),
            pins::Lookup::Held { question: pinned, why } => trace.stage(
                StageName::Pinned,
                "held",
                format!("the answer pinned to “{pinned}” is held: {why}"),
            ),
            pins::Lookup::Serve { pin, similarity } => {
                let how = if similarity >= 1.0 {
                    "the same question".to_owned()
                } else {
                    format!("a question {similarity:.3} similar (gate {:.2})", gates.min_similarity)
                };
                trace.stage(
                    StageName::Pinned,
                    "served",
                    format!("an answer is pinned to {how}: “{}”", pin.question),
                );
                return run.serve_pinned(pin, trace, started).await;
            }
        }
    }

    // Exact cache.
    if caching {
        match answer_cache.exact(&question.key, version.version) {
            Some(entry) => match run.validate(&entry).await? {
                Ok(()) => {
                    trace.stage(
                        StageName::ExactCache,
                        "hit",
                        "the same question was answered under this version",
                    );
                    return run.serve_cached(entry, "exact", 1.0, trace, started).await;
                }
                Err(why) => {
                    answer_cache.delete(&entry.id).await?;
                    trace.stage(
                        StageName::ExactCache,
                        "miss",
                        format!("the cached answer is invalid: {why}"),
                    );
                }
            },
            None => trace.stage(StageName::ExactCache, "miss", "no cached answer for this question"),
        }
    } else {
        trace.stage(StageName::ExactCache, "bypass", bypassed(evaluating));
    }

    let vector = match early_vector {
        Some(vector) => vector?,
        None => embedder().await?.embed_query(&question.text).await?,
    };

    // Semantic cache.
    let mut nearest = None;
    if caching {
        let found = answer_cache.nearest(&vector, version.version, SEMANTIC_CANDIDATES);
        let mut decided = None;
        // Why the first candidate above the gate could not serve, if one could not.
        let mut invalid = None;
        for (entry, similarity) in found {
            if similarity < gates.min_similarity {
                // The nearest entry still cached: the similarity to report.
                nearest = Some(similarity);
                break;
            }
            match run.validate(&entry).await? {
                Ok(()) => {
                    decided = Some((entry, similarity));
                    break;
                }
                Err(why) => {
                    answer_cache.delete(&entry.id).await?;
                    invalid.get_or_insert(format!(
                        "a cached question {similarity:.3} similar was invalid: {why}"
                    ));
                }
            }
        }
        if let Some((entry, similarity)) = decided {
            trace.stage(
                StageName::SemanticCache,
                "hit",
                format!("a cached question is {similarity:.3} similar (gate {:.2})", gates.min_similarity),
            );
            return run.serve_cached(entry, "semantic", similarity, trace, started).await;
        }
        let below = match nearest {
            Some(s) => format!(
                "the nearest cached question is below the gate ({s:.3} < {:.2})",
                gates.min_similarity
            ),
            None if invalid.is_some() => "no valid one among the nearest".to_owned(),
            None => "no cached question under this version".to_owned(),
        };
        let reason = match invalid {
            Some(invalid) => format!("{invalid}; {below}"),
            None => below,
        };
        trace.stage(StageName::SemanticCache, "miss", reason);
    } else {
        trace.stage(StageName::SemanticCache, "bypass", bypassed(evaluating));
    }
    let cache_outcome = CacheOutcome {
        status: if caching { CacheStatus::Miss } else { CacheStatus::Bypass },
        kind: None,
        similarity: nearest,
    };

    // Retrieval.
    let store = match &shadow {
        Some(shadow) => shadow.store.clone(),
        None => lore.chunks().await?,
    };
    let settings = version.snapshot.retrieval;
    let reranker = crate::rerank::reranker(lore).await?;
    let widened = crate::rerank::settings_for(&settings, reranker.as_ref());
    let mut retrieval =
        retrieve::hybrid_with_vector(store.as_ref(), &vector, &question.text, &scope, &widened).await?;
    let reranked = match &reranker {
        Some(reranker) if !retrieval.results.is_empty() => {
            Some(crate::rerank::apply(lore, reranker, &question.text, &mut retrieval, settings.top_k).await)
        }
        _ => None,
    };
    let passages = retrieval.results;
    let trace_passages: Vec<TracePassage> =
        passages.iter().enumerate().map(|(i, r)| trace_passage(i, r)).collect();
    if passages.is_empty() {
        trace.stage(
            StageName::Retrieval,
            "nothing",
            format!(
                "{} candidates, none at or above the cutoff {:.2}",
                retrieval.candidates, settings.score_cutoff
            ),
        );
        trace.stage(
            StageName::Refusal,
            "refused",
            "nothing retrievable answers the question; no model was called",
        );
        return run.refuse(trace, trace_passages, cache_outcome, None, Usage::default(), started).await;
    }
    trace.stage(
        StageName::Retrieval,
        "passages",
        format!(
            "{} of {} candidates passed the cutoff {:.2}",
            passages.len(),
            retrieval.candidates,
            settings.score_cutoff
        ),
    );
    let rerank_cost = reranked.as_ref().and_then(|r| r.cost_usd).unwrap_or(0.0);
    if let Some(reranked) = reranked {
        trace.stage_costing(StageName::Rerank, reranked.decision, reranked.reason, reranked.cost_usd);
    }

    // A candidate that stands for a model binding answers with that model
    // in its role; the active version with what is bound.
    let trial = match candidate.filter(|c| !c.active).and_then(|c| c.binding.as_ref()) {
        Some(profile::Rebinding { role, target_id: Some(id), .. }) => {
            Some((*role, providers::resolve_target(lore, id).await?))
        }
        _ => None,
    };
    let trial_for = |role: Role| trial.as_ref().filter(|(r, _)| *r == role).map(|(_, resolved)| resolved);

    let messages = prompt(&version.snapshot, &question.text, &passages);
    trace.stage(
        StageName::Prompt,
        "built",
        format!("{} passages, profile version {}", passages.len(), version.version),
    );

    // First tier.
    // The target the readiness gate passed, not a second read of the binding.
    let generation = trial_for(Role::Generation)
        .or(assessment.generation())
        .ok_or_else(|| Error::NotAnswerable(vec!["provider: No generation target is bound.".to_owned()]))?;
    let mut usage = Usage { estimated_cost_usd: rerank_cost, ..Usage::default() };
    let first = match run.generate(generation, &messages).await {
        Ok(first) => first,
        Err(err) => {
            // The provider's reply and address stay in the log: the trace
            // reaches API and widget callers.
            tracing::warn!(error = %err, model = %generation.target.model, "the generation call failed");
            trace.stage(
                StageName::Generation,
                "failed",
                format!("{} did not answer", generation.target.model),
            );
            run.record_failure(
                trace,
                trace_passages,
                cache_outcome,
                generation.target.model.clone(),
                started,
            )
            .await;
            return Err(err);
        }
    };
    let cost = first.cost(generation);
    usage.add(&first.completion, cost);
    // The funnel tells on-node answers (no spend) from off-node ones.
    let (decision, place) = match generation.account.placement {
        providers::Placement::OnNode => ("answered_on_node", "on-node"),
        providers::Placement::OffNode => ("answered", "off-node"),
    };
    trace.stage_costing(
        StageName::Generation,
        decision,
        format!("{} ({place}) wrote {} tokens", generation.target.model, first.completion.output_tokens),
        Some(cost),
    );
    // The model saw each passage's title and heading too.
    let passage_texts: Vec<grounding::Passage> = passages
        .iter()
        .map(|p| {
            let context = format!("{} {}", p.chunk.title, p.chunk.heading.as_deref().unwrap_or_default());
            grounding::Passage::new(context, p.chunk.text.clone())
        })
        .collect();
    let min_support = lore.settings.answer.grounding_min_support;
    let margin = lore.settings.answer.verification_margin;
    let mut served = (generation.target.model.clone(), first.completion.text.clone());
    let mut verdict = grounding::check(&question.text, &served.1, &passage_texts, min_support);
    let declined = run.declined(&served.1);
    if declined {
        trace.stage(
            StageName::Grounding,
            "declined",
            "the model said the passages do not answer the question",
        );
    } else {
        trace.stage_detailed(
            StageName::Grounding,
            if verdict.grounded { "grounded" } else { "ungrounded" },
            verdict.reason.clone(),
            None,
            Some(verdict.detail.clone()),
        );
    }
    // The escalation target, read only when the run may need it: to
    // escalate, or to give a second opinion on narrow passes.
    let wants_escalation =
        !declined && (!verdict.grounded || (margin > 0.0 && !verdict.narrow_passes(margin).is_empty()));
    let escalation = match trial_for(Role::Escalation) {
        Some(trial) if wants_escalation => Some(trial.clone()),
        _ if wants_escalation => providers::resolve(lore, Role::Escalation).await?,
        _ => None,
    };
    // The judge is the stronger model the admin bound for escalation: the
    // generation model judging its own words adds noise, not evidence.
    let judge = escalation.as_ref().filter(|e| e.state == TargetState::Ready);
    if verdict.grounded && !declined && margin > 0.0 {
        match judge {
            Some(judge) => run.verify(judge, &mut verdict, &passage_texts, &mut usage, &mut trace).await,
            None if !verdict.narrow_passes(margin).is_empty() => trace.stage(
                StageName::Verification,
                "no_judge",
                "statements passed narrowly, and no ready escalation target is bound to judge them",
            ),
            None => {}
        }
    }

    if !verdict.grounded && !declined {
        match escalation {
            None => trace.stage(StageName::Escalation, "unbound", "no escalation target is bound"),
            Some(first) => {
                // The chain: the escalation role's target, then the further
                // tiers, each tried only while every answer before it was
                // not grounded. Each tier's decision names its tier.
                let mut tiers = vec![first];
                tiers.extend(providers::resolve_further_tiers(lore).await?);
                for (i, tier) in tiers.iter().enumerate() {
                    let n = i + 1;
                    if tier.state != TargetState::Ready {
                        trace.stage(
                            StageName::Escalation,
                            &format!("tier{n}_disabled"),
                            format!("tier {n}: {} is {}", tier.target.model, tier.state.key()),
                        );
                        continue;
                    }
                    match run.generate(tier, &messages).await {
                        Ok(next) => {
                            let cost = next.cost(tier);
                            usage.add(&next.completion, cost);
                            let mut again = grounding::check(
                                &question.text,
                                &next.completion.text,
                                &passage_texts,
                                min_support,
                            );
                            let outcome = if again.grounded { "grounded" } else { "ungrounded" };
                            trace.stage_detailed(
                                StageName::Escalation,
                                &format!("tier{n}_{outcome}"),
                                format!("tier {n}: {}: {}", tier.target.model, again.reason),
                                Some(cost),
                                Some(again.detail.clone()),
                            );
                            if again.grounded && margin > 0.0 {
                                run.verify(tier, &mut again, &passage_texts, &mut usage, &mut trace).await;
                            }
                            served = (tier.target.model.clone(), next.completion.text);
                            verdict = again;
                            if verdict.grounded {
                                break;
                            }
                        }
                        // The answers before already failed the check: the
                        // next tier is tried, and with none left the
                        // question is refused, as when unbound.
                        Err(err) => {
                            tracing::warn!(error = %err, model = %tier.target.model, tier = n, "the escalation call failed");
                            trace.stage(
                                StageName::Escalation,
                                &format!("tier{n}_failed"),
                                format!("tier {n}: {} did not answer", tier.target.model),
                            );
                        }
                    }
                }
            }
        }
    }

    if !servable(&served.1, &verdict, &version.snapshot.behavior.refusal) {
        let reason = if run.declined(&served.1) {
            "the model declined; the profile's refusal is served"
        } else {
            "no grounded answer; the profile's refusal is served"
        };
        trace.stage(StageName::Answer, "refused", reason);
        return run.refuse(trace, trace_passages, cache_outcome, Some(served.0), usage, started).await;
    }

    let citations: Vec<Citation> =
        verdict.cited.iter().filter_map(|&n| passages.get(n - 1).map(|p| citation(n, p))).collect();
    let answer = Answer {
        answer: served.1.trim().to_owned(),
        refused: false,
        grounded: true,
        pinned: false,
        citations,
        cache: cache_outcome,
        profile_version: version.version,
        trace: Trace {
            id: String::new(),
            stages: Vec::new(),
            retrieval: trace_passages,
            model: Some(served.0),
            usage,
        },
    };
    trace.stage(StageName::Answer, "answered", format!("{} citations", answer.citations.len()));
    if caching {
        run.store(&answer_cache, &answer, &passages, vector).await?;
    }
    run.finish(answer, trace, started).await
}

/// What one question's run needs at hand.
struct Run<'a> {
    lore: &'a Lore,
    ask: &'a Ask,
    question: &'a Normalised,
    snapshot: &'a Snapshot,
    version: i32,
    /// When `version` last became active.
    activated_at: Option<DateTime<Utc>>,
    /// The enabled sources, as the readiness assessment read them.
    enabled: &'a [String],
    /// Every source, as read with them.
    sources: &'a [sources::Source],
    /// An eval run: nothing is cached or recorded.
    evaluating: bool,
}

/// Why a cache stage was bypassed.
fn bypassed(evaluating: bool) -> &'static str {
    if evaluating {
        "an eval run answers as the candidate version would, without the cache"
    } else {
        "the cache is off in this profile version"
    }
}

struct Generated {
    completion: Completion,
}

impl Generated {
    fn cost(&self, target: &Resolved) -> f64 {
        estimate_cost(&self.completion, target)
    }
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

impl Run<'_> {
    async fn generate(&self, target: &Resolved, messages: &[Message]) -> Result<Generated> {
        let max_tokens = match self.snapshot.behavior.length {
            Length::Brief => 160,
            Length::Standard => 320,
            Length::Detailed => 640,
        };
        let completion = providers::chat(
            self.lore,
            &target.endpoint,
            &target.target.model,
            messages,
            max_tokens,
            0.0,
            None,
        )
        .await
        .map_err(providers::ProviderError::from)?;
        Ok(Generated { completion })
    }

    /// The second opinion on the claims `verdict` passed narrowly, recorded
    /// as the Verification stage.
    async fn verify(
        &self,
        judge: &Resolved,
        verdict: &mut grounding::Verdict,
        passages: &[grounding::Passage],
        usage: &mut Usage,
        trace: &mut Tracer,
    ) {
        let margin = self.lore.settings.answer.verification_margin;
        let opinion = verify::second_opinion(self.lore, judge, verdict, passages, margin, usage).await;
        trace.stage_costing(StageName::Verification, opinion.decision, opinion.reason, opinion.cost_usd);
    }

    /// Whether the model itself said the passages do not answer.
    fn declined(&self, text: &str) -> bool {
        says_refusal(text, &self.snapshot.behavior.refusal)
    }

    /// Why a cached entry may not serve now (`Ok(Err(why))`), or that it may.
    async fn validate(&self, entry: &Entry) -> Result<std::result::Result<(), String>> {
        let gates = &self.snapshot.cache;
        if entry.profile_version != self.version {
            return Ok(Err("it was made under another profile version".into()));
        }
        if self.activated_at.is_some_and(|activated| entry.created_at < activated) {
            return Ok(Err("it was made before this version was last made active".into()));
        }
        if gates.grounded_only && !entry.grounded {
            return Ok(Err("it was not grounded".into()));
        }
        let ids: Vec<String> = entry.cited.iter().map(|c| c.chunk_id.clone()).collect();
        let stored = self.lore.chunks().await?.content_hashes(&ids).await?;
        let current: HashMap<String, (String, String)> =
            stored.into_iter().filter(|(_, (source, _))| self.enabled.contains(source)).collect();
        let hashes: HashMap<String, String> =
            current.iter().map(|(id, (_, hash))| (id.clone(), hash.clone())).collect();
        if !cache::citations_current(&entry.cited, &hashes) {
            return Ok(Err("a cited passage changed or disappeared".into()));
        }
        // The cited sources' volatility as set now: turning a source to
        // `high` shortens the life of the answers already cached from it.
        let max_age =
            cited_max_age(gates.max_age_seconds, current.values().map(|(source, _)| self.volatility(source)));
        if (Utc::now() - entry.created_at).num_milliseconds() > max_age.saturating_mul(1000) {
            return Ok(Err(format!("it is older than its {max_age} s maximum age")));
        }
        Ok(Ok(()))
    }

    /// A source's volatility, as read with the readiness verdict.
    fn volatility(&self, source_id: &str) -> sources::Volatility {
        self.sources.iter().find(|s| s.id == source_id).map_or(sources::Volatility::Medium, |s| s.volatility)
    }

    async fn serve_cached(
        &self,
        entry: Entry,
        kind: &str,
        similarity: f32,
        mut trace: Tracer,
        started: Instant,
    ) -> Result<Answer> {
        let cached: CachedPayload = serde_json::from_value(entry.payload)
            .map_err(|err| Error::Internal(format!("an answer cache entry is unreadable: {err}")))?;
        trace.stage(StageName::Answer, "answered", format!("served from the {kind} cache"));
        let answer = Answer {
            answer: cached.answer,
            refused: false,
            grounded: entry.grounded,
            pinned: false,
            citations: cached.citations,
            cache: CacheOutcome {
                status: CacheStatus::Hit,
                kind: Some(kind.to_owned()),
                similarity: Some(similarity),
            },
            profile_version: self.version,
            trace: Trace {
                id: String::new(),
                stages: Vec::new(),
                retrieval: Vec::new(),
                model: cached.model,
                usage: Usage::default(),
            },
        };
        self.record(answer, trace, started, cached.estimated_cost_usd, None).await
    }

    /// Serves the admin's pinned answer: no model is called.
    async fn serve_pinned(&self, pin: pins::Pin, mut trace: Tracer, started: Instant) -> Result<Answer> {
        trace.stage(StageName::Answer, "answered", "the pinned answer is served");
        let answer = Answer {
            answer: pin.answer,
            refused: false,
            grounded: true,
            pinned: true,
            citations: pin.citations.into_iter().map(|c| c.citation).collect(),
            cache: CacheOutcome { status: CacheStatus::Bypass, kind: None, similarity: None },
            profile_version: self.version,
            trace: Trace {
                id: String::new(),
                stages: Vec::new(),
                retrieval: Vec::new(),
                model: None,
                usage: Usage::default(),
            },
        };
        self.record(answer, trace, started, 0.0, None).await
    }

    async fn refuse(
        &self,
        trace: Tracer,
        retrieval: Vec<TracePassage>,
        cache: CacheOutcome,
        model: Option<String>,
        usage: Usage,
        started: Instant,
    ) -> Result<Answer> {
        let answer = Answer {
            answer: self.snapshot.behavior.refusal.clone(),
            refused: true,
            grounded: false,
            pinned: false,
            citations: Vec::new(),
            cache,
            profile_version: self.version,
            trace: Trace { id: String::new(), stages: Vec::new(), retrieval, model, usage },
        };
        let gap = runs::Gap { key: self.question.key.clone(), asked: self.question.text.clone() };
        self.record(answer, trace, started, 0.0, Some(gap)).await
    }

    /// Records a run whose first-tier model call failed: neither answered
    /// nor refused (not a content gap), but counted, with its trace, so the
    /// Dashboard shows the outage. The caller gets the error, so a failure
    /// to record is only logged.
    async fn record_failure(
        &self,
        trace: Tracer,
        retrieval: Vec<TracePassage>,
        cache: CacheOutcome,
        model: String,
        started: Instant,
    ) {
        let failed = Answer {
            answer: String::new(),
            refused: false,
            grounded: false,
            pinned: false,
            citations: Vec::new(),
            cache,
            profile_version: self.version,
            trace: Trace {
                id: String::new(),
                stages: Vec::new(),
                retrieval,
                model: Some(model),
                usage: Usage::default(),
            },
        };
        if let Err(err) = self.record(failed, trace, started, 0.0, None).await {
            tracing::warn!(error = %err, "could not record a failed run");
        }
    }

    /// Caches a grounded answer (its maximum age is decided at each lookup,
    /// from the cited sources' volatility then).
    async fn store(
        &self,
        answer_cache: &AnswerCache,
        answer: &Answer,
        passages: &[Retrieved],
        vector: Vec<f32>,
    ) -> Result<()> {
        let gates = &self.snapshot.cache;
        if gates.grounded_only && !answer.grounded {
            return Ok(());
        }
        // Entries that can never serve again go as this one comes: those
        // made before this version was last made active (whatever their
        // version), and those older than any source's volatility lets an
        // answer live (a static one's). An entry made after this run read
        // the profile belongs to a version activated since: it stays.
        let longest = scaled_max_age(gates.max_age_seconds, sources::Volatility::Static);
        let oldest = chrono::Duration::try_seconds(longest)
            .and_then(|age| Utc::now().checked_sub_signed(age))
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        answer_cache.prune(self.activated_at.map_or(oldest, |activated| activated.max(oldest))).await?;
        let cited: Vec<&Retrieved> =
            answer.citations.iter().filter_map(|c| passages.get(c.index - 1)).collect();
        let payload = serde_json::to_value(CachedPayload {
            answer: answer.answer.clone(),
            citations: answer.citations.clone(),
            model: answer.trace.model.clone(),
            estimated_cost_usd: answer.trace.usage.estimated_cost_usd,
        })
        .map_err(|err| Error::Internal(format!("serialising a cache entry: {err}")))?;
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            question: self.question.key.clone(),
            profile_version: self.version,
            created_at: Utc::now(),
            grounded: answer.grounded,
            payload,
            cited: cited
                .iter()
                .map(|p| CitedChunk {
                    chunk_id: p.chunk.id.clone(),
                    content_hash: p.chunk.content_hash.clone(),
                })
                .collect(),
            vector,
        };
        Ok(answer_cache.insert(&entry).await?)
    }

    /// Completes the trace, records the run and returns the answer.
    async fn finish(&self, answer: Answer, trace: Tracer, started: Instant) -> Result<Answer> {
        self.record(answer, trace, started, 0.0, None).await
    }

    /// Records the run (behind the request); a cache hit saved `savings_usd`,
    /// a refusal counts its `gap`.
    async fn record(
        &self,
        mut answer: Answer,
        trace: Tracer,
        started: Instant,
        savings_usd: f64,
        gap: Option<runs::Gap>,
    ) -> Result<Answer> {
        answer.trace.stages = trace.stages;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        if self.evaluating {
            answer.trace.id = format!("eval-{}", uuid::Uuid::new_v4());
            return Ok(answer);
        }
        answer.trace.id =
            runs::record(self.lore, self.ask, &self.question.key, &answer, latency_ms, savings_usd, gap)
                .await?;
        Ok(answer)
    }
}

/// What the cache keeps of an answer.
#[derive(Serialize, Deserialize)]
struct CachedPayload {
    answer: String,
    citations: Vec<Citation>,
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
    let mut user = String::from("Passages:\n");
    for (i, passage) in passages.iter().enumerate() {
        let chunk = &passage.chunk;
        let heading = chunk.heading.as_deref().map(|h| format!(" — {h}")).unwrap_or_default();
        user.push_str(&format!("\n[{}] {}{}\n{}\n", i + 1, chunk.title, heading, chunk.text.trim()));
    }
    user.push_str(&format!("\nQuestion: {question}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_normalised_for_the_cache_key() {
        let n = normalise("  How do I   restore a Snapshot?? ").unwrap();
        assert_eq!(n.text, "How do I restore a Snapshot??");
        assert_eq!(n.key, "how do i restore a snapshot");
        assert!(normalise(" \n ").is_err());
        assert!(normalise(&"x".repeat(MAX_QUESTION_CHARS + 1)).is_err());
    }

    #[test]
    fn volatility_scales_the_maximum_age() {
        use sources::Volatility::*;
        assert_eq!(scaled_max_age(3600, High), 900);
        assert_eq!(scaled_max_age(3600, Medium), 3600);
        assert_eq!(scaled_max_age(3600, Low), 25_200);
        assert_eq!(scaled_max_age(3600, Static), 108_000);
    }

    #[test]
    fn a_refusal_that_shares_the_passages_words_is_not_served_as_an_answer() {
        // A profile's refusal sentence without a negation, which the
        // grounding check alone cannot tell from an answer.
        let refusal = "Find this in the documentation of the admin console.";
        let passages = vec![grounding::Passage::plain(
            "Find the backup settings in the documentation of the admin console.",
        )];
        let declined = grounding::check("How do I rotate keys?", refusal, &passages, 0.5);
        assert!(declined.grounded, "the grounding check alone passes it: {}", declined.reason);
        assert!(!servable(refusal, &declined, refusal));
        assert!(!servable(&format!("Sorry. {}", refusal.to_uppercase()), &declined, refusal));

        let answer = "The backup settings are in the admin console [1].";
        let grounded = grounding::check("Where are the backup settings?", answer, &passages, 0.5);
        assert!(grounded.grounded && servable(answer, &grounded, refusal), "{}", grounded.reason);
    }

    #[test]
    fn an_answer_lives_as_long_as_its_most_changeable_cited_source_allows() {
        use sources::Volatility::*;
        assert_eq!(cited_max_age(3600, [Static, Static]), 108_000, "static pages lengthen it");
        assert_eq!(cited_max_age(3600, [Low]), 25_200);
        assert_eq!(cited_max_age(3600, [Static, High, Low]), 900, "one volatile page shortens it");
        assert_eq!(cited_max_age(3600, []), 3600, "no known source: the gate's own age");
    }
}
