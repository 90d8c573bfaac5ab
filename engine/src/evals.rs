//! Golden questions and evals: does a candidate profile version answer the
//! questions that matter at least as well as the one serving?
//!
//! - The admin keeps a set of [`Golden`] questions: each expects facts in
//!   its answer (every one, case and spacing aside), or a refusal, and
//!   optionally a citation of one source. They are added on the Prompt
//!   screen, from the Playground and from the Dashboard.
//! - [`run`] answers every golden question as a version would (the answer
//!   pipeline's eval mode: no pins, no caches, nothing recorded) and scores
//!   each: answered or refused, facts found, source cited, latency, cost.
//!   The [`Report`] is stored in the version's `evals`.
//! - [`GoldenGate`] is the profile's save gate: saving a version with
//!   golden questions present runs the set against the candidate and
//!   against the active version, both now, under the same models and
//!   index, and the candidate is activated only when it is not worse
//!   ([`regressions`]): no fewer right answers, no more refusals of
//!   questions it should answer. Otherwise it is stored, inactive, with the
//!   comparison in its [`Gate`], and serves only when the admin activates
//!   it anyway (recorded in the gate and the audit log).
//! - Storing a report keeps the version's gate (and its "activated anyway")
//!   unless the report brings its own.

use std::time::Instant;

use chrono::{DateTime, Utc};
use entity::{golden_question, profile_version};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::answer;
use crate::audit::{self, Actor};
use crate::judging::{Step, Tracker};
use crate::profile::{Judged, ProfileError, Version};
use crate::{Corpus, Error, Lore, Result};

/// The most golden questions kept: each costs two answer runs per save.
pub const MAX_GOLDEN: u64 = 100;
/// The most expected facts one question holds.
pub const MAX_FACTS: usize = 10;
/// The longest expected fact, in characters.
pub const MAX_FACT_CHARS: usize = 200;

/// Where a golden question was added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Prompt,
    Playground,
    Dashboard,
    Cli,
}

impl Origin {
    pub fn key(self) -> &'static str {
        match self {
            Origin::Prompt => "prompt",
            Origin::Playground => "playground",
            Origin::Dashboard => "dashboard",
            Origin::Cli => "cli",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        [Origin::Prompt, Origin::Playground, Origin::Dashboard, Origin::Cli]
            .into_iter()
            .find(|o| o.key() == raw)
            .ok_or_else(|| {
                Error::InvalidInput(format!("unknown origin `{raw}`: prompt, playground, dashboard or cli"))
            })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Golden {
    pub id: String,
    pub question: String,
    pub expected_facts: Vec<String>,
    pub should_refuse: bool,
    pub expected_source: Option<String>,
    pub origin: Origin,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// Who it is asked as (`everyone`, `role:NAME`, `user:NAME`); `None`:
    /// an admin, who reads every source.
    pub asked_as: Option<String>,
}

impl TryFrom<golden_question::Model> for Golden {
    type Error = Error;

    fn try_from(row: golden_question::Model) -> Result<Self> {
        let unreadable =
            |why: String| Error::Internal(format!("the golden question {} is unreadable: {why}", row.id));
        Ok(Golden {
            expected_facts: serde_json::from_value(row.expected_facts.clone())
                .map_err(|e| unreadable(e.to_string()))?,
            origin: Origin::parse(&row.origin).map_err(|e| unreadable(e.to_string()))?,
            id: row.id,
            question: row.question,
            should_refuse: row.should_refuse,
            expected_source: row.expected_source,
            created_by: row.created_by,
            created_at: row.created_at,
            asked_as: row.asked_as,
        })
    }
}

/// A profile version with the ratings of the answers it served (all time,
/// from the rollups): its eval summary shows their helpful rate beside its
/// golden-question score.
#[derive(Clone, Debug)]
pub struct Served {
    pub version: crate::profile::Version,
    pub helpful: i64,
    pub unhelpful: i64,
}

/// Every profile version, newest first, with the ratings of what it served.
pub async fn versions(lore: &Lore) -> Result<Vec<Served>> {
    let rated = crate::metrics::ratings_by_version(lore).await?;
    Ok(crate::profile::versions(lore)
        .await?
        .into_iter()
        .map(|version| {
            let (helpful, unhelpful) = rated.get(&version.version).copied().unwrap_or_default();
            Served { version, helpful, unhelpful }
        })
        .collect())
}

/// A golden question as the admin adds it.
#[derive(Clone, Debug)]
pub struct NewGolden {
    pub question: String,
    pub expected_facts: Vec<String>,
    pub should_refuse: bool,
    pub expected_source: Option<String>,
    pub origin: Origin,
    /// Who to ask it as, as the Playground's "answer as" reads it.
    pub asked_as: Option<String>,
}

/// Adds a golden question; one with the same normalised question is replaced.
pub async fn add(lore: &Lore, actor: &Actor, new: NewGolden) -> Result<Golden> {
    let question = answer::normalise(&new.question)?;
    let facts: Vec<String> = new
        .expected_facts
        .iter()
        .map(|f| f.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|f| !f.is_empty())
        .collect();
    if facts.len() > MAX_FACTS {
        return Err(Error::InvalidInput(format!("a golden question expects at most {MAX_FACTS} facts")));
    }
    if let Some(long) = facts.iter().find(|f| f.chars().count() > MAX_FACT_CHARS) {
        return Err(Error::InvalidInput(format!(
            "the expected fact “{}…” is longer than {MAX_FACT_CHARS} characters",
            long.chars().take(40).collect::<String>()
        )));
    }
    if new.should_refuse && (!facts.is_empty() || new.expected_source.is_some()) {
        return Err(Error::InvalidInput(
            "a question that should be refused expects no facts and no source".into(),
        ));
    }
    let source = new.expected_source.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(source) = &source {
        let known = crate::sources::list(lore).await?.iter().any(|s| &s.id == source);
        if !known {
            return Err(Error::InvalidInput(format!("there is no source `{source}`")));
        }
    }
    let asked_as = match new.asked_as.as_deref().map(str::trim).filter(|a| !a.is_empty() && *a != "admin") {
        Some(given) => Some(crate::asker::stored_form(lore, given).await?),
        None => None,
    };
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    let existing: Vec<golden_question::Model> = golden_question::Entity::find().all(&txn).await?;
    let same: Vec<String> = existing
        .iter()
        .filter(|g| answer::normalise(&g.question).is_ok_and(|n| n.key == question.key))
        .map(|g| g.id.clone())
        .collect();
    if same.is_empty() && existing.len() as u64 >= MAX_GOLDEN {
        return Err(Error::InvalidInput(format!(
            "there are {MAX_GOLDEN} golden questions already; remove one first"
        )));
    }
    if !same.is_empty() {
        golden_question::Entity::delete_many()
            .filter(golden_question::Column::Id.is_in(same))
            .exec(&txn)
            .await?;
    }
    let row = golden_question::ActiveModel {
        id: Set(id.clone()),
        question: Set(question.text.clone()),
        expected_facts: Set(serde_json::json!(facts)),
        should_refuse: Set(new.should_refuse),
        expected_source: Set(source),
        origin: Set(new.origin.key().to_owned()),
        created_by: Set(actor.label()),
        created_at: Set(Utc::now()),
        asked_as: Set(asked_as),
    }
    .insert(&txn)
    .await?;
    audit::record(&txn, actor, "golden.added", Some(&id), serde_json::json!({"question": question.text}))
        .await?;
    txn.commit().await?;
    Golden::try_from(row)
}

/// The golden set, oldest first.
pub async fn list(lore: &Lore) -> Result<Vec<Golden>> {
    golden_question::Entity::find()
        .order_by_asc(golden_question::Column::CreatedAt)
        .order_by_asc(golden_question::Column::Id)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Golden::try_from)
        .collect()
}

/// The golden questions asked as `asked_as` (`role:NAME` or `user:NAME`).
pub async fn asked_as(lore: &Lore, asked_as: &str) -> Result<Vec<Golden>> {
    golden_question::Entity::find()
        .filter(golden_question::Column::AskedAs.eq(asked_as))
        .order_by_asc(golden_question::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Golden::try_from)
        .collect()
}

/// Golden questions asked as `from` are asked as `to` from now on (a
/// renamed role).
pub async fn rename_asked_as(lore: &Lore, from: &str, to: &str) -> Result<()> {
    golden_question::Entity::update_many()
        .col_expr(golden_question::Column::AskedAs, Expr::value(to))
        .filter(golden_question::Column::AskedAs.eq(from))
        .exec(&lore.db)
        .await?;
    Ok(())
}

pub async fn remove(lore: &Lore, actor: &Actor, id: &str) -> Result<()> {
    let txn = crate::store::begin_write(&lore.db).await?;
    let removed = golden_question::Entity::delete_by_id(id.to_owned()).exec(&txn).await?.rows_affected;
    if removed == 0 {
        return Err(ProfileError::UnknownGolden(id.to_owned()).into());
    }
    audit::record(&txn, actor, "golden.removed", Some(id), serde_json::json!({})).await?;
    txn.commit().await?;
    Ok(())
}

/// Whether any golden question exists.
pub async fn any(lore: &Corpus) -> Result<bool> {
    Ok(golden_question::Entity::find().count(&lore.db).await? > 0)
}

/// How one golden question fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    pub id: String,
    pub question: String,
    pub should_refuse: bool,
    pub answered: bool,
    pub refused: bool,
    /// Every expected fact is in the answer (true when none is expected).
    pub facts_found: bool,
    pub missing_facts: Vec<String>,
    /// Whether the expected source is cited (`None`: none expected).
    pub source_cited: Option<bool>,
    pub correct: bool,
    pub latency_ms: f64,
    pub cost_usd: f64,
    /// The run failed (a provider down): the question counts as wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub questions: usize,
    pub correct: usize,
    pub answered: usize,
    pub refused: usize,
    /// Refusals of questions that expect an answer.
    pub wrongly_refused: usize,
    /// Answers to questions that expect a refusal, or without an expected fact or source.
    pub wrong_answers: usize,
    pub failed: usize,
    pub cost_usd: f64,
    pub mean_latency_ms: f64,
}

impl Totals {
    /// Right answers out of questions, 0 to 1.
    pub fn score(&self) -> f64 {
        if self.questions == 0 {
            0.0
        } else {
            self.correct as f64 / self.questions as f64
        }
    }

    pub fn of(results: &[QuestionResult]) -> Self {
        let count = |f: &dyn Fn(&QuestionResult) -> bool| results.iter().filter(|r| f(r)).count();
        Totals {
            questions: results.len(),
            correct: count(&|r| r.correct),
            answered: count(&|r| r.answered),
            refused: count(&|r| r.refused),
            wrongly_refused: count(&|r| r.refused && !r.should_refuse),
            wrong_answers: count(&|r| r.answered && !r.correct),
            failed: count(&|r| r.error.is_some()),
            cost_usd: results.iter().map(|r| r.cost_usd).sum(),
            mean_latency_ms: if results.is_empty() {
                0.0
            } else {
                results.iter().map(|r| r.latency_ms).sum::<f64>() / results.len() as f64
            },
        }
    }
}

/// The comparison that decided whether a saved candidate became active.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The version it was compared with (active when it was saved).
    pub baseline_version: i32,
    pub baseline: Totals,
    /// The baseline's result per question, to show beside the candidate's.
    pub baseline_results: Vec<QuestionResult>,
    pub passed: bool,
    /// Why it did not pass, one line each.
    pub regressions: Vec<String>,
    /// Set when an admin activated the candidate despite the regressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activated_anyway: Option<Override>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Override {
    pub by: String,
    pub at: DateTime<Utc>,
}

/// What a version's `evals` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub ran_at: DateTime<Utc>,
    /// A fingerprint of the golden set the report answered.
    pub set: String,
    pub results: Vec<QuestionResult>,
    pub totals: Totals,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

impl Report {
    /// The report stored with `version`, if it has one that reads.
    pub fn of(version: &Version) -> Option<Report> {
        version.evals.clone().and_then(|value| serde_json::from_value(value).ok())
    }
}

fn fingerprint(set: &[Golden]) -> String {
    let mut hash = Sha256::new();
    for golden in set {
        hash.update(golden.id.as_bytes());
        hash.update([0]);
        hash.update(golden.question.as_bytes());
        hash.update([0]);
        hash.update(golden.expected_facts.join("\u{1f}").as_bytes());
        hash.update([u8::from(golden.should_refuse)]);
        hash.update(golden.expected_source.as_deref().unwrap_or_default().as_bytes());
    }
    format!("{:x}", hash.finalize())
}

/// Lower case, one space between words, the quotes and closing punctuation
/// of the text's own words aside: how facts are looked for in answers.
fn comparable(text: &str) -> String {
    text.to_lowercase()
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| {
                matches!(
                    c,
                    '"' | '\''
                        | '`'
                        | '*'
                        | '“'
                        | '”'
                        | '‘'
                        | '’'
                        | ','
                        | ';'
                        | ':'
                        | '.'
                        | '!'
                        | '?'
                        | '('
                        | ')'
                )
            })
        })
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Scores one answer against its golden question.
pub fn score(golden: &Golden, answer: &answer::Answer, latency_ms: f64) -> QuestionResult {
    let text = format!(" {} ", comparable(&answer.answer));
    let missing: Vec<String> = golden
        .expected_facts
        .iter()
        .filter(|fact| !text.contains(&format!(" {} ", comparable(fact))))
        .cloned()
        .collect();
    let answered = !answer.refused;
    let source_cited = golden
        .expected_source
        .as_ref()
        .map(|source| answered && answer.citations.iter().any(|c| &c.source_id == source));
    let facts_found = answered && missing.is_empty();
    let correct =
        if golden.should_refuse { answer.refused } else { facts_found && source_cited.unwrap_or(true) };
    QuestionResult {
        id: golden.id.clone(),
        question: golden.question.clone(),
        should_refuse: golden.should_refuse,
        answered,
        refused: answer.refused,
        facts_found,
        missing_facts: if answered { missing } else { golden.expected_facts.clone() },
        source_cited,
        correct,
        latency_ms,
        cost_usd: answer.trace.usage.estimated_cost_usd,
        error: None,
    }
}

/// Answers the golden set as `version` would and scores it; `None` when
/// there are no golden questions. `progress` hears of each question done.
pub async fn run(
    lore: &Lore,
    version: &Version,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Option<Report>> {
    let set = list(lore).await?;
    if set.is_empty() {
        return Ok(None);
    }
    let mut results = Vec::with_capacity(set.len());
    progress(0, set.len());
    for (done, golden) in set.iter().enumerate() {
        let started = Instant::now();
        let asked = async {
            let asker = crate::asker::Asker::answering_as(golden.asked_as.as_deref())?;
            answer::evaluate(lore, version, &golden.question, asker).await
        };
        let result = match asked.await {
            Ok(answer) => score(golden, &answer, started.elapsed().as_secs_f64() * 1000.0),
            // The pipeline cannot answer at all: no version would do better.
            Err(err @ (Error::NotAnswerable(_) | Error::RetrievalFailingClosed(_))) => return Err(err),
            Err(err) => QuestionResult {
                id: golden.id.clone(),
                question: golden.question.clone(),
                should_refuse: golden.should_refuse,
                answered: false,
                refused: false,
                facts_found: false,
                missing_facts: golden.expected_facts.clone(),
                source_cited: golden.expected_source.as_ref().map(|_| false),
                correct: false,
                latency_ms: started.elapsed().as_secs_f64() * 1000.0,
                cost_usd: 0.0,
                error: Some(err.to_string()),
            },
        };
        results.push(result);
        progress(done + 1, set.len());
    }
    Ok(Some(Report {
        ran_at: Utc::now(),
        set: fingerprint(&set),
        totals: Totals::of(&results),
        results,
        gate: None,
    }))
}

/// What makes `candidate` worse than `baseline`, one line each (none: not worse).
pub fn regressions(candidate: &Totals, baseline: &Totals, baseline_version: i32) -> Vec<String> {
    let mut worse = Vec::new();
    if candidate.correct < baseline.correct {
        worse.push(format!(
            "answers {} of {} golden questions right, version {baseline_version} {}",
            candidate.correct, candidate.questions, baseline.correct
        ));
    }
    if candidate.wrongly_refused > baseline.wrongly_refused {
        worse.push(format!(
            "refuses {} golden questions it should answer, version {baseline_version} {}",
            candidate.wrongly_refused, baseline.wrongly_refused
        ));
    }
    worse
}

/// Stores `report` as version `number`'s evals, keeping the gate stored
/// with it (read in the same transaction) when `report` has none.
pub async fn store(lore: &Lore, number: i32, report: &Report) -> Result<()> {
    let mut value =
        serde_json::to_value(report).map_err(|err| Error::Internal(format!("serialising evals: {err}")))?;
    let txn = crate::store::begin_write(&lore.db).await?;
    // A write first, so the transaction holds SQLite's write lock before it
    // reads the gate: a restore with `anyway` is ordered before or after.
    profile_version::Entity::update_many()
        .col_expr(profile_version::Column::Evals, Expr::col(profile_version::Column::Evals).into())
        .filter(profile_version::Column::Version.eq(number))
        .exec(&txn)
        .await?;
    if report.gate.is_none() {
        let previous = profile_version::Entity::find()
            .filter(profile_version::Column::Version.eq(number))
            .one(&txn)
            .await?
            .and_then(|row| row.evals);
        let kept =
            previous.as_ref().and_then(|evals| evals.get("gate")).filter(|gate| !gate.is_null()).cloned();
        if let (Some(gate), Some(object)) = (kept, value.as_object_mut()) {
            object.insert("gate".into(), gate);
        }
    }
    profile_version::Entity::update_many()
        .col_expr(profile_version::Column::Evals, Expr::value(value))
        .filter(profile_version::Column::Version.eq(number))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// The profile's save gate: the golden questions, when there are any.
/// Handed to the corpus floors at [`Lore::open`], where the profile's save
/// consults it, and wired then to the answering floors it evaluates with.
#[derive(Default)]
pub struct GoldenGate {
    answering: std::sync::OnceLock<std::sync::Arc<crate::Answering>>,
}

impl GoldenGate {
    /// Gives the gate the answering floors of its process (once, at open).
    pub(crate) fn wire(&self, answering: std::sync::Arc<crate::Answering>) {
        let _ = self.answering.set(answering);
    }

    /// The handle that answers on `corpus` with this process's answering
    /// floors.
    fn lore(&self, corpus: &Corpus) -> Result<Lore> {
        let answering = self.answering.get().ok_or_else(|| {
            Error::Internal("the save gate was consulted before Lore finished opening".into())
        })?;
        Ok(Lore::of(corpus, answering.clone()))
    }
}

#[async_trait::async_trait]
impl crate::profile::SaveGate for GoldenGate {
    async fn applies(&self, corpus: &Corpus) -> Result<bool> {
        any(corpus).await
    }

    async fn judge(
        &self,
        corpus: &Corpus,
        candidate: &Version,
        serving: &Version,
        progress: &Tracker,
    ) -> Result<Option<Judged>> {
        let lore = &self.lore(corpus)?;
        let as_candidate = |done, total| progress.report(Step::Candidate, done, total);
        let as_serving = |done, total| progress.report(Step::Baseline, done, total);
        let (Some(mut report), Some(baseline)) =
            (run(lore, candidate, &as_candidate).await?, run(lore, serving, &as_serving).await?)
        else {
            return Ok(None);
        };
        // The serving version's fresh score (Readiness shows it).
        store(lore, serving.version, &baseline).await?;
        let regressions = regressions(&report.totals, &baseline.totals, serving.version);
        report.gate = Some(Gate {
            baseline_version: serving.version,
            baseline: baseline.totals,
            baseline_results: baseline.results,
            passed: regressions.is_empty(),
            regressions: regressions.clone(),
            activated_anyway: None,
        });
        let evals = serde_json::to_value(&report)
            .map_err(|err| Error::Internal(format!("serialising evals: {err}")))?;
        Ok(Some(Judged { evals, regressions }))
    }
}

/// What `lore evals run` and the console's "run evals" report.
#[derive(Clone, Debug, PartialEq)]
pub struct Rerun {
    pub version: i32,
    pub report: Report,
    /// The version's previous report on the same golden set, if it had one.
    pub previous: Option<Totals>,
    /// Against `previous`.
    pub regressions: Vec<String>,
}

/// Runs the golden set against version `number` (the active one by
/// default) now, compares with its previous report on the same set, and
/// stores the new one (keeping the previous gate). Without golden
/// questions there is nothing to run: `invalid_input`.
pub async fn rerun(
    lore: &Lore,
    number: Option<i32>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Rerun> {
    let version = match number {
        Some(number) => crate::profile::version(lore, number).await?,
        None => crate::profile::active(lore).await?.ok_or(ProfileError::NoProfile)?,
    };
    let Some(report) = run(lore, &version, progress).await? else {
        return Err(Error::InvalidInput(
            "there are no golden questions: add some on the Prompt screen or with `lore evals add`".into(),
        ));
    };
    // `store` keeps the version's gate.
    let previous = Report::of(&version).filter(|b| b.set == report.set).map(|b| b.totals);
    let regressions =
        previous.as_ref().map(|p| regressions(&report.totals, p, version.version)).unwrap_or_default();
    store(lore, version.version, &report).await?;
    Ok(Rerun { version: version.version, report, previous, regressions })
}
