//! The answer pipeline, stage by stage, in the order its trace reads:
//! normalise → readiness → pinned → exact cache → semantic cache →
//! retrieval (and rerank) → prompt → generation → grounding → verification →
//! escalation → answer (or refusal). [`pipeline`] calls one function per
//! stage; each writes its own stage of the trace, and a stage that can end
//! the run says so in what it returns.

use std::sync::Arc;

use super::*;
use crate::index::Scope;
use crate::providers::client::Follow;
use crate::shadow::Shadow;

/// The one pipeline: serving the active version (`candidate` is `None`) or
/// evaluating a candidate.
pub(super) async fn pipeline(
    lore: &Lore,
    ask: Ask,
    sink: Option<StageSink>,
    candidate: Option<&profile::Version>,
) -> Result<Answer> {
    let started = Instant::now();
    let evaluating = candidate.is_some();
    let mut trace = Tracer::new(sink);
    let question = normalise(&ask.question)?;
    let reader = ask.asker.reader(lore).await?;
    trace.stage(StageName::Normalise, "ok", format!("{} characters", question.text.chars().count()));

    let shadow = candidate_shadow(lore, candidate).await?;
    let embedding = QuestionEmbedder { lore, shadow: shadow.as_deref() };
    let audience = reader.audience();
    let Gate { assessment, mut early_vector } =
        readiness_gate(lore, &question, &audience, embedding, evaluating).await?;
    // What this caller may read, decided once for the whole run: the
    // sources searched, the pins and cached answers that may serve it.
    let scope = assessment.visible_scope(&reader);
    let readable: Vec<String> = assessment.sources().iter().filter_map(|s| reader.reach(s)).collect();
    let active = assessment.profile.as_ref().ok_or(profile::ProfileError::NoProfile)?;
    let version = candidate.unwrap_or(active);
    let embedded = if early_vector.is_some() { "; the question was embedded meanwhile" } else { "" };
    let serves = if evaluating { "is evaluated" } else { "serves" };
    trace.stage(
        StageName::Readiness,
        "answerable",
        format!("profile version {} {serves}{embedded}", version.version),
    );

    let run = Run {
        lore,
        ask: &ask,
        question: &question,
        snapshot: &version.snapshot,
        version: version.version,
        activated_at: version.activated_at,
        visible: &scope.sources,
        reader: &reader,
        readable: &readable,
        scope_key: scope.key(),
        sources: assessment.sources(),
        evaluating,
    };
    let answer_cache = lore.answer_cache().await?;
    answer_cache.searched_with(&audience, &run.scope_key);
    // An evaluation sees what the candidate itself says.
    let caching = version.snapshot.cache.enabled && !evaluating;

    if !evaluating {
        if let Some(pin) = run.pinned(&mut early_vector, &mut trace).await? {
            return run.serve_pinned(pin, trace, started).await;
        }
    }
    if let Some(entry) = run.exact_cache(&answer_cache, caching, &mut trace).await? {
        return run.serve_cached(entry, "exact", 1.0, trace, started).await;
    }
    let vector = match early_vector {
        Some(vector) => vector?,
        None => embedding.embed(&question.text).await?,
    };
    let nearest = match run.semantic_cache(&answer_cache, caching, &vector, &mut trace).await? {
        Semantic::Hit { entry, similarity } => {
            return run.serve_cached(*entry, "semantic", similarity, trace, started).await;
        }
        Semantic::Miss { nearest } => nearest,
    };
    let cache_outcome = CacheOutcome {
        status: if caching { CacheStatus::Miss } else { CacheStatus::Bypass },
        kind: None,
        similarity: nearest,
    };

    let found = run.retrieve(shadow.as_deref(), &vector, &scope, &mut trace).await?;
    if found.passages.is_empty() {
        trace.stage(
            StageName::Refusal,
            "refused",
            "nothing retrievable answers the question; no model was called",
        );
        let related = related(&question.text, &found.nearest);
        return run
            .refuse(trace, found.trace_passages, related, cache_outcome, None, Usage::default(), started)
            .await;
    }

    let trial = Trial::of(lore, candidate).await?;
    // The target the readiness gate passed, not a second read of the binding.
    let generation = trial
        .for_role(Role::Generation)
        .or(assessment.generation())
        .ok_or_else(|| Error::NotAnswerable(vec!["provider: No generation target is bound.".to_owned()]))?;
    let on_node = generation.account.placement == providers::Placement::OnNode;
    let embedded = generation.account.kind == providers::embedded::KIND;
    let quotes = version.snapshot.behavior.composition.quotes(&generation.target.model, on_node, embedded);
    let messages = if quotes {
        quote_prompt(&version.snapshot, &question.text, &found.passages)
    } else {
        prompt(&version.snapshot, &question.text, &found.passages)
    };
    trace.stage(
        StageName::Prompt,
        "built",
        format!(
            "{} passages, profile version {}{}",
            found.passages.len(),
            version.version,
            if quotes { "; the model chooses sentences to quote" } else { "" }
        ),
    );
    let mut usage = Usage { estimated_cost_usd: found.rerank_cost, ..Usage::default() };
    // A quoted reply is at most a few copied sentences.
    let budget = if quotes { run.budget().min(QUOTE_TOKENS) } else { run.budget() };
    let first = match run.generation(generation, &messages, budget, &mut usage, &mut trace).await {
        Ok(first) => first,
        Err(err) => {
            let model = generation.target.model.clone();
            run.record_failure(trace, found.trace_passages, cache_outcome, model, started).await;
            return Err(err);
        }
    };
    let passages: Vec<grounding::Passage> = found.passages.iter().map(grounding_passage).collect();
    let mut served = Served { model: generation.target.model.clone(), text: first };
    let (mut verdict, declined) = if quotes {
        run.quoting(&mut served, &passages, on_node, &mut trace)
    } else {
        run.grounding(&served.text, &passages, on_node, &mut trace).await
    };
    let escalation = run.escalation_target(&trial, &verdict, declined).await?;
    if verdict.grounded && !declined {
        run.verification(escalation.as_ref(), &mut verdict, &passages, &mut usage, &mut trace).await;
    }
    if !verdict.grounded && !declined {
        let tried = Tried { served: &mut served, verdict: &mut verdict, usage: &mut usage };
        // A tier is the stronger model: it writes in its own words.
        let written =
            if quotes { prompt(&version.snapshot, &question.text, &found.passages) } else { messages };
        run.escalation(escalation, &written, &passages, tried, &mut trace).await?;
    }

    if !servable(&served.text, &verdict, &version.snapshot.behavior.refusal) {
        let reason = if run.declined(&served.text) {
            "the model declined; the profile's refusal is served"
        } else {
            "no grounded answer; the profile's refusal is served"
        };
        trace.stage(StageName::Answer, "refused", reason);
        let related = related(&question.text, &found.passages);
        return run
            .refuse(trace, found.trace_passages, related, cache_outcome, Some(served.model), usage, started)
            .await;
    }
    let citations: Vec<Citation> =
        verdict.cited.iter().filter_map(|&n| found.passages.get(n - 1).map(|p| citation(n, p))).collect();
    let answer = Answer {
        answer: served.text.trim().to_owned(),
        refused: false,
        grounded: true,
        pinned: false,
        citations,
        statements: statements(&verdict),
        related: Vec::new(),
        cache: cache_outcome,
        profile_version: version.version,
        trace: Trace {
            id: String::new(),
            stages: Vec::new(),
            retrieval: found.trace_passages,
            model: Some(served.model),
            usage,
        },
    };
    trace.stage(StageName::Answer, "answered", format!("{} citations", answer.citations.len()));
    if caching {
        run.store(&answer_cache, &answer, &found.passages, vector).await?;
    }
    run.finish(answer, trace, started).await
}

/// A candidate that binds the embedding role answers with its model from
/// its shadow index; everything else with the active ones.
async fn candidate_shadow(lore: &Lore, candidate: Option<&profile::Version>) -> Result<Option<Arc<Shadow>>> {
    match candidate.filter(|c| !c.active).and_then(|c| c.binding.as_ref()) {
        Some(binding) if binding.role == Role::Embedding => {
            Ok(Some(crate::shadow::for_candidate(lore, binding).await?))
        }
        _ => Ok(None),
    }
}

/// What embeds the question: the candidate's shadow model, or the active one.
#[derive(Clone, Copy)]
struct QuestionEmbedder<'a> {
    lore: &'a Lore,
    shadow: Option<&'a Shadow>,
}

impl QuestionEmbedder<'_> {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let embedder = match self.shadow {
            Some(shadow) => shadow.embedder.clone(),
            None => self.lore.embedder().await?,
        };
        Ok(embedder.embed_query(text).await?)
    }
}

/// What the readiness gate passed: the assessment, and the question's
/// vector when it was embedded meanwhile.
struct Gate {
    assessment: readiness::Assessment,
    early_vector: Option<Result<Vec<f32>>>,
}

/// The readiness gate: the same verdict the Readiness panel shows. A
/// question the exact cache does not know for the asker's `audience` needs
/// its embedding whatever the verdict's details, so that runs meanwhile (its
/// result waits until the gate has passed).
async fn readiness_gate(
    lore: &Lore,
    question: &Normalised,
    audience: &str,
    embedding: QuestionEmbedder<'_>,
    evaluating: bool,
) -> Result<Gate> {
    let early = async {
        let known =
            lore.answer_cache().await.map(|cache| cache.knows(&question.key, audience)).unwrap_or(true);
        if known && !evaluating {
            return None;
        }
        Some(embedding.embed(&question.text).await)
    };
    let (assessment, early_vector) = tokio::join!(readiness::Assessment::read(lore), early);
    let assessment = assessment?;
    if let RetrievalState::FailingClosed(why) = assessment.retrieval_state(lore).await? {
        return Err(Error::RetrievalFailingClosed(why));
    }
    if !assessment.state.can_answer {
        return Err(Error::NotAnswerable(assessment.state.reasons));
    }
    Ok(Gate { assessment, early_vector })
}

/// What the semantic cache decided.
enum Semantic {
    Hit {
        entry: Box<Entry>,
        similarity: f32,
    },
    /// `nearest`: the similarity of the nearest entry below the gate.
    Miss {
        nearest: Option<f32>,
    },
}

/// What retrieval found: the passages that passed, as the trace shows
/// them, and what reranking them cost.
struct Found {
    passages: Vec<Retrieved>,
    /// When none passed the cutoff, the nearest it dropped.
    nearest: Vec<Retrieved>,
    trace_passages: Vec<TracePassage>,
    rerank_cost: f64,
}

/// A candidate that stands for a model binding answers with that model in
/// its role; the active version with what is bound.
struct Trial(Option<(Role, Resolved)>);

impl Trial {
    async fn of(lore: &Lore, candidate: Option<&profile::Version>) -> Result<Trial> {
        Ok(Trial(match candidate.filter(|c| !c.active).and_then(|c| c.binding.as_ref()) {
            Some(profile::Rebinding { role, target_id: Some(id), .. }) => {
                Some((*role, providers::resolve_target(lore, id).await?))
            }
            _ => None,
        }))
    }

    fn for_role(&self, role: Role) -> Option<&Resolved> {
        self.0.as_ref().filter(|(r, _)| *r == role).map(|(_, resolved)| resolved)
    }
}

/// The reply that would be served, and the model that wrote it.
struct Served {
    model: String,
    text: String,
}

/// What the escalation chain may replace: the reply, its verdict, and the
/// usage it adds to.
struct Tried<'a> {
    served: &'a mut Served,
    verdict: &'a mut grounding::Verdict,
    usage: &'a mut Usage,
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
    /// The sources searched: the enabled ones the caller may read, as the
    /// readiness assessment read them.
    visible: &'a [String],
    /// What the caller may read.
    reader: &'a sources::Reader,
    /// The scope id of every source the caller may read, enabled or not
    /// (whole, or the view of a table source it reads).
    readable: &'a [String],
    /// [`Scope::key`] of `visible`: the cache entries this run may use.
    scope_key: String,
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

    /// What the trace says of a reply cut where it began to repeat itself.
    fn stopped(&self) -> &'static str {
        if self.completion.repeated {
            "; it began to repeat itself and was stopped there: what came before is judged"
        } else {
            ""
        }
    }
}

impl Run<'_> {
    /// A pinned answer: the question, or a paraphrase above the semantic gate.
    async fn pinned(
        &self,
        early_vector: &mut Option<Result<Vec<f32>>>,
        trace: &mut Tracer,
    ) -> Result<Option<pins::Pin>> {
        let gate = self.snapshot.cache.min_similarity;
        match pins::lookup(
            self.lore,
            self.question,
            early_vector,
            gate,
            self.visible,
            self.reader,
            self.readable,
        )
        .await?
        {
            pins::Lookup::None => {}
            pins::Lookup::Flagged { question: pinned, why } => trace.stage(
                StageName::Pinned,
                "flagged",
                format!("the answer pinned to “{pinned}” is flagged for review: {why}"),
            ),
            pins::Lookup::SourceDisabled { question: pinned, why } => trace.stage(
                StageName::Pinned,
                "held",
                format!("the answer pinned to “{pinned}” is held: {why}"),
            ),
            pins::Lookup::Serve { pin, similarity } => {
                let how = if similarity >= 1.0 {
                    "the same question".to_owned()
                } else {
                    format!("a question {similarity:.3} similar (gate {gate:.2})")
                };
                trace.stage(
                    StageName::Pinned,
                    "served",
                    format!("an answer is pinned to {how}: “{}”", pin.question),
                );
                return Ok(Some(pin));
            }
        }
        Ok(None)
    }

    /// The exact cache: the same question under this version, still valid.
    async fn exact_cache(
        &self,
        cache: &AnswerCache,
        caching: bool,
        trace: &mut Tracer,
    ) -> Result<Option<Entry>> {
        if !caching {
            trace.stage(StageName::ExactCache, "bypass", bypassed(self.evaluating));
            return Ok(None);
        }
        let Some(entry) = cache.exact(&self.question.key, self.version, &self.scope_key) else {
            trace.stage(StageName::ExactCache, "miss", "no cached answer for this question");
            return Ok(None);
        };
        match self.validate(&entry).await? {
            Ok(()) => {
                trace.stage(
                    StageName::ExactCache,
                    "hit",
                    "the same question was answered under this version",
                );
                Ok(Some(entry))
            }
            Err(why) => {
                cache.delete(&entry.id).await?;
                trace.stage(StageName::ExactCache, "miss", format!("the cached answer is invalid: {why}"));
                Ok(None)
            }
        }
    }

    /// The semantic cache: the nearest cached questions above the gate, the
    /// first still valid.
    async fn semantic_cache(
        &self,
        cache: &AnswerCache,
        caching: bool,
        vector: &[f32],
        trace: &mut Tracer,
    ) -> Result<Semantic> {
        if !caching {
            trace.stage(StageName::SemanticCache, "bypass", bypassed(self.evaluating));
            return Ok(Semantic::Miss { nearest: None });
        }
        let gate = self.snapshot.cache.min_similarity;
        let mut nearest = None;
        // Why the first candidate above the gate could not serve, if one could not.
        let mut invalid = None;
        for (entry, similarity) in cache.nearest(vector, self.version, &self.scope_key, SEMANTIC_CANDIDATES) {
            if similarity < gate {
                // The nearest entry still cached: the similarity to report.
                nearest = Some(similarity);
                break;
            }
            match self.validate(&entry).await? {
                Ok(()) => {
                    trace.stage(
                        StageName::SemanticCache,
                        "hit",
                        format!("a cached question is {similarity:.3} similar (gate {gate:.2})"),
                    );
                    return Ok(Semantic::Hit { entry: Box::new(entry), similarity });
                }
                Err(why) => {
                    cache.delete(&entry.id).await?;
                    invalid.get_or_insert(format!(
                        "a cached question {similarity:.3} similar was invalid: {why}"
                    ));
                }
            }
        }
        let below = match nearest {
            Some(s) => format!("the nearest cached question is below the gate ({s:.3} < {gate:.2})"),
            None if invalid.is_some() => "no valid one among the nearest".to_owned(),
            None => "no cached question under this version".to_owned(),
        };
        let reason = match invalid {
            Some(invalid) => format!("{invalid}; {below}"),
            None => below,
        };
        trace.stage(StageName::SemanticCache, "miss", reason);
        Ok(Semantic::Miss { nearest })
    }

    /// Hybrid retrieval with the version's settings, from the candidate's
    /// shadow index when it has one; the reranker reorders what passed.
    async fn retrieve(
        &self,
        shadow: Option<&Shadow>,
        vector: &[f32],
        scope: &Scope,
        trace: &mut Tracer,
    ) -> Result<Found> {
        let store = match shadow {
            Some(shadow) => shadow.store.clone(),
            None => self.lore.chunks().await?,
        };
        let settings = self.snapshot.retrieval;
        let question = &self.question.text;
        let reranker = crate::rerank::reranker(self.lore).await?;
        let widened = crate::rerank::settings_for(&settings, reranker.as_ref());
        let mut retrieval =
            retrieve::hybrid_with_vector(store.as_ref(), vector, question, scope, &widened).await?;
        let reranked = match &reranker {
            Some(reranker) if !retrieval.results.is_empty() => Some(
                crate::rerank::apply(self.lore, reranker, question, &mut retrieval, settings.top_k).await,
            ),
            _ => None,
        };
        let (passages, nearest) = (retrieval.results, retrieval.nearest_below);
        let trace_passages = passages.iter().enumerate().map(|(i, r)| trace_passage(i, r)).collect();
        if passages.is_empty() {
            trace.stage(
                StageName::Retrieval,
                "nothing",
                format!(
                    "{} candidates, none at or above the cutoff {:.2}",
                    retrieval.candidates, settings.score_cutoff
                ),
            );
        } else {
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
        }
        let rerank_cost = reranked.as_ref().and_then(|r| r.cost_usd).unwrap_or(0.0);
        if let Some(reranked) = reranked {
            trace.stage_costing(StageName::Rerank, reranked.decision, reranked.reason, reranked.cost_usd);
        }
        Ok(Found { passages, nearest, trace_passages, rerank_cost })
    }

    /// The first tier: the generation role writes the reply.
    async fn generation(
        &self,
        generation: &Resolved,
        messages: &[Message],
        max_tokens: u32,
        usage: &mut Usage,
        trace: &mut Tracer,
    ) -> Result<String> {
        let first = match self.generate(generation, messages, max_tokens).await {
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
            format!(
                "{} ({place}) wrote {} tokens{}",
                generation.target.model,
                first.completion.output_tokens,
                first.stopped()
            ),
            Some(cost),
        );
        Ok(first.completion.text)
    }

    /// The grounding check of a reply; whether the model declined. An
    /// ungrounded reply of an on-node model is its own funnel row
    /// (`ungrounded_on_node`), as its answers are (`answered_on_node`).
    async fn grounding(
        &self,
        reply: &str,
        passages: &[grounding::Passage],
        on_node: bool,
        trace: &mut Tracer,
    ) -> (grounding::Verdict, bool) {
        let verdict = self.check(reply, passages).await;
        let declined = self.declined(reply);
        if declined {
            trace.stage(
                StageName::Grounding,
                "declined",
                "the model said the passages do not answer the question",
            );
        } else {
            trace.stage_detailed(
                StageName::Grounding,
                match (verdict.grounded, on_node) {
                    (true, _) => "grounded",
                    (false, true) => "ungrounded_on_node",
                    (false, false) => "ungrounded",
                },
                verdict.reason.clone(),
                None,
                Some(verdict.detail.clone()),
            );
        }
        (verdict, declined)
    }

    /// The grounding check of `reply`, with the statements it refused for
    /// their words weighed as paraphrases of the spans that keep their
    /// facts (by the embedding model's similarity in meaning).
    async fn check(&self, reply: &str, passages: &[grounding::Passage]) -> grounding::Verdict {
        let settings = &self.lore.settings.answer;
        let mut verdict =
            grounding::check(&self.question.text, reply, passages, settings.grounding_min_support);
        // Off (the default), no embedding is asked for.
        if settings.paraphrase_min_similarity > 0.0 && !verdict.rephrasings().is_empty() {
            match self.lore.embedder().await {
                Ok(embedder) => {
                    verify::rephrasings(embedder.as_ref(), &mut verdict, settings.paraphrase_min_similarity)
                        .await
                }
                Err(err) => tracing::warn!(error = %err, "paraphrases were not weighed: no embedder"),
            }
        }
        verdict
    }

    /// Quote-first: the sentences of the passages the model's reply copies
    /// become the answer, verbatim, and the check judges them; a reply that
    /// copies none, or alters a fact of one it copies, is not served.
    fn quoting(
        &self,
        served: &mut Served,
        passages: &[grounding::Passage],
        on_node: bool,
        trace: &mut Tracer,
    ) -> (grounding::Verdict, bool) {
        let min_support = self.lore.settings.answer.grounding_min_support;
        let question = &self.question.text;
        if self.declined(&served.text) {
            trace.stage(
                StageName::Grounding,
                "declined",
                "the model said the passages do not answer the question",
            );
            return (grounding::check(question, "", passages, min_support), true);
        }
        let quoted = grounding::quote(question, &served.text, passages, min_support);
        let copied = quoted.sentences > 0;
        if copied {
            served.text = quoted.text.clone();
        }
        let verdict =
            grounding::check(question, if copied { &quoted.text } else { "" }, passages, min_support);
        let decision = match (verdict.grounded, on_node) {
            (true, _) => "quoted",
            (false, true) => "ungrounded_on_node",
            (false, false) => "ungrounded",
        };
        let explained = quoted.explain();
        trace.stage_detailed(
            StageName::Grounding,
            decision,
            format!("{explained}; {}", verdict.reason),
            None,
            Some(format!("{explained}; {}", verdict.detail)),
        );
        (verdict, false)
    }

    /// The escalation target, read only when the run may need it: to
    /// escalate, or to give a second opinion on narrow passes.
    async fn escalation_target(
        &self,
        trial: &Trial,
        verdict: &grounding::Verdict,
        declined: bool,
    ) -> Result<Option<Resolved>> {
        let margin = self.lore.settings.answer.verification_margin;
        let wanted =
            !declined && (!verdict.grounded || (margin > 0.0 && !verdict.narrow_passes(margin).is_empty()));
        Ok(match trial.for_role(Role::Escalation) {
            Some(trial) if wanted => Some(trial.clone()),
            _ if wanted => providers::resolve(self.lore, Role::Escalation).await?,
            _ => None,
        })
    }

    /// A second opinion on statements that passed narrowly. The judge is the
    /// stronger model the admin bound for escalation: the generation model
    /// judging its own words adds noise, not evidence.
    async fn verification(
        &self,
        escalation: Option<&Resolved>,
        verdict: &mut grounding::Verdict,
        passages: &[grounding::Passage],
        usage: &mut Usage,
        trace: &mut Tracer,
    ) {
        let margin = self.lore.settings.answer.verification_margin;
        if margin > 0.0 {
            match escalation.filter(|e| e.state == TargetState::Ready) {
                Some(judge) => self.verify(judge, verdict, passages, usage, trace).await,
                None if !verdict.narrow_passes(margin).is_empty() => trace.stage(
                    StageName::Verification,
                    "no_judge",
                    "statements passed narrowly, and no ready escalation target is bound to judge them",
                ),
                None => {}
            }
        }
    }

    /// The escalation chain: the escalation role's target, then the further
    /// tiers, each tried only while every answer before it was not grounded.
    /// Each tier's decision names its tier.
    async fn escalation(
        &self,
        escalation: Option<Resolved>,
        messages: &[Message],
        passages: &[grounding::Passage],
        tried: Tried<'_>,
        trace: &mut Tracer,
    ) -> Result<()> {
        let Some(first) = escalation else {
            trace.stage(StageName::Escalation, "unbound", "no escalation target is bound");
            return Ok(());
        };
        let margin = self.lore.settings.answer.verification_margin;
        let mut tiers = vec![first];
        tiers.extend(providers::resolve_further_tiers(self.lore).await?);
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
            match self.generate(tier, messages, self.budget()).await {
                Ok(next) => {
                    let cost = next.cost(tier);
                    tried.usage.add(&next.completion, cost);
                    let mut again = self.check(&next.completion.text, passages).await;
                    let outcome = if again.grounded { "grounded" } else { "ungrounded" };
                    trace.stage_detailed(
                        StageName::Escalation,
                        &format!("tier{n}_{outcome}"),
                        format!("tier {n}: {}{}: {}", tier.target.model, next.stopped(), again.reason),
                        Some(cost),
                        Some(again.detail.clone()),
                    );
                    if again.grounded && margin > 0.0 {
                        self.verify(tier, &mut again, passages, tried.usage, trace).await;
                    }
                    *tried.served = Served { model: tier.target.model.clone(), text: next.completion.text };
                    *tried.verdict = again;
                    if tried.verdict.grounded {
                        break;
                    }
                }
                // The answers before already failed the check: the next
                // tier is tried, and with none left the question is
                // refused, as when unbound.
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
        Ok(())
    }

    /// The token budget of a reply in the model's own words, by the
    /// profile's answer length.
    fn budget(&self) -> u32 {
        match self.snapshot.behavior.length {
            Length::Brief => 160,
            Length::Standard => 320,
            Length::Detailed => 640,
        }
    }

    async fn generate(&self, target: &Resolved, messages: &[Message], max_tokens: u32) -> Result<Generated> {
        let completion = providers::chat(
            self.lore,
            &target.endpoint,
            &target.target.model,
            messages,
            max_tokens,
            0.0,
            Follow::stopping_repetition(),
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
            stored.into_iter().filter(|(_, (source, _))| self.visible.contains(source)).collect();
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

    /// A source's volatility, as read with the readiness verdict (of a
    /// scope id's source).
    fn volatility(&self, scope_id: &str) -> sources::Volatility {
        let source_id = crate::index::split_scope_id(scope_id).0;
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
            statements: cached.statements,
            related: Vec::new(),
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
            statements: Vec::new(),
            related: Vec::new(),
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

    #[allow(clippy::too_many_arguments)]
    async fn refuse(
        &self,
        trace: Tracer,
        retrieval: Vec<TracePassage>,
        related: Vec<Related>,
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
            statements: Vec::new(),
            related,
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
            statements: Vec::new(),
            related: Vec::new(),
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
            statements: answer.statements.clone(),
            model: answer.trace.model.clone(),
            estimated_cost_usd: answer.trace.usage.estimated_cost_usd,
        })
        .map_err(|err| Error::Internal(format!("serialising a cache entry: {err}")))?;
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            question: self.question.key.clone(),
            profile_version: self.version,
            scope: self.scope_key.clone(),
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
        let finished = runs::Finished {
            ask: self.ask,
            reader: self.reader,
            question_key: &self.question.key,
            answer: &answer,
            latency_ms,
            savings_usd,
        };
        answer.trace.id = runs::record(self.lore, finished, gap).await?;
        Ok(answer)
    }
}
