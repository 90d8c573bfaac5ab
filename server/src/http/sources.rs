//! Admin endpoints behind the Sources screen (and `lore sources`' JSON):
//!
//! | method | path | does |
//! | --- | --- | --- |
//! | GET | /admin/sources/ | list with counts, freshness and the latest run |
//! | POST | /admin/sources/ | create (`{"name", "kind", "config"?, "volatility"?}`) |
//! | GET | /admin/sources/{id} | one source |
//! | DELETE | /admin/sources/{id} | delete with documents, chunks and files |
//! | POST | /admin/sources/{id}/enable, /disable | the enabled switch |
//! | POST | /admin/sources/{id}/sync | queue a run now |
//! | POST | /admin/sources/{id}/files | multipart upload (field `file`, repeatable) |
//! | GET | /admin/sources/{id}/documents | documents with per-document errors |
//! | GET | /admin/jobs/{id} | one run with its progress |
//! | POST | /admin/reindex | full reindex of every source |
//! | POST | /admin/search | hybrid search with raw scores per mode |
//! | PUT | /admin/tuning/chunking | `{"max_tokens", "overlap_tokens", "acknowledge_reindex"?}` |

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use engine::audit::Actor;
use engine::ingest::{jobs, upload, DocumentError, IngestError, Progress};
use engine::{sources, Lore};
use serde::Deserialize;

use app::wire::{DocumentView, JobView, SearchResults, SourceView, UploadReceipt};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub(crate) fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn job_view(job: entity_job::Model) -> JobView {
    let progress: Progress = serde_json::from_value(job.progress).unwrap_or_default();
    let errors: Vec<DocumentError> = serde_json::from_value(job.errors).unwrap_or_default();
    JobView {
        id: job.id,
        source_id: job.source_id,
        full: job.full,
        status: job.status,
        trigger: job.trigger,
        progress: progress.into(),
        errors: errors.into_iter().map(Into::into).collect(),
        message: job.message,
        attempts: job.attempts.into(),
        created_at: time(job.created_at),
        started_at: job.started_at.map(time),
        finished_at: job.finished_at.map(time),
    }
}

pub fn document_view(doc: entity_document::Model) -> DocumentView {
    DocumentView {
        id: doc.id,
        uri: doc.uri,
        title: doc.title,
        url: doc.url,
        status: doc.status,
        chunk_count: doc.chunk_count.into(),
        error: doc.error,
        indexed_at: doc.indexed_at.map(time),
    }
}

/// A source with its latest run.
pub async fn source_view(lore: &Lore, source: entity_source::Model) -> Result<SourceView, ApiError> {
    let latest = jobs::recent(lore, Some(&source.id), 1).await?.into_iter().next();
    let fresh = sources::is_fresh(&source, Utc::now());
    Ok(SourceView {
        fresh,
        id: source.id,
        name: source.name,
        kind: source.kind,
        enabled: source.enabled,
        status: source.status,
        config: source.config,
        volatility: source.volatility,
        document_count: source.document_count.into(),
        chunk_count: source.chunk_count.into(),
        last_error: source.last_error,
        created_at: time(source.created_at),
        last_synced_at: source.last_synced_at.map(time),
        next_sync_at: source.next_sync_at.map(time),
        latest_job: latest.map(job_view),
    })
}

// The entity crate through the engine's re-export keeps `server` free of a
// direct dependency on table shapes.
use engine::entities::{document as entity_document, index_job as entity_job, source as entity_source};

pub(crate) fn actor(admin: &Admin) -> Actor {
    Actor::Account(admin.0.account_id.clone())
}

pub async fn list(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<SourceView>>, ApiError> {
    let mut views = Vec::new();
    for source in sources::list(&state.lore).await? {
        views.push(source_view(&state.lore, source).await?);
    }
    Ok(Json(views))
}

pub async fn create(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(new): ApiJson<sources::NewSource>,
) -> Result<(StatusCode, Json<SourceView>), ApiError> {
    let added = engine::ingest::lifecycle::add_source(&state.lore, &actor(&admin), new, "admin").await?;
    Ok((StatusCode::CREATED, Json(source_view(&state.lore, added.source).await?)))
}

pub async fn get_one(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let found = sources::get(&state.lore, &id).await?;
    Ok(Json(source_view(&state.lore, found).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    sources::delete(&state.lore, &actor(&admin), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn enable(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let updated = sources::set_enabled(&state.lore, &actor(&admin), &id, true).await?;
    Ok(Json(source_view(&state.lore, updated).await?))
}

pub async fn disable(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let updated = sources::set_enabled(&state.lore, &actor(&admin), &id, false).await?;
    Ok(Json(source_view(&state.lore, updated).await?))
}

pub async fn sync(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let job = jobs::enqueue(&state.lore, Some(&id), false, "admin").await?;
    Ok((StatusCode::ACCEPTED, Json(job_view(job))))
}

pub async fn reindex(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let job = jobs::enqueue(&state.lore, None, true, "admin").await?;
    Ok((StatusCode::ACCEPTED, Json(job_view(job))))
}

pub async fn documents(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<Vec<DocumentView>>, ApiError> {
    let docs = sources::documents(&state.lore, &id).await?;
    Ok(Json(docs.into_iter().map(document_view).collect()))
}

pub async fn job(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    Ok(Json(job_view(jobs::get(&state.lore, &id).await?)))
}

/// Receives the multipart field `file` (one or more). Each file is checked
/// and stored on its own; the first bad one stops the request with its error,
/// and the files before it stay received.
pub async fn upload_files(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    mut multipart: Multipart,
) -> Result<(StatusCode, Json<Vec<UploadReceipt>>), ApiError> {
    let lore = &state.lore;
    sources::get(lore, &id).await?;
    let limit = lore.settings.ingest.upload_max_bytes;
    let too_large =
        || ApiError::from(engine::Error::Ingest(IngestError::FileTooLarge { limit_bytes: limit }));
    let mut receipts = Vec::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|err| multipart_error(err, limit))? {
        if field.name() != Some("file") {
            continue;
        }
        let file_name = field.file_name().unwrap_or_default().to_owned();
        let content_type = field.content_type().map(str::to_owned);
        let mut bytes = Vec::new();
        while let Some(piece) = field.chunk().await.map_err(|err| multipart_error(err, limit))? {
            if (bytes.len() + piece.len()) as u64 > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&piece);
        }
        let (document, job) =
            upload::receive(lore, &id, upload::Upload { file_name, content_type, bytes }).await?;
        receipts.push(UploadReceipt { document: document_view(document), job: job_view(job) });
    }
    if receipts.is_empty() {
        return Err(
            engine::Error::InvalidInput("send the file in a multipart field named \"file\"".into()).into()
        );
    }
    Ok((StatusCode::ACCEPTED, Json(receipts)))
}

fn multipart_error(err: axum::extract::multipart::MultipartError, limit: u64) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        engine::Error::Ingest(IngestError::FileTooLarge { limit_bytes: limit }).into()
    } else {
        engine::Error::InvalidInput(format!("the upload is not valid multipart data: {}", err.body_text()))
            .into()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The Playground's corpus diagnostic: no score cutoff, and disabled
    /// sources searched too.
    #[serde(default)]
    pub raw: bool,
}

pub async fn search(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<SearchRequest>,
) -> Result<Json<SearchResults>, ApiError> {
    let found = engine::search::diagnose(&state.lore, &request.query, request.top_k, request.raw).await?;
    Ok(Json(SearchResults::from(found)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkingRequest {
    pub max_tokens: usize,
    pub overlap_tokens: usize,
    #[serde(default)]
    pub acknowledge_reindex: bool,
}

/// `PUT /admin/tuning/chunking`: 200 with the queued reindex (or none).
pub async fn set_chunking(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<ChunkingRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let params = engine::chunk::ChunkingParams {
        max_tokens: request.max_tokens,
        overlap_tokens: request.overlap_tokens,
    };
    let change =
        engine::tuning::set_chunking(&state.lore, &actor(&admin), params, request.acknowledge_reindex)
            .await?;
    let body = match change {
        engine::tuning::ChunkingChange::Unchanged => serde_json::json!({"changed": false, "reindex": null}),
        engine::tuning::ChunkingChange::Stored => serde_json::json!({"changed": true, "reindex": null}),
        engine::tuning::ChunkingChange::Reindexing(job) => {
            serde_json::json!({"changed": true, "reindex": job_view(*job)})
        }
    };
    Ok(Json(body))
}
