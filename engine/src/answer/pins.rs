//! Pinned answers: an admin's curated answer to one question, served before
//! both caches, for that question and for paraphrases of it at or above the
//! active version's semantic-cache gate.
//!
//! - A pin keeps each citation with the content hash of its chunk when it
//!   was pinned. When a cited chunk changes or leaves the index, the pin is
//!   flagged for review (on the next lookup or listing) and stops serving;
//!   the question goes through the pipeline again until the admin re-pins
//!   or removes it. A pin citing a disabled source is set aside (`SourceDisabled`), not flagged.
//! - One pin per normalised question: pinning again replaces it (and clears
//!   a flag).
//! - The pins are kept in memory, read from the database on first use and
//!   again after each change made through this process. The vectors of
//!   pinned questions are kept per embedder ([`crate::embed::kept`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use entity::pinned_answer;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};

use super::{normalise, Citation, Normalised};
use crate::audit::{self, Actor};
use crate::embed::cosine;
use crate::profile::ProfileError;
use crate::sources::{Audience, Reader};
use crate::{Error, Lore, Result};

/// The most pins kept.
pub const MAX_PINS: u64 = 1_000;
/// The longest pinned answer, in characters.
pub const MAX_ANSWER_CHARS: usize = 8_000;
/// The most citations one pin carries.
pub const MAX_CITATIONS: usize = 20;

/// A citation as pinned: what is served, and the hash its chunk had.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedCitation {
    #[serde(flatten)]
    pub citation: Citation,
    pub content_hash: String,
    /// The cited chunk's scope id when it is a view of a table source
    /// ([`crate::index::scope_id`]): only that view's readers are served the pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

impl PinnedCitation {
    /// The scope id of the cited chunk.
    fn scope_id(&self) -> String {
        crate::index::scope_id(&self.citation.source_id, self.view.as_deref())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub id: String,
    /// As the admin pinned it.
    pub question: String,
    /// Normalised: what an exact lookup matches.
    pub key: String,
    pub answer: String,
    pub citations: Vec<PinnedCitation>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// When and why it was flagged for review; a flagged pin does not serve.
    pub flagged: Option<(DateTime<Utc>, String)>,
    /// Who it is served to (and who may read every source it cites).
    pub audience: Audience,
}

impl TryFrom<pinned_answer::Model> for Pin {
    type Error = Error;

    fn try_from(row: pinned_answer::Model) -> Result<Self> {
        let citations = serde_json::from_value(row.citations)
            .map_err(|err| Error::Internal(format!("the pinned answer {} is unreadable: {err}", row.id)))?;
        let audience = match row.audience {
            Some(stored) => serde_json::from_value(stored).map_err(|err| {
                Error::Internal(format!("the audience of pinned answer {} is unreadable: {err}", row.id))
            })?,
            None => Audience::Everyone,
        };
        Ok(Pin {
            id: row.id,
            question: row.question,
            key: row.question_key,
            answer: row.answer,
            citations,
            created_by: row.created_by,
            created_at: row.created_at,
            flagged: row.flagged_at.map(|at| (at, row.flag_reason.unwrap_or_default())),
            audience,
        })
    }
}

/// What an admin pins.
#[derive(Clone, Debug)]
pub struct NewPin {
    pub question: String,
    pub answer: String,
    /// The citations to serve with it (those of the answer being pinned);
    /// each chunk must be in the index now.
    pub citations: Vec<Citation>,
    /// Who it is served to: `everyone` (the default) or role names
    /// separated by commas.
    pub audience: Option<String>,
}

/// The pins of this process.
#[derive(Default)]
pub struct Pins(Mutex<Kept>);

#[derive(Default)]
struct Kept {
    pins: Option<Arc<Vec<Pin>>>,
    /// Bumped by every change: a list read before a change is not kept.
    generation: u64,
}

impl Pins {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops what is kept: the next lookup reads the pins again.
    pub(crate) fn forget(&self) {
        let mut kept = self.kept();
        kept.pins = None;
        kept.generation += 1;
    }
}

async fn loaded(lore: &Lore) -> Result<Arc<Vec<Pin>>> {
    let generation = {
        let kept = lore.pins().kept();
        if let Some(pins) = kept.pins.clone() {
            return Ok(pins);
        }
        kept.generation
    };
    let rows =
        pinned_answer::Entity::find().order_by_asc(pinned_answer::Column::CreatedAt).all(&lore.db).await?;
    let pins: Vec<Pin> = rows
        .into_iter()
        .filter_map(|row| {
            Pin::try_from(row)
                .inspect_err(|err| tracing::warn!(error = %err, "a pinned answer cannot be read"))
                .ok()
        })
        .collect();
    let pins = Arc::new(pins);
    let mut kept = lore.pins().kept();
    // A change committed while this read ran: the next lookup reads again.
    if kept.generation == generation {
        kept.pins = Some(pins.clone());
    }
    Ok(pins)
}

/// What [`lookup`] found for a question.
pub enum Lookup {
    None,
    /// A pin matched, but a cited passage changed: it is flagged for review.
    Flagged {
        question: String,
        why: String,
    },
    /// A pin matched, but cites a source that is disabled now.
    SourceDisabled {
        question: String,
        why: String,
    },
    Serve {
        pin: Pin,
        similarity: f32,
    },
}

/// The pin that answers `question`: the one pinned to it, or else the one
/// whose question is most similar at or above `gate`. `vector` is the
/// question's embedding when the caller already has it; it is filled in
/// when a paraphrase lookup embeds the question (an embedding failure is
/// left there for the pipeline to report, and no paraphrase matches).
pub async fn lookup(
    lore: &Lore,
    question: &Normalised,
    vector: &mut Option<Result<Vec<f32>>>,
    gate: f32,
    enabled: &[String],
    reader: &Reader,
    readable: &[String],
) -> Result<Lookup> {
    let pins = loaded(lore).await?;
    // A pin outside the caller's audience, or citing a source the caller
    // may not read, is not one of its candidates at all: nothing about it
    // reaches the trace.
    let live: Vec<&Pin> = pins
        .iter()
        .filter(|pin| pin.flagged.is_none() && reader.admits(&pin.audience))
        .filter(|pin| pin.citations.iter().all(|c| readable.contains(&c.scope_id())))
        .collect();
    if live.is_empty() {
        return Ok(Lookup::None);
    }
    let found = match live.iter().find(|pin| pin.key == question.key) {
        Some(pin) => Some(((*pin).clone(), 1.0)),
        None => {
            let embedded = match vector.take() {
                Some(embedded) => embedded,
                None => {
                    async { lore.embedder().await?.embed_query(&question.text).await.map_err(Error::from) }
                        .await
                }
            };
            let nearest = match &embedded {
                Ok(asked) => nearest(lore, &live, asked).await.filter(|(_, similarity)| *similarity >= gate),
                Err(_) => None,
            };
            *vector = Some(embedded);
            nearest
        }
    };
    let Some((pin, similarity)) = found else {
        return Ok(Lookup::None);
    };
    Ok(match check(lore, &pin, Some(enabled)).await? {
        Check::Current => Lookup::Serve { pin, similarity },
        Check::Changed(why) => {
            flag(lore, &pin.id, &why).await?;
            Lookup::Flagged { question: pin.question, why }
        }
        Check::Disabled(why) => Lookup::SourceDisabled { question: pin.question, why },
    })
}

/// The live pin most similar to `asked`; `None` when the pinned questions
/// cannot be embedded (logged: only exact matches serve then).
async fn nearest(lore: &Lore, live: &[&Pin], asked: &[f32]) -> Option<(Pin, f32)> {
    let embedder = lore.embedder().await.ok()?;
    let questions: Vec<String> = live.iter().map(|pin| pin.question.clone()).collect();
    let vectors = lore
        .answering()
        .pin_vectors
        .vectors(&embedder, &questions, true)
        .await
        .inspect_err(|err| tracing::warn!(error = %err, "the pinned questions could not be embedded"))
        .ok()?;
    live.iter()
        .zip(vectors)
        .map(|(pin, vector)| (*pin, cosine(asked, &vector)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(pin, similarity)| (pin.clone(), similarity))
}

enum Check {
    Current,
    Changed(String),
    Disabled(String),
}

/// Whether every chunk `pin` cites is still in the index as it was pinned
/// and, when `enabled` is given, in one of those sources.
async fn check(lore: &Lore, pin: &Pin, enabled: Option<&[String]>) -> Result<Check> {
    if pin.citations.is_empty() {
        return Ok(Check::Current);
    }
    let ids: Vec<String> = pin.citations.iter().map(|c| c.citation.chunk_id.clone()).collect();
    let stored = lore.chunks().await?.content_hashes(&ids).await?;
    for cited in &pin.citations {
        let title = &cited.citation.title;
        match stored.get(&cited.citation.chunk_id) {
            None => {
                return Ok(Check::Changed(format!(
                    "the cited passage of “{title}” is no longer in the index"
                )))
            }
            Some((_, hash)) if *hash != cited.content_hash => {
                return Ok(Check::Changed(format!("the cited passage of “{title}” changed")))
            }
            Some((source, _)) if enabled.is_some_and(|enabled| !enabled.contains(source)) => {
                return Ok(Check::Disabled(format!("the source of “{title}” is disabled")))
            }
            Some(_) => {}
        }
    }
    Ok(Check::Current)
}

async fn flag(lore: &Lore, id: &str, why: &str) -> Result<()> {
    pinned_answer::Entity::update_many()
        .col_expr(pinned_answer::Column::FlaggedAt, Expr::value(Utc::now()))
        .col_expr(pinned_answer::Column::FlagReason, Expr::value(why.to_owned()))
        .filter(pinned_answer::Column::Id.eq(id))
        .filter(pinned_answer::Column::FlaggedAt.is_null())
        .exec(&lore.db)
        .await?;
    tracing::info!(pin = id, why, "a pinned answer is flagged for review");
    lore.announce(crate::cluster::Change::Pins).await;
    Ok(())
}

/// Pins `new` to its question, replacing (and unflagging) any pin the
/// question had.
pub async fn pin(lore: &Lore, actor: &Actor, new: NewPin) -> Result<Pin> {
    let question = normalise(&new.question)?;
    let answer = new.answer.trim();
    if answer.is_empty() {
        return Err(Error::InvalidInput("the pinned answer is empty".into()));
    }
    if answer.chars().count() > MAX_ANSWER_CHARS {
        return Err(Error::InvalidInput(format!(
            "the pinned answer is longer than {MAX_ANSWER_CHARS} characters"
        )));
    }
    let audience = new.audience.as_deref().map(Audience::parse).transpose()?.unwrap_or(Audience::Everyone);
    // `table` names no table here: a pin is for everyone or for roles.
    crate::sources::audience::check(lore, &audience, false).await?;
    if new.citations.len() > MAX_CITATIONS {
        return Err(Error::InvalidInput(format!(
            "a pinned answer carries at most {MAX_CITATIONS} citations"
        )));
    }
    // The hash and source of each cited chunk are the index's, not the caller's.
    let ids: Vec<String> = new.citations.iter().map(|c| c.chunk_id.clone()).collect();
    let stored =
        if ids.is_empty() { HashMap::new() } else { lore.chunks().await?.content_hashes(&ids).await? };
    let mut citations: Vec<PinnedCitation> = Vec::with_capacity(new.citations.len());
    for citation in new.citations {
        // The index is the `[n]` the answer's text cites it by.
        if citations.iter().any(|c| c.citation.index == citation.index) {
            return Err(Error::InvalidInput(format!("two citations have the index [{}]", citation.index)));
        }
        let Some((scope, hash)) = stored.get(&citation.chunk_id) else {
            return Err(Error::InvalidInput(format!(
                "the cited passage `{}` is not in the index (re-ask the question and pin the new answer)",
                citation.chunk_id
            )));
        };
        let (source, view) = crate::index::split_scope_id(scope);
        citations.push(PinnedCitation {
            citation: Citation { source_id: source.to_owned(), ..citation },
            content_hash: hash.clone(),
            view: view.map(str::to_owned),
        });
    }
    let stored_citations = serde_json::to_value(&citations)
        .map_err(|err| Error::Internal(format!("serialising citations: {err}")))?;
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    let replaced = pinned_answer::Entity::delete_many()
        .filter(pinned_answer::Column::QuestionKey.eq(&question.key))
        .exec(&txn)
        .await?
        .rows_affected;
    if replaced == 0 && pinned_answer::Entity::find().count(&txn).await? >= MAX_PINS {
        return Err(Error::InvalidInput(format!(
            "there are {MAX_PINS} pinned answers already; remove one first"
        )));
    }
    let row = pinned_answer::ActiveModel {
        id: Set(id.clone()),
        question: Set(question.text.clone()),
        question_key: Set(question.key.clone()),
        answer: Set(answer.to_owned()),
        citations: Set(stored_citations),
        created_by: Set(actor.label()),
        created_at: Set(Utc::now()),
        flagged_at: Set(None),
        flag_reason: Set(None),
        audience: Set(Some(serde_json::to_value(&audience).map_err(|err| Error::Internal(err.to_string()))?)),
    }
    .insert(&txn)
    .await?;
    audit::record(
        &txn,
        actor,
        "pin.created",
        Some(&id),
        serde_json::json!({
            "question": question.text,
            "replaced": replaced > 0,
            "citations": citations.len(),
            "audience": audience.to_string(),
        }),
    )
    .await?;
    txn.commit().await?;
    lore.announce(crate::cluster::Change::Pins).await;
    Pin::try_from(row)
}

/// Every pin, oldest first, each checked against the index now: a pin whose
/// cited passage changed since is flagged before it is listed.
pub async fn list(lore: &Lore) -> Result<Vec<Pin>> {
    let pins = loaded(lore).await?;
    let mut flagged_any = false;
    for pin in pins.iter().filter(|pin| pin.flagged.is_none()) {
        // Only a change flags a pin: a disabled source does not.
        if let Check::Changed(why) = check(lore, pin, None).await? {
            flag(lore, &pin.id, &why).await?;
            flagged_any = true;
        }
    }
    if flagged_any {
        return Ok(loaded(lore).await?.as_ref().clone());
    }
    Ok(pins.as_ref().clone())
}

/// Removes a pin: its question goes through the pipeline again.
pub async fn unpin(lore: &Lore, actor: &Actor, id: &str) -> Result<()> {
    let txn = crate::store::begin_write(&lore.db).await?;
    let removed = pinned_answer::Entity::delete_by_id(id.to_owned()).exec(&txn).await?.rows_affected;
    if removed == 0 {
        return Err(ProfileError::UnknownPin(id.to_owned()).into());
    }
    audit::record(&txn, actor, "pin.removed", Some(id), serde_json::json!({})).await?;
    txn.commit().await?;
    lore.announce(crate::cluster::Change::Pins).await;
    Ok(())
}
