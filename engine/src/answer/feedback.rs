//! Ratings of answers, and the review queue they feed.
//!
//! Whoever asked a question may rate its answer (or its refusal) helpful or
//! unhelpful, with an optional comment, by the answer's trace id: the
//! Playground's admin, the key behind `POST /answer` or the widget, the user
//! of an MCP session, `lore ask`. Who asked is recorded with the run
//! ([`Asked`]), and a rating from anyone else is refused. One rating per
//! answer: a second replaces the first, and the rollups move by the
//! difference, under the run's hour and day, surface, key and profile
//! version ([`crate::metrics::Contribution::rate`]), in the rating's
//! transaction.
//!
//! The unhelpful answers are the review queue ([`queue`]): newest first,
//! grouped as content gaps are ([`super::gaps`]); an admin pins a corrected
//! answer, adds a golden question, or dismisses the item ([`review`]), and
//! the item records what was done.

use chrono::{DateTime, Utc};
use entity::{answer_rating, answer_run};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
    TransactionTrait,
};
use serde::{Deserialize, Serialize};

use super::{Answer, Citation};
use crate::audit::Actor;
use crate::metrics::{Contribution, RatedRun};
use crate::profile::ProfileError;
use crate::{Error, Lore, Result};

/// The longest comment a rating keeps, in characters.
pub const MAX_COMMENT_CHARS: usize = 1_000;
/// The most unhelpful answers the review queue reads.
pub const QUEUE_LENGTH: u64 = 200;
/// A trace id is a UUID; anything much longer names no answer.
const MAX_TRACE_ID_CHARS: usize = 64;

/// Who asked a question: a rating of its answer must come from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Asked {
    /// An access key: `POST /answer`, the widget, an MCP session with a key.
    Key(String),
    /// A user without a key: an MCP session signed in over OAuth, the
    /// operations API.
    User(String),
    /// A signed-in admin, by account id: the Playground, the wizard.
    Admin(String),
    /// `lore ask` at the terminal (and eval runs, which are not recorded).
    Terminal,
}

impl Asked {
    /// As `answer_run.asked_by` stores it.
    pub fn stored(&self) -> String {
        match self {
            Asked::Key(id) => format!("key:{id}"),
            Asked::User(name) => format!("user:{name}"),
            Asked::Admin(account) => format!("admin:{account}"),
            Asked::Terminal => "cli".to_owned(),
        }
    }

    /// The asker of a question asked with the access key `key_id`, or by
    /// `principal` when none (an MCP session signed in over OAuth, the
    /// operations API).
    pub fn of_caller(key_id: Option<&str>, principal: Option<&crate::appdb::users::Principal>) -> Asked {
        use crate::appdb::users::Principal;
        match (key_id, principal) {
            (Some(key), _) => Asked::Key(key.to_owned()),
            (None, Some(Principal::User(user))) => Asked::User(user.username.clone()),
            (None, Some(Principal::Admin { account_id })) => Asked::Admin(account_id.clone()),
            (None, None) => Asked::Terminal,
        }
    }

    /// The admin an audit actor names (the Playground and the wizard act as
    /// one); anything else asks as the terminal does.
    pub fn of_actor(actor: &Actor) -> Asked {
        match actor {
            Actor::Account(id) => Asked::Admin(id.clone()),
            Actor::User(name) => Asked::User(name.clone()),
            Actor::System => Asked::Terminal,
        }
    }
}

/// What a run served, kept with it for the review queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The question as asked (whitespace collapsed).
    pub question: String,
    pub answer: String,
    pub refused: bool,
    pub citations: Vec<Citation>,
}

impl Reply {
    pub fn of(question: &str, answer: &Answer) -> Reply {
        Reply {
            question: question.split_whitespace().collect::<Vec<_>>().join(" "),
            answer: answer.answer.clone(),
            refused: answer.refused,
            citations: answer.citations.clone(),
        }
    }
}

/// A rating as its asker gives it.
#[derive(Clone, Debug)]
pub struct Rating {
    pub trace_id: String,
    pub helpful: bool,
    pub comment: Option<String>,
}

/// A rating as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Rated {
    pub trace_id: String,
    pub helpful: bool,
    pub comment: Option<String>,
    pub rated_at: DateTime<Utc>,
    /// Whether it replaced an earlier rating of the same answer.
    pub replaced: bool,
}

/// The comment as kept: whitespace at either end off, none when empty;
/// refused when longer than [`MAX_COMMENT_CHARS`], or when it holds a
/// control character other than a line break or a tab (NUL cannot be
/// stored, the rest only disturbs what the review queue shows) or a
/// bidirectional override (it would make the queue show other text than
/// was written).
pub fn comment(given: Option<&str>) -> Result<Option<String>> {
    let Some(text) = given.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > MAX_COMMENT_CHARS {
        return Err(Error::InvalidInput(format!(
            "the comment is longer than {MAX_COMMENT_CHARS} characters"
        )));
    }
    let unshown = |c: char| {
        (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if let Some(c) = text.chars().find(|c| unshown(*c)) {
        return Err(Error::InvalidInput(format!(
            "the comment holds the control character U+{:04X}: write it as plain text",
            u32::from(c)
        )));
    }
    Ok(Some(text.to_owned()))
}

/// The recorded run `trace_id`, if it can be rated by `by`: recorded with
/// who asked and what it served (else `UnknownAnswer`), asked by `by` (else
/// `NotYourAnswer`). With `locked`, the run's row is locked until the
/// transaction `db` ends (PostgreSQL; SQLite's write lock is already held):
/// two ratings of one answer at once then take turns, so each sees the
/// rating it replaces.
async fn ratable(
    db: &impl ConnectionTrait,
    trace_id: &str,
    by: &Asked,
    locked: bool,
) -> Result<answer_run::Model> {
    let unknown = || Error::from(ProfileError::UnknownAnswer(trace_id.to_owned()));
    if trace_id.is_empty() || trace_id.chars().count() > MAX_TRACE_ID_CHARS {
        return Err(unknown());
    }
    let mut find = answer_run::Entity::find_by_id(trace_id.to_owned());
    if locked && db.get_database_backend() == sea_orm::DbBackend::Postgres {
        find = find.lock_exclusive();
    }
    match find.one(db).await? {
        Some(run) if run.reply.is_some() => match run.asked_by.as_deref() {
            Some(asked) if asked == by.stored() => Ok(run),
            Some(_) => Err(ProfileError::NotYourAnswer.into()),
            None => Err(unknown()),
        },
        _ => Err(unknown()),
    }
}

/// Rates the answer `rating.trace_id` as `by`: stored, or replacing the
/// rating `by` gave it before, with the rollups moved in the same
/// transaction. Refused, changing nothing, when the trace id names no
/// recorded answer (`UnknownAnswer`), when someone else asked it
/// (`NotYourAnswer`), or when the comment is not plain text of at most
/// [`MAX_COMMENT_CHARS`].
pub async fn rate(lore: &Lore, by: &Asked, rating: Rating) -> Result<Rated> {
    let comment = comment(rating.comment.as_deref())?;
    let trace_id = rating.trace_id.trim().to_owned();
    // Checked before anything is locked. A run not found may still be queued
    // in this process's recorder: written, then looked for once more.
    match ratable(&lore.db, &trace_id, by, false).await {
        Err(Error::Profile(ProfileError::UnknownAnswer(_))) => {
            lore.recorder().flush().await?;
            ratable(&lore.db, &trace_id, by, false).await?;
        }
        checked => {
            checked?;
        }
    }
    // Shares the rollups' lock with the recorder: a rebuild waits for it,
    // and a rating waits at most a few seconds for a rebuild, so ratings
    // never hold the connection pool through one.
    let txn = crate::store::begin_sharing(&lore.db, crate::store::Lock::Rollups).await?;
    let run = ratable(&txn, &trace_id, by, true).await?;
    let before = answer_rating::Entity::find_by_id(trace_id.clone()).one(&txn).await?;
    let rated_at = Utc::now();
    let counted = RatedRun {
        asked_at: run.created_at,
        surface: run.surface.clone(),
        key_id: run.key_id.clone(),
        profile_version: run.profile_version,
    };
    let mut contribution = Contribution::default();
    let (mut helpful, mut unhelpful) = if rating.helpful { (1, 0) } else { (0, 1) };
    match &before {
        Some(before) => {
            if before.helpful {
                helpful -= 1;
            } else {
                unhelpful -= 1;
            }
            let mut row: answer_rating::ActiveModel = before.clone().into();
            row.helpful = Set(rating.helpful);
            row.comment = Set(comment.clone());
            row.rated_at = Set(rated_at);
            // A new complaint about an answer already dealt with is open
            // again: a thumbs-down after a thumbs-up, or a new comment.
            let new_comment = comment.is_some() && comment != before.comment;
            if !rating.helpful && (before.helpful || new_comment) {
                row.review = Set(None);
                row.review_ref = Set(None);
                row.reviewed_at = Set(None);
                row.reviewed_by = Set(None);
            }
            row.update(&txn).await?;
        }
        None => {
            answer_rating::ActiveModel {
                run_id: Set(trace_id.clone()),
                helpful: Set(rating.helpful),
                comment: Set(comment.clone()),
                rated_at: Set(rated_at),
                asked_at: Set(counted.asked_at),
                surface: Set(counted.surface.clone()),
                key_id: Set(counted.key_id.clone()),
                profile_version: Set(counted.profile_version),
                review: Set(None),
                review_ref: Set(None),
                reviewed_at: Set(None),
                reviewed_by: Set(None),
            }
            .insert(&txn)
            .await?;
        }
    }
    if helpful != 0 || unhelpful != 0 {
        contribution.rate(&counted, helpful, unhelpful);
        contribution.add_to(&txn).await?;
    }
    txn.commit().await?;
    Ok(Rated { trace_id, helpful: rating.helpful, comment, rated_at, replaced: before.is_some() })
}

/// What an admin did about a rated answer (stored as its [`Done::key`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// Pinned a corrected answer.
    Pinned,
    /// Added it as a golden question.
    Golden,
    Dismissed,
}

impl Done {
    pub fn key(&self) -> &'static str {
        match self {
            Done::Pinned => "pinned",
            Done::Golden => "golden",
            Done::Dismissed => "dismissed",
        }
    }

    fn parse(stored: &str) -> Option<Done> {
        [Done::Pinned, Done::Golden, Done::Dismissed].into_iter().find(|done| done.key() == stored)
    }
}

/// What was done about an item, by whom and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Reviewed {
    pub done: Done,
    /// The pin's or the golden question's id.
    pub made: Option<String>,
    pub by: String,
    pub at: DateTime<Utc>,
}

/// One unhelpful answer in the review queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub trace_id: String,
    pub reply: Reply,
    pub comment: Option<String>,
    pub rated_at: DateTime<Utc>,
    pub asked_at: DateTime<Utc>,
    pub surface: String,
    pub profile_version: i32,
    /// Whom it answered, as far as reading goes (`admin`, `everyone`,
    /// `role:NAME`): a golden question made of it is asked as them.
    pub audience: Option<String>,
    pub reviewed: Option<Reviewed>,
}

/// Unhelpful answers to questions that mean the same thing.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The group's most often rated question.
    pub label: String,
    /// Newest first.
    pub items: Vec<Item>,
}

/// The review queue: the [`QUEUE_LENGTH`] most recently rated unhelpful
/// answers, grouped by meaning (the grouping of content gaps), the group
/// with the newest item first; with `open_only`, the items no admin has
/// dealt with yet.
pub async fn queue(lore: &Lore, open_only: bool) -> Result<Vec<Group>> {
    let mut ratings = answer_rating::Entity::find()
        .filter(answer_rating::Column::Helpful.eq(false))
        .order_by_desc(answer_rating::Column::RatedAt)
        .order_by_asc(answer_rating::Column::RunId)
        .limit(QUEUE_LENGTH);
    if open_only {
        ratings = ratings.filter(answer_rating::Column::Review.is_null());
    }
    let ratings = ratings.all(&lore.db).await?;
    let ids: Vec<String> = ratings.iter().map(|r| r.run_id.clone()).collect();
    let mut replies: std::collections::HashMap<String, (Reply, Option<String>)> =
        std::collections::HashMap::new();
    for batch in ids.chunks(100) {
        let runs = answer_run::Entity::find()
            .filter(answer_run::Column::Id.is_in(batch.iter().cloned()))
            .all(&lore.db)
            .await?;
        for run in runs {
            if let Some(reply) = run.reply {
                let reply: Reply = crate::store::decode(&format!("reply of answer run {}", run.id), reply)?;
                replies.insert(run.id, (reply, run.audience));
            }
        }
    }
    let mut items = Vec::new();
    for rating in ratings {
        let Some((reply, audience)) = replies.remove(&rating.run_id) else { continue };
        let reviewed = match (rating.review.as_deref().and_then(Done::parse), rating.reviewed_at) {
            (Some(done), Some(at)) => Some(Reviewed {
                done,
                made: rating.review_ref.clone(),
                by: rating.reviewed_by.clone().unwrap_or_default(),
                at,
            }),
            _ => None,
        };
        items.push(Item {
            trace_id: rating.run_id,
            reply,
            comment: rating.comment,
            rated_at: rating.rated_at,
            asked_at: rating.asked_at,
            surface: rating.surface,
            profile_version: rating.profile_version,
            audience,
            reviewed,
        });
    }
    Ok(group(lore, items).await)
}

/// Groups `items` (newest first) by their questions' meaning.
async fn group(lore: &Lore, items: Vec<Item>) -> Vec<Group> {
    // The questions, most often rated first, as the gap grouping takes them.
    let mut counts: Vec<crate::metrics::QueryCount> = Vec::new();
    for item in &items {
        match counts.iter_mut().find(|c| c.query == item.reply.question) {
            Some(counted) => counted.count += 1,
            None => counts.push(crate::metrics::QueryCount { query: item.reply.question.clone(), count: 1 }),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.count));
    let grouped = super::gaps::group(lore, &counts).await;
    let mut groups: Vec<Group> =
        grouped.iter().map(|g| Group { label: g.label.clone(), items: Vec::new() }).collect();
    for item in items {
        let at = grouped
            .iter()
            .position(|g| g.questions.iter().any(|q| q.query == item.reply.question))
            .unwrap_or(0);
        match groups.get_mut(at) {
            Some(group) => group.items.push(item),
            None => groups.push(Group { label: item.reply.question.clone(), items: vec![item] }),
        }
    }
    groups.retain(|g| !g.items.is_empty());
    groups.sort_by_key(|g| std::cmp::Reverse(g.items.first().map(|i| i.rated_at)));
    groups
}

/// What an admin does about a rated answer.
#[derive(Clone, Debug)]
pub enum Action {
    /// Pins a corrected answer to its question (the pin editor's fields).
    Pin(super::pins::NewPin),
    /// Adds its question as a golden question (an expected fact, or "should
    /// refuse").
    Golden(crate::evals::NewGolden),
    Dismiss,
}

/// Does `action` about the answer `trace_id` rated unhelpful and records it
/// on the item (the latest action wins). Refused (changing nothing) when no
/// unhelpful rating of that answer exists, or when the pin or golden
/// question is refused. The pin or golden question is stored first, in its
/// own transaction: should recording it on the item then fail, it stays,
/// and the item stays open.
pub async fn review(lore: &Lore, actor: &Actor, trace_id: &str, action: Action) -> Result<Reviewed> {
    let unknown = || Error::from(ProfileError::UnknownAnswer(trace_id.to_owned()));
    let rating = answer_rating::Entity::find_by_id(trace_id.to_owned())
        .one(&lore.db)
        .await?
        .filter(|rating| !rating.helpful)
        .ok_or_else(unknown)?;
    let (done, made) = match action {
        Action::Pin(new) => (Done::Pinned, Some(super::pins::pin(lore, actor, new).await?.id)),
        Action::Golden(new) => (Done::Golden, Some(crate::evals::add(lore, actor, new).await?.id)),
        Action::Dismiss => (Done::Dismissed, None),
    };
    let at = Utc::now();
    let by = actor.label();
    let txn = lore.db.begin().await?;
    // Only the rating that was reviewed: one given meanwhile (a new
    // complaint) stays open for the admin to see.
    use answer_rating::Column as R;
    let recorded = answer_rating::Entity::update_many()
        .col_expr(R::Review, Expr::value(done.key()))
        .col_expr(R::ReviewRef, Expr::value(made.clone()))
        .col_expr(R::ReviewedAt, Expr::value(at))
        .col_expr(R::ReviewedBy, Expr::value(by.clone()))
        .filter(R::RunId.eq(trace_id))
        .filter(R::Helpful.eq(false))
        .filter(R::RatedAt.eq(rating.rated_at))
        .exec(&txn)
        .await?;
    if recorded.rows_affected == 0 {
        return Err(Error::InvalidInput(
            "the answer was rated again while it was reviewed: reload the queue and look at it again".into(),
        ));
    }
    crate::audit::record(
        &txn,
        actor,
        "answer.reviewed",
        Some(trace_id),
        serde_json::json!({ "done": done.key(), "made": made }),
    )
    .await?;
    txn.commit().await?;
    Ok(Reviewed { done, made, by, at })
}
