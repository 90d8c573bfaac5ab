//! Ratings of answers and the review queue: `POST /answer/feedback` (and
//! the Playground's `POST /admin/playground/feedback`), `GET /admin/feedback`
//! and `POST /admin/feedback/{trace_id}/review`. The public request and
//! response are in the published document (`GET /openapi.json`), so their
//! doc comments are the schemas' descriptions.

use serde::{Deserialize, Serialize};

use super::{CitationView, GoldenRequest, PinRequest};

/// The longest comment, in characters: the engine's
/// (`engine::answer::feedback::MAX_COMMENT_CHARS`, which a test in
/// `server::http::openapi` holds this to), for the browser's own limit.
pub const MAX_COMMENT_CHARS: usize = 1000;

/// A helpful rate as the console shows it ("75%"); none without ratings.
pub fn helpful_percent(helpful: i64, unhelpful: i64) -> Option<String> {
    let rated = helpful + unhelpful;
    (rated > 0).then(|| format!("{:.0}%", helpful as f64 * 100.0 / rated as f64))
}

/// A rating of one answer (or refusal) by whoever asked it. A second
/// rating of the same answer replaces the first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    /// The answer's `trace.id`.
    #[cfg_attr(feature = "ssr", schemars(length(min = 1, max = 64)))]
    pub trace_id: String,
    /// Whether the answer helped.
    pub helpful: bool,
    /// What was wrong or missing: plain text, whitespace at either end
    /// removed, at most 1000 characters (Unicode scalar values), or the
    /// rating is 422 `invalid_input`. Stored as text, never shown as markup.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schemars(length(max = crate::wire::MAX_COMMENT_CHARS)))]
    pub comment: Option<String>,
}

/// A rating as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct FeedbackResponse {
    pub trace_id: String,
    pub helpful: bool,
    pub comment: Option<String>,
    /// RFC 3339, UTC.
    pub rated_at: String,
    /// True when it replaced an earlier rating of the same answer.
    pub replaced: bool,
}

/// Where to rate an answer: `POST` a `FeedbackRequest` with this trace id
/// to `href` (or call the tool server's `tool`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct FeedbackLink {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub trace_id: String,
}

/// What an admin did about a rated answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewedView {
    /// `pinned`, `golden` or `dismissed`.
    pub done: String,
    /// The pin's or the golden question's id.
    pub made: Option<String>,
    pub by: String,
    pub at: String,
}

/// One unhelpful answer in the review queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewItemView {
    pub trace_id: String,
    pub question: String,
    pub answer: String,
    pub refused: bool,
    pub citations: Vec<CitationView>,
    pub comment: Option<String>,
    pub rated_at: String,
    pub asked_at: String,
    pub surface: String,
    pub profile_version: i32,
    /// Whom it answered, as far as reading goes: `admin`, `everyone` or
    /// `role:NAME` (a golden question made of it is asked as them).
    pub audience: Option<String>,
    pub reviewed: Option<ReviewedView>,
}

/// Unhelpful answers to questions that mean the same thing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewGroupView {
    pub label: String,
    /// Newest first.
    pub items: Vec<ReviewItemView>,
}

/// `GET /admin/feedback`: the review queue, the group with the newest item
/// first (`?open=true`: only the items nobody dealt with yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewQueueView {
    pub groups: Vec<ReviewGroupView>,
}

/// `POST /admin/feedback/{trace_id}/review`: what to do about a rated
/// answer: pin a corrected answer (the pin editor's fields), add a golden
/// question (the golden-question form's), or dismiss it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReviewRequest {
    Pin(PinRequest),
    Golden(GoldenRequest),
    Dismiss,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use crate::wire::time;
    use engine::answer::feedback::{Group, Item, Rated, Reviewed};

    impl From<Rated> for FeedbackResponse {
        fn from(r: Rated) -> Self {
            Self {
                trace_id: r.trace_id,
                helpful: r.helpful,
                comment: r.comment,
                rated_at: time(r.rated_at),
                replaced: r.replaced,
            }
        }
    }

    impl From<Reviewed> for ReviewedView {
        fn from(r: Reviewed) -> Self {
            Self { done: r.done.key().to_owned(), made: r.made, by: r.by, at: time(r.at) }
        }
    }

    impl From<Item> for ReviewItemView {
        fn from(i: Item) -> Self {
            Self {
                trace_id: i.trace_id,
                question: i.reply.question,
                answer: i.reply.answer,
                refused: i.reply.refused,
                citations: i.reply.citations.into_iter().map(CitationView::from).collect(),
                comment: i.comment,
                rated_at: time(i.rated_at),
                asked_at: time(i.asked_at),
                surface: i.surface,
                profile_version: i.profile_version,
                audience: i.audience,
                reviewed: i.reviewed.map(ReviewedView::from),
            }
        }
    }

    impl From<Vec<Group>> for ReviewQueueView {
        fn from(groups: Vec<Group>) -> Self {
            Self {
                groups: groups
                    .into_iter()
                    .map(|g| ReviewGroupView {
                        label: g.label,
                        items: g.items.into_iter().map(ReviewItemView::from).collect(),
                    })
                    .collect(),
            }
        }
    }

    impl TryFrom<ReviewRequest> for engine::answer::feedback::Action {
        type Error = engine::Error;

        fn try_from(r: ReviewRequest) -> Result<Self, engine::Error> {
            use engine::answer::feedback::Action;
            Ok(match r {
                ReviewRequest::Pin(pin) => Action::Pin(pin.into()),
                ReviewRequest::Golden(mut golden) => {
                    golden.origin.get_or_insert_with(|| "dashboard".to_owned());
                    Action::Golden(golden.try_into()?)
                }
                ReviewRequest::Dismiss => Action::Dismiss,
            })
        }
    }
}
