//! `POST /answer` (x-api-key, scope `answer`) and the Playground's
//! `POST /admin/playground/answer` (admin session): both call the one engine
//! pipeline, `engine::answer::answer`, and return the same object.
//!
//! With `Accept: text/event-stream` (or `"stream": true`) the answer comes as
//! server-sent events: a `stage` event as each stage of the run ends (the
//! same objects as the trace's stages), then `token` events carrying the
//! answer's text piece by piece, then one `answer` event with the final
//! object. Tokens are sent only for an answer that passed the grounding
//! check: Lore never streams words it would then retract, so a refusal
//! streams its refusal text. The stage events are what a client shows
//! while it waits (searching, writing, checking).
//!
//! The reply starts once the readiness gate has passed: until then a failure
//! (bad input, not answerable) is the request's HTTP status, as without
//! streaming. A failure after it (the model provider fails) ends the stream
//! with an `error` event in the one error shape.

use std::convert::Infallible;

use app::routes;
use app::wire::{
    AnswerRequest, AnswerResponse, AnswerToken, ErrorBody, ErrorDetail, FeedbackRequest, FeedbackResponse,
    PlaygroundAnswerRequest, ProfileRetrievalView, RetrievalRequest, ReviewQueueView, ReviewRequest,
    ReviewedView, StageView,
};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engine::answer::feedback::{self, Asked, Rating};
use engine::answer::{self, Ask, Surface};
use engine::asker::Asker;
use engine::keys::Caller;
use engine::Lore;
use futures::StreamExt;
use tokio::sync::{mpsc, watch};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use super::public::EstimatedCost;
use crate::AppState;

/// Whether to answer with server-sent events: `stream` in the body decides
/// when given; otherwise `Accept` must prefer `text/event-stream` to JSON
/// (a client that accepts both, as many generic clients say, gets JSON).
pub fn wants_stream(headers: &HeaderMap, stream: Option<bool>) -> bool {
    if let Some(stream) = stream {
        return stream;
    }
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let (mut events, mut json) = (0.0_f32, 0.0_f32);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|param| {
                let param = param.trim();
                param.strip_prefix("q=").or_else(|| param.strip_prefix("Q="))
            })
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "text/event-stream" => events = events.max(quality),
            "application/json" => json = json.max(quality),
            _ => {}
        }
    }
    events > 0.0 && events > json
}

/// `POST /answer`.
pub async fn public_answer(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<AnswerRequest>,
) -> Result<Response, ApiError> {
    let surface = Surface::of_key(caller.kind);
    let stream = wants_stream(&headers, request.stream);
    let key_id = Some(caller.key_id.clone());
    let by = Asked::Key(caller.key_id.clone());
    let ask = Ask { question: request.question, surface, key_id, asker: Asker::Key(caller), by };
    if stream {
        return stream_answer(&state.lore, ask, ApiError::public, PUBLIC_FEEDBACK).await;
    }
    let answered = answer::answer(&state.lore, ask).await.map_err(ApiError::public)?;
    let cost = answered.trace.usage.estimated_cost_usd;
    let answered = AnswerResponse::from(surface.audience().answer(answered)).rated_at(PUBLIC_FEEDBACK);
    let mut response = Json(answered).into_response();
    response.extensions_mut().insert(EstimatedCost::Known(cost));
    Ok(response)
}

/// `POST /admin/playground/answer`: the Playground's answer mode.
pub async fn playground_answer(
    State(state): State<AppState>,
    admin: Admin,
    headers: HeaderMap,
    ApiJson(request): ApiJson<PlaygroundAnswerRequest>,
) -> Result<Response, ApiError> {
    let stream = wants_stream(&headers, request.stream);
    let asker = Asker::answering_as(request.answer_as.as_deref())?;
    let by = Asked::of_actor(&admin.actor());
    let ask = Ask { question: request.question, surface: Surface::Playground, key_id: None, asker, by };
    let feedback = routes::PLAYGROUND_FEEDBACK.at([]);
    if stream {
        return stream_answer(&state.lore, ask, ApiError::from, &feedback).await;
    }
    let answered = answer::answer(&state.lore, ask).await?;
    Ok(Json(AnswerResponse::from(answered).rated_at(&feedback)).into_response())
}

/// Where the public surfaces' answers are rated.
const PUBLIC_FEEDBACK: &str = "/answer/feedback";

/// `POST /answer/feedback`: a rating by the key that asked (the widget's
/// visitors share their page's key). Within the key's rate and origins, as
/// `/answer` is; not counted as a query.
pub async fn public_feedback(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<FeedbackRequest>,
) -> Result<Json<FeedbackResponse>, ApiError> {
    let rating = Rating { trace_id: request.trace_id, helpful: request.helpful, comment: request.comment };
    Ok(Json(feedback::rate(&state.lore, &Asked::Key(caller.key_id), rating).await?.into()))
}

/// `POST /admin/playground/feedback`: the signed-in admin rates an answer
/// the Playground gave them.
pub async fn playground_feedback(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<FeedbackRequest>,
) -> Result<Json<FeedbackResponse>, ApiError> {
    let rating = Rating { trace_id: request.trace_id, helpful: request.helpful, comment: request.comment };
    let by = Asked::of_actor(&admin.actor());
    Ok(Json(feedback::rate(&state.lore, &by, rating).await?.into()))
}

#[derive(serde::Deserialize)]
pub struct QueueQuery {
    #[serde(default)]
    open: Option<String>,
}

/// `GET /admin/feedback`: the review queue (`?open=true`: the items nobody
/// dealt with yet).
pub async fn review_queue(
    State(state): State<AppState>,
    _admin: Admin,
    axum::extract::Query(query): axum::extract::Query<QueueQuery>,
) -> Result<Json<ReviewQueueView>, ApiError> {
    let open = match query.open.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(
                engine::Error::InvalidInput(format!("`open` is `true` or `false`, not `{other}`")).into()
            )
        }
    };
    Ok(Json(feedback::queue(&state.lore, open).await?.into()))
}

/// `POST /admin/feedback/{trace_id}/review`: pin a corrected answer, add a
/// golden question, or dismiss; recorded on the item.
pub async fn review(
    State(state): State<AppState>,
    admin: Admin,
    axum::extract::Path(trace_id): axum::extract::Path<String>,
    ApiJson(request): ApiJson<ReviewRequest>,
) -> Result<Json<ReviewedView>, ApiError> {
    let action = request.try_into()?;
    Ok(Json(feedback::review(&state.lore, &admin.actor(), &trace_id, action).await?.into()))
}

/// Runs `ask` and streams it (see the module docs): a run that fails before
/// the readiness gate is the request's error; after it, every stage, then
/// the answer or the error, is an event. `shown` turns an engine error into
/// what this caller may see; the surface's audience decides what of the run.
async fn stream_answer(
    lore: &Lore,
    ask: Ask,
    shown: fn(engine::Error) -> ApiError,
    feedback: &str,
) -> Result<Response, ApiError> {
    let feedback = feedback.to_owned();
    let audience = ask.surface.audience();
    let answer::Started { passed, mut stages, outcome } = answer::start(lore, ask).await.map_err(shown)?;
    let (events, mut sent) = mpsc::unbounded_channel::<Event>();
    let (cost, cost_known) = watch::channel(None);
    tokio::spawn(async move {
        for stage in passed {
            let _ = events.send(stage_event(stage, audience));
        }
        while let Some(stage) = stages.recv().await {
            let _ = events.send(stage_event(stage, audience));
        }
        match outcome.get().await {
            Ok(answered) => {
                let _ = cost.send(Some(answered.trace.usage.estimated_cost_usd));
                let answered = AnswerResponse::from(audience.answer(answered)).rated_at(&feedback);
                for event in final_events(answered) {
                    let _ = events.send(event);
                }
            }
            Err(err) => {
                let _ = cost.send(Some(0.0));
                let _ = events.send(error_event(shown(err)));
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| sent.poll_recv(cx)).map(Ok::<_, Infallible>);
    // A comment every 15 s keeps proxies from cutting a slow generation.
    let mut response = Sse::new(stream).keep_alive(KeepAlive::default()).into_response();
    response.extensions_mut().insert(EstimatedCost::Later(cost_known));
    Ok(response)
}

fn json_event(name: &str, value: &impl serde::Serialize) -> Event {
    Event::default().event(name).data(serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned()))
}

fn stage_event(stage: answer::Stage, audience: answer::Audience) -> Event {
    json_event("stage", &StageView::from(audience.stage(stage)))
}

/// A failure after the reply started, in the one error shape (logged as
/// the error responses are).
fn error_event(err: ApiError) -> Event {
    let (status, code, message) = err.parts();
    if status.is_server_error() {
        tracing::warn!(code, error = ?err, "a streamed answer failed");
    }
    let details = err.details();
    json_event("error", &ErrorBody { error: ErrorDetail { code: code.to_owned(), message, details } })
}

/// The answer's tokens, then the final object.
fn final_events(answer: AnswerResponse) -> Vec<Event> {
    let mut events: Vec<Event> =
        pieces(&answer.answer).into_iter().map(|text| json_event("token", &AnswerToken { text })).collect();
    events.push(json_event("answer", &answer));
    events
}

/// `POST /admin/playground/retrieval`: what the active profile version
/// retrieves, with its resolved scope (the enabled sources) and settings.
pub async fn playground_retrieval(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<RetrievalRequest>,
) -> Result<Json<ProfileRetrievalView>, ApiError> {
    let asker = Asker::answering_as(request.answer_as.as_deref())?;
    Ok(Json(engine::asker::profile_retrieval(&state.lore, &asker, &request.query).await?.into()))
}

/// `GET /widget.js`: the embeddable widget (see `server/assets/widget.js`).
pub async fn widget_script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../../assets/widget.js"),
    )
        .into_response()
}

/// The answer split into word tokens, each with the whitespace before it, so
/// that joining the pieces gives the text back exactly.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if in_word {
                out.push(std::mem::take(&mut current));
                in_word = false;
            }
        } else {
            in_word = true;
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
