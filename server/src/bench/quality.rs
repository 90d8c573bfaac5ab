//! `lore bench quality`: how often Lore serves a wrong answer, how many
//! right ones its grounding check costs, and what quote-first answers change,
//! over real documentation.
//!
//! 1. The pages of a question set (`--set`: six pages of SQLite's
//!    documentation from Debian's sqlite3-doc, or 110 of PostgreSQL 15's
//!    from postgresql-doc-15; `--docs` where they are) are uploaded and
//!    indexed for real; the generation role is bound to the embedded model,
//!    or to `--llm-endpoint`.
//! 2. For each question (answerable ones with the facts a right answer
//!    holds and the page that holds them; unanswerable ones) retrieval runs
//!    as the pipeline runs it, and the model answers from the prompts the
//!    pipeline builds: once in its own words, as before (its whole reply,
//!    timed), and, where that reply repeats itself, again stopped at the
//!    repetition as the pipeline now stops it; and once asked to quote.
//! 3. The generated reply is judged four ways: served unchecked (what the
//!    model says), by the grounding check (statements with their spans),
//!    with the statements it refused for their words weighed as paraphrases
//!    (the embedding model's similarity to a span that keeps their facts),
//!    and with the second opinion on narrow passes after that; the quoted
//!    reply as the pipeline serves it (the sentences it copies, verbatim,
//!    then the check). For each: right answers served (holding an expected
//!    fact), wrong answers served (not holding one, or answering an
//!    unanswerable question), right replies the check refused, correct
//!    refusals, and the share of served statements whose span holds an
//!    expected fact; and the time a refusal takes (retrieval and the model).
//!
//! Goals of the issues: wrong answers served ≤ 2% of served, no more than
//! 10% of the model's right replies lost to the check; quote-first serves a
//! right answer for at least half of the answerable questions; a refusal's
//! p50 under 3 s.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use engine::answer::{grounding, verify};
use engine::audit::Actor;
use engine::index::Scope;
use engine::providers::client::{Follow, Message};
use engine::providers::{repetition, Resolved, Role};
use engine::{Lore, Settings};
use serde::Deserialize;
use serde_json::json;

use super::{build_profile, on_scratch_data};

const WRONG_GOAL: f64 = 0.02;
const LOST_GOAL: f64 = 0.10;
const QUOTED_RIGHT_GOAL: f64 = 0.5;
const REFUSAL_P50_GOAL_MS: f64 = 3_000.0;
/// The pipeline's token budget at the default (`standard`) length.
const MAX_TOKENS: u32 = 320;

/// The question sets, each written against one documentation package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QualitySet {
    /// Six pages of SQLite's documentation (Debian's sqlite3-doc).
    Sqlite,
    /// 110 pages of PostgreSQL 15's documentation (Debian's postgresql-doc-15).
    Postgresql,
}

impl QualitySet {
    fn questions(self) -> &'static str {
        match self {
            QualitySet::Sqlite => include_str!("quality-sqlite.json"),
            QualitySet::Postgresql => include_str!("quality-postgresql.json"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            QualitySet::Sqlite => "sqlite",
            QualitySet::Postgresql => "postgresql",
        }
    }

    fn package(self) -> &'static str {
        match self {
            QualitySet::Sqlite => "sqlite3-doc",
            QualitySet::Postgresql => "postgresql-doc-15",
        }
    }

    /// Where Debian's package puts the pages.
    pub fn default_docs(self) -> PathBuf {
        PathBuf::from(match self {
            QualitySet::Sqlite => "/usr/share/doc/sqlite3",
            QualitySet::Postgresql => "/usr/share/doc/postgresql-doc-15/html",
        })
    }
}

pub struct QualityOptions {
    pub set: QualitySet,
    /// Where the set's pages are.
    pub docs: PathBuf,
    /// An OpenAI-compatible endpoint (`…/v1`) for the generation role;
    /// `None`: the embedded model.
    pub llm_endpoint: Option<String>,
    pub llm_model: String,
    /// At most this many answerable and this many unanswerable questions.
    pub limit: Option<usize>,
    /// The similarity at which the "with paraphrases" row serves a
    /// statement said in other words (`answer.paraphrase_min_similarity`).
    pub paraphrase_similarity: f32,
    pub out: Option<PathBuf>,
}

/// One way of judging a reply: what it serves, and whether the model's
/// reply held an expected fact.
struct Judged<'a> {
    text: &'a str,
    served: bool,
    model_was_right: bool,
}

#[derive(Deserialize)]
struct QuestionSet {
    pages: Vec<String>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    #[serde(default)]
    facts: Vec<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    refuse: bool,
}

impl Question {
    /// Whether `reply` holds one of the expected facts.
    fn holds_fact(&self, reply: &str) -> bool {
        let reply = reply.to_lowercase();
        self.facts.iter().any(|fact| reply.contains(&fact.to_lowercase()))
    }
}

/// What one way of answering served, over all questions.
#[derive(Default)]
struct Tally {
    /// Answerable questions served with an expected fact.
    right: usize,
    /// Served without an expected fact, or served though unanswerable.
    wrong: usize,
    /// The model's replies (in this way of answering) that held a fact,
    /// and those of them refused.
    right_replies: usize,
    lost: usize,
    /// Unanswerable questions refused.
    correct_refusals: usize,
    served: usize,
    /// Statements of the right answers served, and those whose span holds
    /// an expected fact.
    statements: usize,
    spans_with_fact: usize,
    /// How long each refusal took, in milliseconds.
    refusal_ms: Vec<f64>,
}

impl Tally {
    /// Counts what was served of one question (`text`, `served`), and
    /// whether the model's own reply held a fact.
    fn count(&mut self, question: &Question, text: &str, served: bool, model_was_right: bool) {
        self.right_replies += usize::from(model_was_right);
        let right = !question.refuse && question.holds_fact(text);
        match (served, question.refuse) {
            (true, _) => {
                self.served += 1;
                if right {
                    self.right += 1;
                } else {
                    self.wrong += 1;
                }
            }
            (false, true) => self.correct_refusals += 1,
            (false, false) => {
                if model_was_right {
                    self.lost += 1;
                }
            }
        }
    }

    /// [`Tally::count`], then the spans of what was served, or the time
    /// the refusal took.
    fn judge(&mut self, question: &Question, reply: &Reply, verdict: &grounding::Verdict, judged: Judged) {
        self.count(question, judged.text, judged.served, judged.model_was_right);
        if judged.served {
            self.spans(question, verdict);
        } else {
            self.refusal_ms.push(reply.ms);
        }
    }

    /// The spans of a served answer's statements.
    fn spans(&mut self, question: &Question, verdict: &grounding::Verdict) {
        if question.refuse {
            return;
        }
        for judged in verdict.judged.iter().filter(|j| j.supported) {
            self.statements += 1;
            if judged.support.as_ref().is_some_and(|s| question.holds_fact(&s.quote)) {
                self.spans_with_fact += 1;
            }
        }
    }

    fn wrong_rate(&self) -> f64 {
        ratio(self.wrong, self.served)
    }

    fn refusal_p50_ms(&self) -> Option<f64> {
        percentile(&self.refusal_ms, 0.5)
    }

    fn record(&self, answerable: usize, unanswerable: usize) -> serde_json::Value {
        json!({
            "served": self.served,
            "right": self.right,
            "wrong": self.wrong,
            "right_share_of_answerable": ratio(self.right, answerable),
            "wrong_share_of_served": self.wrong_rate(),
            "right_replies": self.right_replies,
            "right_replies_lost": self.lost,
            "lost_share_of_right_replies": ratio(self.lost, self.right_replies),
            "correct_refusals": self.correct_refusals,
            "correct_refusal_share": ratio(self.correct_refusals, unanswerable),
            "statements_of_right_answers": self.statements,
            "share_of_spans_holding_the_fact": ratio(self.spans_with_fact, self.statements),
            "refusals": self.refusal_ms.len(),
            "refusal_p50_ms": self.refusal_p50_ms(),
        })
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn percentile(values: &[f64], at: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len().checked_sub(1)?;
    sorted.get(((last as f64) * at).round() as usize).copied()
}

pub async fn quality(settings: Settings, options: QualityOptions) -> anyhow::Result<()> {
    let mut set: QuestionSet = serde_json::from_str(options.set.questions())
        .with_context(|| format!("reading the {} question set", options.set.name()))?;
    if let Some(limit) = options.limit {
        let (mut answerable, mut unanswerable) = (0, 0);
        set.questions.retain(|q| {
            let count = if q.refuse { &mut unanswerable } else { &mut answerable };
            *count += 1;
            *count <= limit
        });
    }
    let out = options.out.clone();
    let record = format!("quality-{}.json", options.set.name());
    on_scratch_data(settings, &out, &record, |lore| async move { measure(&lore, &set, &options).await }).await
}

/// One reply of the model, and how long retrieval and the reply took.
struct Reply {
    text: String,
    ms: f64,
}

async fn ask(
    lore: &Lore,
    generation: &Resolved,
    messages: &[Message],
    (max_tokens, follow): (u32, Follow),
    retrieval_ms: f64,
) -> anyhow::Result<Reply> {
    let started = Instant::now();
    let completion = engine::providers::chat(
        lore,
        &generation.endpoint,
        &generation.target.model,
        messages,
        max_tokens,
        0.0,
        follow,
    )
    .await
    .context("asking the model")?;
    Ok(Reply { text: completion.text, ms: retrieval_ms + started.elapsed().as_secs_f64() * 1000.0 })
}

async fn measure(
    lore: &Lore,
    set: &QuestionSet,
    options: &QualityOptions,
) -> anyhow::Result<serde_json::Value> {
    // 1. The pages, indexed for real; the generation role bound.
    println!("Indexing {} pages of {} …", set.pages.len(), options.docs.display());
    let name = format!("{}-docs", options.set.name());
    let source = engine::ingest::lifecycle::upload_source_named(lore, &Actor::System, &name).await?;
    for page in &set.pages {
        let path = options.docs.join(page);
        let bytes = std::fs::read(&path).with_context(|| {
            format!("reading {} (install Debian's {}, or pass --docs)", path.display(), options.set.package())
        })?;
        let upload = engine::ingest::upload::Upload { file_name: page.clone(), content_type: None, bytes };
        engine::ingest::upload::receive(lore, &source.id, upload).await?;
    }
    let owner = engine::ingest::jobs::owner_id("bench");
    while let Some(job) = engine::ingest::jobs::claim_next(lore, &owner).await? {
        let ended = engine::ingest::jobs::run(lore, job, &owner, None).await?;
        anyhow::ensure!(ended.status == "succeeded", "indexing: {} {:?}", ended.status, ended.message);
    }
    let store = lore.chunks().await?;
    let chunks = store.count(None).await?;
    println!("Corpus: {chunks} chunks.");
    match &options.llm_endpoint {
        Some(endpoint) => super::bind_generation(lore, endpoint, &options.llm_model).await?,
        None => super::bind_embedded(lore).await?,
    }
    let generation = engine::providers::resolve(lore, Role::Generation)
        .await?
        .context("the generation role is not bound")?;
    let model = generation.target.model.clone();
    let version = engine::profile::active(lore).await?.context("no active profile version")?;
    let snapshot = &version.snapshot;
    let refusal = &snapshot.behavior.refusal;
    let embedder = lore.embedder().await?;
    let scope = Scope::only(vec![source.id.clone()]);
    let min_support = lore.settings.answer.grounding_min_support;
    let margin = lore.settings.answer.verification_margin.max(0.2);

    // 2. and 3. The replies of each question, judged.
    let answerable = set.questions.iter().filter(|q| !q.refuse).count();
    let unanswerable = set.questions.len() - answerable;
    let (mut unchecked, mut lexical, mut paraphrase, mut second, mut quoted) =
        (Tally::default(), Tally::default(), Tally::default(), Tally::default(), Tally::default());
    // Before the early stop: how long each refusal of the check took with
    // the whole reply written.
    let mut refusal_before_ms = Vec::new();
    let (mut recalled, mut right_replies, mut nothing_retrieved, mut repeating) = (0, 0, 0, 0);
    let mut rows = Vec::new();
    for (i, question) in set.questions.iter().enumerate() {
        let started = Instant::now();
        let retrieval = engine::retrieve::hybrid(
            store.as_ref(),
            embedder.as_ref(),
            &question.question,
            &scope,
            &snapshot.retrieval,
        )
        .await?;
        let retrieval_ms = started.elapsed().as_secs_f64() * 1000.0;
        let passages = retrieval.results;
        let in_top_5 = question
            .title
            .as_ref()
            .is_some_and(|title| passages.iter().take(5).any(|p| p.chunk.title.contains(title.as_str())));
        recalled += usize::from(in_top_5);
        if passages.is_empty() {
            // The pipeline refuses before any model call.
            nothing_retrieved += 1;
            for tally in [&mut unchecked, &mut lexical, &mut paraphrase, &mut second, &mut quoted] {
                tally.count(question, "", false, false);
                tally.refusal_ms.push(retrieval_ms);
            }
            refusal_before_ms.push(retrieval_ms);
            rows.push(json!({"question": question.question, "retrieved": 0}));
            continue;
        }
        let texts: Vec<grounding::Passage> = passages.iter().map(engine::answer::grounding_passage).collect();

        // In its own words: the whole reply, then (if it repeats itself)
        // the reply the pipeline now keeps.
        let messages = engine::answer::prompt(snapshot, &question.question, &passages);
        let whole = ask(lore, &generation, &messages, (MAX_TOKENS, Follow::default()), retrieval_ms).await?;
        let reply = if repetition::repeats(&whole.text).is_some() {
            repeating += 1;
            ask(lore, &generation, &messages, (MAX_TOKENS, Follow::stopping_repetition()), retrieval_ms)
                .await?
        } else {
            Reply { text: whole.text.clone(), ms: whole.ms }
        };
        let right = !question.refuse && question.holds_fact(&reply.text);
        right_replies += usize::from(right);
        // Unchecked, only the model's own refusal refuses.
        let unchecked_serves = !engine::answer::says_refusal(&whole.text, refusal);
        unchecked.count(question, &whole.text, unchecked_serves, right);
        let judged = |verdict: &grounding::Verdict| Judged {
            text: &reply.text,
            served: engine::answer::servable(&reply.text, verdict, refusal),
            model_was_right: right,
        };
        let mut verdict = grounding::check(&question.question, &reply.text, &texts, min_support);
        let lexical_serves = judged(&verdict).served;
        lexical.judge(question, &reply, &verdict, judged(&verdict));
        if !lexical_serves {
            refusal_before_ms.push(whole.ms);
        }
        // Statements refused for their words, weighed as paraphrases.
        let lexical_reason = verdict.reason.clone();
        verify::rephrasings(embedder.as_ref(), &mut verdict, options.paraphrase_similarity).await;
        let paraphrase_serves = judged(&verdict).served;
        paraphrase.judge(question, &reply, &verdict, judged(&verdict));
        let paraphrase_reason = verdict.reason.clone();
        let mut usage = engine::answer::Usage::default();
        if verdict.grounded {
            verify::second_opinion(lore, &generation, &mut verdict, &texts, margin, &mut usage).await;
        }
        let second_serves = judged(&verdict).served;
        second.judge(question, &reply, &verdict, judged(&verdict));

        // Quoted: the sentences the reply copies, verbatim, then the check.
        let messages = engine::answer::quote_prompt(snapshot, &question.question, &passages);
        let budget = MAX_TOKENS.min(engine::answer::QUOTE_TOKENS);
        let asked =
            ask(lore, &generation, &messages, (budget, Follow::stopping_repetition()), retrieval_ms).await?;
        let copied = grounding::quote(&question.question, &asked.text, &texts, min_support);
        let composed = copied.text.as_str();
        let quote_verdict = grounding::check(&question.question, composed, &texts, min_support);
        let quote_serves = !engine::answer::says_refusal(&asked.text, refusal) && quote_verdict.grounded;
        let quote_right = !question.refuse && question.holds_fact(&asked.text);
        let judged = Judged { text: composed, served: quote_serves, model_was_right: quote_right };
        quoted.judge(question, &asked, &quote_verdict, judged);

        let shown = |serves: bool| if serves { "served" } else { "refused" };
        println!(
            "{:>3}/{} {:<11} checked {:<7} quoted {:<7} {}",
            i + 1,
            set.questions.len(),
            if question.refuse {
                "(no answer)"
            } else if right {
                "right"
            } else {
                "not right"
            },
            shown(lexical_serves),
            shown(quote_serves),
            question.question
        );
        rows.push(json!({
            "question": question.question,
            "reply": reply.text,
            "repeated": reply.text != whole.text,
            "right": right,
            "in_top_5": in_top_5,
            "lexical": lexical_serves,
            "paraphrase": paraphrase_serves,
            "second_opinion": second_serves,
            "verdict": lexical_reason,
            "paraphrase_verdict": paraphrase_reason,
            "quote_reply": asked.text,
            "quoted": composed,
            "quoted_served": quote_serves,
            "quoted_right": quote_serves && question.holds_fact(composed),
            "quote_verdict": format!("{}; {}", copied.explain(), quote_verdict.reason),
            "ms": {"whole": whole.ms, "kept": reply.ms, "quoted": asked.ms},
        }));
    }

    let recall = ratio(recalled, answerable);
    let before_p50 = percentile(&refusal_before_ms, 0.5);
    println!();
    println!(
        "Quality over {} questions of the {} set ({answerable} answerable, {unanswerable} not), {model}",
        set.questions.len(),
        options.set.name(),
    );
    println!("  retrieval recall@5 (the answering page in the top 5): {:.0}%", recall * 100.0);
    println!("  right replies from the model: {right_replies} of {answerable}; replies that repeated themselves: {repeating}");
    println!(
        "  {:<22} {:>6} {:>6} {:>6} {:>12} {:>10} {:>16} {:>13} {:>14}",
        "",
        "served",
        "right",
        "wrong",
        "wrong/served",
        "right lost",
        "correct refusals",
        "span has fact",
        "refusal p50"
    );
    let ms = |v: Option<f64>| v.map(|v| format!("{:.1} s", v / 1000.0)).unwrap_or_else(|| "-".into());
    for (name, tally) in [
        ("unchecked", &unchecked),
        ("checked", &lexical),
        ("with paraphrases", &paraphrase),
        ("with second opinion", &second),
        ("quoted", &quoted),
    ] {
        println!(
            "  {:<22} {:>6} {:>6} {:>6} {:>11.1}% {:>10} {:>13}/{unanswerable} {:>12.0}% {:>14}",
            name,
            tally.served,
            tally.right,
            tally.wrong,
            tally.wrong_rate() * 100.0,
            tally.lost,
            tally.correct_refusals,
            ratio(tally.spans_with_fact, tally.statements) * 100.0,
            ms(tally.refusal_p50_ms())
        );
    }
    println!("  a refusal of the check before the early stop: p50 {}", ms(before_p50));
    let met = |t: &Tally| t.wrong_rate() <= WRONG_GOAL && ratio(t.lost, t.right_replies) <= LOST_GOAL;
    let quoted_met =
        ratio(quoted.right, answerable) >= QUOTED_RIGHT_GOAL && quoted.wrong_rate() <= WRONG_GOAL;
    let fast = |t: &Tally| t.refusal_p50_ms().is_none_or(|p50| p50 < REFUSAL_P50_GOAL_MS);
    println!(
        "  goals: checked (wrong ≤ {:.0}% of served, right lost ≤ {:.0}%) {}, with paraphrases {}; quoted (right ≥ {:.0}% of answerable, wrong ≤ {:.0}%) {}; refusal p50 < {:.0} s: checked {}, quoted {}",
        WRONG_GOAL * 100.0,
        LOST_GOAL * 100.0,
        if met(&lexical) { "met" } else { "not met" },
        if met(&paraphrase) { "met" } else { "not met" },
        QUOTED_RIGHT_GOAL * 100.0,
        WRONG_GOAL * 100.0,
        if quoted_met { "met" } else { "not met" },
        REFUSAL_P50_GOAL_MS / 1000.0,
        if fast(&lexical) { "met" } else { "not met" },
        if fast(&quoted) { "met" } else { "not met" },
    );

    Ok(json!({
        "benchmark": "quality",
        "set": options.set.name(),
        "build": build_profile(),
        "model": model,
        "embedded": options.llm_endpoint.is_none(),
        "questions": {"answerable": answerable, "unanswerable": unanswerable},
        "pages": set.pages.len(),
        "chunks": chunks,
        "retrieval_recall_at_5": recall,
        "nothing_retrieved": nothing_retrieved,
        "right_replies": right_replies,
        "replies_that_repeated": repeating,
        "unchecked": unchecked.record(answerable, unanswerable),
        "lexical": lexical.record(answerable, unanswerable),
        "paraphrase": paraphrase.record(answerable, unanswerable),
        "paraphrase_min_similarity": options.paraphrase_similarity,
        "second_opinion": second.record(answerable, unanswerable),
        "quoted": quoted.record(answerable, unanswerable),
        "refusal_p50_ms_before_the_early_stop": before_p50,
        "second_opinion_margin": margin,
        "goal": {
            "wrong_share_of_served_at_most": WRONG_GOAL,
            "lost_share_of_right_replies_at_most": LOST_GOAL,
            "quoted_right_share_of_answerable_at_least": QUOTED_RIGHT_GOAL,
            "refusal_p50_ms_below": REFUSAL_P50_GOAL_MS,
            "lexical_met": met(&lexical),
            "paraphrase_met": met(&paraphrase),
            "second_opinion_met": met(&second),
            "quoted_met": quoted_met,
            "refusal_p50_met": fast(&lexical) && fast(&quoted),
        },
        "replies": rows,
    }))
}
