//! The setup wizard, kept on the server so an admin resumes where they left
//! it (another browser, a reload, a restart).
//!
//! Steps, in SPEC.md's order: persona → first source → provider → optional
//! advanced → first index → first question → complete. Each step is one
//! action here that validates, does its work with the same engine functions
//! the screens use, and only then moves the wizard on; a failed step leaves
//! the wizard where it was with a clear message.

use serde::{Deserialize, Serialize};

use crate::answer::{self, Answer, Ask, Surface};
use crate::audit::{self, Actor};
use crate::ingest::{jobs, IngestError};
use crate::profile::{self, PersonaChoice};
use crate::providers::{self, QuickAdd, Role, TargetState};
use crate::sources::connector::FirstSync;
use crate::sources::{self, NewSource};
use crate::{Error, Lore, Result};

const PROGRESS: &str = "setup.wizard";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    #[default]
    Persona,
    Source,
    Provider,
    Advanced,
    Index,
    Question,
    Complete,
}

impl Step {
    pub const ALL: [Step; 7] = [
        Step::Persona,
        Step::Source,
        Step::Provider,
        Step::Advanced,
        Step::Index,
        Step::Question,
        Step::Complete,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Step::Persona => "persona",
            Step::Source => "source",
            Step::Provider => "provider",
            Step::Advanced => "advanced",
            Step::Index => "index",
            Step::Question => "question",
            Step::Complete => "complete",
        }
    }

    fn next(self) -> Step {
        let at = Step::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Step::ALL.get(at + 1).copied().unwrap_or(Step::Complete)
    }

    fn previous(self) -> Step {
        let at = Step::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Step::ALL[at.saturating_sub(1)]
    }
}

/// Where the wizard is, and what its steps made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub step: Step,
    /// The first source (the source step made it).
    pub source_id: Option<String>,
    /// The first index run (the index step started it).
    pub job_id: Option<String>,
    /// The first question got an answer.
    pub answered: bool,
    /// A question went through the pipeline, answered or refused: enough
    /// to finish. A refusal is an honest outcome (the small default model
    /// cannot support every answer), and a newcomer must not be stuck on
    /// the last step because of it; Readiness and the Dashboard still say
    /// what answers and what does not.
    #[serde(default)]
    pub asked: bool,
}

/// The wizard as its screen shows it: the progress and what its steps made.
#[derive(Clone, Debug)]
pub struct Overview {
    pub progress: Progress,
    /// The chosen persona's key, once chosen.
    pub persona: Option<String>,
    /// The first source (gone if it was deleted since).
    pub source: Option<crate::ingest::lifecycle::Overview>,
    /// The model the generation role is bound to.
    pub generation_model: Option<String>,
    /// The first index run.
    pub job: Option<jobs::Job>,
}

pub async fn overview(lore: &Lore) -> Result<Overview> {
    let progress = progress(lore).await?;
    // Gone when deleted since; anything else (a corrupt record) is an error.
    let source = match &progress.source_id {
        Some(id) => match sources::get(lore, id).await {
            Ok(found) => Some(crate::ingest::lifecycle::overview(lore, found).await?),
            Err(Error::Ingest(IngestError::SourceNotFound(_))) => None,
            Err(err) => return Err(err),
        },
        None => None,
    };
    let job = match &progress.job_id {
        Some(id) => match jobs::job(lore, id).await {
            Ok(found) => Some(found),
            Err(Error::Ingest(IngestError::JobNotFound(_))) => None,
            Err(err) => return Err(err),
        },
        None => None,
    };
    let persona = match profile::persona_chosen(lore).await? {
        true => Some(profile::chosen_persona(lore).await?.persona),
        false => None,
    };
    let generation_model = providers::resolve(lore, Role::Generation).await?.map(|g| g.target.model);
    Ok(Overview { progress, persona, source, generation_model, job })
}

/// Whether a signed-in admin's first page should be the wizard: a fresh
/// install, with no profile yet and the wizard not walked to its end.
pub async fn lands_here(lore: &Lore) -> Result<bool> {
    if progress(lore).await?.step == Step::Complete {
        return Ok(false);
    }
    Ok(profile::active(lore).await?.is_none())
}

pub async fn progress(lore: &Lore) -> Result<Progress> {
    let stored = crate::store::setting(&lore.db, PROGRESS).await?;
    Ok(stored
        .map(|value| crate::store::decode("setup wizard's progress", value))
        .transpose()?
        .unwrap_or_default())
}

async fn save(lore: &Lore, actor: &Actor, progress: &Progress) -> Result<()> {
    let value = serde_json::to_value(progress).map_err(|err| Error::Internal(err.to_string()))?;
    crate::store::put_setting(&lore.db, PROGRESS, value, &actor.label()).await?;
    audit::record(&lore.db, actor, "setup.step", None, serde_json::json!({"step": progress.step.key()}))
        .await?;
    Ok(())
}

/// Refuses an action for a step the wizard is not at.
fn expect(progress: &Progress, step: Step) -> Result<()> {
    if progress.step == step {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "the wizard is at the {} step, not the {} step",
            progress.step.key(),
            step.key()
        )))
    }
}

async fn moved_on(lore: &Lore, actor: &Actor, mut progress: Progress) -> Result<Progress> {
    progress.step = progress.step.next();
    save(lore, actor, &progress).await?;
    Ok(progress)
}

/// Step 1: the persona (with optional details) the deployment answers as.
pub async fn choose_persona(lore: &Lore, actor: &Actor, choice: PersonaChoice) -> Result<Progress> {
    let progress = progress(lore).await?;
    expect(&progress, Step::Persona)?;
    profile::choose_persona(lore, actor, choice).await?;
    moved_on(lore, actor, progress).await
}

/// Step 2: the first source. Nothing is indexed yet: that is step 5.
pub async fn add_source(lore: &Lore, actor: &Actor, new: NewSource) -> Result<Progress> {
    let mut progress = progress(lore).await?;
    expect(&progress, Step::Source)?;
    let created = sources::create(lore, actor, new).await?;
    progress.source_id = Some(created.id);
    moved_on(lore, actor, progress).await
}

/// Step 3: a provider that answers (stored, registered, probed and bound to
/// generation in one action; nothing is stored when the probe fails).
pub async fn add_provider(lore: &Lore, actor: &Actor, add: QuickAdd) -> Result<Progress> {
    let progress = progress(lore).await?;
    expect(&progress, Step::Provider)?;
    profile::quick_add(lore, actor, add).await?;
    moved_on(lore, actor, progress).await
}

/// Step 5: the first index (which creates the profile). A website or a table is synced;
/// an upload source must have received its files (each upload queued a run).
/// Indexing then goes on in the background.
pub async fn start_index(lore: &Lore, actor: &Actor) -> Result<Progress> {
    let mut progress = progress(lore).await?;
    expect(&progress, Step::Index)?;
    let source_id =
        progress.source_id.clone().ok_or_else(|| Error::InvalidInput("add the first source first".into()))?;
    let source = sources::get(lore, &source_id).await?;
    let job = if source.kind.info().first_sync == FirstSync::AtOnce {
        crate::ingest::lifecycle::start_run(lore, Some(&source_id), false, "setup").await?.id
    } else {
        jobs::recent(lore, Some(&source_id), 1)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::InvalidInput(
                    "upload at least one file to the source first: uploading starts its indexing".into(),
                )
            })?
            .id
    };
    progress.job_id = Some(job);
    moved_on(lore, actor, progress).await
}

/// Step 6: the first question, through the same pipeline as the Playground.
/// The wizard may finish once a question went through, answered or refused
/// (see [`Progress::asked`]).
pub async fn ask(lore: &Lore, actor: &Actor, question: &str) -> Result<Answer> {
    let mut progress = progress(lore).await?;
    expect(&progress, Step::Question)?;
    let answered = answer::answer(
        lore,
        Ask {
            question: question.to_owned(),
            surface: Surface::Playground,
            key_id: None,
            asker: crate::asker::Asker::Admin,
            by: answer::feedback::Asked::of_actor(actor),
        },
    )
    .await?;
    let now_answered = progress.answered || !answered.refused;
    if !progress.asked || now_answered != progress.answered {
        progress.asked = true;
        progress.answered = now_answered;
        save(lore, actor, &progress).await?;
    }
    Ok(answered)
}

/// Moves on from the current step when what it makes already exists: the
/// optional advanced step, a revisited step, and finishing after the first
/// answer. Each step says what is still missing.
pub async fn next(lore: &Lore, actor: &Actor) -> Result<Progress> {
    let progress = progress(lore).await?;
    let missing = |why: &str| Err(Error::InvalidInput(why.to_owned()));
    match progress.step {
        Step::Persona if !profile::persona_chosen(lore).await? => return missing("choose a persona first"),
        Step::Source => match &progress.source_id {
            Some(id) if sources::get(lore, id).await.is_ok() => {}
            _ => return missing("add the first source first"),
        },
        Step::Provider | Step::Advanced => match providers::resolve(lore, Role::Generation).await? {
            Some(target) if target.state == TargetState::Ready => {}
            Some(target) => {
                return missing(&format!(
                    "answering is bound to {}, which is {}: probe it or bind a ready target",
                    target.target.model,
                    target.state.key()
                ))
            }
            None => return missing("add a provider that answers first"),
        },
        Step::Index if progress.job_id.is_none() => return missing("start the first index first"),
        Step::Question if !progress.asked && !progress.answered => {
            return missing(
                "ask a question before finishing: its answer, or its refusal, shows the pipeline at work",
            )
        }
        Step::Complete => return missing("the wizard is complete"),
        _ => {}
    }
    moved_on(lore, actor, progress).await
}

/// Goes back one step (what the earlier steps made stays).
pub async fn back(lore: &Lore, actor: &Actor) -> Result<Progress> {
    let mut progress = progress(lore).await?;
    if progress.step == Step::Complete {
        return Err(Error::InvalidInput("the wizard is complete".into()));
    }
    progress.step = progress.step.previous();
    save(lore, actor, &progress).await?;
    Ok(progress)
}
