//! Readiness: can this cluster answer questions, and if not, why not.
//!
//! [`assess`] is the one function that decides `can_answer`. The Dashboard's
//! Readiness panel (through `GET /admin/setup-state/`) shows its result, and
//! the answer runtime enforces the very same verdict, so the two can never
//! disagree. Each concern is reported on its own; "still indexing" is
//! `Pending`, not a failure.
//!
//! An assessment reads what its checks need once ([`Assessment::read`]), all
//! at once: every `/answer` runs one, so the sources, bindings, stamp and
//! profile are each read a single time, and the answer runtime goes on with
//! the very profile version and enabled sources the verdict was made on.

use crate::sources::{Source, SourceStatus};

use crate::fingerprint::{self, RetrievalState};
use crate::ingest::jobs;
use crate::providers::{self, Resolved, Role, TargetState};
use crate::{embed, profile, Error, Lore, Result};

/// The concerns Readiness reports, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concern {
    Configuration,
    Embedding,
    Provider,
    Indexing,
    Content,
    ProfileVersion,
}

impl Concern {
    pub fn key(self) -> &'static str {
        match self {
            Concern::Configuration => "configuration",
            Concern::Embedding => "embedding",
            Concern::Provider => "provider",
            Concern::Indexing => "indexing",
            Concern::Content => "content",
            Concern::ProfileVersion => "profile_version",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// Under way (for example an index running); will become Ok by itself.
    Pending,
    /// Not set up yet: the admin has a step to take.
    Missing,
    /// Set up but broken.
    Failing,
    /// Answering, but something needs the admin (for example an active
    /// profile version that cannot be read, with an older one serving).
    Degraded,
}

impl Status {
    pub fn key(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Pending => "pending",
            Status::Missing => "missing",
            Status::Failing => "failing",
            Status::Degraded => "degraded",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub concern: Concern,
    pub status: Status,
    /// One sentence for the admin: what is the case, and what to do.
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct SetupState {
    pub checks: Vec<Check>,
    /// The server's verdict; the answer runtime enforces exactly this.
    pub can_answer: bool,
    /// Why not, one entry per check that is neither Ok nor Degraded (empty
    /// when answerable).
    pub reasons: Vec<String>,
    pub active_profile_version: Option<i64>,
    /// The active version's last eval: right answers of golden questions.
    pub active_evals: Option<EvalScore>,
    /// Whether the setup wizard has been walked to its end, so the console
    /// can send each missing check to the wizard's step or to the screen
    /// that fixes it. Read by [`assess`] only (the answer path's
    /// assessment leaves it `false`).
    pub wizard_complete: bool,
}

/// The active version's eval score, as Readiness shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalScore {
    pub correct: usize,
    pub questions: usize,
    pub ran_at: chrono::DateTime<chrono::Utc>,
}

/// Assesses every concern and derives `can_answer` from them.
/// A vector index being trained anew is said on the indexing check (not
/// read on the answer path: answers go on through the previous index).
pub async fn assess(lore: &Lore) -> Result<SetupState> {
    let (assessment, wizard, training) = tokio::try_join!(
        Assessment::read(lore),
        crate::wizard::progress(lore),
        crate::upkeep::training_under_way(lore)
    )?;
    let mut state = assessment.state;
    state.wizard_complete = wizard.step == crate::wizard::Step::Complete;
    if let (Some(training), Some(check)) =
        (training, state.checks.iter_mut().find(|check| check.concern == Concern::Indexing))
    {
        check.detail = format!("{} {}", check.detail, training_in_words(&training));
    }
    Ok(state)
}

/// A training under way, for the admin.
fn training_in_words(training: &crate::upkeep::Training) -> String {
    format!(
        "The vector index is being trained anew on {} chunks (since {}); searches use the previous index until it is done.",
        training.rows,
        training.started_at.format("%H:%M UTC")
    )
}

/// A verdict with the facts it was made on.
pub struct Assessment {
    pub state: SetupState,
    /// The active profile version, when there is one.
    pub profile: Option<profile::Version>,
    sources: Vec<Source>,
    stamp: Option<fingerprint::Fingerprint>,
    configured_model: String,
    /// The generation target the provider check passed, as read for it.
    generation: Option<Resolved>,
}

impl Assessment {
    /// Reads the facts once and checks every concern on them.
    pub async fn read(lore: &Lore) -> Result<Self> {
        use entity::index_job;
        use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

        // Independent reads, so they run at once, on the pool's connections.
        let (embedding_binding, generation_binding, running, sources, stamp, profile) = tokio::try_join!(
            providers::resolve(lore, Role::Embedding),
            providers::resolve(lore, Role::Generation),
            async {
                let running = index_job::Entity::find()
                    .filter(index_job::Column::Status.is_in([jobs::QUEUED, jobs::RUNNING]))
                    .count(&lore.db)
                    .await?;
                Ok::<_, Error>(running)
            },
            crate::sources::list(lore),
            fingerprint::stamped(&lore.db),
            profile::active(lore),
        )?;
        let configured_model = lore.embedding_model_for(embedding_binding.as_ref());

        let checks = vec![
            configuration(lore),
            embedding(lore, embedding_binding.as_ref()).await?,
            provider(lore, generation_binding.as_ref()),
            indexing(&sources, running, stamp.as_ref(), &configured_model),
            content(&sources),
            profile_version(profile.as_ref()),
        ];
        let reasons: Vec<String> = checks
            .iter()
            .filter(|check| !matches!(check.status, Status::Ok | Status::Degraded))
            .map(|check| format!("{}: {}", check.concern.key(), check.detail))
            .collect();
        let state = SetupState {
            can_answer: reasons.is_empty(),
            reasons,
            checks,
            active_profile_version: profile.as_ref().map(|v| i64::from(v.version)),
            active_evals: profile.as_ref().and_then(crate::evals::Report::of).map(|r| EvalScore {
                correct: r.totals.correct,
                questions: r.totals.questions,
                ran_at: r.ran_at,
            }),
            wizard_complete: false,
        };
        Ok(Self { state, profile, sources, stamp, configured_model, generation: generation_binding })
    }

    /// The generation target the verdict was made on: what an answer calls,
    /// so that the call and the verdict cannot see different bindings.
    pub fn generation(&self) -> Option<&Resolved> {
        self.generation.as_ref()
    }

    /// Whether retrieval may run (see [`crate::search::retrieval_state`]).
    pub async fn retrieval_state(&self, lore: &Lore) -> Result<RetrievalState> {
        crate::search::retrieval_state_of(lore, &self.configured_model, self.stamp.as_ref()).await
    }

    /// Every source, as read for this assessment.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The sources `reader`'s retrieval searches, as read for this
    /// assessment: the enabled ones it may read.
    pub fn visible_scope(&self, reader: &crate::sources::Reader) -> crate::index::Scope {
        crate::sources::audience::visible_scope(&self.sources, reader)
    }
}

fn configuration(lore: &Lore) -> Check {
    let problems = lore.settings.integrity_problems();
    if problems.is_empty() {
        Check {
            concern: Concern::Configuration,
            status: Status::Ok,
            detail: "The configuration is complete.".into(),
        }
    } else {
        Check { concern: Concern::Configuration, status: Status::Failing, detail: problems.join(" ") }
    }
}

/// Provider: the generation role is bound to a target that is ready now.
fn provider(lore: &Lore, bound: Option<&Resolved>) -> Check {
    let check = |status, detail: String| Check { concern: Concern::Provider, status, detail };
    match bound {
        None => check(Status::Missing, "No generation model is bound: add a provider.".into()),
        Some(bound) if bound.state == TargetState::Ready => {
            check(Status::Ok, format!("{} answers through {}.", bound.target.model, bound.account.name))
        }
        Some(bound) => {
            let (_, reason) = providers::state(
                &bound.target,
                lore.settings.providers.probe_max_age_days,
                chrono::Utc::now(),
            );
            check(
                Status::Failing,
                format!(
                    "The generation target {} is {}: {}.",
                    bound.target.model,
                    bound.state.key(),
                    reason.unwrap_or_default()
                ),
            )
        }
    }
}

/// Indexing: a run in progress before any has finished is `Pending`; a
/// corpus whose fingerprint does not match the configured embedding model is
/// `Failing` (retrieval fails closed); otherwise `Ok` once a run has
/// succeeded, runs in progress or not (a scheduled re-sync or a second
/// source does not stop the answers).
pub fn indexing(
    sources: &[Source],
    running: u64,
    stamp: Option<&fingerprint::Fingerprint>,
    configured: &str,
) -> Check {
    let check = |status, detail: String| Check { concern: Concern::Indexing, status, detail };
    let chunks: i64 = sources.iter().map(|s| i64::from(s.chunk_count)).sum();
    if let RetrievalState::FailingClosed(why) =
        fingerprint::retrieval_state(configured, stamp, chunks.max(0) as usize)
    {
        let detail = if running > 0 {
            format!("Reindexing: {why}.")
        } else {
            format!("Retrieval is failing closed: {why}.")
        };
        return check(Status::Failing, detail);
    }
    match sources.iter().filter_map(|s| s.last_synced_at).max() {
        // Still indexing for the first time: not answerable yet, not an error.
        None if running > 0 => check(
            Status::Pending,
            format!("{running} indexing run(s) in progress; answers wait for the first one."),
        ),
        // A re-sync or a new source does not take answers away: the corpus
        // indexed so far keeps answering while the runs go on.
        Some(at) => {
            let finished = format!("The last index finished at {}", at.format("%Y-%m-%d %H:%M UTC"));
            let detail = match running {
                0 => format!("{finished}."),
                _ => format!("{finished}; {running} indexing run(s) in progress."),
            };
            check(Status::Ok, detail)
        }
        None if sources.iter().any(|s| s.status == SourceStatus::Failed) => check(
            Status::Failing,
            "The last index failed; see the source's errors on the Sources screen.".into(),
        ),
        None => check(Status::Missing, "No index has run yet.".into()),
    }
}

/// Content: chunks in at least one enabled source.
fn content(sources: &[Source]) -> Check {
    let with_content: Vec<_> = sources.iter().filter(|s| s.enabled && s.chunk_count > 0).collect();
    let chunks: i64 = with_content.iter().map(|s| i64::from(s.chunk_count)).sum();
    if with_content.is_empty() {
        Check {
            concern: Concern::Content,
            status: Status::Missing,
            detail: "No content is indexed: add a source.".into(),
        }
    } else {
        Check {
            concern: Concern::Content,
            status: Status::Ok,
            detail: format!("{chunks} chunks from {} enabled source(s).", with_content.len()),
        }
    }
}

fn profile_version(active: Option<&profile::Version>) -> Check {
    let check = |status, detail: String| Check { concern: Concern::ProfileVersion, status, detail };
    let Some(serving) = active else {
        return check(Status::Missing, "No profile yet: it is created when the first index starts.".into());
    };
    match &serving.serving_instead_of {
        Some((number, why)) => check(
            Status::Degraded,
            format!(
                "The active version {number} cannot be read ({why}); answers use version {}, the newest readable one. Save or restore a version on the Prompt screen to make it active.",
                serving.version
            ),
        ),
        None => {
            let evals = crate::evals::Report::of(serving).map_or_else(String::new, |r| {
                format!(" Golden questions: {} of {} right at its last eval.", r.totals.correct, r.totals.questions)
            });
            check(
                Status::Ok,
                format!("Version {} of the {} profile is active.{evals}", serving.version, serving.snapshot.persona),
            )
        }
    }
}

async fn embedding(lore: &Lore, bound: Option<&Resolved>) -> Result<Check> {
    if let Some(bound) = bound {
        let (state, reason) =
            providers::state(&bound.target, lore.settings.providers.probe_max_age_days, chrono::Utc::now());
        let (status, detail) = match reason {
            None => {
                (Status::Ok, format!("Embedding through {} on {}.", bound.target.model, bound.account.name))
            }
            Some(why) => (
                Status::Failing,
                format!("The embedding role's target {} is {}: {why}.", bound.target.model, state.key()),
            ),
        };
        return Ok(Check { concern: Concern::Embedding, status, detail });
    }
    let model = &lore.settings.models.embedding;
    let (status, detail) = if embed::model_files::locate(&lore.settings).is_none() {
        (
            Status::Missing,
            format!(
                "The files of {model} are missing from {}; {} fetches them once for this machine.",
                embed::model_files::cache_dir(&lore.settings, model).display(),
                embed::model_files::FETCHED_BY
            ),
        )
    } else {
        match lore.embedder().await {
            Ok(embedder) => {
                (Status::Ok, format!("{model} is loaded ({} dimensions).", embedder.dimensions()))
            }
            Err(Error::Embedding(err)) => (Status::Failing, format!("{err}.")),
            Err(other) => return Err(other),
        }
    };
    Ok(Check { concern: Concern::Embedding, status, detail })
}
